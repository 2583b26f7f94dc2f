//! `arbor import`: the sessions made from the transcripts of `fixtures/import/`.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use arbor_interop::{import_transcripts, Format, ImportOptions, ImportReport, InteropError, Outcome};
use arbor_log::EntryKind;
use serde_json::Value;

use crate::{import, open, session_files, transcript, transcripts};

/// A session as text: its header, then one line per entry (id, parent,
/// what it is, the start of its text, the source lines it came from).
fn render(path: &Path, root: &Path) -> String {
    let s = open(path);
    let h = s.header();
    let parent = h.parent_session.as_deref().map_or("-".to_owned(), |p| {
        Path::new(p).strip_prefix(root).map_or_else(|_| p.to_owned(), |x| x.display().to_string())
    });
    let mut out = format!("session {} cwd={} parent={parent}\n", h.id, h.cwd.as_deref().unwrap_or(""));
    for e in s.entries().map(Result::unwrap) {
        let what = match &e.kind {
            EntryKind::Message(m) => {
                let msg = &m.message;
                let role = msg.get("role").and_then(Value::as_str).unwrap_or("?");
                let mut parts = Vec::new();
                for b in msg.get("content").and_then(Value::as_array).into_iter().flatten() {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => parts.push(format!("text {:?}", short(b["text"].as_str().unwrap_or("")))),
                        Some("thinking") => parts.push(if b.get("redacted").is_some() {
                            "thinking (redacted)".into()
                        } else {
                            "thinking".into()
                        }),
                        Some("toolCall") => parts.push(format!(
                            "call {} {}",
                            b["name"].as_str().unwrap_or(""),
                            b["id"].as_str().unwrap_or("")
                        )),
                        Some("image") => parts.push(format!("image {}", b["mimeType"].as_str().unwrap_or(""))),
                        other => parts.push(format!("{other:?}")),
                    }
                }
                if let Some(t) = msg.get("content").and_then(Value::as_str) {
                    parts.push(format!("{:?}", short(t)));
                }
                let extra = match role {
                    "toolResult" => format!(
                        " for {} ({}){}{}",
                        msg["toolCallId"].as_str().unwrap_or(""),
                        msg["toolName"].as_str().unwrap_or(""),
                        if msg["isError"] == Value::Bool(true) { " error" } else { "" },
                        if msg.get("details").is_some() { " +details" } else { "" }
                    ),
                    "assistant" => format!(
                        " [{} {}/{} stop={} tokens={}]",
                        msg["api"].as_str().unwrap_or(""),
                        msg["provider"].as_str().unwrap_or(""),
                        msg["model"].as_str().unwrap_or(""),
                        msg["stopReason"].as_str().unwrap_or(""),
                        msg["usage"]["totalTokens"]
                    ),
                    _ => String::new(),
                };
                format!("{role}{extra}: {}", parts.join(", "))
            }
            EntryKind::Custom(c) => format!("custom {}", c.custom_type),
            EntryKind::Compaction(c) => format!(
                "compaction keeps={} tokensBefore={} {:?}",
                if c.first_kept_entry_id.as_deref() == Some(e.id.as_str()) { "nothing" } else { "?" },
                c.tokens_before.as_ref().map_or("-".into(), ToString::to_string),
                short(&c.summary)
            ),
            EntryKind::Label(l) => format!("label {:?} on {}", l.text().unwrap_or_default(), l.target_id),
            EntryKind::ThinkingLevelChange(t) => format!("thinking {}", t.level().unwrap_or("")),
            _ => e.entry_type().to_string(),
        };
        let lines: Vec<String> = s
            .entry_json(&e.id)
            .unwrap()
            .and_then(|j| serde_json::from_str::<Value>(j).ok())
            .and_then(|v| v.get("source").cloned())
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|o| {
                let at = o.get("file").and_then(Value::as_str).map_or_else(|| o["line"].to_string(), str::to_owned);
                match o.get("part") {
                    Some(p) => format!("{at}#{p}"),
                    None => at,
                }
            })
            .collect();
        writeln!(out, "{} {} {what} <- {}", e.id, e.parent_id.as_deref().unwrap_or("-"), lines.join(",")).unwrap();
    }
    writeln!(out, "leaf {}", s.leaf_id().unwrap_or("-")).unwrap();
    out
}

fn short(s: &str) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 48 {
        format!("{}…", flat.chars().take(47).collect::<String>())
    } else {
        flat
    }
}

/// Every session of the reports, then what the import did.
pub(crate) fn render_reports(reports: &[ImportReport], root: &Path) -> String {
    let mut out = String::new();
    for r in reports {
        writeln!(out, "== {}", r.source.file_name().unwrap().to_string_lossy()).unwrap();
        for s in &r.sessions {
            out.push_str(&render(&s.path, root));
            writeln!(out, "-- {:?}, {} entries, {} custom", s.outcome, s.entries, s.custom).unwrap();
            for (source, targets) in &s.records {
                for (target, n) in targets {
                    writeln!(out, "   {source} -> {target}: {n}").unwrap();
                }
            }
        }
        for k in &r.skipped {
            match &k.file {
                Some(f) => writeln!(out, "skipped file {}: {}", f.file_name().unwrap().to_string_lossy(), k.reason),
                None => writeln!(out, "skipped line {}: {}", k.line, k.reason),
            }
            .unwrap();
        }
        if r.partial_tail {
            writeln!(out, "the last line is unfinished").unwrap();
        }
    }
    out
}

