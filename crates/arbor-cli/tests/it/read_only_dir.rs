//! Reading never writes beside the user's files: every read command, on
//! sessions in a read-only directory, works and leaves the directory exactly
//! as it was. The tests run as root, whom `chmod 0555` does not stop, so the
//! directory is also compared byte for byte before and after.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use arbor_test_support::{write_big_session, DirSnapshot};

use crate::fixtures;

/// `arbor ARGS` with the given cache directory.
fn arbor_in(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .env("ARBOR_CACHE_DIR", cache)
        .env("HOME", "/nonexistent-home")
        .env_remove("ARBOR_NO_INDEX")
        .env_remove("ARBOR_SESSIONS_DIR")
        .output()
        .unwrap()
}

/// The read commands on one file, text and `--json` forms.
fn read_commands(file: &str) -> Vec<Vec<String>> {
    let forms: [&[&str]; 7] =
        [&["dump"], &["tree"], &["path"], &["context"], &["context", "--llm"], &["check"], &["repair"]];
    let mut out = vec![];
    for json in [false, true] {
        for form in forms {
            let mut args: Vec<String> = vec![form[0].to_owned(), file.to_owned()];
            args.extend(form[1..].iter().map(|a| a.to_string()));
            if json {
                args.push("--json".to_owned());
            }
            out.push(args);
        }
    }
    out
}

#[test]
fn every_read_command_in_a_read_only_directory_writes_nothing_there() {
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    // A sessions root as pi lays it out, so `ls` reads it too.
    let dir = root.path().join("--w--");
    fs::create_dir(&dir).unwrap();
    // Large and clean (indexed on a first open), the demo, and a v1 file that needs a migration.
    let big = dir.join("2026-01-01T00-00-00-000Z_big.jsonl");
    write_big_session(&big, 4000, 300);
    fs::copy(fixtures().join("demo/demo.jsonl"), dir.join("2026-01-02T00-00-00-000Z_demo.jsonl")).unwrap();
    fs::copy(fixtures().join("logs/legacy/v1/simple-chat.jsonl"), dir.join("2026-01-03T00-00-00-000Z_v1.jsonl"))
        .unwrap();
    // An index an earlier Arbor left beside a session: ignored, never deleted.
    let old_index = dir.join("2026-01-01T00-00-00-000Z_big.jsonl.arbor-index");
    fs::write(&old_index, b"ARBORIX2 from an earlier Arbor").unwrap();
    for d in [&dir, &root.path().to_owned()] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o555)).unwrap();
    }
    let before = DirSnapshot::of(root.path());
    assert_eq!(before.paths().len(), 5, "{:?}", before.paths());

    let mut ran = 0;
    let sessions =
        fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl"));
    for file in sessions {
        let f = file.to_str().unwrap();
        for args in read_commands(f) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = arbor_in(cache.path(), &args);
            let stderr = String::from_utf8_lossy(&o.stderr);
            // `check` exits 1 or 2 for findings; nothing may fail as an error.
            let ok = o.status.success() || (args[0] == "check" && matches!(o.status.code(), Some(1 | 2)));
            assert!(ok && !stderr.contains("arbor: "), "{args:?}: {:?}\n{stderr}", o.status);
            assert!(!o.stdout.is_empty(), "{args:?}: no output");
            ran += 1;
        }
    }
    let r = root.path().to_str().unwrap();
    for args in [vec!["ls", "--all", "--sessions-dir", r], vec!["ls", "--all", "--json", "--sessions-dir", r]] {
        let o = arbor_in(cache.path(), &args);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(String::from_utf8_lossy(&o.stdout).matches("jsonl").count(), 3, "{args:?}");
        ran += 1;
    }
    assert_eq!(ran, 3 * 14 + 2);

    let after = DirSnapshot::of(root.path());
    assert_eq!(before.changed(&after), Vec::<std::path::PathBuf>::new(), "the directory changed");
    assert!(after == before);
    // The large file's index went to the cache directory instead.
    let indexes = fs::read_dir(cache.path().join("index")).unwrap().count();
    assert_eq!(indexes, 1);
    for d in [&dir, &root.path().to_owned()] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
    }
}
