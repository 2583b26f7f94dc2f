// Over 800 lines: the scan and its serde validation path share private types, and #14's reader fixes land here now; split after them.
//! The light scan: every physical line of a file read in parallel, each line
//! checked to be JSON exactly as [`parse_line`] checks it, but only the fields
//! an index needs are kept ([`RecordHead`]): `type`, `id`, `parentId`, the
//! timestamp in epoch ms and a message's `role`. Entry bodies stay on disk and
//! are decoded on demand from the line's offset ([`ReadAt`]).
//!
//! Exactness: a line is first read by a hand-written validator
//! (`fast_head`) that decodes nothing but the head and answers only when it
//! is sure serde_json accepts the line as a `Value`; it declines anything
//! doubtful (surrogate escapes it cannot pair, numbers near the `f64` range,
//! escaped keys, control bytes, deep nesting, …). A declined line is
//! validated with serde_json's own parser walking the same `deserialize_any`
//! path a `serde_json::Value` walks, only without building the value, so it
//! is accepted exactly when [`parse_line`] accepts it (same depth limit, same
//! number range, same string rules). Any line neither pass accepts (invalid
//! JSON, not an object, a torn tail, a key serde_json treats specially) is
//! parsed again by [`parse_line`] itself, so its diagnostic is the one the
//! streaming reader gives. Lines with invalid UTF-8 are read lossily, as
//! [`parse_line`] reads them.

use std::borrow::Cow;
use std::fmt;
use std::io;

use compact_str::CompactString;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::clock::parse_iso_ms;
use crate::diag::DiagnosticKind;
use crate::entry::Entry;
use crate::fast_head::{fast_head, fast_head_detail, HeadDetail};
use crate::json;
use crate::reader::{parse_line, parse_line_detail, trim_line, Parsed};
use crate::span::lines_starting_in;
use crate::vocab::{EntryType, Role};

pub(crate) use crate::head::RAW_VALUE_TOKEN;
pub use crate::head::{ParentField, RecordHead};
pub use crate::read_at::{read_exact_at, ReadAt};
pub use crate::scanned::{ScanTarget, ScannedEntry, ScannedLog};

/// What one physical line holds, as far as the light scan looks.
#[derive(Debug, Clone, PartialEq)]
pub enum ScanKind {
    /// Whitespace only.
    Blank,
    /// Skipped: the reason is the diagnostic.
    Skipped(DiagnosticKind),
    /// A JSON object.
    Object(RecordHead),
}

/// One physical line of a scanned file.
#[derive(Debug, Clone, PartialEq)]
pub struct ScannedLine {
    /// 1-based line number.
    pub number: usize,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Length in bytes, terminator included.
    pub len: usize,
    /// What the line holds.
    pub kind: ScanKind,
    /// A note to report although the line was read (invalid UTF-8, no final newline), as [`parse_line`] gives it.
    pub note: Option<DiagnosticKind>,
}

/// Scans one physical line: the light equivalent of [`parse_line`].
///
/// With `decode`, an object whose `type` is not `message` (or that has no
/// `message`) is also decoded in full into [`RecordHead::entry`]: such
/// records are small, and the tree needs some of them (labels) at once.
pub fn scan_line(bytes: &[u8], decode: bool) -> (ScanKind, Option<DiagnosticKind>) {
    let (kind, note, _) = scan_line_with(bytes, decode, false);
    (kind, note)
}

