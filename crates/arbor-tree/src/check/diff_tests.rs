//! The streaming pass against the full read: `check` and `repair`'s dry run
//! must find exactly the same, finding for finding and action for action,
//! on every fixture and on files damaged at random (torn and malformed
//! lines, repeated ids, parent cycles, self-parents, missing and odd
//! parents, extra headers, lines that are not entries, tool results moved,
//! labels and compactions naming missing entries, escaped keys, invalid
//! UTF-8, a missing final newline, older versions).

use std::path::Path;

use serde_json::Value;

use super::{check_in_full, check_session};
use crate::repair::{repair_file, repair_in_full, Repair};
use crate::session::SessionOptions;

/// splitmix64: a small deterministic source.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn set_field(line: &[u8], f: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(line.strip_suffix(b"\n").unwrap_or(line)).ok()?;
    f(v.as_object_mut()?);
    let mut out = serde_json::to_vec(&v).ok()?;
    out.push(b'\n');
    Some(out)
}

fn id_of(line: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(line.strip_suffix(b"\n").unwrap_or(line)).ok()?;
    v.get("id")?.as_str().map(str::to_owned)
}

/// One random change to the lines (the header is line 0).
fn damage(lines: &mut Vec<Vec<u8>>, rng: &mut Rng) {
    if lines.len() < 2 {
        return;
    }
    let i = 1 + rng.below(lines.len() - 1);
    let j = 1 + rng.below(lines.len() - 1);
    let kind = rng.below(21);
    if kind == 20 {
        // The same message again as its own child: the same tool calls twice on one path.
        let own = id_of(&lines[i]).unwrap_or_default();
        let id = format!("again{}", lines.len());
        if let Some(copy) = set_field(&lines[i], |o| {
            o.insert("id".into(), Value::String(id.clone()));
            o.insert("parentId".into(), Value::String(own));
        }) {
            lines.insert(i + 1, copy);
            // The line after (often the tool result) follows the copy.
            if let Some(next) =
                lines.get(i + 2).and_then(|l| set_field(l, |o| drop(o.insert("parentId".into(), Value::String(id)))))
            {
                lines[i + 2] = next;
            }
        }
        return;
    }
    if kind < 10 {
        move_lines(lines, kind, i, j);
        return;
    }
    let other = id_of(&lines[j]).unwrap_or_else(|| "zz".into());
    let own = id_of(&lines[i]).unwrap_or_default();
    let changed = match kind {
        10 => set_field(&lines[i], |o| drop(o.insert("parentId".into(), Value::String(other)))),
        11 => set_field(&lines[i], |o| drop(o.insert("parentId".into(), "missing-parent".into()))),
        12 => {
            let odd = [serde_json::json!(5), serde_json::json!({"x": [1]}), Value::Bool(false)][j % 3].clone();
            set_field(&lines[i], |o| drop(o.insert("parentId".into(), odd)))
        }
        13 => set_field(&lines[i], |o| drop(o.insert("id".into(), serde_json::json!(7)))),
        14 => set_field(&lines[i], |o| drop(o.remove("type"))),
        15 => set_field(&lines[i], |o| {
            if let Some(m) = o.get_mut("message").and_then(Value::as_object_mut) {
                m.insert("toolCallId".into(), Value::String(other));
            }
        }),
        16 => set_field(&lines[i], |o| drop(o.insert("parentId".into(), Value::String(own)))),
        17 => set_field(&lines[i], |o| {
            if o.contains_key("targetId") {
                o.insert("targetId".into(), "missing-target".into());
            }
        }),
        18 => set_field(&lines[i], |o| {
            if o.contains_key("firstKeptEntryId") {
                match other.len() % 3 {
                    0 => drop(o.remove("firstKeptEntryId")),
                    1 => drop(o.insert("firstKeptEntryId".into(), "missing-kept".into())),
                    _ => drop(o.insert("firstKeptEntryId".into(), Value::String(other))),
                }
            }
        }),
        _ => set_field(&lines[i], |o| drop(o.insert("type".into(), "session".into()))),
    };
    if let Some(line) = changed {
        lines[i] = line;
    }
}

