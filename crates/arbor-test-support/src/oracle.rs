//! The oracle: pi's own outputs on real session files, recorded in
//! `fixtures/pi/` (see `fixtures/pi/README.md`), and the helpers that compare
//! Arbor's values with them.

use std::path::PathBuf;

use serde_json::{json, Value};

/// `fixtures/pi/`.
pub fn dir() -> PathBuf {
    crate::fixtures().join("pi")
}

/// A recorded output (`fixtures/pi/NAME`), parsed without a recursion limit
/// (the recorded trees nest about a thousand levels deep).
pub fn load(name: &str) -> Value {
    let p = dir().join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// pi's `getTree()` JSON reduced the way the oracle's trees were recorded:
/// `{id, type, label, children}` per node.
pub fn reduce_tree(nodes: &Value) -> Value {
    Value::Array(
        nodes
            .as_array()
            .expect("a list of tree nodes")
            .iter()
            .map(|n| {
                json!({"id": n["entry"]["id"], "type": n["entry"]["type"], "label": n.get("label"),
                       "children": reduce_tree(&n["children"])})
            })
            .collect(),
    )
}

/// The JSON pointer of the first place where two values differ, with both
/// sides, for readable failures (`None` when they are equal).
pub fn first_difference(want: &Value, got: &Value, at: String) -> Option<String> {
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

/// Fails the test at the first place where `got` differs from the reference's `want`.
pub fn assert_same(what: &str, want: &Value, got: &Value) {
    if let Some(d) = first_difference(want, got, String::new()) {
        panic!("{what}: differs from the reference at {d}");
    }
    assert_eq!(want, got, "{what}");
}

/// A value's JSON, cut to 200 characters.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 200 {
        format!("{}…", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}
