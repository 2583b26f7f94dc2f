//! `arbor export` as Markdown, HTML and JSONL.

use std::fs;

use arbor_interop::{export_html, export_jsonl, export_markdown, Format, Scope};
use serde_json::Value;

use crate::{fixtures, import, open, transcript};

fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    f(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn markdown_of_the_demos_path() {
    let s = open(&fixtures().join("demo/demo.jsonl"));
    let md = text(|o| export_markdown(&s, None, o).unwrap());
    insta::assert_snapshot!(md);
}

#[test]
fn markdown_of_another_path_and_an_unknown_leaf() {
    let s = open(&fixtures().join("demo/demo.jsonl"));
    let md = text(|o| export_markdown(&s, Some("4f487dd5"), o).unwrap());
    assert!(md.contains("the path to `4f487dd5`"), "{md}");
    assert!(md.contains("Also strip punctuation"), "{md}");
    assert!(!md.contains("Document --top"), "the other branch is not on this path");
    let e = export_markdown(&s, Some("nothere"), &mut Vec::new()).unwrap_err().to_string();
    assert!(e.ends_with("Entry nothere not found"), "{e}");
}

#[test]
fn markdown_of_an_imported_session_folds_tool_calls_and_shows_images() {
    let root = tempfile::tempdir().unwrap();
    let r = import(Format::Claude, &[transcript("claude/branches.jsonl")], root.path());
    let s = open(&r[0].sessions[0].path);
    let first = s
        .entries()
        .find(|e| e.message().is_some_and(|m| m.message.to_string().contains("Should I strip it?")))
        .unwrap();
    let md = text(|o| export_markdown(&s, Some(&first.id), o).unwrap());
    assert!(md.contains("<summary>Tool call: Grep <code>toolu_01Grep</code></summary>"), "{md}");
    assert!(md.contains("*[image: image/png]*"), "{md}");
    assert!(md.contains("<summary>Thinking</summary>"), "{md}");
    assert!(!md.contains("file-history-snapshot"), "extension state is left out");
}

#[test]
fn jsonl_of_the_whole_demo_is_the_demo() {
    let path = fixtures().join("demo/demo.jsonl");
    let s = open(&path);
    let copy = text(|o| export_jsonl(&s, Scope::All, o).unwrap());
    assert_eq!(copy, fs::read_to_string(&path).unwrap());
}

#[test]
fn jsonl_of_a_path_keeps_the_labels_set_off_the_path_and_is_clean() {
    let s = open(&fixtures().join("demo/demo.jsonl"));
    let copy = text(|o| export_jsonl(&s, Scope::Path(Some("eb499f6b")), o).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("copy.jsonl");
    fs::write(&file, &copy).unwrap();
    assert!(arbor_tree::check_file(&file).unwrap().is_empty());
    let c = open(&file);
    assert_eq!(c.get_label("eb499f6b"), s.get_label("eb499f6b"));
    assert!(c.get_label("eb499f6b").is_some());
    let path_ids: Vec<&str> = s.get_branch(Some("eb499f6b")).iter().map(|e| e.id.as_str()).collect();
    let leaf_path: Vec<String> = c.get_branch(None).iter().map(|e| e.id.clone()).collect();
    assert!(leaf_path.starts_with(&path_ids.iter().map(|x| x.to_string()).collect::<Vec<_>>()));
    assert_eq!(c.header().id, s.header().id);
}

#[test]
fn jsonl_of_a_damaged_file_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["orphans.jsonl", "duplicate-ids.jsonl", "cycle.jsonl", "garbage-lines.jsonl"] {
        let src = fixtures().join("logs/err").join(name);
        if !src.exists() {
            continue;
        }
        let s = open(&src);
        let file = dir.path().join(name);
        fs::write(&file, text(|o| export_jsonl(&s, Scope::All, o).unwrap())).unwrap();
        let findings = arbor_tree::check_file(&file).unwrap();
        let bad: Vec<_> = findings.iter().filter(|f| f.code != "tool-call-without-result").collect();
        assert!(bad.is_empty(), "{name}: {bad:?}");
    }
}

/// The JSON in a page's data element.
pub fn page_data(html: &str) -> Value {
    let start = html.find("<script id=\"arbor-data\" type=\"application/json\">").unwrap();
    let rest = &html[start..];
    let body = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
    serde_json::from_str(body).unwrap()
}

#[test]
fn html_is_one_page_with_no_network_and_safely_embedded_data() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let mut demo = fs::read_to_string(fixtures().join("demo/demo.jsonl")).unwrap();
    // A message that tries to end the data element early.
    demo.push_str("{\"type\":\"message\",\"id\":\"e0e0e0e0\",\"parentId\":\"6a490938\",\"timestamp\":\"2026-03-14T10:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"</script><script>alert(1)</script> <!-- & \u{2028}\",\"timestamp\":1773482400000}}\n");
    fs::write(&file, demo).unwrap();
    let s = open(&file);
    let html = text(|o| export_html(&s, o).unwrap());
    assert_eq!(html.matches("</script>").count(), 2, "only the two elements' own ends");
    for external in ["http://", "https://", "@import", "url(", " src=", "<link"] {
        let outside_csp = html.replace("default-src 'none'", "");
        assert!(!outside_csp.contains(external), "{external} in the page");
    }
    let data = page_data(&html);
    let nodes = data["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 40);
    let last = nodes.iter().find(|n| n["i"] == "e0e0e0e0").unwrap();
    assert_eq!(last["x"][0][1], "</script><script>alert(1)</script> <!-- & \u{2028}");
    assert_eq!(data["nodes"][data["leaf"].as_u64().unwrap() as usize]["i"], "e0e0e0e0");
    // Three branches, the active one ends at the leaf.
    let segs = data["segs"].as_array().unwrap();
    let leaves: Vec<&Value> = segs.iter().filter(|s| s["k"].as_array().unwrap().is_empty()).collect();
    assert_eq!(leaves.len(), 3);
    assert_eq!(leaves.iter().filter(|s| s["a"] == true).count(), 1);
}

#[test]
fn html_totals_per_branch_add_up() {
    let s = open(&fixtures().join("demo/demo.jsonl"));
    let data = page_data(&text(|o| export_html(&s, o).unwrap()));
    let segs = data["segs"].as_array().unwrap();
    let own: f64 = segs.iter().map(|x| x["cost"].as_f64().unwrap()).sum();
    let expected: f64 =
        s.entries().filter_map(|e| e.message()).filter_map(|m| m.message["usage"]["cost"]["total"].as_f64()).sum();
    assert!((own - expected).abs() < 1e-9, "{own} {expected}");
    // A leaf branch's path totals are its ancestors' and its own.
    for (i, seg) in segs.iter().enumerate() {
        let parent = segs.iter().find(|p| p["k"].as_array().unwrap().iter().any(|k| k == i));
        let before = parent.map_or(0, |p| p["pmsgs"].as_u64().unwrap());
        assert_eq!(seg["pmsgs"].as_u64().unwrap(), before + seg["msgs"].as_u64().unwrap());
    }
}
