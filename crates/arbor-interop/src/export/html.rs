//! The whole tree as one self-contained HTML page: the session's data as
//! JSON in the page (escaped so no `</script>` can end it early), and inline
//! CSS and JavaScript that draw it lazily (a branch's entries are made when
//! it is opened, a long branch a chunk at a time), so a page of 10,000
//! entries opens as fast as one of ten. No network, no external fonts.

use std::collections::HashMap;
use std::io::Write;

use arbor_context::calculate_context_tokens;
use arbor_log::EntryKind;
use arbor_tree::{Position, Session};
use serde::Serialize;
use serde_json::{json, Value};

use super::text::{describe, Part};
use crate::InteropError;

const TEMPLATE: &str = include_str!("page.html");
const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// The page's data: the session, its entries and its branches.
#[derive(Debug, Serialize)]
struct Page {
    session: Info,
    /// The leaf's node, or -1.
    leaf: i64,
    nodes: Vec<Node>,
    /// Branches: maximal chains of entries with one child each.
    segs: Vec<Seg>,
    /// The segments that start at a root.
    roots: Vec<usize>,
}

#[derive(Debug, Serialize)]
struct Info {
    id: String,
    name: Option<String>,
    cwd: Option<String>,
    timestamp: String,
    file: Option<String>,
}

/// One entry (short keys: the page of a big session holds many).
#[derive(Debug, Serialize)]
struct Node {
    /// Id.
    i: String,
    /// Kind: a role for messages (`user`, `assistant`, `toolResult`, …), else the entry type.
    k: String,
    /// Heading.
    h: String,
    /// Time.
    t: String,
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    l: Option<String>,
    /// Parts: `["t", text]`, `["k", thinking]`, `["c", name, id, arguments]`, `["o", output]`, `["i", mime]`.
    x: Vec<Value>,
    /// A failed tool result.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    e: bool,
    /// Part of what the model sees.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    m: bool,
    /// Its segment.
    s: usize,
}

/// One branch segment and its totals: its own, and from the root to its end (`p…`).
#[derive(Debug, Serialize, Default)]
struct Seg {
    /// Nodes, in order.
    n: Vec<usize>,
    /// Child segments, oldest first.
    k: Vec<usize>,
    /// On the active path.
    a: bool,
    msgs: u64,
    tok: u64,
    cost: f64,
    pmsgs: u64,
    ptok: u64,
    pcost: f64,
}

/// Writes the page of the whole tree of `s`.
pub fn export_html(s: &Session, out: &mut dyn Write) -> Result<(), InteropError> {
    let page = build(s);
    let data = safe_json(&arbor_log::json::to_string(&page).unwrap_or_else(|_| "{}".into()));
    let title = html_escape(&page.session.name.clone().unwrap_or_else(|| format!("Session {}", page.session.id)));
    let html = TEMPLATE.replacen("{{TITLE}}", &title, 1).replacen("{{CSS}}", CSS, 1).replacen("{{JS}}", JS, 1);
    let (before, after) = html.split_once("{{DATA}}").unwrap_or((&html, ""));
    let io = |e| InteropError::io(s.session_file().unwrap_or(s.session_dir()), e);
    out.write_all(before.as_bytes()).map_err(io)?;
    out.write_all(data.as_bytes()).map_err(io)?;
    out.write_all(after.as_bytes()).map_err(io)
}

