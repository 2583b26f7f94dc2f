//! `check`: everything wrong or suspicious in a session file, by line.
//!
//! The reader already turns bad lines into diagnostics; this adds what only
//! the tree shows (orphans, cycles, self-parents, compactions whose kept
//! entry is not on their path, labels on missing targets, tool calls left
//! without a result at a leaf) and sorts everything by severity. Each
//! finding is reported once: a tool call unanswered on the paths to many
//! leaves is one finding with the number of leaves as its `count`.
//!
//! A current-version file is read in one streaming pass ([`pass`]) into a
//! [`ledger`] of a few integers per entry, and the tree is walked over entry
//! numbers ([`walk`]): memory grows by some 30 bytes an entry, whatever the
//! entries hold. Anything else is read in full (`check_in_full`), which is
//! also what the streaming pass is tested against.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;

use serde::Serialize;

use arbor_log::{DiagnosticKind, EntryKind, EntryType, LineKind, Role, SessionLog};

use crate::error::TreeError;
use crate::session::{OpenMode, Position, Session, SessionOptions};

pub(crate) mod ledger;
pub(crate) mod pass;
mod walk;

#[cfg(test)]
mod diff_tests;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Suspicious, but every tool reads the file the same way.
    Warning,
    /// Data that readers skip or resolve by a rule: something is lost or ambiguous.
    Error,
}

/// One thing `check` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// 1-based line (0 when it concerns the file as a whole).
    pub line: usize,
    /// How bad it is.
    pub severity: Severity,
    /// A stable short name (`malformed-line`, `orphan`, …).
    pub code: &'static str,
    /// One line of explanation.
    pub message: String,
    /// How many times it occurs (for a tool call without a result: on the
    /// paths to how many leaves); 1 for most findings.
    pub count: usize,
}

impl Finding {
    /// A finding that occurs once.
    pub fn new(line: usize, severity: Severity, code: &'static str, message: String) -> Finding {
        Finding { line, severity, code, message, count: 1 }
    }
}

/// How many findings of each code a check found: errors first, then by code.
pub fn summary_by_code(findings: &[Finding]) -> Vec<(Severity, &'static str, usize)> {
    let mut out: Vec<(Severity, &'static str, usize)> = vec![];
    for f in findings {
        match out.iter_mut().find(|(s, c, _)| *s == f.severity && *c == f.code) {
            Some(entry) => entry.2 += 1,
            None => out.push((f.severity, f.code, 1)),
        }
    }
    out.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    out
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{}: {sev}[{}]: {}", self.line, self.code, self.message)
    }
}

fn from_diagnostic(kind: &DiagnosticKind) -> Option<(Severity, &'static str)> {
    use DiagnosticKind as K;
    Some(match kind {
        K::Malformed { .. } => (Severity::Error, "malformed-line"),
        K::NotObject { .. } => (Severity::Error, "not-an-object"),
        K::InvalidUtf8 => (Severity::Warning, "invalid-utf8"),
        K::TornTail { .. } => (Severity::Error, "torn-tail"),
        K::NoFinalNewline => (Severity::Warning, "no-final-newline"),
        K::MissingHeader { .. } => (Severity::Error, "no-header"),
        K::ExtraHeader => (Severity::Warning, "extra-header"),
        K::NotAnEntry { .. } => (Severity::Error, "not-an-entry"),
        K::MalformedEntry { .. } => (Severity::Error, "malformed-entry"),
        K::DuplicateId { .. } => (Severity::Error, "duplicate-id"),
        K::ParentCycle { .. } => (Severity::Error, "parent-cycle"),
        K::TitleSlot => return None,
    })
}

/// Checks one file. Only I/O is an `Err`; a file that is not a session at all
/// is a finding.
pub fn check_file(path: &Path) -> Result<Vec<Finding>, TreeError> {
    check_session(path, SessionOptions::default())
}

