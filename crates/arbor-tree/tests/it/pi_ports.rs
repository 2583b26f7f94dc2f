//! Ports of pi's session-manager tests (`test/session-manager/*.test.ts`:
//! custom session ids, file operations, labels, migration, save-entry, the tree), with their expected values.

use std::fs;
use std::thread::sleep;
use std::time::Duration;

use arbor_log::{EntryKind, SessionLog};
use arbor_tree::{find_most_recent_session, FileStore, Session, TreeError};
use serde_json::json;

use crate::{assistant, ids, in_memory, opts, user};
use arbor_tree::OpenMode;

// ---- 7.2 custom-session-id ----

#[test]
fn custom_session_id() {
    let mut s = in_memory();
    s.new_session(Some("my-custom-id".into()), None);
    assert_eq!(s.session_id(), "my-custom-id");
    s.new_session(None, None);
    assert!(!s.session_id().is_empty());
    s.new_session(None, Some("parent.jsonl".into()));
    assert!(!s.session_id().is_empty());
    assert_eq!(s.header().parent_session.as_deref(), Some("parent.jsonl"));
    s.new_session(Some("header-test-id".into()), None);
    assert_eq!(s.header().id, "header-test-id");
}

// ---- 7.3 file-operations ----

fn loaded_records(bytes: &[u8]) -> usize {
    // pi's loadEntriesFromFile: [] unless the first record is a header.
    let log = SessionLog::read(bytes).unwrap();
    if log.has_header() {
        1 + log.entries().count()
    } else {
        0
    }
}

#[test]
fn load_entries_from_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    assert!(matches!(Session::open(&missing, OpenMode::ReadOnly, opts()), Err(TreeError::Missing(_))));
    assert_eq!(loaded_records(b""), 0);
    assert_eq!(loaded_records(b"{\"type\":\"message\",\"id\":\"1\",\"parentId\":null}\n"), 0);
    assert_eq!(loaded_records(b"not json\n"), 0);
    let header =
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n";
    let msg = "{\"type\":\"message\",\"id\":\"1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n";
    assert_eq!(loaded_records(format!("{header}{msg}").as_bytes()), 2);
    assert_eq!(loaded_records(format!("{header}garbage\n{msg}").as_bytes()), 2);
}

#[test]
fn find_most_recent_session_cases() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(find_most_recent_session(&FileStore, d).unwrap(), None, "empty dir");
    assert_eq!(find_most_recent_session(&FileStore, &d.join("nope")).unwrap(), None, "missing dir");
    fs::write(d.join("a.txt"), "{}").unwrap();
    fs::write(d.join("b.json"), "{}").unwrap();
    assert_eq!(find_most_recent_session(&FileStore, d).unwrap(), None, "no .jsonl");
    fs::write(d.join("c.jsonl"), "{\"type\":\"message\"}\n").unwrap();
    assert_eq!(find_most_recent_session(&FileStore, d).unwrap(), None, "no header");
    let header = "{\"type\":\"session\",\"id\":\"x\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n";
    fs::write(d.join("old.jsonl"), header).unwrap();
    assert_eq!(find_most_recent_session(&FileStore, d).unwrap(), Some(d.join("old.jsonl")));
    sleep(Duration::from_millis(20));
    fs::write(d.join("new.jsonl"), header).unwrap();
    assert_eq!(find_most_recent_session(&FileStore, d).unwrap(), Some(d.join("new.jsonl")));
    sleep(Duration::from_millis(20));
    fs::write(d.join("newest-invalid.jsonl"), "garbage\n").unwrap();
    assert_eq!(find_most_recent_session(&FileStore, d).unwrap(), Some(d.join("new.jsonl")));
    // A first line longer than 512 bytes makes the file invalid.
    sleep(Duration::from_millis(20));
    let long = format!("{{\"type\":\"session\",\"id\":\"y\",\"pad\":\"{}\"}}\n", " ".repeat(600));
    fs::write(d.join("long.jsonl"), long).unwrap();
    assert_eq!(find_most_recent_session(&FileStore, d).unwrap(), Some(d.join("new.jsonl")));
}

fn lines(p: &std::path::Path) -> Vec<serde_json::Value> {
    fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn backups(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".corrupt-"))
        .collect();
    v.sort();
    v
}

