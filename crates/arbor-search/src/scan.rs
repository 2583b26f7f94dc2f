//! Scanning byte ranges of one session file: buffers of whole lines read
//! with positioned reads, the query's lead literal searched over each buffer
//! (as ripgrep does: the buffer, not line by line), and only the lines it
//! finds (and lines with odd escapes) decoded and checked; the range's gram
//! filter built on the way when asked.
//!
//! Memory is bounded: a buffer holds up to [`MAX_LINE`] bytes; a longer line
//! is read in windows, its filter built from them, and it is a hit when a
//! window holds the query's lead literal (its text is never decoded whole).

use std::collections::VecDeque;
use std::io;

use serde_json::Value;

use arbor_log::reader::{parse_line, Parsed};
use arbor_log::scan::{ReadAt, RecordHead};
use arbor_log::{searchable_text, EntryType, Role};
use arbor_tree::sessions::Relevance;

use crate::escape::{escaped, odd_escapes};
use crate::grams::{Builder, Filter};
use crate::pattern::{InSession, Spans};
use crate::snippet::snippet;

/// Bytes read at a time.
const CHUNK: usize = 256 << 10;
/// The longest line decoded; longer ones are read in windows (see the module docs).
pub const MAX_LINE: usize = 16 << 20;
/// Bytes a window of a long line shares with the one before it.
const OVERLAP: usize = 4096;
/// A range read to build filters gets one filter per this many bytes (cut at
/// a line end), so a candidate filter costs a read of about this much.
pub const COLUMN_BYTES: u64 = 1 << 20;

/// One entry that matches, as the scan finds it in its session.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryHit {
    /// The line's byte offset (a migrated file's entry index).
    pub offset: u64,
    /// The entry's id.
    pub entry_id: String,
    /// The entry's `type`.
    pub entry_type: EntryType,
    /// The message's role, for a message entry.
    pub role: Option<Role>,
    /// The entry's time (epoch ms), when it has one.
    pub ts_ms: Option<i64>,
    /// The text around the first match, on one line.
    pub snippet: String,
    /// The matches in `snippet`, as `[start, end)` character offsets.
    pub marks: Vec<[usize; 2]>,
    /// How the entry matched (exactly, or only fuzzily).
    pub relevance: Relevance,
}

/// A byte range of a session file to scan, and whether to build its filters
/// (one per [`COLUMN_BYTES`] or so, each for the whole lines it covers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// The first byte (a line's start).
    pub start: u64,
    /// The byte after the last (a line's end).
    pub end: u64,
    /// Build the range's filters while scanning it.
    pub build: bool,
}

/// What scanning a session's ranges gave.
#[derive(Debug, Default)]
pub struct Scanned {
    /// The last hits of the session (the highest offsets), at most the limit, last first.
    pub hits: Vec<EntryHit>,
    /// The filters built, with the ranges they cover, in order.
    pub filters: Vec<(Range, Filter)>,
    /// Bytes read.
    pub bytes: u64,
    /// Lines decoded.
    pub decoded: u64,
}

/// How a scan matches entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Exactly, finding candidate lines by their raw bytes first.
    Exact,
    /// Exactly or fuzzily; every line is decoded.
    Fuzzy,
}

/// Keeps the last `limit` hits.
struct Kept {
    limit: usize,
    hits: VecDeque<EntryHit>,
}

impl Kept {
    fn push(&mut self, h: EntryHit) {
        if self.limit == 0 {
            return;
        }
        if self.hits.len() == self.limit {
            self.hits.pop_front();
        }
        self.hits.push_back(h);
    }
}

/// A line whose bytes may hold a hit, decoded only if the hits after it are too few.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    offset: u64,
    len: usize,
}

/// The most candidate lines remembered per session; when more are found,
/// the first are forgotten (and read again only if the rest hold too few hits).
const MAX_CANDIDATES: usize = 1 << 16;

/// What a scan collects before deciding which candidates to decode.
struct Collect<'s> {
    pat: &'s InSession<'s>,
    mode: Mode,
    /// Hits found while reading (fuzzy mode, lines with odd escapes, long lines).
    kept: Kept,
    candidates: VecDeque<Candidate>,
    /// The end of the last candidate forgotten, if any was.
    forgot: Option<u64>,
    decoded: u64,
}

