//! The slower reader: RFC 8259's grammar with `JSON.parse`'s meaning, one
//! loop and an explicit stack, so no input depth can overflow the stack.

use serde_json::{Map, Number, Value};

use super::{marker, unit_of, write, DEEP_PREFIX, MAX_DEPTH};

/// A container being read.
enum Frame {
    Array(Vec<Value>),
    /// An object and the key whose value comes next.
    Object(Map<String, Value>, Option<String>),
    /// A container past [`MAX_DEPTH`]: its text goes to the parser's `raw` buffer.
    Raw {
        object: bool,
    },
}

struct Parser<'a> {
    b: &'a [u8],
    s: &'a str,
    i: usize,
    stack: Vec<Frame>,
    /// The JSON text of the deep container being read, if any.
    raw: String,
}

/// Parses `text`; `None` when `JSON.parse` would throw.
pub(super) fn parse(text: &str) -> Option<Value> {
    let mut p = Parser { b: text.as_bytes(), s: text, i: 0, stack: vec![], raw: String::new() };
    let v = p.document()?;
    p.ws();
    (p.i == p.b.len()).then_some(v)
}

impl Parser<'_> {
    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn in_raw(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Raw { .. }))
    }

    /// The whole value: each step reads one token and files what it made.
    fn document(&mut self) -> Option<Value> {
        loop {
            // A value starts here.
            let done = match self.peek()? {
                b'[' | b'{' => {
                    let object = self.b[self.i] == b'{';
                    self.i += 1;
                    self.open(object);
                    let close = if object { b'}' } else { b']' };
                    if self.eat(close).is_some() {
                        self.close()?
                    } else {
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                }
                _ => {
                    let v = self.scalar()?;
                    self.value(v)
                }
            };
            if let Some(v) = done {
                return Some(v);
            }
            // After a value: closers and separators until the next value starts.
            loop {
                let object = matches!(self.stack.last()?, Frame::Object(..) | Frame::Raw { object: true });
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        if self.in_raw() {
                            self.raw.push(',');
                        }
                        if object {
                            self.key()?;
                        }
                        break;
                    }
                    c if c == if object { b'}' } else { b']' } => {
                        self.i += 1;
                        if let Some(v) = self.close()? {
                            return Some(v);
                        }
                    }
                    _ => return None,
                }
            }
        }
    }

    fn open(&mut self, object: bool) {
        if self.in_raw() || self.stack.len() >= MAX_DEPTH {
            if !self.in_raw() {
                self.raw.clear();
            }
            self.raw.push(if object { '{' } else { '[' });
            self.stack.push(Frame::Raw { object });
        } else if object {
            self.stack.push(Frame::Object(Map::new(), None));
        } else {
            self.stack.push(Frame::Array(vec![]));
        }
    }

    /// Closes the innermost container and files it in its parent; the
    /// finished document when it was the outermost.
    fn close(&mut self) -> Option<Option<Value>> {
        let v = match self.stack.pop()? {
            Frame::Array(items) => Value::Array(items),
            Frame::Object(map, _) => Value::Object(map),
            Frame::Raw { object } => {
                self.raw.push(if object { '}' } else { ']' });
                if self.in_raw() {
                    return Some(None);
                }
                Value::String(format!("{DEEP_PREFIX}{}", std::mem::take(&mut self.raw)))
            }
        };
        Some(self.value(v))
    }

    /// Files a finished value in the container being read (or returns it at the top).
    fn value(&mut self, v: Value) -> Option<Value> {
        match self.stack.last_mut() {
            None => Some(v),
            Some(Frame::Array(items)) => {
                items.push(v);
                None
            }
            Some(Frame::Object(map, key)) => {
                // A repeated key keeps its first place and takes the last value, as in JavaScript.
                map.insert(key.take().unwrap_or_default(), v);
                None
            }
            Some(Frame::Raw { .. }) => {
                write::append(&mut self.raw, &v);
                None
            }
        }
    }

    /// Reads `"key":` in the object being read.
    fn key(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        let k = self.string()?;
        self.eat(b':')?;
        match self.stack.last_mut()? {
            Frame::Object(_, slot) => *slot = Some(k),
            Frame::Raw { .. } => {
                write::append(&mut self.raw, &Value::String(k));
                self.raw.push(':');
            }
            Frame::Array(_) => return None,
        }
        Some(())
    }

    fn scalar(&mut self) -> Option<Value> {
        let rest = &self.b[self.i..];
        for (word, v) in [(&b"true"[..], Value::Bool(true)), (b"false", Value::Bool(false)), (b"null", Value::Null)] {
            if rest.starts_with(word) {
                self.i += word.len();
                return Some(v);
            }
        }
        match rest.first()? {
            b'"' => self.string().map(Value::String),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// A number: its value as serde_json reads it, or `null` beyond the `f64` range (±Infinity).
    fn number(&mut self) -> Option<Value> {
        let start = self.i;
        let b = self.b;
        let digits = |mut i: usize| {
            let from = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            (i > from).then_some(i)
        };
        let mut i = start + usize::from(b[start] == b'-');
        i = match b.get(i)? {
            b'0' => i + 1,
            b'1'..=b'9' => digits(i)?,
            _ => return None,
        };
        if b.get(i) == Some(&b'.') {
            i = digits(i + 1)?;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            i = digits(i)?;
        }
        self.i = i;
        let text = &self.s[start..i];
        Some(match serde_json::from_str::<Number>(text) {
            Ok(n) => Value::Number(n),
            Err(_) => Value::Null,
        })
    }

    /// A string, with lone surrogates and marker-range characters as markers.
    fn string(&mut self) -> Option<String> {
        self.i += 1;
        let mut out = String::new();
        // A high surrogate from an escape, waiting for a low one.
        let mut high: Option<u16> = None;
        loop {
            let start = self.i;
            while let Some(&c) = self.b.get(self.i) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            if self.i > start {
                flush(&mut out, &mut high);
                push_text(&mut out, &self.s[start..self.i]);
            }
            match self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    flush(&mut out, &mut high);
                    return Some(out);
                }
                b'\\' => {
                    let c = *self.b.get(self.i + 1)?;
                    self.i += 2;
                    let unit = match c {
                        b'"' => u16::from(b'"'),
                        b'\\' => u16::from(b'\\'),
                        b'/' => u16::from(b'/'),
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => 10,
                        b'r' => 13,
                        b't' => 9,
                        b'u' => {
                            let hex = self.s.get(self.i..self.i + 4)?;
                            if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                                return None;
                            }
                            self.i += 4;
                            u16::from_str_radix(hex, 16).ok()?
                        }
                        _ => return None,
                    };
                    push_unit(&mut out, &mut high, unit);
                }
                _ => return None,
            }
        }
    }
}

