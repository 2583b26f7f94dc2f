//! The searchable text of an entry: what a person would look for in it.
//!
//! Messages give their text blocks, thinking, tool calls (the tool's name and
//! the text of its arguments) and tool output; `!` commands their command and
//! output; summaries, custom messages, labels and session names their text.
//! Settings entries (model, thinking level, `custom` data) have none.

use serde_json::Value;

use crate::message::MessageView;
use crate::vocab::{EntryType, Role};

/// The searchable text of an entry line's parsed value (empty when it has none).
pub fn searchable_text(entry: &Value) -> String {
    let mut out = String::new();
    let field = |k: &str| entry.get(k).and_then(Value::as_str);
    match EntryType::parse(field("type").unwrap_or_default()) {
        EntryType::Message => {
            if let Some(m) = entry.get("message") {
                message_text(m, &mut out);
            }
        }
        EntryType::CustomMessage => content(entry.get("content"), &mut out),
        EntryType::BranchSummary | EntryType::Compaction => push(&mut out, field("summary")),
        EntryType::SessionInfo => push(&mut out, field("name")),
        EntryType::Label => push(&mut out, field("label")),
        EntryType::ThinkingLevelChange
        | EntryType::ModelChange
        | EntryType::Custom
        | EntryType::TtsrInjection
        | EntryType::ModeChange
        | EntryType::Other(_) => {}
    }
    out
}

fn message_text(m: &Value, out: &mut String) {
    let field = |k: &str| m.get(k).and_then(Value::as_str);
    if MessageView::new(m).role() == Some(Role::BashExecution) {
        push(out, field("command"));
        push(out, field("output"));
        return;
    }
    content(m.get("content"), out);
    push(out, field("errorMessage"));
}

/// A `content` value: a string, or blocks of text, thinking and tool calls.
fn content(c: Option<&Value>, out: &mut String) {
    match c {
        Some(Value::String(s)) => push(out, Some(s)),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                let field = |k: &str| b.get(k).and_then(Value::as_str);
                match field("type") {
                    Some("text") => push(out, field("text")),
                    Some("thinking") => push(out, field("thinking")),
                    Some("toolCall") => {
                        push(out, field("name"));
                        if let Some(args) = b.get("arguments") {
                            strings(args, out);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// Every string inside a value (a tool call's arguments), depth first, without recursion.
fn strings(v: &Value, out: &mut String) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => push(out, Some(s)),
            Value::Array(a) => stack.extend(a.iter().rev()),
            Value::Object(o) => stack.extend(o.values().rev()),
            _ => {}
        }
    }
}

/// Appends a piece of text on its own line; a lone surrogate is searched and shown as U+FFFD.
fn push(out: &mut String, s: Option<&str>) {
    if let Some(s) = s.filter(|s| !s.is_empty()) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&crate::json::display(s));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn what_each_kind_of_entry_gives() {
        let cases = [
            (json!({"type":"message","message":{"role":"user","content":"plain"}}), "plain"),
            (
                json!({"type":"message","message":{"role":"assistant","content":[
                    {"type":"thinking","thinking":"hmm"},{"type":"text","text":"done"},
                    {"type":"toolCall","name":"bash","arguments":{"command":"cargo test","timeout":5}},
                    {"type":"image","data":"AAAA"}]}}),
                "hmm\ndone\nbash\ncargo test",
            ),
            (
                json!({"type":"message","message":{"role":"assistant","content":[],"errorMessage":"overloaded"}}),
                "overloaded",
            ),
            (json!({"type":"message","message":{"role":"toolResult","content":[{"type":"text","text":"out"}]}}), "out"),
            (json!({"type":"message","message":{"role":"bashExecution","command":"ls","output":"a b"}}), "ls\na b"),
            (json!({"type":"custom_message","content":"note"}), "note"),
            (json!({"type":"branch_summary","summary":"left"}), "left"),
            (json!({"type":"compaction","summary":"older"}), "older"),
            (json!({"type":"session_info","name":"my work"}), "my work"),
            (json!({"type":"label","label":"checkpoint"}), "checkpoint"),
            (json!({"type":"model_change","provider":"p","modelId":"m"}), ""),
            (json!({"type":"message","message":"not an object"}), ""),
        ];
        for (entry, want) in cases {
            assert_eq!(searchable_text(&entry), want, "{entry}");
        }
    }
}
