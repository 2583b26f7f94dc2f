//! Finding sessions on the server: by name, listed newest first from the
//! facts each write keeps, and searched with PostgreSQL's full-text search.

use std::path::Path;

use arbor_pg::{PgError, TextQuery};
use arbor_test_support::{fixtures, jsonl_under};
use arbor_tree::{list_sessions, read_session_info, Session, Store};

use crate::{assistant, pg_opts, store, user};

#[test]
fn listings_from_the_rows_equal_reading_every_session() {
    let Some((_db, store)) = store("listing_facts") else { return };
    for f in jsonl_under(&fixtures()) {
        store.push(&f).unwrap();
    }
    // A session written through the store, growing line by line.
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("what the listing shows")).unwrap();
    s.append_message(assistant("an answer")).unwrap();
    s.append_session_info("the name").unwrap();
    drop(s);

    let listed = store.sessions(None).unwrap();
    assert!(listed.len() > 30, "{} sessions", listed.len());
    for info in &listed {
        let bytes = store.read_session(&arbor_pg::SessionKey::of_path(&info.path)).unwrap().unwrap();
        let mut want = read_session_info(&bytes[..], &info.path, None).unwrap().unwrap();
        want.all_messages_text = String::new();
        if want.modified.is_empty() {
            want.modified = info.modified.clone();
        }
        assert_eq!(info, &want, "{}", info.path.display());
    }
    let mine = store.sessions(Some("/team/proj")).unwrap();
    assert_eq!(mine.len(), 1);
    assert_eq!((mine[0].name.as_deref(), mine[0].message_count), (Some("the name"), 2));
    assert_eq!(mine[0].first_message, "what the listing shows");
    // The store lists the same sessions for arbor-tree's own listing.
    let dir = Path::new(arbor_pg::ROOT).join("--team-proj--");
    assert_eq!(list_sessions(&store, &dir).unwrap().len(), 1);
    assert!(store.list_dirs(Path::new(arbor_pg::ROOT)).unwrap().contains(&dir));
}

#[test]
fn sessions_are_found_by_path_file_name_and_id_prefix() {
    let Some((_db, store)) = store("resolve_names") else { return };
    // One counter for both sessions: their ids share a prefix.
    let opts = pg_opts(&store);
    let mut a = Session::create("/p", opts.clone()).unwrap();
    a.append_message(user("x")).unwrap();
    a.append_message(assistant("y")).unwrap();
    let path = a.session_file().unwrap().to_owned();
    let key = arbor_pg::SessionKey::of_path(&path);
    let id = a.session_id().to_owned();
    drop(a);
    assert_eq!(store.resolve(&path.to_string_lossy()).unwrap(), key);
    assert_eq!(store.resolve(&key.to_string()).unwrap(), key);
    assert_eq!(store.resolve(&key.name).unwrap(), key);
    assert_eq!(store.resolve(&id).unwrap(), key);
    assert_eq!(store.resolve(&id[..id.len() - 3]).unwrap(), key);
    let e = store.resolve("ffffffff").unwrap_err();
    assert!(matches!(e, PgError::NoSession { .. }) && e.to_string().contains("no session ffffffff"), "{e}");
    let mut b = Session::create("/p", opts).unwrap();
    b.append_message(user("x")).unwrap();
    b.append_message(assistant("y")).unwrap();
    drop(b);
    let e = store.resolve("0000").unwrap_err();
    assert!(matches!(e, PgError::Ambiguous { .. }), "{e}");
    assert_eq!(store.resolve(&id).unwrap(), key, "an exact id wins");
}

#[test]
fn search_finds_words_prefixes_phrases_and_patterns_newest_first() {
    let Some((_db, store)) = store("search_text") else { return };
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("the build fails on the release branch")).unwrap();
    s.append_message(assistant("Rebuilding the cache fixed the builds")).unwrap();
    s.append_message(user("thanks, café is open")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    drop(s);
    let words = |w: &[&str], p: &[&str]| TextQuery::Words {
        words: w.iter().map(|s| s.to_string()).collect(),
        phrases: p.iter().map(|s| s.to_string()).collect(),
    };
    let hits = store.search(&words(&["build"], &[]), None, 10).unwrap();
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert!(hits[0].timestamp >= hits[1].timestamp, "newest first");
    assert_eq!(hits[0].path, path);
    let h = hits.iter().find(|h| h.role == Some(arbor_tree::Role::User)).unwrap();
    let marked: String = h.snippet.chars().skip(h.marks[0][0]).take(h.marks[0][1] - h.marks[0][0]).collect();
    assert_eq!(marked.to_lowercase(), "build");
    assert_eq!(store.search(&words(&["build", "release"], &[]), None, 10).unwrap().len(), 1);
    assert_eq!(store.search(&words(&[], &["release branch"]), None, 10).unwrap().len(), 1);
    assert_eq!(store.search(&words(&[], &["branch release"]), None, 10).unwrap().len(), 0);
    assert_eq!(store.search(&words(&["CAFÉ"], &[]), None, 10).unwrap().len(), 1);
    let re = store.search(&TextQuery::Regex("re(build|lease)".into()), Some("/team/proj"), 10).unwrap();
    assert_eq!(re.len(), 2);
    assert!(store.search(&words(&["build"], &[]), Some("/elsewhere"), 10).unwrap().is_empty());
    assert!(store.search(&words(&["!!!"], &[]), None, 10).unwrap().is_empty(), "no words: no hits");
    // Written after a search: indexed by the next one.
    let mut s = Session::open(&path, arbor_tree::OpenMode::Write, pg_opts(&store)).unwrap();
    s.append_message(user("a zeppelin arrives late")).unwrap();
    drop(s);
    assert_eq!(store.search(&words(&["zeppelin"], &[]), None, 10).unwrap().len(), 1);
    assert_eq!(store.index_pending().unwrap(), 0, "nothing left to index");
}

#[test]
fn an_ambiguous_prefix_gives_the_true_count() {
    let Some((db, store)) = store("ambiguous_count") else { return };
    db.client()
        .batch_execute(
            "INSERT INTO arbor.sessions (dir, name, session_id) \
             SELECT '--p--', 'f' || g || '.jsonl', 'abcd' || lpad(g::text, 4, '0') FROM generate_series(1, 301) g",
        )
        .unwrap();
    let e = store.resolve("abcd").unwrap_err();
    let PgError::Ambiguous { total, candidates, .. } = &e else { panic!("{e}") };
    assert_eq!((*total, candidates.len()), (301, 8));
    let msg = e.to_string();
    assert!(msg.contains("abcd names 301 sessions (--p--/f1.jsonl, ") && msg.contains(", …); give more"), "{msg}");
    let e = store.resolve("abcd030").unwrap_err().to_string();
    assert!(e.contains("names 2 sessions (--p--/f300.jsonl, --p--/f301.jsonl); give"), "{e}");
}
