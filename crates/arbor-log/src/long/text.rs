//! The text of a cut string, streamed: a string value [`reduce_line`] cut
//! to its preview is read back from the file a block at a time (each block
//! checked against the reduction's hash first, as [`copy_line_range`]
//! does), its JSON escapes decoded as the bytes come ([`StringDecoder`]: an
//! escape, a surrogate pair or a UTF-8 character may straddle blocks), and
//! its text handed on in chunks of valid UTF-8 ([`decode_long_string`]).
//! The chunks joined are exactly what serde_json decodes the whole string
//! to. Memory: one block (1 MiB) and its decoded text.
//!
//! Which decoded value is a preview of which cut string: [`long_texts`]
//! names each cut string by the JSON Pointer (RFC 6901) of its value in the
//! line's record (`/message/content/0/text`) and gives its preview's text,
//! so a reader of the decoded preview (`serde_json::Value::pointer`) can
//! tell the value it holds is a preview and stream the whole text instead.
//!
//! [`reduce_line`]: super::reduce_line

use std::io::{self, Write};

use super::{copy_line_range, LongString, Reduced};
use crate::read_at::ReadAt;

/// Decodes one JSON string's text (without its quotes), fed in pieces of
/// any size; the decoded text is handed on in chunks of valid UTF-8, each
/// at most as long as the piece that gave it plus three bytes.
///
/// ```
/// use arbor_log::long::text::StringDecoder;
///
/// let mut text = String::new();
/// let mut d = StringDecoder::new();
/// for piece in [&br#"a\"b\ud8"#[..], br#"3d\ude00 \u00e"#, "9 é".as_bytes()] {
///     d.feed(piece, &mut |chunk| {
///         text.push_str(chunk);
///         Ok(())
///     })?;
/// }
/// d.finish()?;
/// assert_eq!(text, "a\"b\u{1F600} é é");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct StringDecoder {
    at: At,
    /// A high surrogate whose low half is still to come.
    high: Option<u16>,
    /// Decoded bytes not handed on yet (between feeds: an unfinished character).
    out: Vec<u8>,
    /// Bytes fed so far (where an error is).
    fed: u64,
}

/// Where the decoder is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum At {
    /// In the string's text.
    #[default]
    Text,
    /// Just after a backslash.
    Escape,
    /// In a `\u` escape: this many hex digits read, and the code unit so far.
    Hex(u8, u16),
}

impl StringDecoder {
    /// A decoder at the start of a string.
    pub fn new() -> StringDecoder {
        StringDecoder::default()
    }

