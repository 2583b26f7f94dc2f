//! One line per entry (docs/cli.md, "arbor tui"): what the tree, the tree selector and
//! `arbor dump` show for an entry, with tool calls as `[read: path:1-10]`.

use std::collections::HashMap;

use serde_json::Value;

use arbor_log::messages::content_text;
use arbor_log::{Entry, EntryKind, Role};

/// Collapses newlines and tabs to spaces and trims.
pub fn normalize(s: &str) -> String {
    s.replace(['\n', '\t'], " ").trim().to_owned()
}

fn take_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The tool calls seen so far (by tool-call id), so that a tool result's
/// line can name the call it answers. Each is kept as the row shows it
/// (`CallRow`), not with its arguments: a `write` call's arguments hold the
/// whole file, and a path of a million entries sees hundreds of thousands of calls.
#[derive(Debug, Clone, Default)]
pub struct ToolCalls {
    calls: HashMap<String, CallRow>,
}

/// A tool call as its row shows it, short of the home directory (which
/// shortens the paths when the row is written): [`format_tool_call`] in two steps.
#[derive(Debug, Clone, PartialEq)]
enum CallRow {
    /// `read`: the path, and the lines read.
    Read { path: String, offset: Option<i64>, limit: Option<i64> },
    /// A call whose row is `[name: path]` (`write`, `edit`).
    Path { name: String, path: String },
    /// `grep` or `find`: `[name: /pattern/ in path]` (`.` without a path).
    Search { name: &'static str, pattern: String, path: Option<String> },
    /// `ls`: `[ls: path]` (`.` without one).
    Ls { path: Option<String> },
    /// A row that names no path (`bash`, any other tool): as written.
    Text(String),
}

impl CallRow {
    /// The row of a call of `name` with `args`.
    fn of(name: &str, args: &Value) -> CallRow {
        let s = |k: &str| args.get(k).and_then(Value::as_str);
        let path = || s("path").or_else(|| s("file_path")).unwrap_or("").to_owned();
        match name {
            "read" => CallRow::Read {
                path: path(),
                offset: args.get("offset").and_then(Value::as_i64),
                limit: args.get("limit").and_then(Value::as_i64),
            },
            "write" | "edit" => CallRow::Path { name: name.to_owned(), path: path() },
            "bash" => {
                let raw = s("command").unwrap_or("");
                let cmd = take_chars(&normalize(raw), 50);
                let more = if raw.chars().count() > 50 { "..." } else { "" };
                CallRow::Text(format!("[bash: {cmd}{more}]"))
            }
            "grep" | "find" => CallRow::Search {
                name: if name == "grep" { "grep" } else { "find" },
                pattern: s("pattern").unwrap_or("").to_owned(),
                path: s("path").map(str::to_owned),
            },
            "ls" => CallRow::Ls { path: s("path").map(str::to_owned) },
            _ => {
                let json = arbor_log::json::to_string(args).unwrap_or_default();
                let more = if json.chars().count() > 40 { "..." } else { "" };
                CallRow::Text(format!("[{name}: {}{more}]", take_chars(&json, 40)))
            }
        }
    }

    /// The row, paths under `home` shortened to `~`.
    fn text(&self, home: Option<&str>) -> String {
        let dir = |p: &Option<String>| p.as_deref().map(|p| shorten_home(p, home)).unwrap_or_else(|| ".".into());
        match self {
            CallRow::Read { path, offset, limit } => {
                let p = shorten_home(path, home);
                match (offset, limit) {
                    (o, Some(l)) => {
                        let start = o.unwrap_or(1);
                        format!("[read: {p}:{start}-{}]", start + l - 1)
                    }
                    (Some(o), None) => format!("[read: {p}:{o}]"),
                    (None, None) => format!("[read: {p}]"),
                }
            }
            CallRow::Path { name, path } => format!("[{name}: {}]", shorten_home(path, home)),
            CallRow::Search { name: "grep", pattern, path } => format!("[grep: /{pattern}/ in {}]", dir(path)),
            CallRow::Search { name, pattern, path } => format!("[{name}: {pattern} in {}]", dir(path)),
            CallRow::Ls { path } => format!("[ls: {}]", dir(path)),
            CallRow::Text(t) => t.clone(),
        }
    }
}

impl ToolCalls {
    /// No calls yet.
    pub fn new() -> ToolCalls {
        ToolCalls::default()
    }

