//! A full disk (item 8 of issue #20), on a small tmpfs mounted here: a
//! failed append is cut back to where the file ended, and a side file that
//! could not be written is removed. Skipped, with one line saying so, where
//! this process may not mount a file system.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{arbor_in, first_id};

/// A tmpfs of 1 MiB, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount() -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new("mount").args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"]).arg(dir.path()).output();
        match o {
            Ok(o) if o.status.success() => Some(Tmpfs { dir }),
            Ok(o) => {
                eprintln!("skipped: cannot mount a tmpfs here ({})", String::from_utf8_lossy(&o.stderr).trim());
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot run mount ({e})");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the file system, then frees `room` bytes of it.
    fn fill_leaving(&self, room: u64) -> PathBuf {
        let filler = self.path().join("filler");
        let mut f = fs::File::create(&filler).unwrap();
        let block = vec![b'x'; 4096];
        while f.write_all(&block).is_ok() {}
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(room)).unwrap();
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// The names and bytes of the files under the sessions folder of `dir`
/// (the filler is beside it; a lock file may come and stay).
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(dir.join("s"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.to_string_lossy().ends_with(".lock"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), fs::read(&p).unwrap()))
        .collect();
    out.sort();
    out
}

/// The one error line among what `arbor` printed on stderr (warnings about the file may come first).
fn error_lines(o: &std::process::Output) -> Vec<String> {
    let err = String::from_utf8_lossy(&o.stderr);
    err.lines().filter(|l| l.starts_with("arbor: ")).map(str::to_owned).collect()
}

#[test]
fn a_failed_append_leaves_the_file_as_it_was() {
    let Some(fs_) = Tmpfs::mount() else { return };
    fs::create_dir(fs_.path().join("s")).unwrap();
    let file = fs_.path().join("s/demo.jsonl");
    fs::copy(crate::fixtures().join("demo/demo.jsonl"), &file).unwrap();
    let id = first_id(&file);
    fs_.fill_leaving(8 * 1024);
    let before = contents(fs_.path());
    // A label larger than the room left: the write fails half way.
    let big = "y".repeat(64 * 1024);
    let o = arbor_in(&fs_.path().join("s"), &["label", "demo.jsonl", &id, &big]);
    assert!(!o.status.success(), "the append cannot have fitted");
    let errors = error_lines(&o);
    assert!(errors.len() == 1 && errors[0].contains("No space left on device"), "{errors:?}");
    assert!(contents(fs_.path()) == before, "a failed append left bytes behind");
    let check = arbor_in(&fs_.path().join("s"), &["check", "demo.jsonl"]);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
}

#[test]
fn side_files_that_cannot_be_written_are_removed() {
    let Some(fs_) = Tmpfs::mount() else { return };
    fs::create_dir(fs_.path().join("s")).unwrap();
    let s = fs_.path().join("s");
    // A damaged file (repair keeps a backup) and a torn one (an append moves the tail aside).
    let demo = fs::read(crate::fixtures().join("demo/demo.jsonl")).unwrap();
    fs::write(s.join("damaged.jsonl"), [&demo[..], b"not json\n"].concat()).unwrap();
    let torn_tail = format!("{{\"type\":\"message\",\"id\":\"torn\",\"x\":\"{}", "z".repeat(32 * 1024));
    fs::write(s.join("torn.jsonl"), [&demo[..], torn_tail.as_bytes()].concat()).unwrap();
    let id = first_id(&s.join("torn.jsonl"));
    fs_.fill_leaving(4 * 1024);
    let before = contents(fs_.path());
    let repair = arbor_in(&s, &["repair", "damaged.jsonl", "--write"]);
    let label = arbor_in(&s, &["label", "torn.jsonl", &id, "x"]);
    for o in [&repair, &label] {
        assert!(!o.status.success());
        let errors = error_lines(o);
        assert!(errors.len() == 1 && errors[0].contains("No space left on device"), "{errors:?}");
    }
    let after = contents(fs_.path());
    let names: Vec<&str> = after.iter().map(|(n, _)| n.as_str()).collect();
    assert!(after == before, "failed side files stayed behind, or a file changed: {names:?}");
}
