//! `check`: everything wrong or suspicious in a session file, by line.
//!
//! The reader already turns bad lines into diagnostics; this adds what only
//! the tree shows (orphans, cycles, self-parents, compactions whose kept
//! entry is not on their path, labels on missing targets, tool calls left
//! without a result at a leaf) and sorts everything by severity. Each
//! finding is reported once: a tool call unanswered on the paths to many
//! leaves is one finding with the number of leaves as its `count`.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use serde::Serialize;

use arbor_log::{DiagnosticKind, EntryKind, LineKind, Role, SessionLog};

use crate::error::TreeError;
use crate::session::{OpenMode, Session, SessionOptions};

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
pub fn check_session(path: &Path, opts: SessionOptions) -> Result<Vec<Finding>, TreeError> {
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
    out.extend(tree_findings(&s));
    sort(&mut out);
    Ok(out)
}

/// Records whose `parentId` is neither a string nor `null`: read as roots (as pi reads them), but
/// pi never writes one.
fn non_string_parents(log: &SessionLog) -> impl Iterator<Item = Finding> + '_ {
    log.lines().iter().filter_map(|l| {
        let LineKind::Record(v) = &l.kind else { return None };
        let parent = v.get("parentId").filter(|p| !p.is_string() && !p.is_null())?;
        Some(warn(
            l.number,
            "parent-not-a-string",
            format!("\"parentId\" is {parent}, neither a string nor null: read as a root"),
        ))
    })
}

fn sort(v: &mut [Finding]) {
    v.sort_by(|a, b| a.line.cmp(&b.line).then(b.severity.cmp(&a.severity)).then(a.code.cmp(b.code)));
}

fn warn(line: usize, code: &'static str, message: String) -> Finding {
    Finding::new(line, Severity::Warning, code, message)
}

/// The findings only the tree shows.
pub fn tree_findings(s: &Session) -> Vec<Finding> {
    let mut has_child: HashSet<&str> = HashSet::new();
    let mut out = entry_findings(s, &mut has_child);
    out.extend(unanswered_tool_calls(s, &has_child));
    out
}

/// What each live entry shows on its own: self-parents, orphans, labels on
/// missing targets, compactions whose kept entry is off their path. Notes
/// in `has_child` every id some entry names as its parent.
fn entry_findings<'s>(s: &'s Session, has_child: &mut HashSet<&'s str>) -> Vec<Finding> {
    let mut out = vec![];
    for i in s.positions() {
        if !s.is_live_at(i) {
            continue;
        }
        let (Some(e), line) = (s.entry_at(i), s.line_at(i)) else { continue };
        if let Some(p) = &e.parent_id {
            has_child.insert(p.as_str());
            if p == &e.id {
                out.push(warn(line, "self-parent", format!("entry {} is its own parent; shown as a root", e.id)));
            } else if s.get_entry(p).is_none() {
                out.push(warn(line, "orphan", format!("entry {} has a missing parent {p}; shown as a root", e.id)));
            }
        }
        match &e.kind {
            EntryKind::Label(l) if s.get_entry(&l.target_id).is_none() => out.push(warn(
                line,
                "label-target-missing",
                format!("label {} targets a missing entry {}", e.id, l.target_id),
            )),
            EntryKind::Compaction(c) => {
                let path: HashSet<&str> = s.get_branch(Some(&e.id)).iter().map(|p| p.id.as_str()).collect();
                match c.first_kept_entry_id.as_deref() {
                    None => out.push(warn(
                        line,
                        "compaction-keeps-nothing",
                        format!("compaction {} has no firstKeptEntryId: nothing before it is kept", e.id),
                    )),
                    Some(k) if !path.contains(k) => out.push(warn(
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
    out
}

/// Tool calls without a result on the path to a leaf: one finding per call,
/// counting the leaves whose path leaves it unanswered.
fn unanswered_tool_calls(s: &Session, has_child: &HashSet<&str>) -> Vec<Finding> {
    // (call id, name, entry id) → (leaves, the first leaf), in the order first seen.
    let mut seen: Vec<((String, String, String), usize, String)> = vec![];
    let mut index: std::collections::HashMap<(String, String, String), usize> = Default::default();
    for i in s.positions() {
        let Some(e) = s.entry_at(i) else { continue };
        if !s.is_live_at(i) || has_child.contains(e.id.as_str()) {
            continue;
        }
        let path = s.get_branch(Some(&e.id));
        let mut open: Vec<(String, String, &str)> = vec![];
        for p in &path {
            let Some(m) = p.message() else { continue };
            let view = m.view();
            match view.role() {
                Some(Role::Assistant) => {
                    for call in view.tool_calls() {
                        open.push((
                            call.id.unwrap_or("").to_owned(),
                            call.name.unwrap_or("tool").to_owned(),
                            p.id.as_str(),
                        ));
                    }
                }
                Some(Role::ToolResult) => {
                    let id = view.str_field("toolCallId").unwrap_or("");
                    open.retain(|(c, _, _)| c != id);
                }
                _ => {}
            }
        }
        for (call, name, at) in open {
            let key = (call, name, at.to_owned());
            match index.get(&key) {
                Some(&i) => seen[i].1 += 1,
                None => {
                    index.insert(key.clone(), seen.len());
                    seen.push((key, 1, e.id.clone()));
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
