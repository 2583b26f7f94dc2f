//! The index cache: what the light scan learned about a session file (each
//! entry's byte range, line, id, parent, type, role and time), so that
//! reopening an unchanged file skips the scan (docs/format.md, "The index").
//!
//! It is a cache and never the truth. It lives in the directory
//! [`crate::SessionOptions::index_dir`] names (none by default; the CLI names
//! Arbor's cache directory, [`crate::paths::index_dir`]), never beside the
//! session, in a file named after the session file's identity (a hash of what [`Store::stamp`] calls
//! it: for local files the canonical path, device and inode). It is written
//! (atomically) only for a clean file (no diagnostics, ending in a newline,
//! at least [`MIN_INDEXED_BYTES`]), and read only when the file's size,
//! modification time, status change time (which an edit in place changes
//! even when it puts the modification time back) and a checksum of its
//! first and last 64 KiB match the ones recorded. An index of a file that
//! has grown since answers for the bytes it covers only when they are still
//! the bytes it was made from: the content hash of every covered byte
//! ([`content_hash`], xxh3 over 1 MiB blocks on all cores) is checked, so an
//! append never vouches for an edit before it. Each line copied from the
//! file on the index's word is checked too (the session's `slot.rs`). A
//! missing, stale, truncated or corrupt index is ignored (and rewritten after
//! the scan); an unwritable cache directory means no index. Reading or
//! writing it never fails an open.
//!
//! It is read lazily ([`LazyIndex`]): opening reads the fixed header; the
//! two small columns (each entry's resolved parent, type and role: 6 bytes
//! an entry) are read and checked 16,384 entries at a time (`block.rs`, which
//! also walks a path up the parents column), and the rest of
//! an entry (its byte range, line, time, id) a run of entries at a time,
//! with positioned reads, when something asks for it. So reopening a
//! million-entry session and printing the context at its leaf reads a few
//! MB of the index, and an append a few hundred KB, whatever the session's size.
//! Whether an id is taken is answered by the id rows (`ids.rs`); an index
//! of a file that only grew since still answers for what it covers, and is
//! extended by what was appended (`extend.rs`).
//!
//! Layout (little-endian): `ARBORIX7`, size u64, mtime ns i128, ctime ns
//! i128, checksum u64, content u64 (see below), header bytes u64, entry count n u64, strings length
//! u64, id row count r u64; then the columns: n resolved parents (u32
//! position of the earlier entry the parent id resolves to, or `u32::MAX`), n
//! kinds (type u8: its position in [`EntryType::ALL`] or 255 for a name in
//! the strings; role u8: its position in [`Role::ALL`], 254 for none, 255 for
//! a name in the strings), n records of 32 bytes (offset u64, length u32,
//! line u32, timestamp ms i64, strings offset u32, flags u8 (1: has a
//! timestamp, 2: only JavaScript's reading accepts the line), 3 zero bytes);
//! then the strings, entry after entry: the id, and only when the parent is
//! `u32::MAX` the parent id (flag u8 + string), then a type name and a role
//! name where the kinds say 255; a string is u16 length + UTF-8; then r id
//! rows of 12 bytes sorted (FNV-1a hash of a string u64, position u32): each
//! entry's id at its position, each unresolved parent id at its child's
//! position plus 2^31. A resolved parent's id is that entry's id, so it is
//! not stored twice. An index of another version is ignored and rewritten.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use arbor_log::scan::{read_exact_at, ReadAt};
use arbor_log::{atomic_write_file, EntryType, Role};

use crate::store::Store;

mod block;
mod content;
mod extend;
mod ids;
pub mod stored;
mod write;

use block::{Block, BLOCK};
pub(crate) use content::{content_hash, content_of};

pub(crate) use ids::IdRows;
pub(crate) use write::IndexWriter;

/// The extension of an index file in the cache directory.
const INDEX_EXTENSION: &str = "arbor-index";