fn build(s: &Session) -> Page {
    let h = s.header();
    let session = Info {
        id: h.id.clone(),
        name: s.session_name().map(str::to_owned),
        cwd: h.cwd.clone(),
        timestamp: h.timestamp.clone(),
        file: s.session_file().map(|p| p.display().to_string()),
    };
    let tree = s.get_tree();
    let active: std::collections::HashSet<Position> = s.branch_positions(None).into_iter().collect();
    let mut node_of: HashMap<Position, usize> = HashMap::new();
    let mut nodes = Vec::new();
    let mut segs: Vec<Seg> = Vec::new();
    let mut roots = Vec::new();
    let mut usage: Vec<(u64, u64, f64)> = Vec::new();
    // (first entry, parent segment)
    let mut stack: Vec<(Position, Option<usize>)> = tree.root_positions().iter().rev().map(|&r| (r, None)).collect();
    while let Some((start, parent)) = stack.pop() {
        let seg = segs.len();
        segs.push(Seg::default());
        match parent {
            Some(p) => segs[p].k.push(seg),
            None => roots.push(seg),
        }
        let mut at = start;
        while let Some(e) = s.entry_at(at) {
            node_of.insert(at, nodes.len());
            let (node, counts) = node(s, e, seg);
            nodes.push(node);
            usage.push(counts);
            segs[seg].n.push(nodes.len() - 1);
            segs[seg].a |= active.contains(&at);
            match tree.child_positions(at) {
                [only] => at = *only,
                kids => {
                    stack.extend(kids.iter().rev().map(|&k| (k, Some(seg))));
                    break;
                }
            }
        }
    }
    totals(&mut segs, &roots, &usage);
    let leaf = s.leaf_id().and_then(|id| s.position_of(id)).and_then(|p| node_of.get(&p)).map_or(-1, |&n| n as i64);
    Page { session, leaf, nodes, segs, roots }
}

/// The node of an entry, and its (messages, tokens, cost).
fn node(s: &Session, e: &arbor_log::Entry, seg: usize) -> (Node, (u64, u64, f64)) {
    let d = describe(e);
    let x = d
        .parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => json!(["t", t]),
            Part::Thinking(t) => json!(["k", t]),
            Part::Call { id, name, arguments } => json!(["c", name, id, arguments]),
            Part::Output(t) => json!(["o", t]),
            Part::Image(m) => json!(["i", m]),
        })
        .collect();
    let mut counts = (u64::from(d.conversational && !matches!(e.kind, EntryKind::Compaction(_))), 0, 0.0);
    if let Some(u) = e.message().and_then(|m| m.message.get("usage")) {
        counts.1 = calculate_context_tokens(u);
        counts.2 = u.get("cost").and_then(|c| c.get("total")).and_then(Value::as_f64).unwrap_or(0.0);
    }
    let node = Node {
        i: e.id.clone(),
        k: d.kind.as_str().to_owned(),
        h: d.heading,
        t: e.timestamp.clone(),
        l: s.get_label(&e.id).map(str::to_owned),
        x,
        e: d.error,
        m: d.conversational,
        s: seg,
    };
    (node, counts)
}

/// Fills each segment's own totals and its totals from the root.
fn totals(segs: &mut [Seg], roots: &[usize], usage: &[(u64, u64, f64)]) {
    for seg in segs.iter_mut() {
        for &n in &seg.n {
            seg.msgs += usage[n].0;
            seg.tok += usage[n].1;
            seg.cost += usage[n].2;
        }
    }
    let mut stack: Vec<(usize, u64, u64, f64)> = roots.iter().map(|&r| (r, 0, 0, 0.0)).collect();
    while let Some((i, m, t, c)) = stack.pop() {
        let seg = &mut segs[i];
        seg.pmsgs = m + seg.msgs;
        seg.ptok = t + seg.tok;
        seg.pcost = c + seg.cost;
        let next = (seg.pmsgs, seg.ptok, seg.pcost);
        stack.extend(seg.k.iter().map(|&k| (k, next.0, next.1, next.2)));
    }
}

/// JSON that can sit inside a `<script>` element: `<`, `>` and `&` (which
/// could close the element or open a comment) and the JavaScript line
/// separators written as escapes. They only occur inside strings, where the
/// escapes mean the same characters.
fn safe_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 64);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_closers_are_escaped() {
        let raw = serde_json::to_string(&json!({"t": "</script><!-- & \u{2028}"})).unwrap();
        let safe = safe_json(&raw);
        assert!(!safe.contains("</script"), "{safe}");
        assert!(!safe.contains("<!--"), "{safe}");
        let back: Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["t"], "</script><!-- & \u{2028}");
    }
}
