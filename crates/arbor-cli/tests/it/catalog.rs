//! `arbor ls` and `arbor search` answer from the catalog: the same listing as
//! reading every file, search output, and a catalog that another process
//! holds or that is damaged.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::{arbor, fixtures, json, stderr, stdout};

/// A sessions root holding the demo session twice (one of them in another cwd).
fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    for (cwd, name) in [("--home-dev-wordfreq--", "2026-03-14T09-12-03-418Z_fe01ce2a.jsonl"), ("--other--", "b.jsonl")]
    {
        fs::create_dir_all(root.join(cwd)).unwrap();
        fs::copy(fixtures().join("demo/demo.jsonl"), root.join(cwd).join(name)).unwrap();
    }
    (dir, root)
}

fn redact(text: &str, dir: &Path) -> String {
    text.replace(&dir.display().to_string(), "DIR")
}

#[test]
fn ls_lists_what_reading_every_file_lists() {
    let (_dir, root) = root();
    let r = root.to_str().unwrap();
    let list = json(&arbor(&["ls", "--all", "--sessions-dir", r, "--json"]));
    let direct = arbor_tree::listing::list_all_sessions(&arbor_tree::FileStore, &root).unwrap();
    assert_eq!(list, serde_json::to_value(&direct).unwrap());
    // Again, from the catalog as it stands.
    assert_eq!(json(&arbor(&["ls", "--all", "--sessions-dir", r, "--json"])), list);
}

#[test]
fn search_prints_hits_with_marks_and_json_for_tools() {
    let (dir, root) = root();
    let r = root.to_str().unwrap();
    let o =
        arbor(&["search", "strip", "punctuation", "--cwd", "/home/dev/wordfreq", "--sessions-dir", r, "--limit", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    insta::assert_snapshot!(redact(&stdout(&o), dir.path()));
    let hits = json(&arbor(&["search", r#""count_words""#, "--all", "--sessions-dir", r, "--json"]));
    let hits = hits.as_array().unwrap();
    assert!(hits.len() >= 2 && hits.len().is_multiple_of(2), "each hit twice, once per copy of the session: {hits:?}");
    // A session's hits together: the copies are equally new, so by path.
    let (a, b) = hits.split_at(hits.len() / 2);
    let entry_ids = |h: &[serde_json::Value]| h.iter().map(|h| h["entryId"].clone()).collect::<Vec<_>>();
    assert_eq!(entry_ids(a), entry_ids(b));
    assert!(a.iter().all(|h| h["path"].as_str().unwrap().contains("--home-dev-wordfreq--")));
    for h in hits {
        let (snippet, m) = (h["snippet"].as_str().unwrap(), &h["marks"][0]);
        let marked: String = snippet
            .chars()
            .skip(m[0].as_u64().unwrap() as usize)
            .take((m[1].as_u64().unwrap() - m[0].as_u64().unwrap()) as usize)
            .collect();
        assert_eq!(marked, "count_words", "{h}");
    }
    let keys: Vec<&str> = hits[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "path",
            "sessionId",
            "sessionName",
            "cwd",
            "entryId",
            "type",
            "role",
            "timestamp",
            "snippet",
            "marks",
            "onActivePath",
            "labels",
            "relevance"
        ]
    );
    assert_eq!(stdout(&arbor(&["search", "zzzyyyxxx", "--all", "--sessions-dir", r])), "no matches\n");
    let bad = arbor(&["search", "re:(", "--all", "--sessions-dir", r]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).starts_with("arbor: invalid search query"), "{}", stderr(&bad));
}

/// `arbor` with its own cache directory.
fn arbor_in(cache: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.args(args).env("ARBOR_CACHE_DIR", cache).env("HOME", "/nonexistent-home");
    c
}

/// The catalog file under a cache directory.
fn catalog_file(cache: &Path) -> PathBuf {
    let dir = cache.join("catalog");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.pop().unwrap()
}

#[test]
fn a_refresh_waits_for_another_process_holding_the_catalog() {
    let (dir, root) = root();
    let cache = dir.path().join("cache");
    let r = root.to_str().unwrap();
    let ls = |cache: &Path| arbor_in(cache, &["ls", "--all", "--sessions-dir", r, "--json"]).output().unwrap();
    assert!(ls(&cache).status.success());
    // The session grows, and this process holds a write transaction on the catalog.
    let file = root.join("--other--/b.jsonl");
    let last = fs::read_to_string(&file).unwrap().lines().last().unwrap().to_owned();
    let extra = last.replace("\"6a490938\"", "\"6a490939\"").replacen("\"id\":\"6a490939\"", "\"id\":\"aaaa0001\"", 1);
    assert_ne!(extra, last);
    fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(format!("{extra}\n").as_bytes()).unwrap();
    let holder = rusqlite::Connection::open(catalog_file(&cache)).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE; UPDATE sessions SET gen = gen;").unwrap();
    let started = Instant::now();
    let child = arbor_in(&cache, &["ls", "--all", "--sessions-dir", r, "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    holder.execute_batch("COMMIT").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(started.elapsed() >= Duration::from_millis(800), "it cannot finish before the lock is released");
    assert_eq!(stderr(&out), "", "waited, not worked around");
    let list = json(&out);
    let direct = arbor_tree::listing::list_all_sessions(&arbor_tree::FileStore, &root).unwrap();
    assert_eq!(list, serde_json::to_value(&direct).unwrap());
    let mut counts: Vec<u64> = list.as_array().unwrap().iter().map(|i| i["messageCount"].as_u64().unwrap()).collect();
    counts.sort();
    assert_eq!(counts[1], counts[0] + 1, "the grown copy has the new message: {counts:?}");
}

#[test]
fn a_damaged_catalog_gives_one_warning_and_the_right_answer() {
    let (dir, root) = root();
    let cache = dir.path().join("cache");
    let r = root.to_str().unwrap();
    let first = arbor_in(&cache, &["ls", "--all", "--sessions-dir", r]).output().unwrap();
    let file = catalog_file(&cache);
    for suffix in ["-wal", "-shm"] {
        let _ = fs::remove_file(format!("{}{suffix}", file.display()));
    }
    fs::write(&file, b"garbage".repeat(1000)).unwrap();
    let again = arbor_in(&cache, &["ls", "--all", "--sessions-dir", r]).output().unwrap();
    assert!(again.status.success());
    assert_eq!(stdout(&again), stdout(&first));
    let err = stderr(&again);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("arbor: warning: catalog ") && err.contains("damaged"), "{err}");
    let search = arbor_in(&cache, &["search", "punctuation", "--all", "--sessions-dir", r]).output().unwrap();
    assert!(search.status.success() && stderr(&search).is_empty(), "{}", stderr(&search));
}
