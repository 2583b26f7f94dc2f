//! Writing an index a run of entries at a time ([`IndexWriter`]): each
//! column's part placed in the file with positioned writes, the id rows
//! sorted an eighth at a time, so that indexing a million entries on their
//! first read holds far less than the index itself (docs/performance.md,
//! "Memory bounded by the file").

use std::os::unix::fs::FileExt;

use super::{fixed, row_bytes, Columns, Stamp, FIXED, PER_ENTRY, RECORD};

/// Where a caller gives id rows: `(hash, position)`, in any order.
pub(crate) type EmitRow<'a> = &'a mut dyn FnMut((u64, u32));

/// Id rows sorted at once while an index is written: an eighth of them (by
/// the top three bits of their hash), so writing the index of a million
/// entries holds 2 MB of rows, not 16.
const ROW_PARTS: u64 = 8;
/// The shift that leaves a hash's part number ([`ROW_PARTS`] is a power of two).
const PART_SHIFT: u32 = 64 - ROW_PARTS.trailing_zeros();

/// Writes an index a run of entries at a time, each column's part at its
/// place in the file, so that the index of a million entries is written
/// holding one run's columns and a part of the id rows, never the whole
/// index (what [`encode`] makes in memory, byte for byte).
pub(crate) struct IndexWriter<'f> {
    file: &'f std::fs::File,
    n: u64,
    strings_len: u64,
    rows: u64,
}

impl<'f> IndexWriter<'f> {
    /// A writer of the index of `n` entries into `file`.
    pub(crate) fn new(file: &'f std::fs::File, n: usize) -> IndexWriter<'f> {
        IndexWriter { file, n: n as u64, strings_len: 0, rows: 0 }
    }

    /// The strings written so far: where the next run's strings start ([`Columns::of`]'s `strings_at`).
    pub(crate) fn strings_len(&self) -> u64 {
        self.strings_len
    }

    /// Writes the columns of the run of entries from `first` (made with
    /// `strings_at` = [`IndexWriter::strings_len`]); runs come in order.
    pub(crate) fn put(&mut self, first: usize, cols: &Columns) -> std::io::Result<()> {
        let (n, first) = (self.n, first as u64);
        self.file.write_all_at(&cols.parents, FIXED + first * 4)?;
        self.file.write_all_at(&cols.kinds, FIXED + n * 4 + first * 2)?;
        self.file.write_all_at(&cols.records, FIXED + n * 6 + first * RECORD as u64)?;
        self.file.write_all_at(&cols.strings, FIXED + n * PER_ENTRY + self.strings_len)?;
        self.strings_len += cols.strings.len() as u64;
        self.rows += cols.rows.len() as u64;
        Ok(())
    }

    /// Writes the id rows, sorted, and the fixed part. `rows(emit)` gives
    /// every row the runs' columns held, in any order (it is called once
    /// per part of the rows).
    /// `content` is the [`super::content_hash`] of the bytes indexed (0: not known).
    pub(crate) fn finish(
        self,
        stamp: Stamp,
        content: u64,
        header_bytes: u64,
        rows: &dyn Fn(EmitRow),
    ) -> std::io::Result<()> {
        let mut at = FIXED + self.n * PER_ENTRY + self.strings_len;
        let mut written = 0u64;
        for part in 0..ROW_PARTS {
            let mut kept = vec![];
            rows(&mut |row| {
                if row.0 >> PART_SHIFT == part {
                    kept.push(row);
                }
            });
            kept.sort_unstable();
            for run in kept.chunks(1 << 14) {
                let bytes: Vec<u8> = run.iter().flat_map(|&r| row_bytes(r)).collect();
                self.file.write_all_at(&bytes, at)?;
                at += bytes.len() as u64;
            }
            written += kept.len() as u64;
        }
        if written != self.rows {
            return Err(std::io::Error::other("the id rows do not match the entries written"));
        }
        self.file.write_all_at(&fixed(stamp, content, header_bytes, self.n, self.strings_len, self.rows), 0)
    }
}

#[cfg(test)]
mod tests {
    use arbor_log::{EntryType, Role};

    use super::super::{encode, id_rows, Index, IndexedEntry};
    use super::*;

    /// The streamed writer's file is [`encode`]'s bytes, whatever the runs:
    /// columns placed run by run, id rows sorted a part at a time.
    #[test]
    fn the_streamed_index_is_the_encoded_one_byte_for_byte() {
        let ids: Vec<String> = (0..5000).map(|i| format!("{:08x}", i * 7919)).collect();
        let names = ["weird_type".to_owned(), "narrator".to_owned(), "gone".to_owned()];
        let entries: Vec<IndexedEntry> = (0..ids.len())
            .map(|i| IndexedEntry {
                offset: 100 + i as u64 * 50,
                len: 50,
                line: i as u32 + 2,
                ts_ms: (i % 3 != 0).then_some(i as i64 * 1000 - 7),
                js_only: i % 11 == 0,
                entry_type: if i % 97 == 5 { EntryType::parse(&names[0]) } else { EntryType::Message },
                role: match i % 4 {
                    0 => None,
                    1 => Some(Role::parse(&names[1])),
                    _ => Some(Role::Assistant),
                },
                id: &ids[i],
                // Roots now and then, some naming a parent that is not there.
                parent_id: (i % 50 == 7).then_some(names[2].as_str()),
                parent: (i % 50 != 0 && i % 50 != 7).then_some(i / 2),
            })
            .collect();
        let stamp = Stamp { size: 300_000, mtime_ns: 7, changed_ns: 8, checksum: 9 };
        let whole = encode(stamp, &Index { header_bytes: 100, entries: entries.clone() }).unwrap();
        for run in [1, 333, 4096, 5000] {
            let mut file = tempfile::tempfile().unwrap();
            let mut w = IndexWriter::new(&file, entries.len());
            for (k, chunk) in entries.chunks(run).enumerate() {
                let cols = Columns::of(chunk, k * run, w.strings_len()).unwrap();
                w.put(k * run, &cols).unwrap();
            }
            w.finish(stamp, 0, 100, &|emit| {
                for (i, e) in entries.iter().enumerate() {
                    let unresolved = if e.parent.is_none() { e.parent_id } else { None };
                    id_rows(i as u32, e.id, unresolved, emit);
                }
            })
            .unwrap();
            let mut bytes = vec![];
            std::io::Read::read_to_end(&mut file, &mut bytes).unwrap();
            assert!(bytes == whole, "runs of {run}: the streamed index differs");
        }
    }
}
