//! The listing facts of one session file, read line by line and carried
//! over between reads: pi's `SessionInfo` without the text of every message.
//! [`crate::read_session_info`] folds a whole file through it; the catalog
//! and stores that keep facts beside their sessions feed it the lines they
//! add, so a grown file is never read again from its start.
//!
//! Each line after the header goes through `arbor_log::scan_line`, which
//! accepts exactly the lines the streaming reader accepts and keeps the
//! fields a listing needs (type, message role and times); only the lines
//! that carry text a listing shows (the header, the first user message, a
//! session name) are decoded.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use arbor_log::reader::{parse_line, Parsed};
use arbor_log::scan::{scan_line, ScanKind};
use arbor_log::{format_iso_ms, is_header, is_title_slot, parse_iso_ms, EntryType, MessageView, Role};

/// pi's `SessionInfo` for one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionListInfo {
    /// The file.
    pub path: PathBuf,
    /// The session id.
    pub id: String,
    /// The header's cwd (`""` when absent).
    pub cwd: String,
    /// The newest non-empty `session_info` name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The header's `parentSession`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session_path: Option<String>,
    /// The header timestamp.
    pub created: String,
    /// The newest user/assistant message time, else the header time, else the file mtime (ISO).
    pub modified: String,
    /// The number of `message` entries of any role.
    pub message_count: usize,
    /// The text of the first user message, or `(no messages)`.
    pub first_message: String,
    /// User and assistant text, joined with spaces.
    pub all_messages_text: String,
}

/// Whether a file is a session, as far as it was read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ListingKind {
    /// No record read yet.
    #[default]
    Pending,
    /// The first record is a session header.
    Session,
    /// The first record is something else: the file is not listed.
    NotSession,
}

impl ListingKind {
    /// A small number for storing the kind (0 pending, 1 session, 2 not a session).
    pub fn code(&self) -> i64 {
        match self {
            ListingKind::Pending => 0,
            ListingKind::Session => 1,
            ListingKind::NotSession => 2,
        }
    }

    /// The kind [`ListingKind::code`] stored (anything unknown is pending).
    pub fn from_code(code: i64) -> ListingKind {
        match code {
            1 => ListingKind::Session,
            2 => ListingKind::NotSession,
            _ => ListingKind::Pending,
        }
    }
}

/// What a listing shows of one file, through the last line read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListingFacts {
    /// Whether the file is a session, as far as it was read.
    pub kind: ListingKind,
    /// Physical lines read (a title slot may stand on line 1).
    pub lines: u64,
    /// The header's fields (when `kind` is `Session`).
    pub id: String,
    /// The header's cwd.
    pub cwd: String,
    /// The header's `parentSession`.
    pub parent_session: Option<String>,
    /// The header's timestamp.
    pub created: String,
    /// The header's format version (`version ?? 1`).
    pub version: u64,
    /// The newest non-empty `session_info` name.
    pub name: Option<String>,
    /// `message` entries of any role.
    pub message_count: u64,
    /// The text of the first user message with text.
    pub first_message: Option<String>,
    /// The newest user or assistant message time (ms).
    pub newest_ms: Option<i64>,
}

impl ListingFacts {
    /// Reads one more physical line (with or without its newline).
    pub fn feed(&mut self, bytes: &[u8]) {
        self.feed_inner(bytes, None);
    }

    /// Like [`ListingFacts::feed`], and adds the text of a user or assistant
    /// message to `texts` (the parts of pi's `allMessagesText`).
    pub fn feed_with_text(&mut self, bytes: &[u8], texts: &mut Vec<String>) {
        self.feed_inner(bytes, Some(texts));
    }

    fn feed_inner(&mut self, bytes: &[u8], texts: Option<&mut Vec<String>>) {
        self.lines += 1;
        match self.kind {
            ListingKind::NotSession => {}
            ListingKind::Pending => self.first_record(bytes),
            ListingKind::Session => self.record(bytes, texts),
        }
    }

