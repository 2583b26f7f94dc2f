//! A transcript's records: its complete lines parsed as JSON objects, with
//! the lines that are not reported by number.

use std::io::Read;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::InteropError;

/// One record of a transcript.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// 1-based line number.
    pub line: usize,
    /// The line as written (without its newline).
    pub text: String,
    /// The parsed object.
    pub value: Value,
}

impl Record {
    /// A string field of the record.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.value.get(key).and_then(Value::as_str)
    }
    /// The record's `type`, or `""`.
    pub fn kind(&self) -> &str {
        self.str("type").unwrap_or("")
    }
    /// What the report calls the record: its `type`, and the `type` of its
    /// payload (Codex) or its `subtype` (Claude Code) when it has one.
    pub fn label(&self) -> String {
        let sub = self.value.get("payload").and_then(|p| p.get("type")).or_else(|| self.value.get("subtype"));
        match sub.and_then(serde_json::Value::as_str) {
            Some(sub) => format!("{} {sub}", self.kind()),
            None => self.kind().to_owned(),
        }
    }
    /// The key its entry ids are derived from when it has no uuid: its line and text.
    pub fn content_key(&self) -> String {
        format!("line {}: {}", self.line, self.text)
    }
}

/// A line (or, for OpenCode's storage, a file) that was not imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedLine {
    /// 1-based line number (0 for a whole file).
    pub line: usize,
    /// The file, when it is not the transcript itself (OpenCode's message and part files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<std::path::PathBuf>,
    /// Why.
    pub reason: String,
}

/// The records of a transcript and what was left out.
#[derive(Debug, Default)]
pub(crate) struct Records {
    pub records: Vec<Record>,
    pub skipped: Vec<SkippedLine>,
    /// A last line without a newline that does not parse: a record still being written.
    pub partial_tail: bool,
}

/// Reads `path` up to its last complete line. A last line without a newline is
/// taken when it parses (a finished record whose newline is missing) and
/// otherwise left for a later import; every other line that is not a JSON
/// object is reported and skipped.
pub(crate) fn read_records(path: &Path) -> Result<Records, InteropError> {
    // Only a regular file: a FIFO or a device would never end.
    let mut bytes = Vec::new();
    arbor_log::files::open_read(path)?.read_to_end(&mut bytes).map_err(|e| InteropError::io(path, e))?;
    Ok(parse_records(&bytes))
}

pub(crate) fn parse_records(bytes: &[u8]) -> Records {
    let mut out = Records::default();
    let ends_clean = bytes.last().is_none_or(|b| *b == b'\n');
    let mut pieces: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if ends_clean {
        pieces.pop();
    }
    let last = pieces.len();
    for (i, raw) in pieces.into_iter().enumerate() {
        let line = i + 1;
        let unfinished = !ends_clean && line == last;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Ok(text) = std::str::from_utf8(raw) else {
            if unfinished {
                out.partial_tail = true;
            } else {
                out.skipped.push(SkippedLine { line, file: None, reason: "not UTF-8".into() });
            }
            continue;
        };
        let trimmed = text.trim_start_matches('\u{feff}').trim();
        if trimmed.is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(trimmed) {
            Ok(value @ Value::Object(_)) => out.records.push(Record { line, text: trimmed.to_owned(), value }),
            Ok(_) if !unfinished => {
                out.skipped.push(SkippedLine { line, file: None, reason: "not a JSON object".into() })
            }
            Err(e) if !unfinished => {
                out.skipped.push(SkippedLine { line, file: None, reason: format!("malformed JSON: {e}") })
            }
            _ => out.partial_tail = true,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_lines_bad_lines_and_an_unfinished_tail() {
        let r = parse_records(b"{\"a\":1}\n\nnot json\n[1]\n{\"b\":2}\n{\"c\":");
        assert_eq!(r.records.iter().map(|r| r.line).collect::<Vec<_>>(), [1, 5]);
        assert_eq!(r.skipped.iter().map(|s| s.line).collect::<Vec<_>>(), [3, 4]);
        assert!(r.skipped[0].reason.starts_with("malformed JSON"), "{:?}", r.skipped);
        assert!(r.partial_tail);
    }

    #[test]
    fn a_finished_last_record_without_its_newline_is_taken() {
        let r = parse_records(b"{\"a\":1}\r\n{\"b\":2}");
        assert_eq!(r.records.len(), 2);
        assert!(!r.partial_tail);
        assert_eq!(r.records[0].text, "{\"a\":1}");
    }
}
