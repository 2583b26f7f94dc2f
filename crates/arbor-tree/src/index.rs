//! The index cache: what the light scan learned about a session file (each
//! entry's byte range, line, id, parent, type, role and time), so that
//! reopening an unchanged file skips the scan (docs/format.md, "The index").
//!
//! It is a cache and never the truth. It lives in Arbor's cache directory,
//! never beside the session ([`crate::paths::index_dir`]), in a file named
//! after the session file's identity (a hash of what [`Store::stamp`] calls
//! it: for local files the canonical path, device and inode). It is written
//! (atomically) only for a clean file (no diagnostics, ending in a newline,
//! at least [`MIN_INDEXED_BYTES`]), and read only when the file's size,
//! modification time, status change time (which an edit in place changes
//! even when it puts the modification time back) and a checksum of its
//! first and last 64 KiB match the ones recorded. Each line copied from the
//! file on the index's word is checked too (the session's `slot.rs`). A
//! missing, stale, truncated or corrupt index is ignored (and rewritten after
//! the scan); an unwritable cache directory means no index. Reading or
//! writing it never fails an open.
//!
//! Layout (little-endian): `ARBORIX4`, size u64, mtime ns i128, ctime ns
//! i128, checksum u64, header bytes u64, entry count u64, then per entry:
//! offset u64, length u32, line u32, flags u8 (1: has a timestamp, 2: only JavaScript's
//! reading accepts the line) + timestamp ms i64, type (its position in
//! [`EntryType::ALL`], or 255 + string), role (254 for none, its position in
//! [`Role::ALL`], or 255 + string), id (string), resolved parent (u32
//! position of the earlier entry the parent id resolves to, or `u32::MAX`),
//! and only when that is `u32::MAX` the parent id (flag u8 + string); strings
//! are u16 length + UTF-8. A resolved parent's id is that entry's id, so it
//! is not stored twice. An index of another version is ignored and rewritten.

use std::path::{Path, PathBuf};

use arbor_log::scan::{read_exact_at, ReadAt};
use arbor_log::{atomic_write, EntryType, Role};

use crate::store::Store;

/// The extension of an index file in the cache directory.
const INDEX_EXTENSION: &str = "arbor-index";

/// Files smaller than this are scanned, never indexed (the scan is cheaper than the file).
pub const MIN_INDEXED_BYTES: u64 = 1 << 20;

const MAGIC: &[u8; 8] = b"ARBORIX4";

const NAMED_STRING: u8 = 255;
const NO_ROLE: u8 = 254;
const NO_POSITION: u32 = u32::MAX;
const EDGE: u64 = 64 * 1024;

/// One entry as the index keeps it (its strings borrowed from the index bytes or the session).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IndexedEntry<'a> {
    pub offset: u64,
    pub len: u32,
    pub line: u32,
    pub ts_ms: Option<i64>,
    /// Only JavaScript's reading accepts the line (`arbor_log::reader::parse_line_detail`).
    pub js_only: bool,
    pub entry_type: EntryType,
    pub role: Option<Role>,
    pub id: &'a str,
    /// The parent id; stored (and decoded) only when `parent` is `None`.
    pub parent_id: Option<&'a str>,
    /// The position the parent resolves to: always before this entry's.
    pub parent: Option<usize>,
}

/// What the index says about the file as a whole.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Index<'a> {
    /// Bytes from the start of the file to the end of the header line.
    pub header_bytes: u64,
    pub entries: Vec<IndexedEntry<'a>>,
}

/// Size, modification time (ns since the epoch) and edge checksum of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub size: u64,
    pub mtime_ns: i128,
    pub changed_ns: i128,
    pub checksum: u64,
}

/// FNV-1a, 64 bits.
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// FNV-1a over the first and last 64 KiB: cheap, and catches a rewrite that kept size and time.
pub(crate) fn checksum(src: &dyn ReadAt, size: u64) -> std::io::Result<u64> {
    let mut h = Fnv::new();
    let head = read_exact_at(src, 0, EDGE.min(size) as usize)?;
    h.feed(&head);
    let tail_start = size.saturating_sub(EDGE);
    let tail = read_exact_at(src, tail_start, (size - tail_start) as usize)?;
    h.feed(&tail);
    Ok(h.0)
}

/// Where one session file's index lives, and the stamp it must carry.
#[derive(Debug, Clone)]
pub(crate) struct IndexFile {
    path: PathBuf,
    pub(crate) stamp: Stamp,
}

impl IndexFile {
    /// The index of the file at `path` in `dir`, when the store can name the
    /// file and stamp it and the file ends with a newline (an index never
    /// covers a half-written line).
    pub(crate) fn locate(dir: &Path, store: &dyn Store, path: &Path, src: &dyn ReadAt) -> Option<IndexFile> {
        let file = store.stamp(path)?;
        if src.len().ok()? != file.size || file.size == 0 {
            return None;
        }
        if read_exact_at(src, file.size - 1, 1).ok()? != b"\n" {
            return None;
        }
        let checksum = checksum(src, file.size).ok()?;
        let mut name = Fnv::new();
        name.feed(file.identity.as_bytes());
        Some(IndexFile {
            path: dir.join(format!("{:016x}.{INDEX_EXTENSION}", name.0)),
            stamp: Stamp { size: file.size, mtime_ns: file.mtime_ns, changed_ns: file.changed_ns, checksum },
        })
    }

