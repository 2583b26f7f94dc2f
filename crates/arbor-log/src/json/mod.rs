//! JSON as JavaScript reads and writes it: [`parse`] accepts exactly the
//! texts `JSON.parse` accepts, and [`to_writer`] writes what `JSON.stringify`
//! writes for the same values.
//!
//! pi writes its session files with `JSON.stringify` and reads them with
//! `JSON.parse`, which take three things serde_json refuses: lone UTF-16
//! surrogates (`"\ud800"`, text cut in the middle of an emoji), numbers
//! beyond the `f64` range (`1e400`, read as ±Infinity) and nesting of any
//! depth. serde_json reads every other line exactly as JavaScript does, so
//! [`parse`] gives a line to serde_json first and only a line it refuses
//! (or one holding the characters below) takes the slower reader here.
//!
//! How the three are held in a [`Value`]:
//!
//! - **Lone surrogates.** A Rust `String` cannot hold one, so each UTF-16
//!   code unit `U` in `D800..=DFFF` that is not half of an ordinary pair is
//!   kept as the *marker* character `U+10F800 + (U − D800)` (the last 2048
//!   code points of plane 16's private use area). A character that is itself
//!   in that range is kept as the markers of its two halves, so every marker
//!   in a string stands for one code unit and nothing is ambiguous. The
//!   writer turns markers back into code units: a high and a low half that
//!   pair up are written as their character, any other as the escape
//!   `\udXXX`, as `JSON.stringify` does. [`display`] shows a lone one as
//!   U+FFFD. Text joined from separately parsed pieces (a streamed reply)
//!   goes through [`join`], which pairs up halves that meet.
//! - **Numbers beyond `f64`** read as `null`: `JSON.parse` reads ±Infinity,
//!   which `JSON.stringify` writes as `null`, and serde_json turns an
//!   infinite float into `null` too. (Where pi tests such a number itself,
//!   for truth or as an exit code, Arbor sees `null`; docs/format.md.)
//! - **Deep nesting.** Containers nested deeper than serde_json's own limit
//!   ([`MAX_DEPTH`]) are kept as one string: a marker sequence no parsed
//!   string can hold, then the container's JSON text as `JSON.stringify`
//!   would write it, which the writer copies out as JSON. So no `Value`
//!   Arbor holds is deeper than serde_json would build, and dropping,
//!   cloning, comparing and serializing one never recurse further than that.
//!
//! The file's bytes never change: all of this is about what a line means
//! and how Arbor writes JSON of its own.

mod parse;
mod splice;
mod write;

use std::borrow::Cow;

pub use splice::splice;
pub use write::{to_string, to_vec, to_writer, JsFormatter};

use serde_json::Value;

/// Containers nested deeper than this are kept as JSON text (serde_json's recursion limit).
pub const MAX_DEPTH: usize = 127;

/// The first marker: the code unit `D800`.
const MARKER_BASE: u32 = 0x10_F800;

/// What a string holding a deep container's JSON text starts with: the
/// markers of `D800` and `DC00`, which would pair up, so no parsed string
/// holds them (see the module docs).
const DEEP_PREFIX: &str = "\u{10F800}\u{10FC00}J";

/// Parses a JSON text as `JSON.parse` does (see the module docs).
pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    parse_detail(text).map(|(v, _)| v)
}

/// [`parse`], and whether the text took the slower reader: serde_json
/// refuses it (or would read a marker-range character into it), and only
/// JavaScript's reading accepts it.
pub fn parse_detail(text: &str) -> Result<(Value, bool), serde_json::Error> {
    if is_plain(text.as_bytes()) {
        if let Ok(v) = serde_json::from_str(text) {
            return Ok((v, false));
        }
    }
    match parse::parse(text) {
        Some(v) => Ok((v, true)),
        // serde_json's message is the clearer one when both refuse the text.
        None => Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Err(e) => e,
            Ok(_) => serde::de::Error::custom("not JSON"),
        }),
    }
}

/// True when serde_json reads `text` as JavaScript does, if it reads it at
/// all: it holds no character, raw or escaped, in the marker range.
pub fn is_plain(text: &[u8]) -> bool {
    // U+10F800..=U+10FFFF is F4 8F A0..BF xx in UTF-8 (F4 itself is rare), and
    // its escapes are pairs that start with `\udbfe` or `\udbff` (`\u` is rare too).
    let raw =
        memchr::memchr_iter(0xF4, text).any(|i| text.get(i + 1..i + 3).is_some_and(|b| b[0] == 0x8F && b[1] >= 0xA0));
    let escaped = memchr::memmem::find_iter(text, b"\\u")
        .any(|i| text.get(i + 2..i + 5).is_some_and(|h| h.eq_ignore_ascii_case(b"dbf")));
    !raw && !escaped
}

