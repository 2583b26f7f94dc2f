//! One streaming pass over a current-version session file for `check` and
//! `repair`: the lines up to the header read in full (as a [`SessionLog`],
//! so the header rules live in one place), every later line streamed once
//! ([`arbor_log::stream`]) into the diagnostics the reader would give, the
//! [`Ledger`] of entries, and what `repair` would move aside.

use std::ops::ControlFlow;

use serde_json::Value;

use arbor_log::ids::SeededIds;
use arbor_log::scan::{read_exact_at, ReadAt, ScanKind};
use arbor_log::stream::{stream_lines, StreamedLine};
use arbor_log::{Diagnostic, DiagnosticKind, EntryKind, LineKind, SessionLog, CURRENT_VERSION};

use super::ledger::Ledger;

/// Why a line goes to `repair`'s side file (a repeated id's earlier lines are in the [`Ledger`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rejection {
    /// Unreadable: the reader's diagnostic.
    Unreadable(String),
    ExtraHeader,
    NotAnEntry,
}

/// What the pass found.
#[derive(Debug)]
pub(crate) struct Pass {
    /// The lines up to the header.
    pub prefix: SessionLog,
    /// Every line and entry diagnostic, in line order (parent cycles are the walk's).
    pub diagnostics: Vec<Diagnostic>,
    /// Records whose `parentId` is neither a string nor `null`: the line and the value.
    pub odd_parents: Vec<(usize, Value)>,
    pub ledger: Ledger,
    /// Lines after the header `repair` moves aside (besides repeated ids), in file order.
    pub rejected: Vec<(usize, Rejection)>,
    /// The blank lines, in file order.
    pub blank: Vec<usize>,
    /// The last line when it lacks its newline: its number and its entry, if it is one.
    pub unterminated: Option<(usize, Option<u32>)>,
    /// The file's length and the bytes of the lines taken so far (to guess the entries to come).
    file_len: u64,
    sampled: u64,
}

/// Entries read before the rest are guessed from them.
const SAMPLE: usize = 4096;

/// Where the pass is.
enum Stage {
    /// Before the header: the prefix so far ends at this byte.
    Prefix(u64),
    Body(Box<Pass>),
    /// The file needs the full path (no usable header, an old version, a header to migrate).
    Full,
}

