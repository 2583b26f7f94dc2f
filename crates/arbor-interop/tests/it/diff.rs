//! `arbor diff` on sessions whose answers are known.

use arbor_interop::{diff, Format};

use crate::{fixtures, import, open, transcript};

#[test]
fn the_demos_two_branches() {
    let s = open(&fixtures().join("demo/demo.jsonl"));
    let d = diff(&s, "6a490938", "4f487dd5").unwrap();
    // Both branches leave the first answer; the leaf's side went through a summary and a compaction.
    assert_eq!(d.common_ancestor.as_deref(), Some("f4e8d0fa"));
    assert_eq!(d.a.entries.len(), 20);
    assert_eq!(d.b.entries, ["0866b2b1", "a3b3dbef", "c0e69315", "14756572", "0b481fc7", "4f487dd5"]);
    assert_eq!(d.b.files_read, ["Cargo.toml"]);
    assert_eq!(d.b.files_modified, ["src/main.rs"]);
    assert_eq!(d.a.files_modified, ["README.md", "src/main.rs"]);
    let names: Vec<&str> = d.b.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["read", "edit", "bash"]);
    assert_eq!(d.a.messages["compactionSummary"], 1);
    assert_eq!(d.a.messages["branchSummary"], 1);
    assert_eq!(d.b.messages["user"], 1);
    // The context at the leaf starts at the compaction: fewer messages than the other side's.
    assert_eq!((d.a.context.messages, d.b.context.messages), (10, 13));
    assert_eq!((d.a.context.tokens, d.b.context.tokens), (2015, 5605), "what arbor context reports");
    insta::assert_json_snapshot!(d);
}

#[test]
fn an_entry_and_its_ancestor() {
    let s = open(&fixtures().join("demo/demo.jsonl"));
    let d = diff(&s, "f4e8d0fa", "4f487dd5").unwrap();
    assert_eq!(d.common_ancestor.as_deref(), Some("f4e8d0fa"));
    assert!(d.a.entries.is_empty() && d.a.tool_calls.is_empty() && d.a.added.replies == 0);
    assert_eq!(d.b.entries.len(), 6);
    let same = diff(&s, "4f487dd5", "4f487dd5").unwrap();
    assert_eq!(same.common_ancestor.as_deref(), Some("4f487dd5"));
    assert!(same.a.entries.is_empty() && same.b.entries.is_empty());
    assert_eq!(same.a.context, same.b.context);
}

#[test]
fn an_unknown_entry_is_an_error_naming_it() {
    let s = open(&fixtures().join("demo/demo.jsonl"));
    let e = diff(&s, "6a490938", "nothere").unwrap_err().to_string();
    assert!(e.ends_with("demo.jsonl: Entry nothere not found"), "{e}");
}

#[test]
fn the_two_branches_of_an_imported_claude_rewind() {
    let root = tempfile::tempdir().unwrap();
    let r = import(Format::Claude, &[transcript("claude/branches.jsonl")], root.path());
    let s = open(&r[0].sessions[0].path);
    // The leaves of the two branches: the label entry ends the rewind's branch, the first branch ends at its answer.
    let first = s
        .entries()
        .map(Result::unwrap)
        .find(|e| e.message().is_some_and(|m| m.message.to_string().contains("Should I strip it?")))
        .unwrap();
    let d = diff(&s, &first.id, s.leaf_id().unwrap()).unwrap();
    let ancestor = s.get_entry(d.common_ancestor.as_deref().unwrap()).unwrap().unwrap();
    assert_eq!(ancestor.entry_type(), arbor_log::EntryType::Custom, "the snapshot taken before both prompts");
    let a: Vec<&str> = d.a.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(a, ["Bash", "Grep"]);
    let b: Vec<&str> = d.b.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(b, ["Bash"]);
    assert_eq!(d.a.messages["user"], 1);
    assert_eq!(d.a.messages["toolResult"], 2);
    assert_eq!(d.b.messages["user"], 4);
    // Both sides share the first exchange, which read and edited src/main.rs; neither side touches a file itself.
    assert!(d.a.files_read.is_empty() && d.a.files_modified.is_empty());
    // Claude Code's usage: input + output + cache reads and writes of the replies after the ancestor.
    assert_eq!(d.a.added.replies, 2);
    assert_eq!(d.a.added.input + d.a.added.output, 1600 + 104 + 2 + 31);
}
