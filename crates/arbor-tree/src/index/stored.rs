//! An index a store keeps itself, beside the session (a server that
//! maintains it in the transaction of every write), so that the first open
//! of a session on a new machine reads what the command needs, not the
//! session (docs/format.md, "The index").
//!
//! The index is the cache's, part for part: the same columns (each entry's
//! resolved parent, its type and role codes, its 32-byte record, its
//! strings), which a store keeps as four byte streams that only grow
//! ([`Part`]), and the id table, which a store answers by lookups
//! ([`IndexSource::id_rows`]) instead of sorted rows. [`scan`] and
//! [`Scanned::finish`] make the parts of lines added to a session, so every
//! store writes exactly the bytes the cache would hold; loading opens them as
//! it opens the cache's index (`LazyIndex`), and every line copied on their
//! word is checked against the session as it is (`session/verify.rs`), so a
//! store's index is never more trusted than the cache's.
//!
//! Only a clean session is indexed, as for the cache: a v3 header on its
//! first line, then whole lines that are entries (or blank), each with an
//! id no earlier entry holds or names as a parent it cannot find, its
//! parent an earlier entry or none. Anything else is [`Unindexable`]: the
//! store then keeps no index for that session until it is replaced whole.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::Arc;

use compact_str::CompactString;

use arbor_log::scan::{scan_line, ParentField, ReadAt, RecordHead, ScanKind};
use arbor_log::{EntryKind, SessionLog, CURRENT_VERSION};

use super::{fixed, Columns, IndexedEntry, LazyIndex, Stamp, FIXED, NAMES_PARENT, RECORD};

/// One of the byte streams an index kept by a store is made of: each grows
/// at its end when entries are added (the bytes [`Scanned::finish`] gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// Each entry's resolved parent: 4 bytes an entry.
    Parents,
    /// Each entry's type and role codes: 2 bytes an entry.
    Kinds,
    /// Each entry's place, line, time, flags and where its strings start: 32 bytes an entry.
    Records,
    /// The entries' strings (ids, unresolved parent ids, names of types and roles the codes cannot name).
    Strings,
}

impl Part {
    /// Every part, in the order a store may number them (0 to 3).
    pub const ALL: [Part; 4] = [Part::Parents, Part::Kinds, Part::Records, Part::Strings];

    /// The part's number (0 to 3), for a store's tables.
    pub fn code(self) -> u8 {
        match self {
            Part::Parents => 0,
            Part::Kinds => 1,
            Part::Records => 2,
            Part::Strings => 3,
        }
    }

    /// Bytes of the part per entry (`None` for the strings, whose length varies).
    fn per_entry(self) -> Option<u64> {
        match self {
            Part::Parents => Some(4),
            Part::Kinds => Some(2),
            Part::Records => Some(RECORD as u64),
            Part::Strings => None,
        }
    }
}

/// How far an index kept by a store reaches: what it holds and the part of
/// the session it covers. [`Extent::default`] is the index of an empty
/// session (no line yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extent {
    /// Entries indexed.
    pub entries: u64,
    /// Bytes of [`Part::Strings`].
    pub strings: u64,
    /// Bytes of the session's header line (0 before it is written).
    pub header_bytes: u64,
    /// Physical lines of the session covered.
    pub lines: u64,
    /// Bytes of the session covered: the index answers for a session of
    /// exactly this size.
    pub bytes: u64,
}

impl Extent {
    /// The length of `part`.
    pub fn len_of(&self, part: Part) -> u64 {
        part.per_entry().map_or(self.strings, |b| b * self.entries)
    }
}

/// One row of an index's id table: the entry at `position` holds the id
/// asked for, or (with `names_parent`) names it as its parent, which no
/// entry before it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRow {
    /// The entry's position (0 is the first entry after the header).
    pub position: u32,
    /// True when the entry names the id as a parent it cannot find.
    pub names_parent: bool,
}

/// How a store reads the index it keeps of one session, as that session
/// was when it was opened (an [`Extent`] says how far).
pub trait IndexSource: Send + Sync + fmt::Debug {
    /// Reads bytes of `part` from `offset` into `buf` (as [`ReadAt::read_at`]).
    fn read_part(&self, part: Part, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// The id rows of `id`: every entry holding it or naming it as a
    /// parent it cannot find (rows of entries past the extent are ignored).
    fn id_rows(&self, id: &str) -> io::Result<Vec<IdRow>>;
}

/// An index a store keeps of a session, handed to the load by
/// [`crate::Store::open_indexed`] for exactly the bytes its reader reads.
#[derive(Debug, Clone)]
pub struct StoredIndex {
    source: Arc<dyn IndexSource>,
    extent: Extent,
}

impl StoredIndex {
    /// The index `source` reads, reaching as far as `extent`.
    pub fn new(source: Arc<dyn IndexSource>, extent: Extent) -> StoredIndex {
        StoredIndex { source, extent }
    }

