//! Streaming JSONL reading: physical lines with offsets, parsed as pi parses them.
//!
//! pi reads the whole file as UTF-8, trims it, splits on `\n` and `JSON.parse`s
//! each non-blank line. [`LineReader`] does the same one line at a time, so a
//! file never has to fit in one `String`, and reports what pi silently skips.

use std::io::{self, BufRead};

use serde_json::Value;

use crate::diag::DiagnosticKind;
use crate::json;

/// One physical line, borrowed from the reader's buffer.
#[derive(Debug)]
pub struct RawLine<'a> {
    /// 1-based line number.
    pub number: usize,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// The bytes, including the `\n` terminator when there is one.
    pub bytes: &'a [u8],
}

impl RawLine<'_> {
    /// True when the line ends with `\n`.
    pub fn terminated(&self) -> bool {
        self.bytes.last() == Some(&b'\n')
    }
}

/// Reads physical lines one at a time, reusing one buffer.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    number: usize,
    offset: u64,
    /// Set at the first end of file: a file still being written must not
    /// return the rest of a torn line as a line of its own on a later call.
    done: bool,
}

impl<R: BufRead> LineReader<R> {
    /// Wraps a buffered reader.
    pub fn new(inner: R) -> Self {
        LineReader { inner, buf: Vec::with_capacity(64 * 1024), number: 0, offset: 0, done: false }
    }

    /// The next physical line, or `None` at the end.
    pub fn next_line(&mut self) -> io::Result<Option<RawLine<'_>>> {
        self.offset += self.buf.len() as u64;
        self.buf.clear();
        if self.done {
            return Ok(None);
        }
        let n = self.inner.read_until(b'\n', &mut self.buf)?;
        if n == 0 || self.buf.last() != Some(&b'\n') {
            self.done = true;
        }
        if n == 0 {
            return Ok(None);
        }
        self.number += 1;
        Ok(Some(RawLine { number: self.number, offset: self.offset, bytes: &self.buf }))
    }
}

/// What one physical line holds, as pi would read it.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// Empty after trimming whitespace (and a BOM).
    Blank,
    /// A JSON object.
    Object(Value),
    /// Skipped: the reason is the diagnostic.
    Skipped(DiagnosticKind),
}

/// Trims what JavaScript's `trim()` removes at the edges of a line that matter
/// here: ASCII whitespace (including `\r`) and a byte-order mark.
pub fn trim_line(bytes: &[u8]) -> &[u8] {
    let mut b = bytes;
    loop {
        let before = b.len();
        b = b.trim_ascii();
        if let Some(rest) = b.strip_prefix(b"\xEF\xBB\xBF") {
            b = rest;
        }
        if let Some(rest) = b.strip_suffix(b"\xEF\xBB\xBF") {
            b = rest;
        }
        if b.len() == before {
            return b;
        }
    }
}

/// Parses one physical line. Only the last line of a file can lack its `\n`;
/// when such a line does not parse it is a torn write. The second value
/// is a note to report even though the line was read (invalid UTF-8, no final newline).
///
/// A line is read as `JSON.parse` reads it (see [`crate::json`]): lone
/// surrogate escapes, numbers beyond the `f64` range and any depth are accepted.
pub fn parse_line(bytes: &[u8]) -> (Parsed, Option<DiagnosticKind>) {
    let (parsed, note, _) = parse_line_detail(bytes);
    (parsed, note)
}

/// [`parse_line`], and whether the line is one serde_json refuses and only
/// JavaScript's reading accepts (its text then may not mean what serde_json
/// would make of it: a number beyond `f64` reads as `null`).
pub fn parse_line_detail(bytes: &[u8]) -> (Parsed, Option<DiagnosticKind>, bool) {
    let terminated = bytes.last() == Some(&b'\n');
    let body = trim_line(bytes);
    if body.is_empty() {
        return (Parsed::Blank, None, false);
    }
    let mut note = None;
    let parsed = match std::str::from_utf8(body) {
        Ok(s) => json::parse_detail(s),
        Err(_) => {
            note = Some(DiagnosticKind::InvalidUtf8);
            json::parse_detail(&String::from_utf8_lossy(body))
        }
    };
    match parsed {
        Ok((Value::Object(map), js_only)) => {
            if !terminated && note.is_none() {
                note = Some(DiagnosticKind::NoFinalNewline);
            }
            (Parsed::Object(Value::Object(map)), note, js_only)
        }
        Ok((other, _)) => (Parsed::Skipped(DiagnosticKind::NotObject { found: json_kind(&other) }), note, false),
        // A torn write can cut a character in half: the torn tail says it all.
        Err(_) if !terminated => (Parsed::Skipped(DiagnosticKind::TornTail { bytes: bytes.len() }), None, false),
        Err(e) => (Parsed::Skipped(DiagnosticKind::Malformed { error: e.to_string() }), note, false),
    }
}

/// A short name for a JSON value's kind.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_offsets_and_terminators() {
        let data = b"a\r\nbb\n\nccc";
        let mut r = LineReader::new(&data[..]);
        let mut seen = vec![];
        while let Some(l) = r.next_line().unwrap() {
            seen.push((l.number, l.offset, l.bytes.to_vec(), l.terminated()));
        }
        assert_eq!(
            seen,
            vec![
                (1, 0, b"a\r\n".to_vec(), true),
                (2, 3, b"bb\n".to_vec(), true),
                (3, 6, b"\n".to_vec(), true),
                (4, 7, b"ccc".to_vec(), false),
            ]
        );
    }

    #[test]
    fn parse_rules() {
        assert_eq!(parse_line(b"  \r\n").0, Parsed::Blank);
        assert!(matches!(parse_line(b"\xEF\xBB\xBF{\"a\":1}\r\n"), (Parsed::Object(_), None)));
        assert!(matches!(parse_line(b"42\n").0, Parsed::Skipped(DiagnosticKind::NotObject { .. })));
        assert!(matches!(parse_line(b"{nope\n").0, Parsed::Skipped(DiagnosticKind::Malformed { .. })));
        assert!(matches!(parse_line(b"{\"a\":").0, Parsed::Skipped(DiagnosticKind::TornTail { bytes: 5 })));
        assert_eq!(parse_line(b"{\"a\":1}").1, Some(DiagnosticKind::NoFinalNewline));
        assert_eq!(parse_line(b"{\"a\":\"\xC3").1, None, "a torn character is part of the torn tail");
        let (p, note) = parse_line(b"{\"a\":\"x\xFFy\"}\n");
        assert_eq!(note, Some(DiagnosticKind::InvalidUtf8));
        assert_eq!(p, Parsed::Object(serde_json::json!({"a": "x\u{FFFD}y"})));
    }
}
