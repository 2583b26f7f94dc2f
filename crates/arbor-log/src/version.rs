//! Which migration steps a header's `version` calls for, compared the way
//! pi compares it (docs/format.md, "Migrations"): `version ?? 1`, then
//! JavaScript's `>= 3`, `< 2` and `< 3`. JavaScript turns what it compares
//! into a number first (`Number(x)`): a string by its text (`"2.5"` is 2.5,
//! `"0x3"` is 3, `" "` is 0, `"abc"` is NaN), `true`/`false` as 1/0, an
//! array by the text of its elements joined with commas (`[]` is 0, `[3]` is
//! 3, `[1,2]` is NaN), any other object as NaN. NaN compares false with
//! everything, so it calls for no step at all; neither does a number beyond
//! the `f64` range written positive (`1e400`, Infinity to pi), which this
//! crate holds as `null` and [`version_in_line`] reads from the line itself.

use serde_json::value::RawValue;
use serde_json::Value;

/// The current format version that Arbor writes.
///
/// ```
/// use arbor_log::{SessionHeader, CURRENT_VERSION};
///
/// let header = SessionHeader::new("s1".into(), "2026-01-01T00:00:00.000Z".into(), "/w".into(), None);
/// assert_eq!(header.version(), CURRENT_VERSION);
/// ```
pub const CURRENT_VERSION: u64 = 3;

/// The version a header's `version` value stands for as far as migrations go:
/// 1 (both steps), 2 (the v2 → v3 step) or [`CURRENT_VERSION`] (none).
pub fn version_of(v: Option<&Value>) -> u64 {
    let n = match v {
        None | Some(Value::Null) => 1.0,
        Some(v) => js_number(v),
    };
    steps_version(n)
}

/// [`version_of`] for the `version` of a header record parsed from `line`,
/// reading a number beyond the `f64` range (held as `null`) from the line's
/// text: `1e400` is Infinity to pi, a current file; `-1e400` is a v1 one.
pub fn version_in_line(v: Option<&Value>, line: &[u8]) -> u64 {
    match v {
        Some(Value::Null) => raw_version(line).map_or(1, steps_version),
        _ => version_of(v),
    }
}

fn steps_version(n: f64) -> u64 {
    if n < 2.0 {
        1
    } else if n < 3.0 {
        2
    } else {
        // `>= 3`, and NaN, for which pi runs no step either.
        CURRENT_VERSION
    }
}

const BOM: &[u8] = "\u{feff}".as_bytes();

/// The number the line's top-level `version` is written as, when it is one
/// (the last of repeated keys, as `JSON.parse` keeps).
fn raw_version(line: &[u8]) -> Option<f64> {
    // The line as the reader takes it: white space and byte-order marks around it dropped.
    let mut line = line.trim_ascii();
    while let Some(rest) = line.strip_prefix(BOM).or_else(|| line.strip_suffix(BOM)) {
        line = rest.trim_ascii();
    }
    let fields: std::collections::HashMap<String, &RawValue> = serde_json::from_slice(line).ok()?;
    let text = fields.get("version")?.get();
    text.starts_with(|c: char| c == '-' || c.is_ascii_digit()).then(|| text.parse().ok())?
}

/// `Number(v)` in JavaScript, for a JSON value.
fn js_number(v: &Value) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => string_number(s),
        Value::Array(_) => js_string(v).map_or(f64::NAN, |s| string_number(&s)),
        Value::Object(_) => f64::NAN,
    }
}

/// `String(v)` for what an array's text is made of, or `None` where it holds
/// an object (whose text, `[object Object]`, reads as NaN anyway).
fn js_string(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        // Only whether the text reads back as a number below 2 or 3 matters,
        // and a number's text reads back as the number itself.
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(js_string).collect::<Option<Vec<_>>>()?.join(","),
        Value::Object(_) => return None,
    })
}

