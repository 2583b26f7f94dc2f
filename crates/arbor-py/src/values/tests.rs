use super::*;

const LINES: [&str; 5] = [
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
    r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi \ud83d"}}"#,
    r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"n":1e400}}"#,
    r#"{"type":"message","id":"u2","parentId":7,"timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":"again"}}"#,
    r#"{"type":"label","id":"l1","parentId":"u2","timestamp":"2026-01-01T00:00:04.000Z","targetId":"u1","label":"start"}"#,
];

fn session(dir: &Path, mode: Mode) -> Session {
    let file = dir.join("s.jsonl");
    if !file.exists() {
        std::fs::write(&file, LINES.join("\n") + "\n").unwrap();
    }
    open(&file, mode, SessionOptions::default()).unwrap()
}

#[test]
fn rows_are_the_stored_entries_with_the_heads_the_tree_decided() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Mode::Read);
    let all: Vec<Position> = s.positions().collect();
    let rows = rows(&s, &all).unwrap();
    let ids: Vec<&str> = rows.heads.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["u1", "a1", "u2", "l1"]);
    // A parentId that is not a string is no parent.
    assert_eq!(rows.heads[2].parent_id, None);
    assert_eq!(rows.heads[3].entry_type, "label");
    // JavaScript's reading: the lone surrogate stays an escape, 1e400 is null.
    assert!(rows.json.contains(r#""content":"hi \ud83d""#), "{}", rows.json);
    assert!(rows.json.contains(r#""n":null"#), "{}", rows.json);
    let parsed = parse("rows", &rows.json).unwrap();
    assert_eq!(parsed.as_array().map(Vec::len), Some(4));
}

#[test]
fn paths_contexts_and_children_name_an_unknown_entry_with_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Mode::Read);
    let ids = |ps: Vec<Position>| -> Vec<String> { rows(&s, &ps).unwrap().heads.into_iter().map(|h| h.id).collect() };
    assert_eq!(ids(path(&s, Some("a1")).unwrap()), ["u1", "a1"]);
    assert_eq!(ids(children(&s, "u1").unwrap()), ["a1"]);
    let context = parse("context", &context_json(&s, Some("a1")).unwrap()).unwrap();
    assert_eq!(context["messages"].as_array().map(Vec::len), Some(2));
    // The context at another entry leaves the leaf where it is.
    assert_eq!(s.leaf_id(), Some("l1"));
    let e = path(&s, Some("nope")).unwrap_err();
    assert_eq!(e, Failure::NotFound(format!("{}: Entry nope not found", dir.path().join("s.jsonl").display())));
    assert!(matches!(context_json(&s, Some("nope")), Err(Failure::NotFound(_))));
    assert!(matches!(children(&s, "nope"), Err(Failure::NotFound(_))));
    assert_eq!(labels(&s).unwrap(), [("u1".to_owned(), "start".to_owned())]);
}

#[test]
fn appends_refuse_what_is_not_a_message_and_reads_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path(), Mode::Write);
    for bad in ["[1]", r#"{"content":"x"}"#, r#"{"role":3}"#, "{"] {
        assert!(matches!(append_message(&mut s, bad), Err(Failure::Invalid(_))), "{bad}");
    }
    let id = append_message(&mut s, &json_text(&messages::user("more", 1)).unwrap()).unwrap();
    assert_eq!(s.leaf_id(), Some(id.as_str()));
    assert!(matches!(set_label(&mut s, "nope", Some("x")), Err(Failure::NotFound(_))));
    drop(s);
    let mut r = session(dir.path(), Mode::Read);
    assert!(matches!(set_label(&mut r, "u1", None), Err(Failure::ReadOnly(_))));
    assert!(matches!(Mode::parse("rw"), Err(Failure::Invalid(_))));
}

/// Nests a flat tree as pi's `getTree()` (iteratively: children come after
/// their parent, so from the back each node is whole when it is placed).
fn nest(flat: Value) -> Value {
    let Value::Array(nodes) = flat else { panic!("not a list") };
    let mut kids: Vec<Vec<Value>> = vec![Vec::new(); nodes.len()];
    let mut roots = Vec::new();
    for (k, node) in nodes.iter().enumerate().rev() {
        let mut out = serde_json::Map::new();
        out.insert("entry".into(), node["entry"].clone());
        let mut children = std::mem::take(&mut kids[k]);
        children.reverse();
        out.insert("children".into(), Value::Array(children));
        for key in ["label", "labelTimestamp"] {
            if let Some(v) = node.get(key) {
                out.insert(key.into(), v.clone());
            }
        }
        let value = Value::Object(out);
        match node["parent"].as_u64() {
            Some(p) => kids[p as usize].push(value),
            None => roots.push(value),
        }
    }
    roots.reverse();
    Value::Array(roots)
}

#[test]
fn the_flat_tree_nests_into_get_tree_and_stays_one_level_deep() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(dir.path(), Mode::Read);
    let flat = parse("flat", &tree_flat_json(&s).unwrap()).unwrap();
    assert_eq!(flat[0]["label"], "start");
    assert_eq!(flat[0]["labelTimestamp"], "2026-01-01T00:00:04.000Z");
    assert_eq!(flat[1]["parent"], 0);
    assert_eq!(nest(flat), parse("tree", &tree_json(&s).unwrap()).unwrap());
    // A chain of 3,000 entries: one level, each node the child of the one before.
    let mut lines = vec![LINES[0].to_owned()];
    for k in 0..3000 {
        let parent = if k == 0 { "null".to_owned() } else { format!("\"e{}\"", k - 1) };
        lines.push(format!(
            r#"{{"type":"message","id":"e{k}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"m{k}"}}}}"#
        ));
    }
    let file = dir.path().join("deep.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let deep = open(&file, Mode::Read, SessionOptions::default()).unwrap();
    let flat = parse("flat", &tree_flat_json(&deep).unwrap()).unwrap();
    let nodes = flat.as_array().unwrap();
    assert_eq!(nodes.len(), 3000);
    assert!(nodes
        .iter()
        .enumerate()
        .all(|(k, n)| n["parent"] == if k == 0 { Value::Null } else { Value::from(k - 1) }));
    assert_eq!(nodes[2999]["entry"]["id"], "e2999");
}