    /// The lines up to the first record decide whether this is a session.
    fn first_record(&mut self, bytes: &[u8]) {
        let Parsed::Object(v) = parse_line(bytes).0 else { return };
        if self.lines == 1 && is_title_slot(&v) {
            // omp-S's title slot precedes the header (see arbor_tree::read_session_info).
            return;
        }
        if !is_header(&v) {
            self.kind = ListingKind::NotSession;
            return;
        }
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        self.kind = ListingKind::Session;
        self.id = text("id").unwrap_or_default();
        self.cwd = text("cwd").unwrap_or_default();
        self.parent_session = text("parentSession");
        self.created = text("timestamp").unwrap_or_default();
        self.version = arbor_log::version_in_line(v.get("version"), bytes);
    }

    fn record(&mut self, bytes: &[u8], texts: Option<&mut Vec<String>>) {
        let (ScanKind::Object(head), _) = scan_line(bytes, false) else { return };
        match head.entry_type {
            Some(EntryType::SessionInfo) => {
                let Parsed::Object(v) = parse_line(bytes).0 else { return };
                if let Some(n) = v.get("name").and_then(Value::as_str).map(str::trim).filter(|n| !n.is_empty()) {
                    self.name = Some(n.to_owned());
                }
            }
            Some(EntryType::Message) => {
                self.message_count += 1;
                if !matches!(head.role, Some(Role::User | Role::Assistant)) {
                    return;
                }
                let first = head.role == Some(Role::User) && self.first_message.is_none();
                if first || texts.is_some() {
                    if let Parsed::Object(v) = parse_line(bytes).0 {
                        let text = v.get("message").map(|m| MessageView::new(m).text(" ")).unwrap_or_default();
                        if !text.is_empty() {
                            if first {
                                self.first_message = Some(text.clone());
                            }
                            if let Some(texts) = texts {
                                texts.push(text);
                            }
                        }
                    }
                }
                // `as i64` is JavaScript's truncation for the times that matter (and saturates).
                if let Some(t) = head.message_time.map(|f| f as i64).or(head.ts_ms) {
                    self.newest_ms = Some(self.newest_ms.map_or(t, |n| n.max(t)));
                }
            }
            _ => {}
        }
    }

    /// pi's `modified`: the newest message time, else the header time, else the file's mtime (ms).
    pub fn modified_ms(&self, mtime_ms: i64) -> i64 {
        self.newest_ms.or_else(|| arbor_log::parse_iso_ms(&self.created)).unwrap_or(mtime_ms)
    }

    /// pi's `SessionInfo` of a session file read so far (`None` when it is
    /// not a session): `mtime_ms` is the file's modification time, the last
    /// resort for `modified`.
    pub fn to_info(&self, path: &Path, mtime_ms: Option<i64>, all_messages_text: String) -> Option<SessionListInfo> {
        if self.kind != ListingKind::Session {
            return None;
        }
        let modified = self.newest_ms.or_else(|| parse_iso_ms(&self.created)).or(mtime_ms);
        Some(SessionListInfo {
            path: path.to_owned(),
            id: self.id.clone(),
            cwd: self.cwd.clone(),
            name: self.name.clone(),
            parent_session_path: self.parent_session.clone(),
            created: self.created.clone(),
            modified: modified.map(format_iso_ms).unwrap_or_default(),
            message_count: self.message_count as usize,
            first_message: self.first_message.clone().unwrap_or_else(|| "(no messages)".to_owned()),
            all_messages_text,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn message_times_as_pi_reads_them() {
        let bytes = br#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-02T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":"not a number"}}
{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"assistant","content":[],"timestamp":1.7e12,"timestamp":1735776000999.9}}
{"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","content":[],"timestamp":1}}
{"type":"session_info","id":"d","parentId":"c","timestamp":"2025-01-01T00:00:00.000Z","name":"  named  "}
"#;
        let mut f = ListingFacts::default();
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            f.feed(line);
        }
        let info = crate::read_session_info(&bytes[..], Path::new("x.jsonl"), None).unwrap().unwrap();
        assert_eq!(f.newest_ms, Some(1_735_776_000_999));
        assert_eq!(arbor_log::format_iso_ms(f.modified_ms(0)), info.modified);
        assert_eq!((f.message_count, f.name.as_deref(), f.first_message.as_deref()), (3, Some("named"), Some("hi")));
    }
}