impl Collect<'_> {
    fn candidate(&mut self, c: Candidate) {
        if self.candidates.len() == MAX_CANDIDATES {
            if let Some(old) = self.candidates.pop_front() {
                self.forgot = Some(old.offset + old.len as u64);
            }
        }
        self.candidates.push_back(c);
    }
}

/// Scans `ranges` (sorted, not overlapping) of the file `src` for entries
/// matching `pat`; keeps the last `limit` hits.
///
/// Candidate lines are only noted while the ranges are read; then they are
/// decoded from the last one back, until `limit` hits are certain, so a
/// word on every line costs `limit` decodes, not one per line.
pub fn scan_ranges(
    src: &dyn ReadAt,
    ranges: &[Range],
    pat: &InSession,
    mode: Mode,
    limit: usize,
) -> io::Result<Scanned> {
    let mut out = Scanned::default();
    let mut c = Collect {
        pat,
        mode,
        kept: Kept { limit, hits: VecDeque::new() },
        candidates: VecDeque::new(),
        forgot: None,
        decoded: 0,
    };
    for r in ranges {
        out.bytes += read_range(src, r, &mut c, &mut out.filters)?;
    }
    let mut hits: Vec<EntryHit> = c.kept.hits.drain(..).collect();
    let mut line = vec![];
    for cand in c.candidates.iter().rev() {
        if hits.iter().filter(|h| h.offset > cand.offset).count() >= limit {
            break;
        }
        line.resize(cand.len, 0);
        let n = read_full(src, &mut line, cand.offset)?;
        c.decoded += 1;
        if let Some(h) = decode_check(cand.offset, &line[..n], pat, mode) {
            hits.push(h);
        }
    }
    // Too few hits after the candidates remembered: read what came before them again.
    if let (Some(forgot), true) = (c.forgot, hits.len() < limit) {
        let again: Vec<Range> = ranges
            .iter()
            .filter(|r| r.start < forgot)
            .map(|r| Range { start: r.start, end: r.end.min(forgot), build: false })
            .collect();
        let mut inline = Collect {
            pat,
            mode,
            kept: Kept { limit, hits: VecDeque::new() },
            candidates: VecDeque::new(),
            forgot: None,
            decoded: 0,
        };
        for r in &again {
            read_range_inline(src, r, &mut inline)?;
        }
        c.decoded += inline.decoded;
        hits.extend(inline.kept.hits);
    }
    hits.sort_by_key(|h| std::cmp::Reverse(h.offset));
    hits.dedup_by_key(|h| h.offset);
    hits.truncate(limit);
    out.hits = hits;
    out.decoded = c.decoded;
    Ok(out)
}