/// Appends one UTF-16 code unit from an escape.
fn push_unit(out: &mut String, high: &mut Option<u16>, unit: u16) {
    match unit {
        0xD800..=0xDBFF => {
            flush(out, high);
            *high = Some(unit);
        }
        0xDC00..=0xDFFF => match high.take() {
            Some(h) => {
                let c = 0x1_0000 + ((u32::from(h) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                match char::from_u32(c).filter(|c| unit_of(*c).is_none()) {
                    Some(c) => out.push(c),
                    None => {
                        out.push(marker(h));
                        out.push(marker(unit));
                    }
                }
            }
            None => out.push(marker(unit)),
        },
        _ => {
            flush(out, high);
            out.push(char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER));
        }
    }
}

/// A waiting high surrogate that no low one followed: lone.
fn flush(out: &mut String, high: &mut Option<u16>) {
    if let Some(h) = high.take() {
        out.push(marker(h));
    }
}

/// Appends raw text, marker-range characters as the markers of their halves.
fn push_text(out: &mut String, text: &str) {
    if memchr::memchr(0xF4, text.as_bytes()).is_none() || !text.chars().any(|c| unit_of(c).is_some()) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        if unit_of(c).is_some() {
            let mut halves = [0u16; 2];
            for h in c.encode_utf16(&mut halves) {
                out.push(marker(*h));
            }
        } else {
            out.push(c);
        }
    }
}