/// Files smaller than this are scanned, never indexed (the scan is cheaper than the file).
pub const MIN_INDEXED_BYTES: u64 = 1 << 20;

const MAGIC: &[u8; 8] = b"ARBORIX7";

const NAMED_STRING: u8 = 255;
const NO_ROLE: u8 = 254;
const NO_POSITION: u32 = u32::MAX;
/// Set in an id row's position: the row is the unresolved parent id of the entry there.
pub(crate) const NAMES_PARENT: u32 = 1 << 31;
/// Bytes of one id row.
pub(crate) const ROW: usize = 12;
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

#[cfg(test)]
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
pub(crate) struct Fnv(u64);

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
        let (stamp, identity) = stamp_file(store, path, src)?;
        let mut name = Fnv::new();
        name.feed(identity.as_bytes());
        Some(IndexFile { path: dir.join(format!("{:016x}.{INDEX_EXTENSION}", name.0)), stamp })
    }

    /// The same index for the file as `stamp` says it is now (the file may
    /// have changed since [`IndexFile::locate`]).
    pub(crate) fn with_stamp(self, stamp: Stamp) -> IndexFile {
        IndexFile { stamp, ..self }
    }

    /// Writes the index atomically, `write` placing its bytes in the
    /// temporary file ([`IndexWriter`]), and opens it for reading; a cache,
    /// so failing changes nothing.
    pub(crate) fn write_and_open(
        &self,
        write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
    ) -> Option<LazyIndex> {
        let dir = self.path.parent()?;
        std::fs::create_dir_all(dir).ok()?;
        atomic_write_file(&self.path, write).ok()?;
        self.open()
    }

    /// The index, opened for lazy reading, when there is one whose stamp matches.
    pub(crate) fn open(&self) -> Option<LazyIndex> {
        let file = std::fs::File::open(&self.path).ok()?;
        LazyIndex::open(Box::new(file), self.stamp)
    }

    /// Removes the index (it did not match the file).
    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The stamp of the file at `path` as it is now (see [`IndexFile::locate`]).
pub(crate) fn stamp_now(store: &dyn Store, path: &Path, src: &dyn ReadAt) -> Option<Stamp> {
    stamp_file(store, path, src).map(|(stamp, _)| stamp)
}

/// The stamp of the file at `path` and what names it (see [`IndexFile::locate`]).
fn stamp_file(store: &dyn Store, path: &Path, src: &dyn ReadAt) -> Option<(Stamp, String)> {
    let file = store.stamp(path)?;
    if src.len().ok()? != file.size || file.size == 0 {
        return None;
    }
    if read_exact_at(src, file.size - 1, 1).ok()? != b"\n" {
        return None;
    }
    let checksum = checksum(src, file.size).ok()?;
    let stamp = Stamp { size: file.size, mtime_ns: file.mtime_ns, changed_ns: file.changed_ns, checksum };
    Some((stamp, file.identity))
}