/// Reads exactly `buf.len()` bytes at `offset`, or fewer at the end.
fn read_full(src: &dyn ReadAt, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Reads one range, noting candidates (and building its filter when asked); the bytes read.
fn read_range(src: &dyn ReadAt, r: &Range, c: &mut Collect, filters: &mut Vec<(Range, Filter)>) -> io::Result<u64> {
    let size = |from: u64| (r.end - from).min(COLUMN_BYTES + CHUNK as u64);
    let mut builder = r.build.then(|| Builder::new(size(r.start)));
    let mut column_start = r.start;
    let mut reader = Reader::new(src, r.start, r.end);
    let mut long = LongLine::default();
    let mut bytes = 0;
    while let Some(piece) = reader.next()? {
        match piece {
            Piece::Lines { base, bytes: buf } => {
                bytes += buf.len() as u64;
                if let Some(b) = builder.as_mut() {
                    b.add(buf);
                }
                scan_lines(base, buf, c, builder.as_mut());
                // A column is cut at a line end once it is big enough.
                let end = base + buf.len() as u64;
                if builder.is_some() && end - column_start >= COLUMN_BYTES && end < r.end {
                    if let Some(b) = builder.replace(Builder::new(size(end))) {
                        filters.push((Range { start: column_start, end, build: true }, b.finish()));
                    }
                    column_start = end;
                }
            }
            Piece::Long { base, window, fresh, last } => {
                bytes += fresh as u64;
                if let Some(b) = builder.as_mut() {
                    b.add(window);
                }
                long.feed(base, window, c.pat);
                if last {
                    if let Some(h) = std::mem::take(&mut long).finish() {
                        c.kept.push(h);
                    }
                }
            }
        }
    }
    if let Some(b) = builder {
        // What was read: less than asked when the file is shorter now.
        filters.push((Range { start: column_start, end: r.start + bytes, build: true }, b.finish()));
    }
    Ok(bytes)
}

/// Reads one range again, checking every candidate as it comes (after candidates were forgotten).
fn read_range_inline(src: &dyn ReadAt, r: &Range, c: &mut Collect) -> io::Result<()> {
    let mut reader = Reader::new(src, r.start, r.end);
    while let Some(piece) = reader.next()? {
        if let Piece::Lines { base, bytes } = piece {
            let mut noted = Collect {
                pat: c.pat,
                mode: c.mode,
                kept: Kept { limit: 0, hits: VecDeque::new() },
                candidates: VecDeque::new(),
                forgot: None,
                decoded: 0,
            };
            scan_lines(base, bytes, &mut noted, None);
            c.decoded += noted.decoded;
            for h in noted.kept.hits {
                c.kept.push(h);
            }
            for cand in noted.candidates {
                let at = (cand.offset - base) as usize;
                c.decoded += 1;
                if let Some(h) = decode_check(cand.offset, &bytes[at..at + cand.len], c.pat, c.mode) {
                    c.kept.push(h);
                }
            }
        }
    }
    Ok(())
}

/// Notes the candidate lines of a buffer of whole lines; lines with odd
/// escapes (and every line, fuzzily) are decoded at once.
fn scan_lines(base: u64, bytes: &[u8], c: &mut Collect, mut builder: Option<&mut Builder>) {
    // Lines with odd escapes are decoded whatever their bytes hold.
    let mut odd: Vec<usize> = odd_escapes(bytes).map(|i| line_start(bytes, i)).collect();
    odd.sort_unstable();
    odd.dedup();
    let mut odd = odd.into_iter().peekable();
    let (pat, mode) = (c.pat, c.mode);
    let lead = if mode == Mode::Exact { pat.lead() } else { None };
    let mut at = 0;
    while at < bytes.len() {
        // The next candidate line: the next lead match's line, or the next odd line, whichever is first.
        let next = match lead {
            None => Some(at),
            Some(re) => re.find_at(bytes, at).map(|m| line_start(bytes, m.start()).max(at)),
        };
        let is_odd = odd.peek().is_some_and(|&o| next.is_none_or(|n| o <= n));
        let start = if is_odd { odd.next().unwrap_or(at) } else { next.unwrap_or(bytes.len()) };
        if start >= bytes.len() {
            break;
        }
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i + 1);
        let line = &bytes[start..end];
        at = end;
        let is_odd = is_odd || odd.next_if(|&o| o == start).is_some();
        let offset = base + start as u64;
        if !is_odd && mode == Mode::Exact {
            if pat.line_may_match(line) {
                c.candidate(Candidate { offset, len: line.len() });
            }
            continue;
        }
        c.decoded += 1;
        let Some((v, head)) = entry_of(line) else { continue };
        let text = searchable_text(&v);
        if is_odd {
            // The text's own bytes, escaped as a canonical writer would: what a literal is looked for as.
            if let Some(b) = builder.as_deref_mut() {
                b.add(escaped(&text).as_bytes());
            }
        }
        if let Some(h) = check(offset, &text, head, pat, mode) {
            c.kept.push(h);
        }
    }
}

/// Decodes a line and checks it.
fn decode_check(offset: u64, line: &[u8], pat: &InSession, mode: Mode) -> Option<EntryHit> {
    let (v, head) = entry_of(line)?;
    check(offset, &searchable_text(&v), head, pat, mode)
}

/// The offset of the start of the line holding byte `i`.
fn line_start(bytes: &[u8], i: usize) -> usize {
    memchr::memrchr(b'\n', &bytes[..i]).map_or(0, |p| p + 1)
}

