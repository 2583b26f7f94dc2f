//! `arbor import`, `export` and `diff` through the binary: what they print,
//! where they write, their errors and exit codes.

use crate::{arbor, json, stderr, stdout};

#[test]
fn import_reports_sessions_and_skipped_lines_then_finds_them_unchanged() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().to_str().unwrap();
    let o = arbor(&["import", "claude", "import/claude/branches.jsonl", "--sessions-dir", dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "import/claude/branches.jsonl:27: malformed JSON: EOF while parsing a string at line 1 column 128, line skipped\n"
    );
    let out = stdout(&o);
    assert!(out.starts_with("import/claude/branches.jsonl: created "), "{out}");
    assert!(out.trim_end().ends_with(": 26 entries, 7 kept as custom"), "{out}");
    let again = json(&arbor(&["import", "claude", "import/claude/branches.jsonl", "--sessions-dir", dir, "--json"]));
    assert_eq!(again[0]["sessions"][0]["outcome"], "unchanged");
    assert_eq!(again[0]["skipped"][0]["line"], 27);
    let file = again[0]["sessions"][0]["path"].as_str().unwrap().to_owned();
    let check = arbor(&["check", &file]);
    assert!(check.status.success(), "{}", stdout(&check));
}

#[test]
fn a_failed_transcript_is_one_line_and_exit_1_the_others_still_import() {
    let root = tempfile::tempdir().unwrap();
    let empty = root.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let sessions = root.path().join("s");
    let o = arbor(&[
        "import",
        "codex",
        empty.to_str().unwrap(),
        "import/codex/rollout-2026-03-03T14-00-00-0199a3c4-7e21-7b80-9f3d-5c6b7a8e9d10.jsonl",
        "--sessions-dir",
        sessions.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&format!("arbor: {}: no codex records to import", empty.display())), "{}", stderr(&o));
    assert!(stdout(&o).contains(": created "), "{}", stdout(&o));
}

#[test]
fn export_writes_to_a_file_or_stdout_and_refuses_markdown_of_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("demo.html");
    let o = arbor(&["export", "demo/demo.jsonl", "--format", "html", "-o", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    assert!(std::fs::read_to_string(&page).unwrap().starts_with("<!DOCTYPE html>"));
    let md = arbor(&["export", "demo/demo.jsonl", "--format", "md", "--leaf", "4f487dd5"]);
    assert!(stdout(&md).starts_with("# wordfreq: case, punctuation, --top\n"), "{}", stdout(&md));
    let all = arbor(&["export", "demo/demo.jsonl", "--format", "jsonl", "--all"]);
    assert_eq!(all.stdout, std::fs::read(crate::fixtures().join("demo/demo.jsonl")).unwrap());
    let bad = arbor(&["export", "demo/demo.jsonl", "--format", "md", "--all"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).starts_with("arbor: --all: Markdown holds one path"), "{}", stderr(&bad));
    let unknown = arbor(&["export", "demo/demo.jsonl", "--format", "md", "--leaf", "nothere"]);
    assert_eq!(stderr(&unknown), "arbor: demo/demo.jsonl: Entry nothere not found\n");
}

#[test]
fn diff_text_and_json() {
    let o = arbor(&["diff", "demo/demo.jsonl", "6a490938", "4f487dd5"]);
    insta::assert_snapshot!(stdout(&o));
    let j = json(&arbor(&["diff", "demo/demo.jsonl", "6a490938", "4f487dd5", "--json"]));
    assert_eq!(j["commonAncestor"], "f4e8d0fa");
    assert_eq!(j["b"]["filesRead"][0], "Cargo.toml");
}
