//! The light scan's lines sorted into a header, entries and diagnostics
//! ([`ScannedLog`]), with each entry kept as the caller keeps it
//! ([`ScanTarget`]): the scan's own [`ScannedEntry`], or something far
//! smaller made in the thread that scanned the line (a session keeps a
//! packed slot of 40 bytes, where a line's head is a few hundred), so a
//! million entries never sit in memory as heads.

use std::io;

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::entry::EntryKind;
use crate::idhash::IdTable;
use crate::log::SessionLog;
use crate::scan::{read_exact_at, scan_parts, ReadAt, RecordHead, ScanKind, ScanPart, ScannedLine};

/// One record after the header that the scan found to be an entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ScannedEntry {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset of the line.
    pub offset: u64,
    /// Length of the line in bytes, terminator included.
    pub len: usize,
    /// What the scan kept (with the decoded entry for all but message entries).
    pub head: RecordHead,
}

/// What a [`ScannedLog`] keeps of each entry.
pub trait ScanTarget: Sized + Send {
    /// The entry's id as the target reads it back.
    type Id<'a>: std::ops::Deref<Target = str>
    where
        Self: 'a;
    /// Made from the scan's entry (in a scanning thread; its line counted
    /// within the thread's range until [`ScanTarget::shift_line`]).
    fn from_scanned(e: ScannedEntry) -> Self;
    /// Adds `by` to the line number.
    fn shift_line(&mut self, by: usize);
    /// The entry's `id`.
    fn id(&self) -> Self::Id<'_>;
    /// The entry's line number, and the offset and length of the line.
    fn place(&self) -> (usize, u64, usize);
}

impl ScanTarget for ScannedEntry {
    type Id<'a> = &'a str;

    fn from_scanned(e: ScannedEntry) -> Self {
        e
    }

    fn shift_line(&mut self, by: usize) {
        self.line += by;
    }

    fn id(&self) -> &str {
        self.head.id.as_deref().unwrap_or_default()
    }

    fn place(&self) -> (usize, u64, usize) {
        (self.line, self.offset, self.len)
    }
}

/// A session file read by the light scan: the header lines read in full
/// (as a [`SessionLog`] of just those lines), and every later entry as a
/// `E` (by default the [`ScannedEntry`]), with the same diagnostics, in the
/// same order, that [`SessionLog::diagnostics`] followed by
/// [`SessionLog::entries_with_diagnostics`] give.
#[derive(Debug, Clone)]
pub struct ScannedLog<E = ScannedEntry> {
    /// The lines up to and including the header (or the first record), read in full.
    pub prefix: SessionLog,
    /// The entries after the header, in file order (none without a header).
    pub entries: Vec<E>,
    /// Line diagnostics, then entry diagnostics, each in line order.
    pub diagnostics: Vec<Diagnostic>,
    /// The position in `entries` of the first entry of each id (what a
    /// duplicate id names; with no duplicate, where each id is).
    pub ids: IdTable,
    /// Physical lines in the file.
    pub lines: usize,
    /// Bytes scanned.
    pub bytes: u64,
}

/// A scanned line as a [`ScannedLog`] keeps it until the lines are sorted:
/// a plain entry (an object with a type and an id that is not a header, not
/// line 1's title slot candidate, not malformed, with nothing to report)
/// already made into its target; any other line whole (they are few).
enum Kept<E, L> {
    Entry(E),
    Other(L),
}

/// Whether a scanned line is a plain entry (see [`Kept`]).
fn is_plain(l: &ScannedLine) -> bool {
    match &l.kind {
        ScanKind::Object(h) => {
            l.note.is_none()
                && h.not_an_entry().is_none()
                && h.entry_type.as_ref().is_some_and(|t| !matches!(t.as_str(), "session" | "title"))
                && !matches!(h.entry.as_ref().map(|e| &e.kind), Some(EntryKind::Malformed { .. }))
        }
        _ => false,
    }
}

/// One range's lines as a [`ScannedLog`] keeps them until they are sorted:
/// the plain entries as targets, in one list (as many bytes an entry as the
/// target holds, nothing beside), and the other lines, each with the number
/// of plain entries before it in the range.
struct Part<E> {
    entries: Vec<E>,
    others: Vec<(usize, Box<ScannedLine>)>,
}

impl<E> Default for Part<E> {
    fn default() -> Self {
        Part { entries: vec![], others: vec![] }
    }
}

impl<E: ScanTarget> ScanPart for Part<E> {
    fn keep(&mut self, l: ScannedLine) {
        if !is_plain(&l) {
            self.others.push((self.entries.len(), Box::new(l)));
            return;
        }
        let ScanKind::Object(head) = l.kind else { return };
        self.entries.push(E::from_scanned(ScannedEntry { line: l.number, offset: l.offset, len: l.len, head }));
    }