/// An index that only this process reads, of the file `stamp` describes:
/// written by `write` to a temporary file that has no name (it is gone when
/// the index is dropped), for a file that gets no index in the cache (no
/// index directory named, or one that cannot be written), so that reading it
/// holds what reading through the cache's index holds. It goes to the index
/// directory the options name when it exists (on disk, where the index
/// would be), else to the system's temporary directory: never anywhere
/// visible, whatever the options say.
pub(crate) fn private_index(
    dir: Option<&Path>,
    stamp: Stamp,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Option<LazyIndex> {
    let in_cache = dir.filter(|d| d.is_dir()).and_then(|d| tempfile::tempfile_in(d).ok());
    let mut file = in_cache.or_else(|| tempfile::tempfile().ok())?;
    write(&mut file).ok()?;
    LazyIndex::open(Box::new(file), stamp)
}

/// Bytes before the columns: magic, stamp, content hash, header bytes, entry count, strings length, id rows.
const FIXED: u64 = 96;
/// Where the content hash is in the fixed part.
pub(crate) const CONTENT_AT: usize = 56;
/// Bytes of one entry's fixed record.
const RECORD: usize = 32;
/// Bytes per entry in the columns and the records.
const PER_ENTRY: u64 = 4 + 2 + RECORD as u64;

/// The index's bytes; `None` when an entry does not fit the layout (a line of
/// 4 GiB or more, a string of 64 KiB or more, strings of 4 GiB or more, 2^31
/// entries or more): such a file is not indexed.
#[cfg(test)]
pub(crate) fn encode(stamp: Stamp, index: &Index) -> Option<Vec<u8>> {
    let mut cols = Columns::of(&index.entries, 0, 0)?;
    cols.rows.sort_unstable();
    let (n, strings, rows) = (index.entries.len() as u64, cols.strings.len() as u64, cols.rows.len() as u64);
    let head = fixed(stamp, 0, index.header_bytes, n, strings, rows);
    let mut out = Vec::with_capacity(
        head.len()
            + cols.parents.len()
            + cols.kinds.len()
            + cols.records.len()
            + cols.strings.len()
            + cols.rows.len() * ROW,
    );
    out.extend_from_slice(&head);
    for part in [&cols.parents, &cols.kinds, &cols.records, &cols.strings] {
        out.extend_from_slice(part);
    }
    for row in &cols.rows {
        out.extend_from_slice(&row_bytes(*row));
    }
    Some(out)
}

/// The fixed part of an index: magic, stamp, content hash ([`content_hash`]
/// of the `stamp.size` bytes indexed; 0 when not known), header bytes, entry
/// count, strings length, id rows.
pub(crate) fn fixed(stamp: Stamp, content: u64, header_bytes: u64, n: u64, strings_len: u64, rows: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(FIXED as usize);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&stamp.size.to_le_bytes());
    out.extend_from_slice(&stamp.mtime_ns.to_le_bytes());
    out.extend_from_slice(&stamp.changed_ns.to_le_bytes());
    out.extend_from_slice(&stamp.checksum.to_le_bytes());
    out.extend_from_slice(&content.to_le_bytes());
    out.extend_from_slice(&header_bytes.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&strings_len.to_le_bytes());
    out.extend_from_slice(&rows.to_le_bytes());
    out
}

/// The columns of a run of entries, the first at position `first`, its
/// strings placed `strings_at` bytes into the index's strings.
pub(crate) struct Columns {
    pub parents: Vec<u8>,
    pub kinds: Vec<u8>,
    pub records: Vec<u8>,
    pub strings: Vec<u8>,
    /// The id rows (unsorted): each id's hash and position, and each
    /// unresolved parent id's hash and its child's position with [`NAMES_PARENT`].
    pub rows: Vec<(u64, u32)>,
}

