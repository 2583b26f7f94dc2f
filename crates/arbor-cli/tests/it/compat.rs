//! The cases of issue #14 through the command line, each on the smallest file
//! that shows it (`fixtures/compat/`, written by its `make_fixtures.py`):
//! `dump`, `tree`, `path`, `context --json`, `--llm` and `fork --at` read
//! every line pi reads, write what pi's `JSON.stringify` writes, and a fork
//! keeps the whole history. `cargo xtask pi-diff --file fixtures/compat/…`
//! holds the same files against pi itself.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

use crate::{arbor, fixtures, stderr, stdout};

fn compat(name: &str) -> PathBuf {
    fixtures().join("compat").join(name)
}

/// A command's JSON output, read as JavaScript reads it (lone surrogates kept).
fn js(o: &Output) -> Value {
    assert!(o.status.success(), "{}", stderr(o));
    arbor_log::json::parse(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

fn run(args: &[&str]) -> Output {
    arbor(args)
}

/// Every command on `file`; its bytes are the same afterwards. Returns (dump, tree, context, llm).
fn every_command(file: &Path) -> (Value, Value, Value, Value) {
    let before = std::fs::read(file).unwrap();
    let f = file.to_str().unwrap();
    let dump = js(&run(&["dump", f, "--json"]));
    let tree = js(&run(&["tree", f, "--json"]));
    let path = js(&run(&["path", f, "--json"]));
    let context = js(&run(&["context", f, "--json"]));
    let llm = js(&run(&["context", f, "--llm", "--json"]));
    for out in [run(&["dump", f]), run(&["tree", f]), run(&["context", f])] {
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert!(path.is_array(), "{path}");
    assert_eq!(std::fs::read(file).unwrap(), before, "reading changed {}", file.display());
    (dump, tree, context, llm)
}

/// `fork FILE --at ID` into a fresh directory: the new file's path.
fn fork(file: &Path, at: &str, dir: &Path) -> PathBuf {
    let o = run(&["fork", file.to_str().unwrap(), "--at", at, "--sessions-dir", dir.to_str().unwrap(), "--json"]);
    PathBuf::from(js(&o)["path"].as_str().unwrap())
}

fn context_at(file: &Path, leaf: Option<&str>) -> Value {
    let mut args = vec!["context", file.to_str().unwrap(), "--json"];
    args.extend(leaf.map(|l| ["--leaf", l]).into_iter().flatten());
    js(&run(&args))
}

fn ids(entries: &Value) -> Vec<&str> {
    entries.as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect()
}

#[test]
fn case_1_lone_surrogates_are_read_and_written_back_as_escapes() {
    let file = compat("lone-surrogates.jsonl");
    let (dump, tree, context, llm) = every_command(&file);
    assert_eq!(ids(&dump["entries"]), ["u1", "a1", "u2"]);
    assert_eq!(tree[0]["children"][0]["children"][0]["entry"]["id"], "u2");
    assert_eq!(context["messages"].as_array().unwrap().len(), 3);
    assert_eq!(llm.as_array().unwrap().len(), 3);
    // JSON.stringify's text: lone halves as escapes, a pair as its character, never U+FFFD.
    let f = file.to_str().unwrap();
    for args in [
        &["context", f, "--json"][..],
        &["context", f, "--llm", "--json"],
        &["dump", f, "--json"],
        &["path", f, "u2", "--json"],
        &["tree", f, "--json"],
    ] {
        let text = stdout(&run(args));
        assert!(text.contains(r#""cut in half: \ud83d""#), "{args:?}: {text}");
        assert!(text.contains(r#""\ude00 then reversed \ude00\ud83d and a pair 😀""#), "{args:?}: {text}");
        assert!(!text.contains('\u{FFFD}'), "{args:?}: {text}");
    }
    let dir = tempfile::tempdir().unwrap();
    let forked = fork(&file, "u2", dir.path());
    let text = std::fs::read_to_string(&forked).unwrap();
    assert!(text.contains(r#""cut in half: \ud83d""#), "{text}");
    assert_eq!(context_at(&forked, None), context);
    // For people, a lone surrogate shows as U+FFFD.
    assert!(stdout(&run(&["dump", f])).contains("cut in half: \u{FFFD}"));
}

#[test]
fn case_2_numbers_beyond_f64_read_as_javascript_reads_them() {
    let file = compat("big-numbers.jsonl");
    let (dump, _, context, llm) = every_command(&file);
    assert_eq!(ids(&dump["entries"]), ["u1", "a1", "c1", "u2"]);
    // ±Infinity, written as JSON.stringify writes it: null.
    assert_eq!(dump["entries"][1]["message"]["usage"]["input"], Value::Null);
    assert_eq!(dump["entries"][1]["message"]["usage"]["output"], Value::Null);
    assert_eq!(dump["entries"][2]["tokensBefore"], Value::Null);
    let messages = context["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{context}");
    assert_eq!(messages[0]["role"], "compactionSummary");
    assert!(messages[0].as_object().unwrap().contains_key("tokensBefore"));
    assert_eq!(messages[0]["tokensBefore"], Value::Null);
    assert_eq!(messages[1]["usage"]["input"], Value::Null);
    assert_eq!(llm.as_array().unwrap().len(), 3);
    let dir = tempfile::tempdir().unwrap();
    let forked = std::fs::read_to_string(fork(&file, "u2", dir.path())).unwrap();
    assert!(forked.contains(r#""tokensBefore":null"#) && !forked.contains("1e999"), "{forked}");
    // The file keeps its bytes.
    assert!(std::fs::read_to_string(&file).unwrap().contains(r#""input":1e400,"output":-1e400"#));
}

#[test]
fn case_3_any_depth_is_read() {
    let (dump, _, context, llm) = every_command(&compat("deep-nesting.jsonl"));
    assert_eq!(ids(&dump["entries"]), ["u1", "t1", "u2"]);
    assert_eq!(context["messages"].as_array().unwrap().len(), 3);
    assert_eq!(llm.as_array().unwrap().len(), 3);

    // 100,000 levels, through every command and a fork.
    let depth = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deep.jsonl");
    let text = std::fs::read_to_string(compat("deep-nesting.jsonl")).unwrap();
    let deep = format!("{}\"bottom\"{}", "[".repeat(depth), "]".repeat(depth));
    std::fs::write(&file, text.replace(&format!("{}\"bottom\"{}", "[".repeat(200), "]".repeat(200)), &deep)).unwrap();
    let (dump, _, context, _) = every_command(&file);
    assert_eq!(ids(&dump["entries"]), ["u1", "t1", "u2"]);
    assert_eq!(context["messages"].as_array().unwrap().len(), 3);
    let f = file.to_str().unwrap();
    for args in [&["context", f, "--json"][..], &["context", f, "--llm", "--json"], &["path", f, "--json"]] {
        assert!(stdout(&run(args)).contains(&format!("\"details\":{deep}")), "{args:?}");
    }
    let forked = std::fs::read_to_string(fork(&file, "u2", dir.path())).unwrap();
    assert!(forked.contains(&deep));
}

#[test]
fn case_4_a_parent_id_of_another_type_is_a_root_as_in_pi() {
    let file = compat("parent-not-a-string.jsonl");
    let (dump, tree, context, llm) = every_command(&file);
    assert_eq!(ids(&dump["entries"]), ["u1", "u2", "u3", "u4", "u5"]);
    assert_eq!(dump["leafId"], "u5");
    assert_eq!(tree.as_array().unwrap().len(), 5, "every one a root");
    assert_eq!(ids(&js(&run(&["path", file.to_str().unwrap(), "--json"]))), ["u5"]);
    assert_eq!(context["messages"], json!([dump["entries"][4]["message"]]));
    assert_eq!(llm.as_array().unwrap().len(), 1);
    let dir = tempfile::tempdir().unwrap();
    let forked = fork(&file, "u3", dir.path());
    assert_eq!(context_at(&forked, None), context_at(&file, Some("u3")));
    // `check` warns, once per such parent.
    let check = run(&["check", file.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(1));
    assert_eq!(stdout(&check).matches("warning[parent-not-a-string]").count(), 4, "{}", stdout(&check));
}

#[test]
fn case_5_a_label_that_is_not_a_string_follows_javascripts_truth() {
    let file = compat("label-not-a-string.jsonl");
    let (_, tree, context, _) = every_command(&file);
    // 42 set u1's label and 0 cleared it; {} labels a1, with the time it was set.
    let u1 = &tree[0];
    let a1 = &u1["children"][0]["children"][0];
    assert_eq!(u1["entry"]["id"], "u1");
    assert!(u1.get("label").is_none(), "{u1}");
    assert_eq!(a1["entry"]["id"], "a1");
    assert_eq!(a1["label"], json!({}));
    assert_eq!(a1["labelTimestamp"], "2026-01-01T00:00:04.000Z");
    // A fork copies no label entry and re-creates the set label as it was.
    let dir = tempfile::tempdir().unwrap();
    let forked = fork(&file, "u2", dir.path());
    let entries = js(&run(&["dump", forked.to_str().unwrap(), "--json"]))["entries"].clone();
    let kinds: Vec<&str> = entries.as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "message", "message", "label"]);
    assert_eq!(entries[3]["targetId"], "a1");
    assert_eq!(entries[3]["label"], json!({}));
    assert_eq!(entries[3]["timestamp"], "2026-01-01T00:00:04.000Z");
    assert_eq!(context_at(&forked, None), context);
}

#[test]
fn case_6_absent_fields_stay_absent_in_the_context() {
    let (_, _, context, llm) = every_command(&compat("degenerate-entries.jsonl"));
    // No `content` or `display` on the custom message, `model` without `modelId`,
    // and no `thinkingLevel` at all: the last change had none.
    assert_eq!(
        context,
        json!({"messages": [{"role": "custom", "customType": "note", "timestamp": 1_767_225_603_000_i64}],
               "model": {"provider": "anthropic"}})
    );
    assert_eq!(llm, json!([{"role": "user", "timestamp": 1_767_225_603_000_i64}]));
}

#[test]
fn case_7_a_fork_keeps_the_whole_history() {
    let file = compat("fork-history.jsonl");
    let (_, _, context, _) = every_command(&file);
    assert_eq!(context["messages"].as_array().unwrap().len(), 5);
    let dir = tempfile::tempdir().unwrap();
    let forked = fork(&file, "u3", dir.path());
    assert_eq!(context_at(&forked, None), context, "pi 0.73.1's fork gives only u3");
    // The kept entries are re-linked across the labels left out; the labels come back at the end.
    let entries = js(&run(&["dump", forked.to_str().unwrap(), "--json"]))["entries"].clone();
    let links: Vec<(&str, Value)> =
        entries.as_array().unwrap().iter().map(|e| (e["id"].as_str().unwrap(), e["parentId"].clone())).collect();
    assert_eq!(
        &links[..5],
        [("u1", Value::Null), ("a1", "u1".into()), ("u2", "a1".into()), ("a2", "u2".into()), ("u3", "a2".into())]
    );
    assert_eq!(entries.as_array().unwrap().len(), 7);
}

#[test]
fn case_8_a_line_starting_with_a_bom_mid_file_is_read() {
    let file = compat("bom-mid-file.jsonl");
    let (dump, _, context, _) = every_command(&file);
    assert_eq!(ids(&dump["entries"]), ["u1", "a1", "u2"]);
    assert_eq!(ids(&js(&run(&["path", file.to_str().unwrap(), "--json"]))), ["u1", "a1", "u2"]);
    assert_eq!(context["messages"].as_array().unwrap().len(), 3);
}

/// For every fixture with labels: a fork at the leaf and at every user
/// message of the active path gives the model exactly the context the
/// original gives at that entry.
#[test]
fn a_fork_gives_the_context_of_the_original_at_every_labelled_fixture() {
    let mut files = arbor_test_support::jsonl_under(&fixtures().join("logs"));
    files.extend(arbor_test_support::jsonl_under(&fixtures().join("compat")));
    files.push(fixtures().join("demo").join("demo.jsonl"));
    let dir = tempfile::tempdir().unwrap();
    let (mut checked, mut labelled) = (0, 0);
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        if !text.contains(r#""type":"label""#) {
            continue;
        }
        let f = file.to_str().unwrap();
        let dump = run(&["dump", f, "--json"]);
        if !dump.status.success() {
            continue;
        }
        labelled += 1;
        let path = js(&run(&["path", f, "--json"]));
        let mut targets: Vec<String> = js(&dump)["leafId"].as_str().map(str::to_owned).into_iter().collect();
        targets.extend(
            path.as_array()
                .unwrap()
                .iter()
                .filter(|e| e["type"] == "message" && e["message"]["role"] == "user")
                .map(|e| e["id"].as_str().unwrap().to_owned()),
        );
        for at in &targets {
            let forked = fork(&file, at, dir.path());
            assert_eq!(context_at(&forked, None), context_at(&file, Some(at)), "{} forked at {at}", file.display());
            checked += 1;
        }
    }
    assert!(labelled >= 10 && checked >= 30, "{labelled} labelled fixtures, {checked} forks");
}
