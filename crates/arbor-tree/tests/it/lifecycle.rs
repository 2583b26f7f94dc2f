//! The write lifecycle without pi's bugs: deferred creation, durable leaf
//! moves, torn tails, fork_from migrating first, duplicate headers never written.

use std::fs;

use arbor_log::EntryKind;
use arbor_tree::{OpenMode, Session, SessionOptions, LEAF_MARKER_TYPE};
use serde_json::{json, Value};

use crate::{assistant, fixtures, ids, opts, user};

fn lines(p: &std::path::Path) -> Vec<Value> {
    fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn in_dir(dir: &std::path::Path) -> SessionOptions {
    SessionOptions { session_dir: Some(dir.into()), ..opts() }
}

#[test]
fn new_session_reaches_disk_with_its_first_assistant_message_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create("/proj", in_dir(dir.path())).unwrap();
    let path = s.session_file().unwrap().to_owned();
    assert!(path.starts_with(dir.path()));
    assert!(path.file_name().unwrap().to_string_lossy().ends_with(&format!("_{}.jsonl", s.session_id())));
    s.append_model_change("anthropic", "claude").unwrap();
    s.append_message(user("hi")).unwrap();
    assert!(!path.exists());
    s.append_message(assistant("hello")).unwrap();
    assert_eq!(lines(&path).len(), 4);
    s.append_message(user("more")).unwrap();
    let l = lines(&path);
    assert_eq!(l.len(), 5);
    assert_eq!(l.iter().filter(|v| v["type"] == "session").count(), 1);
}

#[test]
fn loaded_file_without_assistant_is_appended_not_duplicated() {
    // pi's duplicate-prefix bug (#3930): a loaded file with no assistant gets its
    // whole buffer appended again on the first assistant message. Not here.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    fs::write(&p, "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n{\"type\":\"message\",\"id\":\"u1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n").unwrap();
    let mut s = Session::open(&p, OpenMode::Write, opts()).unwrap();
    s.append_message(user("again")).unwrap();
    s.append_message(assistant("ok")).unwrap();
    let l = lines(&p);
    assert_eq!(l.len(), 4);
    assert_eq!(l.iter().filter(|v| v["type"] == "session").count(), 1);
}

#[test]
fn leaf_move_survives_reopening_in_arbor_and_in_pis_rules() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create("/proj", in_dir(dir.path())).unwrap();
    let u1 = s.append_message(user("1")).unwrap();
    let a1 = s.append_message(assistant("2")).unwrap();
    s.append_message(user("3")).unwrap();
    s.append_message(assistant("4")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    s.branch(&a1).unwrap();
    let marker = s.persist_leaf().unwrap().expect("a marker is written");
    assert_eq!(s.persist_leaf().unwrap(), None, "only once per move");
    drop(s);

    // pi's reading rule: the leaf is the last entry of the file.
    let l = lines(&path);
    let last = l.last().unwrap();
    assert_eq!(last["type"], "custom");
    assert_eq!(last["customType"], LEAF_MARKER_TYPE);
    assert_eq!(last["parentId"], json!(a1));
    assert_eq!(last["id"], json!(marker));

    let s = Session::open(&path, OpenMode::Write, opts()).unwrap();
    assert_eq!(s.leaf_id(), Some(marker.as_str()));
    // The path through the marker is the path to the new position.
    let path_ids = ids(&s.get_branch(None).unwrap());
    assert_eq!(path_ids, vec![u1, a1, marker]);
    let EntryKind::Custom(c) = &s.leaf_entry().unwrap().unwrap().kind else { panic!() };
    assert_eq!(c.custom_type, LEAF_MARKER_TYPE);
}

#[test]
fn reset_leaf_is_durable_as_a_new_root_marker() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create("/proj", in_dir(dir.path())).unwrap();
    s.append_message(user("1")).unwrap();
    s.append_message(assistant("2")).unwrap();
    s.reset_leaf();
    let marker = s.persist_leaf().unwrap().unwrap();
    let path = s.session_file().unwrap().to_owned();
    drop(s);
    let s = Session::open(&path, OpenMode::Write, opts()).unwrap();
    assert_eq!(s.leaf_id(), Some(marker.as_str()));
    assert_eq!(s.leaf_entry().unwrap().unwrap().parent_id, None);
}

