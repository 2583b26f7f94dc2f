//! [`SessionLog`]: every physical line of a session file, parsed, in order.
//!
//! The log keeps each line's bytes next to its parsed value, so writing an
//! unchanged log reproduces the file byte for byte, and a rewrite after a
//! migration re-encodes only the records the migration changed. Blank,
//! malformed and torn lines stay where they were: nothing is ever dropped.

use std::collections::HashMap;
use std::io::{self, BufReader, Read, Write};
use std::path::Path;

use serde_json::Value;

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::entry::{Entry, EntryKind};
use crate::error::LogError;
use crate::header::{is_header, SessionHeader};
use crate::ids::IdGenerator;
use crate::migrate::{is_session, migrate_from, MigrationReport};
use crate::reader::{parse_line_detail, LineReader, Parsed};
use crate::version::version_in_line;

/// What a physical line holds.
///
/// ```
/// use arbor_log::{LineKind, SessionLog};
///
/// let log = SessionLog::read(&b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n\nnot json\n"[..])?;
/// let kinds: Vec<&str> = log.lines().iter().map(|l| match l.kind {
///     LineKind::Header(_) => "header",
///     LineKind::Blank => "blank",
///     LineKind::Skipped => "skipped",
///     _ => "other",
/// }).collect();
/// assert_eq!(kinds, ["header", "blank", "skipped"]);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum LineKind {
    /// Whitespace only.
    Blank,
    /// Not readable as a record (malformed, not an object, torn); see the diagnostics.
    Skipped,
    /// omp-S's 256-byte title slot on line 1.
    TitleSlot(Value),
    /// The session header.
    Header(Value),
    /// A `type: "session"` record after the header.
    ExtraHeader(Value),
    /// Any other JSON object: an entry, or something that claims to be one.
    Record(Value),
}

/// One physical line.
///
/// ```
/// use arbor_log::SessionLog;
///
/// let log = SessionLog::read(&b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n"[..])?;
/// let line = &log.lines()[0];
/// assert_eq!((line.number, line.offset, line.is_dirty()), (1, 0, false));
/// assert!(line.raw().ends_with(b"}\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct LogLine {
    /// 1-based line number in the file as read.
    pub number: usize,
    /// Byte offset in the file as read.
    pub offset: u64,
    /// What the line holds.
    pub kind: LineKind,
    raw: Vec<u8>,
    dirty: bool,
    js_only: bool,
}

impl LogLine {
    /// The line's bytes as read (including its terminator).
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }
    /// True when the value was changed after reading (by a migration).
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }
    /// True when only JavaScript's reading accepts the line (see [`crate::reader::parse_line_detail`]).
    pub fn is_js_only(&self) -> bool {
        self.js_only
    }
}

/// How [`SessionLog::write_to`] ends the last line.
///
/// ```
/// use arbor_log::{LastLine, SessionLog};
///
/// let torn = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":";
/// let log = SessionLog::read(&torn[..])?;
/// assert_eq!(log.to_bytes(LastLine::AsRead), torn);
/// assert!(log.to_bytes(LastLine::Terminated).ends_with(b"{\"type\":\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastLine {
    /// As it was read: an unchanged log is written back byte for byte.
    AsRead,
    /// With a newline added when it had none (a torn tail), so that a
    /// following append can never be glued to it.
    Terminated,
}

/// A session file, line by line. See the module docs.
///
/// ```
/// use arbor_log::{LastLine, SessionLog};
///
/// let file = b"{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"t\",\"cwd\":\"/w\"}\nnot json\n";
/// let log = SessionLog::read(&file[..])?;
/// assert_eq!(log.header().map(|h| h.id), Some("s1".to_owned()));
/// assert_eq!(log.diagnostics().len(), 1);
/// assert_eq!(log.to_bytes(LastLine::AsRead), file, "kept byte for byte");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct SessionLog {
    lines: Vec<LogLine>,
    header: Option<usize>,
    title_slot: Option<usize>,
    diagnostics: Vec<Diagnostic>,
}

