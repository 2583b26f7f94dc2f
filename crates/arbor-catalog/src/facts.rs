//! The listing facts of one session file, read line by line and carried
//! over between refreshes: pi's `SessionInfo` (what `arbor_tree::read_session_info`
//! reads), without the text of every message.
//!
//! Each line after the header goes through `arbor_log::scan_line`, which
//! accepts exactly the lines the streaming reader accepts and keeps the
//! fields a listing needs (type, message role and times); only the lines
//! that carry text a listing shows (the header, the first user message, a
//! session name) are decoded.

use serde_json::Value;

use arbor_log::reader::{parse_line, Parsed};
use arbor_log::scan::{scan_line, ScanKind};
use arbor_log::{is_header, is_title_slot, EntryType, MessageView, Role};

/// Whether a file is a session, as far as it was read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// No record read yet.
    #[default]
    Pending,
    /// The first record is a session header.
    Session,
    /// The first record is something else: the file is not listed.
    NotSession,
}

impl FileKind {
    pub fn code(&self) -> i64 {
        match self {
            FileKind::Pending => 0,
            FileKind::Session => 1,
            FileKind::NotSession => 2,
        }
    }

    pub fn from_code(code: i64) -> FileKind {
        match code {
            1 => FileKind::Session,
            2 => FileKind::NotSession,
            _ => FileKind::Pending,
        }
    }
}

/// What a listing shows of one file, through the last line read.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Facts {
    pub kind: FileKind,
    /// Physical lines read (a title slot may stand on line 1).
    pub lines: u64,
    /// The header's fields (when `kind` is `Session`).
    pub id: String,
    pub cwd: String,
    pub parent_session: Option<String>,
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

impl Facts {
    /// Reads one more physical line.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.lines += 1;
        match self.kind {
            FileKind::NotSession => {}
            FileKind::Pending => self.first_record(bytes),
            FileKind::Session => self.record(bytes),
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
            self.kind = FileKind::NotSession;
            return;
        }
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        self.kind = FileKind::Session;
        self.id = text("id").unwrap_or_default();
        self.cwd = text("cwd").unwrap_or_default();
        self.parent_session = text("parentSession");
        self.created = text("timestamp").unwrap_or_default();
        self.version = arbor_log::version_of(v.get("version"));
    }

    fn record(&mut self, bytes: &[u8]) {
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
                if head.role == Some(Role::User) && self.first_message.is_none() {
                    if let Parsed::Object(v) = parse_line(bytes).0 {
                        let text = v.get("message").map(|m| MessageView::new(m).text(" ")).unwrap_or_default();
                        if !text.is_empty() {
                            self.first_message = Some(text);
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
}

/// pi's `allMessagesText` of a session file: the text of every user and
/// assistant message, joined with spaces (what `ls --json` prints; the
/// catalog keeps no message text, so this reads the file).
pub fn all_messages_text(path: &std::path::Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let end = file.metadata()?.len();
    let mut lines = crate::lines::Lines::new(&file, 0, end);
    let mut state = Facts::default();
    let mut texts = vec![];
    let mut take = |bytes: &[u8], state: &mut Facts| {
        if state.kind != FileKind::Session {
            state.feed(bytes);
            return;
        }
        let (ScanKind::Object(head), _) = scan_line(bytes, false) else { return };
        if head.entry_type == Some(EntryType::Message) && matches!(head.role, Some(Role::User | Role::Assistant)) {
            if let Parsed::Object(v) = parse_line(bytes).0 {
                let text = v.get("message").map(|m| MessageView::new(m).text(" ")).unwrap_or_default();
                if !text.is_empty() {
                    texts.push(text);
                }
            }
        }
    };
    while let Some(line) = lines.next_line()? {
        take(line.bytes, &mut state);
    }
    let (_, rest) = lines.rest();
    if !rest.is_empty() {
        take(rest, &mut state);
    }
    Ok(texts.join(" "))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::path::Path;

    /// Facts of `bytes` fed line by line, and `read_session_info`'s answer.
    fn both(bytes: &[u8]) -> (Facts, Option<arbor_tree::SessionListInfo>) {
        let mut f = Facts::default();
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            f.feed(line);
        }
        let info = arbor_tree::read_session_info(bytes, Path::new("x.jsonl"), None).unwrap();
        (f, info)
    }

    #[test]
    fn agrees_with_read_session_info_on_every_fixture() {
        let mut checked = 0;
        for path in crate::test_support::fixture_logs() {
            let bytes = std::fs::read(&path).unwrap();
            let (f, info) = both(&bytes);
            if let Some(i) = &info {
                assert_eq!(all_messages_text(&path).unwrap(), i.all_messages_text, "{}", path.display());
            }
            match info {
                None => assert_ne!(f.kind, FileKind::Session, "{}", path.display()),
                Some(i) => {
                    checked += 1;
                    let p = path.display();
                    assert_eq!(f.kind, FileKind::Session, "{p}");
                    assert_eq!(
                        (f.id.as_str(), f.cwd.as_str(), f.created.as_str()),
                        (&*i.id, &*i.cwd, &*i.created),
                        "{p}"
                    );
                    assert_eq!(f.parent_session, i.parent_session_path, "{p}");
                    assert_eq!(f.name, i.name, "{p}");
                    assert_eq!(f.message_count as usize, i.message_count, "{p}");
                    assert_eq!(f.first_message.as_deref().unwrap_or("(no messages)"), i.first_message, "{p}");
                    let modified = arbor_log::format_iso_ms(f.modified_ms(0));
                    if !i.modified.is_empty() {
                        assert_eq!(modified, i.modified, "{p}");
                    }
                }
            }
        }
        assert!(checked > 30, "{checked} sessions checked");
    }

    #[test]
    fn message_times_as_pi_reads_them() {
        let bytes = br#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-02T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":"not a number"}}
{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"assistant","content":[],"timestamp":1.7e12,"timestamp":1735776000999.9}}
{"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","content":[],"timestamp":1}}
{"type":"session_info","id":"d","parentId":"c","timestamp":"2025-01-01T00:00:00.000Z","name":"  named  "}
"#;
        let (f, info) = both(bytes);
        let info = info.unwrap();
        assert_eq!(f.newest_ms, Some(1_735_776_000_999));
        assert_eq!(arbor_log::format_iso_ms(f.modified_ms(0)), info.modified);
        assert_eq!((f.message_count, f.name.as_deref(), f.first_message.as_deref()), (3, Some("named"), Some("hi")));
    }
}
