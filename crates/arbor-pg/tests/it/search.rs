//! Search on the server reads what its gram filters say may hold the
//! query (migration 5): filters written by every write in its own
//! transaction, sessions without one read as they are and given one by a
//! search whose role may insert, a filter of another format read as absent,
//! and a session that does not open left out with a warning naming it.

use std::cell::Cell;
use std::path::{Path, PathBuf};

use arbor_pg::PgStore;
use arbor_test_support::pg::TestDb;
use arbor_tree::sessions::{Progress, Scope, SearchRequest, Sessions};
use arbor_tree::{OpenMode, Session};

use crate::{pg_opts, store, user};

/// Counts the bytes a search says it read.
#[derive(Default)]
struct Read(Cell<u64>);

impl Progress for Read {
    fn advance(&self, bytes: u64) {
        self.0.set(self.0.get() + bytes);
    }
}

const FILLER: &str = "the build of the release branch passed all checks today and the team went home early";

/// A session file of `n` entries under `root/--p--/`, entry `k` saying `word` for each `(k, word)` of `special`.
fn write_session(root: &Path, id: &str, n: usize, special: &[(usize, &str)]) -> PathBuf {
    let dir = root.join("--p--");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("2026-01-01T00-00-00-000Z_{id}.jsonl"));
    let mut text = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}}\n"
    );
    let mut parent = "null".to_owned();
    for i in 0..n {
        let words: Vec<&str> = special.iter().filter(|(k, _)| *k == i).map(|(_, w)| *w).collect();
        let content = format!("{FILLER} {FILLER} {FILLER} {FILLER} {FILLER} {}", words.join(" "));
        let eid = format!("{:08x}", i + 1);
        text.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{eid}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:01.000Z\",\
             \"message\":{{\"role\":\"user\",\"content\":\"{content}\",\"timestamp\":1}}}}\n"
        ));
        parent = format!("\"{eid}\"");
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// The session ids of two sessions: a large one (about 2.4 MB) and a small one.
const BIG: &str = "0193c6f2-0000-4000-8000-00000000000b";
const SMALL: &str = "0193c6f2-0000-4000-8000-00000000000c";

/// Pushes the big session (with `zeppelinquark` in its middle) and the small one.
fn push_two(store: &PgStore, root: &Path) -> (PathBuf, u64) {
    let big = write_session(root, BIG, 5000, &[(2500, "zeppelinquark")]);
    let small = write_session(root, SMALL, 20, &[(3, "ordinary")]);
    let (key, _) = store.push(&big).unwrap();
    store.push(&small).unwrap();
    (key.path(), std::fs::metadata(&big).unwrap().len())
}

/// Searches `query` on `store`: the hits' entry ids and the bytes read.
fn search(store: &PgStore, query: &str) -> (Vec<String>, u64) {
    let read = Read::default();
    let hits = store.search(&SearchRequest::new(query, Scope::All).limit(50), &read).unwrap();
    (hits.into_iter().map(|h| h.entry_id).collect(), read.0.get())
}

