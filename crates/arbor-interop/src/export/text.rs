//! What an entry says, in parts a page or a document can lay out: the
//! heading, the text, thinking, tool calls and results, images.

use arbor_log::{Entry, EntryKind};
use serde_json::Value;

/// One piece of an entry's content.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// Prose (Markdown as the model or the user wrote it).
    Text(String),
    /// A model's thinking.
    Thinking(String),
    /// A tool call: its id, name and arguments (pretty JSON).
    Call { id: String, name: String, arguments: String },
    /// A tool's output (or a command's).
    Output(String),
    /// An image, by MIME type.
    Image(String),
}

/// An entry as a heading and parts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Described {
    /// `user`, `assistant`, `tool result: read`, `compaction`, `model change`, ….
    pub heading: String,
    /// The role, for a message (`user`, `assistant`, `toolResult`, …), else the entry type.
    pub kind: String,
    pub parts: Vec<Part>,
    /// True for entries that are part of what the model sees (messages and summaries).
    pub conversational: bool,
    /// True for a failed tool result.
    pub error: bool,
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn content_parts(content: Option<&Value>, as_output: bool) -> Vec<Part> {
    let text = |t: &str| if as_output { Part::Output(t.to_owned()) } else { Part::Text(t.to_owned()) };
    match content {
        Some(Value::String(s)) => vec![text(s)],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match str_of(b, "type") {
                Some("text") => str_of(b, "text").map(text),
                Some("thinking") => {
                    str_of(b, "thinking").filter(|t| !t.is_empty()).map(|t| Part::Thinking(t.to_owned()))
                }
                Some("image") => Some(Part::Image(str_of(b, "mimeType").unwrap_or("image").to_owned())),
                Some("toolCall") => Some(Part::Call {
                    id: str_of(b, "id").unwrap_or("").to_owned(),
                    name: str_of(b, "name").unwrap_or("tool").to_owned(),
                    arguments: b
                        .get("arguments")
                        .map_or_else(String::new, |a| serde_json::to_string_pretty(a).unwrap_or_default()),
                }),
                _ => None,
            })
            .collect(),
        _ => vec![],
    }
}

/// Describes an entry.
pub(crate) fn describe(e: &Entry) -> Described {
    let plain = |heading: String, kind: &str, parts: Vec<Part>, conversational: bool| Described {
        heading,
        kind: kind.to_owned(),
        parts,
        conversational,
        error: false,
    };
    match &e.kind {
        EntryKind::Message(m) => {
            let msg = &m.message;
            let role = str_of(msg, "role").unwrap_or("message");
            match role {
                "toolResult" => Described {
                    heading: format!("tool result: {}", str_of(msg, "toolName").unwrap_or("tool")),
                    kind: role.to_owned(),
                    parts: content_parts(msg.get("content"), true),
                    conversational: true,
                    error: msg.get("isError") == Some(&Value::Bool(true)),
                },
                "bashExecution" => {
                    let cmd = str_of(msg, "command").unwrap_or("");
                    let parts = vec![
                        Part::Text(format!("`$ {cmd}`")),
                        Part::Output(str_of(msg, "output").unwrap_or("").to_owned()),
                    ];
                    plain("bash".into(), role, parts, true)
                }
                "branchSummary" | "compactionSummary" => {
                    plain(role.into(), role, vec![Part::Text(str_of(msg, "summary").unwrap_or("").to_owned())], true)
                }
                _ => plain(role.to_owned(), role, content_parts(msg.get("content"), false), true),
            }
        }
        EntryKind::Compaction(c) => {
            let tokens = c.tokens_before.as_ref().map(|n| format!(" ({n} tokens before)")).unwrap_or_default();
            plain(format!("compaction{tokens}"), "compaction", vec![Part::Text(c.summary.clone())], true)
        }
        EntryKind::BranchSummary(b) => {
            plain("branch summary".into(), "branch_summary", vec![Part::Text(b.summary.clone())], true)
        }
        EntryKind::CustomMessage(c) => plain(
            format!("{} (extension message)", c.custom_type),
            "custom_message",
            content_parts(Some(&c.content), false),
            true,
        ),
        EntryKind::ModelChange(m) => {
            let (p, id) = m.default_model().unwrap_or_default();
            plain(format!("model: {p}/{id}"), "model_change", vec![], false)
        }
        EntryKind::ThinkingLevelChange(t) => plain(
            format!("thinking: {}", t.thinking_level.as_deref().unwrap_or("off")),
            "thinking_level_change",
            vec![],
            false,
        ),
        EntryKind::Label(l) => {
            let what = l.label.as_deref().map_or_else(
                || format!("label of {} cleared", l.target_id),
                |x| format!("label {x:?} on {}", l.target_id),
            );
            plain(what, "label", vec![], false)
        }
        EntryKind::SessionInfo(i) => {
            plain(format!("session name: {}", i.name.as_deref().unwrap_or("")), "session_info", vec![], false)
        }
        EntryKind::Custom(c) => plain(format!("custom: {}", c.custom_type), "custom", vec![], false),
        _ => plain(e.entry_type().to_owned(), e.entry_type(), vec![], false),
    }
}
