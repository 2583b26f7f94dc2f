//! An entry's whole text for a model (`read_entries`): every text block,
//! thinking, tool call (its arguments as JSON) and tool result, nothing cut;
//! and a context's messages as the summarizer reads them (`read_context`).

use serde_json::Value;

use arbor_context::convert_to_llm;
use arbor_context::summary::serialize_conversation;
use arbor_log::{EntryType, MessageView, Role};

/// The whole text of an entry line's parsed value: a message's parts one
/// block a paragraph, a summary's text, a setting's value.
pub fn entry_text(entry: &Value) -> String {
    let field = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or_default();
    match EntryType::parse(field("type")) {
        EntryType::Message => entry.get("message").map(message_text).unwrap_or_default(),
        EntryType::CustomMessage => {
            format!("[{}] {}", field("customType"), content_text(entry.get("content")))
        }
        EntryType::BranchSummary | EntryType::Compaction => field("summary").to_owned(),
        EntryType::SessionInfo => format!("session name: {}", field("name")),
        EntryType::Label => match entry.get("label").and_then(Value::as_str) {
            Some(l) => format!("label {l:?} on {}", field("targetId")),
            None => format!("label cleared on {}", field("targetId")),
        },
        EntryType::ModelChange => format!("model: {}/{}", field("provider"), field("modelId")),
        EntryType::ThinkingLevelChange => format!("thinking level: {}", field("thinkingLevel")),
        EntryType::Custom => {
            let data = entry.get("data").map(Value::to_string).unwrap_or_default();
            format!("[{}] {data}", field("customType"))
        }
        EntryType::TtsrInjection | EntryType::ModeChange | EntryType::Other(_) => {
            let mut v = entry.clone();
            if let Some(o) = v.as_object_mut() {
                for k in ["type", "id", "parentId", "timestamp"] {
                    o.remove(k);
                }
            }
            v.to_string()
        }
    }
}

/// A message's whole text.
fn message_text(m: &Value) -> String {
    let field = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut parts: Vec<String> = Vec::new();
    match MessageView::new(m).role() {
        Some(Role::BashExecution) => {
            parts.push(format!("$ {}", field("command")));
            parts.push(field("output").to_owned());
        }
        Some(Role::ToolResult) => {
            let err = if m.get("isError").and_then(Value::as_bool) == Some(true) { " (error)" } else { "" };
            parts.push(format!("← {}{err}:", field("toolName")));
            parts.push(content_text(m.get("content")));
        }
        Some(Role::BranchSummary | Role::CompactionSummary) => parts.push(field("summary").to_owned()),
        _ => blocks(m.get("content"), &mut parts),
    }
    if let Some(e) = m.get("errorMessage").and_then(Value::as_str) {
        parts.push(format!("(error) {e}"));
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

/// The blocks of a `content`: text, `[thinking] …`, `→ name {args}`.
fn blocks(content: Option<&Value>, parts: &mut Vec<String>) {
    match content {
        Some(Value::String(s)) => parts.push(s.clone()),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                let field = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or_default();
                match field("type") {
                    "text" => parts.push(field("text").to_owned()),
                    "thinking" => parts.push(format!("[thinking] {}", field("thinking"))),
                    "toolCall" => {
                        let args = b.get("arguments").map(Value::to_string).unwrap_or_default();
                        parts.push(format!("→ {} {args}", field("name")));
                    }
                    "image" => parts.push("[image]".to_owned()),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// A `content`'s text blocks (a string content as it is).
fn content_text(content: Option<&Value>) -> String {
    let mut parts = Vec::new();
    blocks(content, &mut parts);
    parts.join("\n")
}

/// One message of a context as the model saw it, as text: pi's mapping for
/// the model, then the summarizer's serialization (`[User]: …`,
/// `[Assistant]: …`, `[Assistant tool calls]: …`, `[Tool result]: …`, tool
/// results cut at 2,000 characters). Empty for a message the model never sees.
pub fn context_message_text(m: &Value) -> String {
    serialize_conversation(&convert_to_llm(std::slice::from_ref(m)))
}

/// True for the compaction summary a context starts with.
pub fn is_compaction_summary(m: &Value) -> bool {
    MessageView::new(m).role() == Some(Role::CompactionSummary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_keeps_its_tool_calls_and_results_whole() {
        let long = "x".repeat(5000);
        let call = json!({"type": "message", "id": "a", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "reading"},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/main.rs"}}]}});
        let t = entry_text(&call);
        assert!(t.contains("reading") && t.contains("→ read {\"path\":\"src/main.rs\"}"), "{t}");
        let result = json!({"type": "message", "id": "b", "message": {"role": "toolResult", "toolName": "read",
            "isError": true, "content": [{"type": "text", "text": long}]}});
        let t = entry_text(&result);
        assert!(t.starts_with("← read (error):") && t.contains(&long), "the result is whole");
    }
}