/// Reads `src` in one pass; `None` when the file needs the full reader
/// (no usable header, or a version or header that needs a migration).
pub(crate) fn read_pass(src: &dyn ReadAt) -> std::io::Result<Option<Pass>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let mut stage = Stage::Prefix(0);
    let mut failed = None;
    stream_lines(src, threads, &mut |line| {
        match &mut stage {
            Stage::Prefix(end) => {
                *end = line.offset + line.len as u64;
                let title_candidate = line.number == 1
                    && matches!(&line.kind, ScanKind::Object(h) if h.entry_type.as_ref().is_some_and(|t| t.as_str() == "title"));
                if matches!(line.kind, ScanKind::Object(_)) && !title_candidate {
                    stage = match read_prefix(src, *end, line) {
                        Ok(Some(pass)) => Stage::Body(Box::new(pass)),
                        Ok(None) => Stage::Full,
                        Err(e) => {
                            failed = Some(e);
                            Stage::Full
                        }
                    };
                }
            }
            Stage::Body(pass) => pass.take(line),
            Stage::Full => {}
        }
        if matches!(stage, Stage::Full) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(match stage {
        Stage::Body(mut pass) => {
            pass.ledger.finish();
            Some(*pass)
        }
        // No record at all: no header.
        Stage::Prefix(_) | Stage::Full => None,
    })
}

/// The prefix (up to and including `last`) read in full; `None` when it
/// has no usable current-version header.
fn read_prefix(src: &dyn ReadAt, end: u64, last: &StreamedLine) -> std::io::Result<Option<Pass>> {
    let raw = read_exact_at(src, 0, usize::try_from(end).unwrap_or(usize::MAX))?;
    let prefix = SessionLog::read(&raw[..])?;
    let Some(header) = prefix.header() else { return Ok(None) };
    if header.version() < CURRENT_VERSION {
        return Ok(None);
    }
    let mut migrated = prefix.clone();
    if migrated.migrate(&mut SeededIds::from_text(&header.id)).migrated() || migrated.is_dirty() {
        return Ok(None);
    }
    let mut pass = Pass {
        diagnostics: prefix.diagnostics().to_vec(),
        prefix,
        odd_parents: vec![],
        ledger: Ledger::default(),
        rejected: vec![],
        blank: vec![],
        unterminated: None,
        file_len: src.len()?,
        sampled: 0,
    };
    for l in pass.prefix.lines() {
        match &l.kind {
            LineKind::Blank => pass.blank.push(l.number),
            LineKind::Skipped => {
                let why = pass.prefix.diagnostics().iter().rev().find(|d| d.line == l.number);
                let why = why.map_or_else(|| "unreadable".to_owned(), |d| d.kind.to_string());
                pass.rejected.push((l.number, Rejection::Unreadable(why)));
            }
            _ => {}
        }
    }
    if !last.terminated {
        pass.unterminated = Some((last.number, None));
    }
    Ok(Some(pass))
}

impl Pass {
    /// One line after the header.
    fn take(&mut self, line: &mut StreamedLine) {
        self.sampled += line.len as u64;
        if self.ledger.len() == SAMPLE {
            // The entries to come, guessed from the first ones' lines: room for them at once.
            let guess = self.file_len / self.sampled.max(1) * SAMPLE as u64;
            self.ledger.reserve(usize::try_from(guess).unwrap_or(0).saturating_sub(SAMPLE) / 16 * 17);
        }
        let at = |kind| Diagnostic { line: line.number, offset: line.offset, kind };
        if let Some(note) = line.note.clone() {
            self.diagnostics.push(at(note));
        }
        let head = match &line.kind {
            ScanKind::Blank => {
                self.blank.push(line.number);
                return;
            }
            ScanKind::Skipped(kind) => {
                self.rejected.push((line.number, Rejection::Unreadable(kind.to_string())));
                self.diagnostics.push(at(kind.clone()));
                return;
            }
            ScanKind::Object(head) => head,
        };
        if head.entry_type.as_ref().is_some_and(|t| t.as_str() == "session") {
            self.diagnostics.push(at(DiagnosticKind::ExtraHeader));
            self.rejected.push((line.number, Rejection::ExtraHeader));
            return;
        }
        if let Some(v) = line.odd_parent.take() {
            self.odd_parents.push((line.number, *v));
        }
        if let Some(why) = head.not_an_entry() {
            self.diagnostics.push(at(DiagnosticKind::NotAnEntry { reason: why.to_string() }));
            self.rejected.push((line.number, Rejection::NotAnEntry));
            return;
        }
        if let Some(EntryKind::Malformed { entry_type, error, .. }) = head.entry.as_ref().map(|e| &e.kind) {
            let kind = DiagnosticKind::MalformedEntry { entry_type: entry_type.clone(), error: error.clone() };
            self.diagnostics.push(at(kind));
        }
        let id = head.id.as_deref().unwrap_or_default();
        let parent = match &head.parent {
            arbor_log::scan::ParentField::Id(p) => Some(p.as_str()),
            arbor_log::scan::ParentField::Root => None,
        };
        if let Some(first_line) = self.ledger.push(line.number, id, parent) {
            self.diagnostics.push(at(DiagnosticKind::DuplicateId { id: id.to_owned(), first_line }));
        }
        let role = head.role.as_ref().filter(|_| head.is_lazy_message());
        self.ledger.note(role, &line.calls, line.answers.as_ref(), head.entry.as_deref());
        if !line.terminated {
            self.unterminated = Some((line.number, Some(self.ledger.len() as u32 - 1)));
        }
    }
}
