//! The light scan against the full parser, line by line: `scan_line` must
//! accept exactly the lines `parse_line` accepts, with the head
//! `RecordHead::from_value` reads from the parsed value, and give the same
//! diagnostic otherwise. A corpus of hand-written edge cases, then seeded
//! byte-level mutations of fixture and generated session lines.

use std::fs;

use arbor_log::reader::{parse_line, parse_line_detail, Parsed};
use arbor_log::scan::{scan_line, RecordHead, ScanKind};

use crate::all_session_files;

/// `None` when both paths agree on `line`, else what differs.
fn disagreement(line: &[u8]) -> Option<String> {
    let (fast, fast_note) = scan_line(line, false);
    let (slow, slow_note, js_only) = parse_line_detail(line);
    if fast_note != slow_note {
        return Some(format!("notes differ: {fast_note:?} vs {slow_note:?}"));
    }
    match (fast, slow) {
        (ScanKind::Blank, Parsed::Blank) => None,
        (ScanKind::Skipped(a), Parsed::Skipped(b)) if a == b => None,
        (ScanKind::Object(h), Parsed::Object(v)) => {
            let want = RecordHead { js_only, ..RecordHead::from_value(&v) };
            (h != want).then(|| format!("heads differ: {h:?} vs {want:?}"))
        }
        (a, b) => Some(format!("{a:?} vs {b:?}")),
    }
}

#[track_caller]
fn assert_agree(line: &[u8]) {
    if let Some(why) = disagreement(line) {
        panic!("{:?}: {why}", String::from_utf8_lossy(line));
    }
}

/// Each line as is, without its newline (a torn or final line), and with CRLF.
fn assert_agree_all_endings(body: &[u8]) {
    let mut line = body.to_vec();
    assert_agree(&line);
    line.push(b'\n');
    assert_agree(&line);
    line.truncate(body.len());
    line.extend_from_slice(b"\r\n");
    assert_agree(&line);
}

const STRING_VALUES: &[&str] = &[
    r#""""#,
    r#""plain""#,
    r#""\"""#,
    r#""\\""#,
    r#""\/""#,
    r#""\b\f\n\r\t""#,
    r#""a\u0041b""#,
    r#""\u00e9\u00E9""#,
    r#""\u0000""#,
    r#""\u001f\u007f""#,
    r#""\uffff\uFFFE""#,
    r#""\uD83D\uDE00""#,
    r#""\ud83d\ude00""#,
    r#""\ud83d""#,
    r#""\ud83dx""#,
    r#""\ud83d\n""#,
    r#""\ud83d\u0041""#,
    r#""\ud83d\ud83d\ude00""#,
    r#""\ude00""#,
    r#""\ude00\ud83d""#,
    r#""\udbff\udfff""#,
    r#""\ud800\udc00""#,
    r#""\ud7ff\ue000""#,
    r#""\ud83d\""#,
    r#""\ud83d\u""#,
    r#""\ud83d\ude0""#,
    r#""\u12""#,
    r#""\u12G4""#,
    r#""\x41""#,
    r#""\U0041""#,
    r#""\'""#,
    r#""\ ""#,
    r#""\""#,
    r#""unterminated"#,
    "\"tab\there\"",
    "\"nul\u{0}here\"",
    "\"cr\rhere\"",
    "\"del\u{7f}here\"",
    "\"\u{1f}\"",
    "\"é ✓ 😀\"",
    "\"\u{2028}\u{2029}\"",
];

const NUMBER_VALUES: &[&str] = &[
    "0",
    "-0",
    "-0.0",
    "1",
    "-1",
    "1.5",
    "1e5",
    "1E5",
    "1e+5",
    "1e-5",
    "1.5e300",
    "1e308",
    "1.7976931348623157e308",
    "1.7976931348623159e308",
    "1e309",
    "-1e309",
    "1e400",
    "-1e400",
    "0.1e310",
    "0.1e309",
    "1E-400",
    "-1e-400",
    "0e400",
    "0e999999999999",
    "1e999999999999",
    "1e-999999999999",
    "1e0000001",
    "1e000300",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "123456789012345678901234567890e-20",
    "0.000000000000000000000000000001e330",
    "01",
    "00",
    "-01",
    "1.",
    "1.e5",
    ".5",
    "+1",
    "-",
    "--1",
    "1e",
    "1e+",
    "1e-",
    "1ee5",
    "1.5.5",
    "0x10",
    "1_000",
    "NaN",
    "Infinity",
    "-Infinity",
];

