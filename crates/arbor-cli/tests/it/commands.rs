//! Readable outputs as snapshots, the write commands end to end, and errors.

use std::fs;

use serde_json::Value;

use crate::{arbor, fixtures, json, rel, stderr, stdout};

fn snapshot_of(args: &[&str]) -> String {
    let o = arbor(args);
    let mut s = format!("exit: {}\n", o.status.code().unwrap_or(-1));
    let err = stderr(&o);
    if !err.is_empty() {
        s.push_str("--- stderr\n");
        s.push_str(&err.replace(&fixtures().display().to_string(), "<fixtures>"));
    }
    s.push_str("--- stdout\n");
    s.push_str(&stdout(&o));
    s
}

#[test]
fn tree_text_snapshots() {
    insta::glob!("../../../../fixtures", "{logs/ok,logs/unknown,logs/err,demo}/*.jsonl", |p| {
        insta::assert_snapshot!(snapshot_of(&["tree", &rel(p)]));
    });
}

#[test]
fn dump_text_snapshots() {
    insta::glob!("../../../../fixtures", "{logs/legacy/v1,logs/legacy/v2,logs/err}/*.jsonl", |p| {
        insta::assert_snapshot!(snapshot_of(&["dump", &rel(p)]));
    });
}

#[test]
fn context_transcript_of_a_branched_compacted_session() {
    insta::assert_snapshot!("context_demo", snapshot_of(&["context", "demo/demo.jsonl"]));
    insta::assert_snapshot!("context_demo_llm", snapshot_of(&["context", "demo/demo.jsonl", "--llm"]));
    insta::assert_snapshot!("context_two_compactions", snapshot_of(&["context", "logs/ok/two-compactions.jsonl"]));
    insta::assert_snapshot!("tree_demo_other_leaf", snapshot_of(&["tree", "demo/demo.jsonl", "--leaf", "4f487dd5"]));
}

#[test]
fn errors_are_one_line_and_never_panics() {
    for args in [
        vec!["dump", "no/such/file.jsonl"],
        vec!["tree", "logs/err/headerless.jsonl"],
        vec!["tree", "logs/err/empty.jsonl"],
        vec!["path", "demo/demo.jsonl", "nope"],
        vec!["context", "demo/demo.jsonl", "--leaf", "nope"],
        vec!["tree", "demo/demo.jsonl", "--leaf", "nope"],
    ] {
        let o = arbor(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("arbor: "), "{err}");
        assert!(!err.contains("panicked"));
    }
    let o = arbor(&["path", "demo/demo.jsonl", "nope"]);
    assert!(stderr(&o).contains("demo/demo.jsonl: Entry nope not found"), "{}", stderr(&o));
    let o = arbor(&["tree", "logs/err/headerless.jsonl"]);
    assert!(stderr(&o).contains("headerless.jsonl"), "names the file: {}", stderr(&o));
    let o = arbor(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2), "usage errors exit 2");
}

#[test]
fn arbitrary_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    // A deterministic pseudo-random byte soup mixed with JSON fragments.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for round in 0..40 {
        let mut bytes = vec![];
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let frag: &[u8] = match x % 9 {
                0 => b"{\"type\":\"session\",\"id\":\"s\"}",
                1 => b"\n",
                2 => b"{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"a\"",
                3 => b"\xff\xfe",
                4 => b"}",
                5 => b"{\"type\":\"label\",\"id\":\"b\",\"parentId\":null,\"targetId\":\"a\"}\n",
                6 => b"[[[[",
                7 => b"{\"type\":\"compaction\",\"id\":\"c\",\"parentId\":\"b\",\"summary\":\"s\",\"firstKeptEntryId\":\"a\"}\n",
                _ => b"\"\\u12",
            };
            bytes.extend_from_slice(frag);
        }
        let p = dir.path().join(format!("soup{round}.jsonl"));
        fs::write(&p, &bytes).unwrap();
        for cmd in [&["dump", "--json"][..], &["tree"], &["tree", "--json"], &["context", "--json"], &["path"]] {
            let o = arbor(&[&[cmd[0], p.to_str().unwrap()], &cmd[1..]].concat());
            assert!(matches!(o.status.code(), Some(0) | Some(1)), "{cmd:?} {round}");
            assert!(!stderr(&o).contains("panicked"), "{cmd:?} {round}: {}", stderr(&o));
        }
    }
}

