//! Appends through the index (issue #21, target 5): a session appended to
//! without building its id map, and the file reopened through its index,
//! answer exactly what a full load of the file answers (entries, ids,
//! parents, children, labels, leaf, branch, tree), with ids forced to
//! collide, after the index went stale, and with another writer appending
//! between two of our sessions.

use std::collections::VecDeque;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use arbor_test_support::write_big_session;
use arbor_tree::{CounterIds, FileStore, IdGenerator, OpenMode, Session, SessionOptions};
use serde_json::json;

use crate::index_first::observe;

/// Proposes the ids it is given, in turn, before a counter's: an id the
/// session says is taken is skipped, as pi's generator skips it.
#[derive(Debug)]
struct Proposing {
    next: VecDeque<String>,
    counter: CounterIds,
}

impl Proposing {
    fn new(ids: &[&str]) -> Proposing {
        Proposing { next: ids.iter().map(|s| (*s).to_owned()).collect(), counter: CounterIds::new() }
    }
}

impl IdGenerator for Proposing {
    fn entry_id(&mut self, taken: &dyn Fn(&str) -> bool) -> String {
        while let Some(id) = self.next.pop_front() {
            if !taken(&id) {
                return id;
            }
        }
        self.counter.entry_id(taken)
    }

    fn session_id(&mut self) -> String {
        self.counter.session_id()
    }
}

fn opts(cache: Option<&Path>) -> SessionOptions {
    SessionOptions { index_dir: cache.map(Path::to_owned), ..crate::opts() }.with_store(FileStore)
}

/// Opened for writing through the index in `cache`, the ids proposed in turn.
fn writer(p: &Path, cache: &Path, ids: &[&str]) -> Session {
    Session::open(p, OpenMode::Write, opts(Some(cache)).with_ids(Proposing::new(ids))).unwrap()
}

/// Read in full: every line decoded, no index.
fn full(p: &Path) -> Session {
    let o = SessionOptions { index_first: false, ..opts(None) };
    Session::open(p, OpenMode::ReadOnly, o).unwrap()
}

/// Read through the index in `cache`.
fn indexed(p: &Path, cache: &Path) -> Session {
    Session::open(p, OpenMode::ReadOnly, opts(Some(cache))).unwrap()
}