    fn shift_lines(&mut self, by: usize) {
        self.entries.iter_mut().for_each(|e| e.shift_line(by));
        self.others.iter_mut().for_each(|(_, l)| l.number += by);
    }
}

impl<E> Part<E> {
    /// The range's lines in file order (the part's lists freed when the walk ends).
    fn into_lines(self) -> impl Iterator<Item = Kept<E, Box<ScannedLine>>> {
        in_order(self.entries.into_iter(), self.others.into_iter())
    }

    /// [`Part::into_lines`], borrowed.
    fn lines(&self) -> impl Iterator<Item = Kept<&E, &ScannedLine>> {
        in_order(self.entries.iter(), self.others.iter().map(|(at, l)| (*at, &**l)))
    }
}

/// Entries and other lines merged back into file order: each other line
/// comes after the number of entries it was kept with.
fn in_order<E, L>(
    mut entries: impl Iterator<Item = E>,
    others: impl Iterator<Item = (usize, L)>,
) -> impl Iterator<Item = Kept<E, L>> {
    let mut others = others.peekable();
    let mut taken = 0usize;
    std::iter::from_fn(move || {
        if let Some((_, l)) = others.next_if(|(at, _)| *at == taken) {
            return Some(Kept::Other(l));
        }
        taken += 1;
        entries.next().map(Kept::Entry)
    })
}

impl ScannedLog {
    /// Scans `src` (see [`crate::scan::scan_source`]) and sorts its lines into header, entries and diagnostics.
    pub fn read(src: &dyn ReadAt, threads: usize) -> io::Result<ScannedLog> {
        ScannedLog::read_as(src, threads)
    }

    /// Sorts scanned lines into header, entries and diagnostics (see [`ScannedLog`]).
    pub fn from_lines(src: &dyn ReadAt, bytes: u64, lines: Vec<ScannedLine>) -> io::Result<ScannedLog> {
        let mut part = Part::default();
        lines.into_iter().for_each(|l| part.keep(l));
        ScannedLog::from_parts(src, bytes, vec![part])
    }
}

impl<E: ScanTarget> ScannedLog<E> {
    /// [`ScannedLog::read`], each entry kept as an `E` made in the thread that scanned it.
    pub fn read_as(src: &dyn ReadAt, threads: usize) -> io::Result<ScannedLog<E>> {
        let bytes = src.len()?;
        let parts = scan_parts::<Part<E>>(src, bytes, threads, true)?;
        ScannedLog::from_parts(src, bytes, parts)
    }

    /// [`ScannedLog::from_lines`] of the lists [`scan_parts_as`] gives, taken in turn.
    fn from_parts(src: &dyn ReadAt, bytes: u64, parts: Vec<Part<E>>) -> io::Result<ScannedLog<E>> {
        let n_lines: usize = parts.iter().map(|p| p.entries.len() + p.others.len()).sum();
        let (prefix_end, prefix_bytes) = prefix_of(&parts);
        let raw = read_exact_at(src, 0, usize::try_from(prefix_bytes).unwrap_or(usize::MAX))?;
        // A title slot candidate on line 1 and the object after it are both in the
        // prefix: whether it is a title slot or the first record, `SessionLog` decides.
        let prefix = SessionLog::read(&raw[..])?;
        let mut diagnostics = prefix.diagnostics().to_vec();
        let has_header = prefix.has_header();
        let mut entries: Vec<E> = Vec::with_capacity(if has_header { n_lines.saturating_sub(prefix_end) } else { 0 });
        // Line diagnostics come first, then these (each in line order).
        let mut entry_diagnostics = vec![];
        // Each range's lists are freed once walked: beside the entries, one range is held.
        for k in parts.into_iter().flat_map(Part::into_lines).skip(prefix_end) {
            let e = match k {
                Kept::Entry(e) => e,
                Kept::Other(l) => match other_line(*l, has_header, &mut diagnostics, &mut entry_diagnostics) {
                    Some(e) => e,
                    None => continue,
                },
            };
            if has_header {
                entries.push(e);
            }
        }
        // Positions in `entries` by id, the first line of each: what a duplicate names.
        let (ids, repeats) = IdTable::first_positions(entries.len(), |k| entries[k].id());
        for (later, first) in repeats {
            let (line, offset, _) = entries[later].place();
            let id = entries[later].id().to_owned();
            let kind = DiagnosticKind::DuplicateId { id, first_line: entries[first].place().0 };
            entry_diagnostics.push(Diagnostic { line, offset, kind });
        }
        // In line order (a line's own diagnostic before its duplicate id's).
        entry_diagnostics.sort_by_key(|d| d.line);
        diagnostics.append(&mut entry_diagnostics);
        Ok(ScannedLog { prefix, entries, diagnostics, ids, lines: n_lines, bytes })
    }
}