/// A line's value and head when it is an entry (not the header, not junk).
fn entry_of(line: &[u8]) -> Option<(Value, RecordHead)> {
    let Parsed::Object(v) = parse_line(line).0 else { return None };
    let head = RecordHead::from_value(&v);
    if head.not_an_entry().is_some() || head.entry_type.as_ref().is_some_and(|t| t.as_str() == "session") {
        return None;
    }
    Some((v, head))
}

/// The hit of an entry with text `text`, if it matches.
fn check(offset: u64, text: &str, head: RecordHead, pat: &InSession, mode: Mode) -> Option<EntryHit> {
    let id = head.id.as_deref().unwrap_or_default();
    let (spans, relevance) = match pat.exact(text, id) {
        Some(s) => (s, Relevance::Exact),
        None if mode == Mode::Fuzzy => (pat.fuzzy(text, id)?, Relevance::Fuzzy),
        None => return None,
    };
    Some(hit(offset, head, text, &spans, relevance))
}

fn hit(offset: u64, head: RecordHead, text: &str, spans: &Spans, relevance: Relevance) -> EntryHit {
    let (snippet, marks) = snippet(text, spans);
    EntryHit {
        offset,
        entry_id: head.id.map(|s| s.to_string()).unwrap_or_default(),
        entry_type: head.entry_type.unwrap_or_else(|| EntryType::parse("")),
        role: head.role,
        ts_ms: head.ts_ms,
        snippet,
        marks,
        relevance,
    }
}

/// Checks the entries of a file that is read as values (a migrated file),
/// each with its position; keeps the last `limit` hits.
pub fn scan_values(
    values: impl Iterator<Item = (u64, Value)>,
    pat: &InSession,
    mode: Mode,
    limit: usize,
) -> Vec<EntryHit> {
    let mut kept = Kept { limit, hits: VecDeque::new() };
    for (pos, v) in values {
        let head = RecordHead::from_value(&v);
        if head.not_an_entry().is_some() {
            continue;
        }
        let text = searchable_text(&v);
        if let Some(h) = check(pos, &text, head, pat, mode) {
            kept.push(h);
        }
    }
    kept.hits.into_iter().rev().collect()
}

/// What a long line (see the module docs) showed so far.
#[derive(Debug, Default)]
struct LongLine {
    base: u64,
    head: Option<RecordHead>,
    found: Option<(String, Spans)>,
}

impl LongLine {
    fn feed(&mut self, base: u64, window: &[u8], pat: &InSession) {
        if self.head.is_none() {
            self.base = base;
            self.head = Some(head_of(window));
        }
        if self.found.is_some() {
            return;
        }
        let Some(re) = pat.lead() else { return };
        if let Some(m) = re.find(window) {
            let from = m.start().saturating_sub(400);
            let to = (m.end() + 800).min(window.len());
            let text = unescape(&window[from..to]);
            let spans = pat.exact(&text, "").unwrap_or_default();
            self.found = Some((text, spans));
        }
    }

    fn finish(self) -> Option<EntryHit> {
        let (text, spans) = self.found?;
        let head = self.head?;
        head.not_an_entry().is_none().then(|| hit(self.base, head, &text, &spans, Relevance::Exact))
    }
}

/// The head fields of a line too long to decode, read from its first bytes.
fn head_of(window: &[u8]) -> RecordHead {
    let field = |key: &str| -> Option<String> {
        let pat = format!("\"{key}\":\"");
        let at = memchr::memmem::find(window, pat.as_bytes())? + pat.len();
        let end = at + memchr::memchr(b'"', &window[at..])?;
        std::str::from_utf8(&window[at..end]).ok().map(str::to_owned)
    };
    RecordHead {
        entry_type: field("type").map(|t| EntryType::parse(&t)),
        id: field("id").map(Into::into),
        ts_ms: field("timestamp").and_then(|t| arbor_log::parse_iso_ms(&t)),
        role: field("role").map(|r| Role::parse(&r)),
        ..RecordHead::default()
    }
}