const OTHER_VALUES: &[&str] = &[
    "null",
    "true",
    "false",
    "nul",
    "tru",
    "fals",
    "nulll",
    "True",
    "NULL",
    "[]",
    "{}",
    "[ ]",
    "{ }",
    "[1,2]",
    "[1,]",
    "[,1]",
    "[1 2]",
    "{\"a\":1}",
    "{\"a\":1,}",
    "{\"a\"}",
    "{\"a\":}",
    "{1:2}",
    "{'a':1}",
    "{\"a\" 1}",
    "[[]]",
    "[{}]",
];

/// A number with `n` digits, as an integer and as a decimal.
fn long_numbers() -> Vec<String> {
    let mut out = vec![];
    for n in [19, 20, 300, 308, 309, 310, 400] {
        let digits = "9".repeat(n);
        out.push(digits.clone());
        out.push(format!("-{digits}"));
        out.push(format!("1{}", "0".repeat(n - 1)));
        out.push(format!("0.{digits}"));
        out.push(format!("{digits}.5"));
        out.push(format!("{digits}e-100"));
        out.push(format!("0.{}1e{}", "0".repeat(n), n));
        out.push(format!("1.{digits}e-5"));
    }
    out
}

/// Arrays and objects nested `n` deep inside the top-level object.
fn deep_values() -> Vec<String> {
    let mut out = vec![];
    for n in [1, 2, 125, 126, 127, 128, 129, 300, 2000] {
        out.push(format!("{}1{}", "[".repeat(n), "]".repeat(n)));
        out.push(format!("{}{}", "[".repeat(n), "]".repeat(n)));
        out.push(format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n)));
        out.push(format!("{}{{}}{}", "[{\"a\":".repeat(n / 2), "}]".repeat(n / 2)));
        out.push(format!("{}1{}", "[".repeat(n), "]".repeat(n - 1)));
    }
    out
}