#[test]
fn corrupted_files_are_recovered_with_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in [
        ("empty.jsonl", ""),
        ("headerless.jsonl", "{\"type\":\"message\",\"id\":\"1\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n"),
        ("garbage.jsonl", "garbage\nmore garbage\n"),
    ] {
        let p = dir.path().join(name);
        fs::write(&p, content).unwrap();
        // pi's recovery, asked for by name.
        let s = Session::open(&p, OpenMode::WriteCreateOrRecover, opts()).unwrap();
        assert!(!s.session_id().is_empty());
        assert_eq!(s.session_file(), Some(p.as_path()), "the explicit path is kept");
        let l = lines(&p);
        assert_eq!(l.len(), 1, "{name}: exactly one line");
        assert_eq!(l[0]["type"], "session");
        assert_eq!(l[0]["id"], json!(s.session_id()));
        let id = s.session_id().to_owned();
        drop(s);
        let again = Session::open(&p, OpenMode::Write, opts()).unwrap();
        assert_eq!(again.session_id(), id, "{name}: a second open loads the same session");
    }
    // Nothing is lost: every non-empty original was kept beside the file.
    let b = backups(dir.path());
    assert_eq!(b.len(), 2, "{b:?}");
    assert!(b.iter().any(|n| n.starts_with("garbage.jsonl.corrupt-")));
    let kept = fs::read_to_string(dir.path().join(b.iter().find(|n| n.starts_with("garbage")).unwrap())).unwrap();
    assert_eq!(kept, "garbage\nmore garbage\n");
}

// ---- 7.4 labels ----

#[test]
fn labels_set_get_clear_and_last_wins() {
    let mut s = in_memory();
    let m = s.append_message(user("hi")).unwrap();
    assert_eq!(s.get_label(&m).unwrap(), None);
    let l = s.append_label_change(&m, Some("checkpoint")).unwrap();
    assert_eq!(s.get_label(&m).unwrap(), Some("checkpoint"));
    let e = s.get_entry(&l).unwrap().unwrap();
    let EntryKind::Label(le) = &e.kind else { panic!() };
    assert_eq!((le.target_id.as_str(), le.label.as_ref().and_then(|v| v.as_str())), (m.as_str(), Some("checkpoint")));
    s.append_label_change(&m, None).unwrap();
    assert_eq!(s.get_label(&m).unwrap(), None);
    for t in ["first", "second", "third"] {
        s.append_label_change(&m, Some(t)).unwrap();
    }
    assert_eq!(s.get_label(&m).unwrap(), Some("third"));
}

#[test]
fn labels_are_in_tree_nodes() {
    let mut s = in_memory();
    let a = s.append_message(user("start")).unwrap();
    let b = s.append_message(assistant("response")).unwrap();
    s.append_label_change(&a, Some("start")).unwrap();
    s.append_label_change(&b, Some("response")).unwrap();
    let tree = s.get_tree();
    let root = tree.roots().map(Result::unwrap).next().unwrap();
    assert_eq!(root.label, Some("start"));
    let child = tree.children(&root).map(Result::unwrap).next().unwrap();
    assert_eq!(child.label, Some("response"));
}

#[test]
fn labels_preserved_and_dropped_in_branched_sessions() {
    let mut s = in_memory();
    let m1 = s.append_message(user("1")).unwrap();
    let m2 = s.append_message(assistant("2")).unwrap();
    s.append_label_change(&m1, Some("one")).unwrap();
    s.append_label_change(&m2, Some("two")).unwrap();
    assert_eq!(s.create_branched_session(&m2).unwrap(), None);
    assert_eq!(s.get_label(&m1).unwrap(), Some("one"));
    assert_eq!(s.get_label(&m2).unwrap(), Some("two"));
    assert_eq!(s.entries().map(Result::unwrap).filter(|e| matches!(e.kind, EntryKind::Label(_))).count(), 2);

    let mut s = in_memory();
    let m1 = s.append_message(user("1")).unwrap();
    let m2 = s.append_message(assistant("2")).unwrap();
    let m3 = s.append_message(user("3")).unwrap();
    for (id, l) in [(&m1, "a"), (&m2, "b"), (&m3, "c")] {
        s.append_label_change(id, Some(l)).unwrap();
    }
    s.create_branched_session(&m2).unwrap();
    assert_eq!(s.get_label(&m3).unwrap(), None);
    assert_eq!(s.get_label(&m1).unwrap(), Some("a"));
}

