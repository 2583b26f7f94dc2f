//! The streaming scan behind `check` and `repair`: every physical line of a
//! file read once, in order, validated exactly as [`crate::scan::scan_line`]
//! validates it (the fast validator first, the exact parser for what it
//! declines), with what those two commands need beyond a line's head read in
//! the same pass: the tool calls an assistant message makes, the call a tool
//! result answers, and a `parentId` that is neither a string nor `null`.
//!
//! Nothing is kept: the file is cut into ranges that all cores read and
//! scan, and each line is handed to the caller in file order, then dropped.
//! Memory is a few ranges' lines, whatever the file's size.

use std::collections::BTreeMap;
use std::io;
use std::ops::ControlFlow;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use compact_str::CompactString;
use serde_json::Value;

use crate::diag::DiagnosticKind;
use crate::fast_head::HeadDetail;
use crate::message::MessageView;
use crate::reader::{parse_line, Parsed};
use crate::scan::{scan_line_with, ReadAt, ScanKind};
use crate::span::lines_starting_in;
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

/// Bytes of the file per range: the lines that start in a range are scanned
/// together on one thread, and handed to the caller a range at a time. A
/// scanned line holds a few hundred bytes whatever its length, so a range
/// of tiny lines holds more than its bytes: small ranges keep what waits
/// in the queue (and how much that varies with the threads' lead) to a few
/// MB.
const BLOCK: usize = 512 << 10;

/// Ranges scanned ahead of the caller, per thread, at most: memory stays a
/// few ranges' lines whatever the file's size.
const AHEAD: usize = 2;

/// Streams every line of `src` to `line`, in file order, on up to `threads`
/// threads, until `line` breaks; returns the offset just past the last line
/// handed over. Each line is lent, not moved (a line's head is a few hundred
/// bytes): take what you keep.
///
/// The file is cut into ranges of 512 KiB; the threads read and scan
/// them (each its own ranges, by positioned reads) while this thread hands
/// the scanned ranges' lines to `line` in order.
pub fn stream_lines(
    src: &dyn ReadAt,
    threads: usize,
    line: &mut dyn FnMut(&mut StreamedLine) -> ControlFlow<()>,
) -> io::Result<u64> {
    let len = src.len()?;
    let ranges = usize::try_from(len.div_ceil(BLOCK as u64)).unwrap_or(usize::MAX).max(1);
    let threads = threads.clamp(1, 64).min(ranges);
    let scan = |k: usize| -> Scanned {
        let from = k as u64 * BLOCK as u64;
        let mut out = vec![];
        lines_starting_in(src, (from, from + BLOCK as u64), len, &mut |bytes, offset, n| {
            let mut l = streamed_line(bytes);
            l.offset = offset;
            l.len = n;
            out.push(l);
        })?;
        Ok(out)
    };
    if threads == 1 {
        return hand_ranges(ranges, scan, line);
    }
    let queue = Queue::new(threads * AHEAD);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| queue.work(ranges, &scan));
        }
        let done = hand_ranges(ranges, |k| queue.take(k), line);
        queue.stop();
        done
    })
}

/// Hands the lines of ranges `0..ranges` (each from `next`) to `line` in
/// order, numbered, until `line` breaks; the offset just past the last line
/// handed over.
fn hand_ranges(
    ranges: usize,
    mut next: impl FnMut(usize) -> Scanned,
    line: &mut dyn FnMut(&mut StreamedLine) -> ControlFlow<()>,
) -> io::Result<u64> {
    let (mut number, mut end) = (0usize, 0u64);
    for k in 0..ranges {
        for l in &mut next(k)? {
            number += 1;
            l.number = number;
            end = l.offset + l.len as u64;
            if line(l).is_break() {
                return Ok(end);
            }
        }
    }
    Ok(end)
}

/// The ranges scanned and not yet handed over, by range number.
struct Queue {
    state: Mutex<QueueState>,
    /// Signalled when a range is scanned.
    scanned: Condvar,
    /// Signalled when a range is handed over (or the stream stops).
    taken: Condvar,
    /// The next range to scan.
    next: AtomicUsize,
    ahead: usize,
}

type Scanned = io::Result<Vec<StreamedLine>>;

struct QueueState {
    done: BTreeMap<usize, Scanned>,
    /// The ranges handed over so far.
    taken: usize,
    stopped: bool,
}

impl Queue {
    fn new(ahead: usize) -> Queue {
        let state = QueueState { done: BTreeMap::new(), taken: 0, stopped: false };
        Queue {
            state: Mutex::new(state),
            scanned: Condvar::new(),
            taken: Condvar::new(),
            next: AtomicUsize::new(0),
            ahead,
        }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A scanning thread: claims the next range, waits until it is no more
    /// than `ahead` ranges ahead of the caller, scans it, queues it.
    fn work(&self, ranges: usize, scan: &(dyn Fn(usize) -> Scanned + Sync)) {
        loop {
            let k = self.next.fetch_add(1, Ordering::Relaxed);
            if k >= ranges {
                return;
            }
            let state = self.lock();
            let state = self.taken.wait_while(state, |st| !st.stopped && k >= st.taken + self.ahead);
            if state.unwrap_or_else(PoisonError::into_inner).stopped {
                return;
            }
            let lines = std::panic::catch_unwind(AssertUnwindSafe(|| scan(k)))
                .unwrap_or_else(|_| Err(io::Error::other("a scan thread panicked")));
            self.lock().done.insert(k, lines);
            self.scanned.notify_one();
        }
    }

    /// Range `k`'s lines, once scanned.
    fn take(&self, k: usize) -> Scanned {
        let state = self.lock();
        let mut state =
            self.scanned.wait_while(state, |st| !st.done.contains_key(&k)).unwrap_or_else(PoisonError::into_inner);
        let lines = state.done.remove(&k).unwrap_or_else(|| Ok(vec![]));
        state.taken = k + 1;
        drop(state);
        self.taken.notify_all();
        lines
    }

    /// No more ranges are wanted: the scanning threads finish.
    fn stop(&self) {
        self.lock().stopped = true;
        self.taken.notify_all();
    }
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
