//! The writer: serde_json's compact output, with strings written as
//! `JSON.stringify` writes the JavaScript strings they stand for (markers as
//! their code units, lone ones as `\udXXX`) and deep containers copied out as
//! the JSON they hold.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter, Serializer};
use serde_json::Value;

use super::{may_hold_markers, pieces, Piece, DEEP_PREFIX};

/// serde_json's compact formatter, with JavaScript's strings (see the module docs).
#[derive(Debug, Default, Clone)]
pub struct JsFormatter {
    /// Inside a string whose opening quote is not written yet (a deep
    /// container's text is written without quotes, so the first fragment decides).
    opening: bool,
    /// Inside a deep container's text: written as it is.
    raw: bool,
}

impl Formatter for JsFormatter {
    fn begin_string<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.opening = true;
        self.raw = false;
        Ok(())
    }

    fn end_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if std::mem::take(&mut self.opening) {
            return w.write_all(b"\"\"");
        }
        if std::mem::take(&mut self.raw) {
            return Ok(());
        }
        w.write_all(b"\"")
    }

    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
        let mut fragment = fragment;
        if std::mem::take(&mut self.opening) {
            match fragment.strip_prefix(DEEP_PREFIX) {
                Some(text) => {
                    self.raw = true;
                    fragment = text;
                }
                None => w.write_all(b"\"")?,
            }
        }
        if self.raw || !may_hold_markers(fragment) {
            return w.write_all(fragment.as_bytes());
        }
        pieces(fragment, |p| match p {
            Piece::Text(t) => w.write_all(t.as_bytes()),
            Piece::Char(c) => w.write_all(c.encode_utf8(&mut [0; 4]).as_bytes()),
            Piece::Lone(u) => write!(w, "\\u{u:04x}"),
        })
    }

    fn write_char_escape<W: ?Sized + Write>(&mut self, w: &mut W, escape: CharEscape) -> io::Result<()> {
        if std::mem::take(&mut self.opening) {
            w.write_all(b"\"")?;
        }
        if self.raw {
            // A deep container's text holds no control character: only quotes and backslashes get here.
            let c = match escape {
                CharEscape::Quote => b'"',
                CharEscape::ReverseSolidus => b'\\',
                CharEscape::Solidus => b'/',
                _ => return write_escape(w, escape),
            };
            return w.write_all(&[c]);
        }
        write_escape(w, escape)
    }
}

/// serde_json's own escape text.
fn write_escape<W: ?Sized + Write>(w: &mut W, escape: CharEscape) -> io::Result<()> {
    serde_json::ser::CompactFormatter.write_char_escape(w, escape)
}

/// Writes `value` as `JSON.stringify` writes the value it stands for.
pub fn to_writer<W: Write, T: ?Sized + Serialize>(w: W, value: &T) -> serde_json::Result<()> {
    let mut ser = Serializer::with_formatter(w, JsFormatter::default());
    value.serialize(&mut ser)
}

/// [`to_writer`] into a new `Vec`.
pub fn to_vec<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    to_writer(&mut out, value)?;
    Ok(out)
}

/// [`to_writer`] into a new `String`.
pub fn to_string<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
    let bytes = to_vec(value)?;
    // The writer writes UTF-8 only: strings come from `&str`, escapes are ASCII.
    String::from_utf8(bytes).map_err(serde::ser::Error::custom)
}

/// Appends the JSON text of a scalar (or any value) to `out`.
pub(super) fn append(out: &mut String, v: &Value) {
    if let Ok(text) = to_string(v) {
        out.push_str(&text);
    }
}
