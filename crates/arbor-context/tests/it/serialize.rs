//! The summarizer's text helpers (docs/architecture.md, "Summaries").

use arbor_context::summary::{
    compute_file_lists, extract_file_ops_from_message, format_file_operations, serialize_conversation, FileOps,
};
use serde_json::{json, Value};

fn tool_result(text: &str) -> Value {
    json!({"role": "toolResult", "toolCallId": "c", "toolName": "bash", "content": [{"type": "text", "text": text}], "isError": false})
}

#[test]
fn long_tool_results_are_cut_at_2000_characters() {
    let out = serialize_conversation(&[tool_result(&"x".repeat(5000))]);
    assert!(out.contains("[... 3000 more characters truncated]"));
    assert_eq!(out, format!("[Tool result]: {}\n\n[... 3000 more characters truncated]", "x".repeat(2000)));
    assert_eq!(out.matches('x').count(), 2000);
}

#[test]
fn short_tool_results_are_kept_whole() {
    assert_eq!(
        serialize_conversation(&[tool_result(&"x".repeat(1500))]),
        format!("[Tool result]: {}", "x".repeat(1500))
    );
    assert_eq!(
        serialize_conversation(&[tool_result(&"x".repeat(2000))]),
        format!("[Tool result]: {}", "x".repeat(2000))
    );
}

#[test]
fn truncation_counts_utf16_code_units() {
    // 1000 emoji are 2000 code units: not cut.
    let emoji = "😀".repeat(1000);
    assert_eq!(serialize_conversation(&[tool_result(&emoji)]), format!("[Tool result]: {emoji}"));
    // 1001 emoji are 2002 code units: 1000 kept, 2 units cut.
    let out = serialize_conversation(&[tool_result(&"😀".repeat(1001))]);
    assert_eq!(out, format!("[Tool result]: {emoji}\n\n[... 2 more characters truncated]"));
    // A cut through a pair leaves one (replacement) unit, as JavaScript leaves a lone surrogate.
    let odd = format!("x{}", "😀".repeat(1000));
    let out = serialize_conversation(&[tool_result(&odd)]);
    assert_eq!(out, format!("[Tool result]: x{}\u{fffd}\n\n[... 1 more characters truncated]", "😀".repeat(999)));
}

#[test]
fn user_and_assistant_text_is_never_cut() {
    let long = "y".repeat(5000);
    let ms = [
        json!({"role": "user", "content": long}),
        json!({"role": "assistant", "content": [{"type": "text", "text": long}]}),
    ];
    assert_eq!(serialize_conversation(&ms), format!("[User]: {long}\n\n[Assistant]: {long}"));
}

#[test]
fn every_part_in_order() {
    let ms = [
        json!({"role": "user", "content": [{"type": "text", "text": "Fix "}, {"type": "image", "data": "AA", "mimeType": "image/png"}, {"type": "text", "text": "it"}]}),
        json!({"role": "user", "content": ""}),
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "On it."},
            {"type": "toolCall", "id": "1", "name": "read", "arguments": {"path": "src/a.rs", "limit": 10, "opts": {"x": [1, "two"]}}},
            {"type": "thinking", "thinking": "hmm"},
            {"type": "text", "text": "Second."},
            {"type": "thinking", "thinking": "more"},
            {"type": "toolCall", "id": "2", "name": "bash", "arguments": {}}
        ]}),
        json!({"role": "toolResult", "toolCallId": "1", "toolName": "read", "content": [{"type": "text", "text": "fn a"}, {"type": "text", "text": "() {}"}]}),
        json!({"role": "toolResult", "toolCallId": "2", "toolName": "bash", "content": [{"type": "image", "data": "AA", "mimeType": "image/png"}]}),
        json!({"role": "assistant", "content": []}),
    ];
    assert_eq!(
        serialize_conversation(&ms),
        concat!(
            "[User]: Fix it\n\n",
            "[Assistant thinking]: hmm\nmore\n\n",
            "[Assistant]: On it.\nSecond.\n\n",
            "[Assistant tool calls]: read(path=\"src/a.rs\", limit=10, opts={\"x\":[1,\"two\"]}); bash()\n\n",
            "[Tool result]: fn a() {}"
        )
    );
    assert_eq!(serialize_conversation(&[]), "");
}

fn call(name: &str, args: Value) -> Value {
    json!({"type": "toolCall", "id": "i", "name": name, "arguments": args})
}

#[test]
fn file_ops_come_from_assistant_tool_calls() {
    let mut ops = FileOps::new();
    let m = json!({"role": "assistant", "content": [
        call("read", json!({"path": "b.rs"})),
        call("read", json!({"path": "a.rs"})),
        call("read", json!({"path": "b.rs"})),
        call("write", json!({"path": "new.rs", "content": "x"})),
        call("edit", json!({"path": "a.rs", "oldText": "1", "newText": "2"})),
        call("bash", json!({"path": "ignored.rs"})),
        call("read", json!({"path": ""})),
        call("read", json!({"path": 5})),
        call("read", json!({})),
        {"type": "text", "text": "read path=x"}
    ]});
    extract_file_ops_from_message(&m, &mut ops);
    // Only assistants count.
    extract_file_ops_from_message(
        &json!({"role": "user", "content": [call("read", json!({"path": "u.rs"}))]}),
        &mut ops,
    );
    assert_eq!(ops.read.to_vec(), ["b.rs", "a.rs"]);
    assert_eq!(ops.written.to_vec(), ["new.rs"]);
    assert_eq!(ops.edited.to_vec(), ["a.rs"]);

    let (read, modified) = compute_file_lists(&ops);
    assert_eq!(read, ["b.rs"]);
    assert_eq!(modified, ["a.rs", "new.rs"]);
}

#[test]
fn file_lists_sort_in_javascript_order() {
    let mut ops = FileOps::new();
    for p in ["z", "\u{1f600}.md", "\u{ff61}.md", "B", "a"] {
        ops.read.insert(p);
    }
    let (read, modified) = compute_file_lists(&ops);
    assert_eq!(read, ["B", "a", "z", "\u{1f600}.md", "\u{ff61}.md"]);
    assert!(modified.is_empty());
}

#[test]
fn format_file_operations_sections() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(format_file_operations(&[], &[]), "");
    assert_eq!(format_file_operations(&s(&["a", "b"]), &[]), "\n\n<read-files>\na\nb\n</read-files>");
    assert_eq!(format_file_operations(&[], &s(&["c"])), "\n\n<modified-files>\nc\n</modified-files>");
    assert_eq!(
        format_file_operations(&s(&["a"]), &s(&["c", "d"])),
        "\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nc\nd\n</modified-files>"
    );
}