/// True when `v` is an omp-S title slot (docs/format.md, "oh-my-pi additions"); only valid on line 1.
pub fn is_title_slot(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("title")
        && v.get("v").and_then(Value::as_u64) == Some(1)
        && ["title", "updatedAt", "pad"].iter().all(|k| v.get(*k).is_some_and(Value::is_string))
}

impl SessionLog {
    /// Reads a log from bytes, one line at a time.
    pub fn read<R: Read>(reader: R) -> io::Result<SessionLog> {
        let mut lines = LineReader::new(BufReader::with_capacity(256 * 1024, reader));
        let mut log = SessionLog::default();
        let mut seen_record = false;
        while let Some(line) = lines.next_line()? {
            let (parsed, note, js_only) = parse_line_detail(line.bytes);
            let (number, offset) = (line.number, line.offset);
            if let Some(kind) = note {
                log.diagnostics.push(Diagnostic { line: number, offset, kind });
            }
            let kind = match parsed {
                Parsed::Blank => LineKind::Blank,
                Parsed::Skipped(kind) => {
                    log.diagnostics.push(Diagnostic { line: number, offset, kind });
                    LineKind::Skipped
                }
                Parsed::Object(v) if !seen_record && number == 1 && is_title_slot(&v) => {
                    log.title_slot = Some(log.lines.len());
                    log.diagnostics.push(Diagnostic { line: number, offset, kind: DiagnosticKind::TitleSlot });
                    LineKind::TitleSlot(v)
                }
                Parsed::Object(v) if !seen_record => {
                    seen_record = true;
                    if is_header(&v) {
                        log.header = Some(log.lines.len());
                        LineKind::Header(v)
                    } else {
                        let found = describe_record(&v);
                        log.diagnostics.push(Diagnostic {
                            line: number,
                            offset,
                            kind: DiagnosticKind::MissingHeader { found },
                        });
                        LineKind::Record(v)
                    }
                }
                Parsed::Object(v) if v.get("type").and_then(Value::as_str) == Some("session") => {
                    log.diagnostics.push(Diagnostic { line: number, offset, kind: DiagnosticKind::ExtraHeader });
                    LineKind::ExtraHeader(v)
                }
                Parsed::Object(v) => LineKind::Record(v),
            };
            log.lines.push(LogLine { number, offset, kind, raw: line.bytes.to_vec(), dirty: false, js_only });
        }
        Ok(log)
    }

    /// Reads a log from a file. Reading never modifies the file.
    pub fn read_path(path: &Path) -> Result<SessionLog, LogError> {
        let file = crate::files::bounded(crate::files::open_read(path)?, path)?;
        SessionLog::read(file).map_err(|e| LogError::io(path, e))
    }

    /// Every physical line, in order.
    pub fn lines(&self) -> &[LogLine] {
        &self.lines
    }

    /// What was wrong with the lines, in line order (entry-level problems come from [`SessionLog::entries`]).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// True when the file has a usable header (the first record is a session header with a string id).
    pub fn has_header(&self) -> bool {
        self.header.is_some()
    }

    /// The logical header: the header record with an omp-S title slot folded in.
    pub fn header(&self) -> Option<SessionHeader> {
        let line = self.lines.get(self.header?)?;
        let LineKind::Header(v) = &line.kind else { return None };
        let mut h = SessionHeader::from_line(v, &line.raw)?;
        if let Some(LineKind::TitleSlot(slot)) = self.title_slot.and_then(|i| self.lines.get(i)).map(|l| &l.kind) {
            match slot.get("title").and_then(Value::as_str) {
                Some("") | None => {
                    h.extra.shift_remove("title");
                }
                Some(t) => {
                    h.extra.insert("title".into(), Value::String(t.to_owned()));
                }
            }
            if let Some(src) = slot.get("source").and_then(Value::as_str) {
                h.extra.insert("titleSource".into(), Value::String(src.to_owned()));
            }
        }
        Some(h)
    }