/// Rows of `arbor.filters` of the session with id `session_id`: (start, end) in order.
fn filters_of(db: &TestDb, session_id: &str) -> Vec<(i64, i64)> {
    db.client()
        .query(
            "SELECT f.start_off, f.end_off FROM arbor.filters f JOIN arbor.sessions s ON s.id = f.session \
             WHERE s.session_id = $1 ORDER BY 1, 2",
            &[&session_id],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

#[test]
fn writes_keep_filters_and_a_search_reads_only_what_may_hold_its_words() {
    let Some((db, store)) = store("search_filters") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (big, size) = push_two(&store, dir.path());
    // The push wrote the filters with the lines: whole lines, from the first byte to the last.
    let f = filters_of(&db, BIG);
    assert!(f.len() >= 2, "{f:?}");
    assert_eq!((f[0].0, f.last().unwrap().1), (0, size as i64));
    assert!(f.windows(2).all(|w| w[0].1 == w[1].0), "{f:?}");
    assert_eq!(filters_of(&db, SMALL).len(), 1);

    // A word in no session reads nothing (as a pattern: a word with no hit
    // would then be matched fuzzily, which reads the newest sessions whole);
    // a word in one range reads that range.
    assert_eq!(search(&store, "re:vorpalsnicker"), (vec![], 0));
    let (hits, read) = search(&store, "zeppelinquark");
    assert_eq!(hits, [format!("{:08x}", 2501)]);
    assert!(read > 0 && read < size / 2, "read {read} of {size}");
    // Every entry matches a word of every entry: everything is read, as before.
    let (hits, read) = search(&store, "checks");
    assert_eq!(hits.len(), 50);
    assert!(read > 0, "{read}");

    // A small append leaves its lines without a filter: they are read as they are.
    let mut s = Session::open(&big, OpenMode::Write, pg_opts(&store)).unwrap();
    s.append_message(user("a late zeppelinquark")).unwrap();
    let (hits, read) = search(&store, "zeppelinquark");
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert!(read < size / 2, "{read}");
    let (hits, tail) = search(&store, "re:vorpalsnicker");
    assert!(hits.is_empty() && tail > 0 && tail < 4096, "{tail}");
    // Once 64 KiB of new lines have come, the append that brings them gives them a filter.
    for i in 0..200 {
        s.append_message(user(&format!("{FILLER} {FILLER} {FILLER} number {i}"))).unwrap();
    }
    drop(s);
    let (hits, read) = search(&store, "re:vorpalsnicker");
    assert!(hits.is_empty() && read < 64 << 10, "{read}");
    let last = *filters_of(&db, BIG).last().unwrap();
    assert!(last.1 as u64 > size + (60 << 10), "{last:?}");
    assert_eq!(search(&store, "zeppelinquark").0.len(), 2);
    assert_eq!(search(&store, "\"number 199\"").0.len(), 1);
}

#[test]
fn sessions_without_filters_are_read_whole_and_given_them_when_the_role_may_insert() {
    let Some((db, store)) = store("search_old_sessions") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_, size) = push_two(&store, dir.path());
    // As a server that had these sessions before migration 5.
    db.client().batch_execute("DELETE FROM arbor.filters").unwrap();

    // A role that may only read: the sessions are read whole, nothing is written.
    let role = format!("reader_{}", std::process::id());
    let mut admin = db.client();
    admin.batch_execute(&format!("CREATE ROLE {role} LOGIN")).unwrap();
    admin
        .batch_execute(&format!(
            "GRANT USAGE ON SCHEMA arbor TO {role}; GRANT SELECT ON ALL TABLES IN SCHEMA arbor TO {role}"
        ))
        .unwrap();
    let url = db.url.replacen("://arbor@", &format!("://{role}@"), 1);
    assert_ne!(url, db.url, "the test database's URL names its user");
    let reader = PgStore::connect(&url).unwrap();
    let (hits, read) = search(&reader, "zeppelinquark");
    assert_eq!(hits.len(), 1);
    assert!(read >= size, "{read} of {size}");
    assert!(filters_of(&db, BIG).is_empty());
    assert!(reader.take_warnings().is_empty());

    // A role that may insert gives them filters as it reads them; the next search reads less.
    let (hits, read) = search(&store, "zeppelinquark");
    assert_eq!((hits.len(), read >= size), (1, true));
    assert!(filters_of(&db, BIG).len() >= 2);
    assert_eq!(filters_of(&db, SMALL).len(), 1);
    let (hits, read) = search(&store, "zeppelinquark");
    assert_eq!(hits.len(), 1);
    assert!(read < size / 2, "{read}");

    // Filters of another format (a build whose gram hash differs) are read as absent, never trusted.
    db.client().batch_execute("UPDATE arbor.filters SET format = format + 1").unwrap();
    let (hits, read) = search(&store, "zeppelinquark");
    assert_eq!(hits.len(), 1);
    assert!(read >= size, "{read}");
    // Nor are filters of another generation of the session (one replaced whole).
    db.client().batch_execute("DELETE FROM arbor.filters").unwrap();
    search(&store, "zeppelinquark");
    db.client().batch_execute("UPDATE arbor.filters SET generation = generation + 1").unwrap();
    let (hits, read) = search(&store, "zeppelinquark");
    assert_eq!((hits.len(), read >= size), (1, true));
}

#[test]
fn a_session_that_does_not_open_is_left_out_with_a_warning_naming_it() {
    let Some((db, store)) = store("search_bad_row") else { return };
    let dir = tempfile::tempdir().unwrap();
    push_two(&store, dir.path());
    // A row planted by hand: listed as a session of version 1 whose lines are not one.
    let mut c = db.client();
    let id: i64 = c
        .query_one(
            "INSERT INTO arbor.sessions (dir, name, kind, session_id, version, created, cwd, line_count, byte_size) \
             VALUES ('--p--', '2027-01-01T00-00-00-000Z_bad.jsonl', 1, 'bad', 1, '2027-01-01T00:00:00.000Z', '/p', 2, 35) \
             RETURNING id",
            &[],
        )
        .unwrap()
        .get(0);
    c.execute(
        "INSERT INTO arbor.lines (session, seq, off, bytes) VALUES ($1, 0, 0, 'not a session at all\n'::bytea), \
         ($1, 1, 21, 'zeppelinquark\n'::bytea)",
        &[&id],
    )
    .unwrap();
    let (hits, _) = search(&store, "zeppelinquark");
    assert_eq!(hits, [format!("{:08x}", 2501)]);
    let warnings = store.take_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("cannot read /--p--/2027-01-01T00-00-00-000Z_bad.jsonl on the server (")
            && warnings[0].ends_with("; it is left out"),
        "{warnings:?}"
    );
    assert!(store.take_warnings().is_empty());
}