/// A change of bytes or of the lines' order: torn, repeated, replaced, moved or removed lines.
fn move_lines(lines: &mut Vec<Vec<u8>>, kind: usize, i: usize, j: usize) {
    match kind {
        0 => {
            let cut = (i * 7 + j) % lines[i].len().max(1);
            lines[i].truncate(cut.max(1));
            lines[i].push(b'\n');
        }
        1 => {
            let copy = lines[i].clone();
            lines.insert(j.max(i) + 1, copy);
        }
        2 => lines[i] = [&b"not json\n"[..], b"[1,2]\n", b"\n", b"   \n", b"\"s\"\n"][j % 5].to_vec(),
        3 => {
            let header = lines[0].clone();
            lines.insert(i, header);
        }
        4 => {
            if let Some(last) = lines.last_mut() {
                last.pop();
            }
        }
        5 => {
            let at = lines[i].iter().rposition(|&c| c == b'"').unwrap_or(0);
            lines[i].insert(at, 0xFF);
        }
        6 => {
            let s = String::from_utf8_lossy(&lines[i]).into_owned();
            let s =
                s.replacen("\"toolCallId\"", "\"tool\\u0043allId\"", 1).replacen("toolCall\"", "tool\\u0043all\"", 1);
            lines[i] = s.into_bytes();
        }
        7 => lines.swap(i, j),
        8 => {
            let s = String::from_utf8_lossy(&lines[i]).into_owned();
            lines[i] = s.replacen("\"id\":\"", "\"id\":\"x\\u0031", 1).into_bytes();
        }
        _ => drop(lines.remove(i)),
    }
}

#[track_caller]
fn same(f: &Path) {
    let opts = || SessionOptions { index_dir: None, ..SessionOptions::default() };
    let (fast, full) = (check_session(f, opts()), check_in_full(f, opts()));
    assert_eq!(format!("{fast:#?}"), format!("{full:#?}"), "check {}", f.display());
    let fast = repair_file(f, Repair::Report).map_err(|e| e.to_string());
    let full = repair_in_full(f, Repair::Report).map_err(|e| e.to_string());
    assert_eq!(fast, full, "repair {}", f.display());
}

/// `repair --write` streaming the lines of a current-version file writes
/// what the full read writes: the repaired file and the side file, byte for byte.
#[track_caller]
fn same_written(f: &Path) {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let written = |name: &str, repair: fn(&Path, Repair) -> Result<crate::repair::RepairReport, crate::TreeError>| {
        let copy = d.path().join(name);
        std::fs::copy(f, &copy).unwrap_or_else(|e| panic!("{e}"));
        let r = repair(&copy, Repair::Write).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let side = r.rejected_file.as_ref().map(|p| std::fs::read(p).unwrap_or_else(|e| panic!("{e}")));
        let report = (r.actions.iter().map(|a| a.replace(name, "F")).collect::<Vec<_>>(), r.kept, r.rejected);
        (std::fs::read(&copy).unwrap_or_else(|e| panic!("{e}")), side, report)
    };
    let (streamed, full) = (written("a.jsonl", repair_file), written("b.jsonl", repair_in_full));
    assert!(streamed == full, "repair --write {}: {:?} != {:?}", f.display(), streamed.2, full.2);
}

#[test]
fn the_streaming_pass_finds_what_the_full_read_finds_on_every_fixture() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let big = d.path().join("big.jsonl");
    arbor_test_support::write_big_session(&big, 3000, 20);
    let mut files = arbor_test_support::jsonl_under(&arbor_test_support::fixtures());
    files.push(big);
    for f in files {
        same(&f);
    }
}

