//! A stale index (item 7 of issue #20): after an edit in place that keeps
//! the file's size and puts its modification time back, `dump --json` and
//! `tree --json` still print the file as it is, as valid JSON.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use arbor_test_support::{edit_in_place, forged_index, write_big_session};
use serde::Deserialize;

use super::arbor_in;

/// Parses `bytes` as one JSON value of any depth.
fn parses(bytes: Vec<u8>) -> Result<(), String> {
    let (tx, rx) = std::sync::mpsc::channel();
    arbor_test_support::big_stack(move || {
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        de.disable_recursion_limit();
        let r = serde::de::IgnoredAny::deserialize(&mut de).and_then(|_| de.end()).map_err(|e| e.to_string());
        tx.send(r).unwrap();
    });
    rx.recv().unwrap()
}

#[test]
fn an_edit_in_place_behind_the_index_never_makes_invalid_json() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    let text = write_big_session(&p, 4000, 300);
    // The first read leaves an index in the cache.
    assert!(arbor_in(d.path(), &["tree", "s.jsonl", "--json"]).status.success());
    let edited = edit_in_place(&p, &text, 2000, 2500);
    for args in [&["dump", "s.jsonl", "--json"][..], &["tree", "s.jsonl", "--json"]] {
        let o = arbor_in(d.path(), args);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        if let Err(e) = parses(o.stdout.clone()) {
            panic!("{args:?} printed invalid JSON: {e}");
        }
        let text = String::from_utf8(o.stdout).unwrap();
        let now = text.contains("\"id\":\"f2500\"") && !text.contains("\"id\":\"e2500\"");
        assert!(now, "{args:?}: not the file as it is now");
    }
    let dump = arbor_in(d.path(), &["dump", "s.jsonl", "--json"]);
    let entries: serde_json::Value = serde_json::from_slice(&dump.stdout).unwrap();
    let want: Vec<serde_json::Value> = edited.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(entries["entries"].as_array(), Some(&want));
}

/// The one index file under the cache directory `dir` (its `index/` folder).
fn the_index(dir: &Path) -> std::path::PathBuf {
    let all: Vec<_> = fs::read_dir(dir.join("index")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(all.len(), 1, "{all:?}");
    all[0].clone()
}

/// `arbor ARGS` in `dir` with the cache directory `cache`; without the
/// index when `no_index`.
fn run_in(dir: &Path, cache: &Path, args: &[&str], no_index: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arbor"));
    cmd.args(args).env("HOME", "/nonexistent-home").env("ARBOR_CACHE_DIR", cache).current_dir(dir);
    if no_index {
        cmd.env("ARBOR_NO_INDEX", "1");
    } else {
        cmd.env_remove("ARBOR_NO_INDEX");
    }
    cmd.output().unwrap()
}

#[test]
fn an_index_whose_stamp_still_matches_is_dropped_with_one_line() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    let text = write_big_session(&p, 4000, 300);
    let run = |args: &[&str]| run_in(d.path(), cache.path(), args, false);
    assert!(run(&["tree", "s.jsonl", "--json"]).status.success());
    let index = the_index(cache.path());
    let edited = edit_in_place(&p, &text, 2000, 2500);
    // Forge the stamp (the new change time), as a clock turned back could.
    let bytes = forged_index(&index, &p);
    let want: Vec<serde_json::Value> = edited.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    for args in [&["dump", "s.jsonl", "--json"][..], &["path", "s.jsonl", "--json"], &["tree", "s.jsonl", "--json"]] {
        fs::write(&index, &bytes).unwrap();
        let o = run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("s.jsonl: the index in the cache did not match the file"), "{args:?}: {err}");
        if let Err(e) = parses(o.stdout.clone()) {
            panic!("{args:?} printed invalid JSON: {e}");
        }
        if args[0] == "dump" {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["entries"].as_array(), Some(&want), "the file as it is now");
        }
    }
}