    /// How far it reaches.
    pub fn extent(&self) -> Extent {
        self.extent
    }

    /// The index opened as the cache's is (`None` when its counts do not
    /// hold together, or there is no entry: such a session is scanned).
    pub(crate) fn open(self) -> Option<LazyIndex> {
        let e = self.extent;
        if e.entries == 0 || e.header_bytes == 0 || e.entries >= u64::from(NAMES_PARENT) {
            return None;
        }
        let stamp = Stamp { size: e.bytes, mtime_ns: 0, changed_ns: 0, checksum: 0 };
        let head = fixed(stamp, 0, e.header_bytes, e.entries, e.strings, 0);
        let file = Laid { head, extent: e, source: self.source.clone() };
        let mut lazy = LazyIndex::open(Box::new(file), stamp)?;
        lazy.ids = Some(self.source);
        Some(lazy)
    }
}

/// The parts laid out as the cache's index file (its fixed part made here,
/// no id rows): what `LazyIndex` reads.
#[derive(Debug)]
struct Laid {
    head: Vec<u8>,
    extent: Extent,
    source: Arc<dyn IndexSource>,
}

impl ReadAt for Laid {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        if offset < FIXED {
            let from = &self.head[offset as usize..];
            let n = from.len().min(buf.len());
            buf[..n].copy_from_slice(&from[..n]);
            return Ok(n);
        }
        let mut start = FIXED;
        for part in Part::ALL {
            let len = self.extent.len_of(part);
            if offset < start + len {
                let at = offset - start;
                let n = buf.len().min(usize::try_from(len - at).unwrap_or(usize::MAX));
                return self.source.read_part(part, &mut buf[..n], at);
            }
            start += len;
        }
        Ok(0)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(FIXED + Part::ALL.iter().map(|&p| self.extent.len_of(p)).sum::<u64>())
    }
}

/// Why lines cannot be indexed (the store keeps no index of the session then).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct Unindexable {
    /// The session's line at fault (1-based).
    pub line: u64,
    /// What is wrong with it for an index.
    pub reason: &'static str,
}

/// One entry line read for the index.
#[derive(Debug)]
struct Line {
    offset: u64,
    len: u64,
    line: u64,
    head: RecordHead,
}

/// Lines added to a session, read for its index ([`scan`]).
#[derive(Debug)]
pub struct Scanned {
    at: Extent,
    header_bytes: u64,
    entries: Vec<Line>,
    lines: u64,
    bytes: u64,
}

/// The index parts of lines added to a session ([`Scanned::finish`]): the
/// bytes to add at the end of each [`Part`], the id rows to add, and how
/// far the index then reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addition {
    /// The bytes to add to each part, in [`Part::ALL`]'s order.
    pub parts: [Vec<u8>; 4],
    /// The id rows to add: each new entry's id, and each parent id a new
    /// entry names that no entry holds.
    pub ids: Vec<(CompactString, IdRow)>,
    /// The index once they are added.
    pub extent: Extent,
}

/// Reads `lines` (whole physical lines, each ending in a newline) added to
/// a session whose index reaches `at` (its end: [`Extent::bytes`] and
/// [`Extent::lines`] are where the lines start). The first line of an empty
/// session must be a current-version header.
pub fn scan(at: Extent, lines: &[&[u8]]) -> Result<Scanned, Unindexable> {
    let mut out = Scanned { at, header_bytes: at.header_bytes, entries: vec![], lines: at.lines, bytes: at.bytes };
    for l in lines {
        out.lines += 1;
        let (offset, number) = (out.bytes, out.lines);
        out.bytes += l.len() as u64;
        let bad = |reason| Err(Unindexable { line: number, reason });
        if l.last() != Some(&b'\n') {
            return bad("no newline at its end");
        }
        if out.header_bytes == 0 {
            if number != 1 {
                return bad("no header before it");
            }
            let log = SessionLog::read(*l).map_err(|_| Unindexable { line: number, reason: "unreadable" })?;
            match log.header() {
                Some(h) if h.version() == CURRENT_VERSION && log.diagnostics().is_empty() => {}
                _ => return bad("not a current-version session header"),
            }
            out.header_bytes = l.len() as u64;
            continue;
        }
        let head = match scan_line(l, true) {
            (_, Some(_)) => return bad("a line the reader notes"),
            (ScanKind::Blank, None) => continue,
            (ScanKind::Skipped(_), None) => return bad("not a record"),
            (ScanKind::Object(head), None) => head,
        };
        if head.not_an_entry().is_some() || head.entry_type.as_ref().is_some_and(|t| t.as_str() == "session") {
            return bad("not an entry");
        }
        if matches!(head.entry.as_deref().map(|e| &e.kind), Some(EntryKind::Malformed { .. })) {
            return bad("a malformed entry");
        }
        out.entries.push(Line { offset, len: l.len() as u64, line: number, head });
    }
    Ok(out)
}

