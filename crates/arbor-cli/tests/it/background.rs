//! The search filters' builder: a first search over much text without
//! filters answers from a plain scan and leaves the filters to one detached
//! `arbor cache build` (real processes, the real lock file).
//! `ARBOR_BACKGROUND_ABOVE=1` makes these small stores "much text".

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use rustix::fs::{flock, FlockOperation};

use crate::{fixtures, stderr, stdout};

/// A sessions root of four generated sessions (about 1 MiB each), in two cwds.
fn store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    for (cwd, name) in [("--w--", "a.jsonl"), ("--w--", "b.jsonl"), ("--v--", "c.jsonl"), ("--v--", "d.jsonl")] {
        fs::create_dir_all(root.join(cwd)).unwrap();
        arbor_test_support::write_big_session(&root.join(cwd).join(name), 3000, 300);
    }
    (dir, root)
}

/// `arbor` with its own cache directory and `env`.
fn arbor_in(cache: &Path, env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.args(args)
        .env("ARBOR_CACHE_DIR", cache)
        .env("HOME", "/nonexistent-home")
        .env_remove("ARBOR_STORE")
        .env_remove("ARBOR_BACKGROUND")
        .env_remove("ARBOR_BACKGROUND_ABOVE")
        .envs(env.iter().copied())
        .current_dir(fixtures());
    c
}

fn run(cache: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let o = arbor_in(cache, env, args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o
}

const DEFER: &[(&str, &str)] = &[("ARBOR_BACKGROUND_ABOVE", "1")];
const INLINE: &[(&str, &str)] = &[("ARBOR_BACKGROUND", "0")];

fn search(cache: &Path, env: &[(&str, &str)], root: &Path, word: &str) -> String {
    stdout(&run(
        cache,
        env,
        &["search", word, "--all", "--json", "--limit", "50", "--sessions-dir", root.to_str().unwrap()],
    ))
}

/// The catalog's filters: `(session, start, end)` of every column, sorted.
fn columns(cache: &Path) -> Vec<(i64, i64, i64)> {
    let Ok(dir) = fs::read_dir(cache.join("catalog")) else { return vec![] };
    let mut out = vec![];
    for e in dir.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "sqlite")) {
        let conn = rusqlite::Connection::open(e.path()).unwrap();
        let mut stmt = conn.prepare("SELECT session, start, end FROM columns").unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out.sort();
    out
}

/// The builder's lock, taken as a builder takes it (`None` while one holds it).
fn take_lock(cache: &Path) -> Option<File> {
    fs::create_dir_all(cache).unwrap();
    let f = fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(cache.join("build.lock"));
    let f = f.unwrap();
    flock(&f, FlockOperation::NonBlockingLockExclusive).ok().map(|()| f)
}

