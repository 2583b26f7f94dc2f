//! The session index on the server (migration 4): every write keeps it in
//! its own transaction, byte for byte the index the cache would hold of the
//! same bytes; a first open on a machine with no cache goes through it; a
//! line an index cannot hold ends it, and the session still reads whole.

use std::fmt::Write as _;
use std::path::Path;

use arbor_log::writer::Durability;
use arbor_pg::{PgStore, SessionKey};
use arbor_tree::sessions::{NoProgress, Scope, SearchRequest, Sessions};
use arbor_tree::{OpenMode, Position, Session, SessionOptions, Store};

use arbor_test_support::pg::{socket_of, CutProxy};

use crate::{pg_opts, server_bytes, store, user};

const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

/// A session of `n` entries with branches, labels, an unknown type and role,
/// a blank line and roots naming a parent nobody holds; padded messages
/// (`pad` > 0) come with a label every 1,000 entries only, as in a real session.
fn branched(n: usize, pad: usize) -> String {
    let body = "x".repeat(pad);
    let mut text = format!("{HEADER}\n");
    for i in 0..n {
        let parent = match i {
            0 => "null".to_owned(),
            _ if i % 40 == 0 => format!("\"e{}\"", i - 30),
            _ if i % 97 == 13 => "\"gone\"".to_owned(),
            _ => format!("\"e{}\"", i - 1),
        };
        let ts = format!("2026-01-01T00:{:02}:{:02}.000Z", i / 60 % 60, i % 60);
        match i % 5 {
            3 if pad == 0 || i % 1000 == 3 => writeln!(text, r#"{{"type":"label","id":"e{i}","parentId":{parent},"timestamp":"{ts}","targetId":"e1","label":"L{i}"}}"#),
            4 => writeln!(text, r#"{{"type":"weird_kind","id":"e{i}","parentId":{parent},"timestamp":"{ts}","n":{i}}}"#),
            k => {
                let role = ["user", "assistant", "narrator", "user"][k];
                writeln!(text, r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"{role}","content":"m{i} {body}"}}}}"#)
            }
        }
        .unwrap();
        if i == 250 {
            text.push('\n');
        }
    }
    text
}

/// The four parts of the index the cache holds of `bytes` (as a file).
fn cache_parts(bytes: &[u8]) -> [Vec<u8>; 4] {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    let opts = SessionOptions { index_dir: Some(cache.clone()), index_min_bytes: 0, ..Default::default() };
    Session::open(&path, OpenMode::ReadOnly, opts).unwrap();
    let f = std::fs::read_dir(&cache).unwrap().next().unwrap().unwrap();
    let b = std::fs::read(f.path()).unwrap();
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (n, strings) = (word(72) as usize, word(80) as usize);
    let at = [96, 96 + 4 * n, 96 + 6 * n, 96 + 38 * n, 96 + 38 * n + strings];
    std::array::from_fn(|k| b[at[k]..at[k + 1]].to_vec())
}

/// The parts the server keeps of session `path` (`None`: it keeps no index).
fn server_parts(db: &arbor_test_support::pg::TestDb, path: &Path) -> Option<[Vec<u8>; 4]> {
    let key = SessionKey::of_path(path);
    let mut c = db.client();
    let row = c
        .query_one("SELECT id, ix_bytes FROM arbor.sessions WHERE dir = $1 AND name = $2", &[&key.dir, &key.name])
        .unwrap();
    let (id, bytes): (i64, Option<i64>) = (row.get(0), row.get(1));
    bytes?;
    let mut parts: [Vec<u8>; 4] = Default::default();
    for r in c.query("SELECT part, bytes FROM arbor.index_parts WHERE session = $1 ORDER BY part, off", &[&id]).unwrap()
    {
        parts[r.get::<_, i16>(0) as usize].extend_from_slice(r.get::<_, &[u8]>(1));
    }
    Some(parts)
}

/// Options of a machine that has no index cache, indexing any size.
fn new_machine(store: &PgStore) -> SessionOptions {
    SessionOptions { index_min_bytes: 0, index_dir: None, ..pg_opts(store) }
}

fn same(a: &Session, b: &Session) {
    assert_eq!(a.leaf_id(), b.leaf_id());
    let ids = |s: &Session| s.get_branch(None).unwrap().iter().map(|e| e.id.to_string()).collect::<Vec<_>>();
    assert_eq!(ids(a), ids(b));
    let json = |s: &Session| s.entries_json().map(Result::unwrap).map(|(_, j)| j.to_owned()).collect::<Vec<_>>();
    assert_eq!(json(a), json(b));
}

