//! Text from session files on a terminal, made harmless: every control
//! character but newline and tab (ESC, which starts colour, cursor, title
//! and clipboard sequences; CR, which overwrites a line; BEL, DEL, the C1
//! controls such as CSI and OSC) and the bidirectional overrides (which
//! reorder what is shown) is written as a visible escape: `\r`, `\x1b`,
//! `\u{9b}`, `\u{202e}`.
//!
//! Human-readable output goes through [`Visible`] (standard output) or
//! [`say!`] and [`visible`] (standard error, the chat screen); `--json`
//! output never does: JSON is written exactly.

use std::borrow::Cow;
use std::io::{self, Write};

/// The visible form of one character, or `None` when it is shown as it is.
fn escape(c: char) -> Option<String> {
    match c {
        '\n' | '\t' => None,
        '\r' => Some("\\r".to_owned()),
        '\0'..='\x1f' | '\x7f' => Some(format!("\\x{:02x}", u32::from(c))),
        '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
            Some(format!("\\u{{{:x}}}", u32::from(c)))
        }
        _ => None,
    }
}

/// `text` with its control characters made visible (borrowed when it has none).
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| escape(c).is_some()) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match escape(c) {
            Some(e) => out.push_str(&e),
            None => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Writes one line to standard error with its control characters made visible.
pub fn say_line(line: &str) {
    let mut text = visible(line).into_owned();
    text.push('\n');
    let _ = io::stderr().write_all(text.as_bytes());
}

/// `eprintln!` for text that may hold a file's contents: control characters
/// are made visible ([`visible`]).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::shared::visible::say_line(&format!($($arg)*))
    };
}
pub(crate) use say;

/// Standard output for a command: for people (control characters made
/// visible, [`Visible`] kept in `slot`), or exactly as written for `--json`.
pub fn for_people<'a, 'o: 'a>(
    out: &'o mut dyn Write,
    json: bool,
    slot: &'a mut Option<Visible<&'o mut dyn Write>>,
) -> &'a mut dyn Write {
    if json {
        out
    } else {
        slot.insert(Visible::new(out))
    }
}

/// A writer that makes control characters visible on their way to `inner`.
/// A character split across two writes is escaped whole.
#[derive(Debug)]
pub struct Visible<W: Write> {
    inner: W,
    /// The start of a UTF-8 sequence whose end has not been written yet.
    pending: Vec<u8>,
}

impl<W: Write> Visible<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Visible<W> {
        Visible { inner, pending: Vec::new() }
    }

    /// Writes `bytes`, escaping what must be escaped; the bytes of an
    /// unfinished character at the end are kept for the next write.
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            // Printable ASCII, newline and tab: most of any text, shown as they are.
            if (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t' {
                i += 1;
                continue;
            }
            let len = match b {
                0x00..=0x7f => 1,
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf7 => 4,
                // A stray continuation or an invalid byte passes as it is.
                _ => {
                    i += 1;
                    continue;
                }
            };
            if i + len > bytes.len() {
                self.inner.write_all(&bytes[start..i])?;
                self.pending.extend_from_slice(&bytes[i..]);
                return Ok(());
            }
            // Only the controls, and characters whose UTF-8 starts C2 (U+0080..=U+00BF) or
            // E2 (U+2000..=U+2FFF), may be escaped: the rest is not even decoded.
            let may_escape = len == 1 || b == 0xc2 || b == 0xe2;
            let escaped = may_escape
                .then(|| std::str::from_utf8(&bytes[i..i + len]).ok().and_then(|s| s.chars().next()).and_then(escape))
                .flatten();
            if let Some(e) = escaped {
                self.inner.write_all(&bytes[start..i])?;
                self.inner.write_all(e.as_bytes())?;
                start = i + len;
            }
            i += len;
        }
        self.inner.write_all(&bytes[start..])
    }
}

impl<W: Write> Write for Visible<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pending.is_empty() {
            self.put(buf)?;
        } else {
            let mut joined = std::mem::take(&mut self.pending);
            joined.extend_from_slice(buf);
            self.put(&joined)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            // An unfinished character at the very end: not a control, written as it is.
            let rest = std::mem::take(&mut self.pending);
            self.inner.write_all(&rest)?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for Visible<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    /// Every character [`visible`] changes, with what it becomes.
    fn table() -> String {
        let mut out = String::new();
        for c in ['\x1b', '\r', '\x07', '\x7f', '\u{9b}', '\u{9d}', '\u{202e}', '\u{2066}'] {
            let _ = writeln!(out, "U+{:04X} -> {}", u32::from(c), visible(&c.to_string()));
        }
        out
    }

    #[test]
    fn controls_become_visible_and_text_stays() {
        assert_eq!(visible("plain\ttext\nnext"), "plain\ttext\nnext");
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
        assert_eq!(visible("\x1b[2J\x1b]52;c;aGk=\x07over\rwrite"), "\\x1b[2J\\x1b]52;c;aGk=\\x07over\\rwrite");
        assert_eq!(visible("a\u{9b}31mb\u{202e}c"), "a\\u{9b}31mb\\u{202e}c");
        assert_eq!(
            table(),
            "U+001B -> \\x1b\nU+000D -> \\r\nU+0007 -> \\x07\nU+007F -> \\x7f\nU+009B -> \\u{9b}\n\
             U+009D -> \\u{9d}\nU+202E -> \\u{202e}\nU+2066 -> \\u{2066}\n"
        );
    }

    #[test]
    fn the_writer_escapes_characters_split_across_writes() {
        let text = "é\x1b[31m红\u{9b}\u{202e}x\r\n".as_bytes();
        for cut in 0..=text.len() {
            let mut out = Vec::new();
            {
                let mut w = Visible::new(&mut out);
                w.write_all(&text[..cut]).unwrap();
                w.write_all(&text[cut..]).unwrap();
                w.flush().unwrap();
            }
            assert_eq!(String::from_utf8(out).unwrap(), "é\\x1b[31m红\\u{9b}\\u{202e}x\\r\n", "cut at {cut}");
        }
    }

    #[test]
    fn the_writer_escapes_what_visible_escapes_for_every_character_it_may() {
        // Every character up to U+3000 (all the escaped ones among them) and a few past it.
        let text: String = (0..0x3000u32).chain([0xfeff, 0x1f600, 0x10ffff]).filter_map(char::from_u32).collect();
        let mut out = Vec::new();
        {
            let mut w = Visible::new(&mut out);
            w.write_all(text.as_bytes()).unwrap();
        }
        assert_eq!(String::from_utf8(out).unwrap(), visible(&text));
    }

    #[test]
    fn invalid_bytes_pass_and_a_dangling_start_is_flushed() {
        let mut out = Vec::new();
        {
            let mut w = Visible::new(&mut out);
            w.write_all(b"\xff\x80a\xe7").unwrap();
        }
        assert_eq!(out, b"\xff\x80a\xe7");
    }
}