    /// Records the tool calls of an assistant entry (any other entry adds nothing).
    pub fn record(&mut self, entry: &Entry) {
        for (id, name, args) in calls_of(entry) {
            self.calls.insert(id.to_owned(), CallRow::of(name, args));
        }
    }

    /// The ids of the tool calls [`ToolCalls::record`] takes from `entry`, in order.
    pub fn ids_of(entry: &Entry) -> impl Iterator<Item = &str> + '_ {
        calls_of(entry).map(|(id, _, _)| id)
    }
}

/// The tool calls of an assistant entry: (id, name, arguments).
fn calls_of(entry: &Entry) -> impl Iterator<Item = (&str, &str, &Value)> + '_ {
    let blocks = match entry.message() {
        Some(m) if m.role() == Some(Role::Assistant) => match m.message.get("content") {
            Some(Value::Array(blocks)) => &blocks[..],
            _ => &[],
        },
        _ => &[],
    };
    blocks.iter().filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall")).filter_map(|b| {
        let (id, name) = (b.get("id").and_then(Value::as_str)?, b.get("name").and_then(Value::as_str)?);
        Some((id, name, b.get("arguments").unwrap_or(&Value::Null)))
    })
}

/// Where a tool result's line finds the call it answers: the call as
/// [`format_tool_call`] shows it, by tool-call id.
pub trait CallText {
    /// The call with this id as a row shows it, if it is known.
    fn call_text(&self, id: &str, home: Option<&str>) -> Option<String>;
}

impl CallText for ToolCalls {
    fn call_text(&self, id: &str, home: Option<&str>) -> Option<String> {
        self.calls.get(id).map(|row| row.text(home))
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
    CallRow::of(name, args).text(home)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_kept_call_reads_as_the_call_itself_whatever_the_home() {
        let long = "x".repeat(60);
        let calls = [
            ("read", json!({"path": "/h/a.rs", "offset": 3, "limit": 2}), "[read: ~/a.rs:3-4]"),
            ("read", json!({"file_path": "/h/b", "offset": 7}), "[read: ~/b:7]"),
            ("read", json!({"path": "/elsewhere"}), "[read: /elsewhere]"),
            ("write", json!({"path": "/h/w", "content": long}), "[write: ~/w]"),
            ("edit", json!({"file_path": "/h/e"}), "[edit: ~/e]"),
            ("bash", json!({"command": format!("echo\n{long}")}), ""),
            ("grep", json!({"pattern": "p", "path": "/h/g"}), "[grep: /p/ in ~/g]"),
            ("find", json!({"pattern": "*.rs"}), "[find: *.rs in .]"),
            ("ls", json!({"path": "/h/l"}), "[ls: ~/l]"),
            ("ls", json!({}), "[ls: .]"),
            ("other", json!({"k": long}), ""),
            ("other", json!(null), "[other: null]"),
        ];
        let content: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(k, (name, args, _))| json!({"type": "toolCall", "id": format!("c{k}"), "name": name, "arguments": args}))
            .collect();
        let line = json!({"type": "message", "id": "a1", "parentId": null, "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "assistant", "content": content}});
        let entry = Entry::from_owned(line).unwrap();
        let mut kept = ToolCalls::new();
        kept.record(&entry);
        for (k, (name, args, shown)) in calls.iter().enumerate() {
            for home in [Some("/h"), None, Some("")] {
                let id = format!("c{k}");
                assert_eq!(kept.call_text(&id, home), Some(format_tool_call(name, args, home)), "{name} {args}");
            }
            if !shown.is_empty() {
                assert_eq!(format_tool_call(name, args, Some("/h")), *shown);
            }
        }
        assert_eq!(format_tool_call("bash", &calls[5].1, None), format!("[bash: echo {}...]", &long[..45]));
        assert_eq!(kept.call_text("missing", None), None);
    }
}
