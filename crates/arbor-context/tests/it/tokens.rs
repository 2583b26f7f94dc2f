//! Token estimation (docs/architecture.md, "Compacting").

use arbor_context::{calculate_context_tokens, estimate_context_tokens, estimate_tokens, ContextTokens};
use serde_json::{json, Value};

fn image() -> Value {
    json!({"type": "image", "data": "AAAA".repeat(1000), "mimeType": "image/png"})
}

#[test]
fn user_messages_count_text_but_not_images() {
    assert_eq!(estimate_tokens(&json!({"role": "user", "content": "12345678"})), 2);
    assert_eq!(estimate_tokens(&json!({"role": "user", "content": "123456789"})), 3);
    assert_eq!(estimate_tokens(&json!({"role": "user", "content": ""})), 0);
    let blocks =
        json!({"role": "user", "content": [{"type": "text", "text": "abcd"}, image(), {"type": "text", "text": "e"}]});
    assert_eq!(estimate_tokens(&blocks), 2);
}

#[test]
fn lengths_are_utf16_code_units() {
    // 4 emoji are 8 code units (16 UTF-8 bytes, 4 chars).
    assert_eq!(estimate_tokens(&json!({"role": "user", "content": "😀😀😀😀"})), 2);
    // 8 accented letters are 8 code units (16 bytes).
    assert_eq!(estimate_tokens(&json!({"role": "user", "content": "éééééééé"})), 2);
    assert_eq!(estimate_tokens(&json!({"role": "compactionSummary", "summary": "😀", "tokensBefore": 1})), 1);
}

#[test]
fn assistant_messages_count_text_thinking_and_tool_calls() {
    let m = json!({"role": "assistant", "content": [
        {"type": "text", "text": "1234"},
        {"type": "thinking", "thinking": "12345678"},
        // name (4) + JSON.stringify of the arguments: {"path":"a.rs","n":1} (21).
        {"type": "toolCall", "id": "x", "name": "read", "arguments": {"path": "a.rs", "n": 1.0}},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    ], "provider": "p", "model": "m", "usage": {}, "stopReason": "stop", "timestamp": 1});
    assert_eq!(estimate_tokens(&m), (4 + 8 + 4 + 21_u64).div_ceil(4));
}

#[test]
fn tool_call_arguments_are_measured_as_javascript_prints_them() {
    // JS puts index-like keys first and escapes control characters as \u00xx.
    let m = json!({"role": "assistant", "content": [
        {"type": "toolCall", "id": "x", "name": "", "arguments": {"b": "\u{1}", "1": true}}
    ]});
    // {"1":true,"b":"\u0001"} is 23 code units.
    assert_eq!(estimate_tokens(&m), 23_u64.div_ceil(4));
}

#[test]
fn custom_and_tool_results_count_images_as_4800_characters() {
    let tr = json!({"role": "toolResult", "toolCallId": "c", "toolName": "read",
                    "content": [{"type": "text", "text": "1234"}, image(), image()], "isError": false});
    assert_eq!(estimate_tokens(&tr), (4 + 9600_u64).div_ceil(4));
    let custom = json!({"role": "custom", "customType": "x", "content": [image()], "display": true});
    assert_eq!(estimate_tokens(&custom), 1200);
    let custom_str = json!({"role": "custom", "customType": "x", "content": "12345", "display": true});
    assert_eq!(estimate_tokens(&custom_str), 2);
}

#[test]
fn other_roles() {
    assert_eq!(estimate_tokens(&json!({"role": "bashExecution", "command": "ls", "output": "abcdef"})), 2);
    assert_eq!(estimate_tokens(&json!({"role": "branchSummary", "summary": "12345", "fromId": "x"})), 2);
    assert_eq!(estimate_tokens(&json!({"role": "fileMention", "files": [{"content": "a long text"}]})), 0);
    assert_eq!(estimate_tokens(&json!({"role": "hookMessage", "content": "text"})), 0);
}

#[test]
fn context_tokens_from_usage() {
    assert_eq!(
        calculate_context_tokens(&json!({"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 50})),
        50
    );
    assert_eq!(calculate_context_tokens(&json!({"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4})), 10);
    assert_eq!(
        calculate_context_tokens(&json!({"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 0})),
        10
    );
}

fn assistant(stop: &str, total: u64) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": "12345678"}], "provider": "p", "model": "m",
           "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total},
           "stopReason": stop, "timestamp": 1})
}

#[test]
fn context_estimate_uses_the_last_good_usage_plus_trailing_messages() {
    let user = json!({"role": "user", "content": "1234"});
    assert_eq!(
        estimate_context_tokens(&[user.clone(), user.clone()]),
        ContextTokens { tokens: 2, usage_tokens: 0, trailing_tokens: 2, last_usage_index: None }
    );
    let ms = [
        user.clone(),
        assistant("stop", 100),
        user.clone(),
        assistant("aborted", 500),
        assistant("error", 700),
        user.clone(),
    ];
    // The aborted and errored messages are estimated (2 tokens each), not trusted.
    assert_eq!(
        estimate_context_tokens(&ms),
        ContextTokens { tokens: 100 + 1 + 2 + 2 + 1, usage_tokens: 100, trailing_tokens: 6, last_usage_index: Some(1) }
    );
    assert_eq!(
        estimate_context_tokens(&[]),
        ContextTokens { tokens: 0, usage_tokens: 0, trailing_tokens: 0, last_usage_index: None }
    );
}

#[test]
fn a_huge_usage_saturates_instead_of_overflowing() {
    // Found by `cargo xtask fuzz` (tree_context): fixtures/fuzz/huge-usage-tokens.jsonl.
    let messages = vec![
        serde_json::json!({"role": "assistant", "content": [], "stopReason": "stop",
                           "usage": {"totalTokens": 5.1e104}}),
        serde_json::json!({"role": "user", "content": "after", "timestamp": 1}),
    ];
    let t = arbor_context::estimate_context_tokens(&messages);
    assert_eq!(t.usage_tokens, u64::MAX);
    assert_eq!(t.tokens, u64::MAX);
}

#[test]
fn after_a_compaction_an_older_usage_is_not_the_current_size() {
    let summary = json!({"role": "compactionSummary", "summary": "12345678", "tokensBefore": 9000, "timestamp": 100});
    let kept = json!({"role": "assistant", "content": [{"type": "text", "text": "1234"}], "stopReason": "stop",
        "usage": {"totalTokens": 9000}, "timestamp": 50});
    let user = json!({"role": "user", "content": "12345678", "timestamp": 120});
    // pi's estimate still counts the usage measured before the compaction…
    assert_eq!(estimate_context_tokens(&[summary.clone(), kept.clone(), user.clone()]).tokens, 9002);
    // …the current size does not: 2 + 1 + 2 tokens of text.
    let now = arbor_context::current_context_tokens(&[summary.clone(), kept.clone(), user.clone()]);
    assert_eq!((now.tokens, now.last_usage_index), (5, None));
    // A reply after the compaction measures the context again.
    let newer = json!({"role": "assistant", "content": [], "stopReason": "stop", "usage": {"totalTokens": 40}, "timestamp": 130});
    let now = arbor_context::current_context_tokens(&[summary.clone(), kept.clone(), user.clone(), newer, user]);
    assert_eq!((now.tokens, now.last_usage_index), (42, Some(3)));
    // Without a compaction it is pi's estimate.
    let alone = [kept];
    assert_eq!(arbor_context::current_context_tokens(&alone), estimate_context_tokens(&alone));
}