/// A stale index read again keeps what the command was asked: `context
/// --leaf` (as JSON, checked first, and as text, checked as it is read),
/// `tree --leaf` and `path ID` answer at the entry they were
/// given, and `dump` shows the file as it is, byte for byte as without the
/// index. An id only the file knows (the index is older) is found; one only
/// the index knows is refused, as without the index.
#[test]
fn a_stale_index_read_again_keeps_the_leaf_and_the_entry_asked_for() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    let text = write_big_session(&p, 4000, 300);
    assert!(run_in(d.path(), cache.path(), &["tree", "s.jsonl", "--json"], false).status.success());
    let index = the_index(cache.path());
    // Lines moved and e2500 renamed f2500; the index's stamp forged to match.
    edit_in_place(&p, &text, 2000, 2500);
    let forged = forged_index(&index, &p);
    let cases: [&[&str]; 12] = [
        &["context", "s.jsonl", "--json", "--leaf", "e3000"],
        &["context", "s.jsonl", "--leaf", "e3000"],
        &["context", "s.jsonl", "--llm", "--leaf", "f2500"],
        &["context", "s.jsonl"],
        &["context", "s.jsonl", "--json", "--leaf", "f2500"],
        &["context", "s.jsonl", "--json", "--leaf", "e2500"],
        &["tree", "s.jsonl", "--json", "--leaf", "e2100"],
        &["tree", "s.jsonl", "--json", "--leaf", "f2500"],
        &["path", "s.jsonl", "e3000", "--json"],
        &["path", "s.jsonl", "f2500", "--json"],
        &["path", "s.jsonl", "e2500", "--json"],
        &["dump", "s.jsonl", "--json"],
    ];
    for args in cases {
        fs::write(&index, &forged).unwrap();
        let stale = run_in(d.path(), cache.path(), args, false);
        let plain = run_in(d.path(), cache.path(), args, true);
        let said = String::from_utf8_lossy(&stale.stderr);
        assert_eq!(stale.status.code(), plain.status.code(), "{args:?}: {said}");
        assert!(stale.stdout == plain.stdout, "{args:?}: another answer through the stale index");
        assert!(said.contains("did not match the file"), "{args:?}: the index was not read: {said}");
        if !plain.status.success() {
            assert!(said.contains("Entry e2500 not found"), "{args:?}: {said}");
        }
    }
}

/// An append does not vouch for the bytes before it (item 5 of issue #38):
/// a same-length edit of a `parentId` in the middle of an indexed file, then
/// one appended line, and every reading command answers as without the
/// index. Before, the index answered for the edited part on its edges'
/// checksum: the path of the new leaf went through the old parent (3,001
/// entries instead of 2,001), and so did the tree and the context.
#[test]
fn an_append_never_vouches_for_an_edit_before_it() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    let text = write_big_session(&p, 4000, 300);
    assert!(run_in(d.path(), cache.path(), &["path", "s.jsonl", "--json"], false).status.success());
    // e2000's parent e1999 becomes e1000, of the same length, far from either edge of the file.
    let edited = text.replacen("\"id\":\"e2000\",\"parentId\":\"e1999\"", "\"id\":\"e2000\",\"parentId\":\"e1000\"", 1);
    assert_eq!(edited.len(), text.len());
    let appended = "{\"type\":\"message\",\"id\":\"z1\",\"parentId\":\"e3999\",\"timestamp\":\"2026-01-01T00:01:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"after\"}}\n";
    fs::write(&p, edited + appended).unwrap();
    let cases: [&[&str]; 5] = [
        &["path", "s.jsonl", "--json"],
        &["tree", "s.jsonl", "--json"],
        &["context", "s.jsonl", "--json"],
        &["context", "s.jsonl"],
        &["dump", "s.jsonl", "--json"],
    ];
    for args in cases {
        let indexed = run_in(d.path(), cache.path(), args, false);
        let plain = run_in(d.path(), cache.path(), args, true);
        assert!(plain.status.success(), "{args:?}: {}", String::from_utf8_lossy(&plain.stderr));
        assert!(indexed.stdout == plain.stdout, "{args:?}: another answer through the index of the file before");
    }
    let path: Vec<serde_json::Value> =
        serde_json::from_slice(&run_in(d.path(), cache.path(), &["path", "s.jsonl", "--json"], false).stdout).unwrap();
    let ids: Vec<&str> = path.iter().filter_map(|e| e["id"].as_str()).collect();
    assert!(ids.contains(&"e1000") && ids.contains(&"e2000") && !ids.contains(&"e1500"), "the edit was not seen");
}