impl Scanned {
    /// The ids whose rows [`Scanned::finish`] needs from the index so far:
    /// every new entry's id, and the parent ids the new lines do not hold.
    pub fn lookups(&self) -> Vec<&str> {
        let mut here: HashMap<&str, ()> = HashMap::new();
        let mut out = vec![];
        for e in &self.entries {
            let id = e.head.id.as_deref().unwrap_or_default();
            if let ParentField::Id(p) = &e.head.parent {
                if !here.contains_key(p.as_str()) {
                    out.push(p.as_str());
                }
            }
            here.insert(id, ());
            out.push(id);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The parts to add, given the id rows the index so far holds for each
    /// id of [`Scanned::lookups`] (`rows`); [`Unindexable`] when an id is
    /// taken already (or named as a parent no entry held), or an entry does
    /// not fit the index's layout.
    pub fn finish(self, rows: &dyn Fn(&str) -> Vec<IdRow>) -> Result<Addition, Unindexable> {
        let first = self.at.entries;
        let mut here: HashMap<&str, u64> = HashMap::new();
        // Parent ids new entries name that no entry holds.
        let mut missing: HashMap<&str, ()> = HashMap::new();
        let mut entries = Vec::with_capacity(self.entries.len());
        let mut ids = Vec::with_capacity(self.entries.len());
        for (k, e) in self.entries.iter().enumerate() {
            let bad = |reason| Err(Unindexable { line: e.line, reason });
            let pos = first + k as u64;
            let position = u32::try_from(pos).ok().filter(|&p| p < NAMES_PARENT);
            let (Some(position), Some(id)) = (position, e.head.id.as_deref()) else {
                return bad("past the index's size");
            };
            let before = rows(id);
            if here.contains_key(id) || missing.contains_key(id) || !before.is_empty() {
                return bad("an id an earlier entry holds or names");
            }
            let (parent, parent_id) = match &e.head.parent {
                ParentField::Root => (None, None),
                ParentField::Id(p) if p == id => return bad("its own parent"),
                ParentField::Id(p) => {
                    let found = here
                        .get(p.as_str())
                        .copied()
                        .or_else(|| rows(p).iter().find(|r| !r.names_parent).map(|r| u64::from(r.position)));
                    if found.is_none() {
                        missing.insert(p.as_str(), ());
                        ids.push((p.clone(), IdRow { position, names_parent: true }));
                    }
                    (found.and_then(|f| usize::try_from(f).ok()), Some(p.as_str()))
                }
            };
            here.insert(id, pos);
            ids.push((CompactString::from(id), IdRow { position, names_parent: false }));
            let (Ok(len), Ok(line)) = (u32::try_from(e.len), u32::try_from(e.line)) else {
                return bad("past the index's size");
            };
            entries.push(IndexedEntry {
                offset: e.offset,
                len,
                line,
                ts_ms: e.head.ts_ms,
                js_only: e.head.js_only,
                entry_type: e.head.entry_type.clone().unwrap_or_else(|| arbor_log::EntryType::parse("")),
                role: e.head.role.clone(),
                id,
                parent_id,
                parent,
            });
        }
        let start = usize::try_from(first).map_err(|_| Unindexable { line: self.lines, reason: "too many entries" })?;
        let Some(cols) = Columns::of(&entries, start, self.at.strings) else {
            let line = self.entries.first().map_or(self.lines, |e| e.line);
            return Err(Unindexable { line, reason: "an entry that does not fit the index" });
        };
        let extent = Extent {
            entries: first + entries.len() as u64,
            strings: self.at.strings + cols.strings.len() as u64,
            header_bytes: self.header_bytes,
            lines: self.lines,
            bytes: self.bytes,
        };
        Ok(Addition { parts: [cols.parents, cols.kinds, cols.records, cols.strings], ids, extent })
    }
}
