//! Lines too long to hold: a line of hundreds of megabytes (one tool
//! output, one pasted file) is read in windows, and what is kept of it is
//! its *reduced* form: the same line with every long string value cut to a
//! preview. The structure (keys, numbers, short strings, nesting) is kept
//! byte for byte, so the reduced line parses to the same record, and every
//! field an index, `check` or a tree needs (type, id, parentId, timestamp,
//! role, tool call ids and names) is never cut.
//!
//! A line is reduced only when the reduction is sure to mean what the whole
//! line means: the line is valid UTF-8 and ends with `\n`, every string is
//! well formed (no control byte, every escape valid, every surrogate escape
//! paired), no key is long, and the reduced form stays under
//! [`MAX_REDUCED`]. Anything else ([`reduce_line`] answers `None`) is read
//! whole by the caller, as before, so its diagnostic is the exact one.
//!
//! Memory: a window of the file, one string's first [`HELD`] bytes, and the
//! reduced line. Time: one pass over the line.
//!
//! A writer of the full text copies the line (or a part of it) from the file
//! a window at a time ([`copy_line_range`]): each window is checked against
//! a hash the reduction took of it, so a line changed since it was reduced
//! fails with an error instead of copying bytes nobody checked.

use std::hash::Hasher;
use std::io::{self, Write};

use crate::read_at::{read_some, ReadAt};

pub mod text;

/// Lines longer than this are read through [`reduce_line`] by the scans.
pub const LONG_LINE: usize = 4 << 20;

/// A string value longer than this (in bytes of JSON text) is not held: it
/// is cut to its first [`PREVIEW`] bytes.
pub const HELD: usize = 256 << 10;

/// Bytes of JSON text kept of a long string.
pub const PREVIEW: usize = 4 << 10;

/// The largest reduced line: past it the line is read whole.
pub const MAX_REDUCED: usize = 16 << 20;

/// Bytes read at a time.
const WINDOW: usize = 1 << 20;

/// Keys whose string values are never cut (a long one makes the line read
/// whole): what the scans, the index, the tree and a context's settings
/// read of a record.
const KEPT: [&[u8]; 16] = [
    b"type",
    b"id",
    b"parentId",
    b"timestamp",
    b"role",
    b"toolCallId",
    b"name",
    b"version",
    b"cwd",
    b"customType",
    b"stopReason",
    b"targetId",
    b"provider",
    b"model",
    b"modelId",
    b"api",
];

/// One string value cut in a reduced line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongString {
    /// File offset of the opening quote.
    pub at: u64,
    /// Length in bytes of the JSON string, both quotes included.
    pub len: u64,
    /// Where its preview is in the reduced line: the opening quote's
    /// position, and its length, both quotes included.
    pub kept: (usize, usize),
}

/// A line read in windows, with its long strings cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reduced {
    /// The reduced line, its terminator included.
    pub bytes: Vec<u8>,
    /// The length in bytes of the line in the file, its terminator included.
    pub len: u64,
    /// The strings cut, in order.
    pub strings: Vec<LongString>,
    /// A hash of each [`BLOCK`] bytes of the line, from its start (what
    /// [`copy_line_range`] checks the bytes it copies against).
    pub blocks: Vec<u64>,
}

impl Reduced {
    /// The offset in the line (from its start) of position `pos` of the
    /// reduced line; `None` inside a cut string (its quotes are outside).
    pub fn line_offset(&self, pos: usize) -> Option<u64> {
        let mut shift = 0u64;
        for s in &self.strings {
            let (at, kept) = s.kept;
            if pos <= at {
                break;
            }
            if pos < at + kept {
                return None;
            }
            shift += s.len - kept as u64;
        }
        Some(pos as u64 + shift)
    }
}

/// Bytes of a line per hash of [`Reduced::blocks`].
pub const BLOCK: usize = 1 << 20;

