//! Links and permissions (items 2, 3 and 4 of issue #20): a rewrite
//! through a link writes the file it names and says so; a link planted where
//! Arbor keeps a side file is never followed; a file without write
//! permission is never replaced. The tests run as root here, so they check
//! the permission bits themselves.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use arbor_test_support::DirSnapshot;

use super::{arbor_in, copy_fixture, first_id};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn is_link(p: &Path) -> bool {
    fs::symlink_metadata(p).unwrap().file_type().is_symlink()
}

fn version_of(p: &Path) -> u64 {
    let text = fs::read_to_string(p).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    header["version"].as_u64().unwrap()
}

#[test]
fn a_migration_through_a_link_writes_the_file_it_names() {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir(d.path().join("real")).unwrap();
    let real = d.path().join("real/s.jsonl");
    copy_fixture("logs/legacy/v2/entries.jsonl", &real);
    let link = d.path().join("link.jsonl");
    symlink("real/s.jsonl", &link).unwrap();
    let id = first_id(&real);
    let o = arbor_in(d.path(), &["label", "link.jsonl", &id, "kept"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(is_link(&link), "the link was replaced by a file");
    assert_eq!(version_of(&real), 3, "the file the link names was migrated");
    assert!(fs::read_to_string(&real).unwrap().contains("\"label\":\"kept\""));
    let err = stderr(&o);
    assert!(err.contains("link.jsonl is a symbolic link: the rewritten session went to its target"), "{err}");
    assert!(err.contains("real/s.jsonl"), "{err}");
}

#[test]
fn repair_through_a_link_repairs_the_file_it_names() {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir(d.path().join("real")).unwrap();
    let real = d.path().join("real/s.jsonl");
    let before = copy_fixture("logs/err/garbage-line-middle.jsonl", &real);
    let link = d.path().join("link.jsonl");
    symlink("real/s.jsonl", &link).unwrap();
    let o = arbor_in(d.path(), &["repair", "link.jsonl", "--write"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("link.jsonl is a symbolic link: its target"), "{out}");
    assert!(is_link(&link), "the link was replaced by a file");
    assert_ne!(fs::read(&real).unwrap(), before, "the target was repaired");
    let side: Vec<String> = fs::read_dir(d.path().join("real"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(side.iter().any(|n| n.starts_with("s.jsonl.backup-")), "the backup is beside the target: {side:?}");
    let check = arbor_in(d.path(), &["check", "link.jsonl"]);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
}

/// Plants links named like the side files of `file` for the next `secs`
/// seconds of milliseconds, all pointing at `victim`.
fn plant_side_links(file: &Path, victim: &Path, secs: u64) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    for ms in now..now + secs * 1000 {
        for what in ["backup", "rejected", "torn"] {
            symlink(victim, format!("{}.{what}-{ms}", file.display())).unwrap();
        }
    }
}

#[test]
fn links_planted_beside_a_session_are_never_followed() {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("outside");
    let sessions = d.path().join("sessions");
    fs::create_dir(&outside).unwrap();
    fs::create_dir(&sessions).unwrap();
    let victim = outside.join("victim.txt");
    fs::write(&victim, b"someone else's precious bytes\n").unwrap();
    let victim_before = DirSnapshot::of(&outside);
    let file = sessions.join("s.jsonl");
    copy_fixture("logs/ok/linear-chat.jsonl", &file);
    let id = first_id(&file);

    // The lock: a link to a file, and a dangling link.
    for target in [victim.clone(), outside.join("created-elsewhere")] {
        let lock = sessions.join("s.jsonl.lock");
        let _ = fs::remove_file(&lock);
        symlink(&target, &lock).unwrap();
        let o = arbor_in(&sessions, &["label", "s.jsonl", &id, "x"]);
        let err = stderr(&o);
        assert!(!o.status.success(), "a writer took a planted lock link");
        assert!(err.contains("s.jsonl.lock: a symbolic link where Arbor keeps the session's write lock"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert_eq!(DirSnapshot::of(&outside), victim_before, "something outside changed");
        fs::remove_file(&lock).unwrap();
    }

    // Side files: every name a backup, a rejected-lines file or a torn tail
    // could take in the next seconds is a link to the victim.
    copy_fixture("logs/err/garbage-line-middle.jsonl", &file);
    plant_side_links(&file, &victim, 10);
    let o = arbor_in(&sessions, &["repair", "s.jsonl", "--write"]);
    assert!(o.status.success(), "{}", stderr(&o));
    fs::write(
        &file,
        [&fs::read(fixtures_file("logs/ok/linear-chat.jsonl")).unwrap()[..], b"{\"type\":\"mess"].concat(),
    )
    .unwrap();
    let o = arbor_in(&sessions, &["label", "s.jsonl", &id, "after a torn tail"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("moved a torn last line"), "{}", stderr(&o));
    assert_eq!(DirSnapshot::of(&outside), victim_before, "a side file was written through a link");
    let regular: Vec<String> = fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !is_link(p))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for what in ["backup", "rejected", "torn"] {
        assert!(regular.iter().any(|n| n.contains(&format!(".{what}-"))), "no {what} file: {regular:?}");
    }
}

fn fixtures_file(name: &str) -> std::path::PathBuf {
    crate::fixtures().join(name)
}

/// Makes `p` read-only and checks the bits (root writes anyway, so Arbor must check them).
fn make_read_only(p: &Path) {
    fs::set_permissions(p, fs::Permissions::from_mode(0o444)).unwrap();
    assert_eq!(fs::metadata(p).unwrap().permissions().mode() & 0o777, 0o444);
}

#[test]
fn a_read_only_file_is_never_replaced_or_appended_to() {
    let cases = [
        ("logs/legacy/v2/entries.jsonl", &["label", "s.jsonl", "ID", "x"][..]),
        ("logs/ok/linear-chat.jsonl", &["label", "s.jsonl", "ID", "x"][..]),
        ("logs/err/garbage-line-middle.jsonl", &["repair", "s.jsonl", "--write"][..]),
    ];
    for (fixture, args) in cases {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("s.jsonl");
        copy_fixture(fixture, &file);
        let id = first_id(&file);
        make_read_only(&file);
        let before = DirSnapshot::of(d.path());
        let args: Vec<&str> = args.iter().map(|a| if *a == "ID" { id.as_str() } else { a }).collect();
        let o = arbor_in(d.path(), &args);
        let err = stderr(&o);
        assert!(!o.status.success(), "{fixture} {args:?}: a read-only file was written");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("s.jsonl: the file is read-only (mode 0444); nothing was written"), "{err}");
        assert_eq!(DirSnapshot::of(d.path()).changed(&before), Vec::<std::path::PathBuf>::new(), "{fixture}");
        assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o444);
    }
}