    /// Decodes `bytes`, the next piece of the string's JSON text, and hands
    /// the text decoded so far (up to an unfinished character) to `emit`,
    /// when there is any. An `InvalidData` error when the text is not what
    /// serde_json reads as a string (a raw quote or control byte, a bad or
    /// unpaired escape, invalid UTF-8); `emit`'s errors as they are.
    pub fn feed(&mut self, bytes: &[u8], emit: &mut dyn FnMut(&str) -> io::Result<()>) -> io::Result<()> {
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match self.at {
                At::Text => {
                    let rest = &bytes[i..];
                    let stop = rest.iter().position(|&c| c == b'\\' || c == b'"' || c < 0x20).unwrap_or(rest.len());
                    if stop > 0 && self.high.is_some() {
                        return Err(self.bad(i, "a high surrogate escape without its low half"));
                    }
                    self.out.extend_from_slice(&rest[..stop]);
                    i += stop;
                    if i == bytes.len() {
                        break;
                    }
                    if bytes[i] != b'\\' {
                        return Err(self.bad(i, "a quote or a control byte inside a string"));
                    }
                    self.at = At::Escape;
                }
                At::Escape => {
                    let c = match b {
                        b'u' => {
                            self.at = At::Hex(0, 0);
                            i += 1;
                            continue;
                        }
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        _ => return Err(self.bad(i, "an invalid escape")),
                    };
                    if self.high.is_some() {
                        return Err(self.bad(i, "a high surrogate escape without its low half"));
                    }
                    self.push(c);
                    self.at = At::Text;
                }
                At::Hex(n, unit) => {
                    let Some(digit) = char::from(b).to_digit(16) else {
                        return Err(self.bad(i, "an invalid \\u escape"));
                    };
                    let unit = (unit << 4) | digit as u16;
                    if n < 3 {
                        self.at = At::Hex(n + 1, unit);
                    } else {
                        self.unit(unit).map_err(|why| self.bad(i, why))?;
                        self.at = At::Text;
                    }
                }
            }
            i += 1;
        }
        self.fed += bytes.len() as u64;
        self.hand_on(emit)
    }

    /// Says the string's text ended: an `InvalidData` error when it ends
    /// inside an escape, a surrogate pair or a character.
    pub fn finish(self) -> io::Result<()> {
        if self.at != At::Text || self.high.is_some() || !self.out.is_empty() {
            return Err(self.bad(0, "the string ends inside an escape or a character"));
        }
        Ok(())
    }

    /// A `\u` escape's code unit: a character, or half of a surrogate pair.
    fn unit(&mut self, unit: u16) -> Result<(), &'static str> {
        let c = match (self.high.take(), unit) {
            (Some(high), 0xDC00..=0xDFFF) => {
                char::from_u32(0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00))
            }
            (Some(_), _) => return Err("a high surrogate escape without its low half"),
            (None, 0xD800..=0xDBFF) => {
                self.high = Some(unit);
                return Ok(());
            }
            (None, _) => char::from_u32(u32::from(unit)),
        };
        self.push(c.ok_or("a low surrogate escape without its high half")?);
        Ok(())
    }

    fn push(&mut self, c: char) {
        let mut buf = [0u8; 4];
        self.out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }

    /// Hands on the text decoded so far, keeping an unfinished character.
    fn hand_on(&mut self, emit: &mut dyn FnMut(&str) -> io::Result<()>) -> io::Result<()> {
        let whole = match simdutf8::compat::from_utf8(&self.out) {
            Ok(text) => {
                if !text.is_empty() {
                    emit(text)?;
                }
                self.out.clear();
                return Ok(());
            }
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => return Err(self.bad(0, "invalid UTF-8")),
        };
        if whole > 0 {
            let text = std::str::from_utf8(&self.out[..whole]).map_err(|_| self.bad(0, "invalid UTF-8"))?;
            emit(text)?;
            self.out.drain(..whole);
        }
        Ok(())
    }

    /// An error at byte `i` of the piece being fed.
    fn bad(&self, i: usize, why: &str) -> io::Error {
        let at = self.fed + i as u64;
        io::Error::new(io::ErrorKind::InvalidData, format!("{why} at byte {at} of a long string"))
    }
}

/// Hands the decoded text of string `k` of the line at file offset
/// `offset` that [`reduce_line`](super::reduce_line) gave `reduced` for
/// (`reduced.strings[k]`) to `emit`, in chunks of valid UTF-8 (up to a
/// block's worth each; never an empty one), reading the string's bytes a
/// block at a time. Each block is checked against the reduction's hash
/// before any of it is decoded: a line that changed on disk since fails
/// with an `InvalidData` error, as [`copy_line_range`] does. `emit`'s
/// errors come back as they are; an `InvalidInput` error when there is no
/// string `k`.
pub fn decode_long_string(
    src: &dyn ReadAt,
    offset: u64,
    reduced: &Reduced,
    k: usize,
    emit: &mut dyn FnMut(&str) -> io::Result<()>,
) -> io::Result<()> {
    let Some(s) = reduced.strings.get(k) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("no long string {k} in the line")));
    };
    // The text between the quotes, counted from the line's start.
    let from = s.at.checked_sub(offset).map(|at| at + 1);
    let (Some(from), true) = (from, s.len >= 2) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "the long string is not in the line"));
    };
    let mut feed = Feed { decoder: StringDecoder::new(), emit };
    copy_line_range(src, offset, reduced, (from, from + s.len - 2), &mut feed)?;
    feed.decoder.finish()
}

/// A decoder as a writer: what is written is fed to it.
struct Feed<'a> {
    decoder: StringDecoder,
    emit: &'a mut dyn FnMut(&str) -> io::Result<()>,
}

