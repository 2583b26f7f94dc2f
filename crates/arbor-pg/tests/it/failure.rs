//! The server going away: a clear line, nothing half-written, and the next
//! command works once it is back. On a private cluster, stopped with
//! `pg_ctl stop -m immediate` (a crash: no shutdown checkpoint) while another
//! process appends as fast as it can.

use std::collections::HashSet;
use std::path::Path;

use arbor_pg::{PgStore, SessionKey};
use arbor_test_support::pg::Cluster;
use arbor_tree::{check_session, OpenMode, Session, Severity};
use serde_json::Value;

use crate::child::Writer;
use crate::{assistant, pg_opts, user};

/// Every line of the session on the server parses and ends with a newline; their ids.
fn whole_lines(store: &PgStore, path: &Path) -> Vec<String> {
    let bytes = store.read_session(&SessionKey::of_path(path)).unwrap().unwrap();
    assert!(bytes.ends_with(b"\n"), "the session ends in the middle of a line");
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(|l| {
            let v: Value = serde_json::from_slice(l).unwrap_or_else(|e| panic!("half a line: {e}: {l:?}"));
            v["id"].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

#[test]
fn the_server_stopped_mid_append_leaves_whole_lines_and_the_next_command_works() {
    let Some(cluster) = Cluster::start("server_stopped_mid_append") else { return };
    let store = PgStore::connect(&cluster.url).unwrap();
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("hello")).unwrap();
    s.append_message(assistant("hi")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    drop(s);

    let mut writer = Writer::start(&cluster.url, &path).unwrap();
    writer.send("flood");
    let mut acknowledged = HashSet::new();
    while acknowledged.len() < 50 {
        let line = writer.next(&["APPENDED ", "FAILED "]);
        let id = line.strip_prefix("APPENDED ").unwrap_or_else(|| panic!("{line}"));
        acknowledged.insert(id.to_owned());
    }
    cluster.stop("immediate");
    let failed = loop {
        let line = writer.next(&["APPENDED ", "FAILED "]);
        match line.strip_prefix("APPENDED ") {
            Some(id) => acknowledged.insert(id.to_owned()),
            None => break line,
        };
    };
    // One clear line, naming the session and what to do.
    assert_eq!(failed.lines().count(), 1);
    assert!(failed.contains(&path.display().to_string()), "{failed}");
    assert!(failed.contains("PostgreSQL server"), "{failed}");
    assert!(failed.contains("whole write or none of it") || failed.contains("cannot reach"), "{failed}");
    drop(writer);

    // While the server is down: one clear line, nothing else.
    let down = Session::open(&path, OpenMode::ReadOnly, pg_opts(&store)).unwrap_err().to_string();
    assert!(down.contains("cannot reach the PostgreSQL server at") && down.lines().count() == 1, "{down}");
    let down = PgStore::connect(&cluster.url).unwrap_err().to_string();
    assert!(down.starts_with("cannot reach the PostgreSQL server at"), "{down}");

    cluster.restart();
    // The same store reconnects by itself; every acknowledged append is there, whole.
    let ids = whole_lines(&store, &path);
    let stored: HashSet<String> = ids.iter().cloned().collect();
    assert!(acknowledged.is_subset(&stored), "an acknowledged append was lost");
    assert!(ids.len() <= acknowledged.len() + 3 + 1, "at most the one append in flight beyond them");
    let findings = check_session(&path, pg_opts(&store)).unwrap();
    assert!(findings.iter().all(|f| f.severity < Severity::Error), "{findings:?}");

    // The next writer works: the dead one's lock went with the server.
    let mut s = Session::open(&path, OpenMode::Write, pg_opts(&store)).unwrap();
    let id = s.append_message(user("after the restart")).unwrap();
    assert_eq!(whole_lines(&store, &path).last(), Some(&id));
}