    /// The index's bytes when there is one whose stamp matches.
    pub(crate) fn read(&self) -> Option<Vec<u8>> {
        let bytes = std::fs::read(&self.path).ok()?;
        (stamp_of(&bytes) == Some(self.stamp)).then_some(bytes)
    }

    /// Removes the index (it did not match the file).
    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// Writes the index atomically; a cache, so failing changes nothing.
    pub(crate) fn write(&self, bytes: &[u8]) {
        if let Some(dir) = self.path.parent() {
            if std::fs::create_dir_all(dir).is_ok() {
                let _ = atomic_write(&self.path, |w| w.write_all(bytes));
            }
        }
    }
}

/// The index's bytes; `None` when an entry does not fit the layout (a line of
/// 4 GiB or more, a string of 64 KiB or more): such a file is not indexed.
pub(crate) fn encode(stamp: Stamp, index: &Index) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(64 + index.entries.len() * 48);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&stamp.size.to_le_bytes());
    out.extend_from_slice(&stamp.mtime_ns.to_le_bytes());
    out.extend_from_slice(&stamp.changed_ns.to_le_bytes());
    out.extend_from_slice(&stamp.checksum.to_le_bytes());
    out.extend_from_slice(&index.header_bytes.to_le_bytes());
    out.extend_from_slice(&(index.entries.len() as u64).to_le_bytes());
    fn put_str(out: &mut Vec<u8>, s: &str) -> Option<()> {
        out.extend_from_slice(&u16::try_from(s.len()).ok()?.to_le_bytes());
        out.extend_from_slice(s.as_bytes());
        Some(())
    }
    /// A known name as its position in `known`, any other as 255 and the string.
    fn put_name<T: PartialEq + AsRef<str>>(out: &mut Vec<u8>, known: &[T], name: &T) -> Option<()> {
        match known.iter().position(|n| n == name) {
            Some(code) => out.push(code as u8),
            None => {
                out.push(NAMED_STRING);
                put_str(out, name.as_ref())?;
            }
        }
        Some(())
    }
    for e in &index.entries {
        out.extend_from_slice(&e.offset.to_le_bytes());
        out.extend_from_slice(&e.len.to_le_bytes());
        out.extend_from_slice(&e.line.to_le_bytes());
        out.push(u8::from(e.ts_ms.is_some()) | u8::from(e.js_only) << 1);
        out.extend_from_slice(&e.ts_ms.unwrap_or(0).to_le_bytes());
        put_name(&mut out, EntryType::ALL, &e.entry_type)?;
        match &e.role {
            None => out.push(NO_ROLE),
            Some(role) => put_name(&mut out, Role::ALL, role)?,
        }
        put_str(&mut out, e.id)?;
        match e.parent {
            Some(p) => out.extend_from_slice(&u32::try_from(p).ok().filter(|&p| p != NO_POSITION)?.to_le_bytes()),
            None => {
                out.extend_from_slice(&NO_POSITION.to_le_bytes());
                match e.parent_id {
                    Some(id) => {
                        out.push(1);
                        put_str(&mut out, id)?;
                    }
                    None => out.push(0),
                }
            }
        }
    }
    Some(out)
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2)?.try_into().ok().map(u16::from_le_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)?.try_into().ok().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)?.try_into().ok().map(u64::from_le_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take(8)?.try_into().ok().map(i64::from_le_bytes)
    }
    fn i128(&mut self) -> Option<i128> {
        self.take(16)?.try_into().ok().map(i128::from_le_bytes)
    }
    fn string(&mut self) -> Option<&'a str> {
        let n = usize::from(self.u16()?);
        std::str::from_utf8(self.take(n)?).ok()
    }
    fn opt_string(&mut self) -> Option<Option<&'a str>> {
        match self.u8()? {
            0 => Some(None),
            1 => self.string().map(Some),
            _ => None,
        }
    }
    /// A type or role: its position in `known`, or a string.
    fn name<T: Clone>(&mut self, code: u8, known: &[T], parse: fn(&str) -> T) -> Option<T> {
        match code {
            NAMED_STRING => self.string().map(parse),
            c => known.get(usize::from(c)).cloned(),
        }
    }
}

/// The stamp recorded in an index, if it has the right magic.
pub(crate) fn stamp_of(bytes: &[u8]) -> Option<Stamp> {
    let mut c = Cursor(bytes);
    if c.take(8)? != MAGIC {
        return None;
    }
    Some(Stamp { size: c.u64()?, mtime_ns: c.i128()?, changed_ns: c.i128()?, checksum: c.u64()? })
}

