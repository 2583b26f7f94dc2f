//! JSON escapes, and when the bytes of a line can be searched as they are.
//!
//! pi (JavaScript's `JSON.stringify`), serde_json and Python's `json.dumps`
//! with `ensure_ascii=False` write a string the same way: `"` and `\`
//! escaped, control characters as `\b \f \n \r \t` or `\u00xx`, everything
//! else as itself. In a line written so, text holding a literal holds the
//! literal's [`escaped`] form, byte for byte (up to case). A line with any
//! other escape (`\u00e9` for `é`, as Python writes by default, a `\/`, a
//! surrogate pair) is not searched as bytes: [`odd_escapes`] finds it, and
//! its text is decoded and searched instead.

/// `s` as a JSON string's contents are written (without the quotes).
pub(crate) fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The offsets in `bytes` of escapes other than the canonical ones (see the
/// module docs): a `\u` that does not stand for a control character, and `\/`.
pub(crate) fn odd_escapes(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let u = memchr::memmem::find_iter(bytes, b"\\u").filter(move |&i| escapes_at(bytes, i) && !control_at(bytes, i));
    let slash = memchr::memmem::find_iter(bytes, b"\\/").filter(move |&i| escapes_at(bytes, i));
    u.chain(slash)
}

/// True when the backslash at `i` starts an escape: an even number of backslashes precede it.
fn escapes_at(bytes: &[u8], i: usize) -> bool {
    bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0
}

/// True when the `\u` at `i` is `\u00XX` with `XX` below `20`: a control character.
fn control_at(bytes: &[u8], i: usize) -> bool {
    match bytes.get(i + 2..i + 6) {
        Some([b'0', b'0', a, b]) => matches!(a, b'0' | b'1') && b.is_ascii_hexdigit(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn escaped_forms_are_what_every_writer_writes() {
        for s in ["plain", "a\"b", "C:\\path", "tab\there", "bell\u{7}", "é備😀/"] {
            let json = serde_json::to_string(s).unwrap();
            assert_eq!(format!("\"{}\"", escaped(s)), json, "{s}");
        }
    }

    #[test]
    fn odd_escapes_are_found_and_canonical_ones_are_not() {
        let odd = |s: &str| odd_escapes(s.as_bytes()).collect::<Vec<_>>();
        assert!(odd(r#"{"t":"a\n\"b\\c\u001b[0m"}"#).is_empty());
        assert_eq!(odd(r#"{"t":"caf\u00e9"}"#), [9]);
        assert_eq!(odd(r#"{"t":"a\/b"}"#), [7]);
        // An escaped backslash followed by `u` or `/` is text, not an escape.
        assert!(odd(r#"{"t":"C:\\users\\/x"}"#).is_empty());
        assert_eq!(odd(r#"{"t":"\\\u00e9"}"#), [8]);
        assert_eq!(odd(r#"{"t":"\ud83d\ude00"}"#).len(), 2);
    }
}