impl Write for Feed<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.decoder.feed(buf, self.emit)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes `text`, a piece of a string's decoded text, escaped as
/// [`crate::json::to_writer`] (and serde_json) escapes a string's text,
/// without quotes: `"` and `\\` escaped, control characters as `\n`,
/// `\t`, … or `\u00xx`, everything else as it is. Escaping goes character
/// by character, so the pieces of a string written one after the other are
/// the string written whole (for strings without the marker characters of
/// lone surrogates, which [`decode_long_string`]'s text never holds as
/// such; see `arbor_log::json`).
pub fn write_json_fragment<W: Write + ?Sized>(text: &str, out: &mut W) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut unit = *b"\\u0000";
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..0x20 => {
                unit[4] = HEX[usize::from(b >> 4)];
                unit[5] = HEX[usize::from(b & 0xF)];
                &unit
            }
            _ => continue,
        };
        out.write_all(&bytes[start..i])?;
        out.write_all(escape)?;
        start = i + 1;
    }
    out.write_all(&bytes[start..])
}

/// A cut string of a reduced line, named for a reader of its preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LongText {
    /// Its place in [`Reduced::strings`] (what [`decode_long_string`] takes).
    pub index: usize,
    /// The JSON Pointer (RFC 6901) of its value in the line's record, as
    /// `serde_json::Value::pointer` takes it (`/message/content/0/text`);
    /// `None` when a key on the way cannot be decoded. Of duplicate keys a
    /// decoded record keeps the last: two cut strings may have the same
    /// pointer, and the later one is the record's.
    pub pointer: Option<String>,
    /// The preview's text, decoded (what the decoded reduced line holds
    /// there): the first few KB of the whole text.
    pub preview: String,
    /// The string in the file.
    pub string: LongString,
}