/// Checks the session at `path` in `opts.store` (read-only, as [`check_file`]
/// does for a local file).
///
/// A current-version file is read in one streaming pass (`pass`) that
/// keeps a few integers per entry (`ledger`) and walks the tree over them
/// (`walk`); anything else (no usable header, a migration) is read in full.
pub fn check_session(path: &Path, opts: SessionOptions) -> Result<Vec<Finding>, TreeError> {
    let Some(src) = opts.store.open_at(path)? else { return Err(TreeError::Missing(path.to_owned())) };
    match pass::read_pass(&*src).map_err(|e| TreeError::io(path, e))? {
        Some(pass) => Ok(streamed_findings(pass)),
        None => check_in_full(path, opts),
    }
}

/// The findings of a streamed pass: what [`check_in_full`] finds, from the
/// pass's diagnostics and ledger.
fn streamed_findings(mut pass: pass::Pass) -> Vec<Finding> {
    let mut out: Vec<Finding> = pass
        .diagnostics
        .iter()
        .filter_map(|d| {
            from_diagnostic(&d.kind).map(|(severity, code)| Finding::new(d.line, severity, code, d.kind.to_string()))
        })
        .collect();
    out.extend(pass.odd_parents.iter().map(|(line, parent)| odd_parent(*line, parent)));
    let l = &pass.ledger;
    for i in l.cycle_roots() {
        let kind = DiagnosticKind::ParentCycle { id: l.id(i).to_owned() };
        out.push(Finding::new(l.line(i), Severity::Error, "parent-cycle", kind.to_string()));
    }
    out.extend(walk::tree_findings(&mut pass.ledger));
    sort(&mut out);
    out
}

/// A record whose `parentId` is neither a string nor `null`.
fn odd_parent(line: usize, parent: &serde_json::Value) -> Finding {
    warn(line, "parent-not-a-string", format!("\"parentId\" is {parent}, neither a string nor null: read as a root"))
}

/// [`check_session`] reading every line in full (what a file with
/// diagnostics, or one that needs a migration, is checked by).
fn check_in_full(path: &Path, opts: SessionOptions) -> Result<Vec<Finding>, TreeError> {
    let Some(reader) = opts.store.read_from(path, 0)? else { return Err(TreeError::Missing(path.to_owned())) };
    let log = SessionLog::read(reader).map_err(|e| TreeError::io(path, e))?;
    let mut out: Vec<Finding> = log
        .diagnostics()
        .iter()
        .filter_map(|d| {
            from_diagnostic(&d.kind).map(|(severity, code)| Finding::new(d.line, severity, code, d.kind.to_string()))
        })
        .collect();
    if !log.has_header() {
        if log.lines().is_empty() || out.is_empty() {
            out.push(Finding::new(
                0,
                Severity::Error,
                "no-header",
                "no session header (the file has no records)".into(),
            ));
        }
        sort(&mut out);
        return Ok(out);
    }
    out.extend(non_string_parents(&log));
    drop(log);
    let s = Session::open(path, OpenMode::ReadOnly, opts)?;
    // Line-level diagnostics came from the log; take the entry-level ones from the session.
    let seen: HashSet<(usize, String)> = out.iter().map(|f| (f.line, f.message.clone())).collect();
    for d in s.diagnostics() {
        if let Some((severity, code)) = from_diagnostic(&d.kind) {
            if !seen.contains(&(d.line, d.kind.to_string())) {
                out.push(Finding::new(d.line, severity, code, d.kind.to_string()));
            }
        }
    }
    out.extend(tree_findings(&s)?);
    sort(&mut out);
    Ok(out)
}

/// Records whose `parentId` is neither a string nor `null`: read as roots (as pi reads them), but
/// pi never writes one.
fn non_string_parents(log: &SessionLog) -> impl Iterator<Item = Finding> + '_ {
    log.lines().iter().filter_map(|l| {
        let LineKind::Record(v) = &l.kind else { return None };
        let parent = v.get("parentId").filter(|p| !p.is_string() && !p.is_null())?;
        Some(odd_parent(l.number, parent))
    })
}

