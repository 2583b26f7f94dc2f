//! The light scan's fast path: a hand-written JSON validator that reads a
//! line's [`RecordHead`] without decoding anything else.
//!
//! It answers "valid, and this is the head" only when serde_json (with this
//! workspace's features) is certain to accept the line as a `Value` and
//! [`RecordHead::from_value`] is certain to give the same head. Every other
//! line, valid or not, is "unsure" (`None`) and takes the exact serde path.
//! Refusing too much costs time; accepting too much would be a bug, so each
//! rule below errs on the side of "unsure":
//!
//! - the line is valid UTF-8 (one that is not is read lossily, with a
//!   diagnostic, by the serde path) and holds no byte below 0x20 at all
//!   (serde_json refuses them raw in strings; outside strings only `\t`,
//!   `\n`, `\r` are allowed, and lines carrying those are rare enough to
//!   leave to serde);
//! - the grammar is RFC 8259's: objects, arrays, strings, numbers, `true`,
//!   `false`, `null`, whitespace of space/tab/LF/CR, no trailing commas, one
//!   top-level value that is an object, nothing after it;
//! - escapes are `\" \\ \/ \b \f \n \r \t` and `\uXXXX`; a `\u` escape in the
//!   surrogate range is accepted only as a high surrogate immediately followed
//!   by a `\u` low surrogate (serde_json refuses lone or reversed surrogates in
//!   a `String`), and not for the last characters of plane 16, nor may the
//!   line hold one raw (they may stand for lone surrogates: `crate::json`);
//! - nesting is at most 127 arrays and objects deep, top level included
//!   (serde_json's recursion limit of 128; `unbounded_depth` only lets a
//!   caller lift it, and `from_str` does not);
//! - a number is accepted when it cannot overflow an `f64`: with `d` integer
//!   digits and exponent `e` its magnitude is below `10^(d+e)`, so `d + e <=
//!   300` is finite; exponents of more than 6 digits are unsure;
//! - an object key with an escape is unsure (it could spell a head field, or
//!   serde_json's raw-value marker, which changes what a `Value` accepts), and
//!   so is a key equal to the raw-value marker;
//! - a head field (`type`, `id`, `parentId`, `timestamp`, `message.role`;
//!   `message.timestamp` is read when it is a number)
//!   whose value is a string with an escape is unsure (the head keeps the
//!   decoded text).
//!
//! Head rules mirror [`RecordHead::from_value`]: a later duplicate key wins,
//! `role` is read only when `message` is an object, and a non-string value
//! clears the field.
//!
//! Strings, most of a session's bytes, are read 64 bytes at a time: vector
//! compares give masks of a block's quotes and backslashes, [`escaped_by`]
//! marks the bytes backslashes escape, and a string ends at its first
//! unescaped quote. One pass over the line ([`line`]) makes these masks for
//! every block and checks every escape and byte at once; a string is then a
//! search for the next set bit. In a line with an escape that is not a
//! simple one (`\"`, `\n`, …), strings are read a block at a time
//! ([`Masks`]) and a string with such an escape one escape at a time, which
//! decides `\u` escapes and refuses invalid ones exactly as before.

use compact_str::CompactString;
use wide::u8x16;

use line::{Bytes, LineMasks};

use crate::clock::parse_iso_ms;
use crate::head::{ParentField, RecordHead, RAW_VALUE_TOKEN};
use crate::vocab::{EntryType, Role};

/// serde_json's default recursion limit: the 128th nested container is refused.
const MAX_DEPTH: u32 = 127;

/// The head of `line` (a trimmed line) when it is surely a JSON object
/// serde_json accepts, else `None` (also for invalid UTF-8, which the caller
/// reads lossily).
pub(crate) fn fast_head(line: &[u8]) -> Option<RecordHead> {
    fast_head_with(line, false).map(|(head, _)| head)
}

/// What `check` needs beyond the head, read in the same pass by
/// [`fast_head_detail`]: the tool calls and tool result a message holds, and
/// whether `parentId` is neither a string nor `null`. The fields mirror
/// [`crate::MessageView`]'s reading: a later duplicate key wins, a value that
/// is not a string is absent, and a string with an escape makes the line
/// unsure (the exact path decodes it).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HeadDetail<'a> {
    /// `message.toolCallId`, when `message` is an object and it is a string.
    pub tool_call_id: Option<&'a str>,
    /// The `toolCall` blocks of `message.content` (when it is an array), in order: `(id, name)`.
    pub tool_calls: Vec<(Option<&'a str>, Option<&'a str>)>,
    /// True when the last `parentId` is present and neither a string nor `null`.
    pub parent_other: bool,
}

