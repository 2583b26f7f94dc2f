//! Index-first loading (the light scan, bodies decoded on demand) must be
//! indistinguishable from decoding every entry on open: every fixture and a
//! generated file are opened both ways and every observable compared.

use std::fs;
use std::path::{Path, PathBuf};

use arbor_tree::{FileStore, OpenMode, Position, Session, SessionOptions};

use arbor_test_support::{jsonl_under, write_big_session};

/// Read-only, the index cache (when `index_first`) in `index_dir`, or none.
fn open_in(path: &Path, index_first: bool, index_dir: Option<&Path>) -> Result<Session, String> {
    let opts = SessionOptions { index_first, index_dir: index_dir.map(Path::to_owned), ..SessionOptions::default() };
    Session::open(path, OpenMode::ReadOnly, opts.with_store(FileStore)).map_err(|e| e.to_string())
}

/// Read-only, without an index cache.
fn open(path: &Path, index_first: bool) -> Result<Session, String> {
    open_in(path, index_first, None)
}

/// Everything a caller can see of a session, as text.
pub(crate) fn observe(s: &Session) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    writeln!(out, "header {}", serde_json::to_string(&s.header().to_value()).unwrap()).unwrap();
    writeln!(out, "migration {:?}", s.migration()).unwrap();
    for d in s.diagnostics() {
        writeln!(out, "diag {d:?}").unwrap();
    }
    for (i, (e, j)) in s.entries_json().map(Result::unwrap).enumerate() {
        let p = Position::new(i);
        writeln!(out, "entry {i} line {} live {} {e:?}\n  json {j}", s.line_at(p), s.is_live_at(p)).unwrap();
        for c in s.get_children(&e.id).unwrap() {
            writeln!(out, "  child {}", c.id).unwrap();
        }
    }
    writeln!(out, "leaf {:?} name {:?}", s.leaf_id(), s.session_name().unwrap()).unwrap();
    for (t, l) in s.labels().unwrap() {
        writeln!(out, "label {t} {l}").unwrap();
    }
    let branch: Vec<&str> = s.get_branch(None).unwrap().iter().map(|e| e.id.as_str()).collect();
    writeln!(out, "branch {branch:?}").unwrap();
    let mut tree = Vec::new();
    s.get_tree().write_json(&mut tree).unwrap();
    writeln!(out, "tree {}", String::from_utf8(tree).unwrap()).unwrap();
    let forking: Vec<(String, String)> =
        s.user_messages_for_forking().unwrap().into_iter().map(|(e, t)| (e.id.clone(), t)).collect();
    writeln!(out, "forking {forking:?}").unwrap();
    out
}

fn same_both_ways(p: &Path) {
    same_both_ways_in(p, None)
}

/// Opened index-first (with the index cache in `index_dir`) and in full: the same session.
fn same_both_ways_in(p: &Path, index_dir: Option<&Path>) {
    let lazy = open_in(p, true, index_dir);
    let full = open(p, false);
    match (&lazy, &full) {
        (Ok(a), Ok(b)) => {
            let (oa, ob) = (observe(a), observe(b));
            if oa != ob {
                let first = oa.lines().zip(ob.lines()).find(|(x, y)| x != y);
                panic!("{}: index-first differs from full decoding; first difference: {first:?}", p.display());
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "{}", p.display()),
        _ => panic!("{}: {:?} vs {:?}", p.display(), lazy.as_ref().err(), full.as_ref().err()),
    }
}

#[test]
fn every_fixture_reads_the_same_index_first() {
    let files = jsonl_under(&crate::fixtures());
    assert!(files.len() >= 30, "{} fixtures", files.len());
    for p in files {
        same_both_ways(&p);
    }
}

#[test]
fn a_large_branched_file_reads_the_same_index_first() {
    // Large enough (> 1 MiB) for the scan to split the file between threads.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("big.jsonl");
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n",
    );
    let mut parent = "null".to_owned();
    for i in 0..6000 {
        let body = "x\\\"y\\n".repeat(i % 50);
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let line = match i % 97 {
            13 => format!("{{\"type\":\"label\",\"id\":\"e{i}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"targetId\":\"e1\",\"label\":\"L{i}\"}}"),
            14 => "not json at all".to_owned(),
            15 => format!("{{\"type\":\"message\",\"id\":\"e{}\",\"parentId\":{parent},\"message\":{{\"role\":\"user\",\"content\":\"dup\"}}}}", i - 10),
            16 => format!("{{\"type\":\"compaction\",\"id\":\"e{i}\",\"parentId\":{parent},\"timestamp\":\"x\"}}"),
            _ => format!("{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:{:02}.000Z\",\"message\":{{\"role\":\"{role}\",\"content\":\"{body}\",\"provider\":\"p\",\"model\":\"m\"}}}}", i % 60),
        };
        text.push_str(&line);
        text.push('\n');
        if i % 10 != 3 {
            parent = format!("\"e{i}\"");
        }
    }
    text.push_str("{\"type\":\"message\",\"id\":\"torn");
    fs::write(&p, &text).unwrap();
    assert!(text.len() > 1 << 20);
    same_both_ways(&p);
}

