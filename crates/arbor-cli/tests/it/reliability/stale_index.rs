//! A stale index (item 7 of issue #20): after an edit in place that keeps
//! the file's size and puts its modification time back, `dump --json` and
//! `tree --json` still print the file as it is, as valid JSON.

use std::fs;
use std::path::Path;

use arbor_test_support::write_big_session;
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

/// Moves ten bytes of padding from one line to the next in the middle of
/// the file and renames an entry: same size; the modification time is put back.
fn edit_in_place(p: &Path) -> String {
    let text = fs::read_to_string(p).unwrap();
    let mtime = fs::metadata(p).unwrap().modified().unwrap();
    let pad = "x".repeat(10);
    let edited = text
        .replacen(&format!("\"m2000 {pad}"), "\"m2000 ", 1)
        .replacen(&format!("\"a2001 {pad}"), &format!("\"a2001 {pad}{pad}"), 1)
        .replacen("\"id\":\"e2500\"", "\"id\":\"f2500\"", 1);
    assert_eq!(edited.len(), text.len());
    fs::write(p, &edited).unwrap();
    fs::File::options().write(true).open(p).unwrap().set_modified(mtime).unwrap();
    edited
}

#[test]
fn an_edit_in_place_behind_the_index_never_makes_invalid_json() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    write_big_session(&p, 4000, 300);
    // The first read leaves an index in the cache.
    assert!(arbor_in(d.path(), &["tree", "s.jsonl", "--json"]).status.success());
    let edited = edit_in_place(&p);
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

#[test]
fn an_index_whose_stamp_still_matches_is_dropped_with_one_line() {
    use std::os::unix::fs::MetadataExt;
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    write_big_session(&p, 4000, 300);
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
            .args(args)
            .env("HOME", "/nonexistent-home")
            .env("ARBOR_CACHE_DIR", cache.path())
            .current_dir(d.path())
            .output()
            .unwrap()
    };
    assert!(run(&["tree", "s.jsonl", "--json"]).status.success());
    let index = the_index(cache.path());
    let edited = edit_in_place(&p);
    // Forge the stamp (the new change time), as a clock turned back could.
    let meta = fs::metadata(&p).unwrap();
    let ctime = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
    let mut bytes = fs::read(&index).unwrap();
    bytes[32..48].copy_from_slice(&ctime.to_le_bytes());
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