#[test]
fn labelling_a_missing_entry_fails() {
    let mut s = in_memory();
    let err = s.append_label_change("non-existent", Some("x")).unwrap_err();
    assert_eq!(err.to_string(), "Entry non-existent not found");
}

// ---- 7.5 migration ----

#[test]
fn migration_v1_and_v2() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = dir.path().join("v1.jsonl");
    fs::write(
        &v1,
        "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n\
         {\"type\":\"message\",\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n\
         {\"type\":\"message\",\"timestamp\":\"2025-01-01T00:00:02.000Z\",\"message\":{\"role\":\"assistant\",\"content\":[],\"timestamp\":2}}\n",
    )
    .unwrap();
    let s = Session::open(&v1, OpenMode::Write, opts()).unwrap();
    assert_eq!(s.header().version(), 3);
    let e: Vec<_> = s.entries().map(Result::unwrap).collect();
    assert!(e.iter().all(|e| e.id.len() == 8));
    assert_eq!(e[0].parent_id, None);
    assert_eq!(e[1].parent_id.as_deref(), Some(e[0].id.as_str()));

    let v2 = dir.path().join("v2.jsonl");
    fs::write(
        &v2,
        "{\"type\":\"session\",\"version\":2,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n\
         {\"type\":\"message\",\"id\":\"abc12345\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n\
         {\"type\":\"message\",\"id\":\"def67890\",\"parentId\":\"abc12345\",\"timestamp\":\"2025-01-01T00:00:02.000Z\",\"message\":{\"role\":\"assistant\",\"content\":[],\"timestamp\":2}}\n",
    )
    .unwrap();
    let s = Session::open(&v2, OpenMode::Write, opts()).unwrap();
    let e: Vec<_> = s.entries().map(Result::unwrap).collect();
    assert_eq!((e[0].id.as_str(), e[1].id.as_str()), ("abc12345", "def67890"));
    assert_eq!(e[1].parent_id.as_deref(), Some("abc12345"));
}

// ---- 7.6 save-entry (the context half is in arbor-context's tests) ----

#[test]
fn custom_entries_are_chained() {
    let mut s = in_memory();
    let m1 = s.append_message(user("hi")).unwrap();
    let c = s.append_custom_entry("my_data", Some(json!({"foo": "bar"}))).unwrap();
    let m2 = s.append_message(assistant("yo")).unwrap();
    assert_eq!(s.len(), 3);
    assert_eq!(s.get_entry(&c).unwrap().unwrap().parent_id.as_deref(), Some(m1.as_str()));
    assert_eq!(ids(&s.get_branch(None).unwrap()), vec![m1, c, m2]);
}

// ---- 7.7 tree-traversal ----

#[test]
fn appends_chain_and_move_the_leaf() {
    let mut s = in_memory();
    assert_eq!(s.leaf_id(), None);
    let a = s.append_message(user("1")).unwrap();
    assert_eq!(s.leaf_id(), Some(a.as_str()));
    let b = s.append_message(assistant("2")).unwrap();
    assert_eq!(s.leaf_id(), Some(b.as_str()));
    let t = s.append_thinking_level_change("high").unwrap();
    let c = s.append_message(user("3")).unwrap();
    assert_eq!(s.leaf_id(), Some(c.as_str()));
    assert_eq!(s.get_entry(&a).unwrap().unwrap().parent_id, None);
    assert_eq!(s.get_entry(&b).unwrap().unwrap().parent_id.as_deref(), Some(a.as_str()));
    assert_eq!(s.get_entry(&t).unwrap().unwrap().parent_id.as_deref(), Some(b.as_str()));
    assert_eq!(s.get_entry(&c).unwrap().unwrap().parent_id.as_deref(), Some(t.as_str()));
    assert!(s.entries().map(Result::unwrap).all(|e| !e.timestamp.is_empty()));

    let m = s.append_model_change("openai", "gpt-4").unwrap();
    let EntryKind::ModelChange(mc) = &s.get_entry(&m).unwrap().unwrap().kind else { panic!() };
    assert_eq!((mc.provider.as_ref(), mc.model_id.as_ref()), (Some(&"openai".into()), Some(&"gpt-4".into())));

    let comp = s.append_compaction("summary", &a, 1000, None, None).unwrap();
    let EntryKind::Compaction(ce) = &s.get_entry(&comp).unwrap().unwrap().kind else { panic!() };
    assert_eq!(ce.first_kept_entry_id.as_deref(), Some(a.as_str()));
    assert_eq!(ce.tokens_before.as_ref().and_then(|n| n.as_u64()), Some(1000));
    assert_eq!(s.get_entry(&comp).unwrap().unwrap().parent_id.as_deref(), Some(m.as_str()));
    let after = s.append_custom_entry("x", None).unwrap();
    assert_eq!(s.get_entry(&after).unwrap().unwrap().parent_id.as_deref(), Some(comp.as_str()));
}