    /// The text of the lines up to the header as the file holds them (an
    /// oh-my-pi title slot, then the header line; no final line end), when
    /// no migration changed them: what a clean copy of the file starts with.
    pub fn header_text(&self) -> Option<String> {
        let end = self.header?;
        let lines = self.lines.get(..=end)?;
        let before_ok = lines[..end].iter().all(|l| matches!(l.kind, LineKind::TitleSlot(_)));
        if !before_ok || lines.iter().any(|l| l.dirty) {
            return None;
        }
        let mut text: Vec<u8> = lines.iter().flat_map(|l| l.raw.iter().copied()).collect();
        if text.last() == Some(&b'\n') {
            text.pop();
            if text.last() == Some(&b'\r') {
                text.pop();
            }
        }
        String::from_utf8(text).ok()
    }

    /// The header record as read (and migrated), without the title slot folded in.
    pub fn header_value(&self) -> Option<&Value> {
        match &self.lines.get(self.header?)?.kind {
            LineKind::Header(v) => Some(v),
            _ => None,
        }
    }

    /// The format version of the header (`version ?? 1`).
    pub fn version(&self) -> Option<u64> {
        self.header().map(|h| h.version())
    }

    /// Runs the migrations the log needs (docs/format.md, "Migrations") on the parsed records.
    /// Changed lines are re-encoded when the log is written; the file is not touched.
    pub fn migrate(&mut self, ids: &mut dyn IdGenerator) -> MigrationReport {
        // pi migrates its `fileEntries`: every parsed record, extra headers included.
        let slots: Vec<usize> = self
            .lines
            .iter()
            .enumerate()
            .filter(|(_, l)| matches!(l.kind, LineKind::Header(_) | LineKind::ExtraHeader(_) | LineKind::Record(_)))
            .map(|(i, _)| i)
            .collect();
        let mut values: Vec<Value> = slots.iter().map(|&i| self.take_value(i)).collect();
        // The version as pi compares it, read from the line where the value cannot tell.
        let version = values
            .iter()
            .zip(&slots)
            .find(|(v, _)| is_session(v))
            .map(|(v, &i)| version_in_line(v.get("version"), &self.lines[i].raw));
        let report = migrate_from(&mut values, version, ids);
        for (k, (slot, v)) in slots.iter().zip(values).enumerate() {
            self.put_value(*slot, v);
            if report.changed.contains(&k) {
                self.lines[*slot].dirty = true;
            }
        }
        report
    }

    fn take_value(&mut self, i: usize) -> Value {
        match &mut self.lines[i].kind {
            LineKind::Header(v) | LineKind::ExtraHeader(v) | LineKind::Record(v) => std::mem::take(v),
            _ => Value::Null,
        }
    }

    fn put_value(&mut self, i: usize, value: Value) {
        if let LineKind::Header(v) | LineKind::ExtraHeader(v) | LineKind::Record(v) = &mut self.lines[i].kind {
            *v = value;
        }
    }

    /// True when any line was changed since reading.
    pub fn is_dirty(&self) -> bool {
        self.lines.iter().any(|l| l.dirty)
    }