impl Columns {
    pub(crate) fn of(entries: &[IndexedEntry], first: usize, strings_at: u64) -> Option<Columns> {
        let n = entries.len();
        let mut c = Columns {
            parents: Vec::with_capacity(n * 4),
            kinds: Vec::with_capacity(n * 2),
            records: Vec::with_capacity(n * RECORD),
            strings: Vec::with_capacity(n * 12),
            rows: Vec::with_capacity(n),
        };
        fn put_str(out: &mut Vec<u8>, s: &str) -> Option<()> {
            out.extend_from_slice(&u16::try_from(s.len()).ok()?.to_le_bytes());
            out.extend_from_slice(s.as_bytes());
            Some(())
        }
        /// A known name's position in `known`, or 255 (its string goes to the strings).
        fn code<T: PartialEq>(known: &[T], name: &T) -> u8 {
            known.iter().position(|n| n == name).map_or(NAMED_STRING, |c| c as u8)
        }
        for (k, e) in entries.iter().enumerate() {
            let pos = u32::try_from(first + k).ok().filter(|&p| p < NAMES_PARENT)?;
            let parent = match e.parent {
                Some(p) => u32::try_from(p).ok().filter(|&p| p != NO_POSITION)?,
                None => NO_POSITION,
            };
            c.parents.extend_from_slice(&parent.to_le_bytes());
            let type_code = code(EntryType::ALL, &e.entry_type);
            let role_code = e.role.as_ref().map_or(NO_ROLE, |r| code(Role::ALL, r));
            c.kinds.extend_from_slice(&[type_code, role_code]);
            c.records.extend_from_slice(&e.offset.to_le_bytes());
            c.records.extend_from_slice(&e.len.to_le_bytes());
            c.records.extend_from_slice(&e.line.to_le_bytes());
            c.records.extend_from_slice(&e.ts_ms.unwrap_or(0).to_le_bytes());
            let at = strings_at.checked_add(c.strings.len() as u64)?;
            c.records.extend_from_slice(&u32::try_from(at).ok()?.to_le_bytes());
            c.records.extend_from_slice(&[u8::from(e.ts_ms.is_some()) | u8::from(e.js_only) << 1, 0, 0, 0]);
            put_str(&mut c.strings, e.id)?;
            let unresolved = if parent == NO_POSITION { e.parent_id } else { None };
            id_rows(pos, e.id, unresolved, &mut |row| c.rows.push(row));
            if parent == NO_POSITION {
                match e.parent_id {
                    Some(id) => {
                        c.strings.push(1);
                        put_str(&mut c.strings, id)?;
                    }
                    None => c.strings.push(0),
                }
            }
            if type_code == NAMED_STRING {
                put_str(&mut c.strings, e.entry_type.as_str())?;
            }
            if role_code == NAMED_STRING {
                put_str(&mut c.strings, e.role.as_ref()?.as_str())?;
            }
        }
        u32::try_from(strings_at.checked_add(c.strings.len() as u64)?).ok()?;
        Some(c)
    }
}

/// The id rows of the entry at `pos`: its id, and the parent id it names
/// when that resolves to no entry (`unresolved_parent`).
pub(crate) fn id_rows(pos: u32, id: &str, unresolved_parent: Option<&str>, emit: &mut dyn FnMut((u64, u32))) {
    emit((id_hash(id), pos));
    if let Some(parent) = unresolved_parent {
        emit((id_hash(parent), pos | NAMES_PARENT));
    }
}

/// The hash an id row is sorted by (FNV-1a: stable across processes and releases).
pub(crate) fn id_hash(id: &str) -> u64 {
    let mut h = Fnv::new();
    h.feed(id.as_bytes());
    h.0
}

/// One id row's bytes: hash, then position.
pub(crate) fn row_bytes((hash, pos): (u64, u32)) -> [u8; ROW] {
    let mut out = [0u8; ROW];
    out[..8].copy_from_slice(&hash.to_le_bytes());
    out[8..].copy_from_slice(&pos.to_le_bytes());
    out
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
}

/// The stamp recorded in an index, if it has the right magic.
pub(crate) fn stamp_of(bytes: &[u8]) -> Option<Stamp> {
    let mut c = Cursor(bytes);
    if c.take(8)? != MAGIC {
        return None;
    }
    Some(Stamp { size: c.u64()?, mtime_ns: c.i128()?, changed_ns: c.i128()?, checksum: c.u64()? })
}

/// One entry read from the index, owning its strings.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReadEntry {
    pub offset: u64,
    pub len: u32,
    pub line: u32,
    pub ts_ms: Option<i64>,
    pub js_only: bool,
    pub entry_type: EntryType,
    pub role: Option<Role>,
    pub id: compact_str::CompactString,
    /// The parent id when it resolves to no entry (`parent` is `None`).
    pub parent_id: Option<compact_str::CompactString>,
    /// The position the parent resolves to: always before this entry's.
    pub parent: Option<usize>,
}

