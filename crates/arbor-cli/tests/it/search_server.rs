//! One engine, two backends: `arbor search` on a server (`--store`, a real
//! PostgreSQL server: `ARBOR_TEST_PG`, skipped without one) gives the hits
//! the same search on the files gives, in the same order, with the same
//! snippets, marks and relevance, on generated sessions of many scripts
//! (Latin, CJK, Cyrillic, emoji, URLs, paths, code; some written with
//! Python's `\u` escapes), for literals drawn from the entries' text, words
//! inside URLs, file names and hyphenated words, entry ids, session ids,
//! phrases, regexes and fuzzy words.

use std::path::Path;
use std::process::{Command, Output};

use arbor_test_support::pg::TestDb;
use arbor_test_support::recall::{draw_literals, entry_texts, write_recall_sessions};
use serde_json::Value;

use crate::{cache_dir, stderr};

/// `arbor ARGS` over the sessions root `dir/sessions`, or on the server `store`.
fn arbor_at(store: Option<&str>, dir: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.args(args)
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache_dir())
        .env("ARBOR_SESSIONS_DIR", dir.join("sessions"))
        .current_dir(dir);
    match store {
        Some(url) => c.env("ARBOR_STORE", url),
        None => c.env_remove("ARBOR_STORE"),
    };
    let o = c.output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o
}

/// The hits of a `--json` search, each with its path as `DIR/FILE` (the
/// server's paths are `/DIR/FILE`, the files' under the root).
fn hits(o: &Output) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let Value::Array(items) = v else { panic!("not a list: {v}") };
    items
        .into_iter()
        .map(|mut h| {
            let p = h["path"].as_str().unwrap().to_owned();
            let mut parts = p.rsplit('/');
            let file = parts.next().unwrap_or_default();
            h["path"] = Value::String(format!("{}/{file}", parts.next().unwrap_or_default()));
            h
        })
        .collect()
}

#[test]
fn the_server_finds_what_the_files_find_in_the_same_order() {
    let Some(db) = TestDb::new("cli_search_recall") else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let sessions = write_recall_sessions(&root, 12, 5);
    arbor_at(None, dir.path(), &["push", root.to_str().unwrap(), "--to", &db.url]);

    let texts = entry_texts(&sessions);
    let mut queries: Vec<String> = draw_literals(&texts, 40, 5).into_iter().map(|l| l.text).collect();
    // Words inside URLs, file names and hyphenated words; other scripts.
    for q in ["openclaw", "backup", "github", "run-tests", "tests", "main.rs", "e-mail", "mail", "x86_64"] {
        queries.push(q.to_owned());
    }
    for q in ["备份", "検索", "数据库", "Привет", "жук", "😀", "🚀", "Größe", "STRASSE", "café"]
    {
        queries.push(q.to_owned());
    }
    // Entry ids, a session id and the start of one; phrases and regexes.
    queries.push(sessions[3].entries[5].clone());
    queries.push(sessions[7].entries[0].clone());
    queries.push(sessions[2].id.clone());
    queries.push(sessions[9].id[..8].to_owned());
    for q in ["\"Pine Labs\"", "\"backup deploy\"", "re:open[a-z]+-backup", "re:(?i)привет|备份", "re:[0-9a-f]{8}"]
    {
        queries.push(q.to_owned());
    }
    let mut answered = 0;
    let mut shown = vec![];
    for q in &queries {
        let args = ["search", "--all", "--json", "--limit", "500", "--", q.as_str()];
        let [local, server] = [None, Some(db.url.as_str())].map(|store| hits(&arbor_at(store, dir.path(), &args)));
        assert_eq!(local, server, "{q:?}");
        answered += usize::from(!local.is_empty());
        shown.extend(server);
    }
    assert!(answered + 3 >= queries.len(), "only {answered} of {} queries found anything", queries.len());
    // The server's hits name their sessions and say whether they are on the active path, as the files' do.
    assert!(shown.iter().any(|h| h["sessionName"].is_string()), "no hit shows its session's name");
    for on in [true, false] {
        assert!(shown.iter().any(|h| h["onActivePath"] == on), "no hit with onActivePath {on}");
    }

    // Fuzzy words: asked for, and as the fallback of a search with no exact hit.
    for args in [&["search", "--all", "--json", "--fuzzy", "--", "frbnctr"][..], &["search", "--all", "--json", "dply"]]
    {
        let [local, server] = [None, Some(db.url.as_str())].map(|store| hits(&arbor_at(store, dir.path(), args)));
        assert!(!local.is_empty() && local.iter().all(|h| h["relevance"] == "fuzzy"), "{args:?}");
        assert_eq!(local, server, "{args:?}");
    }
    // A limit stops both at the same hits.
    let args = ["search", "--all", "--json", "--limit", "7", "--", "e"];
    let [local, server] = [None, Some(db.url.as_str())].map(|store| hits(&arbor_at(store, dir.path(), &args)));
    assert_eq!(local.len(), 7);
    assert_eq!(local, server);
}

#[test]
fn a_session_that_does_not_open_on_the_server_is_left_out_with_a_warning() {
    let Some(db) = TestDb::new("cli_search_bad_row") else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    write_recall_sessions(&root, 3, 9);
    arbor_at(None, dir.path(), &["push", root.to_str().unwrap(), "--to", &db.url]);
    // A row planted by hand: a session of version 1 whose first line is not a header.
    db.client()
        .batch_execute(
            "WITH s AS (INSERT INTO arbor.sessions (dir, name, kind, session_id, version, created, cwd, line_count, byte_size) \
                        VALUES ('--p--', '2030-01-01T00-00-00-000Z_bad.jsonl', 1, 'bad', 1, '2030-01-01T00:00:00.000Z', '/p', 1, 9) \
                        RETURNING id) \
             INSERT INTO arbor.lines (session, seq, off, bytes) SELECT id, 0, 0, 'garbage\n'::bytea || '\\x0a'::bytea FROM s",
        )
        .unwrap();
    let o = arbor_at(Some(&db.url), dir.path(), &["search", "--all", "--json", "--", "re:."]);
    assert!(!hits(&o).is_empty());
    let err = stderr(&o);
    let warned: Vec<&str> = err.lines().filter(|l| l.contains("2030-01-01T00-00-00-000Z_bad.jsonl")).collect();
    assert_eq!(warned.len(), 1, "{err}");
    assert!(
        warned[0].starts_with("arbor: warning: cannot read /--p--/2030-01-01T00-00-00-000Z_bad.jsonl on the server"),
        "{err}"
    );
}