#[test]
fn get_branch_cases() {
    let mut s = in_memory();
    assert!(s.get_branch(None).unwrap().is_empty());
    let a = s.append_message(user("1")).unwrap();
    assert_eq!(s.get_branch(None).unwrap().len(), 1);
    let b = s.append_message(assistant("2")).unwrap();
    let c = s.append_thinking_level_change("high").unwrap();
    let d = s.append_message(user("4")).unwrap();
    assert_eq!(ids(&s.get_branch(None).unwrap()), vec![a.clone(), b.clone(), c, d]);
    assert_eq!(ids(&s.get_branch(Some(&b)).unwrap()), vec![a, b]);
    assert!(s.get_branch(Some("unknown")).unwrap().is_empty());
}

#[test]
fn get_tree_cases() {
    let mut s = in_memory();
    assert!(s.get_tree().is_empty());
    let id1 = s.append_message(user("1")).unwrap();
    let id2 = s.append_message(assistant("2")).unwrap();
    let id3 = s.append_message(user("3")).unwrap();
    {
        let tree = s.get_tree();
        assert_eq!(tree.roots().map(Result::unwrap).len(), 1);
        let r = tree.roots().map(Result::unwrap).next().unwrap();
        let n2 = tree.children(&r).map(Result::unwrap).next().unwrap();
        let n3 = tree.children(&n2).map(Result::unwrap).next().unwrap();
        assert_eq!(
            (r.entry.id.as_str(), n2.entry.id.as_str(), n3.entry.id.as_str()),
            (id1.as_str(), id2.as_str(), id3.as_str())
        );
        assert_eq!(tree.children(&n3).map(Result::unwrap).len(), 0);
    }
    s.branch(&id2).unwrap();
    let id4 = s.append_message(user("4")).unwrap();
    let kids: Vec<String> = s.get_children(&id2).unwrap().iter().map(|e| e.id.clone()).collect();
    assert_eq!(kids, vec![id3.clone(), id4.clone()]);
    {
        let tree = s.get_tree();
        let r = tree.roots().map(Result::unwrap).next().unwrap();
        let n2 = tree.children(&r).map(Result::unwrap).next().unwrap();
        assert_eq!(
            tree.children(&n2).map(Result::unwrap).map(|n| n.entry.id.clone()).collect::<Vec<_>>(),
            vec![id3.clone(), id4]
        );
    }
    s.branch(&id2).unwrap();
    s.append_message(user("5")).unwrap();
    assert_eq!(s.get_children(&id2).unwrap().len(), 3, "three branches from id2");
}

#[test]
fn deep_branching() {
    let mut s = in_memory();
    let _n1 = s.append_message(user("1")).unwrap();
    let n2 = s.append_message(assistant("2")).unwrap();
    let n3 = s.append_message(user("3")).unwrap();
    s.append_message(assistant("4")).unwrap();
    s.branch(&n2).unwrap();
    let n5 = s.append_message(user("5")).unwrap();
    s.append_message(assistant("6")).unwrap();
    s.branch(&n5).unwrap();
    s.append_message(assistant("7")).unwrap();
    assert_eq!(s.get_children(&n2).unwrap().len(), 2);
    assert_eq!(s.get_children(&n5).unwrap().len(), 2);
    assert_eq!(s.get_children(&n3).unwrap().len(), 1);
}