/// [`fast_head`] that also reads the [`HeadDetail`].
pub(crate) fn fast_head_detail(line: &[u8]) -> Option<(RecordHead, HeadDetail<'_>)> {
    fast_head_with(line, true)
}

fn fast_head_with(line: &[u8], detail: bool) -> Option<(RecordHead, HeadDetail<'_>)> {
    let mut masks = LineMasks::take();
    let (simple, bytes) = masks.fill(line);
    // Printable ASCII is UTF-8 without control bytes.
    // Plane 16's characters (F4 8F …) may be markers to `crate::json`: unsure.
    let sure_bytes = match bytes {
        Bytes::PrintableAscii => true,
        Bytes::NoControl => simdutf8::basic::from_utf8(line).is_ok() && memchr::memchr(0xF4, line).is_none(),
        Bytes::Control => false,
    };
    let mut p = Parser {
        b: line,
        i: 0,
        depth: 0,
        block: usize::MAX / 2,
        masks: Masks { quotes: 0, backslashes: 0, escaped: 0 },
        line: masks,
        simple,
        want_detail: detail,
        detail: HeadDetail::default(),
    };
    let head = sure_bytes.then(|| p.top()).flatten();
    std::mem::take(&mut p.line).give_back();
    head.map(|head| (head, p.detail))
}

/// The quotes and backslashes of 64 bytes of a line, one bit per byte
/// (bit `k` for byte `at + k`; bytes past the end are neither). Strings in
/// session files hold escapes every few dozen bytes (newlines, quotes in
/// code), so strings are read from these masks, one per 64 bytes, instead of
/// one search per escape. The compares are SIMD through `wide` (SSE2 on any
/// x86-64, NEON on aarch64, plain code elsewhere), without `unsafe` here.
#[derive(Clone, Copy)]
struct Masks {
    quotes: u64,
    backslashes: u64,
    /// The bytes a backslash escapes (see [`escaped_by`]).
    escaped: u64,
}

impl Masks {
    fn of(b: &[u8], at: usize) -> Masks {
        let mut pad = [b' '; 64];
        let block = block_at(b.get(at..).unwrap_or_default(), &mut pad);
        let (quotes, backslashes) = block_masks(block, |_| {});
        // The run of backslashes before the block, if any, decides whether its first byte is escaped.
        let run = b[..at.min(b.len())].iter().rev().take_while(|&&c| c == b'\\').count();
        Masks { quotes, backslashes, escaped: escaped_by(backslashes, run % 2 == 1) }
    }
}

/// The first 64 bytes of `bytes`, or all of them followed by spaces (neither
/// quotes nor backslashes, nor control bytes) in `pad`.
fn block_at<'a>(bytes: &'a [u8], pad: &'a mut [u8; 64]) -> &'a [u8; 64] {
    match bytes.first_chunk::<64>() {
        Some(block) => block,
        None => {
            pad[..bytes.len()].copy_from_slice(bytes);
            pad
        }
    }
}

/// The quotes and backslashes of a block, bit `k` for byte `k`. Each of its
/// four 16-byte lanes is also given to `lane`, for a caller that reads more
/// of the bytes in the same loop.
fn block_masks(block: &[u8; 64], mut lane: impl FnMut(u8x16)) -> (u64, u64) {
    let (mut quotes, mut backslashes) = (0u64, 0u64);
    for (j, bytes) in block.chunks_exact(16).enumerate() {
        let v = u8x16::new(bytes.try_into().unwrap_or_default());
        lane(v);
        quotes |= u64::from(v.simd_eq(u8x16::splat(b'"')).to_bitmask()) << (16 * j);
        backslashes |= u64::from(v.simd_eq(u8x16::splat(b'\\')).to_bitmask()) << (16 * j);
    }
    (quotes, backslashes)
}

