//! A follower sees what another process appends, as it arrives.

use std::time::{Duration, Instant};

use arbor_pg::SessionKey;
use arbor_tree::sessions::{FollowFrom, Followed, Sessions};
use arbor_tree::{OpenMode, Session};

use crate::child::Writer;
use crate::{assistant, pg_opts, store, user};

#[test]
fn a_follower_sees_an_append_from_another_process_within_a_second() {
    let Some((db, store)) = store("follow_other_process") else { return };
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("hello")).unwrap();
    s.append_message(assistant("hi")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    drop(s);
    let key = SessionKey::of_path(&path);
    let (mut follower, now) = store.follow(&path, FollowFrom::Start).unwrap();
    assert_eq!(now, store.read_session(&key).unwrap().unwrap(), "the session as it is, first");

    let mut writer = Writer::start(&db.url, &path).unwrap();
    for _ in 0..3 {
        writer.send("append");
        let sent = Instant::now();
        let id = writer.next(&["APPENDED "]).trim_start_matches("APPENDED ").to_owned();
        let lines = loop {
            match follower.wait(Duration::from_secs(1)).unwrap() {
                Followed::Lines(b) => break b,
                Followed::Idle => assert!(sent.elapsed() < Duration::from_secs(1), "nothing within a second"),
                other => panic!("{other:?}"),
            }
        };
        // Seen within a second of the writer being asked (its append included).
        assert!(sent.elapsed() < Duration::from_secs(1), "seen after {:?}", sent.elapsed());
        let text = String::from_utf8(lines).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains(&format!("\"id\":\"{id}\"")) && text.ends_with('\n'), "{text}");
    }
    assert_eq!(follower.wait(Duration::from_millis(50)).unwrap(), Followed::Idle);
}

#[test]
fn a_follower_from_the_end_gets_only_new_lines_and_sees_a_rewrite() {
    let Some((_db, store)) = store("follow_from_end") else { return };
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("hello")).unwrap();
    s.append_message(assistant("hi")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    let (mut follower, now) = store.follow(&path, FollowFrom::End).unwrap();
    assert!(now.is_empty());
    s.append_message(user("one")).unwrap();
    s.append_message(user("two")).unwrap();
    let mut got = Vec::new();
    while got.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count() < 2 {
        match follower.wait(Duration::from_secs(5)).unwrap() {
            Followed::Lines(b) => got.extend(b),
            other => panic!("{other:?}"),
        }
    }
    let text = String::from_utf8(got).unwrap();
    assert!(text.contains("\"one\"") && text.contains("\"two\"") && !text.contains("hello"), "{text}");
    drop(s);

    // A session replaced whole (as a migration's first write does) is delivered whole.
    arbor_tree::Store::rewrite(
        &store,
        &path,
        b"{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
    )
    .unwrap();
    match follower.wait(Duration::from_secs(5)).unwrap() {
        Followed::Replaced(b) => assert!(String::from_utf8(b).unwrap().contains("\"id\":\"x\"")),
        other => panic!("{other:?}"),
    }
    let _ = Session::open(&path, OpenMode::ReadOnly, pg_opts(&store)).unwrap();
}

#[test]
fn a_session_removed_from_the_server_is_reported_once_and_followed_when_it_comes_back() {
    let Some((db, store)) = store("follow_gone") else { return };
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("hello")).unwrap();
    s.append_message(assistant("hi")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    drop(s);
    let before = store.read_session(&SessionKey::of_path(&path)).unwrap().unwrap();
    let (mut follower, _) = store.follow(&path, FollowFrom::Start).unwrap();
    let key = SessionKey::of_path(&path);
    db.client().execute("DELETE FROM arbor.sessions WHERE dir = $1 AND name = $2", &[&key.dir, &key.name]).unwrap();
    // Nothing notifies a removal: a wait that nothing notified looks at the row (once a second).
    assert_eq!(follower.wait(Duration::from_millis(1500)).unwrap(), Followed::Gone);
    assert_eq!(follower.wait(Duration::from_millis(100)).unwrap(), Followed::Idle, "said once");
    arbor_tree::Store::rewrite(&store, &path, &before).unwrap();
    match follower.wait(Duration::from_secs(3)).unwrap() {
        Followed::Replaced(b) => assert_eq!(b, before),
        other => panic!("{other:?}"),
    }
}
