//! No file content makes a command panic (item 9 of issue #20): ids,
//! labels, names and a cwd far past any width a format string takes, run
//! through every command that reads a session.

use std::fs;
use std::path::Path;

use super::arbor_in;

/// A session whose ids, label, name and cwd are `n` characters long.
fn long_session(n: usize) -> String {
    let (a, b) = ("a".repeat(n), "b".repeat(n));
    let cwd = format!("/{}", "c".repeat(n));
    let label = "L".repeat(n);
    let name = "N".repeat(n);
    [
        format!(r#"{{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"{cwd}"}}"#),
        format!(r#"{{"type":"message","id":"{a}","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"hi","timestamp":1}}}}"#),
        format!(r#"{{"type":"message","id":"{b}","parentId":"{a}","timestamp":"2026-01-01T00:00:02.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"yo"}},{{"type":"toolCall","id":"{a}","name":"{name}","arguments":{{"path":"{cwd}"}}}}],"provider":"p","model":"m","usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2}},"stopReason":"toolUse","timestamp":2}}}}"#),
        format!(r#"{{"type":"label","id":"l1","parentId":"{b}","timestamp":"2026-01-01T00:00:03.000Z","targetId":"{a}","label":"{label}"}}"#),
        format!(r#"{{"type":"session_info","id":"n1","parentId":"l1","timestamp":"2026-01-01T00:00:04.000Z","name":"{name}"}}"#),
    ]
    .join("\n")
        + "\n"
}

/// Every command that reads a session, on `file`.
fn read_commands(file: &str) -> Vec<Vec<String>> {
    let forms: [&[&str]; 15] = [
        &["tree"],
        &["tree", "--json"],
        &["dump"],
        &["dump", "--json"],
        &["path"],
        &["path", "--json"],
        &["context"],
        &["context", "--json"],
        &["context", "--llm"],
        &["check"],
        &["repair"],
        &["export", "--format", "md"],
        &["export", "--format", "html"],
        &["export", "--format", "jsonl"],
        &["diff", "l1", "n1"],
    ];
    forms
        .iter()
        .map(|f| {
            let mut args = vec![f[0].to_owned(), file.to_owned()];
            args.extend(f[1..].iter().map(|s| s.to_string()));
            args
        })
        .collect()
}

fn no_panic(dir: &Path, args: &[&str]) {
    let o = arbor_in(dir, args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(101), "{args:?} panicked: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn ids_and_texts_far_past_any_width_make_no_command_panic() {
    let d = tempfile::tempdir().unwrap();
    let sessions = d.path().join("sessions/--w--");
    fs::create_dir_all(&sessions).unwrap();
    for n in [65_536, 70_000] {
        let file = sessions.join(format!("2026-01-01T00-00-00-000Z_{n}.jsonl"));
        fs::write(&file, long_session(n)).unwrap();
        for args in read_commands(file.to_str().unwrap()) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            no_panic(d.path(), &args);
        }
        let o = arbor_in(d.path(), &["tree", file.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let root = d.path().join("sessions");
    let root = root.to_str().unwrap();
    no_panic(d.path(), &["ls", "--all", "--sessions-dir", root]);
    no_panic(d.path(), &["ls", "--all", "--sessions-dir", root, "--json"]);
    no_panic(d.path(), &["search", "yo", "--all", "--sessions-dir", root]);
}

/// A header that `JSON.parse` reads and serde_json alone does not (item 13
/// of issue #20): nested deeper than 128 levels, or holding a number beyond
/// `f64`. It is read as the header, not skipped with an error blaming line 2.
#[test]
fn a_header_only_javascript_reads_is_the_header() {
    let d = tempfile::tempdir().unwrap();
    let text = fs::read_to_string(crate::fixtures().join("logs/ok/linear-chat.jsonl")).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let headers = [
        header.replacen('}', &format!(r#","extra":{deep}}}"#), 1),
        header.replacen(r#""cwd""#, r#""tokens":1e400,"cwd""#, 1),
    ];
    for (i, h) in headers.iter().enumerate() {
        let name = format!("h{i}.jsonl");
        fs::write(d.path().join(&name), format!("{h}\n{rest}")).unwrap();
        let o = arbor_in(d.path(), &["check", &name]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{h}: {out}{}", String::from_utf8_lossy(&o.stderr));
        assert!(!out.contains("line 2"), "{out}");
        let o = arbor_in(d.path(), &["dump", &name, "--json"]);
        let v = arbor_log::json::parse(&String::from_utf8_lossy(&o.stdout)).unwrap();
        assert_eq!(v["header"]["cwd"], "/home/me/proj", "{h}");
        assert_eq!(v["entries"].as_array().unwrap().len(), rest.lines().count(), "{h}");
    }
    let o = arbor_in(d.path(), &["dump", "h0.jsonl", "--json"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains(&deep), "the deep value is kept whole");
}

/// A header `version` beyond the `f64` range is compared as pi compares
/// the Infinity `JSON.parse` makes of it: `1e400` is a current file, read
/// and appended to as it is (its ids kept, nothing rewritten); `-1e400` is a
/// version 1 file, migrated (new ids). Before: both were read as version 1.
#[test]
fn a_version_beyond_f64_is_compared_as_pi_compares_it() {
    let d = tempfile::tempdir().unwrap();
    let lines = |version: &str| {
        format!(
            "{}\n{}\n",
            format_args!(
                r#"{{"type":"session","version":{version},"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}}"#
            ),
            r#"{"type":"message","id":"aaaaaaaa","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#
        )
    };
    let current = lines("1e400");
    fs::write(d.path().join("inf.jsonl"), &current).unwrap();
    let tree = |name: &str| String::from_utf8_lossy(&arbor_in(d.path(), &["tree", name]).stdout).into_owned();
    assert!(tree("inf.jsonl").contains("aaaaaaaa"), "the ids are kept: {}", tree("inf.jsonl"));
    let o = arbor_in(d.path(), &["label", "inf.jsonl", "aaaaaaaa", "kept"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = fs::read_to_string(d.path().join("inf.jsonl")).unwrap();
    assert!(after.starts_with(&current), "appended to, not rewritten:\n{after}");
    assert_eq!(after.lines().count(), 3, "{after}");

    fs::write(d.path().join("neg.jsonl"), lines("-1e400")).unwrap();
    assert!(!tree("neg.jsonl").contains("aaaaaaaa"), "a version 1 file gets new ids: {}", tree("neg.jsonl"));
}
