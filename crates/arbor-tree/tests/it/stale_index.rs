//! A stale index never makes Arbor copy the wrong bytes (item 7 of issue
//! #20): an edit in place that keeps the size and puts the modification
//! time back is noticed by the stamp (the status change time), and where a
//! stamp still matches (forged here), every line copied on the index's word
//! is checked, never copied when it is not where the index put it, and
//! `verify_all_lines` drops the index and reads the file again.

use std::fs;
use std::path::{Path, PathBuf};

use arbor_test_support::{edit_in_place, forged_index, write_big_session};
use arbor_tree::{FileStore, OpenMode, Session, SessionOptions, TreeError};

fn open_in(path: &Path, index_dir: Option<&Path>) -> Session {
    let opts = SessionOptions { index_dir: index_dir.map(Path::to_owned), ..SessionOptions::default() };
    Session::open(path, OpenMode::ReadOnly, opts.with_store(FileStore)).unwrap()
}

/// Every entry's JSON text, as `dump --json` copies it.
fn texts(s: &Session) -> Vec<String> {
    s.entries_json().map(Result::unwrap).map(|(_, j)| j.to_owned()).collect()
}

/// The one index file in the cache directory.
fn the_index(dir: &Path) -> PathBuf {
    let all: Vec<PathBuf> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(all.len(), 1, "{all:?}");
    all[0].clone()
}

#[test]
fn an_edit_in_place_that_keeps_size_and_time_is_not_read_through_the_index() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    let text = write_big_session(&p, 4000, 300);
    open_in(&p, Some(cache.path()));
    let stale = fs::read(the_index(cache.path())).unwrap();
    let edited = edit_in_place(&p, &text, 2000, 2500);
    let s = open_in(&p, Some(cache.path()));
    // The stamp noticed the edit: the file was scanned, and read on through a fresh index.
    assert_ne!(fs::read(the_index(cache.path())).unwrap(), stale, "the stale index was replaced");
    assert!(s.notices().is_empty(), "{:?}", s.notices());
    let want: Vec<String> = edited.lines().skip(1).map(str::to_owned).collect();
    assert_eq!(texts(&s), want);
}

/// A session of 4,000 entries indexed, then edited in place
/// ([`edit_in_place`] at `a` and `b`) with its index's stamp forged to
/// the new status change time, so the index still "matches".
struct Forged {
    _dir: tempfile::TempDir,
    cache: tempfile::TempDir,
    p: PathBuf,
    index: PathBuf,
    edited: String,
    /// The forged index's bytes.
    bytes: Vec<u8>,
}

fn forged(a: usize, b: usize) -> Forged {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let text = write_big_session(&p, 4000, 300);
    open_in(&p, Some(cache.path()));
    let index = the_index(cache.path());
    let edited = edit_in_place(&p, &text, a, b);
    let bytes = forged_index(&index, &p);
    fs::write(&index, &bytes).unwrap();
    Forged { _dir: dir, cache, p, index, edited, bytes }
}

#[test]
fn lines_a_forged_index_misplaces_are_never_copied_and_the_file_is_read_again() {
    let Forged { _dir, cache, p, index, edited, bytes } = forged(2000, 2500);

    let mut s = open_in(&p, Some(cache.path()));
    assert!(s.opened_from_index(), "the forged index is used");
    // Reads are safe on their own: a misplaced line is never copied nor
    // stood in for by a placeholder; reading it fails with the typed error.
    let e = s.entries_json().find_map(Result::err).expect("a misplaced line is refused");
    assert!(matches!(&e, TreeError::Changed { line: Some(2002), .. }), "{e}");
    assert!(e.to_string().contains("e2000 is not on the line the index put it"), "{e}");
    let mut tree = Vec::new();
    let e = s.get_tree().write_json(&mut tree).unwrap_err();
    assert!(e.to_string().contains("not on the line the index put it"), "{e}");

    // Checked first: the index is dropped and the file read as it is.
    assert!(s.verify_all_lines().unwrap());
    // Read again, then on through a fresh index of the file as it is now.
    assert!(!s.verify_all_lines().unwrap());
    let notice = s.notices().join("\n");
    assert!(notice.contains("the index in the cache did not match the file"), "{notice}");
    let want: Vec<String> = edited.lines().skip(1).map(str::to_owned).collect();
    assert_eq!(texts(&s), want);
    assert!(s.get_entry("f2500").unwrap().is_some() && s.get_entry("e2500").unwrap().is_none());
    // A fork copies the path's lines: it checks them first too.
    fs::write(&index, &bytes).unwrap();
    let mut f = open_in(&p, Some(cache.path()));
    assert!(f.opened_from_index());
    let forked = f.create_branched_session("e3999").unwrap();
    f.materialize().unwrap();
    let text = fs::read_to_string(forked.unwrap()).unwrap();
    assert!(text.lines().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
    assert!(f.notices().iter().any(|n| n.contains("did not match the file")), "{:?}", f.notices());
    // Renamed, e2500 is no parent any more: the path from the leaf starts at e2501, as the file now says.
    assert!(text.contains("\"id\":\"e2501\"") && !text.contains("\"id\":\"e2499\""), "the file as it is now");
    // A fresh index was written for the file as it is now.
    assert_ne!(fs::read(&index).unwrap(), bytes);
    assert!(!open_in(&p, Some(cache.path())).verify_all_lines().unwrap());
}

#[test]
fn a_misplaced_line_is_found_wherever_it_is_in_the_file() {
    // Every line is checked on all cores, the file cut into stretches: a
    // line moved in the first quarter, at the middle (where two stretches
    // meet on two cores) or in the last quarter is found all the same.
    // (Not in the first or last 64 KiB: the index's stamp covers those, so
    // an edit there is read from the file, not through the index.)
    for a in [400, 1998, 2000, 3600] {
        // `_dir` bound, not dropped: the session's folder lives for the turn.
        let Forged { _dir, cache, p, edited, .. } = forged(a, a + 5);
        let mut s = open_in(&p, Some(cache.path()));
        assert!(s.opened_from_index(), "the forged index is used (line {a})");
        assert!(s.verify_all_lines().unwrap(), "the line after {a} is found misplaced");
        let want: Vec<String> = edited.lines().skip(1).map(str::to_owned).collect();
        assert_eq!(texts(&s), want, "read again as it is now (line {a})");
    }
}
