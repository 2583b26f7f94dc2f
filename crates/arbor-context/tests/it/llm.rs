//! `convert_to_llm` (docs/architecture.md, "Building the context"): every role and every bash variant.

use arbor_context::convert_to_llm;
use arbor_context::messages::{bash_execution_to_text, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_SUFFIX};
use serde_json::{json, Value};

fn one(m: Value) -> Option<Value> {
    let out = convert_to_llm(&[m]);
    assert!(out.len() <= 1);
    out.into_iter().next()
}

fn user_text(text: &str, ts: i64) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})
}

#[test]
fn user_assistant_and_tool_results_pass_through_unchanged() {
    let ms = [
        json!({"role": "user", "content": "hi", "timestamp": 1, "extra": {"kept": true}}),
        json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}, {"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": "a"}}],
               "provider": "p", "model": "m", "usage": {"input": 1}, "stopReason": "toolUse", "timestamp": 2}),
        json!({"role": "toolResult", "toolCallId": "c", "toolName": "read", "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}], "isError": false, "timestamp": 3}),
    ];
    let out = convert_to_llm(&ms);
    assert_eq!(out, ms);
    assert_eq!(serde_json::to_string(&out).unwrap(), serde_json::to_string(&ms).unwrap(), "key order kept");
}

#[test]
fn other_roles_are_dropped() {
    let ms = [
        json!({"role": "fileMention", "files": [], "timestamp": 1}),
        json!({"role": "hookMessage", "customType": "x", "content": "c", "display": true, "timestamp": 1}),
        json!({"role": "developer", "content": "d"}),
        json!({"content": "no role"}),
        json!("not an object"),
    ];
    assert_eq!(convert_to_llm(&ms), Vec::<Value>::new());
}

#[test]
fn custom_messages_become_user_messages_even_when_hidden() {
    assert_eq!(
        one(
            json!({"role": "custom", "customType": "ext", "content": "note", "display": false, "details": {"x": 1}, "timestamp": 7})
        ),
        Some(user_text("note", 7))
    );
    let blocks = json!([{"type": "text", "text": "look"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]);
    assert_eq!(
        one(json!({"role": "custom", "customType": "ext", "content": blocks, "display": true, "timestamp": 8})),
        Some(json!({"role": "user", "content": blocks, "timestamp": 8}))
    );
}

#[test]
fn summaries_use_pi_wrappers_exactly() {
    assert_eq!(BRANCH_SUMMARY_SUFFIX, "</summary>");
    assert_eq!(COMPACTION_SUMMARY_SUFFIX, "\n</summary>");
    assert_eq!(
        one(json!({"role": "branchSummary", "summary": "Went left.", "fromId": "abc", "timestamp": 5})),
        Some(user_text(
            "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nWent left.</summary>",
            5
        ))
    );
    assert_eq!(
        one(json!({"role": "compactionSummary", "summary": "Did X.", "tokensBefore": 100, "timestamp": 6})),
        Some(user_text(
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\nDid X.\n</summary>",
            6
        ))
    );
    // A NaN timestamp (null in JSON) stays null.
    let out = one(json!({"role": "compactionSummary", "summary": "s", "tokensBefore": 1, "timestamp": null})).unwrap();
    assert_eq!(out["timestamp"], Value::Null);
}

fn bash(extra: Value) -> Value {
    let mut m = json!({"role": "bashExecution", "command": "ls -la", "output": "a\nb", "exitCode": 0,
                       "cancelled": false, "truncated": false, "timestamp": 9});
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() && k != "exitCode" {
            m.as_object_mut().unwrap().shift_remove(k);
        } else {
            m[k] = v.clone();
        }
    }
    m
}

#[test]
fn bash_execution_text_in_every_variant() {
    let cases: [(Value, &str); 11] = [
        (json!({}), "Ran `ls -la`\n```\na\nb\n```"),
        (json!({"output": ""}), "Ran `ls -la`\n(no output)"),
        (json!({"output": null}), "Ran `ls -la`\n(no output)"),
        (json!({"exitCode": 2}), "Ran `ls -la`\n```\na\nb\n```\n\nCommand exited with code 2"),
        (json!({"exitCode": -1, "output": ""}), "Ran `ls -la`\n(no output)\n\nCommand exited with code -1"),
        (json!({"exitCode": null}), "Ran `ls -la`\n```\na\nb\n```"),
        (json!({"cancelled": true, "exitCode": 130}), "Ran `ls -la`\n```\na\nb\n```\n\n(command cancelled)"),
        (
            json!({"truncated": true, "fullOutputPath": "/tmp/out.log", "exitCode": 1}),
            "Ran `ls -la`\n```\na\nb\n```\n\nCommand exited with code 1\n\n[Output truncated. Full output: /tmp/out.log]",
        ),
        (json!({"truncated": true}), "Ran `ls -la`\n```\na\nb\n```"),
        (json!({"truncated": false, "fullOutputPath": "/tmp/out.log"}), "Ran `ls -la`\n```\na\nb\n```"),
        (
            json!({"cancelled": true, "truncated": true, "fullOutputPath": "/p", "output": ""}),
            "Ran `ls -la`\n(no output)\n\n(command cancelled)\n\n[Output truncated. Full output: /p]",
        ),
    ];
    for (extra, want) in cases {
        let m = bash(extra.clone());
        assert_eq!(bash_execution_to_text(&m), want, "{extra}");
        assert_eq!(one(m), Some(user_text(want, 9)), "{extra}");
    }
    // A missing exit code is like null.
    let mut m = bash(json!({}));
    m.as_object_mut().unwrap().shift_remove("exitCode");
    assert_eq!(bash_execution_to_text(&m), "Ran `ls -la`\n```\na\nb\n```");
}

#[test]
fn excluded_bash_executions_are_dropped() {
    assert_eq!(one(bash(json!({"excludeFromContext": true}))), None);
    assert!(one(bash(json!({"excludeFromContext": false}))).is_some());
}

#[test]
fn produced_messages_are_role_content_timestamp() {
    let out = one(bash(json!({}))).unwrap();
    let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["role", "content", "timestamp"]);
}