/// What [`observe`] sees, without line numbers: a session knows the line
/// of an entry it appended only once the file is read again.
fn observe_appending(s: &Session) -> String {
    observe(s)
        .lines()
        .map(|l| match (l.strip_prefix("entry "), l.find(" line "), l.find(" live ")) {
            (Some(_), Some(a), Some(b)) => format!("{}{}", &l[..a], &l[b..]),
            _ => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The appending session `a` and a full load `b` of its file: the same but for lines.
#[track_caller]
fn same(a: &Session, b: &Session, what: &str) {
    differ_not(observe_appending(a), observe_appending(b), what);
}

/// A reopened session `a` and a full load `b`: the same in everything.
#[track_caller]
fn same_reopened(a: &Session, b: &Session, what: &str) {
    differ_not(observe(a), observe(b), what);
}

#[track_caller]
fn differ_not(oa: String, ob: String, what: &str) {
    if oa != ob {
        let first = oa.lines().zip(ob.lines()).find(|(x, y)| x != y);
        panic!("{what}: differs from the full load; first difference: {first:?}");
    }
}

/// The one index file in `cache`.
fn the_index(cache: &Path) -> PathBuf {
    let all: Vec<PathBuf> = fs::read_dir(cache).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(all.len(), 1, "{all:?}");
    all[0].clone()
}

/// Another writer (pi, another Arbor) appends `lines` to the file.
fn other_writer_appends(p: &Path, lines: &[String]) {
    let mut f = fs::OpenOptions::new().append(true).open(p).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

fn message(id: &str, parent: &str, text: &str) -> String {
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-02T00:00:00.000Z",
        "message": {"role": "user", "content": text}})
    .to_string()
}

/// A clean session large enough to be indexed, one of whose entries names a
/// parent no entry holds (`ghost`), with its index in `cache`.
fn indexed_session(dir: &Path, cache: &Path) -> PathBuf {
    let p = dir.join("s.jsonl");
    write_big_session(&p, 4000, 300);
    other_writer_appends(&p, &[message("g1", "ghost", "orphan"), message("g2", "g1", "after the orphan")]);
    indexed(&p, cache);
    the_index(cache);
    p
}

#[test]
fn appends_through_the_index_with_colliding_ids_answer_what_a_full_load_answers() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = indexed_session(d.path(), cache.path());
    let mut s = writer(&p, cache.path(), &["e17", "g2", "f1", "f1", "e1234", "f2", "e2000", "g1", "f3", "ghost"]);
    assert!(s.opened_from_index());
    // Ids the index holds (in the middle, the last line) are taken: the first free proposal is used.
    assert_eq!(s.append_message(json!({"role": "user", "content": "one"})).unwrap(), "f1");
    same(&s, &full(&p), "after one append");
    // An id this session appended is taken too.
    assert_eq!(s.append_label_change("e1234", Some("mark")).unwrap(), "f2");
    same(&s, &full(&p), "after a label");
    s.branch("e2000").unwrap();
    assert_eq!(s.append_message(json!({"role": "user", "content": "elsewhere"})).unwrap(), "f3");
    assert_eq!(s.get_entry("f3").unwrap().unwrap().parent_id.as_deref(), Some("e2000"));
    same(&s, &full(&p), "after a branch");
    let reopened = indexed(&p, cache.path());
    assert!(reopened.opened_from_index(), "the index still answers for what it covers");
    same_reopened(&reopened, &full(&p), "reopened through the index");
    // An id no entry holds but one names as its parent is free (as in pi):
    // the orphan now resolves to it.
    assert_eq!(s.branch_with_summary(Some("e100"), "sum", None, None).unwrap(), "ghost");
    assert_eq!(s.get_entry("g1").unwrap().unwrap().parent_id.as_deref(), Some("ghost"));
    assert!(s.get_children("ghost").unwrap().iter().any(|e| e.id == "g1"));
    same(&s, &full(&p), "after adopting an orphan");
    assert!(s.append_label_change("nobody", Some("x")).is_err(), "an id no entry holds is refused");
    drop(s);
    let again = indexed(&p, cache.path());
    // An appended id that an earlier entry names as its parent makes a parent
    // come after its child, which the index never holds: read the ordinary way.
    assert!(!again.opened_from_index());
    same_reopened(&again, &full(&p), "reopened through the index");
}

#[test]
fn appends_after_another_writer_and_after_a_stale_index_answer_what_a_full_load_answers() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = indexed_session(d.path(), cache.path());
    let index = the_index(cache.path());
    let base = fs::read(&index).unwrap();

    // Another writer appends between the index and our first append.
    other_writer_appends(&p, &[message("o1", "g2", "theirs")]);
    let mut s = writer(&p, cache.path(), &["o1", "h1"]);
    assert!(s.opened_from_index());
    assert_eq!(s.leaf_id(), Some("o1"));
    assert_eq!(s.append_message(json!({"role": "user", "content": "ours"})).unwrap(), "h1");
    same(&s, &full(&p), "after another writer's line");
    drop(s);

    // Again, between two of ours.
    other_writer_appends(&p, &[message("o2", "h1", "theirs again")]);
    let mut s = writer(&p, cache.path(), &["o2", "h1", "o1", "h2"]);
    assert_eq!(s.append_custom_entry("x.state", Some(json!({"n": 2}))).unwrap(), "h2");
    same(&s, &full(&p), "between two of ours");
    drop(s);
    same_reopened(&indexed(&p, cache.path()), &full(&p), "reopened");
    assert!(fs::read(&index).unwrap() == base, "a short tail is read from the file; the index is kept");

    // A long tail: the index is extended by it, to exactly what indexing the whole file gives.
    let mut lines = vec![];
    let mut parent = "h2".to_owned();
    for i in 0..1100 {
        let id = format!("t{i}");
        lines.push(message(&id, &parent, "a long tail"));
        parent = id;
    }
    other_writer_appends(&p, &lines);
    let mut s = writer(&p, cache.path(), &["t5", "t1099", "h3"]);
    assert!(s.opened_from_index());
    let extended = fs::read(&index).unwrap();
    assert!(extended != base, "extended");
    let fresh_cache = tempfile::tempdir().unwrap();
    let copy = d.path().join("copy.jsonl");
    fs::copy(&p, &copy).unwrap();
    indexed(&copy, fresh_cache.path());
    let fresh = fs::read(the_index(fresh_cache.path())).unwrap();
    // Past the stamp (magic and the file's size, times and checksum): the same bytes.
    assert!(extended[56..] == fresh[56..], "the extended index is the whole file's index");
    assert_eq!(s.append_message(json!({"role": "user", "content": "after the tail"})).unwrap(), "h3");
    same(&s, &full(&p), "after the long tail");
    drop(s);
    same_reopened(&indexed(&p, cache.path()), &full(&p), "reopened after the long tail");

    // A damaged line by another writer: read the ordinary way, diagnosed as a full load does.
    other_writer_appends(&p, &["not json".to_owned()]);
    let s = indexed(&p, cache.path());
    assert!(!s.diagnostics().is_empty());
    same_reopened(&s, &full(&p), "a damaged tail");
}
