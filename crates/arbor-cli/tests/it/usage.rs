//! `arbor usage` end to end on the demo session: the tables (80 columns, a
//! bar per row, the tree's view), `usage branch`, the JSON's shape, bad
//! arguments named, a cache in Arbor's cache directory and nothing beside
//! the sessions, and the same numbers over a real PostgreSQL server
//! (`--store`, through the `Sessions` seam; skipped without
//! `ARBOR_TEST_PG`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arbor_test_support::pg::TestDb;
use serde_json::Value;

use crate::{fixtures, stderr, stdout};

/// The demo session's place in pi's layout.
const DEMO: &str = "--home-dev-wordfreq--/2026-03-14T09-12-03-418Z_fe01ce2a-7fba-48fa-baed-7c982a04e229.jsonl";

/// A sessions root holding a copy of the demo session; the copy's path.
fn demo_root(dir: &Path) -> PathBuf {
    let f = dir.join("sessions").join(DEMO);
    std::fs::create_dir_all(f.parent().unwrap()).unwrap();
    std::fs::copy(fixtures().join("demo/demo.jsonl"), &f).unwrap();
    f
}

/// `arbor ARGS` with `cache` as Arbor's cache directory, no server, no home.
fn arbor_in(cache: &Path, store: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.args(args)
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache)
        .env_remove("ARBOR_SESSIONS_DIR")
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("XDG_DATA_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .current_dir(fixtures());
    match store {
        Some(url) => c.env("ARBOR_STORE", url),
        None => c.env_remove("ARBOR_STORE"),
    };
    c.output().unwrap()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "stdout:\n{}\nstderr:\n{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o), "", "nothing on stderr");
    stdout(&o)
}

/// Every file under `dir`, relative to it.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_tables_fit_80_columns_and_show_where_the_money_went() {
    let dir = tempfile::tempdir().unwrap();
    let file = demo_root(dir.path());
    let root = dir.path().join("sessions");
    let cache = dir.path().join("cache");
    let run = |args: &[&str]| {
        let mut all = vec!["usage"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--agent", "pi", "--sessions-dir", root.to_str().unwrap(), "-z", "UTC"]);
        ok(arbor_in(&cache, None, &all))
    };
    let mut shown = String::new();
    for args in [&["daily"][..], &["session", "--explain"], &["model"], &["monthly", "--week-starts", "monday"]] {
        shown.push_str(&format!("$ arbor usage {}\n{}", args.join(" "), run(args)));
    }
    let branch = ok(arbor_in(&cache, None, &["usage", "branch", file.to_str().unwrap()]));
    shown.push_str(&format!("$ arbor usage branch DEMO\n{branch}"));
    for line in shown.lines() {
        assert!(line.chars().count() <= 80, "wider than 80 columns: {line:?}");
        assert_eq!(line, line.trim_end(), "trailing blanks: {line:?}");
    }
    insta::assert_snapshot!(shown);
    // Read from the sessions, cached in Arbor's cache directory, nothing beside them.
    assert_eq!(files(&root), vec![DEMO.to_owned()]);
    let cached = files(&cache);
    assert!(cached.iter().any(|f| f.starts_with("usage/") && f.ends_with(".bin")), "{cached:?}");
    // A day outside the session's has no rows.
    assert_eq!(run(&["--cwd", "/home/dev/wordfreq"]), run(&["daily"]), "the demo's own directory");
    assert_eq!(run(&["--cwd", "/home/dev"]), "no usage found\n");
    assert_eq!(run(&["--since", "2026-03-15"]), "no usage found\n");
    assert_eq!(run(&["--until", "20260313"]), "no usage found\n");
}