    /// The records after the header, decoded as entries, in file order, with
    /// their line numbers. Records that are not entries come back as `Err`.
    /// A headerless log has no entries.
    pub fn entries(&self) -> impl Iterator<Item = (usize, Result<Entry, crate::entry::NotAnEntry>)> + '_ {
        let start = self.header.map_or(self.lines.len(), |h| h + 1);
        self.lines[start..].iter().filter_map(|l| match &l.kind {
            LineKind::Record(v) => Some((l.number, Entry::from_value(v))),
            _ => None,
        })
    }

    /// The entries that decode, plus a diagnostic for every record that does not
    /// and for every malformed known entry and duplicate id.
    pub fn entries_with_diagnostics(&self) -> (Vec<(usize, Entry)>, Vec<Diagnostic>) {
        let start = self.header.map_or(self.lines.len(), |h| h + 1);
        let records = self.lines[start..].iter().filter_map(|l| match &l.kind {
            LineKind::Record(v) => Some((l.number, l.offset, Entry::from_value(v), ())),
            _ => None,
        });
        let (entries, diags) = collect_entries(records);
        (entries.into_iter().map(|(line, e, ())| (line, e)).collect(), diags)
    }

    /// Like [`SessionLog::entries_with_diagnostics`], but consumes the log:
    /// each entry comes with its line's bytes (terminator included) and
    /// whether a migration changed it, and nothing is copied twice.
    pub fn into_entries(self) -> (Vec<(usize, Entry, OwnedLine)>, Vec<Diagnostic>) {
        let start = self.header.map_or(self.lines.len(), |h| h + 1);
        let records = self.lines.into_iter().skip(start).filter_map(|l| match l.kind {
            LineKind::Record(v) => {
                let line = if l.dirty {
                    // The record as the migration left it, written into its line.
                    let mut raw = changed_text(&l.raw, &v);
                    raw.push(b'\n');
                    OwnedLine { raw, dirty: true, js_only: l.js_only }
                } else {
                    OwnedLine { raw: l.raw, dirty: false, js_only: l.js_only }
                };
                Some((l.number, l.offset, Entry::from_owned(v), line))
            }
            _ => None,
        });
        collect_entries(records)
    }

    /// Writes the log: unchanged lines byte for byte, changed lines written into
    /// their text ([`crate::json::splice`]) and `\n`; the last line as `last` says.
    pub fn write_to<W: Write>(&self, w: &mut W, last: LastLine) -> io::Result<()> {
        let terminate = last == LastLine::Terminated;
        for line in &self.lines {
            if line.dirty {
                let v = match &line.kind {
                    LineKind::Header(v) | LineKind::ExtraHeader(v) | LineKind::Record(v) => v,
                    _ => continue,
                };
                w.write_all(&changed_text(&line.raw, v))?;
                w.write_all(b"\n")?;
            } else {
                w.write_all(&line.raw)?;
            }
        }
        if terminate && self.lines.last().is_some_and(|l| !l.dirty && l.raw.last() != Some(&b'\n')) {
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// The log as bytes (see [`SessionLog::write_to`]).
    pub fn to_bytes(&self, last: LastLine) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.write_to(&mut out, last);
        out
    }
}

/// The text of a record a migration changed: written into the line it was
/// read from, so that what the migration did not touch keeps its bytes
/// (`1e400`, big integers, `2.50`); written whole, as `JSON.stringify`
/// writes it, where the line cannot take it (not one object of distinct keys).
fn changed_text(raw: &[u8], v: &Value) -> Vec<u8> {
    crate::json::splice(raw, v).unwrap_or_else(|| crate::json::to_vec(v).unwrap_or_default())
}

/// A line's bytes, taken out of a consumed log.
///
/// ```
/// use arbor_log::SessionLog;
///
/// let file = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";
/// let (entries, _) = SessionLog::read(&file[..])?.into_entries();
/// let (_, entry, line) = &entries[0];
/// assert_eq!(entry.id, "a");
/// assert!(!line.dirty && line.raw.starts_with(b"{\"type\":\"message\""));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OwnedLine {
    /// The bytes as read, terminator included; for a record a migration
    /// changed, its new JSON text (what a rewrite writes).
    pub raw: Vec<u8>,
    /// True when a migration changed the record.
    pub dirty: bool,
    /// True when only JavaScript's reading accepts the line (see [`crate::reader::parse_line_detail`]).
    pub js_only: bool,
}

