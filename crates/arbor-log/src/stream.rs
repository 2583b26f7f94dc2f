//! The streaming scan behind `check` and `repair`: every physical line of a
//! file read once, in order, validated exactly as [`crate::scan::scan_line`]
//! validates it (the fast validator first, the exact parser for what it
//! declines), with what those two commands need beyond a line's head read in
//! the same pass: the tool calls an assistant message makes, the call a tool
//! result answers, and a `parentId` that is neither a string nor `null`.
//!
//! Nothing is kept: the file is read a block at a time, each block's lines
//! are scanned on all cores, and each line is handed to the caller in file
//! order, then dropped. Memory is a few blocks, whatever the file's size.

use std::io;
use std::ops::ControlFlow;

use compact_str::CompactString;
use serde_json::Value;

use crate::diag::DiagnosticKind;
use crate::fast_head::HeadDetail;
use crate::message::MessageView;
use crate::reader::{parse_line, Parsed};
use crate::scan::{scan_line_with, ReadAt, ScanKind};
use crate::vocab::{EntryType, Role};

/// A tool call: its `id` and its tool's `name`, each absent when not a string.
pub type CallFacts = (Option<CompactString>, Option<CompactString>);

/// One physical line of a streamed file.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamedLine {
    /// 1-based line number.
    pub number: usize,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Length in bytes, terminator included.
    pub len: usize,
    /// What the line holds (entries other than messages decoded in full, as
    /// [`crate::scan::scan_line`] decodes them).
    pub kind: ScanKind,
    /// A note to report although the line was read (see [`crate::scan::ScannedLine::note`]).
    pub note: Option<DiagnosticKind>,
    /// True when the line ends with `\n`.
    pub terminated: bool,
    /// For a `message` entry whose message is an assistant's: its `toolCall` blocks, in order.
    pub calls: Vec<CallFacts>,
    /// For a `message` entry whose message is a tool result: `Some`, holding
    /// its `toolCallId` when that is a string.
    pub answers: Option<Option<CompactString>>,
    /// `parentId`, when it is present and neither a string nor `null`.
    pub odd_parent: Option<Box<Value>>,
}

/// Bytes read per block: each block's lines are split among the threads.
const BLOCK: usize = 2 << 20;

/// Streams every line of `src` to `line`, in file order, on up to `threads`
/// threads, until `line` breaks; returns the bytes read. Each line is lent,
/// not moved (a line's head is a few hundred bytes): take what you keep.
pub fn stream_lines(
    src: &dyn ReadAt,
    threads: usize,
    line: &mut dyn FnMut(&mut StreamedLine) -> ControlFlow<()>,
) -> io::Result<u64> {
    let len = src.len()?;
    let threads = threads.clamp(1, 64);
    let mut buf: Vec<u8> = vec![];
    // buf[..filled] holds the bytes from file offset `base` on.
    let (mut base, mut filled, mut number) = (0u64, 0usize, 0usize);
    loop {
        let want = BLOCK.max(filled * 2);
        buf.resize(want, 0);
        let mut eof = false;
        while filled < want {
            match src.read_at(&mut buf[filled..want], base + filled as u64) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        // Whole lines only, but the last line of the file may lack its newline.
        let end = if eof { filled } else { memchr::memrchr(b'\n', &buf[..filled]).map_or(0, |i| i + 1) };
        if end > 0 {
            for l in scan_block(&buf[..end], threads).iter_mut().flatten() {
                number += 1;
                l.number = number;
                l.offset += base;
                if line(l).is_break() {
                    return Ok(base + filled as u64);
                }
            }
        }
        if eof {
            return Ok(len.max(base + filled as u64));
        }
        buf.copy_within(end..filled, 0);
        filled -= end;
        base += end as u64;
    }
}

/// The lines of a block of whole lines, scanned on up to `threads` threads, in order (a list per thread).
fn scan_block(block: &[u8], threads: usize) -> Vec<Vec<StreamedLine>> {
    let mut bounds = vec![0usize];
    for k in 1..threads {
        let guess = (block.len() / threads * k).max(*bounds.last().unwrap_or(&0));
        let start = memchr::memchr(b'\n', &block[guess..]).map_or(block.len(), |i| guess + i + 1);
        bounds.push(start);
    }
    bounds.push(block.len());
    bounds.dedup();
    let ranges: Vec<&[u8]> = bounds.windows(2).map(|w| &block[w[0]..w[1]]).collect();
    let offsets: Vec<usize> = bounds.clone();
    if ranges.len() <= 1 {
        return ranges.iter().map(|r| scan_lines(r, 0)).collect();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = ranges.iter().zip(&offsets).map(|(&r, &at)| s.spawn(move || scan_lines(r, at))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    })
}

/// The lines of `bytes` (whole lines; the last may lack its newline), offsets counted from `at`.
fn scan_lines(bytes: &[u8], at: usize) -> Vec<StreamedLine> {
    let mut out = vec![];
    let mut start = 0;
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i + 1);
        let mut l = streamed_line(&bytes[start..end]);
        l.offset = (at + start) as u64;
        out.push(l);
        start = end;
    }
    out
}

