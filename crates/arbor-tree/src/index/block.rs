//! The index's columns a block of [`BLOCK`] entries at a time: each
//! entry's resolved parent and its type and role codes, read and checked on
//! first use, and the walk from an entry up to its root along them.

use arbor_log::scan::{read_exact_at, ReadAt};
use arbor_log::{EntryType, Role};

use super::{LazyIndex, FIXED, NAMED_STRING, NO_POSITION, NO_ROLE};

/// Entries whose columns are read at once (96 KiB).
pub(super) const BLOCK: usize = 1 << 14;

/// The columns of one block of entries as the index holds them (kept as
/// read: no second copy): resolved parents (4 bytes each, little-endian),
/// type and role codes (2 bytes each).
#[derive(Debug)]
pub(super) struct Block {
    parents: Box<[u8]>,
    kinds: Box<[u8]>,
}

impl Block {
    /// Reads and checks the columns of block `b` of an index of `n` entries
    /// in `file`. A parent that is not an earlier entry (which could make a
    /// cycle) or a code Arbor does not know means the index is corrupt
    /// there: its entries then have no parent in the column and their types
    /// and roles are read from the strings, whose checks fail, so they read
    /// as changed lines (and the session reads the file again,
    /// `Session::verify_lines`).
    pub(super) fn read(file: &dyn ReadAt, n: usize, b: usize) -> Block {
        let start = b * BLOCK;
        let count = BLOCK.min(n - start);
        let parents = read_exact_at(file, FIXED + (start * 4) as u64, count * 4).ok();
        let kinds = read_exact_at(file, FIXED + (n * 4 + start * 2) as u64, count * 2).ok();
        let checked = parents.zip(kinds).and_then(|(p, k)| {
            if p.len() != count * 4 || k.len() != count * 2 {
                return None;
            }
            let block = Block { parents: p.into_boxed_slice(), kinds: k.into_boxed_slice() };
            let earlier =
                (0..count).all(|k| block.parent(k).is_some_and(|p| p == NO_POSITION || (p as usize) < start + k));
            let known = block.kinds().all(|[t, r]| {
                (usize::from(t) < EntryType::ALL.len() || t == NAMED_STRING)
                    && (usize::from(r) < Role::ALL.len() || r == NO_ROLE || r == NAMED_STRING)
            });
            (earlier && known).then_some(block)
        });
        checked.unwrap_or_else(|| Block {
            parents: NO_POSITION.to_le_bytes().repeat(count).into_boxed_slice(),
            kinds: [NAMED_STRING, NAMED_STRING].repeat(count).into_boxed_slice(),
        })
    }

    /// The parent column's value for the `k`-th entry of the block.
    pub(super) fn parent(&self, k: usize) -> Option<u32> {
        let b = self.parents.get(k * 4..k * 4 + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The type and role codes of the `k`-th entry of the block.
    pub(super) fn kind(&self, k: usize) -> Option<[u8; 2]> {
        let b = self.kinds.get(k * 2..k * 2 + 2)?;
        Some([b[0], b[1]])
    }

    /// The type and role codes of every entry of the block.
    pub(super) fn kinds(&self) -> impl Iterator<Item = [u8; 2]> + '_ {
        self.kinds.chunks_exact(2).map(|b| [b[0], b[1]])
    }
}

impl LazyIndex {
    /// Calls `f` with entry `i`, its parent, and so on up to its root, as
    /// [`LazyIndex::parent`] resolves them, reading each block's column once
    /// (a parent is always an earlier entry, so the walk ends).
    pub(crate) fn walk_up(&self, mut i: usize, f: &mut impl FnMut(usize)) {
        while i < self.len() {
            let (block, base) = (self.block(i / BLOCK), i / BLOCK * BLOCK);
            loop {
                f(i);
                match block.parent(i - base) {
                    Some(p) if p != NO_POSITION => i = p as usize,
                    _ => return,
                }
                if i < base {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{encode, Index, IndexedEntry, Stamp};
    use super::*;

    /// Walks up across blocks of the parents column: a chain over three
    /// blocks whose parents jump back across them, with roots along it.
    #[test]
    fn walks_up_across_blocks() {
        let n = BLOCK * 2 + 100;
        let ids: Vec<String> = (0..n).map(|i| format!("{i:x}")).collect();
        let parent = |i: usize| match i % 5000 {
            0 => None,
            7 => Some(i / 3),
            _ => Some(i - 1),
        };
        let entries = (0..n)
            .map(|i| IndexedEntry {
                offset: 10 + i as u64,
                len: 1,
                line: i as u32 + 2,
                ts_ms: None,
                js_only: false,
                entry_type: EntryType::Message,
                role: Some(Role::User),
                id: &ids[i],
                parent_id: None,
                parent: parent(i),
            })
            .collect();
        let stamp = Stamp { size: 10 + n as u64, mtime_ns: 1, changed_ns: 1, checksum: 1 };
        let bytes = encode(stamp, &Index { header_bytes: 10, entries }).unwrap();
        let lazy = LazyIndex::open(Box::new(bytes), stamp).unwrap();
        for i in [0, 1, BLOCK - 1, BLOCK, BLOCK + 7, 2 * BLOCK + 3, n - 1] {
            let mut walked = vec![];
            lazy.walk_up(i, &mut |k| walked.push(k));
            let want: Vec<usize> = std::iter::successors(Some(i), |&k| parent(k)).collect();
            assert_eq!(walked, want, "from {i}");
        }
    }
}