fn snapshot_of(format: Format, rel: &str) -> String {
    let root = tempfile::tempdir().unwrap();
    let reports = import(format, &[transcript(rel)], root.path());
    render_reports(&reports, root.path())
}

#[test]
fn claude_rewinds_are_branches_and_every_other_record_is_kept() {
    insta::assert_snapshot!(snapshot_of(Format::Claude, "claude/branches.jsonl"));
}

#[test]
fn claude_compaction_boundary_and_summary_are_one_compaction() {
    insta::assert_snapshot!(snapshot_of(Format::Claude, "claude/compaction.jsonl"));
}

#[test]
fn claude_sidechains_are_sessions_of_their_own_linked_to_the_main_one() {
    let text = snapshot_of(Format::Claude, "claude/5d2a7e90-3c4b-4a1f-8e6d-9b0c1f2a3e47.jsonl");
    insta::assert_snapshot!(text);
}

#[test]
fn claude_transcript_still_being_written_is_imported_up_to_its_last_complete_line() {
    insta::assert_snapshot!(snapshot_of(Format::Claude, "claude/partial.jsonl"));
}

#[test]
fn codex_rollout_is_a_linear_session_with_one_message_per_response() {
    let rel = transcripts(Format::Codex)[0].strip_prefix(crate::fixtures().join("import")).unwrap().to_owned();
    insta::assert_snapshot!(snapshot_of(Format::Codex, rel.to_str().unwrap()));
}

#[test]
fn every_imported_session_is_clean_for_check() {
    let root = tempfile::tempdir().unwrap();
    let mut files = session_files(&import(Format::Claude, &transcripts(Format::Claude), root.path()));
    files.extend(session_files(&import(Format::Codex, &transcripts(Format::Codex), root.path())));
    assert_eq!(files.len(), 7, "{files:?}");
    for f in files {
        let findings = arbor_tree::check_file(&f).unwrap();
        assert!(findings.is_empty(), "{}: {findings:?}", f.display());
    }
}

#[test]
fn importing_twice_gives_the_same_sessions_byte_for_byte() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for format in [Format::Claude, Format::Codex] {
        let first = import(format, &transcripts(format), one.path());
        let again = import(format, &transcripts(format), one.path());
        let elsewhere = import(format, &transcripts(format), two.path());
        for ((a, b), c) in session_files(&first).iter().zip(session_files(&again)).zip(session_files(&elsewhere)) {
            assert_eq!(a, &b);
            // A sidechain's header names its main session's file, which is under the root.
            let here = fs::read_to_string(a).unwrap().replace(&one.path().display().to_string(), "ROOT");
            let there = fs::read_to_string(&c).unwrap().replace(&two.path().display().to_string(), "ROOT");
            assert!(here == there, "{} differs from {}", a.display(), c.display());
        }
        assert!(again.iter().flat_map(|r| &r.sessions).all(|s| s.outcome == Outcome::Unchanged && s.written == 0));
    }
}

/// The first `n` bytes of a transcript, written to `dir`.
fn prefix_copy(rel: &str, n: usize, dir: &Path) -> std::path::PathBuf {
    let bytes = fs::read(transcript(rel)).unwrap();
    let path = dir.join(Path::new(rel).file_name().unwrap());
    fs::write(&path, &bytes[..n.min(bytes.len())]).unwrap();
    path
}

#[test]
fn a_grown_transcript_extends_its_session_with_the_same_ids() {
    let work = tempfile::tempdir().unwrap();
    let (root, fresh) = (work.path().join("root"), work.path().join("fresh"));
    let full = fs::read_to_string(transcript("claude/branches.jsonl")).unwrap();
    // Cut in the middle of line 12: lines 1-11 are complete.
    let cut = full.match_indices('\n').nth(10).unwrap().0 + 40;
    let copy = prefix_copy("claude/branches.jsonl", cut, work.path());
    let first = import(Format::Claude, std::slice::from_ref(&copy), &root);
    assert!(first[0].partial_tail);
    assert_eq!(first[0].sessions[0].outcome, Outcome::Created);
    fs::write(&copy, &full).unwrap();
    let grown = import(Format::Claude, std::slice::from_ref(&copy), &root);
    let s = &grown[0].sessions[0];
    assert_eq!(s.outcome, Outcome::Extended);
    assert!(s.written > 0 && s.written < s.entries, "{s:?}");
    let whole = import(Format::Claude, &[copy], &fresh);
    assert_eq!(fs::read(&s.path).unwrap(), fs::read(&whole[0].sessions[0].path).unwrap());
}