/// The entry count an index declares (bounded by what its bytes can hold), to reserve room.
pub(crate) fn entry_count(bytes: &[u8]) -> usize {
    let mut c = Cursor(bytes);
    let declared = c.take(64).and_then(|_| c.u64()).unwrap_or(0);
    usize::try_from(declared.min(bytes.len() as u64 / 33)).unwrap_or(0)
}

/// Decodes an index; `None` when it is corrupt in any way (it is then ignored).
#[cfg(test)]
pub(crate) fn decode(bytes: &[u8]) -> Option<Index<'_>> {
    let mut entries = Vec::new();
    let header_bytes = decode_each(bytes, |e| entries.push(e))?;
    Some(Index { header_bytes, entries })
}

/// Decodes an index, handing each entry to `each` in file order, and returns
/// the header's byte length; `None` when it is corrupt in any way (what
/// `each` was given must then be dropped).
pub(crate) fn decode_each<'a>(bytes: &'a [u8], mut each: impl FnMut(IndexedEntry<'a>)) -> Option<u64> {
    let mut c = Cursor(bytes);
    if c.take(8)? != MAGIC {
        return None;
    }
    let size = c.u64()?;
    c.i128()?;
    c.i128()?;
    c.u64()?;
    let header_bytes = c.u64()?;
    let n = c.u64()?;
    // Each entry takes at least 33 bytes: a count beyond that is corruption, not a reason to allocate.
    if n > (bytes.len() as u64) / 33 || header_bytes > size {
        return None;
    }
    let mut end = header_bytes;
    for k in 0..n {
        let offset = c.u64()?;
        let len = c.u32()?;
        let line = c.u32()?;
        let flags = c.u8()?;
        let ts = c.i64()?;
        let type_code = c.u8()?;
        let entry_type = c.name(type_code, EntryType::ALL, EntryType::parse)?;
        let role = match c.u8()? {
            NO_ROLE => None,
            code => Some(c.name(code, Role::ALL, Role::parse)?),
        };
        let id = c.string()?;
        let parent = c.u32()?;
        let (parent, parent_id) = match parent {
            NO_POSITION => (None, c.opt_string()?),
            p => (Some(p), None),
        };
        // Entries are in file order, inside the file, after the header; a
        // parent is an earlier entry (so the parents hold no cycle).
        if offset < end
            || offset.checked_add(u64::from(len))? > size
            || len == 0
            || flags > 3
            || parent.is_some_and(|p| u64::from(p) >= k)
        {
            return None;
        }
        let parent = match parent {
            Some(p) => Some(usize::try_from(p).ok()?),
            None => None,
        };
        end = offset + u64::from(len);
        each(IndexedEntry {
            offset,
            len,
            line,
            ts_ms: (flags & 1 == 1).then_some(ts),
            js_only: flags & 2 == 2,
            entry_type,
            role,
            id,
            parent_id,
            parent,
        });
    }
    if !c.0.is_empty() {
        return None;
    }
    Some(header_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let index = Index {
            header_bytes: 10,
            entries: vec![
                IndexedEntry {
                    offset: 10,
                    len: 5,
                    line: 2,
                    ts_ms: Some(-3),
                    js_only: false,
                    entry_type: EntryType::Message,
                    role: Some(Role::User),
                    id: "a",
                    parent_id: None,
                    parent: None,
                },
                IndexedEntry {
                    offset: 15,
                    len: 5,
                    line: 3,
                    ts_ms: None,
                    js_only: true,
                    entry_type: EntryType::parse("x"),
                    role: None,
                    id: "b",
                    parent_id: None,
                    parent: Some(0),
                },
                // A type and role Arbor does not know, a parent id that resolves to nothing.
                IndexedEntry {
                    offset: 21,
                    len: 4,
                    line: 5,
                    ts_ms: Some(i64::MAX),
                    js_only: false,
                    entry_type: EntryType::parse("weird_type"),
                    role: Some(Role::parse("narrator")),
                    id: "c",
                    parent_id: Some("missing"),
                    parent: None,
                },
            ],
        };
        let stamp = Stamp { size: 25, mtime_ns: 7, changed_ns: 8, checksum: 9 };
        let bytes = encode(stamp, &index).unwrap();
        assert_eq!(stamp_of(&bytes), Some(stamp));
        assert_eq!(entry_count(&bytes), 3);
        assert_eq!(entry_count(&bytes[..66]), 0);
        assert_eq!(decode(&bytes), Some(index.clone()));
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut]), None, "truncated at {cut}");
        }
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert_eq!(decode(&bad), None);
        // What does not fit the layout is not indexed.
        let mut long = index.clone();
        let id = "x".repeat(70_000);
        long.entries[0].id = &id;
        assert_eq!(encode(stamp, &long), None);
        // A parent that is not an earlier entry (which could make a cycle) is corruption.
        for parent in [Some(1), Some(2)] {
            let mut forward = index.clone();
            forward.entries[1].parent = parent;
            assert_eq!(decode(&encode(stamp, &forward).unwrap()), None, "parent {parent:?}");
        }
    }
}
