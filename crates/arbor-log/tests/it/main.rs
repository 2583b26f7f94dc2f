//! Data-driven tests of arbor-log over every file in `fixtures/`.

// Test helpers may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use arbor_log::ids::CounterIds;
use arbor_log::{EntryKind, LastLine, LineKind, Role, SessionLog};

mod scan_diff;

fn root() -> PathBuf {
    arbor_test_support::fixtures()
}

fn all_session_files() -> Vec<PathBuf> {
    arbor_test_support::jsonl_under(&root())
}

#[test]
fn every_fixture_round_trips_byte_for_byte() {
    let files = all_session_files();
    assert!(files.len() >= 30, "{} fixtures", files.len());
    for p in files {
        let bytes = fs::read(&p).unwrap();
        let log = SessionLog::read(&bytes[..]).unwrap();
        assert_eq!(log.to_bytes(LastLine::AsRead), bytes, "{}", p.display());
        // Reading the same bytes from the file path gives the same log.
        assert_eq!(SessionLog::read_path(&p).unwrap().to_bytes(LastLine::AsRead), bytes);
    }
}

#[test]
fn migrated_logs_rewrite_only_changed_lines_and_are_idempotent() {
    for p in all_session_files() {
        let mut log = SessionLog::read_path(&p).unwrap();
        let report = log.migrate(&mut CounterIds::new());
        let once = log.to_bytes(LastLine::Terminated);
        let mut again = SessionLog::read(&once[..]).unwrap();
        let second = again.migrate(&mut CounterIds::new());
        assert!(!second.migrated(), "{}: a migrated log needs no second migration", p.display());
        assert_eq!(again.to_bytes(LastLine::Terminated), once, "{}", p.display());
        if !report.migrated() {
            assert!(!log.is_dirty());
        }
    }
}

/// A purpose-built rendering of what the reader made of a file.
fn render(p: &Path) -> String {
    let bytes = fs::read(p).unwrap();
    let mut log = SessionLog::read(&bytes[..]).unwrap();
    let mut out = String::new();
    let kinds: Vec<&str> = log
        .lines()
        .iter()
        .map(|l| match l.kind {
            LineKind::Blank => "blank",
            LineKind::Skipped => "skipped",
            LineKind::TitleSlot(_) => "title-slot",
            LineKind::Header(_) => "header",
            LineKind::ExtraHeader(_) => "extra-header",
            LineKind::Record(_) => "record",
        })
        .collect();
    writeln!(out, "lines: {}", kinds.join(" ")).unwrap();
    for d in log.diagnostics() {
        writeln!(out, "diag {d}").unwrap();
    }
    let report = log.migrate(&mut CounterIds::new());
    match log.header() {
        Some(h) => writeln!(
            out,
            "header: id={} version={} cwd={:?} extra={:?}",
            h.id,
            h.version(),
            h.cwd,
            h.extra.keys().collect::<Vec<_>>()
        )
        .unwrap(),
        None => writeln!(out, "header: none").unwrap(),
    }
    if let (Some(v), true) = (report.from_version, report.migrated()) {
        writeln!(out, "migrated from v{v}: {} lines changed", report.changed.len()).unwrap();
        for s in &report.steps {
            writeln!(out, "  v{} -> v{}: {}", s.from, s.to, s.changes.join("; ")).unwrap();
        }
    }
    let (entries, diags) = log.entries_with_diagnostics();
    for d in diags {
        writeln!(out, "diag {d}").unwrap();
    }
    for (line, e) in entries {
        let detail = match &e.kind {
            EntryKind::Message(m) => format!("role={}", m.role().as_ref().map_or("?", Role::as_str)),
            EntryKind::Label(l) => {
                format!("target={} label={:?}", l.target_id, l.label.as_ref().map(arbor_log::json::text))
            }
            EntryKind::Compaction(c) => format!("firstKept={:?}", c.first_kept_entry_id),
            EntryKind::BranchSummary(b) => format!("fromId={}", b.from_id),
            EntryKind::ModelChange(m) => format!("model={:?}", m.default_model()),
            EntryKind::Unknown { .. } => "unknown".to_owned(),
            EntryKind::Malformed { error, .. } => format!("malformed: {error}"),
            _ => String::new(),
        };
        writeln!(out, "{line:>3} {} <- {} {} {detail}", e.id, e.parent_id.as_deref().unwrap_or("null"), e.entry_type())
            .unwrap();
    }
    out
}

#[test]
fn reader_snapshots() {
    insta::glob!("../../../../fixtures/logs", "**/*.jsonl", |p| {
        insta::assert_snapshot!(render(p));
    });
}

#[test]
fn demo_snapshot() {
    insta::assert_snapshot!(render(&root().join("demo/demo.jsonl")));
}

#[test]
fn reference_dumps_match_with_the_counter_generator() {
    for stem in ["large-session", "before-compaction"] {
        let mut log = SessionLog::read_path(&root().join(format!("pi/{stem}.jsonl"))).unwrap();
        log.migrate(&mut CounterIds::new());
        let expected: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(root().join(format!("pi/{stem}.dump.json"))).unwrap()).unwrap();
        assert_eq!(log.header().unwrap().to_value(), expected["header"]);
        let (entries, diags) = log.entries_with_diagnostics();
        assert!(diags.is_empty(), "{diags:?}");
        let got: Vec<serde_json::Value> = entries.iter().map(|(_, e)| e.to_value()).collect();
        assert_eq!(got.as_slice(), expected["entries"].as_array().unwrap().as_slice(), "{stem}");
    }
}
