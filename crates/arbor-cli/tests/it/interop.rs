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
    assert!(stderr(&o).starts_with(&format!("arbor: wrote {} (HTML, ", page.display())), "{}", stderr(&o));
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
fn export_takes_the_format_from_the_output_and_names_a_missing_folder() {
    let dir = tempfile::tempdir().unwrap();
    for (name, start) in [("s.md", "# wordfreq"), ("s.html", "<!DOCTYPE html>"), ("s.jsonl", "{\"type\":\"session\"")] {
        let out = dir.path().join(name);
        let o = arbor(&["export", "demo/demo.jsonl", "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(std::fs::read_to_string(&out).unwrap().starts_with(start), "{name}");
        assert_eq!(stderr(&o).lines().count(), 1, "one line: {}", stderr(&o));
    }
    let odd = dir.path().join("s.txt");
    let o = arbor(&["export", "demo/demo.jsonl", "-o", odd.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot tell the format from the extension"), "{}", stderr(&o));
    let o = arbor(&["export", "demo/demo.jsonl"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--format md|html|jsonl is needed"), "{}", stderr(&o));
    let lost = dir.path().join("no/such/dir/s.html");
    let o = arbor(&["export", "demo/demo.jsonl", "-o", lost.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let want = format!("arbor: {}: the folder {} does not exist\n", lost.display(), lost.parent().unwrap().display());
    assert_eq!(stderr(&o), want);
}

#[test]
fn export_never_replaces_a_session_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("s.jsonl");
    let original = std::fs::read(crate::fixtures().join("demo/demo.jsonl")).unwrap();
    std::fs::write(&session, &original).unwrap();
    let other = dir.path().join("other.jsonl");
    std::fs::write(&other, &original).unwrap();
    let link = dir.path().join("link.md");
    std::fs::hard_link(&session, &link).unwrap();
    let s = session.to_str().unwrap();
    for (out, format, why) in [
        (s, "md", "is the session being exported"),
        (s, "jsonl", "is the session being exported"),
        (link.to_str().unwrap(), "md", "is the session being exported"),
        (other.to_str().unwrap(), "html", "holds a session"),
    ] {
        let o = arbor(&["export", s, "--format", format, "-o", out]);
        assert_eq!(o.status.code(), Some(1), "{out} {format}");
        assert!(stderr(&o).contains(why) && stderr(&o).contains("--force"), "{}", stderr(&o));
    }
    assert_eq!(std::fs::read(&session).unwrap(), original, "the session is untouched");
    assert_eq!(std::fs::read(&other).unwrap(), original);
    let o = arbor(&["export", s, "--format", "md", "-o", other.to_str().unwrap(), "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&other).unwrap().starts_with("# wordfreq"));
}

#[test]
fn markdown_on_a_terminal_shows_escapes_instead_of_running_them() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("s.jsonl");
    let mut text = std::fs::read_to_string(crate::fixtures().join("demo/demo.jsonl")).unwrap();
    // A title change, a clipboard write and a screen clear in a user message.
    text.push_str("{\"type\":\"message\",\"id\":\"e5c0e5c0\",\"parentId\":\"6a490938\",\"timestamp\":\"2026-03-14T10:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"before \\u001b]0;pwned\\u0007 \\u001b]52;c;ZWNobyBwd25lZA==\\u0007 \\u001b[2J after\",\"timestamp\":1773482400000}}\n");
    std::fs::write(&session, text).unwrap();
    // `script` runs the command on a pseudo-terminal and copies what it printed.
    let command = format!("{} export {} --format md", env!("CARGO_BIN_EXE_arbor"), session.display());
    let o = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env("ARBOR_CACHE_DIR", crate::cache_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(shown.contains("before \\x1b]0;pwned\\x07 \\x1b]52;c;ZWNobyBwd25lZA==\\x07 \\x1b[2J after"), "{shown}");
    assert!(!o.stdout.contains(&0x1b) && !o.stdout.contains(&0x07), "no escape reaches the terminal");
    // Into a pipe or a file, Markdown is the session's text exactly.
    let piped = arbor(&["export", session.to_str().unwrap(), "--format", "md"]);
    assert!(piped.stdout.windows(4).any(|w| w == b"\x1b]0;"));
}

#[test]
fn diff_text_and_json() {
    let o = arbor(&["diff", "demo/demo.jsonl", "6a490938", "4f487dd5"]);
    insta::assert_snapshot!(stdout(&o));
    let j = json(&arbor(&["diff", "demo/demo.jsonl", "6a490938", "4f487dd5", "--json"]));
    assert_eq!(j["commonAncestor"], "f4e8d0fa");
    assert_eq!(j["b"]["filesRead"][0], "Cargo.toml");
}