/// An index opened for reading: its columns read a block at a time when
/// first asked for, the rest on demand from the index file with positioned
/// reads (see the module docs).
#[derive(Debug)]
pub(crate) struct LazyIndex {
    file: Box<dyn ReadAt>,
    /// The session file's size when indexed.
    size: u64,
    /// The content hash of those bytes ([`content_hash`]; 0 when not known).
    pub(crate) content: u64,
    pub(crate) header_bytes: u64,
    n: usize,
    strings_len: u64,
    /// The number of id rows (read on demand, `ids.rs`).
    rows: u64,
    /// The columns, [`BLOCK`] entries at a time, read and checked on first use.
    blocks: Vec<OnceLock<Block>>,
    /// Where the id table is looked up, for an index a store keeps (which
    /// has no id rows of its own: [`stored`]).
    pub(crate) ids: Option<std::sync::Arc<dyn stored::IndexSource>>,
}

impl LazyIndex {
    /// Opens an index whose stamp is `stamp`: reads its header and checks
    /// its length against the counts it gives; `None` when it is missing,
    /// stale, of another layout or truncated. The columns are read and
    /// checked a block at a time, when first asked for.
    pub(crate) fn open(file: Box<dyn ReadAt>, stamp: Stamp) -> Option<LazyIndex> {
        let fixed = read_exact_at(&*file, 0, FIXED as usize).ok()?;
        if stamp_of(&fixed) != Some(stamp) {
            return None;
        }
        let mut c = Cursor(fixed.get(CONTENT_AT + 8..)?);
        let (header_bytes, n, strings_len, rows) = (c.u64()?, c.u64()?, c.u64()?, c.u64()?);
        let expected = n
            .checked_mul(PER_ENTRY)?
            .checked_add(FIXED)?
            .checked_add(strings_len)?
            .checked_add(rows.checked_mul(ROW as u64)?)?;
        if file.len().ok()? != expected || header_bytes > stamp.size || n >= u64::from(NAMES_PARENT) {
            return None;
        }
        let n = usize::try_from(n).ok()?;
        let blocks = (0..n.div_ceil(BLOCK)).map(|_| OnceLock::new()).collect();
        let content = content_of(&fixed);
        Some(LazyIndex { file, size: stamp.size, content, header_bytes, n, strings_len, rows, blocks, ids: None })
    }

    /// The columns of block `b`.
    fn block(&self, b: usize) -> &Block {
        self.blocks[b].get_or_init(|| self.read_block(b))
    }

    /// Reads and checks the columns of block `b` ([`Block::read`]).
    fn read_block(&self, b: usize) -> Block {
        Block::read(&*self.file, self.n, b)
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// The size of the session file when it was indexed.
    pub(crate) fn file_size(&self) -> u64 {
        self.size
    }

    /// The position the parent of entry `i` resolves to.
    pub(crate) fn parent(&self, i: usize) -> Option<usize> {
        if i >= self.n {
            return None;
        }
        let p = self.block(i / BLOCK).parent(i % BLOCK)?;
        (p != NO_POSITION).then_some(p as usize)
    }

    /// The type and role codes of entry `i`.
    fn kind(&self, i: usize) -> Option<[u8; 2]> {
        (i < self.n).then(|| self.block(i / BLOCK).kind(i % BLOCK)).flatten()
    }

    /// Every entry's type and role codes.
    fn kinds(&self) -> impl Iterator<Item = [u8; 2]> + '_ {
        (0..self.blocks.len()).flat_map(move |b| self.block(b).kinds())
    }