/// The hashes of a line's blocks, whatever sizes its reads come in.
#[derive(Default)]
struct Blocks {
    hasher: std::hash::DefaultHasher,
    filled: usize,
    done: Vec<u64>,
}

impl Blocks {
    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let take = bytes.len().min(BLOCK - self.filled);
            self.hasher.write(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled == BLOCK {
                self.finish_block();
            }
        }
    }

    fn finish_block(&mut self) {
        let h = std::mem::take(&mut self.hasher);
        self.done.push(h.finish());
        self.filled = 0;
    }

    fn finish(mut self) -> Vec<u64> {
        if self.filled > 0 {
            self.finish_block();
        }
        self.done
    }
}

/// One block's hash, as [`Blocks`] takes it.
fn block_hash(bytes: &[u8]) -> u64 {
    let mut h = std::hash::DefaultHasher::default();
    h.write(bytes);
    h.finish()
}

/// Copies bytes `from..to` of the line at file offset `offset` that
/// [`reduce_line`] gave `reduced` for (offsets counted from the line's
/// start) to `out`, a block at a time; each block read is checked against
/// its hash first. An `InvalidData` error when the file no longer holds
/// what was reduced (nothing of that block written).
pub fn copy_line_range(
    src: &dyn ReadAt,
    offset: u64,
    reduced: &Reduced,
    (from, to): (u64, u64),
    out: &mut dyn Write,
) -> io::Result<()> {
    let to = to.min(reduced.len);
    let mut buf = vec![];
    let mut at = from - from % BLOCK as u64;
    while at < to {
        let k = usize::try_from(at / BLOCK as u64).unwrap_or(usize::MAX);
        let want = usize::try_from((reduced.len - at).min(BLOCK as u64)).unwrap_or(BLOCK);
        buf.resize(want, 0);
        let mut filled = 0;
        while filled < want {
            match src.read_at(&mut buf[filled..], offset + at + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if filled < want || reduced.blocks.get(k) != Some(&block_hash(&buf)) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "the line changed on disk while it was copied"));
        }
        let start = usize::try_from(from.saturating_sub(at)).unwrap_or(0);
        let end = usize::try_from((to - at).min(want as u64)).unwrap_or(want);
        out.write_all(&buf[start..end])?;
        at += BLOCK as u64;
    }
    Ok(())
}

/// Where the lexer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Outside any string.
    Out,
    /// In a string.
    Str,
    /// Just after a backslash in a string.
    Escape,
    /// In a `\u` escape, with this many hex digits read and this code unit so far.
    Hex(u8, u16),
}

/// The reducer's state over one line.
struct Reducer {
    out: Vec<u8>,
    strings: Vec<LongString>,
    at: At,
    /// The last significant byte outside strings.
    prev: u8,
    /// The last string that ended, when it is short (a key, once `:` follows).
    last: Vec<u8>,
    /// The key of the value string being read (`None` in an array).
    key: Option<Vec<u8>>,
    /// Where the open string starts in `out` (its quote) and in the file.
    open: (usize, u64),
    /// True once the open string passed [`HELD`] (its rest is not kept).
    cut: bool,
    /// True when the string that ended last was cut (a `:` after it: a long key).
    last_cut: bool,
    /// After a high surrogate: the next escape must be `\u` and a low one.
    want_low: bool,
    /// Bytes of an unfinished UTF-8 character at the end of the last window.
    carry: Vec<u8>,
}

