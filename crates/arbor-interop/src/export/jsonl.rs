//! A clean copy of a path or of the whole tree as pi v3 JSONL: what the
//! session holds after Arbor read it (migrated, the later of two lines with
//! one id, no unreadable lines), in a form `arbor check` finds clean.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use arbor_log::{EntryKind, IdGenerator, LabelEntry, SeededIds, CURRENT_VERSION};
use arbor_tree::{Position, Session};
use serde_json::{Map, Value};

use super::{path_to, Scope};
use crate::InteropError;

/// Writes the header and the entries of `scope`, one JSON object a line.
///
/// - [`Scope::All`]: every entry in file order; an entry whose parent is
///   missing, itself or part of a cycle becomes a root (as every reader shows
///   it), and a label whose target is missing is left out.
/// - [`Scope::Path`]: the entries from the root to the leaf, then a label
///   entry for each entry on the path whose label was set off the path, so the
///   copy shows the same labels. Its leaf is the copy's last entry.
///
/// The header keeps the session's id and is written as version 3.
pub fn export_jsonl(s: &Session, scope: Scope, out: &mut dyn Write) -> Result<(), InteropError> {
    let mut header = s.header().clone();
    header.version = Some(Value::from(CURRENT_VERSION));
    let io = |e| InteropError::io(s.session_file().unwrap_or(s.session_dir()), e);
    writeln!(out, "{}", text(&header.to_value())).map_err(io)?;
    let lines = match scope {
        Scope::All => whole_tree(s),
        Scope::Path(leaf) => path_copy(s, leaf)?,
    };
    for line in lines {
        writeln!(out, "{line}").map_err(io)?;
    }
    Ok(())
}

fn whole_tree(s: &Session) -> Vec<String> {
    let tree = s.get_tree();
    let mut parent: HashMap<Position, Position> = HashMap::new();
    let mut stack: Vec<Position> = tree.root_positions().to_vec();
    while let Some(i) = stack.pop() {
        for &c in tree.child_positions(i) {
            parent.insert(c, i);
            stack.push(c);
        }
    }
    let mut out = Vec::new();
    for i in s.positions() {
        let (Some(e), Some(json)) = (s.entry_at(i), s.json_at(i)) else { continue };
        if !s.is_live_at(i) {
            continue;
        }
        if let EntryKind::Label(l) = &e.kind {
            if s.get_entry(&l.target_id).is_none() {
                continue;
            }
        }
        let shown = parent.get(&i).and_then(|&p| s.id_at(p));
        if shown.as_deref() == e.parent_id.as_deref() {
            out.push(json.to_owned());
        } else {
            let mut fixed = e.clone();
            fixed.parent_id = shown.map(|p| p.to_string());
            out.push(text(&fixed.to_value()));
        }
    }
    out
}

fn path_copy(s: &Session, leaf: Option<&str>) -> Result<Vec<String>, InteropError> {
    let path = path_to(s, leaf)?;
    let mut out: Vec<String> =
        path.iter().map(|e| s.entry_json(&e.id).map_or_else(|| text(&e.to_value()), str::to_owned)).collect();
    // The label each target has in the copy: the last label entry on the path.
    let mut in_copy: HashMap<&str, Option<String>> = HashMap::new();
    for e in &path {
        if let EntryKind::Label(l) = &e.kind {
            in_copy.insert(l.target_id.as_str(), l.text().filter(|x| !x.trim().is_empty()));
        }
    }
    let mut taken: HashSet<String> = path.iter().map(|e| e.id.clone()).collect();
    let mut last = path.last().map(|e| (e.id.clone(), e.timestamp.clone()));
    for e in &path {
        let want = s.get_label(&e.id);
        if in_copy.get(e.id.as_str()).cloned().flatten().as_deref() == want
            || (want.is_none() && !in_copy.contains_key(e.id.as_str()))
        {
            continue;
        }
        let id = SeededIds::from_text(&format!("{}\nlabel {}", s.session_id(), e.id)).entry_id(&|x| taken.contains(x));
        taken.insert(id.clone());
        let (parent, time) = last.clone().unwrap_or_default();
        let label = arbor_log::Entry {
            id: id.clone(),
            parent_id: Some(parent),
            timestamp: time.clone(),
            kind: EntryKind::Label(LabelEntry {
                target_id: e.id.clone(),
                label: s.label(&e.id).map(|l| l.value.clone()),
                extra: Map::new(),
            }),
        };
        out.push(text(&label.to_value()));
        last = Some((id, time));
    }
    Ok(out)
}

/// A value's JSON text, as `JSON.stringify` writes it (a lone surrogate as its escape).
fn text(v: &Value) -> String {
    arbor_log::json::to_string(v).unwrap_or_default()
}
