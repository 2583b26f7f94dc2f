//! A session opened through its index cache builds its entries lazily, a
//! run at a time, and plans the context from the index's columns: it must
//! answer exactly what the full load (every entry decoded on open) answers.
//! Every fixture (indexed whatever its size) and generated sessions with
//! compactions, settings, labels and branches are compared at every leaf:
//! the context (as a value and as `write_context_json` writes it), the path
//! and the tree.

use std::fmt::Write as _;
use std::path::Path;

use arbor_context::{plan_session_context, session_context, write_context_json};
use arbor_tree::{FileStore, OpenMode, Session, SessionOptions};

use arbor_test_support::{jsonl_under, write_big_session};

/// Read-only, fully decoded on open (the reference).
fn open_full(path: &Path) -> Option<Session> {
    let opts = SessionOptions { index_first: false, index_dir: None, ..SessionOptions::default() };
    Session::open(path, OpenMode::ReadOnly, opts.with_store(FileStore)).ok()
}

/// Read-only through the index cache in `cache`, indexing files of any size.
fn open_indexed(path: &Path, cache: &Path) -> Option<Session> {
    let opts = SessionOptions { index_dir: Some(cache.to_owned()), index_min_bytes: 0, ..SessionOptions::default() };
    Session::open(path, OpenMode::ReadOnly, opts.with_store(FileStore)).ok()
}

/// The context at the session's leaf: the value, its JSON and the JSON `arbor context --json` writes.
fn context(s: &Session) -> String {
    let value = arbor_log::json::to_string(&session_context(s).unwrap().to_json()).unwrap();
    let mut written = Vec::new();
    write_context_json(s, &mut written).unwrap();
    format!("{value}\n{}", String::from_utf8(written).unwrap())
}

/// The path to the leaf: ids and the JSON text of each entry.
fn path(s: &Session) -> String {
    let mut out = String::new();
    for p in s.branch_positions(None) {
        writeln!(out, "{} {}", s.id_at(p).unwrap(), s.json_at(p).unwrap().unwrap()).unwrap();
    }
    out
}

fn tree(s: &Session) -> String {
    let mut out = Vec::new();
    s.get_tree().write_json(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Compares a session opened through its index with the full load: first
/// fresh (the leaf's context read from the columns alone), then at every
/// leaf (every `step`-th entry).
fn same_through_the_index(file: &Path, step: usize) -> bool {
    let cache = tempfile::tempdir().unwrap();
    let Some(full) = open_full(file) else { return false };
    // The first open scans and writes the index; the second reads it.
    drop(open_indexed(file, cache.path()));
    let Some(fresh) = open_indexed(file, cache.path()) else { panic!("{}: opens in full only", file.display()) };
    if !fresh.opened_from_index() {
        // Files with diagnostics, files that need a migration and files
        // where a parent is not written before its child get no index.
        return false;
    }
    let name = file.display();
    assert_eq!(context(&fresh), context(&full), "{name}: the context at the leaf");
    assert_eq!(plan_session_context(&fresh).unwrap(), plan_session_context(&full).unwrap(), "{name}: the plan");
    let mut lazy = open_indexed(file, cache.path()).unwrap();
    assert_eq!(path(&lazy), path(&full), "{name}: the path");
    assert_eq!(tree(&lazy), tree(&full), "{name}: the tree");
    let mut full = full;
    for (k, p) in full.positions().step_by(step).enumerate() {
        let id = full.id_at(p).unwrap().to_string();
        full.branch(&id).unwrap();
        lazy.branch(&id).unwrap();
        assert_eq!(context(&lazy), context(&full), "{name}: the context at {id}");
        assert_eq!(path(&lazy), path(&full), "{name}: the path to {id}");
        if k % 5 != 0 {
            continue;
        }
        // A fresh session at that leaf: nothing built before the context is read.
        let mut at = open_indexed(file, cache.path()).unwrap();
        at.branch(&id).unwrap();
        assert_eq!(context(&at), context(&full), "{name}: the context at {id}, fresh");
    }
    true
}

#[test]
fn every_fixture_answers_the_same_through_its_index_at_every_leaf() {
    let files = jsonl_under(&arbor_test_support::fixtures());
    let indexed = files.iter().filter(|f| same_through_the_index(f, 1)).count();
    assert!(indexed >= 20, "{indexed} of {} fixtures indexed", files.len());
}

/// A clean session of `turns` turns over more than one run of the index:
/// settings, compactions that keep from a few entries back (or from an id
/// off the path), custom messages, labels and side branches.
fn write_compacted_session(path: &Path, turns: usize) {
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    );
    let ts = |i: usize| format!("2026-01-01T00:{:02}:{:02}.000Z", (i / 60) % 60, i % 60);
    let mut parent = "null".to_owned();
    let mut n = 0usize;
    let mut line = |body: String, parent: &mut String, keep: bool| {
        let id = format!("n{n}");
        text.push_str(&format!("{{\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"{}\",{body}}}\n", ts(n)));
        if keep {
            *parent = format!("\"{id}\"");
        }
        n += 1;
        id
    };
    let mut recent = vec![];
    for t in 0..turns {
        let u = line(
            format!("\"type\":\"message\",\"message\":{{\"role\":\"user\",\"content\":\"q{t}\",\"timestamp\":{t}}}"),
            &mut parent,
            true,
        );
        recent.push(u);
        line(
            format!(
                "\"type\":\"message\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"a{t}\"}}],\"provider\":\"p{}\",\"model\":\"m{}\",\"timestamp\":{t}}}",
                t % 3,
                t % 5
            ),
            &mut parent,
            true,
        );
        match t % 13 {
            3 => {
                line(format!("\"type\":\"thinking_level_change\",\"thinkingLevel\":\"l{t}\""), &mut parent, true);
            }
            5 => {
                line(
                    format!("\"type\":\"model_change\",\"provider\":\"x{t}\",\"modelId\":\"y{t}\""),
                    &mut parent,
                    true,
                );
            }
            7 => {
                let kept = if t % 2 == 0 { recent[recent.len().saturating_sub(4)].clone() } else { "gone".to_owned() };
                line(
                    format!("\"type\":\"compaction\",\"summary\":\"s{t}\",\"firstKeptEntryId\":\"{kept}\",\"tokensBefore\":{t}"),
                    &mut parent,
                    true,
                );
            }
            9 => {
                line(
                    format!("\"type\":\"custom_message\",\"customType\":\"c\",\"content\":\"cm{t}\",\"display\":true"),
                    &mut parent,
                    true,
                );
            }
            11 => {
                // A side branch and a label, then back to the main line.
                line(
                    format!("\"type\":\"message\",\"message\":{{\"role\":\"user\",\"content\":\"side{t}\"}}"),
                    &mut parent,
                    false,
                );
                let target = recent[recent.len() / 2].clone();
                line(format!("\"type\":\"label\",\"targetId\":\"{target}\",\"label\":\"L{t}\""), &mut parent, true);
            }
            _ => {}
        }
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn generated_sessions_answer_the_same_through_their_index() {
    let d = tempfile::tempdir().unwrap();
    let compacted = d.path().join("compacted.jsonl");
    write_compacted_session(&compacted, 150);
    assert!(same_through_the_index(&compacted, 1));
    let big = d.path().join("big.jsonl");
    write_big_session(&big, 4000, 300);
    assert!(same_through_the_index(&big, 97));
}