#[test]
fn a_reply_completed_by_later_lines_replaces_the_session_after_a_backup() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("root");
    let rel = transcripts(Format::Codex)[0].strip_prefix(crate::fixtures().join("import")).unwrap().to_owned();
    let rel = rel.to_str().unwrap();
    let full = fs::read_to_string(transcript(rel)).unwrap();
    // Up to the first function call: its token count (the reply's usage) comes later.
    let cut = full.find("\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\"").unwrap();
    let cut = full[..cut].rfind('\n').unwrap() + 1;
    let copy = prefix_copy(rel, cut, work.path());
    let first = import(Format::Codex, std::slice::from_ref(&copy), &root);
    let path = first[0].sessions[0].path.clone();
    let before = fs::read(&path).unwrap();
    fs::write(&copy, &full).unwrap();
    let again = import(Format::Codex, &[copy], &root);
    let s = &again[0].sessions[0];
    assert_eq!(s.outcome, Outcome::Replaced);
    assert_eq!(fs::read(s.backup.as_ref().unwrap()).unwrap(), before);
    // The same ids: every entry of the first import is still there.
    let old: Vec<String> = open_ids(&s.backup.clone().unwrap());
    let new: Vec<String> = open_ids(&path);
    assert!(old.iter().all(|id| new.contains(id)), "{old:?} {new:?}");
}

fn open_ids(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_session_continued_after_its_import_is_never_overwritten() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("root");
    let full = fs::read_to_string(transcript("claude/compaction.jsonl")).unwrap();
    let cut = full.match_indices('\n').nth(5).unwrap().0 + 1;
    let copy = prefix_copy("claude/compaction.jsonl", cut, work.path());
    let first = import(Format::Claude, std::slice::from_ref(&copy), &root);
    let path = first[0].sessions[0].path.clone();
    // pi appends a message to the imported session.
    let mut text = fs::read_to_string(&path).unwrap();
    let leaf = open(&path).leaf_id().unwrap().to_owned();
    text.push_str(&format!(
        "{{\"type\":\"message\",\"id\":\"0badc0de\",\"parentId\":\"{leaf}\",\"timestamp\":\"2026-03-04T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"go on\",\"timestamp\":1772582400000}}}}\n"
    ));
    fs::write(&path, &text).unwrap();
    fs::write(&copy, &full).unwrap();
    let opts = ImportOptions { sessions_root: root };
    let (_, result) = import_transcripts(Format::Claude, &[copy], &opts).remove(0);
    match result {
        Err(InteropError::Diverged { foreign: 1, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(fs::read_to_string(&path).unwrap(), text, "nothing written");
}

#[test]
fn malformed_lines_are_reported_by_number_and_skipped() {
    let root = tempfile::tempdir().unwrap();
    let claude = import(Format::Claude, &[transcript("claude/branches.jsonl")], root.path());
    let lines: Vec<usize> = claude[0].skipped.iter().map(|k| k.line).collect();
    assert_eq!(lines, [27]);
    let codex = import(Format::Codex, &transcripts(Format::Codex), root.path());
    let lines: Vec<usize> = codex[0].skipped.iter().map(|k| k.line).collect();
    assert_eq!(lines, [37, 38]);
    assert!(codex[0].partial_tail);
    assert!(codex[0].skipped[1].reason.starts_with("malformed JSON"), "{:?}", codex[0].skipped);
}

#[test]
fn a_file_with_no_records_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    fs::write(&empty, "not json\n").unwrap();
    let opts = ImportOptions { sessions_root: dir.path().join("root") };
    let (_, r) = import_transcripts(Format::Claude, std::slice::from_ref(&empty), &opts).remove(0);
    let e = r.unwrap_err().to_string();
    assert!(e.starts_with(&empty.display().to_string()) && e.contains("no claude records"), "{e}");
}

#[test]
fn import_then_export_jsonl_then_import_is_stable() {
    let root = tempfile::tempdir().unwrap();
    for format in [Format::Claude, Format::Codex] {
        for file in session_files(&import(format, &transcripts(format), root.path())) {
            let s = open(&file);
            let mut copy = Vec::new();
            arbor_interop::export_jsonl(&s, arbor_interop::Scope::All, &mut copy).unwrap();
            assert_eq!(String::from_utf8(copy).unwrap(), fs::read_to_string(&file).unwrap(), "{}", file.display());
        }
        let again = import(format, &transcripts(format), root.path());
        assert!(again.iter().flat_map(|r| &r.sessions).all(|s| s.outcome == Outcome::Unchanged));
    }
}

#[test]
fn the_json_report_says_what_was_mapped_and_what_kept_as_custom() {
    let root = tempfile::tempdir().unwrap();
    let r = import(Format::Claude, &[transcript("claude/branches.jsonl")], root.path());
    let v = serde_json::to_value(&r[0]).unwrap();
    let records = &v["sessions"][0]["records"];
    assert_eq!(records["file-history-snapshot"]["custom claude.file-history-snapshot"], 3);
    assert_eq!(records["assistant"]["merged into the reply before"], 5);
    assert_eq!(records["summary"]["label"], 1);
    assert_eq!(records["summary"]["custom claude.summary"], 1);
    assert_eq!(v["sessions"][0]["outcome"], "created");
    assert_eq!(v["skipped"][0]["line"], 27);
}
