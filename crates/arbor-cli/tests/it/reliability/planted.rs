//! Writes through a planted name (item 3 of issue #38): a hard link or a
//! stranger's file planted at `FILE.lock` is never written into, and a link
//! planted at `import`'s predictable output (or its directory) is never
//! followed. Each runs the real binary against the planted name.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use arbor_test_support::DirSnapshot;

use super::{arbor_in, copy_fixture, first_id};
use crate::fixtures;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_hard_link_or_a_stranger_at_the_lock_file_is_never_written_into() {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("outside");
    let sessions = d.path().join("sessions");
    fs::create_dir(&outside).unwrap();
    fs::create_dir(&sessions).unwrap();
    let victim = outside.join("victim.txt");
    fs::write(&victim, b"someone else's precious bytes, far more than a pid\n").unwrap();
    let file = sessions.join("s.jsonl");
    let session_before = copy_fixture("logs/ok/linear-chat.jsonl", &file);
    let id = first_id(&file);
    let lock = sessions.join("s.jsonl.lock");

    // A hard link: the same file under the lock's name (before: the victim
    // got the writer's pid and was cut to 11 bytes).
    fs::hard_link(&victim, &lock).unwrap();
    let outside_before = DirSnapshot::of(&outside);
    let o = arbor_in(&sessions, &["label", "s.jsonl", &id, "x"]);
    let err = stderr(&o);
    assert!(!o.status.success(), "a writer took a hard link planted at the lock");
    assert!(err.contains("s.jsonl.lock: not Arbor's write lock (the file has 2 names: a hard link"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(DirSnapshot::of(&outside), outside_before, "the victim was written through the lock");
    assert_eq!(fs::read(&file).unwrap(), session_before, "the session changed");
    fs::remove_file(&lock).unwrap();

    // A file of the lock's name holding something else is not a lock either.
    fs::write(&lock, b"a note someone keeps here\n").unwrap();
    let o = arbor_in(&sessions, &["label", "s.jsonl", &id, "x"]);
    let err = stderr(&o);
    assert!(!o.status.success(), "a writer took a file that is no lock");
    assert!(err.contains("s.jsonl.lock: not Arbor's write lock (it holds something else than a pid)"), "{err}");
    assert_eq!(fs::read(&lock).unwrap(), b"a note someone keeps here\n");

    // A lock left by a killed writer (its pid, or emptied) is still taken, and removed after.
    for left in [&b"4242      \n"[..], b""] {
        fs::write(&lock, left).unwrap();
        let o = arbor_in(&sessions, &["label", "s.jsonl", &id, "kept"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!lock.exists(), "the lock file stayed");
    }
}

/// Where `arbor import claude` puts the session of the fixture transcript
/// under `root` (an import into a scratch root says so; the name is
/// predictable from the transcript alone).
fn import_output(root: &Path) -> PathBuf {
    let o = import(root);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let path = PathBuf::from(report[0]["sessions"][0]["path"].as_str().unwrap());
    fs::remove_dir_all(path.parent().unwrap()).unwrap();
    path
}

fn import(root: &Path) -> std::process::Output {
    let transcript = fixtures().join("import/claude/branches.jsonl");
    let (t, r) = (transcript.to_str().unwrap(), root.to_str().unwrap());
    arbor_in(root, &["import", "claude", t, "--sessions-dir", r, "--json"])
}

#[test]
fn import_never_writes_through_a_link_at_its_output() {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let victim = outside.join("victim.jsonl");
    fs::write(&victim, b"{\"precious\":true}\n").unwrap();
    let root = d.path().join("sessions");
    fs::create_dir(&root).unwrap();
    let out = import_output(&root);
    let dir = out.parent().unwrap().to_owned();

    // A link to a file, a dangling link (before: the victim was replaced by
    // the session, and a session was created outside through the dangling
    // one), and a link in place of the session directory.
    let plants: [(&Path, PathBuf, &str); 3] = [
        (&out, victim.clone(), "a symbolic link where Arbor keeps the session's file"),
        (&out, outside.join("made-elsewhere.jsonl"), "a symbolic link where Arbor keeps the session's file"),
        (&dir, outside.clone(), "a symbolic link where Arbor keeps the session's directory"),
    ];
    for (at, target, says) in plants {
        let _ = fs::remove_dir_all(&dir);
        if at == out.as_path() {
            fs::create_dir(&dir).unwrap();
        }
        symlink(&target, at).unwrap();
        let before = DirSnapshot::of(&outside);
        let o = import(&root);
        let err = stderr(&o);
        assert!(!o.status.success(), "import wrote through a link to {}", target.display());
        assert!(err.contains(says), "{err}");
        assert_eq!(DirSnapshot::of(&outside), before, "something outside changed (link to {})", target.display());
        fs::remove_file(at).unwrap();
    }
    // With the links gone, the import goes where it should.
    let _ = fs::remove_dir_all(&dir);
    let o = import(&root);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(fs::symlink_metadata(&out).unwrap().is_file());
}