/// [`scan_line`], with `detail` also the line's [`HeadDetail`] when the fast
/// validator read it (`None` when the line took the exact path: the caller
/// reads the detail from the parsed value then).
pub(crate) fn scan_line_with(
    bytes: &[u8],
    decode: bool,
    detail: bool,
) -> (ScanKind, Option<DiagnosticKind>, Option<HeadDetail<'_>>) {
    let terminated = bytes.last() == Some(&b'\n');
    let body = trim_line(bytes);
    if body.is_empty() {
        return (ScanKind::Blank, None, None);
    }
    let accept = |mut head: RecordHead, note: Option<DiagnosticKind>| {
        if decode && !head.is_lazy_message() && head.not_an_entry().is_none() {
            head.entry = full_entry(bytes);
        }
        let note = if note.is_none() && !terminated { Some(DiagnosticKind::NoFinalNewline) } else { note };
        (ScanKind::Object(head), note)
    };
    // The fast validator is sure or declines; serde_json has the word on the
    // rest, unless it would read a marker-range character (see `crate::json`).
    if detail {
        if let Some((head, d)) = fast_head_detail(body) {
            let (kind, note) = accept(head, None);
            return (kind, note, Some(d));
        }
    } else if let Some(head) = fast_head(body) {
        let (kind, note) = accept(head, None);
        return (kind, note, None);
    }
    let plain = json::is_plain(body);
    let (text, note) = match simdutf8::basic::from_utf8(body) {
        Ok(s) => (Cow::Borrowed(s), None),
        Err(_) => (Cow::Owned(String::from_utf8_lossy(body).into_owned()), Some(DiagnosticKind::InvalidUtf8)),
    };
    if let Some(HeadParse(head)) = plain.then(|| serde_json::from_str::<HeadParse>(&text).ok()).flatten() {
        let (kind, note) = accept(head, note);
        return (kind, note, None);
    }
    // Whatever the light pass refused, the full reader has the final word.
    let (parsed, note, js_only) = parse_line_detail(bytes);
    match parsed {
        Parsed::Blank => (ScanKind::Blank, note, None),
        Parsed::Skipped(kind) => (ScanKind::Skipped(kind), note, None),
        Parsed::Object(v) => {
            let mut head = RecordHead::from_value(&v);
            head.js_only = js_only;
            if decode && !head.is_lazy_message() && head.not_an_entry().is_none() {
                head.entry = Entry::from_owned(v).ok().map(Box::new);
            }
            (ScanKind::Object(head), note, None)
        }
    }
}

/// Decodes a line in full, as the streaming reader does: `None` when it is not an entry.
pub fn full_entry(bytes: &[u8]) -> Option<Box<Entry>> {
    match parse_line(bytes).0 {
        Parsed::Object(v) => Entry::from_owned(v).ok().map(Box::new),
        _ => None,
    }
}

/// Scans `len` bytes of `src` from the start, on up to `threads` threads, and
/// returns every physical line in order (see [`scan_line`] for `decode`).
///
/// The file is split at line boundaries into ranges of about 8 MiB,
/// shared out among the threads; each range is read in 256 KiB
/// positioned reads, so memory stays bounded whatever the file size.
pub fn scan_source(src: &dyn ReadAt, len: u64, threads: usize, decode: bool) -> io::Result<Vec<ScannedLine>> {
    let mut parts = scan_parts::<Vec<ScannedLine>>(src, len, threads, decode)?.into_iter();
    let mut out = parts.next().unwrap_or_default();
    for mut part in parts {
        out.append(&mut part);
    }
    Ok(out)
}

/// Bytes of the file per range of a scan. Ranges are scanned apart and
/// kept apart until the caller walks them in order, so a caller that takes
/// what it keeps out of a range and drops the range holds, beside what it
/// keeps, about one range's lines, not the whole file's.
pub(crate) const RANGE: u64 = 8 << 20;

/// At most this many ranges (larger files get larger ones): a range's list
/// then stays large enough for the allocator to map it apart and grow it in
/// place, where thousands of small lists (a few thousand 3 KB lines in 8
/// MiB) would leave each list's outgrown copies behind in the heap.
const MAX_RANGES: u64 = 64;

/// What a scan keeps of one range's lines ([`scan_parts`]), made in the
/// thread that scanned them (so what is kept of a million lines can be far
/// smaller than their heads).
pub(crate) trait ScanPart: Default + Send {
    /// Keeps a line of the range (lines come in order, numbered from 1 within the range).
    fn keep(&mut self, line: ScannedLine);
    /// Adds `by` to the number of every line kept.
    fn shift_lines(&mut self, by: usize);
}