/// Each cut string of `reduced`, in order, with the pointer of its value
/// and its preview's text.
pub fn long_texts(reduced: &Reduced) -> Vec<LongText> {
    let bytes = &reduced.bytes;
    let mut frames: Vec<Frame> = vec![];
    let mut texts = Vec::with_capacity(reduced.strings.len());
    let mut next = reduced.strings.iter().enumerate().peekable();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => frames.push(Frame::Object { key: None, want_key: true }),
            b'[' => frames.push(Frame::Array(0)),
            b'}' | b']' => {
                frames.pop();
            }
            b',' => match frames.last_mut() {
                Some(Frame::Array(n)) => *n += 1,
                Some(Frame::Object { want_key, .. }) => *want_key = true,
                None => {}
            },
            b'"' => {
                let end = string_end(bytes, i);
                let json = &bytes[i..end];
                match frames.last_mut() {
                    Some(Frame::Object { key, want_key: want @ true }) => {
                        *key = Some(serde_json::from_slice::<String>(json).ok());
                        *want = false;
                    }
                    _ => {
                        if let Some((index, s)) = next.next_if(|(_, s)| s.kept.0 == i) {
                            let preview = serde_json::from_slice::<String>(json).unwrap_or_default();
                            texts.push(LongText { index, pointer: pointer(&frames), preview, string: *s });
                        }
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    texts
}

/// Where a walk of a record is: in an object (the key of the value being
/// read, `Some(None)` when it cannot be decoded), or at an index of a list.
enum Frame {
    Object { key: Option<Option<String>>, want_key: bool },
    Array(usize),
}

/// The JSON Pointer of the value the walk is at.
fn pointer(frames: &[Frame]) -> Option<String> {
    let mut out = String::new();
    for f in frames {
        out.push('/');
        match f {
            Frame::Array(n) => out.push_str(&n.to_string()),
            Frame::Object { key, .. } => out.push_str(&key.as_ref()?.as_ref()?.replace('~', "~0").replace('/', "~1")),
        }
    }
    Some(out)
}

/// The end (past its closing quote) of the JSON string whose opening quote is at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(k) = memchr::memchr2(b'"', b'\\', &bytes[i..]) {
        if bytes[i + k] == b'"' {
            return i + k + 1;
        }
        i += k + 2;
        if i >= bytes.len() {
            break;
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::super::{reduce_line, BLOCK, HELD};
    use super::*;

    /// The text decoded from `json` fed in pieces of `size` bytes, the
    /// chunks checked to be non-empty.
    fn decoded(json: &[u8], size: usize) -> io::Result<String> {
        let mut text = String::new();
        let mut d = StringDecoder::new();
        for piece in json.chunks(size) {
            d.feed(piece, &mut |chunk| {
                assert!(!chunk.is_empty());
                text.push_str(chunk);
                Ok(())
            })?;
        }
        d.finish()?;
        Ok(text)
    }

    /// Every escape, surrogate pair and character size, cut at every
    /// place by pieces of every small size: what serde_json decodes.
    #[test]
    fn escapes_and_characters_split_anywhere_decode_as_serde_json_does() {
        let json = r#"ab\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00\uD83D\uDE00 é€😀 \u0000x\u007f\uffff"#;
        let want: String = serde_json::from_str(&format!("\"{json}\"")).unwrap();
        for size in 1..=json.len() {
            assert_eq!(decoded(json.as_bytes(), size).unwrap(), want, "pieces of {size}");
        }
        // Two pieces, cut at every byte.
        for cut in 0..=json.len() {
            let mut text = String::new();
            let mut d = StringDecoder::new();
            d.feed(&json.as_bytes()[..cut], &mut |c| {
                text.push_str(c);
                Ok(())
            })
            .unwrap();
            d.feed(&json.as_bytes()[cut..], &mut |c| {
                text.push_str(c);
                Ok(())
            })
            .unwrap();
            d.finish().unwrap();
            assert_eq!(text, want, "cut at {cut}");
        }
    }

    /// Property-style: strings built from a pseudo-random mix of pieces,
    /// fed in pieces of pseudo-random sizes, decode as serde_json does.
    #[test]
    fn random_mixes_decode_as_serde_json_does() {
        const PARTS: [&str; 12] =
            ["a", "é", "€", "😀", "\\n", "\\\"", "\\\\", "\\u00e9", "\\ud83d\\ude00", "\\u0000", "\\/", " "];
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..300 {
            let json: String = (0..next(60) + 1).map(|_| PARTS[next(PARTS.len())]).collect();
            let want: String = serde_json::from_str(&format!("\"{json}\"")).unwrap();
            let bytes = json.as_bytes();
            let mut text = String::new();
            let mut d = StringDecoder::new();
            let mut at = 0;
            while at < bytes.len() {
                let end = (at + next(9) + 1).min(bytes.len());
                d.feed(&bytes[at..end], &mut |c| {
                    text.push_str(c);
                    Ok(())
                })
                .unwrap();
                at = end;
            }
            d.finish().unwrap();
            assert_eq!(text, want, "{json}");
        }
    }

    /// What serde_json refuses, the decoder refuses.
    #[test]
    fn what_serde_json_refuses_is_refused() {
        for bad in [
            "\\ud83d",
            "\\ud83dx",
            "\\ud83d\\n",
            "\\ud83d\\u0041",
            "\\ude00",
            "\\q",
            "\\u12g4",
            "\\u12",
            "a\"b",
            "a\tb",
            "\\",
        ] {
            assert!(serde_json::from_str::<String>(&format!("\"{bad}\"")).is_err(), "{bad}");
            for size in 1..=bad.len() {
                let e = decoded(bad.as_bytes(), size).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{bad} in pieces of {size}");
            }
        }
        assert!(decoded(b"a\xFFb", 1).is_err(), "invalid UTF-8");
        assert!(decoded("é".as_bytes().split_at(1).0, 1).is_err(), "a character cut at the end");
    }

    /// A line whose two long strings have a character, an escape and a
    /// surrogate pair astride every block boundary.
    fn long_line() -> (Vec<u8>, String, String) {
        let unit = "ab\u{e9}\u{20ac}\u{1F600}\\n\\\"\\u00e9\\ud83d\\ude00 ";
        // Not a divisor of the block: each boundary falls elsewhere in the unit.
        let first = unit.repeat(3 * BLOCK / unit.len() + 7);
        let second = format!("{}{}", "x\\t".repeat(2 * HELD), "\\uD83D\\uDE00");
        let line = format!(
            r#"{{"type":"message","id":"e1","message":{{"content":[{{"type":"text","text":"{first}"}},"{second}"],"a/b~":{{"k\"":"short"}}}}}}"#
        );
        let mut f = b"{\"a\":1}\n".to_vec();
        f.extend_from_slice(line.as_bytes());
        f.push(b'\n');
        let first: String = serde_json::from_str(&format!("\"{first}\"")).unwrap();
        let second: String = serde_json::from_str(&format!("\"{second}\"")).unwrap();
        (f, first, second)
    }

    /// The long strings of a line decode to what serde_json gives for the
    /// whole line, each named by its pointer with its preview's text.
    #[test]
    fn long_strings_stream_from_the_file_as_the_whole_line_decodes() {
        let (f, first, second) = long_line();
        let r = reduce_line(&f, 8, f.len() as u64).unwrap().unwrap();
        assert_eq!(r.strings.len(), 2);
        let texts = long_texts(&r);
        let pointers: Vec<_> = texts.iter().map(|t| t.pointer.as_deref()).collect();
        assert_eq!(pointers, [Some("/message/content/0/text"), Some("/message/content/1")]);
        let preview: serde_json::Value = serde_json::from_slice(&r.bytes).unwrap();
        for (t, whole) in texts.iter().zip([&first, &second]) {
            let ptr = t.pointer.as_deref().unwrap();
            assert_eq!(preview.pointer(ptr).and_then(|v| v.as_str()), Some(t.preview.as_str()));
            assert!(whole.starts_with(&t.preview) && t.preview.len() > 1000);
            let mut text = String::new();
            let mut chunks = 0;
            decode_long_string(&f, 8, &r, t.index, &mut |c| {
                assert!(!c.is_empty() && c.len() <= BLOCK + 3);
                chunks += 1;
                {
                    text.push_str(c);
                    Ok(())
                }
            })
            .unwrap();
            assert_eq!(&text, whole);
            assert!(chunks > 1, "{chunks} chunks");
        }
        let e = decode_long_string(&f, 8, &r, 2, &mut |_| Ok(())).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    /// A block changed since the reduction fails before any of its text is handed on.
    #[test]
    fn a_changed_block_fails_before_its_text_is_handed_on() {
        let (mut f, first, _) = long_line();
        let r = reduce_line(&f, 8, f.len() as u64).unwrap().unwrap();
        // A byte of the second block, inside the first string.
        f[8 + BLOCK + 100] = b'x';
        let mut text = String::new();
        let e = decode_long_string(&f, 8, &r, 0, &mut |c| {
            text.push_str(c);
            Ok(())
        })
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(first.starts_with(&text));
        let s = r.strings[0];
        // Decoding never lengthens JSON text: at most the first block's text was handed on.
        let first_block_text = (BLOCK as u64 - (s.at - 8 + 1)) as usize;
        assert!(!text.is_empty() && text.len() <= first_block_text, "{} bytes handed on", text.len());
    }

    /// Pieces of a string escaped one by one are the string as the writer writes it.
    #[test]
    fn fragments_escape_as_the_writer_does() {
        let mut all: String = (0u32..0x80).filter_map(char::from_u32).collect();
        all.push_str("é€😀\u{7f}\u{2028}</script>");
        let whole = crate::json::to_vec(&all).unwrap();
        assert_eq!(whole, serde_json::to_vec(&all).unwrap());
        for size in [1, 2, 3, 7, 64] {
            let mut out = b"\"".to_vec();
            let mut at = 0;
            while at < all.len() {
                let mut end = (at + size).min(all.len());
                while !all.is_char_boundary(end) {
                    end += 1;
                }
                write_json_fragment(&all[at..end], &mut out).unwrap();
                at = end;
            }
            out.push(b'"');
            assert_eq!(String::from_utf8(out).unwrap(), String::from_utf8(whole.clone()).unwrap(), "pieces of {size}");
        }
    }

    /// Pointers escape `~` and `/`, and follow keys with escapes.
    #[test]
    fn pointers_escape_keys() {
        let long = "y".repeat(HELD + 1);
        let line = format!("{{\"id\":\"a\",\"a/b~\":{{\"k\\u0022\":[1,{{\"x\":2}},\"{long}\"]}}}}\n");
        let r = reduce_line(&line.clone().into_bytes(), 0, u64::MAX).unwrap().unwrap();
        let texts = long_texts(&r);
        assert_eq!(texts.len(), 1);
        let ptr = texts[0].pointer.as_deref().unwrap();
        assert_eq!(ptr, "/a~1b~0/k\"/2");
        let whole: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(whole.pointer(ptr).and_then(|v| v.as_str()).map(str::len), Some(long.len()));
    }
}
