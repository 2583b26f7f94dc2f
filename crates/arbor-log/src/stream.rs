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
///
/// A pipeline of two blocks: while the lines of one block go to `line` on
/// this thread, the next block is already being scanned.
pub fn stream_lines(
    src: &dyn ReadAt,
    threads: usize,
    line: &mut dyn FnMut(&mut StreamedLine) -> ControlFlow<()>,
) -> io::Result<u64> {
    let len = src.len()?;
    let threads = threads.clamp(1, 64);
    let mut blocks = Blocks { src, pos: 0, carry: vec![], eof: false };
    std::thread::scope(|s| {
        let mut number = 0usize;
        let mut pending = None;
        let mut spare: Vec<u8> = vec![];
        loop {
            let next = blocks.next(std::mem::take(&mut spare))?;
            let scanning = next.map(|(at, block)| {
                (
                    at,
                    s.spawn(move || {
                        let lines = scan_block(&block, threads);
                        (block, lines)
                    }),
                )
            });
            if let Some((at, scan)) = pending.take() {
                let scan: std::thread::ScopedJoinHandle<'_, (Vec<u8>, Vec<Vec<StreamedLine>>)> = scan;
                let (block, mut lines) = scan.join().map_err(|_| io::Error::other("a scan thread panicked"))?;
                spare = block;
                for l in lines.iter_mut().flatten() {
                    number += 1;
                    l.number = number;
                    l.offset += at;
                    if line(l).is_break() {
                        return Ok(blocks.pos);
                    }
                }
            }
            match scanning {
                Some(next) => pending = Some(next),
                None => return Ok(len.max(blocks.pos)),
            }
        }
    })
}

/// The file in blocks of whole lines.
struct Blocks<'a> {
    src: &'a dyn ReadAt,
    /// Where the next block starts (the carried bytes are its first).
    pos: u64,
    /// The start of a line the last block cut.
    carry: Vec<u8>,
    eof: bool,
}

impl Blocks<'_> {
    /// The next block (its offset and bytes) in `buf`: whole lines, and at
    /// the end of the file whatever is left. A line longer than a block
    /// grows it.
    fn next(&mut self, mut buf: Vec<u8>) -> io::Result<Option<(u64, Vec<u8>)>> {
        if self.eof && self.carry.is_empty() {
            return Ok(None);
        }
        buf.clear();
        buf.append(&mut self.carry);
        let at = self.pos;
        loop {
            let mut got = buf.len();
            let want = BLOCK.max(got * 2);
            buf.resize(want, 0);
            while got < want && !self.eof {
                match self.src.read_at(&mut buf[got..want], at + got as u64) {
                    Ok(0) => self.eof = true,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            buf.truncate(got);
            if self.eof {
                self.pos = at + got as u64;
                return Ok((got > 0).then_some((at, buf)));
            }
            if let Some(i) = memchr::memrchr(b'\n', &buf) {
                self.carry.extend_from_slice(&buf[i + 1..]);
                buf.truncate(i + 1);
                self.pos = at + buf.len() as u64;
                return Ok(Some((at, buf)));
            }
        }
    }
}

/// The lines of a block of whole lines, scanned on up to `threads` threads
/// (this one and `threads - 1` more), in order (a list per thread).
fn scan_block(block: &[u8], threads: usize) -> Vec<Vec<StreamedLine>> {
    let mut bounds = vec![0usize];
    for k in 1..threads {
        let guess = (block.len() / threads * k).max(*bounds.last().unwrap_or(&0));
        let start = memchr::memchr(b'\n', &block[guess..]).map_or(block.len(), |i| guess + i + 1);
        bounds.push(start);
    }
    bounds.push(block.len());
    bounds.dedup();
    let ranges: Vec<(&[u8], usize)> = bounds.windows(2).map(|w| (&block[w[0]..w[1]], w[0])).collect();
    let Some((&(first, _), rest)) = ranges.split_first() else { return vec![] };
    std::thread::scope(|s| {
        let handles: Vec<_> = rest.iter().map(|&(r, at)| s.spawn(move || scan_lines(r, at))).collect();
        let mut out = vec![scan_lines(first, 0)];
        out.extend(handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))));
        out
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

    /// Every line, numbered and placed as the light scan places it, across
    /// block edges, a line longer than a block and a last line without its newline.
    #[test]
    fn every_line_streams_in_order_across_blocks() {
        let mut file = Vec::new();
        let mut k = 0usize;
        while file.len() < 3 * BLOCK {
            let pad = "x".repeat(k * 7919 % 3000);
            file.extend_from_slice(
                format!(
                    "{{\"type\":\"message\",\"id\":\"{k}\",\"message\":{{\"role\":\"user\",\"content\":\"{pad}\"}}}}\n"
                )
                .as_bytes(),
            );
            if k.is_multiple_of(50) {
                file.extend_from_slice(b"\n  \nnot json\n");
            }
            if k == 100 {
                file.extend_from_slice(format!("{{\"a\":\"{}\"}}\n", "y".repeat(BLOCK + 10)).as_bytes());
            }
            k += 1;
        }
        file.extend_from_slice(b"{\"type\":\"label\",\"id\":\"z\"}");
        let expected = crate::scan::scan_source(&file, file.len() as u64, 1, true).unwrap_or_default();
        for threads in [1, 2, 3] {
            let mut got = vec![];
            let read = stream_lines(&file, threads, &mut |l| {
                got.push((l.number, l.offset, l.len, l.kind.clone(), l.note.clone()));
                ControlFlow::Continue(())
            });
            assert_eq!(read.ok(), Some(file.len() as u64));
            let want: Vec<_> =
                expected.iter().map(|l| (l.number, l.offset, l.len, l.kind.clone(), l.note.clone())).collect();
            assert_eq!(got.len(), want.len(), "{threads} threads");
            assert!(got == want, "{threads} threads");
        }
    }

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
