//! The few JavaScript semantics the reference's outputs depend on.
//!
//! pi measures text in UTF-16 code units (`String.prototype.length`), cuts it
//! with `slice`, sorts with the default comparator (code-unit order), builds
//! strings with template literals (`${value}`), tests truthiness and counts
//! `JSON.stringify` output. Doing any of these the Rust way (bytes, chars,
//! `serde_json::to_string`) gives different numbers on real data, so they live
//! here, once.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

/// `s.length` in JavaScript: the number of UTF-16 code units.
pub(crate) fn len(s: &str) -> usize {
    // Each character has one byte that is not a continuation byte
    // (`10xxxxxx`); the four-byte ones (`11110xxx`) take two code units.
    // Counted in byte lanes (at most 2 × 127 a chunk), so that it vectorizes.
    let units = |c: &[u8]| c.iter().fold(0u8, |n, &b| n + u8::from((b as i8) >= -0x40) + u8::from(b >= 0xF0));
    s.as_bytes().chunks(127).map(|c| usize::from(units(c))).sum()
}

/// `s.slice(0, n)` in JavaScript, by UTF-16 code units.
///
/// A cut through a surrogate pair leaves JavaScript with a lone high
/// surrogate, which a Rust string cannot hold; it becomes U+FFFD, which is
/// also one code unit, so every length computed afterwards still agrees.
pub(crate) fn slice_prefix(s: &str, n: usize) -> String {
    let mut out = String::new();
    let mut units = 0usize;
    for c in s.chars() {
        let w = c.len_utf16();
        if units + w > n {
            if units < n {
                out.push(char::REPLACEMENT_CHARACTER);
            }
            break;
        }
        out.push(c);
        units += w;
    }
    out
}

/// JavaScript's default `Array.prototype.sort` order for strings: by UTF-16 code units.
pub(crate) fn cmp_utf16(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// JavaScript truthiness of a property read (`None` is `undefined`).
pub(crate) fn truthy(v: Option<&Value>) -> bool {
    arbor_log::json::truthy(v)
}

/// `${value}` in a JavaScript template literal (`None` is `undefined`).
pub(crate) fn to_js_string(v: Option<&Value>) -> String {
    match v {
        None => "undefined".to_owned(),
        Some(Value::Null) => "null".to_owned(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => number(n),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::Null => String::new(),
                other => to_js_string(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".to_owned(),
    }
}

/// A JSON number as JavaScript prints it (`Number.prototype.toString`).
pub(crate) fn number(n: &Number) -> String {
    const SAFE: u64 = 1 << 53;
    if let Some(u) = n.as_u64().filter(|u| *u <= SAFE) {
        return u.to_string();
    }
    if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= SAFE) {
        return i.to_string();
    }
    n.as_f64().map_or_else(|| "NaN".to_owned(), f64_to_string)
}

/// `Number.prototype.toString()` for a finite double (ECMA-262 Number::toString).
pub(crate) fn f64_to_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if x < 0.0 {
        return format!("-{}", f64_to_string(-x));
    }
    // Rust's `{:e}` without a precision prints the shortest round-trip digits.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i64;
    let n = exp.parse::<i64>().unwrap_or(0) + 1;
    if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        let (a, b) = digits.split_at(n as usize);
        format!("{a}.{b}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let sign = if e < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        if rest.is_empty() {
            format!("{first}e{sign}{}", e.abs())
        } else {
            format!("{first}.{rest}e{sign}{}", e.abs())
        }
    }
}

/// True when `k` is a canonical array index, which JavaScript objects list first.
fn is_array_index(k: &str) -> bool {
    if k.is_empty() || k.len() > 10 || (k.len() > 1 && k.starts_with('0')) {
        return false;
    }
    k.bytes().all(|b| b.is_ascii_digit()) && k.parse::<u64>().is_ok_and(|n| n < u64::from(u32::MAX))
}

