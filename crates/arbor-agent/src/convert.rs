//! Entries as the agent messages that summaries and compaction read (pi's
//! `getMessageFromEntry` and the `create*Message` helpers).

use arbor_log::{parse_iso_ms, Entry, EntryKind};
use serde_json::{Map, Value};

/// The entry's ISO time as JavaScript's `new Date(ts).getTime()`: ms, or `null` for NaN.
pub(crate) fn timestamp_ms(ts: &str) -> Value {
    parse_iso_ms(ts).map_or(Value::Null, Value::from)
}

/// The message an entry stands for in compaction (spec 5.6.4 step 5):
/// `message` → its message (tool results included), `custom_message` → a
/// `custom` message, `branch_summary` → `branchSummary`, `compaction` →
/// `compactionSummary`; every other entry → none.
pub(crate) fn entry_message(entry: &Entry) -> Option<Value> {
    match &entry.kind {
        EntryKind::Message(m) => Some(m.message.clone()),
        EntryKind::CustomMessage(c) => {
            let mut m = Map::new();
            m.insert("role".into(), "custom".into());
            m.insert("customType".into(), c.custom_type.clone().into());
            m.insert("content".into(), c.content.clone());
            m.insert("display".into(), c.display.into());
            if let Some(details) = &c.details {
                m.insert("details".into(), details.clone());
            }
            m.insert("timestamp".into(), timestamp_ms(&entry.timestamp));
            Some(Value::Object(m))
        }
        EntryKind::BranchSummary(b) => {
            let mut m = Map::new();
            m.insert("role".into(), "branchSummary".into());
            m.insert("summary".into(), b.summary.clone().into());
            m.insert("fromId".into(), b.from_id.clone().into());
            m.insert("timestamp".into(), timestamp_ms(&entry.timestamp));
            Some(Value::Object(m))
        }
        EntryKind::Compaction(c) => {
            let mut m = Map::new();
            m.insert("role".into(), "compactionSummary".into());
            m.insert("summary".into(), c.summary.clone().into());
            if let Some(tokens) = &c.tokens_before {
                m.insert("tokensBefore".into(), Value::Number(tokens.clone()));
            }
            m.insert("timestamp".into(), timestamp_ms(&entry.timestamp));
            Some(Value::Object(m))
        }
        _ => None,
    }
}

/// The text a user message or `custom_message` pre-fills the editor with:
/// string content, or the text blocks joined with `""`.
pub(crate) fn editor_text(entry: &Entry) -> Option<String> {
    match &entry.kind {
        EntryKind::Message(m) if m.role() == Some("user") => Some(arbor_tree::message_text(&m.message, "")),
        EntryKind::CustomMessage(c) => Some(arbor_tree::content_text(Some(&c.content), "")),
        _ => None,
    }
}

/// The text blocks of an assistant message joined with `sep`.
pub(crate) fn assistant_text(message: &Value, sep: &str) -> String {
    let parts: Vec<&str> = message
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    parts.join(sep)
}

/// A `{role:"user", content:[{type:"text", text}], timestamp}` message.
pub(crate) fn user_text_message(text: String, timestamp: i64) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), "text".into());
    block.insert("text".into(), text.into());
    let mut m = Map::new();
    m.insert("role".into(), "user".into());
    m.insert("content".into(), Value::Array(vec![Value::Object(block)]));
    m.insert("timestamp".into(), timestamp.into());
    Value::Object(m)
}
