//! One writer per file, across real processes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use arbor_tree::{Session, SessionOptions, TreeError};

use crate::{fixtures, opts};
use arbor_tree::OpenMode;

const CHILD_ENV: &str = "ARBOR_TEST_LOCK_CHILD";

/// Not a test on its own: when started by `second_writer_is_refused`, this
/// process opens the session for writing, says so, and holds it until its
/// stdin closes.
#[test]
fn lock_holder_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else { return };
    let mut s = Session::open(std::path::Path::new(&path), OpenMode::Write, opts()).unwrap();
    println!("LOCKED {}", std::process::id());
    std::io::stdout().flush().unwrap();
    // Each "append" line on stdin appends one entry; EOF ends the holder.
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).unwrap_or(0) > 0 {
        if line.trim() == "append" {
            let id = s.append_message(crate::user("from the first writer")).unwrap();
            println!("APPENDED {id}");
            std::io::stdout().flush().unwrap();
        }
        line.clear();
    }
}

#[test]
fn second_writer_is_refused_and_readers_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    std::fs::copy(fixtures().join("logs/ok/linear-chat.jsonl"), &p).unwrap();
    let before = std::fs::read(&p).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lock::lock_holder_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &p)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let pid = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "child ended before locking");
        // libtest may print "test … ... " on the same line first.
        if let Some(at) = line.find("LOCKED ") {
            break line[at + 7..].trim().parse::<u32>().unwrap();
        }
    };
    assert_eq!(pid, child.id());

    let err = Session::open(&p, OpenMode::Write, opts()).unwrap_err();
    match &err {
        TreeError::Locked { path, holder } => {
            assert_eq!(path, &p);
            assert_eq!(holder.as_ref().map(|h| h.pid), Some(pid));
        }
        other => panic!("{other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("s.jsonl") && msg.contains(&format!("pid {pid}")), "{msg}");
    assert_eq!(msg.lines().count(), 1);

    let reader = Session::open(&p, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
    assert!(!reader.is_empty());
    assert_eq!(std::fs::read(&p).unwrap(), before, "nothing in the file changed");

    // The first writer is unaffected: it still appends.
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "append").unwrap();
    stdin.flush().unwrap();
    let appended = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "child ended before appending");
        if let Some(at) = line.find("APPENDED ") {
            break line[at + 9..].trim().to_owned();
        }
    };
    let after = Session::open(&p, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
    assert_eq!(after.leaf_id(), Some(appended.as_str()));
    assert_eq!(after.len(), reader.len() + 1);

    drop(stdin);
    child.wait().unwrap();
    // The lock died with its process.
    let mut s = Session::open(&p, OpenMode::Write, opts()).unwrap();
    s.append_message(crate::user("after")).unwrap();
}

const RACER_ENV: &str = "ARBOR_TEST_LOCK_RACER";
/// How many times each racer takes the lock.
const RACER_ROUNDS: usize = 300;

/// Not a test on its own: when started by
/// `racing_writers_that_remove_the_lock_file_never_overlap`, this process
/// takes the write lock of a session that does not exist yet (so the lock
/// file is all that keeps writers apart) [`RACER_ROUNDS`] times, trying
/// again when refused; each time it proves it is alone (a marker file made
/// with `create_new`) before letting go, which removes the lock file.
#[test]
fn lock_racer_child() {
    let Ok(path) = std::env::var(RACER_ENV) else { return };
    let path = std::path::PathBuf::from(path);
    let alone = path.with_extension("holder");
    let mut rounds = 0;
    while rounds < RACER_ROUNDS {
        let s = match Session::open(&path, OpenMode::WriteOrCreate, SessionOptions::default()) {
            Ok(s) => s,
            Err(TreeError::Locked { .. }) => continue,
            Err(e) => panic!("{e}"),
        };
        if let Err(e) = std::fs::File::create_new(&alone) {
            println!("OVERLAP in round {rounds}: {e}");
            std::process::exit(3);
        }
        std::thread::yield_now();
        std::fs::remove_file(&alone).unwrap();
        drop(s);
        rounds += 1;
    }
    println!("DONE");
}

#[test]
fn racing_writers_that_remove_the_lock_file_never_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("new.jsonl");
    let racers: Vec<_> = (0..4)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "lock::lock_racer_child", "--nocapture", "--test-threads=1"])
                .env(RACER_ENV, &p)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for racer in racers {
        let out = racer.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("DONE"), "{text}{}", String::from_utf8_lossy(&out.stderr));
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "writers that wrote nothing left {left:?}");
}

#[test]
fn a_writer_that_ends_removes_its_lock_file_and_one_killed_leaves_it_for_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    std::fs::copy(fixtures().join("logs/ok/linear-chat.jsonl"), &p).unwrap();
    let lock = arbor_tree::paths::lock_path(&p);
    let s = Session::open(&p, OpenMode::Write, opts()).unwrap();
    assert!(lock.exists());
    drop(s);
    assert!(!lock.exists(), "a writer that ended left its lock file");

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lock::lock_holder_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &p)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("LOCKED ") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "child ended before locking");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(lock.exists(), "a killed writer cannot remove its lock file");
    let mut s = Session::open(&p, OpenMode::Write, opts()).unwrap();
    s.append_message(crate::user("after a kill")).unwrap();
    drop(s);
    assert!(!lock.exists());
}