/// How many lines the prefix has and where it ends: it ends with the first
/// object that is not line 1's title slot candidate (those lines are read in
/// full, so header rules live in one place, `SessionLog::read`).
fn prefix_of<E: ScanTarget>(parts: &[Part<E>]) -> (usize, u64) {
    let mut prefix_end = 0usize;
    let mut prefix_bytes = 0u64;
    for k in parts.iter().flat_map(Part::lines) {
        prefix_end += 1;
        let l = match k {
            Kept::Entry(e) => {
                // A plain entry is an object and never a title slot candidate: the prefix ends here.
                let (_, offset, len) = e.place();
                prefix_bytes = offset + len as u64;
                break;
            }
            Kept::Other(l) => l,
        };
        prefix_bytes = l.offset + l.len as u64;
        if matches!(l.kind, ScanKind::Object(_)) {
            let title_candidate = l.number == 1
                && matches!(&l.kind, ScanKind::Object(h) if h.entry_type.as_ref().is_some_and(|t| t.as_str() == "title"));
            if !title_candidate {
                break;
            }
        }
    }
    (prefix_end, prefix_bytes)
}

/// A line after the prefix that is not a plain entry: its line diagnostics
/// and (with a header) its entry diagnostics noted; the entry, if it is one.
fn other_line<E: ScanTarget>(
    l: ScannedLine,
    has_header: bool,
    lines: &mut Vec<Diagnostic>,
    entries: &mut Vec<Diagnostic>,
) -> Option<E> {
    let (line, offset, len) = (l.number, l.offset, l.len);
    let at = |kind| Diagnostic { line, offset, kind };
    if let Some(note) = l.note {
        lines.push(at(note));
    }
    let head = match l.kind {
        ScanKind::Blank => return None,
        ScanKind::Skipped(kind) => {
            lines.push(at(kind));
            return None;
        }
        ScanKind::Object(head) if head.entry_type.as_ref().is_some_and(|t| t.as_str() == "session") => {
            lines.push(at(DiagnosticKind::ExtraHeader));
            return None;
        }
        ScanKind::Object(head) => head,
    };
    if !has_header {
        return None;
    }
    if let Some(why) = head.not_an_entry() {
        entries.push(at(DiagnosticKind::NotAnEntry { reason: why.to_string() }));
        return None;
    }
    if let Some(EntryKind::Malformed { entry_type, error, .. }) = head.entry.as_ref().map(|x| &x.kind) {
        entries.push(at(DiagnosticKind::MalformedEntry { entry_type: entry_type.clone(), error: error.clone() }));
    }
    Some(E::from_scanned(ScannedEntry { line, offset, len, head }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `.jsonl` file under `fixtures/`, recursively.
    fn fixture_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(read) = std::fs::read_dir(dir) else { return };
        for e in read.flatten() {
            let p = e.path();
            if p.is_dir() {
                fixture_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }

    /// The scan's diagnostics and entries, repeated ids included, are the
    /// full reader's, in the same order, on every fixture and on a file with
    /// repeated ids among bad lines.
    #[test]
    fn the_scan_reports_what_the_full_reader_reports() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let mut files = vec![];
        fixture_files(&root, &mut files);
        assert!(files.len() > 20, "{files:?}");
        let mut bodies: Vec<(String, Vec<u8>)> =
            files.iter().map(|p| (p.display().to_string(), std::fs::read(p).unwrap_or_default())).collect();
        let mut mixed =
            br#"{"type":"session","version":3,"id":"s","timestamp":"2024-01-01T00:00:00Z","cwd":"/"}"#.to_vec();
        for i in 0..3000 {
            let id = if i % 7 == 6 { format!("{:x}", i % 50) } else { format!("{i:x}") };
            let line = match i % 11 {
                3 => format!(r#"{{"type":"label","id":"{id}","parentId":null,"targetId":5}}"#),
                5 => "{not json".to_owned(),
                _ => format!(r#"{{"type":"custom","id":"{id}","parentId":null,"timestamp":"x"}}"#),
            };
            mixed.push(b'\n');
            mixed.extend_from_slice(line.as_bytes());
        }
        mixed.push(b'\n');
        bodies.push(("repeated ids among bad lines".into(), mixed));
        for (name, body) in bodies {
            let full = SessionLog::read(&body[..]).unwrap_or_else(|e| panic!("{name}: {e}"));
            let scanned = ScannedLog::read(&body, 2).unwrap_or_else(|e| panic!("{name}: {e}"));
            let (entries, entry_diagnostics) = full.entries_with_diagnostics();
            let mut want = full.diagnostics().to_vec();
            if full.has_header() {
                want.extend(entry_diagnostics);
            }
            assert_eq!(scanned.diagnostics, want, "{name}");
            let lines: Vec<usize> = scanned.entries.iter().map(|e| e.line).collect();
            let want_lines: Vec<usize> = entries.iter().map(|(line, _)| *line).collect();
            if full.has_header() {
                assert_eq!(lines, want_lines, "{name}");
            }
        }
    }
}
