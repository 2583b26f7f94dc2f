//! `arbor label` on a server whose processes are frozen (`kill -STOP`, as a
//! hung machine or network looks to a client): the command exits with one
//! line naming the limit, never hangs (its exit included), writes nothing,
//! and the same command run again once the server answers writes it once.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use arbor_test_support::pg::TestDb;

use crate::{fixtures, stderr, stdout};

const DEMO: &str = "--home-dev-wordfreq--/2026-03-14T09-12-03-418Z_fe01ce2a.jsonl";

/// `arbor ARGS` on the server `url` (as `arbor unlock`'s tests run it), with no input.
fn command(url: &str, dir: &Path, args: &[&str]) -> Command {
    let mut c = crate::server_unlock::command(url, dir, args);
    c.stdin(Stdio::null());
    c
}

/// The server processes of `pid`'s connections (the CLI names them `arbor:<pid>@host`).
fn backends_of(db: &TestDb, pid: u32, waiting_on_a_lock: bool) -> Vec<i32> {
    let lock = if waiting_on_a_lock { " AND wait_event_type = 'Lock'" } else { "" };
    db.client()
        .query(
            &format!("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE $2{lock}"),
            &[&db.name(), &format!("arbor:{pid}@%")],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Sends SIGCONT to the processes it holds when dropped (no server process is left stopped).
struct Stopped(Vec<i32>);

impl Drop for Stopped {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = Command::new("kill").args(["-CONT", &p.to_string()]).status();
        }
    }
}

fn labels(url: &str, dir: &Path, name: &str) -> usize {
    let o = command(url, dir, &["dump", "fe01ce2a"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).matches(name).count()
}

#[test]
fn a_label_on_a_frozen_server_exits_with_one_line_and_a_retry_writes_it_once() {
    let Some(db) = TestDb::new("cli_frozen_label") else { return };
    // statement_timeout 2 s: the client waits for 4 s.
    let url = format!("{}?options=-c%20statement_timeout%3D2000", db.url);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(DEMO);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::copy(fixtures().join("demo/demo.jsonl"), &file).unwrap();
    let o = command(&url, dir.path(), &["push", file.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    // The label's first write waits on a lock this test holds (reads pass);
    // there, every server process of the command is frozen.
    let mut holder = db.client();
    let mut tx = holder.transaction().unwrap();
    tx.batch_execute("LOCK TABLE arbor.sessions IN SHARE MODE").unwrap();
    let started = Instant::now();
    let mut label = command(&url, dir.path(), &["label", "fe01ce2a", "4f487dd5", "frozen-label"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while backends_of(&db, label.id(), true).is_empty() {
        assert!(label.try_wait().unwrap().is_none(), "the label ended before its write");
        assert!(started.elapsed() < Duration::from_secs(20), "the label never reached its write");
        std::thread::sleep(Duration::from_millis(5));
    }
    let stopped = Stopped(backends_of(&db, label.id(), false));
    for p in &stopped.0 {
        assert!(Command::new("kill").args(["-STOP", &p.to_string()]).status().unwrap().success());
    }
    tx.rollback().unwrap();
    let frozen_at = Instant::now();
    let status = loop {
        if let Some(s) = label.try_wait().unwrap() {
            break s;
        }
        if frozen_at.elapsed() > Duration::from_secs(30) {
            let _ = label.kill();
            panic!("arbor label hung on a frozen server");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = frozen_at.elapsed();
    let o = label.wait_with_output().unwrap();
    let err = stderr(&o);
    assert!(!status.success() && took < Duration::from_secs(10), "{status:?} after {took:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no answer within 4 s") && err.contains("nothing was written"), "{err}");
    drop(stopped);

    // Thawed: nothing of it was written; the same command again writes it once
    // (as soon as the server has noticed that the frozen command is gone).
    assert_eq!(labels(&url, dir.path(), "frozen-label"), 0);
    let again = Instant::now();
    loop {
        let o = command(&url, dir.path(), &["label", "fe01ce2a", "4f487dd5", "frozen-label"]).output().unwrap();
        if o.status.success() {
            break;
        }
        assert!(stderr(&o).contains("open for writing") && again.elapsed() < Duration::from_secs(20), "{}", stderr(&o));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(labels(&url, dir.path(), "frozen-label"), 1);
}