impl ScanPart for Vec<ScannedLine> {
    fn keep(&mut self, line: ScannedLine) {
        self.push(line);
    }

    fn shift_lines(&mut self, by: usize) {
        for l in self {
            l.number += by;
        }
    }
}

/// [`scan_source`]'s lines as one `P` per range, in order and numbered
/// through the file: callers that walk them once need no copy into one
/// list (a line's head is a few hundred bytes; a million lines, hundreds of MB).
pub(crate) fn scan_parts<P: ScanPart>(src: &dyn ReadAt, len: u64, threads: usize, decode: bool) -> io::Result<Vec<P>> {
    // Small files are not worth a thread.
    let threads = if len < 1 << 20 { 1 } else { threads.clamp(1, 64) };
    let ranges = usize::try_from(len.div_ceil(RANGE).min(MAX_RANGES)).unwrap_or(1).max(threads).max(1);
    // Range k is the lines that start in [k·len/ranges, (k+1)·len/ranges).
    let guess = |k: usize| (u128::from(len) * k as u128 / ranges as u128) as u64;
    let scan = |k: usize| scan_range(src, (guess(k), guess(k + 1)), len, decode);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done = vec![];
        loop {
            let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if k >= ranges {
                return done;
            }
            let part = scan(k);
            let failed = part.is_err();
            done.push((k, part));
            if failed {
                return done;
            }
        }
    };
    let mut scanned: Vec<(usize, io::Result<(P, usize)>)> = if threads == 1 {
        work()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
            let mut all = vec![];
            for h in handles {
                match h.join() {
                    Ok(done) => all.extend(done),
                    Err(_) => all.push((0, Err(io::Error::other("a scan thread panicked")))),
                }
            }
            all
        })
    };
    scanned.sort_by_key(|(k, _)| *k);
    let mut numbered = Vec::with_capacity(ranges);
    let mut base = 0;
    for (_, part) in scanned {
        let (mut part, lines) = part?;
        part.shift_lines(base);
        base += lines;
        numbered.push(part);
    }
    if numbered.len() < ranges {
        // A thread stopped at an error: it is above, in range order.
        return Err(io::Error::other("a scan range was not read"));
    }
    Ok(numbered)
}

/// Scans the lines that start in `range` (of the first `len` bytes) into a `P`; line numbers
/// count from 1 within the range. Also the number of lines.
fn scan_range<P: ScanPart>(src: &dyn ReadAt, range: (u64, u64), len: u64, decode: bool) -> io::Result<(P, usize)> {
    let mut out = P::default();
    let mut number = 0usize;
    lines_starting_in(src, range, len, &mut |bytes, offset, n| {
        number += 1;
        // A reduced long line is not decoded here: its entry is decoded from the file when asked.
        let (kind, note) = scan_line(bytes, decode && n == bytes.len());
        out.keep(ScannedLine { number, offset, len: n, kind, note });
    })?;
    Ok((out, number))
}

// ---- the light parse ----

struct HeadParse(RecordHead);

impl<'de> Deserialize<'de> for HeadParse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(HeadVisitor).map(HeadParse)
    }
}

struct HeadVisitor;

impl<'de> Visitor<'de> for HeadVisitor {
    type Value = RecordHead;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RecordHead, A::Error> {
        let mut head = RecordHead::default();
        let mut timestamp: Option<CompactString> = None;
        // Later keys win, as they do in a `Value`.
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_ref() {
                "type" => head.entry_type = map.next_value::<Field>()?.string().as_deref().map(EntryType::parse),
                "id" => head.id = map.next_value::<Field>()?.string(),
                "parentId" => {
                    head.parent = match map.next_value::<Field>()? {
                        Field::Str(s) => ParentField::Id(s),
                        Field::Null | Field::Other => ParentField::Root,
                    }
                }
                "timestamp" => timestamp = map.next_value::<Field>()?.string(),
                "message" => {
                    head.has_message = true;
                    let m = map.next_value::<MessageHead>()?;
                    (head.role, head.message_time) = (m.role.as_deref().map(Role::parse), m.time);
                }
                _ => map.next_value::<Skip>().map(drop)?,
            }
        }
        head.ts_ms = timestamp.as_deref().and_then(parse_iso_ms);
        Ok(head)
    }
}

