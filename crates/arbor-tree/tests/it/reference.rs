//! Agreement with the reference implementation's outputs in fixtures/pi.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use arbor_tree::{read_session_info, Session, Tree, TreeNode};
use serde_json::{json, Value};

use crate::{fixtures, opts};
use arbor_tree::OpenMode;

use arbor_test_support::big_stack;
use arbor_test_support::oracle::{load, reduce_tree};

fn open(stem: &str) -> Session {
    Session::open(&fixtures().join("pi").join(format!("{stem}.jsonl")), OpenMode::ReadOnly, opts()).unwrap()
}

fn manifest_runs(stem: &str, command: &str) -> Vec<(Vec<String>, String)> {
    let m = load("MANIFEST.json");
    m["files"][format!("{stem}.jsonl")]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["command"] == command && r["error"].is_null())
        .map(|r| {
            let args = r["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
            (args, r["output"].as_str().unwrap().to_owned())
        })
        .collect()
}

const STEMS: [&str; 2] = ["large-session", "before-compaction"];

fn reduce(tree: &Tree<'_>, nodes: Vec<TreeNode<'_>>) -> Value {
    // Iterative post-order so the deep chains of the fixtures cannot overflow the stack.
    let mut done: BTreeMap<arbor_tree::Position, Value> = BTreeMap::new();
    let mut stack: Vec<(TreeNode<'_>, bool)> = nodes.iter().rev().map(|n| (*n, false)).collect();
    while let Some((n, expanded)) = stack.pop() {
        let kids: Vec<TreeNode<'_>> = tree.children(&n).map(Result::unwrap).collect();
        if !expanded {
            stack.push((n, true));
            stack.extend(kids.iter().rev().map(|k| (*k, false)));
            continue;
        }
        let children: Vec<Value> = kids.iter().map(|k| done.remove(&k.position).unwrap()).collect();
        done.insert(
            n.position,
            json!({"id": n.entry.id, "type": n.entry.entry_type(), "label": n.label, "children": children}),
        );
    }
    Value::Array(nodes.iter().map(|n| done.remove(&n.position).unwrap()).collect())
}

#[test]
fn dump_equals_reference() {
    for stem in STEMS {
        let s = open(stem);
        let expected = load(&format!("{stem}.dump.json"));
        let entries: Vec<Value> =
            s.entries_json().map(Result::unwrap).map(|(_, j)| serde_json::from_str(j).unwrap()).collect();
        assert_eq!(s.header().to_value(), expected["header"], "{stem} header");
        assert_eq!(entries.len(), expected["entries"].as_array().unwrap().len());
        for (i, (a, b)) in entries.iter().zip(expected["entries"].as_array().unwrap()).enumerate() {
            assert_eq!(a, b, "{stem} entry {i}");
        }
        assert_eq!(json!(s.leaf_id()), expected["leafId"], "{stem} leaf");
    }
}

/// Runs `f` on a thread with a large stack: the fixtures' trees are ~1000
/// levels deep and `serde_json::Value` compares and drops recursively.
#[test]
fn tree_equals_reference() {
    big_stack(tree_equals_reference_inner);
}

fn tree_equals_reference_inner() {
    for stem in STEMS {
        let s = open(stem);
        let tree = s.get_tree();
        let got = reduce(&tree, tree.roots().map(Result::unwrap).collect());
        assert_eq!(got, load(&format!("{stem}.tree.json")), "{stem}");
    }
}

#[test]
fn tree_json_round_trips_to_the_reference_shape() {
    big_stack(tree_json_inner);
}

fn tree_json_inner() {
    for stem in STEMS {
        let s = open(stem);
        let mut out = vec![];
        s.get_tree().write_json(&mut out).unwrap();
        let mut de = serde_json::Deserializer::from_slice(&out);
        de.disable_recursion_limit();
        let v: Value = serde::Deserialize::deserialize(&mut de).unwrap();
        // Reduce the full getTree() JSON the way the oracle was reduced.
        let reduced = reduce_tree(&v);
        assert_eq!(reduced, load(&format!("{stem}.tree.json")), "{stem}");
    }
}

#[test]
fn branches_equal_reference() {
    for stem in STEMS {
        let s = open(stem);
        let runs = manifest_runs(stem, "branch");
        assert!(runs.len() >= 3, "{stem}: {runs:?}");
        for (args, output) in runs {
            let got: Vec<&str> =
                s.get_branch(args.first().map(String::as_str)).unwrap().iter().map(|e| e.id.as_str()).collect();
            assert_eq!(json!(got), load(&output), "{stem} {args:?}");
        }
    }
}

#[test]
fn labels_equal_reference() {
    for stem in STEMS {
        let s = open(stem);
        let got: serde_json::Map<String, Value> = s.labels().unwrap().map(|(k, v)| (k.to_owned(), json!(v))).collect();
        assert_eq!(Value::Object(got), load(&format!("{stem}.labels.json")));
    }
}

#[test]
fn listing_info_equals_reference() {
    for stem in STEMS {
        let p = fixtures().join("pi").join(format!("{stem}.jsonl"));
        let info = read_session_info(fs::File::open(&p).unwrap(), &p, None).unwrap().unwrap();
        let mut got = serde_json::to_value(&info).unwrap();
        got["path"] = json!("<path>");
        got["messageCount"] = json!(info.message_count);
        let expected = load(&format!("{stem}.info.json"));
        assert_eq!(got, expected["listInfo"], "{stem}");
        let s = open(stem);
        assert_eq!(json!(s.session_name().unwrap()), expected["sessionName"]);
        assert_eq!(json!(s.session_id()), expected["sessionId"]);
        assert_eq!(json!(s.cwd()), expected["cwd"]);
    }
}

fn mask(mut v: Value) -> Value {
    for k in ["id", "timestamp", "parentSession"] {
        if v.get(k).is_some() {
            v[k] = json!("<masked>");
        }
    }
    v
}

#[test]
fn branched_sessions_equal_reference() {
    for stem in STEMS {
        for (args, output) in manifest_runs(stem, "branched") {
            let dir = tempfile::tempdir().unwrap();
            let src = dir.path().join("src.jsonl");
            fs::copy(fixtures().join("pi").join(format!("{stem}.jsonl")), &src).unwrap();
            let o = arbor_tree::SessionOptions { session_dir: Some(dir.path().into()), ..opts() };
            let mut s = Session::open(&src, OpenMode::Write, o).unwrap();
            let new_path = s.create_branched_session(&args[0]).unwrap().unwrap();
            let lines: Vec<Value> =
                fs::read_to_string(&new_path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            let expected = load(&output);
            assert_eq!(mask(lines[0].clone()), mask(expected["header"].clone()), "{stem} {args:?} header");
            assert_eq!(lines[0]["parentSession"], json!(src.to_string_lossy()), "parentSession is the old file");
            assert_eq!(&lines[1..], expected["entries"].as_array().unwrap().as_slice(), "{stem} {args:?}");
            assert!(Path::new(&new_path).starts_with(dir.path()));
        }
    }
}

#[test]
fn reading_does_not_rewrite_but_the_first_write_migrates() {
    let dir = tempfile::tempdir().unwrap();
    for stem in STEMS {
        let src = dir.path().join(format!("{stem}.jsonl"));
        fs::copy(fixtures().join("pi").join(format!("{stem}.jsonl")), &src).unwrap();
        let before = fs::read(&src).unwrap();
        let s = Session::open(&src, OpenMode::Write, opts()).unwrap();
        assert!(s.migration().migrated());
        assert_eq!(fs::read(&src).unwrap(), before, "opening never writes");
        drop(s);
        let mut s = Session::open(&src, OpenMode::Write, opts()).unwrap();
        let leaf = s.leaf_id().unwrap().to_owned();
        s.append_label_change(&leaf, Some("checked")).unwrap();
        drop(s);
        // The reference's `open` output shows the file as pi rewrites it on load.
        let expected = load(&format!("{stem}.open.json"));
        let after = fs::read_to_string(&src).unwrap();
        let lines: Vec<Value> = after.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let want: Vec<Value> = expected["fileAfterLines"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l.as_str().filter(|l| !l.is_empty()))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(&lines[..want.len()], want.as_slice(), "{stem}: the migrated file equals pi's rewrite");
        assert_eq!(lines.len(), want.len() + 1, "plus the label");
        assert_eq!(lines.last().unwrap()["label"], json!("checked"));
    }
}
