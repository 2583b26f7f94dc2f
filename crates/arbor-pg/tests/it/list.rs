//! Finding sessions on the server: by name, listed newest first from the
//! facts each write keeps, and searched with PostgreSQL's full-text search.

use std::path::Path;

use arbor_pg::PgError;
use arbor_test_support::{fixtures, jsonl_under};
use arbor_tree::listing::{list_sessions, read_session_info};
use arbor_tree::sessions::{ListRequest, NoProgress, Relevance, Scope, SearchRequest, Sessions, SessionsError};
use arbor_tree::{Role, Session, Store};

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

    let listed = store.listing(&ListRequest::new(Scope::All), &NoProgress).unwrap();
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
    let mine = store.listing(&ListRequest::new(Scope::cwd("/team/proj")), &NoProgress).unwrap();
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
    assert_eq!(store.resolve(&path.to_string_lossy()).unwrap(), path);
    assert_eq!(store.resolve(&key.to_string()).unwrap(), path);
    assert_eq!(store.resolve(&key.name).unwrap(), path);
    assert_eq!(store.resolve(&id).unwrap(), path);
    assert_eq!(store.resolve(&id[..id.len() - 3]).unwrap(), path);
    assert_eq!(store.session_key(&id).unwrap(), key);
    let e = store.resolve("ffffffff").unwrap_err();
    assert!(matches!(e, SessionsError::NotFound { .. }) && e.to_string().contains("no session ffffffff"), "{e}");
    let mut b = Session::create("/p", opts).unwrap();
    b.append_message(user("x")).unwrap();
    b.append_message(assistant("y")).unwrap();
    drop(b);
    let e = store.resolve("0000").unwrap_err();
    assert!(matches!(e, SessionsError::Ambiguous { count: 2, .. }), "{e}");
    let e = store.session_key("0000").unwrap_err();
    assert!(matches!(e, PgError::Ambiguous { total: 2, .. }), "{e}");
    assert_eq!(store.resolve(&id).unwrap(), path, "an exact id wins");
}

#[test]
fn search_finds_words_inside_words_phrases_and_patterns_last_line_first() {
    let Some((_db, store)) = store("search_text") else { return };
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("the build fails on the release branch")).unwrap();
    s.append_message(assistant("Rebuilding the cache fixed the builds")).unwrap();
    s.append_message(user("thanks, café is open")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    drop(s);
    let search = |q: &str, scope: Scope| store.search(&SearchRequest::new(q, scope).limit(10), &NoProgress).unwrap();
    let hits = search("build", Scope::All);
    // Found as written, inside words too ("Rebuilding", "builds"), up to case; the last line first.
    let rel: Vec<Relevance> = hits.iter().map(|h| h.relevance).collect();
    assert_eq!(rel, [Relevance::Exact, Relevance::Exact], "{hits:?}");
    assert_eq!(hits.iter().map(|h| h.role.clone()).collect::<Vec<_>>(), [Some(Role::Assistant), Some(Role::User)]);
    let ids = |h: &[arbor_tree::sessions::Hit]| h.iter().map(|h| h.entry_id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&search("bui", Scope::All)), ids(&hits));
    assert!(hits.iter().all(|h| h.on_active_path && h.labels.is_empty()), "{hits:?}");
    assert_eq!(hits[0].path, path);
    let h = &hits[1];
    let marked: String = h.snippet.chars().skip(h.marks[0][0]).take(h.marks[0][1] - h.marks[0][0]).collect();
    assert_eq!(marked.to_lowercase(), "build");
    assert_eq!(search("build release", Scope::All).len(), 1);
    assert_eq!(search(r#""release branch""#, Scope::All).len(), 1);
    assert_eq!(search(r#""branch release""#, Scope::All).len(), 0);
    assert_eq!(search("CAFÉ", Scope::All).len(), 1);
    assert_eq!(search("re:re(build|lease)", Scope::cwd("/team/proj")).len(), 2);
    assert!(search("build", Scope::cwd("/elsewhere")).is_empty());
    assert!(search("!!!", Scope::All).is_empty(), "no such text: no hits");
    let e = store.search(&SearchRequest::new("re:(", Scope::All), &NoProgress).unwrap_err();
    assert!(matches!(e, SessionsError::Query(_)), "{e}");
    // A search reads the sessions as they are: what was just written is found, index or not.
    let mut s = Session::open(&path, arbor_tree::OpenMode::Write, pg_opts(&store)).unwrap();
    s.append_message(user("a zeppelin arrives late")).unwrap();
    drop(s);
    let as_is = SearchRequest::new("zeppelin", Scope::All).as_is();
    assert_eq!(store.search(&as_is, &NoProgress).unwrap().len(), 1);
    store.update_index(&Scope::All, &NoProgress).unwrap();
    assert_eq!(search("zeppelin", Scope::All).len(), 1);
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
    let e = store.session_key("abcd").unwrap_err();
    let PgError::Ambiguous { total, candidates, .. } = &e else { panic!("{e}") };
    assert_eq!((*total, candidates.len()), (301, 8));
    let msg = e.to_string();
    assert!(
        msg.contains("abcd names 301 sessions (--p--/f1.jsonl, ") && msg.contains(", and 293 more); give more"),
        "{msg}"
    );
    // The seam says it the same way.
    assert_eq!(store.resolve("abcd").unwrap_err().to_string(), msg);
    let e = store.session_key("abcd030").unwrap_err().to_string();
    assert!(e.contains("names 2 sessions (--p--/f300.jsonl, --p--/f301.jsonl); give"), "{e}");
}