/// Reads the line at `offset` of `src` (reading nothing at or past `limit`)
/// in windows and returns its reduced form, or `None` when it must be read
/// whole (see the module's docs).
pub fn reduce_line(src: &dyn ReadAt, offset: u64, limit: u64) -> io::Result<Option<Reduced>> {
    let mut r = Reducer {
        out: Vec::with_capacity(64 << 10),
        strings: vec![],
        at: At::Out,
        prev: 0,
        last: vec![],
        key: None,
        open: (0, 0),
        cut: false,
        last_cut: false,
        want_low: false,
        carry: vec![],
    };
    let mut buf = vec![0u8; WINDOW];
    let mut blocks = Blocks::default();
    let mut pos = offset;
    loop {
        let want = usize::try_from(limit.saturating_sub(pos)).unwrap_or(usize::MAX).min(WINDOW);
        if want == 0 {
            // No `\n`: a torn or unterminated last line is read whole.
            return Ok(None);
        }
        let n = read_some(src, &mut buf[..want], pos)?;
        if n == 0 {
            return Ok(None);
        }
        let window = &buf[..n];
        let (used, ended) = match r.feed(window, pos) {
            Some(step) => step,
            None => return Ok(None),
        };
        if !r.utf8(&window[..used]) {
            return Ok(None);
        }
        blocks.feed(&window[..used]);
        pos += used as u64;
        if ended {
            if !r.carry.is_empty() {
                return Ok(None);
            }
            let Reducer { out, strings, .. } = r;
            return Ok(Some(Reduced { bytes: out, len: pos - offset, strings, blocks: blocks.finish() }));
        }
        if r.out.len() > MAX_REDUCED {
            return Ok(None);
        }
    }
}

impl Reducer {
    /// Checks that `bytes` continue valid UTF-8 (a character may straddle windows).
    fn utf8(&mut self, mut bytes: &[u8]) -> bool {
        if let Some(&lead) = self.carry.first() {
            let need = utf8_len(lead).saturating_sub(self.carry.len());
            let take = need.min(bytes.len());
            self.carry.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if take < need {
                return true;
            }
            let whole = std::str::from_utf8(&self.carry).is_ok();
            self.carry.clear();
            if !whole {
                return false;
            }
        }
        match simdutf8::compat::from_utf8(bytes) {
            Ok(_) => true,
            Err(e) if e.error_len().is_some() => false,
            Err(e) => {
                self.carry = bytes[e.valid_up_to()..].to_vec();
                true
            }
        }
    }