#[test]
fn the_streaming_pass_finds_what_the_full_read_finds_on_damaged_files() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let big = d.path().join("big.jsonl");
    arbor_test_support::write_big_session(&big, 400, 6);
    let mut bases = arbor_test_support::jsonl_under(&arbor_test_support::fixtures());
    bases.retain(|f| std::fs::metadata(f).is_ok_and(|m| m.len() < 200_000));
    bases.push(big);
    let mut rng = Rng(21);
    let mut findings = std::collections::BTreeMap::new();
    let out = d.path().join("damaged.jsonl");
    for base in &bases {
        let bytes = std::fs::read(base).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<Vec<u8>> = bytes.split_inclusive(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
        for _ in 0..12 {
            let mut damaged = lines.clone();
            for _ in 0..1 + rng.below(4) {
                damage(&mut damaged, &mut rng);
            }
            std::fs::write(&out, damaged.concat()).unwrap_or_else(|e| panic!("{e}"));
            same(&out);
            // And what --write writes, for a few of them (each write is fsynced).
            if rng.below(4) == 0 && repair_file(&out, Repair::Report).is_ok_and(|r| !r.clean) {
                same_written(&out);
            }
            let found = check_session(&out, SessionOptions::default()).unwrap_or_default();
            for f in found {
                *findings.entry(f.code).or_insert(0) += 1;
            }
        }
    }
    // The damage reached every kind of finding the pass itself makes.
    for code in [
        "malformed-line",
        "duplicate-id",
        "parent-cycle",
        "self-parent",
        "orphan",
        "parent-not-a-string",
        "extra-header",
        "not-an-entry",
        "tool-call-without-result",
        "no-final-newline",
        "invalid-utf8",
        "label-target-missing",
        "compaction-kept-off-path",
    ] {
        assert!(findings.contains_key(code), "no {code} among {findings:?}");
    }
}

/// A tool result closes every open call with its id, however many: the
/// same call made twice on one path, answered once, leaves none open.
#[test]
fn a_result_closes_every_open_call_with_its_id() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let f = d.path().join("twice.jsonl");
    let call = |id: &str, parent: &str| {
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"read\",\"arguments\":{{}}}},{{\"type\":\"toolCall\",\"id\":\"c2\",\"name\":\"ls\",\"arguments\":{{}}}}]}}}}\n"
        )
    };
    let result = |id: &str, parent: &str, answers: &str| {
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"2026-01-01T00:00:02.000Z\",\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"{answers}\",\"content\":[]}}}}\n"
        )
    };
    let text = [
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n"
            .to_owned(),
        "{\"type\":\"message\",\"id\":\"u\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n".to_owned(),
        call("a", "u"),
        call("b", "a"),
        result("r", "b", "c1"),
        result("q", "a", "c2"),
        result("p", "r", "c2"),
    ]
    .concat();
    std::fs::write(&f, text).unwrap_or_else(|e| panic!("{e}"));
    same(&f);
    let found = check_session(&f, SessionOptions::default()).unwrap_or_default();
    let messages: Vec<&str> = found.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(messages, ["tool call c1 (read) in a has no result on the path to leaf q"], "{found:#?}");
}

/// The first leaf a finding names is the first in file order, whatever
/// order the walk meets the leaves in (here: the leaves on lines 7, 5, 6).
#[test]
fn the_first_leaf_is_the_first_in_the_file() {
    let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let f = d.path().join("order.jsonl");
    let user = |id: &str, parent: &str| {
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"x\"}}}}\n"
        )
    };
    let text = [
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n".to_owned(),
        "{\"type\":\"message\",\"id\":\"u\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n".to_owned(),
        "{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"u\",\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"read\",\"arguments\":{}}]}}\n".to_owned(),
        user("x", "a"),
        user("l3", "a"),
        user("l4", "a"),
        user("l5", "x"),
    ]
    .concat();
    std::fs::write(&f, text).unwrap_or_else(|e| panic!("{e}"));
    same(&f);
    let found = check_session(&f, SessionOptions::default()).unwrap_or_default();
    let messages: Vec<&str> = found.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(messages, ["tool call c1 (read) in a has no result on the paths to 3 leaves (the first: l3)"]);
}
