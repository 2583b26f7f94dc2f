//! A clean copy of a path or of the whole tree as pi v3 JSONL: what the
//! session holds after Arbor read it (migrated, the later of two lines with
//! one id, no unreadable lines), in a form `arbor check` finds clean.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use arbor_log::entries::LabelEntry;
use arbor_log::ids::{IdGenerator, SeededIds};
use arbor_log::{EntryKind, EntryType, CURRENT_VERSION};
use arbor_tree::{Position, Session, TreeError};
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
/// The header keeps the session's id and is written as version 3. A file
/// `arbor check` finds clean is copied byte for byte by [`Scope::All`]: its
/// header line as read ([`Session::header_text`]) and each line as the file
/// holds it ([`Session::map_lines_many`]).
pub fn export_jsonl(s: &Session, scope: Scope, out: &mut dyn Write) -> Result<(), InteropError> {
    let io = |e| InteropError::io(s.session_file().unwrap_or(s.session_dir()), e);
    match s.header_text() {
        Some(line) => writeln!(out, "{line}").map_err(io)?,
        None => {
            let mut header = s.header().clone();
            header.version = Some(Value::from(CURRENT_VERSION));
            writeln!(out, "{}", text(&header.to_value())).map_err(io)?;
        }
    }
    match scope {
        Scope::All => whole_tree(s, out).map_err(io)?,
        Scope::Path(leaf) => {
            for line in path_copy(s, leaf)? {
                writeln!(out, "{line}").map_err(io)?;
            }
        }
    }
    Ok(())
}

/// Entries copied at once (on all cores), then written and dropped.
const BATCH: usize = 4096;

/// Writes every live entry in file order ([`export_jsonl`]'s [`Scope::All`]),
/// a batch at a time: an entry whose parent is what the tree shows is its
/// line as written; one the tree shows elsewhere (a missing parent, a
/// cycle) is written again with that parent; a label of a missing entry is
/// left out.
fn whole_tree(s: &Session, out: &mut dyn Write) -> std::io::Result<()> {
    let tree = s.get_tree();
    let mut parent: HashMap<Position, Position> = HashMap::new();
    let mut stack: Vec<Position> = tree.root_positions().to_vec();
    while let Some(i) = stack.pop() {
        for &c in tree.child_positions(i) {
            parent.insert(c, i);
            stack.push(c);
        }
    }
    drop(tree);
    let live: Vec<Position> = s.positions().filter(|&i| s.is_live_at(i)).collect();
    for batch in live.chunks(BATCH) {
        // A long line copied as it is (its parent the one shown) is copied
        // from the file a block at a time, never held.
        let copied = |i: Position| {
            let shown = parent.get(&i).copied();
            s.is_long_at(i)
                && shown.is_some()
                && shown == s.parent_at(i)
                && s.entry_type_at(i) != Some(&EntryType::Label)
        };
        let held: Vec<Position> = batch.iter().copied().filter(|&i| !copied(i)).collect();
        let mut lines = s.map_lines_many(&held, |_, line| line.to_owned()).map_err(std::io::Error::other)?.into_iter();
        for &i in batch {
            if copied(i) {
                s.write_line_at(i, out)?;
                out.write_all(b"\n")?;
                continue;
            }
            let Some(line) = lines.next().flatten() else { continue };
            if let Some(line) = shown_line(s, i, parent.get(&i).copied(), line).map_err(std::io::Error::other)? {
                writeln!(out, "{line}")?;
            }
        }
    }
    Ok(())
}

/// The line of the entry at `i` as the copy holds it, its parent in the
/// tree being `shown`: the line as written when it names that parent,
/// written again with it when not, none for a label of a missing entry.
fn shown_line(s: &Session, i: Position, shown: Option<Position>, line: String) -> Result<Option<String>, TreeError> {
    // The parent the line names resolves to the one shown: the line as it is.
    if shown.is_some() && shown == s.parent_at(i) && s.entry_type_at(i) != Some(&EntryType::Label) {
        return Ok(Some(line));
    }
    let Some(e) = s.decode_at(i)? else { return Ok(None) };
    if let EntryKind::Label(l) = &e.kind {
        // A label of a missing entry is left out.
        if s.position_of(&l.target_id).is_none() {
            return Ok(None);
        }
    }
    let shown = shown.and_then(|p| s.id_at(p));
    if shown.as_deref() == e.parent_id.as_deref() {
        return Ok(Some(line));
    }
    let mut fixed = e;
    fixed.parent_id = shown.map(|p| p.to_string());
    Ok(Some(text(&fixed.to_value())))
}

fn path_copy(s: &Session, leaf: Option<&str>) -> Result<Vec<String>, InteropError> {
    let path = path_to(s, leaf)?;
    let mut out: Vec<String> = Vec::with_capacity(path.len());
    for e in &path {
        out.push(s.entry_json(&e.id)?.map_or_else(|| text(&e.to_value()), str::to_owned));
    }
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
        let want = s.label(&e.id).map(|l| l.map(|l| l.text.as_str()))?;
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
                label: s.label(&e.id)?.map(|l| l.value.clone()),
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
