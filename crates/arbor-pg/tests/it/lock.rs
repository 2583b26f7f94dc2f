//! One writer per session across processes and machines: a second writer
//! is refused with the holder's pid and host, readers are never blocked,
//! and the lock goes with the writer's process.

use std::time::{Duration, Instant};

use arbor_tree::{OpenMode, Session, TreeError};

use crate::child::Writer;
use crate::{assistant, pg_opts, server_bytes, store, user};

/// A session on the server with a few entries; its path.
fn seeded(store: &arbor_pg::PgStore) -> std::path::PathBuf {
    let mut s = Session::create("/team/proj", pg_opts(store)).unwrap();
    s.append_message(user("hello")).unwrap();
    s.append_message(assistant("hi")).unwrap();
    s.session_file().unwrap().to_owned()
}

#[test]
fn a_second_writer_in_another_process_is_refused_with_host_and_pid() {
    let Some((db, store)) = store("second_writer") else { return };
    let path = seeded(&store);
    let mut first = Writer::start(&db.url, &path).unwrap();

    // Here: another process, another connection.
    let err = Session::open(&path, OpenMode::Write, pg_opts(&store)).unwrap_err();
    let TreeError::Locked { holder: Some(h), .. } = &err else { panic!("{err}") };
    assert_eq!(h.pid, first.pid);
    let host = gethostname();
    assert_eq!(h.host.as_deref(), Some(host.as_str()));
    let msg = err.to_string();
    assert!(msg.contains(&format!("pid {} on {host}", first.pid)), "{msg}");
    assert_eq!(msg.lines().count(), 1, "{msg}");

    // A third, in yet another process: refused the same way.
    let third = Writer::start(&db.url, &path).err().expect("refused");
    assert!(third.contains(&format!("pid {}", first.pid)), "{third}");

    // Readers are never blocked, and see the writer's appends.
    first.send("append");
    let appended = first.next(&["APPENDED "]);
    let id = appended.trim_start_matches("APPENDED ");
    let reader = Session::open(&path, OpenMode::ReadOnly, pg_opts(&store)).unwrap();
    assert_eq!(reader.leaf_id(), Some(id));
    assert!(String::from_utf8(server_bytes(&store, &path)).unwrap().contains(id));
}

#[test]
fn a_killed_writer_frees_the_lock_at_once() {
    let Some((db, store)) = store("killed_writer") else { return };
    let path = seeded(&store);
    let writer = Writer::start(&db.url, &path).unwrap();
    assert!(Session::open(&path, OpenMode::Write, pg_opts(&store)).is_err());
    writer.kill();
    // The server ends the dead client's backend as soon as its socket closes:
    // no timeout to wait out (a few milliseconds of the backend's exit at most).
    let killed = Instant::now();
    let mut s = loop {
        match Session::open(&path, OpenMode::Write, pg_opts(&store)) {
            Ok(s) => break s,
            Err(e @ TreeError::Locked { .. }) => {
                assert!(killed.elapsed() < Duration::from_secs(5), "the killed writer still holds the lock: {e}");
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("{e}"),
        }
    };
    s.append_message(user("after the kill")).unwrap();
}

#[test]
fn the_lock_is_released_when_the_writer_closes() {
    let Some((_db, store)) = store("lock_released") else { return };
    let path = seeded(&store);
    let s = Session::open(&path, OpenMode::Write, pg_opts(&store)).unwrap();
    // Within one process too: one writer per session.
    assert!(matches!(Session::open(&path, OpenMode::Write, pg_opts(&store)), Err(TreeError::Locked { .. })));
    drop(s);
    Session::open(&path, OpenMode::Write, pg_opts(&store)).unwrap();
}

fn gethostname() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

#[test]
fn every_refusal_names_its_holder_even_one_that_just_left() {
    use arbor_tree::Store;
    use std::sync::atomic::{AtomicBool, Ordering};
    let Some((db, store)) = store("refusal_names_holder") else { return };
    let path = seeded(&store);
    // Another writer (its own connections) takes and leaves the session as fast as it can.
    let other = arbor_pg::PgStore::connect(&db.url).unwrap();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let flapping = {
        let (stop, path) = (stop.clone(), path.clone());
        std::thread::spawn(move || {
            let mut held = 0;
            while !stop.load(Ordering::Relaxed) {
                if let Ok(lock) = other.lock(&path) {
                    held += 1;
                    drop(lock);
                }
            }
            held
        })
    };
    let (mut refused, mut unnamed) = (0, 0);
    let start = Instant::now();
    // Until enough refusals are seen (a loaded machine sees fewer per second), within a bound.
    while refused < 40 && start.elapsed() < Duration::from_secs(60) {
        match store.lock(&path) {
            Ok(lock) => drop(lock),
            Err(TreeError::Locked { holder, .. }) => {
                refused += 1;
                unnamed += usize::from(holder.is_none());
            }
            Err(e) => panic!("{e}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    assert!(flapping.join().unwrap() > 10);
    assert!(refused >= 5, "the race was not exercised ({refused} refusals)");
    assert_eq!(unnamed, 0, "{unnamed} of {refused} refusals named no holder");
}
