//! Local copies of sessions read from the server (docs/postgres.md, "Local
//! copies of what was read"): a session read whole leaves a copy in the
//! directory its caller named, the next open reads from it and fetches only
//! what was appended since, and a copy that is not the session's any more
//! (replaced whole, changed on disk, past the budget) is never read.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use arbor_pg::{LocalCopies, PgStore};
use arbor_test_support::pg::{socket_of, CutProxy, TestDb};
use arbor_tree::{OpenMode, Session, SessionOptions, Store};

use crate::{pg_opts, server_bytes, store, user};

const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

/// A session of `n` messages of about 1 KB, one after the other, the text starting with `word`.
fn session(n: usize, word: &str) -> String {
    let body = "z".repeat(1000);
    let mut text = format!("{HEADER}\n");
    for i in 0..n {
        let parent = if i == 0 { "null".to_owned() } else { format!("\"e{}\"", i - 1) };
        writeln!(text, r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"{word} {i} {body}"}}}}"#).unwrap();
    }
    text
}

/// Copies of any session in `dir`, within `budget` bytes.
fn copies(dir: &Path, budget: u64) -> LocalCopies {
    LocalCopies { dir: dir.to_owned(), budget, min_bytes: 0 }
}

/// A proxy to the server that counts what it sends.
fn proxy(db: &TestDb) -> CutProxy {
    CutProxy::start(&socket_of(&db.url).unwrap())
}

/// A new store (another process's) reached through `proxy`, keeping copies as `conf` says.
fn far(db: &TestDb, proxy: &CutProxy, conf: Option<&LocalCopies>) -> PgStore {
    let store = PgStore::connect(&proxy.url(db.name())).unwrap();
    if let Some(conf) = conf {
        store.keep_local_copies(conf.clone());
    }
    store
}

/// What `proxy` sent while `f` ran.
fn sent(proxy: &CutProxy, f: impl FnOnce()) -> usize {
    let before = proxy.served();
    f();
    proxy.served() - before
}

/// True when the file at `path` holds `bytes` (compared without printing them).
fn holds(path: &Path, bytes: &[u8]) -> bool {
    fs::read(path).is_ok_and(|b| b == bytes)
}

/// Every entry's line, read through `store` as a machine with no index cache would.
fn every_line(store: &PgStore, path: &Path) -> Vec<String> {
    let opts = SessionOptions { index_min_bytes: 0, index_dir: None, ..pg_opts(store) };
    let s = Session::open(path, OpenMode::ReadOnly, opts).unwrap();
    s.entries_json().map(Result::unwrap).map(|(_, j)| j.to_owned()).collect()
}

/// The copies in `dir`, by name, with their sizes (nothing else may be there).
fn in_dir(dir: &Path) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = match fs::read_dir(dir) {
        Ok(rd) => rd
            .map(|e| e.unwrap())
            .map(|e| (e.file_name().into_string().unwrap(), e.metadata().unwrap().len()))
            .collect(),
        Err(_) => vec![],
    };
    out.sort();
    out
}

/// The copy of the session's lines (the largest file).
fn lines_copy(dir: &Path) -> PathBuf {
    let (name, _) = in_dir(dir).into_iter().max_by_key(|c| c.1).expect("a copy");
    dir.join(name)
}

/// The copy holding `bytes`.
fn copy_of(dir: &Path, bytes: &[u8]) -> PathBuf {
    let found = in_dir(dir).into_iter().map(|(n, _)| dir.join(n)).find(|p| holds(p, bytes));
    found.expect("a copy of these bytes")
}

fn lines_of(text: &str) -> Vec<String> {
    text.lines().skip(1).map(str::to_owned).collect()
}

