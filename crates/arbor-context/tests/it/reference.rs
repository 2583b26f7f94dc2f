//! Agreement with the reference: pi v0.58.3's own outputs on two real
//! sessions (`fixtures/pi`), compared as parsed JSON, at every leaf the
//! MANIFEST ran.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;

use arbor_context::{
    build_context_from_path, build_session_context, convert_to_llm, estimate_context_tokens, estimate_tokens,
    extract_file_ops_from_message, walk_to_root, FileOps, Leaf,
};
use arbor_log::{CounterIds, Entry, EntryKind, SessionLog};
use serde_json::Value;

const STEMS: [&str; 2] = ["large-session", "before-compaction"];

/// `fixtures/pi` of the workspace, or the shared copy while it is being copied in.
fn fixtures() -> PathBuf {
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pi");
    if local.join("MANIFEST.json").is_file() && STEMS.iter().all(|s| local.join(format!("{s}.jsonl")).is_file()) {
        return local;
    }
    PathBuf::from("/work/shared/fixtures/pi")
}

fn read_json(name: &str) -> Value {
    let path = fixtures().join(name);
    let file = File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_reader(std::io::BufReader::new(file)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

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

/// The JSON pointer of the first place where two values differ, with both sides.
fn first_difference(want: &Value, got: &Value, at: String) -> Option<String> {
    match (want, got) {
        (Value::Array(a), Value::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if let Some(d) = first_difference(x, y, format!("{at}/{i}")) {
                    return Some(d);
                }
            }
            (a.len() != b.len()).then(|| format!("{at}: length {} (reference) vs {} (ours)", a.len(), b.len()))
        }
        (Value::Object(a), Value::Object(b)) => {
            for (k, x) in a {
                match b.get(k) {
                    None => return Some(format!("{at}/{k}: missing in ours (reference: {})", short(x))),
                    Some(y) => {
                        if let Some(d) = first_difference(x, y, format!("{at}/{k}")) {
                            return Some(d);
                        }
                    }
                }
            }
            b.keys().find(|k| !a.contains_key(*k)).map(|k| format!("{at}/{k}: only in ours ({})", short(&b[k])))
        }
        _ => (want != got).then(|| format!("{at}: reference {} vs ours {}", short(want), short(got))),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 200 {
        format!("{}…", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}

fn assert_same(what: &str, want: &Value, got: &Value) {
    if let Some(d) = first_difference(want, got, String::new()) {
        panic!("{what}: differs from the reference at {d}");
    }
    assert_eq!(want, got, "{what}");
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
            let got = build_session_context(&es, leaf_of(&leaf)).to_json();
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
            let ctx = build_session_context(&es, leaf_of(&leaf));
            let got = Value::Array(convert_to_llm(&ctx.messages));
            assert_same(&output, &read_json(&output), &got);
            checked += 1;
        }
    }
    assert_eq!(checked, 6);
}

/// The file operations as the reference prints them: each set sorted.
fn ops_json(ops: &FileOps) -> Value {
    let sorted = |set: &arbor_context::PathSet| {
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
        let messages = build_context_from_path(&path[prev.unwrap_or(0)..]).messages;
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