/// An object key; the raw-value marker is refused (the full parser handles it).
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                if s == RAW_VALUE_TOKEN {
                    return Err(E::custom("raw value marker"));
                }
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                if s == RAW_VALUE_TOKEN {
                    return Err(E::custom("raw value marker"));
                }
                Ok(Key(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A value of interest: a string, null, or anything else (consumed and forgotten).
enum Field {
    Str(CompactString),
    Null,
    Other,
}

impl Field {
    fn string(self) -> Option<CompactString> {
        match self {
            Field::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Field, E> {
        Ok(Field::Str(CompactString::from(s)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Field, E> {
        Ok(Field::Null)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Field, E> {
        Ok(Field::Other)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Field, E> {
        Ok(Field::Other)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Field, E> {
        Ok(Field::Other)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Field, E> {
        Ok(Field::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Field, A::Error> {
        SkipVisitor.visit_seq(seq).map(|_| Field::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Field, A::Error> {
        SkipVisitor.visit_map(map).map(|_| Field::Other)
    }
}

/// A message value: only its `role` and numeric `timestamp` are kept.
#[derive(Default)]
struct MessageHead {
    role: Option<CompactString>,
    time: Option<f64>,
}

impl<'de> Deserialize<'de> for MessageHead {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageHead;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MessageHead, A::Error> {
                let mut m = MessageHead::default();
                while let Some(key) = map.next_key::<Key>()? {
                    match key.0.as_ref() {
                        "role" => m.role = map.next_value::<Field>()?.string(),
                        "timestamp" => m.time = map.next_value::<Number>()?.0,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(m)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<MessageHead, E> {
                Ok(MessageHead::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<MessageHead, E> {
                Ok(MessageHead::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<MessageHead, E> {
                Ok(MessageHead::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<MessageHead, E> {
                Ok(MessageHead::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<MessageHead, E> {
                Ok(MessageHead::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<MessageHead, E> {
                Ok(MessageHead::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MessageHead, A::Error> {
                SkipVisitor.visit_seq(seq).map(|_| MessageHead::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// Any JSON value, kept when it is a number (as `Value::as_f64` reads it).
struct Number(Option<f64>);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Number, E> {
                Ok(Number(Some(n as f64)))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Number, E> {
                Ok(Number(Some(n as f64)))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Number, E> {
                Ok(Number(Some(n)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Number, E> {
                Ok(Number(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Number, E> {
                Ok(Number(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Number, E> {
                Ok(Number(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Number, A::Error> {
                SkipVisitor.visit_seq(seq).map(|_| Number(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Number, A::Error> {
                SkipVisitor.visit_map(map).map(|_| Number(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Any JSON value, walked the way a `Value` is built and thrown away. Not
/// serde's `IgnoredAny`: serde_json skips that without the depth limit and
/// the number range check a `Value` gets, so it would accept lines the
/// reader refuses.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_key::<Key>()?.is_some() {
            map.next_value::<Skip>()?;
        }
        Ok(Skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heads_agree(line: &[u8]) {
        let (fast, fast_note) = scan_line(line, false);
        let (slow, slow_note, js_only) = parse_line_detail(line);
        assert_eq!(fast_note, slow_note, "{:?}", String::from_utf8_lossy(line));
        match (fast, slow) {
            (ScanKind::Blank, Parsed::Blank) => {}
            (ScanKind::Skipped(a), Parsed::Skipped(b)) => assert_eq!(a, b),
            (ScanKind::Object(h), Parsed::Object(v)) => {
                assert_eq!(h, RecordHead { js_only, ..RecordHead::from_value(&v) })
            }
            (a, b) => panic!("{:?}: {a:?} vs {b:?}", String::from_utf8_lossy(line)),
        }
    }

    #[test]
    fn light_scan_agrees_with_the_full_parser() {
        let deep_ok = format!("{{\"a\":{}1{}}}\n", "[".repeat(126), "]".repeat(126));
        let too_deep = format!("{{\"a\":{}1{}}}\n", "[".repeat(200), "]".repeat(200));
        let lines: Vec<Vec<u8>> = vec![
            b"\n".to_vec(),
            b"  \r\n".to_vec(),
            b"\xEF\xBB\xBF{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\"}}\r\n"
                .to_vec(),
            b"{\"type\":\"message\",\"id\":\"a\",\"type\":\"label\",\"id\":7}\n".to_vec(),
            b"{\"ty\\u0070e\":\"x\",\"id\":\"\\u00e9\",\"parentId\":5}\n".to_vec(),
            b"{\"a\":1e400}\n".to_vec(),
            b"{\"a\":1e300,\"b\":-0,\"c\":[true,false,null,{}]}\n".to_vec(),
            b"{\"a\":\"\\ud800\"}\n".to_vec(),
            b"{\"a\":\"x\ty\"}\n".to_vec(),
            b"{\"$serde_json::private::RawValue\":\"1\"}\n".to_vec(),
            b"{\"a\":1} x\n".to_vec(),
            b"{\"a\":1,}\n".to_vec(),
            b"[1,2]\n".to_vec(),
            b"\"s\"\n".to_vec(),
            b"nope\n".to_vec(),
            b"{\"a\":\"x\xFFy\",\"id\":\"i\",\"type\":\"t\"}\n".to_vec(),
            b"{\"a\":".to_vec(),
            b"{\"a\":1}".to_vec(),
            b"{\"a\":\"\xC3".to_vec(),
            b"{\"type\":\"message\",\"id\":\"a\",\"message\":[1],\"timestamp\":\"2026-01-01T00:00:00.000Z\"}\n"
                .to_vec(),
            b"{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":{\"x\":1},\"role\":\"assistant\"}}\n".to_vec(),
            deep_ok.into_bytes(),
            too_deep.into_bytes(),
        ];
        for l in &lines {
            heads_agree(l);
        }
    }

    #[test]
    fn scan_source_finds_every_line_on_any_split() {
        let mut data = Vec::new();
        for i in 0..2000 {
            data.extend_from_slice(
                format!("{{\"type\":\"message\",\"id\":\"{i}\",\"message\":{{\"role\":\"user\"}}}}\n").as_bytes(),
            );
            if i % 7 == 0 {
                data.extend_from_slice(b"\n");
            }
        }
        data.extend_from_slice(b"{\"torn\":");
        let one = scan_source(&data, data.len() as u64, 1, false).unwrap();
        for threads in [2, 3, 8] {
            // Force splitting on a small input too.
            let mut parts = vec![];
            let len = data.len() as u64;
            let mut a = 0;
            for k in 1..=threads {
                let b = if k == threads { len } else { len / threads * k };
                parts.extend(scan_range::<Vec<ScannedLine>>(&data, (a, b), len, false).unwrap().0.into_iter().map(
                    |mut l| {
                        l.number = 0;
                        l
                    },
                ));
                a = b;
            }
            let expect: Vec<ScannedLine> = one
                .iter()
                .cloned()
                .map(|mut l| {
                    l.number = 0;
                    l
                })
                .collect();
            assert_eq!(parts, expect);
        }
        assert_eq!(one.len(), 2000 + 286 + 1);
        assert!(matches!(one.last().unwrap().kind, ScanKind::Skipped(DiagnosticKind::TornTail { bytes: 8 })));
        assert_eq!(one.iter().map(|l| l.len as u64).sum::<u64>(), data.len() as u64);
    }
}