/// The entries of an object in JavaScript's property order (`Object.entries`,
/// `JSON.stringify`): array-index keys ascending, then the rest as inserted.
pub(crate) fn entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indexed: Vec<(u64, (&String, &Value))> = Vec::new();
    let mut named = Vec::with_capacity(map.len());
    for (k, v) in map {
        if is_array_index(k) {
            indexed.push((k.parse().unwrap_or(0), (k, v)));
        } else {
            named.push((k, v));
        }
    }
    if indexed.is_empty() {
        return named;
    }
    indexed.sort_by_key(|(n, _)| *n);
    indexed.into_iter().map(|(_, kv)| kv).chain(named).collect()
}

/// `JSON.stringify(value)` (no indentation).
pub(crate) fn stringify(v: &Value) -> String {
    let mut out = String::new();
    write_json(v, &mut out);
    out
}

fn write_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => quote(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in entries(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                quote(k, out);
                out.push(':');
                write_json(v, out);
            }
            out.push('}');
        }
    }
}

/// JSON.stringify's QuoteJSONString.
fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lengths_are_utf16_code_units() {
        assert_eq!(len("abc"), 3);
        assert_eq!(len("é"), 1);
        assert_eq!(len("😀"), 2);
        assert_eq!(len("日本"), 2);
    }

    #[test]
    fn slicing_through_a_surrogate_pair_keeps_the_unit_count() {
        assert_eq!(slice_prefix("ab😀c", 3), "ab\u{fffd}");
        assert_eq!(len(&slice_prefix("ab😀c", 3)), 3);
        assert_eq!(slice_prefix("ab😀c", 4), "ab😀");
        assert_eq!(slice_prefix("ab", 10), "ab");
    }

    #[test]
    fn sort_order_is_code_unit_order() {
        // U+FF61 is one unit 0xFF61; U+1F600 starts with the surrogate 0xD83D.
        assert_eq!(cmp_utf16("\u{ff61}", "\u{1f600}"), Ordering::Greater);
        assert_eq!("\u{ff61}".cmp("\u{1f600}"), Ordering::Less, "UTF-8 byte order differs");
        assert_eq!(cmp_utf16("B", "a"), Ordering::Less);
    }

    #[test]
    fn numbers_print_like_javascript() {
        let cases: [(f64, &str); 12] = [
            (1.0, "1"),
            (-0.0, "0"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789.125, "123456789.125"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (-2.5e300, "-2.5e+300"),
            (0.000123, "0.000123"),
        ];
        for (x, want) in cases {
            assert_eq!(f64_to_string(x), want, "{x}");
        }
        assert_eq!(number(&serde_json::Number::from(u64::MAX)), "18446744073709552000");
        assert_eq!(number(&serde_json::Number::from(-7)), "-7");
    }

    #[test]
    fn stringify_matches_javascript() {
        let v: Value = serde_json::from_str(r#"{"b":1.0,"a":"x\"\n\u0001é","2":null,"10":[true,{}],"01":2}"#).unwrap();
        assert_eq!(stringify(&v), r#"{"2":null,"10":[true,{}],"b":1,"a":"x\"\n\u0001é","01":2}"#);
        assert_eq!(stringify(&json!("\u{7f}\u{2028}/")), "\"\u{7f}\u{2028}/\"");
    }

    #[test]
    fn template_and_truthiness() {
        assert_eq!(to_js_string(None), "undefined");
        assert_eq!(to_js_string(Some(&json!(null))), "null");
        assert_eq!(to_js_string(Some(&json!(2.0))), "2");
        assert_eq!(to_js_string(Some(&json!([1, null, "a"]))), "1,,a");
        assert_eq!(to_js_string(Some(&json!({"a": 1}))), "[object Object]");
        assert!(!truthy(Some(&json!(""))));
        assert!(!truthy(Some(&json!(0.0))));
        assert!(truthy(Some(&json!([]))));
        assert!(truthy(Some(&json!("0"))));
        assert!(!truthy(None));
    }
}