#[test]
fn torn_tail_is_kept_aside_and_the_next_append_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let good = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n{\"type\":\"message\",\"id\":\"u1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n";
    fs::write(&p, format!("{good}{{\"type\":\"message\",\"id\":\"a1\",\"par")).unwrap();
    let mut s = Session::open(&p, OpenMode::Write, opts()).unwrap();
    assert_eq!(s.len(), 1);
    assert!(s.diagnostics().iter().any(|d| d.to_string().contains("torn")));
    let id = s.append_message(assistant("ok")).unwrap();
    assert!(s.notices().iter().any(|n| n.contains("torn")), "{:?}", s.notices());
    let l = lines(&p);
    assert_eq!(l.len(), 3);
    assert_eq!(l[2]["id"], json!(id));
    assert_eq!(l[2]["parentId"], json!("u1"));
    let side: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".torn-"))
        .collect();
    assert_eq!(side.len(), 1);
    assert_eq!(fs::read_to_string(side[0].path()).unwrap(), "{\"type\":\"message\",\"id\":\"a1\",\"par");
}

#[test]
fn malformed_lines_survive_a_migration_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v2.jsonl");
    let body = "{\"type\":\"session\",\"version\":2,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\nnot json at all\n{\"type\":\"message\",\"id\":\"u1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"hookMessage\",\"customType\":\"x\",\"content\":\"c\",\"display\":true,\"timestamp\":1}}\n";
    fs::write(&p, body).unwrap();
    let mut s = Session::open(&p, OpenMode::Write, opts()).unwrap();
    s.append_message(user("x")).unwrap();
    let text = fs::read_to_string(&p).unwrap();
    assert!(text.contains("\nnot json at all\n"), "the junk line is kept: {text}");
    assert!(text.starts_with("{\"type\":\"session\",\"version\":3,"));
    assert!(text.contains("\"role\":\"custom\""));
    assert!(!dir.path().join("v2.jsonl.tmp").exists());
}

#[test]
fn fork_from_migrates_first_and_copies_every_branch() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixtures().join("logs/legacy/v1/simple-chat.jsonl");
    let s = Session::fork_from(&src, "/elsewhere", in_dir(dir.path())).unwrap();
    assert_eq!(s.cwd(), "/elsewhere");
    let p = s.session_file().unwrap().to_owned();
    let l = lines(&p);
    assert_eq!(l[0]["version"], 3);
    assert_eq!(l[0]["parentSession"], json!(std::path::absolute(&src).unwrap().to_string_lossy()));
    assert!(l[1..].iter().all(|e| e["id"].is_string() && e.get("parentId").is_some()), "entries were migrated");
    let src_count = Session::open(&src, OpenMode::ReadOnly, SessionOptions::default()).unwrap().len();
    assert_eq!(l.len() - 1, src_count);

    let empty = dir.path().join("empty.jsonl");
    fs::write(&empty, "").unwrap();
    let err = Session::fork_from(&empty, "/x", in_dir(dir.path())).unwrap_err();
    assert!(err.to_string().starts_with("Cannot fork: source session file is empty or invalid: "), "{err}");
    let headerless = fixtures().join("logs/err/headerless.jsonl");
    let err = Session::fork_from(&headerless, "/x", in_dir(dir.path())).unwrap_err();
    assert!(err.to_string().starts_with("Cannot fork: source session has no header: "), "{err}");
}

#[test]
fn session_name_is_the_newest_non_empty_one() {
    let mut s = crate::in_memory();
    assert_eq!(s.session_name().unwrap(), None);
    s.append_session_info("  First  ").unwrap();
    assert_eq!(s.session_name().unwrap(), Some("First"));
    s.append_session_info("Second").unwrap();
    s.append_session_info("").unwrap();
    assert_eq!(s.session_name().unwrap(), Some("Second"), "a name cannot be cleared");
}

#[test]
fn read_only_sessions_refuse_writes() {
    let p = fixtures().join("logs/ok/linear-chat.jsonl");
    let mut s = Session::open(&p, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
    let err = s.append_message(user("x")).unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
}

#[test]
fn continue_recent_and_listing() {
    let dir = tempfile::tempdir().unwrap();
    let o = || SessionOptions { sessions_root: Some(dir.path().into()), ..opts() };
    let mut s = Session::continue_recent("/work/proj", o()).unwrap();
    assert!(s.is_empty());
    s.append_message(user("what is this?")).unwrap();
    s.append_message(assistant("a test")).unwrap();
    s.append_session_info("Named").unwrap();
    let path = s.session_file().unwrap().to_owned();
    assert_eq!(path.parent().unwrap(), dir.path().join("--work-proj--"));
    drop(s);
    let s = Session::continue_recent("/work/proj", o()).unwrap();
    assert_eq!(s.session_file(), Some(path.as_path()));
    let list = arbor_tree::list_sessions(&arbor_tree::FileStore, &dir.path().join("--work-proj--")).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].name.as_deref(), Some("Named"));
    assert_eq!(list[0].message_count, 2);
    assert_eq!(list[0].first_message, "what is this?");
    assert_eq!(list[0].all_messages_text, "what is this? a test");
    assert_eq!(arbor_tree::list_all_sessions(&arbor_tree::FileStore, dir.path()).unwrap().len(), 1);
}