/// `Number(s)` in JavaScript: white space trimmed, empty is 0, `Infinity`,
/// `0x`/`0o`/`0b` integers, decimal literals; anything else NaN.
fn string_number(s: &str) -> f64 {
    let t = s.trim_matches(is_js_space);
    if t.is_empty() {
        return 0.0;
    }
    let radix = match t.get(..2) {
        Some("0x" | "0X") => 16,
        Some("0o" | "0O") => 8,
        Some("0b" | "0B") => 2,
        _ => 0,
    };
    if radix != 0 {
        let digits = &t[2..];
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            return f64::NAN;
        }
        return digits.chars().fold(0.0, |n, c| n * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0)));
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned == "Infinity" {
        return if t.starts_with('-') { f64::NEG_INFINITY } else { f64::INFINITY };
    }
    // Rust's float syntax is JavaScript's decimal literal plus `inf` and
    // `nan` spelled any way, which JavaScript reads as NaN.
    if unsigned.bytes().any(|b| !(b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))) {
        return f64::NAN;
    }
    t.parse().unwrap_or(f64::NAN)
}

/// JavaScript's `WhiteSpace` and `LineTerminator`, which `Number()` trims:
/// Unicode's white space without NEL (U+0085), and the byte-order mark.
fn is_js_space(c: char) -> bool {
    c == '\u{feff}' || (c.is_whitespace() && c != '\u{85}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_are_compared_as_javascript_compares_them() {
        let cases = [
            (json!(3), 3),
            (json!(2), 2),
            (json!(1), 1),
            (json!(0), 1),
            (json!(2.5), 2),
            (json!(1.5), 1),
            (json!(7), 3),
            (json!(-4), 1),
            (json!("3"), 3),
            (json!(" 2 "), 2),
            (json!("\u{feff}\u{a0}2\u{2028}"), 2),
            (json!("\u{85}2"), 3),
            (json!("2.5"), 2),
            (json!("0x3"), 3),
            (json!("0b10"), 2),
            (json!("3e0"), 3),
            (json!(".5"), 1),
            (json!(""), 1),
            (json!("abc"), 3),
            (json!("inf"), 3),
            (json!("NaN"), 3),
            (json!("Infinity"), 3),
            (json!("-Infinity"), 1),
            (json!("1_0"), 3),
            (json!(true), 1),
            (json!(false), 1),
            (json!([]), 1),
            (json!([3]), 3),
            (json!([[2]]), 2),
            (json!(["3"]), 3),
            (json!([null]), 1),
            (json!([true]), 3),
            (json!([1, 2]), 3),
            (json!({}), 3),
            (json!({"a": 1}), 3),
        ];
        for (v, want) in cases {
            assert_eq!(version_of(Some(&v)), want, "version {v}");
        }
        assert_eq!(version_of(None), 1);
        assert_eq!(version_of(Some(&Value::Null)), 1);
    }

    #[test]
    fn a_version_beyond_f64_is_read_from_the_line() {
        let line = |v: &str| format!(r#"{{"type":"session","version":{v},"id":"s"}}"#);
        let null = Some(&Value::Null);
        assert_eq!(version_in_line(null, line("1e400").as_bytes()), 3);
        assert_eq!(version_in_line(null, line("-1e400").as_bytes()), 1);
        assert_eq!(version_in_line(null, line("null").as_bytes()), 1);
        assert_eq!(version_in_line(null, br#"{"type":"session","version":1e400,"version":null,"id":"s"}"#), 1);
        assert_eq!(version_in_line(null, br#"{"type":"session","version":null,"version":1e400,"id":"s"}"#), 3);
        // A lone surrogate elsewhere on the line does not stop the reading.
        assert_eq!(version_in_line(null, br#"{"type":"session","version":1e400,"id":"\ud800"}"#), 3);
        // A byte-order mark before the header (the first line of a file) or around a line.
        assert_eq!(version_in_line(null, format!("\u{feff}{}\r\n", line("1e400")).as_bytes()), 3);
        assert_eq!(version_in_line(null, format!("{}\u{feff}", line("1e400")).as_bytes()), 3);
        assert_eq!(version_in_line(Some(&json!(2)), line("1e400").as_bytes()), 2);
        assert_eq!(version_in_line(None, b"not json"), 1);
    }
}