/// Lines that put `v` where a head field or a skipped value is read.
fn lines_around(v: &str) -> Vec<String> {
    vec![
        format!(r#"{{"type":"message","id":"a","x":{v}}}"#),
        format!(r#"{{"type":{v},"id":"a"}}"#),
        format!(r#"{{"type":"t","id":{v},"parentId":{v}}}"#),
        format!(r#"{{"type":"t","id":"i","parentId":{v}}}"#),
        format!(r#"{{"type":"t","id":"i","timestamp":{v}}}"#),
        format!(r#"{{"type":"message","id":"i","message":{v}}}"#),
        format!(r#"{{"type":"message","id":"i","message":{{"role":{v}}}}}"#),
        format!(r#"{{"type":"message","id":"i","message":{{"role":"user","timestamp":{v}}}}}"#),
        format!(r#"{{"type":"message","id":"i","message":{{"timestamp":1,"role":"user","timestamp":{v}}}}}"#),
        format!(r#"{{"type":"message","id":"i","message":{{"timestamp":{v},"timestamp":2}}}}"#),
        format!(r#"{{"type":"message","id":"i","message":{{"role":"user","content":[{v}]}}}}"#),
        format!(r#"{{"a":[{v},{v}],"b":{{"c":{v}}}}}"#),
        format!(r#"{{"a":{v} }}"#),
        v.to_owned(),
    ]
}

/// Lines with `k` as a key at the top level, in a message and deeper.
fn lines_with_key(k: &str) -> Vec<String> {
    vec![
        format!(r#"{{{k}:"x","type":"t","id":"i"}}"#),
        format!(r#"{{"type":"t","id":"i",{k}:"x"}}"#),
        format!(r#"{{{k}:1}}"#),
        format!(r#"{{{k}:"{{\"a\":1}}"}}"#),
        format!(r#"{{{k}:"[1,2]"}}"#),
        format!(r#"{{{k}:"bad json"}}"#),
        format!(r#"{{"type":"message","id":"i","message":{{{k}:"user","role":"x"}}}}"#),
        format!(r#"{{"type":"message","id":"i","message":{{"role":"x",{k}:"user"}}}}"#),
        format!(r#"{{"a":{{{k}:"1"}}}}"#),
        format!(r#"{{"a":[{{{k}:"[true]"}}]}}"#),
        format!(r#"{{"a":{{{k}:"1","b":2}}}}"#),
    ]
}

const KEYS: &[&str] = &[
    r#""type""#,
    r#""id""#,
    r#""parentId""#,
    r#""timestamp""#,
    r#""message""#,
    r#""role""#,
    r#""ty\u0070e""#,
    r#""\u0069d""#,
    r#""parent\u0049d""#,
    r#""r\u006Fle""#,
    r#""mess\u0061ge""#,
    r#""$serde_json::private::RawValue""#,
    r#""$serde_json::private::Raw\u0056alue""#,
    r#""$serde_json::private::RawValu""#,
    r#""$serde_json::private::Number""#,
    r#""$serde_json::private::RawValueX""#,
    r#""""#,
    r#""\ud83d\ude00""#,
    r#""\ud83d""#,
    r#""a\u0000""#,
    r#""\"""#,
    "\"a\tb\"",
    "1",
    "null",
    "a",
];

const WHOLE_LINES: &[&[u8]] = &[
    b"",
    b" ",
    b"\t\r",
    b"\xEF\xBB\xBF",
    b"\xEF\xBB\xBF{}",
    b"{}\xEF\xBB\xBF",
    b"\xEF\xBB\xBF \xEF\xBB\xBF{\"type\":\"t\",\"id\":\"i\"} \xEF\xBB\xBF",
    b"{\xEF\xBB\xBF}",
    b"{}",
    b"{ }",
    b"{\t}",
    b"{\x0c}",
    b"\x0c{}\x0c",
    b"{\x0b}",
    b"{\xC2\xA0}",
    b"{ \"type\" : \"message\" , \"id\" : \"a\" , \"message\" : { \"role\" : \"user\" } }",
    b"{\t\"type\"\t:\t\"message\"\r,\"id\":\"a\"}",
    b"{\"type\":\"message\",\n\"id\":\"a\"}",
    b"[1]",
    b"[]",
    b"\"s\"",
    b"1",
    b"-1",
    b"null",
    b"true",
    b"false",
    b"{} x",
    b"{}}",
    b"{},",
    b"{}{}",
    b"{} {}",
    b"{}\x00",
    b"{\"a\":1}]",
    b"{\"a\":1",
    b"{\"a\"",
    b"{\"a",
    b"{",
    b"}",
    b"nope",
    b"{\"type\":\"a\",\"type\":\"b\",\"id\":\"1\"}",
    b"{\"type\":\"a\",\"type\":1,\"id\":\"1\"}",
    b"{\"type\":\"a\",\"type\":null,\"id\":\"1\"}",
    b"{\"type\":1,\"type\":\"a\",\"id\":\"1\"}",
    b"{\"id\":\"a\",\"id\":null,\"type\":\"t\"}",
    b"{\"id\":\"a\",\"id\":\"b\",\"type\":\"t\"}",
    b"{\"parentId\":\"a\",\"parentId\":null}",
    b"{\"parentId\":null,\"parentId\":[1]}",
    b"{\"parentId\":[1],\"parentId\":\"p\"}",
    b"{\"parentId\":\"p\",\"parentId\":{}}",
    b"{\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"timestamp\":\"bad\"}",
    b"{\"timestamp\":\"bad\",\"timestamp\":\"2026-01-01T00:00:00.000Z\"}",
    b"{\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"timestamp\":5}",
    b"{\"timestamp\":\"2026-01-01T00:00:00Z\"}",
    b"{\"timestamp\":\"2026-01-01T00:00:00.123456Z\"}",
    b"{\"timestamp\":\"2026-01-01T00:00:00.000+02:00\"}",
    b"{\"timestamp\":\"2026-01-01T00:00:00.000\\u005A\"}",
    b"{\"message\":{\"role\":\"u\"},\"message\":1}",
    b"{\"message\":1,\"message\":{\"role\":\"u\"}}",
    b"{\"message\":{\"role\":\"u\"},\"message\":{\"x\":1}}",
    b"{\"message\":{\"role\":\"u\",\"role\":\"a\"}}",
    b"{\"message\":{\"role\":\"u\",\"role\":7}}",
    b"{\"message\":{\"role\":\"u\"},\"message\":[{\"role\":\"a\"}]}",
    b"{\"message\":\"role\"}",
    b"{\"message\":null}",
    b"{\"message\":{\"inner\":{\"role\":\"deep\"}}}",
    b"{\"message\":{\"role\":\"\\u0075ser\"}}",
    b"{\"type\":\"mess\\u0061ge\",\"id\":\"\\\"\"}",
    b"{\"a\":\"x\xFFy\",\"id\":\"i\",\"type\":\"t\"}",
    b"{\"type\":\"t\xFF\",\"id\":\"i\"}",
    b"{\"a\":\"\xC3\"}",
    b"{\"a\":\"\xED\xA0\x80\"}",
    b"{\"a\":\"\xF4\x90\x80\x80\"}",
    b"{\"a\":\"\xC0\xAF\"}",
    b"{\"a\":\"\xC3",
    b"{\"a\xFF\":1}",
    b"{\"a\":1}\xFF",
];

#[test]
fn light_scan_agrees_with_the_full_parser_on_edge_lines() {
    let mut values: Vec<String> =
        STRING_VALUES.iter().chain(NUMBER_VALUES).chain(OTHER_VALUES).map(|s| s.to_string()).collect();
    values.extend(long_numbers());
    values.extend(deep_values());
    let mut n = 0;
    for v in &values {
        for line in lines_around(v) {
            assert_agree_all_endings(line.as_bytes());
            n += 1;
        }
    }
    for k in KEYS {
        for line in lines_with_key(k) {
            assert_agree_all_endings(line.as_bytes());
            n += 1;
        }
    }
    for line in WHOLE_LINES {
        assert_agree_all_endings(line);
        n += 1;
    }
    assert!(n > 1000, "{n} edge lines");
}

/// Escapes and string ends that a 64-byte block boundary may cut.
const BLOCK_EDGE_SNIPPETS: &[&str] = &[
    r#"\""#,
    r#"\\"#,
    r#"\\\""#,
    r#"\\\\"#,
    r#"\/\b\f\n\r\t"#,
    r#"\u00e9"#,
    r#"\ud83d\ude00"#,
    r#"\ud83d"#,
    r#"\ude00"#,
    r#"\u12"#,
    r#"\x"#,
    r#"""#,
    r#"","k":""#,
    "é😀",
    "\t",
    // Runs of backslashes longer than a block, even and odd.
    r#"\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\"#,
    r#"\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\""#,
];

/// The fast validator reads strings 64 bytes at a time: every snippet at
/// every offset across the first blocks of a line, in a value, in a head
/// field and in a key, and at the line's end.
#[test]
fn light_scan_agrees_with_the_full_parser_across_block_edges() {
    let mut n = 0;
    for snippet in BLOCK_EDGE_SNIPPETS {
        for pad in 0..140 {
            let p = "p".repeat(pad);
            let lines = [
                format!(r#"{{"type":"t","id":"i","x":"{p}{snippet}tail","y":"{snippet}"}}"#),
                format!(r#"{{"x":"{p}","type":"{snippet}","id":"{p}{snippet}"}}"#),
                format!(r#"{{"x":"{p}","{snippet}":1,"{p}{snippet}":2}}"#),
                format!(r#"{{"x":"{p}{snippet}"}}"#),
                format!(r#"{{"x":"{p}{snippet}"#),
                format!(r#"{{"x":["{p}","{snippet}{p}{snippet}{p}{snippet}"]}}"#),
            ];
            for line in lines {
                assert_agree_all_endings(line.as_bytes());
                n += 1;
            }
        }
    }
    assert!(n > 10_000, "{n} block-edge lines");
}

use arbor_test_support::Rng;

/// Bytes a mutation inserts or writes: JSON syntax, control bytes,
/// escapes, number parts, and bytes that are not UTF-8 on their own.
const MUTATION_BYTES: &[u8] =
    b"{}[]:,\"\\ \t\r\n\x00\x01\x0c\x1f\x7f0123456789-+.eEuUdDabfnrtl/'\x80\xBF\xC3\xED\xF0\xFF";

/// Snippets a mutation inserts: escapes, numbers, nesting, special keys.
const MUTATION_SNIPPETS: &[&str] = &[
    "\\u",
    "\\ud83d",
    "\\ude00",
    "\\ud83d\\ude00",
    "\\udc00",
    "\\u0000",
    "\\u00e9",
    "\\n",
    "\\\"",
    "\\\\",
    "1e400",
    "e9",
    "e-9",
    "e999",
    ".5",
    "-0",
    "99999999999999999999",
    "[[[[",
    "]]]]",
    "{\"a\":",
    "\"$serde_json::private::RawValue\"",
    "null",
    "true",
    "\"type\"",
    "\"id\"",
    "\"parentId\"",
    "\"message\"",
    "\"role\"",
    "\"timestamp\"",
    ",\"type\":\"x\"",
    ",\"message\":1",
    ",\"id\":null",
    "é",
    "😀",
    "\u{2028}",
];

fn mutate(rng: &mut Rng, line: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(line.len() + 1);
        match rng.below(6) {
            0 | 1 => line.insert(at, *rng.pick(MUTATION_BYTES)),
            2 if at < line.len() => {
                line.remove(at);
            }
            3 if at < line.len() => line[at] = *rng.pick(MUTATION_BYTES),
            4 => {
                let s = rng.pick(MUTATION_SNIPPETS).as_bytes();
                line.splice(at..at, s.iter().copied());
            }
            _ => {
                // Drop a run of bytes.
                let end = (at + 1 + rng.below(8)).min(line.len());
                line.drain(at.min(end)..end);
            }
        }
    }
}

/// Session lines as pi writes them, with escapes, numbers and nesting a mutation can bend.
fn generated_lines(rng: &mut Rng) -> Vec<Vec<u8>> {
    let texts = [
        "plain words",
        "a \"quoted\" word and a back\\slash",
        "line one\nline two\ttabbed\r\n",
        "emoji 😀 and é and \u{1}\u{1f}",
        "json inside: {\"a\":[1,2,{\"b\":null}]}",
        "",
    ];
    let mut out = vec![];
    for i in 0..200 {
        let text = serde_json::to_string(rng.pick(&texts)).unwrap();
        let ascii_text = text.replace('😀', "\\ud83d\\ude00").replace('é', "\\u00e9");
        let parent = if i % 5 == 0 { "null".to_owned() } else { format!("\"{:08x}\"", rng.next() as u32) };
        let line = match i % 5 {
            0 => format!(
                r#"{{"type":"message","id":"{:08x}","parentId":{parent},"timestamp":"2026-01-01T00:00:{:02}.000Z","message":{{"role":"user","content":[{{"type":"text","text":{text}}}],"timestamp":1767225600000}}}}"#,
                rng.next() as u32,
                i % 60
            ),
            1 => format!(
                r#"{{"type":"message","id":"{:08x}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":{ascii_text}}},{{"type":"toolCall","id":"t1","name":"read","arguments":{{"path":"a\/b","n":[1.5e3,-0.25,0,12345678901234567890]}}}}],"usage":{{"input":12,"output":3.5e-3,"cost":{{"total":0.0081}}}},"stopReason":"toolUse"}}}}"#,
                rng.next() as u32
            ),
            2 => format!(
                r#"{{"type":"label","id":"{:08x}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","targetId":"x","label":{text}}}"#,
                rng.next() as u32
            ),
            3 => format!(
                r#"{{"type":"custom","id":"{:08x}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","data":{{"deep":[[[{{"k":[true,false,null]}}]]],"n":1e-7,"s":{ascii_text}}}}}"#,
                rng.next() as u32
            ),
            _ => format!(
                r#"{{ "type" : "message" , "id" : "{:08x}" , "parentId" : {parent} , "message" : {{ "role" : "toolResult" , "content" : [ ] , "isError" : false }} }}"#,
                rng.next() as u32
            ),
        };
        out.push(line.into_bytes());
    }
    out
}

fn fixture_lines() -> Vec<Vec<u8>> {
    let mut out = vec![];
    for p in all_session_files() {
        let bytes = fs::read(&p).unwrap();
        out.extend(bytes.split_inclusive(|&c| c == b'\n').filter(|l| l.len() <= 8192).map(<[u8]>::to_vec));
    }
    out
}

#[test]
fn light_scan_agrees_with_the_full_parser_on_mutated_lines() {
    let seed = std::env::var("ARBOR_SCAN_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x2545_F491_4F6C_DD1D);
    let mut rng = Rng(seed | 1);
    let mut sources = fixture_lines();
    assert!(sources.len() > 200, "{} fixture lines", sources.len());
    sources.extend(generated_lines(&mut rng));
    for line in &sources {
        assert_agree(line);
    }
    let mutants: usize = std::env::var("ARBOR_SCAN_MUTANTS").ok().and_then(|v| v.parse().ok()).unwrap_or(30_000);
    let mut accepted = 0usize;
    for _ in 0..mutants {
        let mut line = rng.pick(&sources).clone();
        mutate(&mut rng, &mut line);
        if let Some(why) = disagreement(&line) {
            panic!("mutant {:?}: {why}", String::from_utf8_lossy(&line));
        }
        if matches!(parse_line(&line).0, Parsed::Object(_)) {
            accepted += 1;
        }
    }
    // Mutations must leave both valid and invalid lines, or the test proves little.
    assert!(accepted > mutants / 10 && accepted < mutants * 9 / 10, "{accepted} of {mutants} mutants parse");
}