    /// Lexes `window` (file offset `base`); returns how many bytes belong
    /// to the line and whether it ended there, or `None` to read it whole.
    fn feed(&mut self, window: &[u8], base: u64) -> Option<(usize, bool)> {
        let mut i = 0;
        while i < window.len() {
            let b = window[i];
            match self.at {
                At::Out => {
                    // Copy the bytes outside strings up to the next quote or line end.
                    let rest = &window[i..];
                    let stop = memchr::memchr2(b'"', b'\n', rest).unwrap_or(rest.len());
                    self.outside(&rest[..stop])?;
                    i += stop;
                    if i == window.len() {
                        break;
                    }
                    if window[i] == b'\n' {
                        self.out.push(b'\n');
                        return Some((i + 1, true));
                    }
                    self.open_string(base + i as u64);
                    i += 1;
                }
                At::Str => {
                    let rest = &window[i..];
                    let stop = rest.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).unwrap_or(rest.len());
                    if stop > 0 && self.want_low {
                        return None;
                    }
                    self.keep(&rest[..stop]);
                    i += stop;
                    if i == window.len() {
                        break;
                    }
                    match window[i] {
                        b'"' => {
                            if self.want_low {
                                return None;
                            }
                            self.close_string(base + i as u64)?;
                        }
                        b'\\' => {
                            self.keep(b"\\");
                            self.at = At::Escape;
                        }
                        _ => return None,
                    }
                    i += 1;
                }
                At::Escape => {
                    self.keep(&[b]);
                    match b {
                        b'u' => self.at = At::Hex(0, 0),
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' if !self.want_low => self.at = At::Str,
                        _ => return None,
                    }
                    i += 1;
                }
                At::Hex(n, unit) => {
                    let digit = char::from(b).to_digit(16)?;
                    self.keep(&[b]);
                    let unit = (unit << 4) | digit as u16;
                    if n < 3 {
                        self.at = At::Hex(n + 1, unit);
                    } else {
                        self.unit(unit)?;
                        self.at = At::Str;
                    }
                    i += 1;
                }
            }
        }
        Some((window.len(), false))
    }

    /// Keeps a run of bytes outside strings, following keys and values.
    fn outside(&mut self, run: &[u8]) -> Option<()> {
        for &c in run {
            if c.is_ascii_whitespace() {
                continue;
            }
            // Not an object (a BOM may come first): read whole, for its diagnostic.
            if self.prev == 0 && c != b'{' {
                if matches!(c, 0xEF | 0xBB | 0xBF) {
                    continue;
                }
                return None;
            }
            match c {
                // A long key.
                b':' if self.last_cut => return None,
                b':' => self.key = Some(std::mem::take(&mut self.last)),
                _ => self.key = None,
            }
            self.last_cut = false;
            self.prev = c;
        }
        self.out.extend_from_slice(run);
        Some(())
    }

    /// A `\u` escape's code unit: surrogates must come in pairs.
    fn unit(&mut self, unit: u16) -> Option<()> {
        let high = (0xD800..0xDC00).contains(&unit);
        let low = (0xDC00..0xE000).contains(&unit);
        if self.want_low {
            self.want_low = false;
            return low.then_some(());
        }
        if low {
            return None;
        }
        self.want_low = high;
        Some(())
    }

    fn open_string(&mut self, at: u64) {
        self.open = (self.out.len(), at);
        self.cut = false;
        self.out.push(b'"');
        self.at = At::Str;
        // A value's key is the string before `:`; after `,` or `[` it is none.
        if self.prev != b':' {
            self.key = None;
        }
    }

    /// Keeps `bytes` of the open string while it is short; cuts it to its
    /// preview when it passes [`HELD`].
    fn keep(&mut self, bytes: &[u8]) {
        if self.cut {
            return;
        }
        self.out.extend_from_slice(bytes);
        if self.out.len() - self.open.0 > HELD {
            let start = self.open.0 + 1;
            let cut = preview_end(&self.out[start..]);
            self.out.truncate(start + cut);
            self.cut = true;
        }
    }

    /// Ends the open string at the quote at file offset `quote`; `None`
    /// when a kept field (see [`KEPT`]) was cut.
    fn close_string(&mut self, quote: u64) -> Option<()> {
        self.at = At::Out;
        self.prev = b'"';
        self.last.clear();
        self.last_cut = self.cut;
        if self.cut {
            if self.key.as_deref().is_some_and(|k| KEPT.contains(&k)) {
                return None;
            }
            let kept = (self.open.0, self.out.len() + 1 - self.open.0);
            self.strings.push(LongString { at: self.open.1, len: quote + 1 - self.open.1, kept });
        } else {
            let text = &self.out[self.open.0 + 1..];
            if text.len() <= 64 {
                self.last.extend_from_slice(text);
            }
        }
        self.out.push(b'"');
        Some(())
    }
}

/// The end of a long string's preview in `text` (its JSON text without the
/// opening quote): at most [`PREVIEW`] bytes, never inside an escape, a
/// surrogate pair or a UTF-8 character.
fn preview_end(text: &[u8]) -> usize {
    let mut i = 0;
    loop {
        let step = match text.get(i) {
            None => return i,
            Some(b'\\') => match text.get(i + 1) {
                Some(b'u') => {
                    let unit = std::str::from_utf8(text.get(i + 2..i + 6).unwrap_or_default())
                        .ok()
                        .and_then(|h| u16::from_str_radix(h, 16).ok());
                    if unit.is_some_and(|u| (0xD800..0xDC00).contains(&u)) {
                        12
                    } else {
                        6
                    }
                }
                _ => 2,
            },
            Some(&b) if b < 0x80 => 1,
            Some(&b) if b >= 0xF0 => 4,
            Some(&b) if b >= 0xE0 => 3,
            Some(_) => 2,
        };
        if i + step > PREVIEW || i + step > text.len() {
            return i;
        }
        i += step;
    }
}