/// A clean session of more than `MIN_INDEXED_BYTES`, with branches and labels.
fn clean_big_session(p: &Path) -> String {
    let text = write_big_session(p, 4000, 300);
    assert!(text.len() as u64 > arbor_tree::MIN_INDEXED_BYTES);
    text
}

/// The index files in an index cache directory.
fn indexes(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match fs::read_dir(dir) {
        Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
        Err(_) => vec![],
    };
    out.sort();
    out
}

/// The one index file in `dir`.
fn the_index(dir: &Path) -> PathBuf {
    let all = indexes(dir);
    assert_eq!(all.len(), 1, "{all:?}");
    all[0].clone()
}

#[test]
fn the_index_is_cached_used_and_rebuilt_when_stale() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let dir = Some(cache.path());
    let p = d.path().join("s.jsonl");
    let text = clean_big_session(&p);
    same_both_ways_in(&p, dir);
    let idx = the_index(cache.path());
    let first = fs::read(&idx).expect("a clean large file gets an index");
    // Reopening uses it and sees the same session.
    same_both_ways_in(&p, dir);
    assert_eq!(fs::read(&idx).unwrap(), first, "an unchanged file keeps its index");

    // Appended: the index still answers for what it covers, the new line is read from the file.
    let mut more = text.clone();
    more.push_str("{\"type\":\"message\",\"id\":\"z\",\"parentId\":\"e3999\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"new\"}}\n");
    fs::write(&p, &more).unwrap();
    same_both_ways_in(&p, dir);
    assert!(open_in(&p, true, dir).unwrap().opened_from_index());
    assert_eq!(the_index(cache.path()), idx, "the same file keeps its index's name");
    assert!(fs::read(&idx).unwrap() == first, "a short tail leaves the index as it was");

    // Rewritten in place with the same size and modification time: the checksum notices.
    let mtime = fs::metadata(&p).unwrap().modified().unwrap();
    let before = open_in(&p, true, dir).unwrap();
    assert_eq!(before.leaf_id(), Some("z"));
    let same_size = more.replace("\"id\":\"z\"", "\"id\":\"y\"");
    fs::write(&p, &same_size).unwrap();
    fs::File::options().write(true).open(&p).unwrap().set_modified(mtime).unwrap();
    same_both_ways_in(&p, dir);
    assert_eq!(open_in(&p, true, dir).unwrap().leaf_id(), Some("y"));

    // Truncated: stale, rebuilt.
    fs::write(&p, &text).unwrap();
    same_both_ways_in(&p, dir);
    assert_eq!(open_in(&p, true, dir).unwrap().leaf_id(), Some("e3999"));

    // A corrupt index is ignored and replaced.
    fs::write(&idx, b"ARBORIX1 garbage").unwrap();
    same_both_ways_in(&p, dir);
    let mut bytes = fs::read(&idx).unwrap();
    let n = bytes.len();
    bytes.truncate(n - 7);
    fs::write(&idx, &bytes).unwrap();
    same_both_ways_in(&p, dir);

    // ARBOR_NO_INDEX's option: neither read nor written.
    fs::remove_file(&idx).unwrap();
    open_in(&p, true, None).unwrap();
    assert!(indexes(cache.path()).is_empty());

    // Nothing was ever written beside the session.
    let beside: Vec<PathBuf> = fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(beside, [p]);
}

#[test]
fn an_unwritable_or_missing_cache_directory_means_no_index_and_no_error() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    clean_big_session(&p);
    // A cache "directory" that is a file: nothing can be created under it.
    let blocked = d.path().join("not-a-dir");
    fs::write(&blocked, b"x").unwrap();
    same_both_ways_in(&p, Some(&blocked.join("index")));
    assert_eq!(fs::read(&blocked).unwrap(), b"x");
    // A cache directory that does not exist yet is created.
    let fresh = d.path().join("cache/index");
    same_both_ways_in(&p, Some(&fresh));
    assert_eq!(indexes(&fresh).len(), 1);
}