/// Waits until filters exist and no builder holds the lock.
fn wait_for_builder(cache: &Path) {
    let start = Instant::now();
    loop {
        if !columns(cache).is_empty() && take_lock(cache).is_some() {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no builder made the filters");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every session's columns cover it from 0 to its size, once (no column built twice).
fn assert_covered_once(cache: &Path, root: &Path) {
    let cols = columns(cache);
    let sessions: std::collections::BTreeSet<i64> = cols.iter().map(|c| c.0).collect();
    assert_eq!(sessions.len(), 4, "{cols:?}");
    let mut total = 0;
    for s in sessions {
        let mut at = 0;
        for c in cols.iter().filter(|c| c.0 == s) {
            assert_eq!(c.1, at, "columns of session {s} overlap or leave a gap: {cols:?}");
            at = c.2;
        }
        total += at;
    }
    let size: u64 = arbor_test_support::jsonl_under(root).iter().map(|p| fs::metadata(p).unwrap().len()).sum();
    assert_eq!(total as u64, size);
}

#[test]
fn a_first_search_answers_from_a_scan_and_a_builder_makes_the_filters() {
    let (dir, root) = store();
    let inline = dir.path().join("inline");
    let expected = search(&inline, INLINE, &root, "a2999");
    assert!(expected.contains("\"entryId\":\"e2999\""), "{expected}");
    assert!(!columns(&inline).is_empty(), "ARBOR_BACKGROUND=0 builds the filters in line");

    // While a builder holds the lock: the same hits, and no filter built by the search.
    let held = dir.path().join("held");
    let lock = take_lock(&held).unwrap();
    assert_eq!(search(&held, DEFER, &root, "a2999"), expected);
    assert_eq!(columns(&held), vec![], "the search answered from a plain scan");
    drop(lock);

    // The search starts the builder; after it, the filters are there and used.
    let bg = dir.path().join("bg");
    assert_eq!(search(&bg, DEFER, &root, "a2999"), expected);
    wait_for_builder(&bg);
    assert_covered_once(&bg, &root);
    let before = columns(&bg);
    assert_eq!(search(&bg, DEFER, &root, "a2999"), expected);
    assert_eq!(search(&bg, DEFER, &root, "m1500"), search(&inline, INLINE, &root, "m1500"));
    assert_eq!(columns(&bg), before, "searches again read through the filters and build nothing");
    assert!(take_lock(&bg).is_some(), "and start no builder");
}

#[test]
fn two_first_searches_at_once_start_one_builder() {
    let (dir, root) = store();
    let cache = dir.path().join("cache");
    let (a, b) = std::thread::scope(|s| {
        let one = s.spawn(|| search(&cache, DEFER, &root, "a2999"));
        let two = s.spawn(|| search(&cache, DEFER, &root, "a2999"));
        (one.join().unwrap(), two.join().unwrap())
    });
    assert_eq!(a, b);
    wait_for_builder(&cache);
    // Let a second builder (if one had started) finish too.
    std::thread::sleep(Duration::from_millis(300));
    wait_for_builder(&cache);
    assert_covered_once(&cache, &root);
}

#[test]
fn cache_build_by_hand_builds_every_filter_and_skips_beside_another() {
    let (dir, root) = store();
    let cache = dir.path().join("cache");
    let r = root.to_str().unwrap();
    let lock = take_lock(&cache).unwrap();
    let o = run(&cache, &[], &["cache", "build", "--sessions-dir", r]);
    assert!(stdout(&o).contains("another `arbor cache build` is running"), "{}", stdout(&o));
    assert_eq!(columns(&cache), vec![]);
    drop(lock);
    let o = run(&cache, &[], &["cache", "build", "--sessions-dir", r]);
    assert!(stdout(&o).starts_with("built the catalog of "), "{}", stdout(&o));
    assert_covered_once(&cache, &root);
    // Built again: nothing is missing, nothing is added.
    let before = columns(&cache);
    run(&cache, &[], &["cache", "build", "--sessions-dir", r]);
    assert_eq!(columns(&cache), before);
    assert_eq!(search(&cache, DEFER, &root, "a2999"), search(&dir.path().join("i"), INLINE, &root, "a2999"));
}

#[test]
fn cache_clear_while_a_builder_runs_breaks_neither() {
    let (dir, root) = store();
    let cache = dir.path().join("cache");
    let r = root.to_str().unwrap();
    let builder = arbor_in(&cache, &[], &["cache", "build", "--sessions-dir", r]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let o = run(&cache, &[], &["cache", "clear"]);
    assert!(stdout(&o).starts_with("removed "), "{}", stdout(&o));
    let built = builder.wait_with_output().unwrap();
    assert!(built.status.success(), "{}", stderr(&built));
    let expected = search(&dir.path().join("i"), INLINE, &root, "a2999");
    assert_eq!(search(&cache, DEFER, &root, "a2999"), expected);
    wait_for_builder(&cache);
    assert_eq!(search(&cache, DEFER, &root, "a2999"), expected);
}