/// Raw JSON string bytes as text, escapes decoded as far as they can be.
fn unescape(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('u') => {
                let hex: String = it.by_ref().take(4).collect();
                out.push(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}'));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// A piece of a range, as the reader yields it.
enum Piece<'a> {
    /// Whole lines (the last may lack its newline at the range's end).
    Lines { base: u64, bytes: &'a [u8] },
    /// A window of a line longer than [`MAX_LINE`]: `base` is the line's
    /// offset, `fresh` the bytes not in the window before, `last` true on the
    /// window that holds the line's end.
    Long { base: u64, window: &'a [u8], fresh: usize, last: bool },
}

/// Reads a range in buffers of whole lines.
struct Reader<'a> {
    src: &'a dyn ReadAt,
    pos: u64,
    end: u64,
    /// The buffer: `buf[..cap]` is in use (what is past it is left from an
    /// earlier reader of this thread, never read).
    buf: Vec<u8>,
    cap: usize,
    /// `buf[start..filled]` holds unread bytes from offset `base + start`.
    start: usize,
    filled: usize,
    base: u64,
    /// The offset of the long line being read, if one is.
    long: Option<u64>,
}

impl<'a> Reader<'a> {
    fn new(src: &'a dyn ReadAt, from: u64, end: u64) -> Reader<'a> {
        let cap = usize::try_from(end.saturating_sub(from)).unwrap_or(CHUNK).clamp(1, CHUNK);
        // The thread's buffer of the reader before: a fresh one per session
        // costs its zeroing and page faults every time (most of reading a
        // small session's bytes).
        let mut buf = BUFFER.take();
        if buf.len() < cap {
            buf = vec![0; CHUNK.max(cap)];
        }
        Reader { src, pos: from, end, buf, cap, start: 0, filled: 0, base: from, long: None }
    }

    fn next(&mut self) -> io::Result<Option<Piece<'_>>> {
        loop {
            let unread = &self.buf[self.start..self.filled];
            if let Some(line) = self.long {
                // Inside a long line: yield a window (with the overlap before it).
                if unread.is_empty() && self.pos >= self.end {
                    self.long = None;
                    return Ok(Some(Piece::Long { base: line, window: &[], fresh: 0, last: true }));
                }
                let newline = memchr::memchr(b'\n', unread);
                if !unread.is_empty() && (newline.is_some() || self.pos >= self.end || self.filled == self.cap) {
                    let cut = newline.map_or(self.filled, |i| self.start + i + 1);
                    let from = self.start.saturating_sub(OVERLAP);
                    let last = newline.is_some() || self.pos >= self.end;
                    let fresh = cut - self.start;
                    self.start = cut;
                    if last {
                        self.long = None;
                    }
                    return Ok(Some(Piece::Long { base: line, window: &self.buf[from..cut], fresh, last }));
                }
            } else if let Some(i) = memchr::memrchr(b'\n', unread) {
                let (a, b) = (self.start, self.start + i + 1);
                self.start = b;
                return Ok(Some(Piece::Lines { base: self.base + a as u64, bytes: &self.buf[a..b] }));
            } else if self.pos >= self.end {
                if unread.is_empty() {
                    return Ok(None);
                }
                let a = self.start;
                self.start = self.filled;
                return Ok(Some(Piece::Lines { base: self.base + a as u64, bytes: &self.buf[a..self.filled] }));
            } else if self.start == 0 && self.filled == self.cap {
                if self.cap >= MAX_LINE {
                    // A line longer than any buffer: read it in windows.
                    self.long = Some(self.base);
                    let fresh = self.filled;
                    self.start = self.filled;
                    return Ok(Some(Piece::Long {
                        base: self.base,
                        window: &self.buf[..self.filled],
                        fresh,
                        last: false,
                    }));
                }
                self.cap = (self.cap * 2).min(MAX_LINE);
                if self.buf.len() < self.cap {
                    self.buf.resize(self.cap, 0);
                }
            }
            if self.pos >= self.end && self.start >= self.filled {
                return Ok(None);
            }
            self.fill()?;
        }
    }

    /// Moves the unread bytes (and, in a long line, the overlap) to the front and reads more.
    fn fill(&mut self) -> io::Result<()> {
        let keep = if self.long.is_some() { self.start.saturating_sub(OVERLAP) } else { self.start };
        if keep > 0 {
            self.buf.copy_within(keep..self.filled, 0);
            self.base += keep as u64;
            self.filled -= keep;
            self.start -= keep;
        }
        let room = self.cap - self.filled;
        let want = room.min(usize::try_from(self.end - self.pos).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(());
        }
        let n = loop {
            match self.src.read_at(&mut self.buf[self.filled..self.filled + want], self.pos) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r?,
            }
        };
        if n == 0 {
            // Shorter than when it was looked at: stop here.
            self.end = self.pos;
        }
        self.filled += n;
        self.pos += n as u64;
        Ok(())
    }
}

impl Drop for Reader<'_> {
    /// Hands the buffer on to the thread's next reader (not one grown for a long line).
    fn drop(&mut self) {
        if self.buf.len() <= CHUNK {
            BUFFER.set(std::mem::take(&mut self.buf));
        }
    }
}