#[test]
fn a_session_read_whole_is_read_from_its_copy_next_time_and_appends_from_the_server() {
    let Some((db, store)) = store("copies_reread") else { return };
    let path = Path::new(arbor_pg::ROOT).join("--w--").join("s.jsonl");
    let text = session(2000, "first");
    store.rewrite(&path, text.as_bytes()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let conf = copies(&dir.path().join("copies"), 1 << 30);
    let proxy = proxy(&db);

    let first = sent(&proxy, || assert_eq!(every_line(&far(&db, &proxy, Some(&conf)), &path), lines_of(&text)));
    assert!(first > text.len(), "the first read comes from the server ({first} bytes)");
    let copy = lines_copy(&conf.dir);
    assert!(holds(&copy, text.as_bytes()), "the copy is the session, byte for byte");
    let made = in_dir(&conf.dir);
    assert_eq!(made.len(), 5, "the lines and the four parts of the index: {made:?}");
    assert!(made.iter().all(|(n, _)| n.ends_with(".jsonl")), "nothing half made is left: {made:?}");

    // Read again, by another process: from the copy.
    let again = sent(&proxy, || assert_eq!(every_line(&far(&db, &proxy, Some(&conf)), &path), lines_of(&text)));
    assert!(again * 20 < text.len(), "a read through the copy fetched {again} bytes of {}", text.len());

    // Appended on the server: the copy serves what it holds, the server the rest.
    let mut w = Session::open(&path, OpenMode::Write, pg_opts(&store)).unwrap();
    w.append_message(user("appended after the copy")).unwrap();
    drop(w);
    let now = String::from_utf8(server_bytes(&store, &path)).unwrap();
    let mut read = vec![];
    let tail = sent(&proxy, || read = every_line(&far(&db, &proxy, Some(&conf)), &path));
    assert_eq!(read, lines_of(&now));
    assert!(read.last().unwrap().contains("appended after the copy"));
    // The new line, and at most a 64 KiB block of the lines and of each of the index's four parts.
    assert!(tail < 5 * (64 << 10) + 4096, "only what was appended is fetched ({tail} bytes)");
    assert!(holds(&copy, text.as_bytes()), "a small append makes no new copy");
}

#[test]
fn a_copy_that_is_not_the_sessions_any_more_is_never_read() {
    let Some((db, store)) = store("copies_stale") else { return };
    let path = Path::new(arbor_pg::ROOT).join("--w--").join("s.jsonl");
    let text = session(1500, "before");
    store.rewrite(&path, text.as_bytes()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let conf = copies(&dir.path().join("copies"), 1 << 30);
    let proxy = proxy(&db);
    every_line(&far(&db, &proxy, Some(&conf)), &path);
    let copy = lines_copy(&conf.dir);

    // Changed on disk at its end: removed, and the session read from the server.
    let mut bytes = fs::read(&copy).unwrap();
    let n = bytes.len();
    bytes[n - 10..n - 2].copy_from_slice(b"CHANGED!");
    fs::write(&copy, &bytes).unwrap();
    let read = sent(&proxy, || assert_eq!(every_line(&far(&db, &proxy, Some(&conf)), &path), lines_of(&text)));
    assert!(read > text.len(), "the changed copy was not read ({read} bytes from the server)");
    assert!(holds(&copy, text.as_bytes()), "and a sound copy made again");

    // Replaced whole on the server (a new generation, the same length): the old copy is another session's.
    let after = session(1500, "after!");
    assert_eq!(after.len(), text.len());
    store.rewrite(&path, after.as_bytes()).unwrap();
    assert_eq!(every_line(&far(&db, &proxy, Some(&conf)), &path), lines_of(&after));
    let copy = copy_of(&conf.dir, after.as_bytes());
    assert_ne!(copy, copy_of(&conf.dir, text.as_bytes()), "a copy of its own");

    // A link where a copy would be is not followed.
    let target = dir.path().join("elsewhere");
    fs::write(&target, after.as_bytes()).unwrap();
    fs::remove_file(&copy).unwrap();
    std::os::unix::fs::symlink(&target, &copy).unwrap();
    let read = sent(&proxy, || assert_eq!(every_line(&far(&db, &proxy, Some(&conf)), &path), lines_of(&after)));
    assert!(read > after.len(), "the link was not read through ({read} bytes from the server)");
    assert!(holds(&target, after.as_bytes()), "nor written through");
}

#[test]
fn copies_stay_within_their_budget_and_a_short_read_makes_none() {
    let Some((db, store)) = store("copies_budget") else { return };
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| Path::new(arbor_pg::ROOT).join("--w--").join(name);
    let (a, b) = (at("a.jsonl"), at("b.jsonl"));
    let text = session(1500, "budget");
    store.rewrite(&a, text.as_bytes()).unwrap();
    store.rewrite(&b, text.as_bytes()).unwrap();
    // Room for one session's copies, not two.
    let conf = copies(&dir.path().join("copies"), (text.len() as u64) * 3 / 2);
    let proxy = proxy(&db);
    let reader = far(&db, &proxy, Some(&conf));

    // A command that reads a few entries makes no copy of the lines (a part
    // of the index it read whole may have one), and leaves nothing behind.
    let opts = SessionOptions { index_min_bytes: 0, index_dir: None, ..pg_opts(&reader) };
    let s = Session::open(&a, OpenMode::ReadOnly, opts).unwrap();
    assert!(s.get_entry("e7").unwrap().is_some());
    drop(s);
    let short = in_dir(&conf.dir);
    assert!(short.iter().all(|(n, size)| n.ends_with(".jsonl") && *size < 64 << 10), "{short:?}");

    every_line(&reader, &a);
    assert_eq!(in_dir(&conf.dir).len(), 5);
    let a_lines = lines_copy(&conf.dir);
    every_line(&reader, &b);
    let after_b = in_dir(&conf.dir);
    let total: u64 = after_b.iter().map(|c| c.1).sum();
    assert!(total <= conf.budget, "{total} bytes of copies for a budget of {}: {after_b:?}", conf.budget);
    assert!(after_b.iter().any(|c| c.1 == text.len() as u64), "the newest copy is kept: {after_b:?}");
    assert!(!a_lines.exists(), "the least recently used copy went first");

    // A store that names no directory writes none.
    every_line(&far(&db, &proxy, None), &a);
    assert_eq!(in_dir(&conf.dir), after_b);
}

#[test]
fn a_session_grown_by_an_eighth_is_copied_again_from_its_copy_and_the_server() {
    let Some((db, store)) = store("copies_grown") else { return };
    let path = Path::new(arbor_pg::ROOT).join("--w--").join("s.jsonl");
    let text = session(1200, "grown");
    store.rewrite(&path, text.as_bytes()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let conf = copies(&dir.path().join("copies"), 1 << 30);
    let proxy = proxy(&db);
    every_line(&far(&db, &proxy, Some(&conf)), &path);
    let copy = lines_copy(&conf.dir);
    assert!(holds(&copy, text.as_bytes()));

    // Over 1 MiB appended (more than an eighth): the next read whole makes the copy again.
    let mut w = Session::open(&path, OpenMode::Write, pg_opts(&store)).unwrap();
    let body = "g".repeat(1000);
    for i in 0..1100 {
        w.append_message(user(&format!("later {i} {body}"))).unwrap();
    }
    drop(w);
    let now = server_bytes(&store, &path);
    let want = lines_of(std::str::from_utf8(&now).unwrap());
    let read = sent(&proxy, || assert_eq!(every_line(&far(&db, &proxy, Some(&conf)), &path), want));
    assert!(read < now.len() - text.len() + (1 << 20), "the old copy's bytes came from it ({read} bytes fetched)");
    assert!(holds(&copy, &now), "the new copy is the session now, byte for byte");
    let again = sent(&proxy, || assert_eq!(every_line(&far(&db, &proxy, Some(&conf)), &path), want));
    assert!(again * 20 < now.len(), "read through the new copy ({again} bytes fetched)");
}
