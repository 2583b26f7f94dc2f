//! One line per entry (docs/cli.md, "arbor tui"): what the tree, the tree selector and
//! `arbor dump` show for an entry, with tool calls as `[read: path:1-10]`.

use std::collections::HashMap;

use serde_json::Value;

use arbor_log::{content_text, Entry, EntryKind, Role};

/// Collapses newlines and tabs to spaces and trims.
pub fn normalize(s: &str) -> String {
    s.replace(['\n', '\t'], " ").trim().to_owned()
}

fn take_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The tool calls seen so far (`name` and `arguments`, by tool-call id), so
/// that a tool result's line can name the call it answers.
#[derive(Debug, Clone, Default)]
pub struct ToolCalls {
    calls: HashMap<String, (String, Value)>,
}

impl ToolCalls {
    /// No calls yet.
    pub fn new() -> ToolCalls {
        ToolCalls::default()
    }

    /// Records the tool calls of an assistant entry (any other entry adds nothing).
    pub fn record(&mut self, entry: &Entry) {
        let Some(m) = entry.message() else { return };
        if m.role() != Some(Role::Assistant) {
            return;
        }
        if let Some(Value::Array(blocks)) = m.message.get("content") {
            for b in blocks {
                if b.get("type").and_then(Value::as_str) == Some("toolCall") {
                    if let (Some(id), Some(name)) =
                        (b.get("id").and_then(Value::as_str), b.get("name").and_then(Value::as_str))
                    {
                        let args = b.get("arguments").cloned().unwrap_or(Value::Null);
                        self.calls.insert(id.to_owned(), (name.to_owned(), args));
                    }
                }
            }
        }
    }

    /// The name and arguments of the call with this id.
    pub fn get(&self, id: &str) -> Option<(&str, &Value)> {
        self.calls.get(id).map(|(name, args)| (name.as_str(), args))
    }
}

/// Where a tool result's line finds the call it answers: the call as
/// [`format_tool_call`] shows it, by tool-call id.
pub trait CallText {
    /// The call with this id as a row shows it, if it is known.
    fn call_text(&self, id: &str, home: Option<&str>) -> Option<String>;
}

impl CallText for ToolCalls {
    fn call_text(&self, id: &str, home: Option<&str>) -> Option<String> {
        self.get(id).map(|(name, args)| format_tool_call(name, args, home))
    }
}

/// Calls already shown as text (with the home directory they were made with).
impl<K, S> CallText for HashMap<K, String, S>
where
    K: std::borrow::Borrow<str> + std::hash::Hash + Eq,
    S: std::hash::BuildHasher,
{
    fn call_text(&self, id: &str, _home: Option<&str>) -> Option<String> {
        self.get(id).cloned()
    }
}

fn shorten_home(p: &str, home: Option<&str>) -> String {
    match home {
        Some(h) if !h.is_empty() && p.starts_with(h) => format!("~{}", &p[h.len()..]),
        _ => p.to_owned(),
    }
}

/// One tool call as the selector shows it (docs/cli.md, "arbor tui").
pub fn format_tool_call(name: &str, args: &Value, home: Option<&str>) -> String {
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    let path = || shorten_home(s("path").or_else(|| s("file_path")).unwrap_or(""), home);
    match name {
        "read" => {
            let p = path();
            let offset = args.get("offset").and_then(Value::as_i64);
            let limit = args.get("limit").and_then(Value::as_i64);
            match (offset, limit) {
                (o, Some(l)) => {
                    let start = o.unwrap_or(1);
                    format!("[read: {p}:{start}-{}]", start + l - 1)
                }
                (Some(o), None) => format!("[read: {p}:{o}]"),
                (None, None) => format!("[read: {p}]"),
            }
        }
        "write" | "edit" => format!("[{name}: {}]", path()),
        "bash" => {
            let raw = s("command").unwrap_or("");
            let cmd = take_chars(&normalize(raw), 50);
            let more = if raw.chars().count() > 50 { "..." } else { "" };
            format!("[bash: {cmd}{more}]")
        }
        "grep" => format!(
            "[grep: /{}/ in {}]",
            s("pattern").unwrap_or(""),
            s("path").map(|p| shorten_home(p, home)).unwrap_or_else(|| ".".into())
        ),
        "find" => format!(
            "[find: {} in {}]",
            s("pattern").unwrap_or(""),
            s("path").map(|p| shorten_home(p, home)).unwrap_or_else(|| ".".into())
        ),
        "ls" => format!("[ls: {}]", s("path").map(|p| shorten_home(p, home)).unwrap_or_else(|| ".".into())),
        _ => {
            let json = arbor_log::json::to_string(args).unwrap_or_default();
            let more = if json.chars().count() > 40 { "..." } else { "" };
            format!("[{name}: {}{more}]", take_chars(&json, 40))
        }
    }
}

