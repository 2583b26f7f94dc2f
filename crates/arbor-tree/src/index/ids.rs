//! The index's id rows: whether an id is taken, and by which entry, without
//! reading every id (docs/format.md, "The index"). The rows are sorted by a
//! stable hash of the id; a question is a binary search with positioned
//! reads of the rows (about 20 reads of 12 bytes at a million entries), and
//! every row whose hash matches is confirmed against the entry's strings, so
//! two ids that share a hash are told apart.
//!
//! Also here: opening the index of a file that grew since it was written
//! (lines appended after it, by Arbor or by another program), so that only
//! the appended lines are read.

use arbor_log::scan::{read_exact_at, ReadAt};

use super::{
    checksum, content_hash, content_of, id_hash, stamp_of, IndexFile, LazyIndex, FIXED, NAMES_PARENT, PER_ENTRY, ROW,
};

/// What the index says about one id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct IdRows {
    /// The entry holding the id (the index holds no id twice).
    pub entry: Option<usize>,
    /// True when some entry names the id as a parent that resolves to no entry.
    pub names_parent: bool,
}

impl LazyIndex {
    /// The bytes of the session file this index covers.
    pub(crate) fn covered(&self) -> u64 {
        self.size
    }

    /// Where the id rows start in the index file.
    fn rows_at(&self) -> u64 {
        FIXED + self.n as u64 * PER_ENTRY + self.strings_len
    }

    /// Id row `k`: (hash, position with [`NAMES_PARENT`]).
    fn row(&self, k: u64) -> Option<(u64, u32)> {
        let b = read_exact_at(&*self.file, self.rows_at() + k * ROW as u64, ROW).ok()?;
        let hash = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
        let pos = u32::from_le_bytes(b.get(8..ROW)?.try_into().ok()?);
        Some((hash, pos))
    }

    /// What the index says about `id` (see [`IdRows`]); `None` when the
    /// index cannot be read there or contradicts itself.
    pub(crate) fn find_id(&self, id: &str) -> Option<IdRows> {
        let hash = id_hash(id);
        // The first row whose hash is not below `hash`.
        let (mut lo, mut hi) = (0u64, self.rows);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.row(mid)?.0 < hash {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut out = IdRows::default();
        let mut k = lo;
        while k < self.rows {
            let (h, pos) = self.row(k)?;
            if h != hash {
                break;
            }
            let i = usize::try_from(pos & !NAMES_PARENT).ok()?;
            let e = self.entries(i..i + 1)?.pop()?;
            if pos & NAMES_PARENT == 0 {
                if e.id == id {
                    out.entry = Some(i);
                }
            } else if e.parent.is_none() && e.parent_id.as_deref() == Some(id) {
                out.names_parent = true;
            }
            k += 1;
        }
        Some(out)
    }

    /// Every id row in order, read in runs (for extending the index).
    pub(crate) fn rows_in_order(&self) -> impl Iterator<Item = Option<(u64, u32)>> + '_ {
        const RUN: u64 = 1 << 16;
        (0..self.rows.div_ceil(RUN)).flat_map(move |r| {
            let start = r * RUN;
            let count = RUN.min(self.rows - start);
            let bytes = read_exact_at(&*self.file, self.rows_at() + start * ROW as u64, (count as usize) * ROW).ok();
            (0..count as usize).map(move |k| {
                let b = bytes.as_ref()?.get(k * ROW..(k + 1) * ROW)?;
                Some((u64::from_le_bytes(b[..8].try_into().ok()?), u32::from_le_bytes(b[8..].try_into().ok()?)))
            })
        })
    }
}

impl IndexFile {
    /// The index of an earlier state of the file, when the file only grew
    /// since (lines were appended after it): its recorded size is below
    /// the file's, and the checksum of the first and last 64 KiB of that
    /// many bytes and the content hash of all of them still match. The index then covers the file up to
    /// [`LazyIndex::covered`]; the lines after are read from the file.
    pub(crate) fn open_grown(&self, src: &dyn ReadAt) -> Option<LazyIndex> {
        let file = std::fs::File::open(&self.path).ok()?;
        let fixed = read_exact_at(&file, 0, FIXED as usize).ok()?;
        let recorded = stamp_of(&fixed)?;
        if recorded.size == 0 || recorded.size >= self.stamp.size {
            return None;
        }
        if checksum(src, recorded.size).ok()? != recorded.checksum {
            return None;
        }
        // The covered bytes end a line (an index never covers half a line).
        if read_exact_at(src, recorded.size - 1, 1).ok()? != b"\n" {
            return None;
        }
        // And they are every one the bytes indexed: an append must not vouch
        // for an edit before it (the times changed with the append).
        let content = content_of(&fixed);
        if content == 0 || content_hash(src, recorded.size).ok()? != content {
            return None;
        }
        LazyIndex::open(Box::new(file), recorded)
    }
}