fn sort(v: &mut [Finding]) {
    v.sort_by(|a, b| a.line.cmp(&b.line).then(b.severity.cmp(&a.severity)).then(a.code.cmp(b.code)));
}

fn warn(line: usize, code: &'static str, message: String) -> Finding {
    Finding::new(line, Severity::Warning, code, message)
}

/// The findings only the tree shows. Each entry is decoded once and not
/// kept (a check holds one entry at a time, not the session's bodies).
/// An `Err` when the file changed under the session ([`TreeError::Changed`]).
pub fn tree_findings(s: &Session) -> Result<Vec<Finding>, TreeError> {
    let mut out = entry_findings(s)?;
    out.extend(unanswered_tool_calls(s)?);
    Ok(out)
}

/// What each live entry shows on its own: self-parents, orphans, labels on
/// missing targets, compactions whose kept entry is off their path.
fn entry_findings(s: &Session) -> Result<Vec<Finding>, TreeError> {
    let mut out = vec![];
    for (k, slot) in s.state.slots.iter().enumerate() {
        if !slot.live() {
            continue;
        }
        let (i, line, id) = (Position::new(k), slot.line(), &slot.id());
        if let Some(p) = &slot.parent_id() {
            if p == id {
                out.push(warn(line, "self-parent", format!("entry {id} is its own parent; shown as a root")));
            } else if s.position_of(p).is_none() {
                out.push(warn(line, "orphan", format!("entry {id} has a missing parent {p}; shown as a root")));
            }
        }
        // Only labels and compactions are read further.
        if slot.entry_type() != &EntryType::Label && slot.entry_type() != &EntryType::Compaction {
            continue;
        }
        let Some(e) = s.decode_at(i)? else { continue };
        match &e.kind {
            EntryKind::Label(l) if s.position_of(&l.target_id).is_none() => out.push(warn(
                line,
                "label-target-missing",
                format!("label {} targets a missing entry {}", e.id, l.target_id),
            )),
            EntryKind::Compaction(c) => {
                let on_path =
                    |k: &str| s.branch_positions(Some(&e.id)).iter().any(|&q| s.id_at(q).is_some_and(|x| *x == *k));
                match c.first_kept_entry_id.as_deref() {
                    None => out.push(warn(
                        line,
                        "compaction-keeps-nothing",
                        format!("compaction {} has no firstKeptEntryId: nothing before it is kept", e.id),
                    )),
                    Some(k) if !on_path(k) => out.push(warn(
                        line,
                        "compaction-kept-off-path",
                        format!(
                            "compaction {} keeps from {k}, which is not on its path: nothing before it is kept",
                            e.id
                        ),
                    )),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// For each position, true when a live entry names its id as its parent (it is no leaf).
fn named_as_parent(s: &Session) -> Vec<bool> {
    let mut named = vec![false; s.len()];
    for slot in s.state.slots.iter() {
        if let Some(q) = slot.parent_id().as_deref().filter(|_| slot.live()).and_then(|p| s.position_of(p)) {
            named[q.get()] = true;
        }
    }
    named
}

/// A tool call still open on a path: its id, its tool's name and the entry that made it.
type OpenCall = (String, String, Position);

/// What one entry does to the tool calls open on its path: the calls an
/// assistant message makes, or the id a tool result answers.
type Effect = (Vec<OpenCall>, Option<String>);

fn tool_effect(s: &Session, p: Position) -> Result<Effect, TreeError> {
    Ok(effect_of(s.decode_at(p)?, p))
}

/// The [`Effect`] of every entry, decoded on all cores a batch at a time;
/// only assistant messages and tool results are read.
fn tool_effects(s: &Session) -> Result<Vec<Effect>, TreeError> {
    let mut out: Vec<Effect> = (0..s.len()).map(|_| (vec![], None)).collect();
    let wanted: Vec<Position> =
        s.positions().filter(|&p| matches!(s.role_at(p), Some(Role::Assistant | Role::ToolResult))).collect();
    // Small batches: a decoded tool result holds several times its line.
    for batch in wanted.chunks(512) {
        for (&p, e) in batch.iter().zip(s.decode_many(batch)?) {
            out[p.get()] = effect_of(e, p);
        }
    }
    Ok(out)
}

fn effect_of(e: Option<arbor_log::Entry>, p: Position) -> Effect {
    let Some(e) = e else { return (vec![], None) };
    let Some(m) = e.message() else { return (vec![], None) };
    let view = m.view();
    match view.role() {
        Some(Role::Assistant) => {
            let calls = view
                .tool_calls()
                .map(|call| (call.id.unwrap_or("").to_owned(), call.name.unwrap_or("tool").to_owned(), p))
                .collect();
            (calls, None)
        }
        Some(Role::ToolResult) => (vec![], Some(view.str_field("toolCallId").unwrap_or("").to_owned())),
        _ => (vec![], None),
    }
}

/// The tool calls open at each leaf (leaves in file order, calls in the
/// order the path leaves them open) as findings: one per call, counting the
/// leaves whose path leaves it unanswered, in the order first seen.
fn report_unanswered(s: &Session, open_at_leaves: Vec<(Position, Vec<OpenCall>)>) -> Vec<Finding> {
    // (call id, name, entry id) → (leaves, the first leaf).
    let mut seen: Vec<((String, String, String), usize, String)> = vec![];
    let mut index: HashMap<(String, String, String), usize> = HashMap::new();
    for (leaf, open) in open_at_leaves {
        for (call, name, at) in open {
            let key = (call, name, s.id_at(at).unwrap_or_default().to_string());
            match index.get(&key) {
                Some(&i) => seen[i].1 += 1,
                None => {
                    index.insert(key.clone(), seen.len());
                    seen.push((key, 1, s.id_at(leaf).unwrap_or_default().to_string()));
                }
            }
        }
    }
    seen.into_iter()
        .map(|((call, name, at), leaves, first)| {
            let line = s.position_of(&at).map_or(0, |k| s.line_at(k));
            let whose = if leaves == 1 {
                format!("the path to leaf {first}")
            } else {
                format!("the paths to {leaves} leaves (the first: {first})")
            };
            let mut f = warn(
                line,
                "tool-call-without-result",
                format!("tool call {call} ({name}) in {at} has no result on {whose}"),
            );
            f.count = leaves;
            f
        })
        .collect()
}

/// Tool calls without a result, on the path to each leaf of the tree.
fn unanswered_tool_calls(s: &Session) -> Result<Vec<Finding>, TreeError> {
    Ok(report_unanswered(s, open_at_leaves(s)?))
}

/// The tool calls left without a result on the path to each leaf (leaves
/// in file order, those with none left out): one walk down the tree, the
/// calls open on the way kept on a stack (each entry decoded once), so the
/// check costs the session, not its leaves times its depth. A session with
/// a parent cycle walks each leaf's path.
fn open_at_leaves(s: &Session) -> Result<Vec<(Position, Vec<OpenCall>)>, TreeError> {
    let named = named_as_parent(s);
    let is_leaf = |p: Position| s.is_live_at(p) && !named[p.get()];
    if !s.state.cycle_roots.is_empty() {
        return open_by_paths(s, &is_leaf);
    }
    let mut out = vec![];
    let mut effects = tool_effects(s)?;
    let tree = s.get_tree();
    // Each frame: a node, the calls it opened (how many were pushed) and
    // the ones its tool result closed (to put back when leaving it).
    struct Frame<'t> {
        kids: &'t [Position],
        next: usize,
        pushed: usize,
        closed: Vec<(usize, OpenCall)>,
    }
    let mut open: Vec<OpenCall> = vec![];
    let mut stack: Vec<Frame<'_>> = vec![Frame { kids: tree.root_positions(), next: 0, pushed: 0, closed: vec![] }];
    while let Some(top) = stack.last_mut() {
        let Some(&p) = top.kids.get(top.next) else {
            let done = stack.pop().unwrap_or_else(|| unreachable!());
            open.truncate(open.len() - done.pushed);
            // Back in ascending order of where they were: each lands where it was.
            for (at, call) in done.closed {
                open.insert(at, call);
            }
            continue;
        };
        top.next += 1;
        let (calls, result) = std::mem::take(&mut effects[p.get()]);
        let mut closed = vec![];
        if let Some(id) = result {
            let mut k = 0;
            open.retain(|c| {
                let keep = c.0 != id;
                if !keep {
                    closed.push((k, c.clone()));
                }
                k += 1;
                keep
            });
        }
        let pushed = calls.len();
        open.extend(calls);
        if is_leaf(p) && !open.is_empty() {
            out.push((p, open.clone()));
        }
        stack.push(Frame { kids: tree.child_positions(p), next: 0, pushed, closed });
    }
    // Leaf by leaf in file order, as the walk leaf by leaf finds them.
    out.sort_by_key(|(leaf, _)| *leaf);
    Ok(out)
}

/// [`open_at_leaves`] leaf by leaf, each leaf's path walked from the root.
fn open_by_paths(s: &Session, is_leaf: &dyn Fn(Position) -> bool) -> Result<Vec<(Position, Vec<OpenCall>)>, TreeError> {
    let mut out = vec![];
    for leaf in s.positions().filter(|&p| is_leaf(p)) {
        let mut open: Vec<OpenCall> = vec![];
        for p in s.branch_positions(s.id_at(leaf).as_deref()) {
            let (calls, result) = tool_effect(s, p)?;
            if let Some(id) = result {
                open.retain(|c| c.0 != id);
            }
            open.extend(calls);
        }
        if !open.is_empty() {
            out.push((leaf, open));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk down the tree finds what walking each leaf's path finds, in
    /// the same order, on every fixture and a large branched session.
    #[test]
    fn one_walk_down_the_tree_finds_what_each_leafs_path_finds() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let big = d.path().join("big.jsonl");
        arbor_test_support::write_big_session(&big, 3000, 20);
        let mut files = arbor_test_support::jsonl_under(&arbor_test_support::fixtures());
        files.push(big);
        let mut with_calls = 0;
        for f in files {
            let opts = SessionOptions { index_dir: None, ..SessionOptions::default() };
            let Ok(s) = Session::open(&f, OpenMode::ReadOnly, opts) else { continue };
            let named = named_as_parent(&s);
            let by_paths = open_by_paths(&s, &|p: Position| s.is_live_at(p) && !named[p.get()]).unwrap();
            with_calls += usize::from(!by_paths.is_empty());
            assert_eq!(open_at_leaves(&s).unwrap(), by_paths, "{}", f.display());
        }
        assert!(with_calls >= 3, "{with_calls} fixtures with unanswered tool calls");
    }

    /// A clean file checked from the session alone finds what reading every line finds.
    #[test]
    fn a_clean_file_checked_from_the_session_finds_what_the_full_read_finds() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let big = d.path().join("big.jsonl");
        arbor_test_support::write_big_session(&big, 3000, 20);
        let odd = d.path().join("odd-parents.jsonl");
        std::fs::write(
            &odd,
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n\
             {\"type\":\"message\",\"id\":\"a\",\"parentId\":5,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n\
             {\"type\":\"message\",\"id\":\"b\",\"parentId\":{\"x\":1},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"y\"}}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut files = arbor_test_support::jsonl_under(&arbor_test_support::fixtures());
        files.extend([big, odd.clone()]);
        for f in files {
            let opts = || SessionOptions { index_dir: None, ..SessionOptions::default() };
            let (fast, full) = (check_session(&f, opts()), check_in_full(&f, opts()));
            assert_eq!(format!("{fast:?}"), format!("{full:?}"), "{}", f.display());
        }
        let odd = check_session(&odd, SessionOptions::default()).unwrap_or_default();
        assert_eq!(odd.iter().filter(|f| f.code == "parent-not-a-string").count(), 2, "{odd:?}");
    }
}