    /// The type of entry `i`, when the column names it (a name Arbor does not know is in the strings).
    pub(crate) fn entry_type(&self, i: usize) -> Option<&'static EntryType> {
        self.kind(i).and_then(|k| EntryType::ALL.get(usize::from(k[0])))
    }

    /// The role of entry `i`: `Some(None)` for none, `None` when only the strings name it.
    pub(crate) fn role(&self, i: usize) -> Option<Option<&'static Role>> {
        match self.kind(i)?[1] {
            NO_ROLE => Some(None),
            code => Role::ALL.get(usize::from(code)).map(Some),
        }
    }

    /// The type and role of entry `i` at once ([`LazyIndex::entry_type`],
    /// [`LazyIndex::role`]); `None` when the column does not name both.
    pub(crate) fn head(&self, i: usize) -> Option<(&'static EntryType, Option<&'static Role>)> {
        let [t, r] = self.kind(i)?;
        let role = match r {
            NO_ROLE => None,
            code => Some(Role::ALL.get(usize::from(code))?),
        };
        Some((EntryType::ALL.get(usize::from(t))?, role))
    }

    /// True when some entry's role is `role` (no entry is read).
    pub(crate) fn has_role(&self, role: &Role) -> bool {
        let Some(code) = Role::ALL.iter().position(|r| r == role) else { return false };
        self.kinds().any(|k| usize::from(k[1]) == code)
    }

    /// The positions whose type is `t` (no entry is read).
    pub(crate) fn positions_of(&self, t: &EntryType) -> Vec<usize> {
        let Some(code) = EntryType::ALL.iter().position(|x| x == t) else {
            // A type the column cannot name: every entry whose type is in the strings.
            return self.kinds().enumerate().filter(|(_, k)| k[0] == NAMED_STRING).map(|(i, _)| i).collect();
        };
        self.kinds().enumerate().filter(|(_, k)| usize::from(k[0]) == code).map(|(i, _)| i).collect()
    }

    /// The entries `range` (in file order, parents resolved to positions);
    /// `None` when the index cannot be read there or is corrupt there.
    pub(crate) fn entries(&self, range: std::ops::Range<usize>) -> Option<Vec<ReadEntry>> {
        let (start, end) = (range.start, range.end.min(self.len()));
        if start >= end {
            return Some(vec![]);
        }
        let n = self.len() as u64;
        let records_at = FIXED + n * 6;
        // One record past the range tells where the range's strings end.
        let with_next = (end + 1).min(self.len()) - start;
        let rec = read_exact_at(&*self.file, records_at + (start * RECORD) as u64, with_next * RECORD).ok()?;
        if rec.len() != with_next * RECORD {
            return None;
        }
        let strings_of = |k: usize| -> Option<u64> {
            let b = rec.get(k * RECORD + 24..k * RECORD + 28)?;
            Some(u64::from(u32::from_le_bytes(b.try_into().ok()?)))
        };
        let first = strings_of(0)?;
        let last = if end < self.len() { strings_of(end - start)? } else { self.strings_len };
        if last < first || last > self.strings_len {
            return None;
        }
        let strings_at = records_at + n * RECORD as u64;
        let strings = read_exact_at(&*self.file, strings_at + first, usize::try_from(last - first).ok()?).ok()?;
        if strings.len() as u64 != last - first {
            return None;
        }
        let mut out = Vec::with_capacity(end - start);
        let mut prev_end = self.header_bytes;
        for (k, i) in (start..end).enumerate() {
            let mut r = Cursor(&rec[k * RECORD..(k + 1) * RECORD]);
            let (offset, len, line, ts, at) = (r.u64()?, r.u32()?, r.u32()?, r.i64()?, r.u32()?);
            let flags = r.u8()?;
            // Entries are in file order, inside the file, after the header.
            let starts_after = if k == 0 { offset >= self.header_bytes } else { offset >= prev_end };
            if !starts_after || len == 0 || offset.checked_add(u64::from(len))? > self.size || flags > 3 {
                return None;
            }
            prev_end = offset + u64::from(len);
            let mut s = Cursor(strings.get(usize::try_from(u64::from(at).checked_sub(first)?).ok()?..)?);
            let id = s.string()?.into();
            let parent = self.parent(i);
            let parent_id = match parent {
                Some(_) => None,
                None => s.opt_string()?.map(Into::into),
            };
            let [t, ro] = self.kind(i)?;
            let entry_type = match t {
                NAMED_STRING => EntryType::parse(s.string()?),
                code => EntryType::ALL.get(usize::from(code))?.clone(),
            };
            let role = match ro {
                NO_ROLE => None,
                NAMED_STRING => Some(Role::parse(s.string()?)),
                code => Some(Role::ALL.get(usize::from(code))?.clone()),
            };
            out.push(ReadEntry {
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
        Some(out)
    }

    /// The id of entry `i` alone.
    pub(crate) fn id(&self, i: usize) -> Option<compact_str::CompactString> {
        self.entries(i..i + 1)?.pop().map(|e| e.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry of an index in `bytes` with the header's byte length.
    fn decode(bytes: &[u8], stamp: Stamp) -> Option<(u64, Vec<ReadEntry>)> {
        let lazy = LazyIndex::open(Box::new(bytes.to_vec()), stamp)?;
        let all = lazy.entries(0..lazy.len())?;
        // Read in runs of any length, the same entries.
        for run in 1..=all.len() {
            let mut again = vec![];
            for start in (0..all.len()).step_by(run) {
                again.extend(lazy.entries(start..start + run)?);
            }
            assert_eq!(again, all, "runs of {run}");
        }
        for (i, e) in all.iter().enumerate() {
            assert_eq!(lazy.id(i).as_ref(), Some(&e.id));
            assert_eq!(lazy.parent(i), e.parent);
            // The walk up reads the same parents.
            let mut walked = vec![];
            lazy.walk_up(i, &mut |k| walked.push(k));
            let one_by_one: Vec<usize> = std::iter::successors(Some(i), |&k| lazy.parent(k)).collect();
            assert_eq!(walked, one_by_one, "the walk up from {i}");
        }
        Some((lazy.header_bytes, all))
    }

    fn owned(e: &IndexedEntry<'_>) -> ReadEntry {
        ReadEntry {
            offset: e.offset,
            len: e.len,
            line: e.line,
            ts_ms: e.ts_ms,
            js_only: e.js_only,
            entry_type: e.entry_type.clone(),
            role: e.role.clone(),
            id: e.id.into(),
            parent_id: e.parent.map_or(e.parent_id.map(Into::into), |_| None),
            parent: e.parent,
        }
    }

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
        let expected: Vec<ReadEntry> = index.entries.iter().map(owned).collect();
        assert_eq!(decode(&bytes, stamp), Some((10, expected)));
        // Another stamp: stale.
        assert_eq!(decode(&bytes, Stamp { checksum: 1, ..stamp }), None);
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut], stamp), None, "truncated at {cut}");
        }
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert_eq!(decode(&bad, stamp), None);
        // What does not fit the layout is not indexed.
        let mut long = index.clone();
        let id = "x".repeat(70_000);
        long.entries[0].id = &id;
        assert_eq!(encode(stamp, &long), None);
        // A parent that is not an earlier entry (which could make a cycle) is
        // corruption: the column is not taken, and its entries cannot be read.
        for parent in [Some(1), Some(2)] {
            let mut forward = index.clone();
            forward.entries[1].parent = parent;
            let bytes = encode(stamp, &forward).unwrap();
            assert_eq!(decode(&bytes, stamp), None, "parent {parent:?}");
            let lazy = LazyIndex::open(Box::new(bytes), stamp).unwrap();
            assert_eq!(lazy.parent(1), None, "parent {parent:?}");
        }
        // Lines out of order, or past the end of the file: corrupt where they are read.
        let mut swapped = index.clone();
        swapped.entries[2].offset = 12;
        assert_eq!(decode(&encode(stamp, &swapped).unwrap(), stamp), None);
        let mut past = index.clone();
        past.entries[2].len = 5;
        assert_eq!(decode(&encode(stamp, &past).unwrap(), stamp), None);
    }
}