#[test]
fn label_and_fork_and_ls_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let cwd_dir = root.join("--home-me-wordfreq--");
    fs::create_dir_all(&cwd_dir).unwrap();
    let file = cwd_dir.join("demo.jsonl");
    fs::copy(fixtures().join("demo/demo.jsonl"), &file).unwrap();
    let f = file.to_str().unwrap();
    let before = fs::read_to_string(&file).unwrap();

    let o = arbor(&["label", f, "0866b2b1", "first try"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let after = fs::read_to_string(&file).unwrap();
    assert!(after.starts_with(&before), "append-only");
    let last: Value = serde_json::from_str(after.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "label");
    assert_eq!(last["targetId"], "0866b2b1");
    assert_eq!(last["label"], "first try");
    let tree = stdout(&arbor(&["tree", f]));
    assert!(tree.contains("[first try]"), "{tree}");

    let o = arbor(&["label", f, "0866b2b1"]);
    assert!(o.status.success());
    let last: Value = serde_json::from_str(fs::read_to_string(&file).unwrap().lines().last().unwrap()).unwrap();
    assert!(last.get("label").is_none(), "clearing writes no label key");

    let out = json(&arbor(&["fork", f, "--at", "a3b3dbef", "--json"]));
    let new_path = out["path"].as_str().unwrap();
    assert!(new_path.starts_with(cwd_dir.to_str().unwrap()), "beside the original: {new_path}");
    let path_ids: Vec<Value> = json(&arbor(&["path", new_path, "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] != "label")
        .map(|e| e["id"].clone())
        .collect();
    let orig_ids: Vec<Value> = json(&arbor(&["path", f, "a3b3dbef", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] != "label")
        .map(|e| e["id"].clone())
        .collect();
    assert_eq!(path_ids, orig_ids);

    let list = json(&arbor(&["ls", "--all", "--sessions-dir", root.to_str().unwrap(), "--json"]));
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert!(list.iter().any(|i| i["parentSessionPath"].as_str() == Some(f)));
    let text = stdout(&arbor(&["ls", "--cwd", "/home/me/wordfreq", "--sessions-dir", root.to_str().unwrap()]));
    assert_eq!(text.lines().count(), 2, "{text}");
}

#[test]
fn two_writers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    fs::copy(fixtures().join("demo/demo.jsonl"), &file).unwrap();
    // Hold the lock from this process through the library, then try the CLI.
    let _held = arbor_tree::Session::open(&file, arbor_tree::OpenMode::Write, arbor_tree::SessionOptions::default())
        .expect("first writer");
    let o = arbor(&["label", file.to_str().unwrap(), "0866b2b1", "x"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("s.jsonl") && err.contains(&format!("pid {}", std::process::id())), "{err}");
    // Readers are not blocked.
    assert!(arbor(&["tree", file.to_str().unwrap()]).status.success());
}

#[test]
fn check_snapshots() {
    insta::glob!("../../../../fixtures", "{logs/err,logs/ok,logs/legacy/v1}/*.jsonl", |p| {
        insta::assert_snapshot!(snapshot_of(&["check", &rel(p)]));
    });
}

#[test]
fn repair_dry_run_snapshots() {
    insta::glob!("../../../../fixtures", "logs/err/*.jsonl", |p| {
        insta::assert_snapshot!(snapshot_of(&["repair", &rel(p)]));
    });
}

#[test]
fn repair_writes_a_clean_file_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["duplicate-prefix", "torn-last-line", "non-object-lines", "garbage-line-middle", "entry-without-id"] {
        let file = dir.path().join(format!("{name}.jsonl"));
        fs::copy(fixtures().join(format!("logs/err/{name}.jsonl")), &file).unwrap();
        let original = fs::read(&file).unwrap();
        let o = arbor(&["repair", file.to_str().unwrap(), "--write", "--json"]);
        let report = json(&o);
        let backup = report["backup"].as_str().unwrap();
        assert_eq!(fs::read(backup).unwrap(), original, "{name}: the original is kept");
        let check = arbor(&["check", file.to_str().unwrap()]);
        assert_eq!(check.status.code(), Some(0), "{name}: {}", stdout(&check));
        // Every original line is either in the repaired file or in the side file.
        let repaired = fs::read_to_string(&file).unwrap();
        let rejected = report["rejectedFile"].as_str().map(|p| fs::read(p).unwrap()).unwrap_or_default();
        let rejected = String::from_utf8_lossy(&rejected).into_owned();
        for line in String::from_utf8_lossy(&original).lines().filter(|l| !l.trim().is_empty()) {
            assert!(repaired.contains(line) || rejected.contains(line), "{name}: lost {line}");
        }
        // A second repair finds nothing to do.
        let again = json(&arbor(&["repair", file.to_str().unwrap(), "--json"]));
        assert_eq!(again["clean"], true, "{name}");
    }
}

/// A session whose first reply calls a tool that never answers, then three
/// branches from it: the unanswered call lies on the path to three leaves.
fn unanswered_call_on_three_leaves(dir: &std::path::Path) -> std::path::PathBuf {
    let entry = |id: &str, parent: Option<&str>, message: Value| serde_json::json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-02T03:04:05.000Z", "message": message});
    let user = |t: &str| serde_json::json!({"role": "user", "content": t, "timestamp": 1});
    let mut lines = vec![
        serde_json::json!({"type": "session", "version": 3, "id": "6b1e2a60-8d4b-4f6a-9a0e-0c1d2e3f4a5b", "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/w"}),
        entry("aaaa0001", None, user("read it")),
        entry(
            "aaaa0002",
            Some("aaaa0001"),
            serde_json::json!({"role": "assistant", "content": [{"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.rs"}}], "stopReason": "toolUse", "timestamp": 2}),
        ),
    ];
    for (i, text) in ["one", "two", "three"].iter().enumerate() {
        lines.push(entry(&format!("bbbb000{i}"), Some("aaaa0002"), user(text)));
    }
    let file = dir.join("calls.jsonl");
    fs::write(&file, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    file
}

#[test]
fn check_reports_each_finding_once_with_a_count_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let file = unanswered_call_on_three_leaves(dir.path());
    let o = arbor(&["check", file.to_str().unwrap(), "logs/err/duplicate-prefix.jsonl", "demo/demo.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    let text = stdout(&o).replace(&dir.path().display().to_string(), "<dir>");
    insta::assert_snapshot!("check_counts_and_summary", text);
    let o = arbor(&["check", file.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = report[0]["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0]["count"], 3);
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    for (shell, marker) in [("bash", "_arbor()"), ("zsh", "#compdef arbor"), ("fish", "complete -c arbor")] {
        let o = arbor(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(script.contains("navigate") && script.contains("completions"), "{shell}");
    }
    assert_eq!(arbor(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn readme_says_how_arbor_gets_onto_the_path_right_after_the_set_up_commands() {
    let readme = fs::read_to_string(fixtures().join("../README.md")).unwrap();
    let setup = readme.split("## Set up").nth(1).unwrap();
    let setup = setup.split("\n## ").next().unwrap();
    assert_eq!(setup.matches("```sh").count(), 2, "exactly two set-up commands:\n{setup}");
    let after = setup.rsplit("```").next().unwrap();
    assert!(after.contains("cargo install --path crates/arbor-cli"), "{after}");
    assert!(after.contains("target/release/arbor") && after.contains("PATH"), "{after}");
}