thread_local! {
    /// Each thread's read buffer, between readers.
    static BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::pattern::Pattern;
    use arbor_tree::sessions::parse_query as parse;

    fn line(id: &str, text: &str) -> String {
        let v = serde_json::json!({"type":"message","id":id,"parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",
            "message":{"role":"user","content":text}});
        format!("{v}\n")
    }

    fn scan(file: &[u8], q: &str, build: bool) -> Scanned {
        let p = Pattern::new(&parse(q).unwrap()).unwrap().unwrap();
        let r = Range { start: 0, end: file.len() as u64, build };
        scan_ranges(&file.to_vec(), &[r], &p.in_session("sess"), Mode::Exact, 20).unwrap()
    }

    fn ids(s: &Scanned) -> Vec<&str> {
        s.hits.iter().map(|h| h.entry_id.as_str()).collect()
    }

    #[test]
    fn a_reader_after_a_longer_one_sees_only_its_own_bytes() {
        // The thread's buffer is handed from one reader to the next: what the
        // first left in it must never be read as the second's.
        let mut long = String::new();
        for i in 0..3000 {
            long += &line(&format!("a{i:04}"), "stale needle text, no newline after the short file");
        }
        assert_eq!(ids(&scan(long.as_bytes(), "needle", false)).len(), 20);
        let short = line("b1", "fresh hay") + &line("b2", "fresh needle");
        let cut = &short.as_bytes()[..short.len() - 1];
        for (file, want) in [(short.as_bytes(), vec!["b2"]), (cut, vec!["b2"]), (&short.as_bytes()[..40], vec![])] {
            assert_eq!(ids(&scan(file, "needle", false)), want);
            assert_eq!(ids(&scan(file, "stale", false)), Vec::<&str>::new());
        }
    }

    #[test]
    fn finds_entries_last_first_and_decodes_only_candidates() {
        let mut f = String::from(
            r#"{"type":"session","version":3,"id":"sess","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
        );
        f.push('\n');
        for i in 0..200 {
            f += &line(&format!("e{i:03}"), if i % 50 == 7 { "the Needle here" } else { "hay" });
        }
        let s = scan(f.as_bytes(), "needle", true);
        assert_eq!(ids(&s), ["e157", "e107", "e057", "e007"]);
        assert_eq!(s.decoded, 4);
        let h = &s.hits[0];
        assert_eq!(h.snippet, "the Needle here");
        assert_eq!(h.marks, vec![[4, 10]]);
        assert_eq!(s.filters.len(), 1);
        assert_eq!(s.bytes, f.len() as u64);
    }

    #[test]
    fn filters_are_cut_into_columns_at_line_ends() {
        let f: String = (0..40_000).map(|i| line(&format!("e{i:05}"), &format!("word{i}"))).collect();
        let s = scan(f.as_bytes(), "word39999", true);
        assert!(s.filters.len() >= 5, "{}", s.filters.len());
        let mut at = 0;
        for (r, filter) in &s.filters {
            assert_eq!(r.start, at);
            assert!(r.end as usize == f.len() || f.as_bytes()[r.end as usize - 1] == b'\n');
            // Each column's filter holds the words of its lines.
            let text = &f[r.start as usize..r.end as usize];
            let first = text.find("word").unwrap();
            let word: String = text[first..].chars().take_while(|c| c.is_alphanumeric()).collect();
            let p = Pattern::new(&parse(&word).unwrap()).unwrap().unwrap();
            assert!(p.need().eval(&|g| filter.has(g)), "{word}");
            at = r.end;
        }
        assert_eq!(at as usize, f.len());
    }

    #[test]
    fn a_word_on_every_line_decodes_only_the_last_few() {
        let f: String = (0..1000).map(|i| line(&format!("e{i:04}"), "word")).collect();
        let s = scan(f.as_bytes(), "word", false);
        assert_eq!(s.hits.len(), 20);
        assert_eq!(s.hits[0].entry_id, "e0999");
        assert_eq!(s.decoded, 20);
        // Candidates whose bytes match but whose text does not ("word" in a key) are decoded past.
        let keys: String = (0..100)
            .map(|i| format!("{{\"type\":\"custom\",\"id\":\"k{i:03}\",\"word\":1}}\n"))
            .chain(std::iter::once(line("last", "a word")))
            .collect();
        let s = scan(format!("{}{keys}", line("first", "word")).as_bytes(), "word", false);
        assert_eq!(ids(&s), ["last", "first"]);
    }

    #[test]
    fn candidates_forgotten_are_read_again_when_the_rest_hold_too_few_hits() {
        // The only hit comes first, then more raw candidates than are remembered.
        let mut f = line("hit", "needle");
        f += &"{\"type\":\"custom\",\"id\":\"c\",\"needle\":1}\n".repeat(MAX_CANDIDATES + 10);
        let s = scan(f.as_bytes(), "needle", false);
        assert_eq!(ids(&s), ["hit"]);
    }

    #[test]
    fn escaped_text_is_found_through_odd_escapes_too() {
        let python = "{\"type\": \"message\", \"id\": \"py1\", \"message\": {\"role\": \"user\", \"content\": \"\\u5907\\u4efd caf\\u00e9 a\\/b\"}}\n";
        let js = line("js1", "备份 \"quoted\" C:\\dir\tx");
        let file = format!("{python}{js}");
        assert_eq!(ids(&scan(file.as_bytes(), "备份", false)), ["js1", "py1"]);
        assert_eq!(ids(&scan(file.as_bytes(), "café", false)), ["py1"]);
        assert_eq!(ids(&scan(file.as_bytes(), "a/b", false)), ["py1"]);
        assert_eq!(ids(&scan(file.as_bytes(), r#""quoted""#, false)), ["js1"]);
        assert_eq!(ids(&scan(file.as_bytes(), r"C:\dir", false)), ["js1"]);
        // The filter built holds the decoded text's grams.
        let s = scan(file.as_bytes(), "x", true);
        let p = Pattern::new(&parse("café").unwrap()).unwrap().unwrap();
        assert!(p.need().eval(&|g| s.filters[0].1.has(g)));
    }

    #[test]
    fn lines_longer_than_any_buffer_are_read_in_windows() {
        let big = format!("{}NEEDLE{}", "a".repeat(MAX_LINE + 100), "b".repeat(CHUNK * 3));
        let file = format!("{}{}{}", line("s1", "x"), line("long", &big), line("e2", "needle"));
        let s = scan(file.as_bytes(), "needle", true);
        assert_eq!(ids(&s), ["e2", "long"]);
        assert!(s.hits[1].snippet.contains("NEEDLE"), "{}", s.hits[1].snippet);
        assert_eq!(s.bytes, file.len() as u64);
        let p = Pattern::new(&parse("aNEEDLEb").unwrap()).unwrap().unwrap();
        assert!(p.need().eval(&|g| s.filters[0].1.has(g)));
    }

    #[test]
    fn a_last_line_without_newline_and_ranges() {
        let a = line("e1", "alpha");
        let file = format!("{a}{}", line("e2", "alpha beta").trim_end());
        let p = Pattern::new(&parse("alpha").unwrap()).unwrap().unwrap();
        let whole = Range { start: 0, end: file.len() as u64, build: false };
        let s = scan_ranges(&file.clone().into_bytes(), &[whole], &p.in_session("x"), Mode::Exact, 1).unwrap();
        assert_eq!(ids(&s), ["e2"], "the limit keeps the last");
        let tail = Range { start: a.len() as u64, end: file.len() as u64, build: false };
        let s = scan_ranges(&file.into_bytes(), &[tail], &p.in_session("x"), Mode::Exact, 5).unwrap();
        assert_eq!(ids(&s), ["e2"]);
    }
}
