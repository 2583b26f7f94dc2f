//! The write lock is the file's, whatever name a writer uses (items 1 and
//! 11 of issue #20), a lock that cannot be made says what to do (13), and
//! a writer that ends cleanly leaves no lock file (#19, item 13).

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};

use super::{arbor_in, copy_fixture, first_id, Holder};

/// Runs `arbor label NAME ID TEXT` in `dir`; returns (success, stderr).
fn label(dir: &Path, name: &str, id: &str, text: &str) -> (bool, String) {
    let o = arbor_in(dir, &["label", name, id, text]);
    (o.status.success(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn one_writer_through_any_name_of_the_file() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    fs::create_dir(dir.join("real")).unwrap();
    let real = dir.join("real/s.jsonl");
    let before = copy_fixture("logs/ok/linear-chat.jsonl", &real);
    symlink(&real, dir.join("link.jsonl")).unwrap();
    fs::hard_link(&real, dir.join("hard.jsonl")).unwrap();
    let id = first_id(&real);
    let names = ["real/s.jsonl", "link.jsonl", "hard.jsonl", "real/../real/s.jsonl", "./real/./s.jsonl"];
    for holder_name in ["real/s.jsonl", "link.jsonl", "hard.jsonl"] {
        let holder = Holder::start(dir, holder_name);
        for name in names {
            let (ok, err) = label(dir, name, &id, "sneaked in");
            assert!(!ok, "{name} while {holder_name} is held: a second writer got in");
            let expected = format!("open for writing by another process (pid {})", holder.pid());
            assert!(err.contains(&expected), "{name} while {holder_name} is held: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            assert_eq!(fs::read(&real).unwrap(), before, "{name}: the file changed");
        }
    }
    // Free again: every name writes the one file.
    for (i, name) in names.iter().enumerate() {
        let (ok, err) = label(dir, name, &id, &format!("via {i}"));
        assert!(ok, "{name}: {err}");
    }
    let text = fs::read_to_string(&real).unwrap();
    assert_eq!(text.matches("\"type\":\"label\"").count(), names.len(), "{text}");
    assert!(fs::symlink_metadata(dir.join("link.jsonl")).unwrap().file_type().is_symlink());
}

#[test]
fn every_refused_writer_names_the_holder() {
    const WRITERS: usize = 100;
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("s.jsonl");
    copy_fixture("logs/ok/linear-chat.jsonl", &file);
    let id = first_id(&file);
    let children: Vec<_> = (0..WRITERS)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_arbor"))
                .args(["label", "s.jsonl", &id, &format!("w{i}")])
                .env("HOME", "/nonexistent-home")
                .env("ARBOR_CACHE_DIR", crate::cache_dir())
                .current_dir(d.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let pids: Vec<u32> = children.iter().map(|c| c.id()).collect();
    let outputs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let text = fs::read_to_string(&file).unwrap();
    let (mut won, mut refused) = (0, 0);
    for (i, o) in outputs.iter().enumerate() {
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.success() {
            won += 1;
            assert!(text.contains(&format!("\"label\":\"w{i}\"")), "writer {i} said it wrote, the file has no label");
            continue;
        }
        refused += 1;
        assert!(!text.contains(&format!("\"label\":\"w{i}\"")), "writer {i} was refused, but its label is there");
        let named =
            err.split("(pid ").nth(1).and_then(|rest| rest.split(')').next()).and_then(|p| p.parse::<u32>().ok());
        let Some(holder) = named else { panic!("writer {i} was refused without the holder's pid: {err}") };
        assert!(pids.contains(&holder) && holder != pids[i], "writer {i}: {holder} is not another writer");
    }
    assert!(won >= 1, "nobody wrote");
    assert_eq!(won + refused, WRITERS);
    assert_eq!(text.matches("\"type\":\"label\"").count(), won, "each success is one line, nothing else");
}

/// True when this test runs as root (whom permission bits do not stop).
fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

#[test]
fn a_directory_where_the_lock_cannot_be_made_says_what_to_do() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("sessions");
    fs::create_dir(&dir).unwrap();
    let file = dir.join("s.jsonl");
    let before = copy_fixture("logs/ok/linear-chat.jsonl", &file);
    let id = first_id(&file);
    // The session is writable, its directory is not.
    fs::set_permissions(&file, fs::Permissions::from_mode(0o666)).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o555)).unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let cache = tempfile::tempdir().unwrap();
    fs::set_permissions(cache.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = if is_root() {
        // Root is not stopped by the bits: run the writer as nobody.
        if Command::new("setpriv").arg("--version").output().is_err() {
            eprintln!("skipped: running as root without setpriv to run the writer as another user");
            return;
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_arbor")]);
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_arbor"))
    };
    let o = cmd
        .args(["label", file.to_str().unwrap(), &id, "x"])
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("cannot create the write lock"), "{err}");
    assert!(err.contains(&format!("make {} writable, or open the session read-only", dir.display())), "{err}");
    assert_eq!(fs::read(&file).unwrap(), before);
}

#[test]
fn a_loop_of_links_is_named() {
    let d = tempfile::tempdir().unwrap();
    symlink("b.jsonl", d.path().join("a.jsonl")).unwrap();
    symlink("a.jsonl", d.path().join("b.jsonl")).unwrap();
    for args in [&["tree", "a.jsonl"][..], &["label", "a.jsonl", "x", "y"], &["check", "a.jsonl"]] {
        let o = arbor_in(d.path(), args);
        // `check` reports an unreadable file as a finding, on stdout.
        let err = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(!o.status.success(), "{args:?}");
        assert!(err.contains("a.jsonl: a loop of symbolic links"), "{args:?}: {err}");
        assert!(!err.contains("no such session file"), "{args:?}: {err}");
    }
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn a_writer_that_ends_cleanly_leaves_no_lock_file() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let file = dir.join("s.jsonl");
    copy_fixture("logs/ok/linear-chat.jsonl", &file);
    let id = first_id(&file);
    let (ok, err) = label(dir, "s.jsonl", &id, "kept");
    assert!(ok, "{err}");
    assert_eq!(names(dir), ["s.jsonl"], "label left its lock file");

    // A new session that never got written: no session and no lock.
    let o = arbor_in(dir, &["chat", "new.jsonl", "--new", "--model", "nowhere/x"]);
    assert!(!o.status.success());
    let o = arbor_in(dir, &["chat", "new.jsonl", "--new"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(names(dir), ["s.jsonl"], "a chat that wrote nothing left files");

    // A writer killed while it holds the lock leaves it; the next one takes it
    // (the pid in it is not alive) and removes it when it ends.
    let mut holder = Holder::start(dir, "s.jsonl");
    assert_eq!(names(dir), ["s.jsonl", "s.jsonl.lock"]);
    holder.kill();
    assert_eq!(names(dir), ["s.jsonl", "s.jsonl.lock"]);
    let (ok, err) = label(dir, "s.jsonl", &id, "after a kill");
    assert!(ok, "{err}");
    assert_eq!(names(dir), ["s.jsonl"]);
}