#[test]
fn files_with_diagnostics_or_small_files_get_no_index() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let dir = Some(cache.path());
    let p = d.path().join("s.jsonl");
    let mut text = clean_big_session(&p);
    text.push_str("not json\n");
    fs::write(&p, &text).unwrap();
    open_in(&p, true, dir).unwrap();
    assert!(indexes(cache.path()).is_empty());
    // A parent written after its child: clean, but the index keeps only
    // parents that point back (so it can never hold a cycle), so none is written.
    let forward = d.path().join("forward.jsonl");
    let mut text = clean_big_session(&forward);
    text.push_str("{\"type\":\"message\",\"id\":\"kid\",\"parentId\":\"later\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"k\"}}\n");
    text.push_str("{\"type\":\"message\",\"id\":\"later\",\"parentId\":\"e3999\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"l\"}}\n");
    fs::write(&forward, &text).unwrap();
    same_both_ways_in(&forward, dir);
    assert!(indexes(cache.path()).is_empty());
    let s = open_in(&forward, true, dir).unwrap();
    assert_eq!(
        s.get_branch(Some("kid")).unwrap().iter().rev().map(|e| e.id.as_str()).take(3).collect::<Vec<_>>(),
        ["kid", "later", "e3999"]
    );
    let small = d.path().join("small.jsonl");
    fs::write(&small, fs::read(crate::fixtures().join("logs/ok/linear-chat.jsonl")).unwrap()).unwrap();
    open_in(&small, true, dir).unwrap();
    assert!(indexes(cache.path()).is_empty());
}

#[test]
fn an_append_whose_id_an_unresolved_parent_names_adopts_its_children() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    let mut text = clean_big_session(&p);
    // `x` names a parent no line holds yet: the first id `CounterIds` hands out.
    text.push_str("{\"type\":\"message\",\"id\":\"x\",\"parentId\":\"00000001\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n");
    fs::write(&p, &text).unwrap();
    open_in(&p, true, Some(cache.path())).unwrap();
    assert_eq!(indexes(cache.path()).len(), 1, "an unresolved parent is no diagnostic: the file is indexed");
    for use_index in [true, false] {
        let copy = d.path().join(format!("copy-{use_index}.jsonl"));
        fs::copy(&p, &copy).unwrap();
        let index_dir = use_index.then(|| cache.path().to_owned());
        if use_index {
            // The copy is another file: reading it once caches its own index.
            open_in(&copy, true, index_dir.as_deref()).unwrap();
            assert_eq!(indexes(cache.path()).len(), 2);
        }
        let opts = SessionOptions { index_dir, ..SessionOptions::default() }.with_ids(arbor_log::CounterIds::new());
        let mut s = Session::open(&copy, OpenMode::Write, opts).unwrap();
        assert!(s.get_children("00000001").unwrap().iter().any(|e| e.id == "x"));
        s.branch("e3998").unwrap();
        let id = s.append_message(serde_json::json!({"role": "user", "content": "new"})).unwrap();
        assert_eq!(id, "00000001");
        let path = |s: &Session| {
            s.get_branch(Some("x")).unwrap().iter().rev().take(3).map(|e| e.id.clone()).collect::<Vec<_>>()
        };
        assert_eq!(path(&s), ["x", "00000001", "e3998"], "index {use_index}");
        assert_eq!(s.get_children("00000001").unwrap().iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["x"]);
        drop(s);
        let again = open_in(&copy, true, Some(cache.path())).unwrap();
        assert_eq!(path(&again), ["x", "00000001", "e3998"]);
    }
}

#[test]
fn map_json_many_gives_each_entrys_text_in_order_on_all_cores() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    clean_big_session(&p);
    let s = open(&p, true).unwrap();
    let n = s.len();
    // Every position, backwards, some twice, and one past the end.
    let indices: Vec<Position> = (0..n).rev().chain([0, 5, 5, n]).map(Position::new).collect();
    let got = s.map_json_many(&indices, |k, text| (k, text.to_owned())).unwrap();
    assert_eq!(got.len(), indices.len());
    for (k, (&i, g)) in indices.iter().zip(&got).enumerate() {
        match s.json_at(i).unwrap() {
            Some(want) => assert_eq!(g.as_ref(), Some(&(k, want.to_owned())), "position {k}"),
            None => assert!(g.is_none()),
        }
    }
}
