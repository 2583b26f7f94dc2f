//! Agreement with pi v0.58.3's own outputs on two real sessions
//! (`fixtures/pi`): branch-summary collection and preparation, and
//! compaction preparation. Compared as parsed JSON.
//!
//! pi's compaction preparation has the #2608 bug; the reference outputs are
//! checked against [`prepare_compaction_pi`], and [`prepare_compaction`]
//! (Arbor's default, fixed) is checked to differ only as the fix says.

use arbor_agent::branch::{collect_entries_for_branch_summary, prepare_branch_entries};
use arbor_agent::compaction::{prepare_compaction, prepare_compaction_pi};
use arbor_agent::CompactionSettings;
use arbor_log::{CounterIds, EntryKind};
use arbor_tree::{Session, SessionOptions};
use serde_json::Value;

const STEMS: [&str; 2] = ["large-session", "before-compaction"];

use arbor_test_support::oracle::{assert_same, dir as fixtures, load as read_json};

/// The fixture opened read-only with the counter ids the reference used.
fn open(stem: &str) -> Session {
    let opts = SessionOptions::default().with_ids(CounterIds::new());
    Session::open(&fixtures().join(format!("{stem}.jsonl")), arbor_tree::OpenMode::ReadOnly, opts).unwrap()
}

/// `(args, output file)` of every run of `command` for `stem`.
fn runs(stem: &str, command: &str) -> Vec<(Vec<String>, String)> {
    let manifest = read_json("MANIFEST.json");
    manifest["files"][format!("{stem}.jsonl")]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["command"] == command)
        .map(|r| {
            assert!(r["error"].is_null(), "{stem} {command}: the reference failed");
            let args = r["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
            (args, r["output"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// File-operation sets sorted, as the reference prints them.
fn sorted_ops(v: &Value) -> Value {
    let mut out = v.clone();
    for key in ["read", "written", "edited"] {
        let mut list: Vec<String> = v[key].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect();
        list.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        out[key] = list.into();
    }
    out
}

#[test]
fn collected_entries_match_the_reference() {
    let mut checked = 0;
    for stem in STEMS {
        let session = open(stem);
        for (args, output) in runs(stem, "summarize-collect") {
            let got = collect_entries_for_branch_summary(&session, Some(&args[0]), &args[1]).unwrap();
            let got = serde_json::json!({
                "commonAncestorId": got.common_ancestor_id,
                "entries": got.entries.iter().map(|e| e.id.clone()).collect::<Vec<_>>(),
            });
            assert_same(&output, &read_json(&output), &got);
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}

#[test]
fn branch_preparations_match_the_reference() {
    let mut checked = 0;
    for stem in STEMS {
        let session = open(stem);
        for (args, output) in runs(stem, "prepare-branch") {
            let collected = collect_entries_for_branch_summary(&session, Some(&args[0]), &args[1]).unwrap();
            let mut got = prepare_branch_entries(&collected.entries, 0).to_json();
            got["fileOps"] = sorted_ops(&got["fileOps"]);
            assert_same(&output, &read_json(&output), &got);
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}

/// The settings a `prepare-compaction[@-@KEEP]` run used.
fn settings(args: &[String]) -> CompactionSettings {
    let mut s = CompactionSettings::default();
    if let Some(keep) = args.get(1) {
        s.keep_recent_tokens = keep.parse().unwrap();
    }
    s
}

#[test]
fn pi_compaction_preparations_match_the_reference() {
    let mut checked = 0;
    for stem in STEMS {
        let session = open(stem);
        let path = session.get_branch(None).unwrap();
        for (args, output) in runs(stem, "prepare-compaction") {
            let prep = prepare_compaction_pi(&path, &settings(&args)).unwrap();
            let mut got = prep.to_json();
            got["fileOps"] = sorted_ops(&got["fileOps"]);
            assert_same(&output, &read_json(&output), &got);
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}

/// Arbor's fixed algorithm: identical where the path has no compaction; with
/// one, the previous compaction's kept entries come first in the history to
/// summarize (they were silently dropped by pi), and nothing else changes.
#[test]
fn arbor_compaction_preparations_differ_only_by_the_2608_fix() {
    for stem in STEMS {
        let session = open(stem);
        let path = session.get_branch(None).unwrap();
        let prev = path.iter().rposition(|e| matches!(e.kind, EntryKind::Compaction(_)));
        for (args, output) in runs(stem, "prepare-compaction") {
            let want = read_json(&output);
            let fixed = prepare_compaction(&path, &settings(&args)).unwrap();
            let mut got = fixed.to_json();
            got["fileOps"] = sorted_ops(&got["fileOps"]);
            let Some(p) = prev else {
                assert_same(&output, &want, &got);
                continue;
            };
            // The kept region of the previous compaction, as messages.
            let EntryKind::Compaction(c) = &path[p].kind else { unreachable!() };
            let first = c.first_kept_entry_id.as_deref().unwrap();
            let start = path.iter().position(|e| e.id == first).unwrap();
            let kept: Vec<Value> = path[start..p]
                .iter()
                .filter_map(|e| match &e.kind {
                    EntryKind::Message(m) => Some(m.message.clone()),
                    _ => None,
                })
                .collect();
            assert!(!kept.is_empty(), "{stem}: the previous compaction kept something");
            let mut expected = want.clone();
            let mut history = kept.clone();
            history.extend(want["messagesToSummarize"].as_array().unwrap().iter().cloned());
            expected["messagesToSummarize"] = history.into();
            // The kept region's tool calls join the file lists.
            expected["fileOps"] = got["fileOps"].clone();
            assert_same(&format!("{output} (fixed)"), &expected, &got);
            for key in ["read", "written", "edited"] {
                for f in want["fileOps"][key].as_array().unwrap() {
                    assert!(got["fileOps"][key].as_array().unwrap().contains(f), "{output}: {key} {f} lost");
                }
            }
        }
    }
}
