//! Ownership and hard links (item 4 of issue #38): a rewrite by root (a
//! migration, `repair --write`) leaves the file, and the side files it
//! makes, the owner's, with its group and mode; a rewrite through one name
//! of a file with several is refused instead of splitting them.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use super::{arbor_in, copy_fixture, first_id};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Owner, group and mode bits of `p`.
fn owner(p: &Path) -> (u32, u32, u32) {
    let m = fs::metadata(p).unwrap();
    (m.uid(), m.gid(), m.permissions().mode() & 0o7777)
}

/// True when this process may give files away (the tests run as root in CI).
fn is_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

#[test]
fn a_rewrite_by_root_keeps_the_owner_group_and_mode() {
    if !is_root() {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root: this test must run there");
        eprintln!("skipped: only root can give a file to another user");
        return;
    }
    let user = (4321, 8765, 0o600);
    let cases = [
        ("logs/legacy/v2/entries.jsonl", &["label", "s.jsonl", "ID", "x"][..]),
        ("logs/err/garbage-line-middle.jsonl", &["repair", "s.jsonl", "--write"][..]),
    ];
    for (fixture, args) in cases {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("s.jsonl");
        let before = copy_fixture(fixture, &file);
        let id = first_id(&file);
        std::os::unix::fs::chown(&file, Some(user.0), Some(user.1)).unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(user.2)).unwrap();
        let args: Vec<&str> = args.iter().map(|a| if *a == "ID" { id.as_str() } else { a }).collect();
        let o = arbor_in(d.path(), &args);
        assert!(o.status.success(), "{fixture}: {}", stderr(&o));
        assert_ne!(fs::read(&file).unwrap(), before, "{fixture}: the file was rewritten");
        // Before: root's, 0600, and so unreadable by its owner.
        assert_eq!(owner(&file), user, "{fixture}: the rewritten file");
        for e in fs::read_dir(d.path()).unwrap() {
            let side = e.unwrap().path();
            let name = side.file_name().unwrap().to_string_lossy().into_owned();
            if name.contains(".backup-") || name.contains(".rejected-") {
                assert_eq!(owner(&side).0, user.0, "{fixture}: {name} is the owner's too");
            }
        }
    }
}

#[test]
fn a_rewrite_through_one_name_of_a_hard_linked_file_is_refused() {
    let cases = [
        ("logs/err/garbage-line-middle.jsonl", &["repair", "s.jsonl", "--write"][..]),
        ("logs/legacy/v2/entries.jsonl", &["label", "s.jsonl", "ID", "x"][..]),
    ];
    for (fixture, args) in cases {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("s.jsonl");
        let other = d.path().join("other-name.jsonl");
        let before = copy_fixture(fixture, &file);
        fs::hard_link(&file, &other).unwrap();
        let id = first_id(&file);
        let args: Vec<&str> = args.iter().map(|a| if *a == "ID" { id.as_str() } else { a }).collect();
        let o = arbor_in(d.path(), &args);
        let err = stderr(&o);
        // Before: done, and the other name kept the old file, so whatever
        // was written through it afterwards never reached this one.
        assert!(!o.status.success(), "{fixture}: a hard-linked file was split");
        assert!(err.contains("s.jsonl: the file has 2 names (hard links)"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert_eq!(fs::metadata(&file).unwrap().ino(), fs::metadata(&other).unwrap().ino(), "{fixture}: split");
        assert_eq!(fs::read(&file).unwrap(), before, "{fixture}");
    }
    // A dry run and an append (no rewrite) go on through either name.
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("s.jsonl");
    copy_fixture("logs/ok/linear-chat.jsonl", &file);
    fs::hard_link(&file, d.path().join("other-name.jsonl")).unwrap();
    let id = first_id(&file);
    let o = arbor_in(d.path(), &["label", "other-name.jsonl", &id, "through the other name"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(fs::read_to_string(&file).unwrap().contains("through the other name"));
}
