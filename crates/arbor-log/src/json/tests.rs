use serde_json::{json, Value};

use super::*;

/// Parses and writes again: what JSON.stringify(JSON.parse(text)) gives.
fn round(text: &str) -> String {
    let v = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    to_string(&v).unwrap()
}

#[test]
fn lone_surrogates_are_read_and_written_as_javascript_does() {
    assert_eq!(round(r#"{"a":"x\ud800y"}"#), r#"{"a":"x\ud800y"}"#);
    assert_eq!(
        round(r#"["\uDC00","\ud83d","\ud83dx","\ud83d\ud83d","\ude00\ud83d"]"#),
        r#"["\udc00","\ud83d","\ud83dx","\ud83d\ud83d","\ude00\ud83d"]"#
    );
    // A pair is a character, escaped or not.
    assert_eq!(round(r#"["\ud83d\ude00","😀"]"#), r#"["😀","😀"]"#);
    // Keys too.
    assert_eq!(round(r#"{"\ud800":1}"#), r#"{"\ud800":1}"#);
    // A lone surrogate shows as U+FFFD, a pair as its character.
    let v = parse(r#"["a\ud800b","\ud83d\ude00"]"#).unwrap();
    assert_eq!(display(v[0].as_str().unwrap()), "a\u{FFFD}b");
    assert_eq!(display(v[1].as_str().unwrap()), "😀");
    assert_eq!(utf16_len(v[0].as_str().unwrap()), 3);
}

#[test]
fn characters_of_the_marker_range_keep_their_identity() {
    // Raw, escaped, next to lone surrogates: written back as the characters they are.
    for (text, want) in [
        ("[\"\u{10F800}\"]", "[\"\u{10F800}\"]"),
        (r#"["\udbff\udfff"]"#, "[\"\u{10FFFF}\"]"),
        ("[\"\\ud800\u{10F800}\\udc00\"]", "[\"\\ud800\u{10F800}\\udc00\"]"),
        ("[\"\\udbfe\u{10FC00}\"]", "[\"\\udbfe\u{10FC00}\"]"),
    ] {
        assert_eq!(round(text), want, "{text}");
    }
    let v = parse("[\"\u{10F800}\"]").unwrap();
    assert_eq!(display(v[0].as_str().unwrap()), "\u{10F800}");
    assert_eq!(utf16_len(v[0].as_str().unwrap()), 2);
    assert!(!is_plain("\u{10FC00}".as_bytes()) && !is_plain(br#""\uDBFE\udc00""#));
    assert!(is_plain("\u{10F7FF} \\ud83d\\ude00 \\u001b".as_bytes()));
}

#[test]
fn joined_halves_become_one_character() {
    let a = parse(r#""ok \ud83d""#).unwrap();
    let b = parse(r#""\ude00!""#).unwrap();
    let joined = join(a.as_str().unwrap(), b.as_str().unwrap());
    assert_eq!(joined, "ok 😀!");
    let lone = join(a.as_str().unwrap(), "x");
    assert_eq!(to_string(&lone).unwrap(), r#""ok \ud83dx""#);
    // Halves of a marker-range character stay markers.
    let hi = parse(r#""\udbff""#).unwrap();
    let lo = parse(r#""\udfff""#).unwrap();
    assert_eq!(to_string(&join(hi.as_str().unwrap(), lo.as_str().unwrap())).unwrap(), "\"\u{10FFFF}\"");
}

#[test]
fn numbers_beyond_f64_read_as_infinity_written_as_null() {
    assert_eq!(
        parse(r#"{"a":1e400,"b":-1e400,"c":1.7976931348623159e308}"#).unwrap(),
        json!({"a":null,"b":null,"c":null})
    );
    assert_eq!(
        parse("[1e-400,1.5,-0,18446744073709551616]").unwrap(),
        serde_json::from_str::<Value>("[0.0,1.5,-0,18446744073709551616]").unwrap()
    );
}

#[test]
fn any_depth_is_read_and_written_without_recursion() {
    let depth = 100_000;
    let text = format!("{{\"a\":{}1{}}}", "[".repeat(depth), "]".repeat(depth));
    let v = parse(&text).unwrap();
    assert_eq!(to_string(&v).unwrap(), text);
    // The value itself is shallow: the deep part is text.
    let mut node = &v["a"];
    let mut levels = 0;
    while let Value::Array(items) = node {
        node = &items[0];
        levels += 1;
    }
    assert_eq!(levels, MAX_DEPTH - 1);
    assert!(is_deep(node.as_str().unwrap()));
    drop(v.clone());
    // Objects, strings and odd values in the deep part are written as JSON.stringify writes them.
    let deep =
        format!("{}{{\"k\\u0041\":[\"\\ud800\",1e400,2.50,true,null,{{}},[]]}}{}", "[".repeat(200), "]".repeat(200));
    let want = format!("{}{{\"kA\":[\"\\ud800\",null,2.5,true,null,{{}},[]]}}{}", "[".repeat(200), "]".repeat(200));
    assert_eq!(round(&deep), want);
}

#[test]
fn what_json_parse_refuses_is_refused() {
    for text in [
        "",
        " ",
        "{",
        "{\"a\":1,}",
        "[1,]",
        "[01]",
        "[1.]",
        "[.5]",
        "[-]",
        "[1e]",
        "[\"\\x\"]",
        "[\"\\u12\"]",
        "[\"a\u{1}\"]",
        "{\"a\" 1}",
        "{a:1}",
        "[1] 2",
        "[tru]",
        "[\"x]",
        "{\"a\":1}}",
        "[1}",
        "{\"a\":1]",
        "NaN",
        "[Infinity]",
        "'a'",
    ] {
        assert!(parse(text).is_err(), "{text:?}");
        assert!(super::parse::parse(text).is_none(), "{text:?}");
    }
    for text in
        [" {} ", "[]", "0", "-0.5e-3", "\"\"", "[\"\\/\\b\\f\\n\\r\\t\"]", "{\"a\":{\"a\":2},\"a\":3}", "\t[\r\n]"]
    {
        assert_eq!(super::parse::parse(text), serde_json::from_str::<Value>(text).ok(), "{text:?}");
    }
}

#[test]
fn the_slow_reader_agrees_with_serde_json_where_both_read() {
    let text = r#"{"type":"message","id":"a","n":[1,-2,3.25,1e3,1E-3,12345678901234567890],"s":"q\"\\\u00e9\u001b","o":{"b":null,"a":[true,false]},"b":2,"b":5}"#;
    assert_eq!(super::parse::parse(text).unwrap(), serde_json::from_str::<Value>(text).unwrap());
    assert_eq!(
        to_string(&super::parse::parse(text).unwrap()).unwrap(),
        serde_json::to_string(&serde_json::from_str::<Value>(text).unwrap()).unwrap()
    );
}

#[test]
fn numbers_are_written_as_javascript_writes_them() {
    let written = |x: f64| to_string(&js_number(x)).unwrap();
    assert_eq!(written(0.0), "0");
    assert_eq!(written(-0.0), "0");
    assert_eq!(written(3.0), "3");
    assert_eq!(written(0.0063), "0.0063");
    assert_eq!(written(1e300), serde_json::to_string(&1e300).unwrap(), "beyond the safe integers: as a double");
}