#[test]
fn branch_and_branch_with_summary() {
    let mut s = in_memory();
    let id1 = s.append_message(user("1")).unwrap();
    let id2 = s.append_message(assistant("2")).unwrap();
    s.append_message(user("3")).unwrap();
    s.branch(&id1).unwrap();
    assert_eq!(s.leaf_id(), Some(id1.as_str()));
    assert_eq!(s.branch("nonexistent").unwrap_err().to_string(), "Entry nonexistent not found");
    let sib = s.append_message(assistant("sibling")).unwrap();
    assert_eq!(s.get_entry(&sib).unwrap().unwrap().parent_id.as_deref(), Some(id1.as_str()));

    let bs = s.branch_with_summary(Some(&id1), "Summary of abandoned work", None, None).unwrap();
    assert_eq!(s.leaf_id(), Some(bs.as_str()));
    let e = s.get_entry(&bs).unwrap().unwrap();
    assert_eq!(e.parent_id.as_deref(), Some(id1.as_str()));
    let EntryKind::BranchSummary(b) = &e.kind else { panic!() };
    assert_eq!(b.summary, "Summary of abandoned work");
    assert_eq!(b.from_id, id1, "fromId is the new position (pi's quirk)");
    assert!(s.branch_with_summary(Some("nope"), "x", None, None).is_err());
    let root = s.branch_with_summary(None, "at root", None, None).unwrap();
    let e = s.get_entry(&root).unwrap().unwrap();
    assert_eq!(e.parent_id, None);
    let EntryKind::BranchSummary(b) = &e.kind else { panic!() };
    assert_eq!(b.from_id, "root");
    let _ = id2;
}

#[test]
fn leaf_and_entry_accessors() {
    let mut s = in_memory();
    assert!(s.leaf_entry().unwrap().is_none());
    let a = s.append_message(user("hello")).unwrap();
    assert_eq!(s.leaf_entry().unwrap().unwrap().id, a);
    assert!(s.get_entry("nope").unwrap().is_none());
    assert_eq!(s.get_entry(&a).unwrap().unwrap().message().unwrap().message["content"], "hello");
}

#[test]
fn create_branched_session_in_memory() {
    let mut s = in_memory();
    assert!(s.create_branched_session("nope").is_err());
    let id1 = s.append_message(user("1")).unwrap();
    let id2 = s.append_message(assistant("2")).unwrap();
    let id3 = s.append_message(user("3")).unwrap();
    s.append_message(assistant("4")).unwrap();
    s.branch(&id3).unwrap();
    s.append_message(assistant("5")).unwrap();
    assert_eq!(s.create_branched_session(&id2).unwrap(), None);
    assert_eq!(ids(&s.entries().map(Result::unwrap).collect::<Vec<_>>()), vec![id1.clone(), id2.clone()]);

    let mut s = in_memory();
    let id1 = s.append_message(user("1")).unwrap();
    let id2 = s.append_message(assistant("2")).unwrap();
    s.append_message(user("3")).unwrap();
    s.branch(&id2).unwrap();
    let id4 = s.append_message(user("4")).unwrap();
    let id5 = s.append_message(assistant("5")).unwrap();
    s.create_branched_session(&id5).unwrap();
    assert_eq!(ids(&s.entries().map(Result::unwrap).collect::<Vec<_>>()), vec![id1, id2, id4, id5]);
}

#[test]
fn forking_from_the_first_message_does_not_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let o = arbor_tree::SessionOptions { session_dir: Some(dir.path().into()), ..opts() };
    let mut s = Session::create("/proj", o).unwrap();
    let id1 = s.append_message(user("1")).unwrap();
    s.append_message(assistant("2")).unwrap();
    let new_path = s.create_branched_session(&id1).unwrap().unwrap();
    assert!(!new_path.exists(), "no assistant on the path: not written yet");
    s.append_custom_entry("x", None).unwrap();
    assert!(!new_path.exists());
    s.append_message(assistant("3")).unwrap();
    let l = lines(&new_path);
    assert_eq!(l.iter().filter(|v| v["type"] == "session").count(), 1);
    let mut seen = std::collections::HashSet::new();
    assert!(l.iter().skip(1).all(|v| seen.insert(v["id"].as_str().unwrap().to_owned())), "no duplicate ids");
    assert_eq!(l.len(), 4);

    // From an assistant entry: written at once, one header.
    drop(s);
    let mut s = Session::open(
        &new_path,
        OpenMode::Write,
        arbor_tree::SessionOptions { session_dir: Some(dir.path().into()), ..opts() },
    )
    .unwrap();
    let a = s
        .entries()
        .map(Result::unwrap)
        .find(|e| e.message_role() == Some(arbor_log::Role::Assistant))
        .unwrap()
        .id
        .clone();
    let p2 = s.create_branched_session(&a).unwrap().unwrap();
    assert!(p2.exists());
    assert_eq!(lines(&p2).iter().filter(|v| v["type"] == "session").count(), 1);
}