/// One line, read as [`stream_lines`] reads it (number and offset left 0).
pub fn streamed_line(bytes: &[u8]) -> StreamedLine {
    let (kind, note, detail) = scan_line_with(bytes, true, true);
    let mut out = StreamedLine {
        number: 0,
        offset: 0,
        len: bytes.len(),
        kind,
        note,
        terminated: bytes.last() == Some(&b'\n'),
        calls: vec![],
        answers: None,
        odd_parent: None,
    };
    let ScanKind::Object(head) = &out.kind else { return out };
    let message = head.entry_type == Some(EntryType::Message) && head.has_message;
    let role = head.role.clone().filter(|_| message);
    match detail {
        Some(d) if !d.parent_other => fill_from_detail(&mut out, role, d),
        // The exact path, or a parent to show as JSON: read from the parsed value.
        _ => {
            if let Parsed::Object(v) = parse_line(bytes).0 {
                fill_from_value(&mut out, role, &v);
            }
        }
    }
    out
}

fn fill_from_detail(out: &mut StreamedLine, role: Option<Role>, d: HeadDetail<'_>) {
    let own = |s: Option<&str>| s.map(CompactString::from);
    match role {
        Some(Role::Assistant) => out.calls = d.tool_calls.into_iter().map(|(id, name)| (own(id), own(name))).collect(),
        Some(Role::ToolResult) => out.answers = Some(own(d.tool_call_id)),
        _ => {}
    }
}

fn fill_from_value(out: &mut StreamedLine, role: Option<Role>, v: &Value) {
    out.odd_parent = v.get("parentId").filter(|p| !p.is_string() && !p.is_null()).cloned().map(Box::new);
    let Some(message) = v.get("message") else { return };
    let view = MessageView::new(message);
    let own = |s: Option<&str>| s.map(CompactString::from);
    match role {
        Some(Role::Assistant) => out.calls = view.tool_calls().map(|c| (own(c.id), own(c.name))).collect(),
        Some(Role::ToolResult) => out.answers = Some(own(view.str_field("toolCallId"))),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast validator's detail is what the parsed value gives, line by line.
    #[test]
    fn the_fast_detail_matches_the_parsed_value() {
        let lines = [
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"toolCall","id":"c1","name":"read","arguments":{}},{"type":"toolCall","id":5},{"name":"n","type":"toolCall","id":"c2","id":"c3"}]}}"#,
            r#"{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1"}],"content":"s"}}"#,
            r#"{"type":"message","id":"a","message":{"role":"toolResult","toolCallId":"c1","content":[{"type":"toolCall","id":"z"}]}}"#,
            r#"{"type":"message","id":"a","message":{"role":"toolResult","toolCallId":7}}"#,
            r#"{"type":"message","id":"a","message":{"role":"toolResult"},"message":{"role":"toolResult","toolCallId":"b"}}"#,
            r#"{"type":"custom","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1"}]}}"#,
            r#"{"type":"message","id":"a","parentId":5,"message":{"role":"user","content":"x"}}"#,
            r#"{"type":"message","id":"a","parentId":{"k":[1]},"parentId":"p","message":{"role":"user","content":"x"}}"#,
            r#"{"type":"message","id":"a","parentId":"p","parentId":false,"message":{"role":"user","content":"x"}}"#,
            r#"{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"c\u0031"}]}}"#,
        ];
        for line in lines {
            let fast = streamed_line(line.as_bytes());
            let mut slow = fast.clone();
            (slow.calls, slow.answers, slow.odd_parent) = (vec![], None, None);
            let ScanKind::Object(head) = &fast.kind else { panic!("{line}") };
            let role = head.role.clone().filter(|_| head.entry_type == Some(EntryType::Message) && head.has_message);
            let Parsed::Object(v) = parse_line(line.as_bytes()).0 else { panic!("{line}") };
            fill_from_value(&mut slow, role, &v);
            assert_eq!(fast, slow, "{line}");
        }
        let first = streamed_line(lines[0].as_bytes());
        assert_eq!(first.calls.len(), 3, "{first:?}");
        assert_eq!(first.calls[2], (Some("c3".into()), Some("n".into())));
        assert_eq!(streamed_line(lines[6].as_bytes()).odd_parent, Some(Box::new(serde_json::json!(5))));
    }
}
