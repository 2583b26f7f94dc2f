//! The sidecar index `FILE.arbor-index`: what the light scan learned about a
//! session file (each entry's byte range, line, id, parent, type, role and
//! time), so that reopening an unchanged file skips the scan.
//!
//! It is a cache and never the truth: it is written (atomically, through the
//! [`crate::Store`]) only for a clean file (no diagnostics, ending in a
//! newline, at least [`MIN_INDEXED_BYTES`]), and read only when the file's
//! size, modification time and a checksum of its first and last 64 KiB
//! match the ones recorded. A missing, stale, truncated or corrupt index is
//! ignored (and rewritten after the scan); reading it never fails an open.
//!
//! Layout (little-endian): `ARBORIX2`, size u64, mtime ns i128, checksum
//! u64, header bytes u64, entry count u64, then per entry: offset u64,
//! length u64, line u64, timestamp flag u8 + ms i64, type, role (flag u8 +
//! string), id, parent (flag u8 + string), resolved parent (u64 position of
//! the entry the parent id resolves to, always an earlier one, or
//! `u64::MAX`); strings are u32 length + UTF-8. An index of another version
//! (`ARBORIX1` had no resolved parents) is ignored and rewritten.

use arbor_log::{read_exact_at, ReadAt};

/// The suffix of the side file beside a session: `FILE.arbor-index`.
pub const INDEX_SUFFIX: &str = "arbor-index";

/// Files smaller than this are scanned, never indexed (the scan is cheaper than the file).
pub const MIN_INDEXED_BYTES: u64 = 1 << 20;

const MAGIC: &[u8; 8] = b"ARBORIX2";
const EDGE: u64 = 64 * 1024;

/// One entry as the index keeps it (its strings borrowed from the index bytes or the session).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IndexedEntry<'a> {
    pub offset: u64,
    pub len: u64,
    pub line: u64,
    pub ts_ms: Option<i64>,
    pub entry_type: &'a str,
    pub role: Option<&'a str>,
    pub id: &'a str,
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
    pub checksum: u64,
}

/// FNV-1a over the first and last 64 KiB: cheap, and catches a rewrite that kept size and time.
pub(crate) fn checksum(src: &dyn ReadAt, size: u64) -> std::io::Result<u64> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    let head = read_exact_at(src, 0, EDGE.min(size) as usize)?;
    feed(&head);
    let tail_start = size.saturating_sub(EDGE);
    let tail = read_exact_at(src, tail_start, (size - tail_start) as usize)?;
    feed(&tail);
    Ok(h)
}

pub(crate) fn encode(stamp: Stamp, index: &Index) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + index.entries.len() * 80);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&stamp.size.to_le_bytes());
    out.extend_from_slice(&stamp.mtime_ns.to_le_bytes());
    out.extend_from_slice(&stamp.checksum.to_le_bytes());
    out.extend_from_slice(&index.header_bytes.to_le_bytes());
    out.extend_from_slice(&(index.entries.len() as u64).to_le_bytes());
    let put_str = |out: &mut Vec<u8>, s: &str| {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    let put_opt = |out: &mut Vec<u8>, s: Option<&str>| match s {
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
        None => out.push(0),
    };
    for e in &index.entries {
        out.extend_from_slice(&e.offset.to_le_bytes());
        out.extend_from_slice(&e.len.to_le_bytes());
        out.extend_from_slice(&e.line.to_le_bytes());
        out.push(u8::from(e.ts_ms.is_some()));
        out.extend_from_slice(&e.ts_ms.unwrap_or(0).to_le_bytes());
        put_str(&mut out, e.entry_type);
        put_opt(&mut out, e.role);
        put_str(&mut out, e.id);
        put_opt(&mut out, e.parent_id);
        out.extend_from_slice(&e.parent.map_or(u64::MAX, |p| p as u64).to_le_bytes());
    }
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
        let n = self.u32()? as usize;
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
    Some(Stamp { size: c.u64()?, mtime_ns: c.i128()?, checksum: c.u64()? })
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
    c.u64()?;
    let header_bytes = c.u64()?;
    let n = c.u64()?;
    // Each entry takes at least 51 bytes: a count beyond that is corruption, not a reason to allocate.
    if n > (bytes.len() as u64) / 51 || header_bytes > size {
        return None;
    }
    let mut end = header_bytes;
    for k in 0..n {
        let offset = c.u64()?;
        let len = c.u64()?;
        let line = c.u64()?;
        let has_ts = c.u8()?;
        let ts = c.i64()?;
        let entry_type = c.string()?;
        let role = c.opt_string()?;
        let id = c.string()?;
        let parent_id = c.opt_string()?;
        let parent = c.u64()?;
        let parent = (parent != u64::MAX).then_some(parent);
        // Entries are in file order, inside the file, after the header; a
        // parent is an earlier entry (so the parents hold no cycle).
        if offset < end || offset.checked_add(len)? > size || len == 0 || parent.is_some_and(|p| p >= k) {
            return None;
        }
        let parent = match parent {
            Some(p) => Some(usize::try_from(p).ok()?),
            None => None,
        };
        end = offset + len;
        each(IndexedEntry {
            offset,
            len,
            line,
            ts_ms: (has_ts == 1).then_some(ts),
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
                    entry_type: "message",
                    role: Some("user"),
                    id: "a",
                    parent_id: None,
                    parent: None,
                },
                IndexedEntry {
                    offset: 15,
                    len: 5,
                    line: 3,
                    ts_ms: None,
                    entry_type: "x",
                    role: None,
                    id: "b",
                    parent_id: Some("a"),
                    parent: Some(0),
                },
            ],
        };
        let stamp = Stamp { size: 20, mtime_ns: 7, checksum: 9 };
        let bytes = encode(stamp, &index);
        assert_eq!(stamp_of(&bytes), Some(stamp));
        assert_eq!(decode(&bytes), Some(index.clone()));
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut]), None, "truncated at {cut}");
        }
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert_eq!(decode(&bad), None);
        // A parent that is not an earlier entry (which could make a cycle) is corruption.
        for parent in [Some(1), Some(2)] {
            let mut forward = index.clone();
            forward.entries[1].parent = parent;
            assert_eq!(decode(&encode(stamp, &forward)), None, "parent {parent:?}");
        }
    }
}