/// Keeps the records that are entries, with a diagnostic for each that is not,
/// for each malformed known entry and for each repeated id.
fn collect_entries<X>(
    records: impl Iterator<Item = (usize, u64, Result<Entry, crate::entry::NotAnEntry>, X)>,
) -> (Vec<(usize, Entry, X)>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let mut diags = Vec::new();
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    for (line, offset, res, extra) in records {
        match res {
            Ok(entry) => {
                if let EntryKind::Malformed { entry_type, error, .. } = &entry.kind {
                    diags.push(Diagnostic {
                        line,
                        offset,
                        kind: DiagnosticKind::MalformedEntry { entry_type: entry_type.clone(), error: error.clone() },
                    });
                }
                if let Some(first) = first_seen.get(&entry.id) {
                    diags.push(Diagnostic {
                        line,
                        offset,
                        kind: DiagnosticKind::DuplicateId { id: entry.id.clone(), first_line: *first },
                    });
                } else {
                    first_seen.insert(entry.id.clone(), line);
                }
                out.push((line, entry, extra));
            }
            Err(e) => {
                diags.push(Diagnostic { line, offset, kind: DiagnosticKind::NotAnEntry { reason: e.to_string() } })
            }
        }
    }
    (out, diags)
}

fn describe_record(v: &Value) -> String {
    match v.get("type").and_then(Value::as_str) {
        Some("session") => "a session header without a string id".to_owned(),
        Some(t) => format!("a {t:?} record"),
        None => "an object without a type".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::CounterIds;

    const V3: &str = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";

    #[test]
    fn round_trip_is_byte_identical_even_with_junk() {
        let data = format!("\u{feff}{V3}\r\n\nnot json\n42\n{{\"torn\":");
        let log = SessionLog::read(data.as_bytes()).unwrap();
        assert_eq!(log.to_bytes(LastLine::AsRead), data.as_bytes());
        assert!(log.to_bytes(LastLine::Terminated).ends_with(b"{\"torn\":\n"));
        let kinds: Vec<String> = log.diagnostics().iter().map(|d| d.to_string()).collect();
        assert_eq!(kinds.len(), 3, "{kinds:?}");
        assert!(kinds[2].starts_with("7: torn last line"), "{kinds:?}");
    }

    #[test]
    fn headerless_file_has_no_entries() {
        let log = SessionLog::read(&b"{\"type\":\"message\",\"id\":\"a\"}\n"[..]).unwrap();
        assert!(!log.has_header());
        assert_eq!(log.entries().count(), 0);
        assert!(log.diagnostics()[0].to_string().contains("no session header"));
    }

    #[test]
    fn title_slot_is_folded_into_the_header() {
        let slot =
            "{\"type\":\"title\",\"v\":1,\"title\":\"Fix\",\"source\":\"user\",\"updatedAt\":\"t\",\"pad\":\"  \"}\n";
        let log = SessionLog::read(format!("{slot}{V3}").as_bytes()).unwrap();
        let h = log.header().unwrap();
        assert_eq!(h.extra.get("title"), Some(&Value::String("Fix".into())));
        assert_eq!(h.extra.get("titleSource"), Some(&Value::String("user".into())));
        assert_eq!(log.entries().count(), 1);
    }

    #[test]
    fn migration_re_encodes_only_changed_lines() {
        let v2 = "{\"type\":\"session\",\"version\":2,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"message\":{\"role\":\"hookMessage\",\"content\":\"x\"}}\n";
        let mut log = SessionLog::read(v2.as_bytes()).unwrap();
        let report = log.migrate(&mut CounterIds::new());
        assert!(report.migrated());
        let out = String::from_utf8(log.to_bytes(LastLine::Terminated)).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}");
        assert_eq!(lines[1], v2.lines().nth(1).unwrap());
        assert!(lines[2].contains("\"role\":\"custom\""));
    }

    #[test]
    fn duplicate_ids_and_non_entries_are_reported() {
        let data = format!("{V3}{}\n{{\"type\":\"message\"}}\n", V3.lines().nth(1).unwrap());
        let log = SessionLog::read(data.as_bytes()).unwrap();
        let (entries, diags) = log.entries_with_diagnostics();
        assert_eq!(entries.len(), 2);
        let text: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
        assert_eq!(
            text,
            vec![
                "3: duplicate id a (first on line 2), the later line wins",
                "4: not an entry (no string \"id\"), skipped"
            ]
        );
    }
}