/// Bit `k` set when byte `k` of a block is escaped: it follows a backslash
/// that is not itself escaped. `carry`: the block's first byte is escaped
/// (the run of backslashes that ends the previous block is odd). The same
/// carry-less trick as simdjson's: subtracting the escapes from the odd bits
/// flips, within each run of backslashes, the parity that escapes the byte
/// after the run.
fn escaped_by(backslashes: u64, carry: bool) -> u64 {
    const ODD: u64 = 0xAAAA_AAAA_AAAA_AAAA;
    let escaped_in = u64::from(carry);
    let escapes = backslashes & !escaped_in;
    let codes = ((escapes << 1) | ODD).wrapping_sub(escapes) ^ ODD;
    codes ^ (backslashes | escaped_in)
}

/// The escapes `"`, `\\`, `/`, `b`, `f`, `n`, `r`, `t` by the byte after the backslash.
const SIMPLE_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut k = 0;
    let chars = *b"\"\\/bfnrt";
    while k < chars.len() {
        t[chars[k] as usize] = true;
        k += 1;
    }
    t
};

/// A value the head keeps: a string without escapes, `null`, or anything else.
enum Field<'a> {
    Str(&'a str),
    Null,
    Other,
}

impl<'a> Field<'a> {
    fn str(&self) -> Option<&'a str> {
        match self {
            Field::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// A string's content between its quotes, and whether it holds an escape.
struct StrSpan {
    start: usize,
    end: usize,
    escaped: bool,
}

struct Parser<'a> {
    /// A line that is valid UTF-8.
    b: &'a [u8],
    i: usize,
    depth: u32,
    /// The start of the 64-byte block whose quotes and backslashes `masks` holds.
    block: usize,
    masks: Masks,
    /// The whole line's masks, when `simple`: every escape in it is a simple one.
    line: LineMasks,
    simple: bool,
    /// Read the [`HeadDetail`] too.
    want_detail: bool,
    detail: HeadDetail<'a>,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// The line: one object between optional whitespace.
    fn top(&mut self) -> Option<RecordHead> {
        self.ws();
        let head = self.top_object()?;
        self.ws();
        (self.i == self.b.len()).then_some(head)
    }

    /// The top-level object, keeping the head fields.
    fn top_object(&mut self) -> Option<RecordHead> {
        self.eat(b'{')?;
        self.enter()?;
        let mut head = RecordHead::default();
        let mut timestamp: Option<&'a str> = None;
        self.ws();
        if self.eat(b'}').is_none() {
            loop {
                let key = self.key()?;
                match key {
                    b"type" => head.entry_type = self.field()?.str().map(EntryType::parse),
                    b"id" => head.id = self.field()?.str().map(CompactString::from),
                    b"parentId" => {
                        let field = self.field()?;
                        self.detail.parent_other = matches!(field, Field::Other);
                        head.parent = match field {
                            Field::Str(s) => ParentField::Id(CompactString::from(s)),
                            Field::Null | Field::Other => ParentField::Root,
                        }
                    }
                    b"timestamp" => {
                        timestamp = match self.field()? {
                            Field::Str(s) => Some(s),
                            _ => None,
                        }
                    }
                    b"message" => {
                        head.has_message = true;
                        let (role, time) = self.message_head()?;
                        (head.role, head.message_time) = (role.map(Role::parse), time);
                    }
                    _ => self.value()?,
                }
                if self.next_member(b'}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        head.ts_ms = timestamp.and_then(parse_iso_ms);
        Some(head)
    }

    /// After a member or element: `true` at the closing `close`, `false` after a comma.
    fn next_member(&mut self, close: u8) -> Option<bool> {
        self.ws();
        match self.peek()? {
            b',' => {
                self.i += 1;
                self.ws();
                Some(false)
            }
            c if c == close => {
                self.i += 1;
                Some(true)
            }
            _ => None,
        }
    }

    /// An object key and its colon; unsure on escapes and on the raw-value marker.
    fn key(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let s = self.string()?;
        if s.escaped {
            return None;
        }
        let key = &self.b[s.start..s.end];
        if key == RAW_VALUE_TOKEN.as_bytes() {
            return None;
        }
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(key)
    }

    /// A head field's value.
    fn field(&mut self) -> Option<Field<'a>> {
        match self.peek()? {
            b'"' => {
                self.i += 1;
                let s = self.string()?;
                if s.escaped {
                    return None;
                }
                // Between two ASCII quotes of valid UTF-8: valid UTF-8 too.
                Some(Field::Str(std::str::from_utf8(&self.b[s.start..s.end]).ok()?))
            }
            b'n' => {
                self.literal(b"null")?;
                Some(Field::Null)
            }
            _ => {
                self.value()?;
                Some(Field::Other)
            }
        }
    }

    /// `message`'s value: its `role` and numeric `timestamp` when it is an object.
    fn message_head(&mut self) -> Option<(Option<&'a str>, Option<f64>)> {
        // The last `message` is the one read.
        (self.detail.tool_call_id, self.detail.tool_calls) = (None, vec![]);
        if self.peek()? != b'{' {
            self.value()?;
            return Some((None, None));
        }
        self.i += 1;
        self.enter()?;
        let (mut role, mut time) = (None, None);
        self.ws();
        if self.eat(b'}').is_none() {
            loop {
                match self.key()? {
                    b"role" => role = self.field()?.str(),
                    b"timestamp" => time = self.number_value()?,
                    b"toolCallId" if self.want_detail => self.detail.tool_call_id = self.field()?.str(),
                    b"content" if self.want_detail => self.detail.tool_calls = self.tool_calls()?,
                    _ => self.value()?,
                }
                if self.next_member(b'}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Some((role, time))
    }

    /// `message.content`: the `toolCall` blocks when it is an array (see [`HeadDetail`]).
    fn tool_calls(&mut self) -> Option<Vec<(Option<&'a str>, Option<&'a str>)>> {
        let mut calls = vec![];
        if self.peek()? != b'[' {
            self.value()?;
            return Some(calls);
        }
        self.i += 1;
        self.enter()?;
        self.ws();
        if self.eat(b']').is_none() {
            loop {
                if self.peek()? == b'{' {
                    if let Some(call) = self.block()? {
                        calls.push(call);
                    }
                } else {
                    self.value()?;
                }
                if self.next_member(b']')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(calls)
    }

    /// One content block (an object): `Some((id, name))` when its `type` is `toolCall`.
    #[allow(clippy::type_complexity)]
    fn block(&mut self) -> Option<Option<(Option<&'a str>, Option<&'a str>)>> {
        self.i += 1;
        self.enter()?;
        let (mut kind, mut id, mut name) = (None, None, None);
        self.ws();
        if self.eat(b'}').is_none() {
            loop {
                match self.key()? {
                    b"type" => kind = self.field()?.str(),
                    b"id" => id = self.field()?.str(),
                    b"name" => name = self.field()?.str(),
                    _ => self.value()?,
                }
                if self.next_member(b'}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Some((kind == Some("toolCall")).then_some((id, name)))
    }

    /// Any value, read as a number when it is one (`Value::as_f64`'s reading).
    fn number_value(&mut self) -> Option<Option<f64>> {
        let start = self.i;
        if let b'-' | b'0'..=b'9' = self.peek()? {
            self.number()?;
            // Validated JSON number text is ASCII and Rust's float syntax; both round correctly.
            return Some(std::str::from_utf8(&self.b[start..self.i]).ok()?.parse::<f64>().ok());
        }
        self.value()?;
        Some(None)
    }

    /// Any value, validated and skipped. Leading whitespace is already eaten.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.string().map(drop)
            }
            b'{' => {
                self.i += 1;
                self.enter()?;
                self.ws();
                if self.eat(b'}').is_none() {
                    loop {
                        self.key()?;
                        self.value()?;
                        if self.next_member(b'}')? {
                            break;
                        }
                    }
                }
                self.depth -= 1;
                Some(())
            }
            b'[' => {
                self.i += 1;
                self.enter()?;
                self.ws();
                if self.eat(b']').is_none() {
                    loop {
                        self.value()?;
                        if self.next_member(b']')? {
                            break;
                        }
                    }
                }
                self.depth -= 1;
                Some(())
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    /// A string's rest after its opening quote. The caller checked there is
    /// no control byte in the line, so only quotes and backslashes matter.
    /// The string ends at the first quote that is not escaped; the bytes
    /// escaped before it must be simple escapes, else (`\\u` escapes, invalid
    /// ones) the string is read again one escape at a time.
    fn string(&mut self) -> Option<StrSpan> {
        let start = self.i;
        if self.simple {
            let (end, escaped) = self.line.string_at(start)?;
            self.i = end + 1;
            return Some(StrSpan { start, end, escaped });
        }
        let mut escaped = false;
        loop {
            self.load_block();
            let ahead = u64::MAX << (self.i - self.block);
            let ends = self.masks.quotes & !self.masks.escaped & ahead;
            // The string's bytes in this block: up to its end, or the whole rest.
            let inside = if ends == 0 { ahead } else { ahead & (ends - 1) };
            let mut escapes = self.masks.escaped & inside;
            if escapes != 0 {
                escaped = true;
                while escapes != 0 {
                    let at = self.block + escapes.trailing_zeros() as usize;
                    if !self.b.get(at).is_some_and(|&c| SIMPLE_ESCAPE[usize::from(c)]) {
                        self.i = start;
                        return self.string_stepwise();
                    }
                    escapes &= escapes - 1;
                }
            }
            if ends != 0 {
                let end = self.block + ends.trailing_zeros() as usize;
                self.i = end + 1;
                return Some(StrSpan { start, end, escaped });
            }
            if self.block + 64 >= self.b.len() {
                return None;
            }
            self.i = self.block + 64;
        }
    }

    /// The block holding `i` (blocks count from the line's start and the
    /// last one is kept: the short strings of a block, keys and values,
    /// share its masks).
    fn load_block(&mut self) {
        if self.i < self.block || self.i >= self.block + 64 {
            self.block = self.i - self.i % 64;
            self.masks = Masks::of(self.b, self.block);
        }
    }

    /// [`Parser::string`] one escape at a time: the exact reading of `\\u`
    /// escapes (hex digits, surrogate pairs) and of invalid escapes.
    fn string_stepwise(&mut self) -> Option<StrSpan> {
        let start = self.i;
        let mut escaped = false;
        loop {
            self.load_block();
            let ahead = u64::MAX << (self.i - self.block);
            let (quotes, backslashes) = (self.masks.quotes & ahead, self.masks.backslashes & ahead);
            // `trailing_zeros` of an empty mask is 64: past the block.
            let (quote, backslash) = (quotes.trailing_zeros() as usize, backslashes.trailing_zeros() as usize);
            if quote < backslash {
                self.i = self.block + quote + 1;
                return Some(StrSpan { start, end: self.block + quote, escaped });
            }
            if backslash == 64 {
                if self.block + 64 >= self.b.len() {
                    return None;
                }
                self.i = self.block + 64;
                continue;
            }
            escaped = true;
            self.i = self.block + backslash + 1;
            self.escape()?;
        }
    }

    /// One escape after its backslash.
    fn escape(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                self.i += 1;
                Some(())
            }
            b'u' => {
                self.i += 1;
                let n = self.hex4()?;
                match n {
                    // A pair spelling a character of the marker range (`crate::json`): unsure.
                    0xDBF0..=0xDBFF => None,
                    0xD800..=0xDBEF => {
                        // Only a high surrogate directly followed by a low one decodes.
                        if self.b.get(self.i..self.i + 2)? != b"\\u" {
                            return None;
                        }
                        self.i += 2;
                        match self.hex4()? {
                            0xDC00..=0xDFFF => Some(()),
                            _ => None,
                        }
                    }
                    0xDC00..=0xDFFF => None,
                    _ => Some(()),
                }
            }
            _ => None,
        }
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.b.get(self.i..self.i + 4)?;
        let mut n = 0u16;
        for &d in digits {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return None,
            };
            n = n << 4 | u16::from(v);
        }
        self.i += 4;
        Some(n)
    }

    /// A number that surely fits an `f64` (see the module doc).
    fn number(&mut self) -> Option<()> {
        self.eat(b'-');
        let int_start = self.i;
        match self.peek()? {
            b'0' => {
                self.i += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return None;
                }
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let int_digits = (self.i - int_start) as i64;
        if self.peek() == Some(b'.') {
            self.i += 1;
            let frac_start = self.i;
            self.digits();
            if self.i == frac_start {
                return None;
            }
        }
        let mut exp = 0i64;
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            let negative = match self.peek() {
                Some(b'-') => {
                    self.i += 1;
                    true
                }
                Some(b'+') => {
                    self.i += 1;
                    false
                }
                _ => false,
            };
            let exp_start = self.i;
            self.digits();
            let exp_digits = &self.b[exp_start..self.i];
            if exp_digits.is_empty() || exp_digits.len() > 6 {
                return None;
            }
            let magnitude = exp_digits.iter().fold(0i64, |n, &d| n * 10 + i64::from(d - b'0'));
            exp = if negative { -magnitude } else { magnitude };
        }
        (int_digits + exp <= 300).then_some(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }
}

mod line;
#[cfg(test)]
mod tests;