/// The one-line text of an entry (docs/cli.md, "arbor tui", with Arbor's `[session name: …]` and `[<type>]` rows).
pub fn entry_text(entry: &Entry, calls: &dyn CallText, home: Option<&str>) -> String {
    let clip = |s: &str| take_chars(&normalize(s), 200);
    match &entry.kind {
        EntryKind::Message(m) => {
            let msg = &m.message;
            match m.role() {
                Some(Role::User) => format!("user: {}", clip(&content_text(msg.get("content"), ""))),
                Some(Role::Assistant) => {
                    let text = clip(&content_text(msg.get("content"), ""));
                    if !text.is_empty() {
                        return format!("assistant: {text}");
                    }
                    let stop = msg.get("stopReason").and_then(Value::as_str);
                    if stop == Some("aborted") {
                        return "assistant: (aborted)".into();
                    }
                    match msg.get("errorMessage").and_then(Value::as_str) {
                        Some(err) if !err.is_empty() => format!("assistant: {}", take_chars(&normalize(err), 80)),
                        _ => "assistant: (no content)".into(),
                    }
                }
                Some(Role::ToolResult) => {
                    let id = msg.get("toolCallId").and_then(Value::as_str).unwrap_or("");
                    match calls.call_text(id, home) {
                        Some(text) => text,
                        None => match msg.get("toolName").and_then(Value::as_str) {
                            Some(n) => format!("[{n}]"),
                            None => "[tool]".into(),
                        },
                    }
                }
                Some(Role::BashExecution) => {
                    format!("[bash]: {}", clip(msg.get("command").and_then(Value::as_str).unwrap_or("")))
                }
                Some(role) => format!("[{role}]"),
                None => "[message]".into(),
            }
        }
        EntryKind::CustomMessage(c) => format!("[{}]: {}", c.custom_type, clip(&content_text(c.content.as_ref(), ""))),
        EntryKind::Compaction(c) => {
            let tokens = c.tokens_before.as_ref().and_then(|n| n.as_f64()).unwrap_or(0.0);
            format!("[compaction: {}k tokens]", (tokens / 1000.0).round() as i64)
        }
        EntryKind::BranchSummary(b) => format!("[branch summary]: {}", clip(&b.summary)),
        EntryKind::ModelChange(m) => {
            let id = m.model_text().unwrap_or_default();
            format!("[model: {id}]")
        }
        EntryKind::ThinkingLevelChange(t) => {
            format!(
                "[thinking: {}]",
                t.thinking_level
                    .as_ref()
                    .filter(|l| !l.is_null())
                    .map_or_else(|| "off".to_owned(), arbor_log::json::text)
            )
        }
        EntryKind::Custom(c) => format!("[custom: {}]", c.custom_type),
        EntryKind::Label(l) => {
            format!("[label: {}]", l.text().unwrap_or_else(|| "(cleared)".to_owned()))
        }
        EntryKind::SessionInfo(s) => format!("[session name: {}]", clip(s.name.as_deref().unwrap_or(""))),
        EntryKind::TtsrInjection(_) => "[ttsr injection]".into(),
        EntryKind::ModeChange(m) => format!("[mode: {}]", m.mode),
        EntryKind::Unknown { entry_type, .. } | EntryKind::Malformed { entry_type, .. } => {
            format!("[{}]", entry_type.as_str().replace('_', " "))
        }
    }
}
