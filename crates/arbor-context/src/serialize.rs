//! The summarizer's input (docs/architecture.md, "Summaries"): a conversation as plain text, and the
//! files an assistant read and changed.

use std::collections::HashSet;

use arbor_log::{MessageView, Role};
use serde_json::Value;

use crate::js;

/// How many characters (UTF-16 code units) of a tool result the summarizer sees.
pub const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// Renders model messages as the text a summarizer reads: one part per
/// message (`[User]: …`, `[Assistant thinking]: …`, `[Assistant]: …`,
/// `[Assistant tool calls]: name(k=JSON, …); …`, `[Tool result]: …`), joined
/// with blank lines. Tool results longer than 2000 characters are cut, with
/// `\n\n[... N more characters truncated]` appended; images are ignored.
pub fn serialize_conversation(llm_messages: &[Value]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for msg in llm_messages {
        // Model messages (after convert_to_llm) have these three roles only.
        match MessageView::new(msg).role() {
            Some(Role::User) => {
                let text = content_text(msg.get("content"));
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            Some(Role::Assistant) => {
                let mut texts = Vec::new();
                let mut thinking = Vec::new();
                let mut calls = Vec::new();
                for block in msg.get("content").and_then(Value::as_array).map_or(&[][..], Vec::as_slice) {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => texts.push(str_or_empty(block.get("text"))),
                        Some("thinking") => thinking.push(str_or_empty(block.get("thinking"))),
                        Some("toolCall") => calls.push(tool_call_text(block)),
                        _ => {}
                    }
                }
                if !thinking.is_empty() {
                    parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
                }
                if !texts.is_empty() {
                    parts.push(format!("[Assistant]: {}", texts.join("\n")));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            Some(Role::ToolResult) => {
                let text = content_text(msg.get("content"));
                if !text.is_empty() {
                    parts.push(format!("[Tool result]: {}", truncate_for_summary(&text, TOOL_RESULT_MAX_CHARS)));
                }
            }
            _ => {}
        }
    }
    parts.join("\n\n")
}

fn str_or_empty(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

/// A string content, or its text blocks joined with `""`.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .map(|b| str_or_empty(b.get("text")))
            .collect(),
        _ => String::new(),
    }
}

/// `name(k1=<JSON v1>, k2=<JSON v2>)`, arguments in JavaScript object order.
fn tool_call_text(block: &Value) -> String {
    let args = match block.get("arguments") {
        Some(Value::Object(map)) => {
            js::entries(map).into_iter().map(|(k, v)| format!("{k}={}", js::stringify(v))).collect::<Vec<_>>()
        }
        _ => Vec::new(),
    };
    format!("{}({})", js::to_js_string(block.get("name")), args.join(", "))
}

/// Keeps the first `max` characters (UTF-16 code units) and says how many were cut.
fn truncate_for_summary(text: &str, max: usize) -> String {
    let len = js::len(text);
    if len <= max {
        return text.to_owned();
    }
    format!("{}\n\n[... {} more characters truncated]", js::slice_prefix(text, max), len - max)
}

/// A set of paths that remembers insertion order (a JavaScript `Set<string>`).
#[derive(Debug, Clone, Default)]
pub struct PathSet {
    items: Vec<String>,
    index: HashSet<String>,
}

/// Two sets are equal when they hold the same paths in the same order.
impl PartialEq for PathSet {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

impl Eq for PathSet {}

impl PathSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds `path` unless it is already present; returns whether it was added.
    pub fn insert(&mut self, path: &str) -> bool {
        if !self.index.insert(path.to_owned()) {
            return false;
        }
        self.items.push(path.to_owned());
        true
    }
    /// True when `path` is in the set.
    pub fn contains(&self, path: &str) -> bool {
        self.index.contains(path)
    }
    /// The paths in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.items.iter().map(String::as_str)
    }
    /// The number of paths.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// True when the set is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// The paths in insertion order.
    pub fn to_vec(&self) -> Vec<String> {
        self.items.clone()
    }
}

impl<'a> FromIterator<&'a str> for PathSet {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> Self {
        let mut set = PathSet::new();
        for p in iter {
            set.insert(p);
        }
        set
    }
}

/// The files an assistant read, wrote and edited (pi's `FileOperations`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOps {
    /// Paths of `read` tool calls.
    pub read: PathSet,
    /// Paths of `write` tool calls.
    pub written: PathSet,
    /// Paths of `edit` tool calls.
    pub edited: PathSet,
}

impl FileOps {
    /// No files.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Adds the paths of an assistant message's `read`, `write` and `edit` tool
/// calls (those with a non-empty string `arguments.path`) to `ops`. Other
/// messages and tools are ignored.
pub fn extract_file_ops_from_message(message: &Value, ops: &mut FileOps) {
    if MessageView::new(message).role() != Some(Role::Assistant) {
        return;
    }
    let Some(blocks) = message.get("content").and_then(Value::as_array) else {
        return;
    };
    for block in blocks {
        if block.get("type").and_then(Value::as_str) != Some("toolCall") {
            continue;
        }
        let path = block.get("arguments").and_then(|a| a.get("path")).and_then(Value::as_str).unwrap_or("");
        if path.is_empty() {
            continue;
        }
        match block.get("name").and_then(Value::as_str) {
            Some("read") => ops.read.insert(path),
            Some("write") => ops.written.insert(path),
            Some("edit") => ops.edited.insert(path),
            _ => false,
        };
    }
}

/// Splits file operations into `(read_files, modified_files)`: modified is
/// edited ∪ written, read-only is read − modified, both sorted in JavaScript's
/// default (UTF-16 code unit) order.
pub fn compute_file_lists(ops: &FileOps) -> (Vec<String>, Vec<String>) {
    let modified: PathSet = ops.edited.iter().chain(ops.written.iter()).collect();
    let mut read: Vec<String> = ops.read.iter().filter(|p| !modified.contains(p)).map(str::to_owned).collect();
    let mut modified = modified.to_vec();
    read.sort_by(|a, b| js::cmp_utf16(a, b));
    modified.sort_by(|a, b| js::cmp_utf16(a, b));
    (read, modified)
}

/// The file lists appended to a summary: `""` when both are empty, else
/// `"\n\n"` + the non-empty `<read-files>` and `<modified-files>` sections
/// (one path per line) joined with a blank line.
pub fn format_file_operations(read_files: &[String], modified_files: &[String]) -> String {
    let mut sections = Vec::new();
    if !read_files.is_empty() {
        sections.push(format!("<read-files>\n{}\n</read-files>", read_files.join("\n")));
    }
    if !modified_files.is_empty() {
        sections.push(format!("<modified-files>\n{}\n</modified-files>", modified_files.join("\n")));
    }
    if sections.is_empty() {
        return String::new();
    }
    format!("\n\n{}", sections.join("\n\n"))
}