/// The marker of a UTF-16 code unit in `D800..=DFFF`.
fn marker(unit: u16) -> char {
    char::from_u32(MARKER_BASE + u32::from(unit - 0xD800)).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The code unit a marker stands for.
fn unit_of(c: char) -> Option<u16> {
    let n = u32::from(c);
    (MARKER_BASE..=0x10_FFFF).contains(&n).then(|| (n - MARKER_BASE + 0xD800) as u16)
}

/// A string's code units, as JavaScript sees them, decoded: ordinary
/// characters, and for markers either the character a pair of them spells
/// or the lone unit.
enum Piece<'a> {
    Text(&'a str),
    Char(char),
    Lone(u16),
}

/// True when `s` may hold a marker: every marker's UTF-8 starts with the byte F4.
#[inline]
fn may_hold_markers(s: &str) -> bool {
    // Branch-free, so that it vectorizes: most strings are short runs between escapes.
    s.as_bytes().iter().fold(false, |seen, &b| seen | (b >= 0xF4))
}

/// Splits `s` into [`Piece`]s; `f` gets them in order.
fn pieces<'a, E>(s: &'a str, mut f: impl FnMut(Piece<'a>) -> Result<(), E>) -> Result<(), E> {
    if !may_hold_markers(s) {
        return f(Piece::Text(s));
    }
    let mut rest = s;
    while let Some(at) = rest.find(|c: char| unit_of(c).is_some()) {
        if at > 0 {
            f(Piece::Text(&rest[..at]))?;
        }
        let mut chars = rest[at..].chars();
        let unit = chars.next().and_then(unit_of).unwrap_or(0xFFFD);
        let next = chars.clone().next().and_then(unit_of);
        match next {
            Some(low) if (0xD800..0xDC00).contains(&unit) && (0xDC00..0xE000).contains(&low) => {
                let c = 0x1_0000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                f(Piece::Char(char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER)))?;
                chars.next();
            }
            _ => f(Piece::Lone(unit))?,
        }
        rest = chars.as_str();
    }
    if !rest.is_empty() {
        f(Piece::Text(rest))?;
    }
    Ok(())
}

/// A string for people to read: a lone surrogate shows as U+FFFD, and a deep
/// container's text as itself.
pub fn display(s: &str) -> Cow<'_, str> {
    if let Some(text) = s.strip_prefix(DEEP_PREFIX) {
        return Cow::Borrowed(text);
    }
    if !may_hold_markers(s) || !s.chars().any(|c| unit_of(c).is_some()) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let _ = pieces::<()>(s, |p| {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Char(c) => out.push(c),
            Piece::Lone(_) => out.push(char::REPLACEMENT_CHARACTER),
        }
        Ok(())
    });
    Cow::Owned(out)
}

/// A value as text for people: a string as it is (see [`display`]), any other value as its JSON.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => display(s).into_owned(),
        other => to_string(other).unwrap_or_default(),
    }
}

/// `a + b` as JavaScript joins strings: a high surrogate at the end of `a`
/// and a low one at the start of `b` become one character.
pub fn join(a: &str, b: &str) -> String {
    let mut out = String::with_capacity(a.len() + b.len());
    out.push_str(a);
    push_joined(&mut out, b);
    out
}

/// Appends `b` to `out` as [`join`] joins them.
pub fn push_joined(out: &mut String, b: &str) {
    let high = out.chars().next_back().and_then(unit_of).filter(|u| (0xD800..0xDC00).contains(u));
    let low = b.chars().next().and_then(unit_of).filter(|u| (0xDC00..0xE000).contains(u));
    match (high, low) {
        (Some(h), Some(l)) => {
            let c = 0x1_0000 + ((u32::from(h) - 0xD800) << 10) + (u32::from(l) - 0xDC00);
            // A pair spelling a marker-range character stays as its two markers.
            if let Some(c) = char::from_u32(c).filter(|c| unit_of(*c).is_none()) {
                out.pop();
                out.push(c);
                let first = b.chars().next().map_or(0, char::len_utf8);
                out.push_str(&b[first..]);
                return;
            }
            out.push_str(b);
        }
        _ => out.push_str(b),
    }
}

/// The length of `s` in UTF-16 code units, as JavaScript's `length` counts it.
pub fn utf16_len(s: &str) -> usize {
    let markers = if may_hold_markers(s) { s.chars().filter(|c| unit_of(*c).is_some()).count() } else { 0 };
    // A marker is one code unit, where its character would count two.
    s.encode_utf16().count() - markers
}

/// A number as JavaScript's `JSON.stringify` writes it: a whole number
/// without a fraction (`0`, not serde_json's `0.0`), within the safe integers.
pub fn js_number(x: f64) -> Value {
    const SAFE: f64 = 9_007_199_254_740_992.0;
    if x.fract() == 0.0 && x.abs() < SAFE {
        // Whole and within ±2^53: the cast is exact (and -0 becomes 0, as JavaScript writes it).
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

/// JavaScript's truthiness of a value (`None` is `undefined`).
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_)) | Some(Value::Object(_)) => true,
    }
}

/// True for a string that holds a container too deep to keep as a value.
pub fn is_deep(s: &str) -> bool {
    s.starts_with(DEEP_PREFIX)
}

#[cfg(test)]
mod tests;
