//! Agreement with the reference: pi v0.58.3's own outputs on two real
//! sessions (`fixtures/pi`), compared as parsed JSON, at every leaf the
//! MANIFEST ran.

use std::collections::HashMap;
use std::fs::File;

use arbor_context::plan::{build_from_entries, build_from_path, walk_to_root, Leaf};
use arbor_context::summary::{extract_file_ops_from_message, FileOps};
use arbor_context::{convert_to_llm, estimate_context_tokens, estimate_tokens};
use arbor_log::ids::CounterIds;
use arbor_log::{Entry, EntryKind, SessionLog};
use serde_json::Value;

const STEMS: [&str; 2] = ["large-session", "before-compaction"];

use arbor_test_support::oracle::{assert_same, dir as fixtures, load as read_json};

/// The entries of a fixture session after migration with the counter ids the reference used.
fn entries(stem: &str) -> Vec<Entry> {
    let path = fixtures().join(format!("{stem}.jsonl"));
    let mut log = SessionLog::read(File::open(&path).unwrap()).unwrap();
    log.migrate(&mut CounterIds::new());
    let (entries, diags) = log.entries_with_diagnostics();
    assert!(diags.is_empty(), "{stem}: {diags:?}");
    entries.into_iter().map(|(_, e)| e).collect()
}

/// `(command, leaf argument, output file)` of every run of `command` for `stem`.
fn runs(stem: &str, command: &str) -> Vec<(Option<String>, String)> {
    let manifest = read_json("MANIFEST.json");
    let file = &manifest["files"][format!("{stem}.jsonl")];
    file["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["command"] == command)
        .map(|r| {
            assert!(r["error"].is_null(), "{stem} {command}: the reference failed: {r}");
            let args: Vec<String> =
                r["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
            (args.first().cloned(), r["output"].as_str().unwrap().to_owned())
        })
        .collect()
}

fn leaf_of(arg: &Option<String>) -> Leaf<'_> {
    arg.as_deref().map_or(Leaf::Default, Leaf::Id)
}

#[test]
fn the_default_leaf_is_the_last_entry() {
    let manifest = read_json("MANIFEST.json");
    for stem in STEMS {
        let es = entries(stem);
        assert_eq!(manifest["files"][format!("{stem}.jsonl")]["leafId"], es.last().unwrap().id.as_str(), "{stem}");
    }
}

#[test]
fn contexts_match_the_reference_at_every_leaf() {
    let mut checked = 0;
    for stem in STEMS {
        let es = entries(stem);
        let context_runs = runs(stem, "context");
        assert!(context_runs.len() >= 3, "{stem}: {context_runs:?}");
        for (leaf, output) in context_runs {
            let got = build_from_entries(&es, leaf_of(&leaf)).to_json();
            assert_same(&output, &read_json(&output), &got);
            checked += 1;
        }
    }
    assert_eq!(checked, 6);
}

#[test]
fn llm_messages_match_the_reference_at_every_leaf() {
    let mut checked = 0;
    for stem in STEMS {
        let es = entries(stem);
        let llm_runs = runs(stem, "llm");
        assert!(llm_runs.len() >= 3, "{stem}: {llm_runs:?}");
        for (leaf, output) in llm_runs {
            let ctx = build_from_entries(&es, leaf_of(&leaf));
            let got = Value::Array(convert_to_llm(&ctx.messages));
            assert_same(&output, &read_json(&output), &got);
            checked += 1;
        }
    }
    assert_eq!(checked, 6);
}

/// The file operations as the reference prints them: each set sorted.
fn ops_json(ops: &FileOps) -> Value {
    let sorted = |set: &arbor_context::summary::PathSet| {
        let mut v = set.to_vec();
        v.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        v
    };
    serde_json::json!({"read": sorted(&ops.read), "written": sorted(&ops.written), "edited": sorted(&ops.edited)})
}

/// Branch-summary preparation: with no branch summaries in these files, the
/// file operations are those of the messages' tool calls, in insertion order,
/// and the token total is the sum of the per-message estimates.
#[test]
fn branch_preparation_tokens_and_file_ops_match_the_reference() {
    let mut checked = 0;
    for stem in STEMS {
        let manifest = read_json("MANIFEST.json");
        for r in manifest["files"][format!("{stem}.jsonl")]["runs"].as_array().unwrap() {
            if r["command"] != "prepare-branch" {
                continue;
            }
            let output = r["output"].as_str().unwrap();
            let want = read_json(output);
            let messages = want["messages"].as_array().unwrap();
            let total: u64 = messages.iter().map(estimate_tokens).sum();
            assert_eq!(want["totalTokens"], total, "{output}");
            let mut ops = FileOps::new();
            messages.iter().for_each(|m| extract_file_ops_from_message(m, &mut ops));
            assert_same(output, &want["fileOps"], &ops_json(&ops));
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}

/// Compaction preparation: `tokensBefore` is the context estimate of the path
/// from the last compaction on, and the file operations are the tool calls of
/// the messages to summarize and of the turn prefix.
#[test]
fn compaction_preparation_tokens_and_file_ops_match_the_reference() {
    let mut checked = 0;
    for stem in STEMS {
        let es = entries(stem);
        let by_id: HashMap<&str, &Entry> = es.iter().map(|e| (e.id.as_str(), e)).collect();
        let path = walk_to_root(es.last().unwrap(), |id| by_id.get(id).copied());
        let prev = path.iter().rposition(|e| matches!(e.kind, EntryKind::Compaction(_)));
        let messages = build_from_path(&path[prev.unwrap_or(0)..]).messages;
        let tokens = estimate_context_tokens(&messages);
        let manifest = read_json("MANIFEST.json");
        for r in manifest["files"][format!("{stem}.jsonl")]["runs"].as_array().unwrap() {
            if r["command"] != "prepare-compaction" {
                continue;
            }
            let output = r["output"].as_str().unwrap();
            let want = read_json(output);
            assert_eq!(want["tokensBefore"], tokens.tokens, "{output}: {tokens:?}");
            let mut ops = FileOps::new();
            for key in ["messagesToSummarize", "turnPrefixMessages"] {
                for m in want[key].as_array().map_or(&[][..], Vec::as_slice) {
                    extract_file_ops_from_message(m, &mut ops);
                }
            }
            assert_same(output, &want["fileOps"], &ops_json(&ops));
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}
