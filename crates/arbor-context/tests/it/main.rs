//! The one integration test binary of `arbor-context`.

// Test helpers may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod build_context;
mod changed_behind;
mod deep_path;
mod lazy_index;
mod llm;
mod pi_compaction;
mod positions;
mod reference;
mod serialize;
mod tokens;
mod transcript;

use arbor_log::Entry;
use serde_json::{json, Value};

/// The timestamp pi's `build-context.test.ts` gives every entry.
pub const TS: &str = "2025-01-01T00:00:00Z";

/// Decodes an entry from JSON, failing the test when it is not one.
pub fn entry(v: Value) -> Entry {
    Entry::from_value(&v).unwrap_or_else(|e| panic!("not an entry: {e}: {v}"))
}

/// pi's `msg(id, parentId, role, text)` helper.
pub fn msg(id: &str, parent: Option<&str>, role: &str, text: &str) -> Entry {
    let message = if role == "user" {
        json!({"role": "user", "content": text, "timestamp": 1})
    } else {
        arbor_test_support::assistant_reply(text, "claude-test", 1, 1, 1)
    };
    entry(json!({"type": "message", "id": id, "parentId": parent, "timestamp": TS, "message": message}))
}

/// pi's `compaction(id, parentId, summary, firstKeptEntryId)` helper.
pub fn compaction(id: &str, parent: Option<&str>, summary: &str, first_kept: &str) -> Entry {
    entry(json!({"type": "compaction", "id": id, "parentId": parent, "timestamp": TS,
                 "summary": summary, "firstKeptEntryId": first_kept, "tokensBefore": 1000}))
}

/// pi's `branchSummary(id, parentId, summary, fromId)` helper.
pub fn branch_summary(id: &str, parent: Option<&str>, summary: &str, from_id: &str) -> Entry {
    entry(json!({"type": "branch_summary", "id": id, "parentId": parent, "timestamp": TS,
                 "fromId": from_id, "summary": summary}))
}

/// pi's `thinkingLevel(id, parentId, level)` helper.
pub fn thinking(id: &str, parent: Option<&str>, level: &str) -> Entry {
    entry(
        json!({"type": "thinking_level_change", "id": id, "parentId": parent, "timestamp": TS, "thinkingLevel": level}),
    )
}

/// pi's `modelChange(id, parentId, provider, modelId)` helper.
pub fn model_change(id: &str, parent: Option<&str>, provider: &str, model_id: &str) -> Entry {
    entry(json!({"type": "model_change", "id": id, "parentId": parent, "timestamp": TS,
                 "provider": provider, "modelId": model_id}))
}

/// The text a test message carries: a string content, the first text block, or a summary.
pub fn text_of(m: &Value) -> String {
    if let Some(s) = m.get("summary").and_then(Value::as_str) {
        return s.to_owned();
    }
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            blocks.iter().find_map(|b| b.get("text").and_then(Value::as_str)).unwrap_or_default().to_owned()
        }
        _ => String::new(),
    }
}

/// The roles of a message list.
pub fn roles(ms: &[Value]) -> Vec<&str> {
    ms.iter().map(|m| m["role"].as_str().unwrap_or("?")).collect()
}
