//! Opening a file that grew since its index was written (docs/format.md,
//! "The index"): lines appended after the index (by Arbor, pi or any other
//! program) are read from the file, and only they; the index answers for
//! the rest. When the appended part is long, the index is extended by it
//! (a copy of the index, not a scan of the session) and opened again.
//!
//! Only a clean tail takes this path: whole entries with ids no entry holds,
//! that no entry names as an unresolved parent, whose parents come before
//! them. Anything else (a damaged or duplicate line, a second header) is
//! read the ordinary way, so it is diagnosed exactly as a full read does.

use std::collections::HashSet;
use std::io;
use std::sync::Arc;

use compact_str::CompactString;

use arbor_log::idhash::{IdHash, IdMap};
use arbor_log::scan::{read_exact_at, scan_source, ParentField, ReadAt, ScanKind, ScannedEntry};
use arbor_log::EntryKind;

use super::slot::Slot;
use super::{Disk, Session};
use crate::index::{IndexFile, IndexedEntry, LazyIndex};

/// A tail of at least this many entries, or of [`EXTEND_BYTES`], is added to the index.
const EXTEND_AT: usize = 1024;
const EXTEND_BYTES: u64 = 4 << 20;

/// The bytes of `src` from `start` on, as a source of their own.
#[derive(Debug)]
struct Window<'a> {
    src: &'a dyn ReadAt,
    start: u64,
    len: u64,
}

impl ReadAt for Window<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let left = self.len.saturating_sub(offset);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        self.src.read_at(&mut buf[..want], self.start + offset)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.len)
    }
}

/// The entries after the index's: each slot and the position its parent resolves to.
struct Tail {
    entries: Vec<(Slot, Option<usize>)>,
    bytes: u64,
}

impl Session {
    /// Loads through the index of an earlier state of the file and reads the
    /// lines appended since; false when there is no such index or the
    /// appended lines are not clean (the file is then read the ordinary way).
    pub(super) fn load_grown(&mut self, index: &IndexFile, src: &Arc<dyn ReadAt>) -> io::Result<bool> {
        let Some(base) = index.open_grown(&**src) else { return Ok(false) };
        let Some(tail) = read_tail(&base, &**src, index.stamp.size)? else { return Ok(false) };
        if tail.entries.len() >= EXTEND_AT || tail.bytes >= EXTEND_BYTES {
            let extended = {
                // The index borrows its ids, and the slots hold pi's packed: spell them out first.
                let names: Vec<Names> = tail.entries.iter().map(|(s, _)| names_of(s)).collect();
                let indexed: Option<Vec<IndexedEntry>> =
                    tail.entries.iter().zip(&names).map(|((s, p), n)| indexed(s, *p, n)).collect();
                let content = || crate::index::content_hash(&**src, index.stamp.size).ok();
                indexed.and_then(|e| Some((e, content()?))).is_some_and(|(e, content)| index.extend(&base, &e, content))
            };
            if extended {
                return self.load_indexed(index, src);
            }
        }
        if !self.load_lazy(base, src)? {
            return Ok(false);
        }
        for (slot, parent) in tail.entries {
            self.push_new(slot, parent);
        }
        self.disk = Disk::Synced { count: self.state.slots.len() };
        Ok(true)
    }
}

/// A slot's id and parent id, spelled out.
pub(super) type Names = (CompactString, Option<CompactString>);

pub(super) fn names_of(s: &Slot) -> Names {
    (CompactString::from(&*s.id()), s.parent_id().map(|p| CompactString::from(&*p)))
}

/// The index's record of a slot whose id and parent id are `names`; `None`
/// when the slot has no place in the file or a field does not fit the index.
pub(super) fn indexed<'a>(s: &Slot, parent: Option<usize>, names: &'a Names) -> Option<IndexedEntry<'a>> {
    let (offset, len) = s.src()?;
    Some(IndexedEntry {
        offset,
        len: u32::try_from(len).ok()?,
        line: u32::try_from(s.line()).ok()?,
        ts_ms: s.ts_ms(),
        js_only: s.js_only(),
        entry_type: s.entry_type().clone(),
        role: s.role().cloned(),
        id: &names.0,
        parent_id: names.1.as_deref(),
        parent,
    })
}

/// Reads the lines of `src` after the ones `base` covers, up to `size`;
/// `None` when they are not a clean tail (see the module docs).
fn read_tail(base: &LazyIndex, src: &dyn ReadAt, size: u64) -> io::Result<Option<Tail>> {
    let start = base.covered();
    let n = base.len();
    let Some(last) = n.checked_sub(1).and_then(|i| base.entries(i..n)).and_then(|mut e| e.pop()) else {
        return Ok(None);
    };
    // Physical lines before the tail: the last entry's, and any blank ones after it.
    let end = last.offset + u64::from(last.len);
    let gap = read_exact_at(src, end, usize::try_from(start.saturating_sub(end)).unwrap_or(0))?;
    let lines_before = last.line as usize + memchr::memchr_iter(b'\n', &gap).count();
    let window = Window { src, start, len: size - start };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let mut ids: IdMap<usize> = IdMap::default();
    let mut named: HashSet<CompactString, IdHash> = HashSet::default();
    let mut entries = vec![];
    for l in scan_source(&window, window.len, threads, true)? {
        let head = match l.kind {
            ScanKind::Blank if l.note.is_none() => continue,
            ScanKind::Object(head) if l.note.is_none() && head.not_an_entry().is_none() => head,
            _ => return Ok(None),
        };
        let malformed = matches!(head.entry.as_deref().map(|e| &e.kind), Some(EntryKind::Malformed { .. }));
        let Some(id) = head.id.clone() else { return Ok(None) };
        if malformed || head.entry_type.as_ref().is_some_and(|t| t.as_str() == "session") {
            return Ok(None);
        }
        if ids.contains_key(&id) || named.contains(&id) {
            return Ok(None);
        }
        let Some(rows) = base.find_id(&id) else { return Ok(None) };
        if rows.entry.is_some() || rows.names_parent {
            return Ok(None);
        }
        let parent = match &head.parent {
            ParentField::Root => None,
            ParentField::Id(p) if *p == id => return Ok(None),
            ParentField::Id(p) => match ids.get(p) {
                Some(&i) => Some(i),
                None => {
                    let Some(rows) = base.find_id(p) else { return Ok(None) };
                    if rows.entry.is_none() {
                        named.insert(p.clone());
                    }
                    rows.entry
                }
            },
        };
        ids.insert(id, n + entries.len());
        let entry = ScannedEntry { line: lines_before + l.number, offset: start + l.offset, len: l.len, head };
        entries.push((Slot::scanned(entry), parent));
    }
    Ok(Some(Tail { entries, bytes: size - start }))
}