#[test]
fn damaged_fixtures_load_without_panics_and_with_diagnostics() {
    for dir in ["err", "ok", "unknown", "legacy/v1", "legacy/v2"] {
        for f in fs::read_dir(fixtures().join("logs").join(dir)).unwrap() {
            let p = f.unwrap().path();
            if p.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            match Session::open(&p, OpenMode::ReadOnly, SessionOptions::default()) {
                Ok(s) => {
                    let tree = s.get_tree();
                    // Every live entry appears exactly once in the tree.
                    let mut seen = std::collections::HashSet::new();
                    let mut stack: Vec<_> = tree.roots().map(Result::unwrap).collect();
                    while let Some(n) = stack.pop() {
                        assert!(seen.insert(n.position), "{}: node twice", p.display());
                        stack.extend(tree.children(&n).map(Result::unwrap));
                    }
                    let unique: std::collections::HashSet<&str> =
                        s.entries().map(Result::unwrap).map(|e| e.id.as_str()).collect();
                    assert_eq!(seen.len(), unique.len(), "{}: every entry once", p.display());
                    let _ = s.get_branch(None).unwrap();
                }
                Err(e) => assert!(dir == "err", "{}: {e}", p.display()),
            }
        }
    }
}

/// The names in a directory, sorted.
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn a_write_mode_refuses_a_missing_path_and_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    for mode in [OpenMode::Write, OpenMode::ReadOnly] {
        let err = Session::open(&missing, mode, opts()).unwrap_err();
        assert!(matches!(err, arbor_tree::TreeError::Missing(_)), "{mode:?}: {err}");
        assert_eq!(err.to_string(), format!("{}: no such session file", missing.display()));
    }
    // Refused before a lock file is made: the directory is as it was.
    assert!(names_in(dir.path()).is_empty(), "{:?}", names_in(dir.path()));
    // Asked for by name, a missing path starts a new session there (written with its first reply).
    let mut s = Session::open(&missing, OpenMode::WriteOrCreate, opts()).unwrap();
    assert_eq!(s.session_file(), Some(missing.as_path()));
    assert!(!missing.exists());
    s.append_message(user("hi")).unwrap();
    s.append_message(assistant("hello")).unwrap();
    assert_eq!(fs::read_to_string(&missing).unwrap().lines().count(), 3);
}

#[test]
fn a_write_mode_refuses_a_file_that_is_not_a_session_and_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (fixture, line) in [("headerless.jsonl", Some(1)), ("not-json-only.jsonl", None), ("empty.jsonl", None)] {
        let p = dir.path().join(fixture);
        fs::copy(fixtures().join("logs/err").join(fixture), &p).unwrap();
        let before = fs::read(&p).unwrap();
        for mode in [OpenMode::Write, OpenMode::WriteOrCreate, OpenMode::ReadOnly] {
            let err = Session::open(&p, mode, opts()).unwrap_err();
            match &err {
                arbor_tree::TreeError::NoHeader { line: l, .. } => assert_eq!(*l, line, "{fixture} {mode:?}"),
                other => panic!("{fixture} {mode:?}: {other}"),
            }
            assert!(err.to_string().contains("not a session file"), "{err}");
            assert_eq!(fs::read(&p).unwrap(), before, "{fixture} {mode:?}: the file is untouched");
        }
    }
    let names = names_in(dir.path());
    assert!(!names.iter().any(|n| n.contains(".corrupt-") || n.contains(".tmp")), "{names:?}");
}

#[test]
fn a_session_that_stops_writing_keeps_its_entries_and_lets_another_writer_in() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    fs::copy(fixtures().join("logs/ok/linear-chat.jsonl"), &p).unwrap();
    let mut s = Session::open(&p, OpenMode::Write, opts()).unwrap();
    let id = s.append_message(user("written before stopping")).unwrap();
    s.stop_writing();
    assert!(s.is_read_only());
    assert_eq!(s.leaf_id(), Some(id.as_str()));
    assert!(s.append_message(user("x")).unwrap_err().to_string().contains("read-only"));
    // The lock is gone: another writer opens the file and sees the entry.
    let other = Session::open(&p, OpenMode::Write, opts()).unwrap();
    assert!(other.get_entry(&id).unwrap().is_some());
}