#[test]
fn the_json_uses_ccusages_names_and_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = demo_root(dir.path());
    let root = dir.path().join("sessions");
    let cache = dir.path().join("cache");
    let args = ["usage", "daily", "--json", "--explain", "--sessions-dir", root.to_str().unwrap(), "-z", "UTC"];
    let daily: Value = serde_json::from_str(&ok(arbor_in(&cache, None, &args))).unwrap();
    insta::assert_json_snapshot!(daily);
    // The same again from the cache.
    let again: Value = serde_json::from_str(&ok(arbor_in(&cache, None, &args))).unwrap();
    assert_eq!(again, daily);
    let no_cache: Value =
        serde_json::from_str(&ok(arbor_in(&cache, None, &[&args[..], &["--no-cache"]].concat()))).unwrap();
    assert_eq!(no_cache, daily);

    let session: Value = serde_json::from_str(&ok(arbor_in(
        &cache,
        None,
        &["usage", "session", "--json", "--sessions-dir", root.to_str().unwrap(), "-z", "UTC"],
    )))
    .unwrap();
    let row = &session["sessions"][0];
    assert_eq!(row["sessionId"], "fe01ce2a-7fba-48fa-baed-7c982a04e229");
    assert_eq!(row["path"].as_str(), file.to_str());
    assert_eq!(row["projectPath"], "/home/dev/wordfreq");
    assert_eq!((row["agent"].as_str(), row["leaves"].as_u64()), (Some("pi"), Some(3)));
    for k in ["inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens", "totalTokens", "totalCost"] {
        assert_eq!(row[k], daily["daily"][0][k], "{k}");
    }
    let branches: Value =
        serde_json::from_str(&ok(arbor_in(&cache, None, &["usage", "branch", file.to_str().unwrap(), "--json"])))
            .unwrap();
    let own: f64 = branches["branches"].as_array().unwrap().iter().map(|b| b["own"]["cost"].as_f64().unwrap()).sum();
    assert!((own - row["totalCost"].as_f64().unwrap()).abs() < 1e-9, "the branches add up to the session");
}

#[test]
fn bad_arguments_are_one_line_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let root = dir.path().join("sessions");
    let root = root.to_str().unwrap();
    for (args, says) in [
        (&["usage", "--agent", "cursor", "--sessions-dir", root][..], "unknown agent \"cursor\""),
        (&["usage", "--since", "2026-13-01", "--sessions-dir", root], "2026-13-01"),
        (&["usage", "-z", "Mars/Olympus_Mons", "--sessions-dir", root], "Mars/Olympus_Mons"),
        (&["usage", "branch"], "usage branch needs the session"),
        (&["usage", "daily", "x.jsonl"], "unexpected argument x.jsonl"),
        (&["usage", "branch", "no/such.jsonl"], "no/such.jsonl"),
    ] {
        let o = arbor_in(&cache, None, args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("arbor: ") && err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn over_the_server_the_numbers_are_the_files() {
    let Some(db) = TestDb::new("usage_over_the_server") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = demo_root(dir.path());
    let root = dir.path().join("sessions");
    let cache = dir.path().join("cache");
    ok(arbor_in(&cache, None, &["push", root.to_str().unwrap(), "--to", &db.url]));
    let local = ["usage", "session", "--json", "--agent", "pi", "--sessions-dir", root.to_str().unwrap(), "-z", "UTC"];
    let local: Value = serde_json::from_str(&ok(arbor_in(&cache, None, &local))).unwrap();
    let served = ["usage", "session", "--json", "--agent", "pi", "-z", "UTC"];
    let mut served: Value = serde_json::from_str(&ok(arbor_in(&cache, Some(&db.url), &served))).unwrap();
    let row = served["sessions"][0].as_object_mut().unwrap();
    assert!(row["path"].as_str().unwrap().ends_with(DEMO.rsplit_once('/').unwrap().1), "{row:?}");
    // The same numbers; only where the session is differs.
    row.insert("path".into(), local["sessions"][0]["path"].clone());
    assert_eq!(served, local);
    let on_server = ok(arbor_in(&cache, Some(&db.url), &["usage", "branch", "fe01ce2a"]));
    let on_disk = ok(arbor_in(&cache, None, &["usage", "branch", file.to_str().unwrap()]));
    assert_eq!(on_server, on_disk);
}