#[test]
fn every_write_keeps_the_caches_index_on_the_server_and_a_first_open_reads_through_it() {
    let Some((db, store)) = store("index_kept") else { return };
    let path = Path::new(arbor_pg::ROOT).join("--w--").join("s.jsonl");
    // A push (the session replaced whole), larger than a chunk of every part.
    store.rewrite(&path, branched(3000, 0).as_bytes()).unwrap();
    let parts = server_parts(&db, &path).expect("a pushed clean session is indexed");
    assert!(parts == cache_parts(&server_bytes(&store, &path)), "the pushed index differs from the cache's");

    // Appends through a session, an entry a write, and one write of many lines.
    let mut s = Session::open(&path, OpenMode::Write, new_machine(&store)).unwrap();
    assert!(s.opened_from_index(), "a first open with no cache goes through the server's index");
    for k in 0..5 {
        s.append_message(user(&format!("more {k}"))).unwrap();
    }
    drop(s);
    let (mut h, _) = store.open_append(&path, Durability::Buffered).unwrap();
    let mut many = String::new();
    for i in 3000..3400 {
        writeln!(many, r#"{{"type":"message","id":"e{i}","parentId":"e{}","timestamp":"2026-01-01T01:00:00.000Z","message":{{"role":"user","content":"x"}}}}"#, i - 1).unwrap();
    }
    h.append(many.as_bytes()).unwrap();
    drop(h);
    let bytes = server_bytes(&store, &path);
    assert!(server_parts(&db, &path).unwrap() == cache_parts(&bytes), "the appended index differs from the cache's");

    let through = Session::open(&path, OpenMode::ReadOnly, new_machine(&store)).unwrap();
    assert!(through.opened_from_index());
    let full =
        Session::open(&path, OpenMode::ReadOnly, SessionOptions { index_first: false, ..new_machine(&store) }).unwrap();
    assert!(!full.opened_from_index());
    same(&through, &full);
    assert!(through.get_entry("e1234").unwrap().is_some() && through.get_entry("nobody").unwrap().is_none());
}

#[test]
fn a_first_open_on_a_new_machine_fetches_what_the_command_needs_not_the_session() {
    let Some((db, store)) = store("index_first_open") else { return };
    let path = Path::new(arbor_pg::ROOT).join("--w--").join("s.jsonl");
    store.rewrite(&path, branched(4000, 1000).as_bytes()).unwrap();
    let size = server_bytes(&store, &path).len();
    let url = db.url.clone();
    let proxy = CutProxy::start(&socket_of(&url).unwrap());
    let far = PgStore::connect(&proxy.url(db.name())).unwrap();
    let before = proxy.served();
    let s = Session::open(&path, OpenMode::ReadOnly, new_machine(&far)).unwrap();
    let leaf_path = s.get_branch(None).unwrap().iter().map(|e| e.id.to_string()).collect::<Vec<_>>();
    let served = proxy.served() - before;
    assert!(served * 5 < size, "the server sent {served} bytes of a {size}-byte session for the path at the leaf");
    let full =
        Session::open(&path, OpenMode::ReadOnly, SessionOptions { index_first: false, ..new_machine(&store) }).unwrap();
    assert_eq!(leaf_path, full.get_branch(None).unwrap().iter().map(|e| e.id.to_string()).collect::<Vec<_>>());

    // A search reads the lines it searches once (arbor-search's engine runs
    // over the server's bytes, as over a file) and marks its hits' active
    // paths through the same index: no second read of the session for them.
    let before = proxy.served();
    let hits = Sessions::search(&far, &SearchRequest::new("m3995", Scope::All), &NoProgress).unwrap();
    let served = proxy.served() - before;
    assert!(hits.len() == 1 && hits[0].on_active_path, "{hits:?}");
    assert!(served * 2 < size * 3, "the search fetched {served} bytes of a {size}-byte session (more than one read)");
}

#[test]
fn a_line_no_index_can_hold_ends_the_servers_index_and_the_session_reads_whole() {
    let Some((db, store)) = store("index_ended") else { return };
    let path = Path::new(arbor_pg::ROOT).join("--w--").join("s.jsonl");
    store.rewrite(&path, branched(300, 0).as_bytes()).unwrap();
    assert!(server_parts(&db, &path).is_some());
    let (mut h, _) = store.open_append(&path, Durability::Buffered).unwrap();
    // An id an earlier entry holds: the file's reader diagnoses it; no index holds it.
    h.append(br#"{"type":"message","id":"e7","parentId":"e299","timestamp":"2026-01-01T01:00:00.000Z","message":{"role":"user","content":"again"}}
"#).unwrap();
    h.append(br#"{"type":"message","id":"z1","parentId":"e7","timestamp":"2026-01-01T01:00:00.000Z","message":{"role":"user","content":"after"}}
"#).unwrap();
    drop(h);
    assert!(server_parts(&db, &path).is_none(), "the index ended at the duplicate id");
    let s = Session::open(&path, OpenMode::ReadOnly, new_machine(&store)).unwrap();
    assert!(!s.opened_from_index());
    let full =
        Session::open(&path, OpenMode::ReadOnly, SessionOptions { index_first: false, ..new_machine(&store) }).unwrap();
    same(&s, &full);
    assert_eq!(s.leaf_id(), Some("z1"));

    // Replaced whole with clean lines: indexed again.
    store.rewrite(&path, branched(300, 0).as_bytes()).unwrap();
    assert!(server_parts(&db, &path).unwrap() == cache_parts(&server_bytes(&store, &path)));
}

#[test]
fn an_index_the_server_keeps_that_does_not_match_the_lines_is_noticed() {
    let Some((db, store)) = store("index_forged") else { return };
    let path = Path::new(arbor_pg::ROOT).join("--w--").join("s.jsonl");
    store.rewrite(&path, branched(300, 0).as_bytes()).unwrap();
    // Someone with write access edits a line in place, same length, behind the index.
    let key = SessionKey::of_path(&path);
    db.client()
        .execute(
            "UPDATE arbor.lines l SET bytes = replace(convert_from(l.bytes, 'UTF8'), '\"id\":\"e299\"', '\"id\":\"z299\"')::bytea \
             FROM arbor.sessions s WHERE s.id = l.session AND s.dir = $1 AND s.name = $2",
            &[&key.dir, &key.name],
        )
        .unwrap();
    let mut s = Session::open(&path, OpenMode::ReadOnly, new_machine(&store)).unwrap();
    assert!(s.opened_from_index());
    let positions: Vec<_> = (0..s.len()).map(Position::new).collect();
    assert!(s.verify_lines(&positions).unwrap(), "the changed line was noticed");
    assert!(s.notices().iter().any(|n| n.contains("the index the store keeps did not match")), "{:?}", s.notices());
    assert_eq!(s.leaf_id(), Some("z299"));
}

#[test]
fn a_session_from_before_the_server_kept_indexes_gets_one_from_its_first_writer() {
    let Some((db, store)) = store("index_built_late") else { return };
    let path = Path::new(arbor_pg::ROOT).join("--w--").join("s.jsonl");
    store.rewrite(&path, branched(9000, 0).as_bytes()).unwrap();
    // As migration 4 left a session written before it: no index, every ix_* column NULL.
    let key = SessionKey::of_path(&path);
    db.client()
        .batch_execute(&format!(
            "DELETE FROM arbor.index_parts; DELETE FROM arbor.index_ids; \
             UPDATE arbor.sessions SET ix_entries = NULL, ix_strings = NULL, ix_header = NULL, \
             ix_lines = NULL, ix_bytes = NULL WHERE dir = '{}' AND name = '{}'",
            key.dir, key.name
        ))
        .unwrap();
    assert!(server_parts(&db, &path).is_none());
    // A writer opens it (and appends): the index is built, exactly the cache's.
    let mut s = Session::open(&path, OpenMode::Write, pg_opts(&store)).unwrap();
    s.append_message(user("later")).unwrap();
    drop(s);
    assert!(server_parts(&db, &path).unwrap() == cache_parts(&server_bytes(&store, &path)));
    let s = Session::open(&path, OpenMode::ReadOnly, new_machine(&store)).unwrap();
    assert!(s.opened_from_index());
    // One whose lines an index cannot hold is tried once, then left as it is.
    let dup = path.with_file_name("dup.jsonl");
    let text = format!("{}{}", branched(20, 0), branched(20, 0).lines().nth(3).unwrap());
    store.rewrite(&dup, format!("{text}\n").as_bytes()).unwrap();
    let ix = |c: &mut postgres::Client| -> Option<i64> {
        c.query_one("SELECT ix_entries FROM arbor.sessions WHERE name = 'dup.jsonl'", &[]).unwrap().get(0)
    };
    assert_eq!(ix(&mut db.client()), Some(-1));
    let mut s = Session::open(&dup, OpenMode::Write, pg_opts(&store)).unwrap();
    s.append_message(user("later")).unwrap();
    assert_eq!(ix(&mut db.client()), Some(-1));
}

#[test]
fn the_labels_of_a_session_on_the_server_are_fetched_together_not_a_block_each() {
    let Some((db, store)) = store("index_labels_together") else { return };
    let path = Path::new(arbor_pg::ROOT).join("--w--").join("s.jsonl");
    // 40 labels, one every 50 entries of about 2 KB: a block read each would fetch most of the session.
    let mut text = format!("{HEADER}\n");
    let body = "y".repeat(2000);
    for i in 0..2000 {
        let parent = if i == 0 { "null".to_owned() } else { format!("\"e{}\"", i - 1) };
        match i % 50 {
            49 => writeln!(text, r#"{{"type":"label","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","targetId":"e{}","label":"L{i}"}}"#, i - 1),
            _ => writeln!(text, r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"m{i} {body}"}}}}"#),
        }
        .unwrap();
    }
    store.rewrite(&path, text.as_bytes()).unwrap();
    let size = text.len();
    let proxy = CutProxy::start(&socket_of(&db.url).unwrap());
    let far = PgStore::connect(&proxy.url(db.name())).unwrap();
    let s = Session::open(&path, OpenMode::ReadOnly, new_machine(&far)).unwrap();
    assert!(s.opened_from_stored_index());
    let before = proxy.served();
    let labels: Vec<String> = s.labels().unwrap().map(|l| l.label.text.clone()).collect();
    let served = proxy.served() - before;
    assert_eq!(labels.len(), 40, "{labels:?}");
    assert!(served * 20 < size, "resolving 40 labels fetched {served} bytes of a {size}-byte session");
}