/// The length of the UTF-8 character a lead byte starts.
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xF0.. => 4,
        0xE0.. => 3,
        0xC0.. => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{scan_line, ScanKind};

    const HEAD: &str = r#"{"type":"message","id":"e2","parentId":"e1","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":""#;
    const TAIL: &str =
        r#""},{"type":"toolCall","id":"c1","name":"bash","arguments":{}}],"stopReason":"stop","timestamp":1}}"#;

    /// A file of a short line, the line `HEAD + body + TAIL`, and another short line.
    fn file(body: &[u8]) -> (Vec<u8>, u64) {
        let mut f = b"{\"a\":1}\n".to_vec();
        let at = f.len() as u64;
        f.extend_from_slice(HEAD.as_bytes());
        f.extend_from_slice(body);
        f.extend_from_slice(TAIL.as_bytes());
        f.extend_from_slice(b"\n{\"b\":2}\n");
        (f, at)
    }

    fn reduce(f: &[u8], at: u64) -> Option<Reduced> {
        reduce_line(&f.to_vec(), at, f.len() as u64).unwrap()
    }

    /// A long text is cut to its preview; the reduced line is the same
    /// record to the scan (every field but the text), and says where the
    /// cut string is in the file.
    #[test]
    fn a_long_text_is_cut_and_the_record_kept() {
        // Characters of 1 to 4 bytes and escapes, so cuts and windows fall inside them.
        let unit = "ab\u{e9}\u{20ac}\u{1F600}\\n\\\"\\u00e9\\ud83d\\ude00 ";
        let body = unit.repeat((3 * WINDOW) / unit.len());
        let (f, at) = file(body.as_bytes());
        let r = reduce(&f, at).expect("reduced");
        let whole_len = HEAD.len() + body.len() + TAIL.len() + 1;
        assert_eq!(r.len, whole_len as u64);
        assert!(r.bytes.len() < HEAD.len() + PREVIEW + TAIL.len() + 1, "{} bytes kept", r.bytes.len());
        assert_eq!(r.strings.len(), 1);
        let s = r.strings[0];
        assert_eq!(r.line_offset(0), Some(0));
        assert_eq!(r.line_offset(s.kept.0), Some(s.at - at));
        assert_eq!(r.line_offset(s.kept.0 + 1), None);
        assert_eq!(r.line_offset(s.kept.0 + s.kept.1), Some(s.at - at + s.len));
        assert_eq!(r.line_offset(r.bytes.len()), Some(r.len));
        assert_eq!(s.at, at + HEAD.len() as u64 - 1);
        assert_eq!(s.len, body.len() as u64 + 2);
        assert_eq!(&f[s.at as usize], &b'"');
        assert_eq!(&f[(s.at + s.len - 1) as usize], &b'"');
        let line = &f[at as usize..at as usize + whole_len];
        let (ScanKind::Object(mut full), None) = scan_line(line, false) else { panic!("the whole line reads") };
        let (ScanKind::Object(mut cut), None) = scan_line(&r.bytes, false) else { panic!("the reduced line reads") };
        full.entry = None;
        cut.entry = None;
        assert_eq!(cut, full);
        // The preview is the text's beginning, decoded as the whole would be.
        let text = |b: &[u8]| {
            let v: serde_json::Value = serde_json::from_slice(b).unwrap();
            v["message"]["content"][0]["text"].as_str().unwrap().to_owned()
        };
        let (whole, preview) = (text(line), text(&r.bytes));
        assert!(preview.len() > PREVIEW / 2 && whole.starts_with(&preview), "{preview:?}");
        assert_eq!(text(line).len(), whole.len());
    }

    /// A range of a reduced line is copied from the file as it is; a block
    /// changed since is refused before a byte of it is written.
    #[test]
    fn ranges_are_copied_from_the_file_and_checked() {
        let body = "0123456789".repeat(BLOCK / 4);
        let (mut f, at) = file(body.as_bytes());
        let r = reduce(&f, at).unwrap();
        assert_eq!(r.blocks.len(), (r.len as usize).div_ceil(BLOCK));
        let line = f[at as usize..(at + r.len) as usize].to_vec();
        for (from, to) in [(0, r.len), (5, 6), (BLOCK as u64 - 3, 2 * BLOCK as u64 + 9), (r.len - 1, r.len)] {
            let mut out = vec![];
            copy_line_range(&f, at, &r, (from, to), &mut out).unwrap();
            assert_eq!(out, &line[from as usize..to as usize], "{from}..{to}");
        }
        f[at as usize + BLOCK + 10] = b'x';
        let mut out = vec![];
        let e = copy_line_range(&f, at, &r, (0, r.len), &mut out).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(out.len(), BLOCK, "the changed block is not written");
    }

    /// A short line comes back as it is.
    #[test]
    fn a_line_without_long_strings_is_kept_whole() {
        let (f, at) = file(b"short");
        let r = reduce(&f, at).unwrap();
        assert_eq!(r.bytes, format!("{HEAD}short{TAIL}\n").as_bytes());
        assert!(r.strings.is_empty());
    }

    /// Whatever the reduction could change the meaning of is read whole.
    #[test]
    fn doubtful_lines_are_left_to_the_whole_reader() {
        let long = "x".repeat(HELD + 10);
        for (why, body) in [
            ("a lone high surrogate", format!("{long}\\ud800{long}")),
            ("a lone low surrogate", format!("{long}\\udc00")),
            ("a control byte", format!("{long}\t")),
            ("a bad escape", format!("{long}\\q")),
            ("a short hex escape", format!("{long}\\u12g4")),
        ] {
            let (f, at) = file(body.as_bytes());
            assert_eq!(reduce(&f, at), None, "{why}");
        }
        let (mut f, at) = file(long.as_bytes());
        f[at as usize + HEAD.len() + 5] = 0xFF;
        assert_eq!(reduce(&f, at), None, "invalid UTF-8");
        let (f, at) = file(long.as_bytes());
        let torn = &f[..f.len() - 10];
        assert_eq!(reduce_line(&torn.to_vec(), at, torn.len() as u64).unwrap(), None, "no newline");
        for (why, line) in [
            ("a long id", format!("{{\"type\":\"message\",\"id\":\"{long}\"}}\n")),
            ("a long parentId", format!("{{\"parentId\":\"{long}\",\"id\":\"a\"}}\n")),
            ("a long key", format!("{{\"{long}\":1}}\n")),
            ("a long tool call name", format!("{{\"content\":[{{\"name\":\"{long}\"}}]}}\n")),
        ] {
            assert_eq!(reduce_line(&line.into_bytes(), 0, u64::MAX).unwrap(), None, "{why}");
        }
        // A long string in an array, or under any other key, is cut.
        let line = format!("{{\"id\":\"a\",\"x\":[\"{long}\"],\"details\":{{\"diff\":\"{long}\"}}}}\n");
        let r = reduce_line(&line.into_bytes(), 0, u64::MAX).unwrap().unwrap();
        assert_eq!(r.strings.len(), 2);
    }

    /// Previews end between characters and escapes, never inside one.
    #[test]
    fn previews_end_between_characters() {
        for pad in 0..12 {
            let text = format!("{}{}", "a".repeat(PREVIEW - pad), "\\ud83d\\ude00\u{1F600}\\n".repeat(4));
            let end = preview_end(text.as_bytes());
            assert!(end <= PREVIEW);
            let quoted = format!("\"{}\"", &text[..end]);
            assert!(serde_json::from_str::<String>(&quoted).is_ok(), "pad {pad}: {quoted:?}");
        }
    }
}
