//! Extending an index by the entries appended after it (docs/format.md,
//! "The index"): the new index is the old one's columns with the new
//! entries' columns after each, and the id rows merged, written atomically
//! in place of the old one. Nothing of the old index is decoded: its parts
//! are copied a MiB at a time, so extending costs a copy of the index, not
//! a scan of the session.

use std::io::{self, Write};

use arbor_log::scan::read_exact_at;
use arbor_log::writer::atomic_write;

use super::{fixed, row_bytes, Columns, IndexFile, IndexedEntry, LazyIndex, FIXED, RECORD};

/// Bytes copied at once.
const CHUNK: u64 = 1 << 20;

impl IndexFile {
    /// Writes the index of the file as it is now (`self.stamp`): `old` and
    /// `tail`, the entries after the ones `old` holds, in file order, their
    /// parents resolved to positions. False (and nothing written) when the
    /// new entries do not fit the layout or the old index cannot be read.
    /// `content` is the [`super::content_hash`] of the file as it is now.
    pub(crate) fn extend(&self, old: &LazyIndex, tail: &[IndexedEntry], content: u64) -> bool {
        let Some(mut cols) = Columns::of(tail, old.n, old.strings_len) else { return false };
        cols.rows.sort_unstable();
        let n = (old.n + tail.len()) as u64;
        let strings_len = old.strings_len + cols.strings.len() as u64;
        let rows = old.rows + cols.rows.len() as u64;
        let head = fixed(self.stamp, content, old.header_bytes, n, strings_len, rows);
        let on = old.n as u64;
        // The old index's parts: parents, kinds, records, strings (the rows are merged).
        let parts = [
            ((FIXED, on * 4), &cols.parents),
            ((FIXED + on * 4, on * 2), &cols.kinds),
            ((FIXED + on * 6, on * RECORD as u64), &cols.records),
            ((old.strings_start(), old.strings_len), &cols.strings),
        ];
        let Some(dir) = self.path.parent() else { return false };
        if std::fs::create_dir_all(dir).is_err() {
            return false;
        }
        atomic_write(&self.path, |w| {
            w.write_all(&head)?;
            for ((at, len), new) in parts {
                copy(old, at, len, w)?;
                w.write_all(new)?;
            }
            merge_rows(old, &cols.rows, w)
        })
        .is_ok()
    }
}

impl LazyIndex {
    /// Where the strings start in the index file.
    fn strings_start(&self) -> u64 {
        FIXED + self.n as u64 * (6 + RECORD as u64)
    }
}

/// Copies `len` bytes at `at` of the old index to `w`.
fn copy(old: &LazyIndex, at: u64, len: u64, w: &mut dyn Write) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        let want = CHUNK.min(len - done) as usize;
        let bytes = read_exact_at(&*old.file, at + done, want)?;
        if bytes.len() != want {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the old index ended early"));
        }
        w.write_all(&bytes)?;
        done += want as u64;
    }
    Ok(())
}

/// Writes the old index's id rows and the sorted `new` ones, merged in order.
fn merge_rows(old: &LazyIndex, new: &[(u64, u32)], w: &mut dyn Write) -> io::Result<()> {
    let mut new = new.iter().copied().peekable();
    for row in old.rows_in_order() {
        let row = row.ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "the old index's rows"))?;
        while let Some(n) = new.next_if(|n| *n < row) {
            w.write_all(&row_bytes(n))?;
        }
        w.write_all(&row_bytes(row))?;
    }
    for n in new {
        w.write_all(&row_bytes(n))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{encode, IdRows, Index, Stamp};
    use super::*;

    #[test]
    fn an_extended_index_is_the_index_of_every_entry() {
        let ids: Vec<String> = (0..300).map(|i| format!("{:08x}", i * 7919)).collect();
        let entry = |i: usize| IndexedEntry {
            offset: 10 + i as u64 * 5,
            len: 5,
            line: 2 + i as u32,
            ts_ms: Some(i as i64),
            js_only: false,
            entry_type: arbor_log::EntryType::Message,
            role: Some(arbor_log::Role::User),
            id: &ids[i],
            // Every tenth names a parent no entry holds.
            parent_id: i.is_multiple_of(10).then_some("missing"),
            parent: (!i.is_multiple_of(10)).then(|| i - 1),
        };
        let all: Vec<IndexedEntry> = (0..300).map(entry).collect();
        let d = tempfile::tempdir().unwrap();
        let before = Stamp { size: 10 + 200 * 5, mtime_ns: 1, changed_ns: 2, checksum: 3 };
        let after = Stamp { size: 10 + 300 * 5, mtime_ns: 4, changed_ns: 5, checksum: 6 };
        let path = d.path().join("x.arbor-index");
        std::fs::write(&path, encode(before, &Index { header_bytes: 10, entries: all[..200].to_vec() }).unwrap())
            .unwrap();
        let old = LazyIndex::open(Box::new(std::fs::File::open(&path).unwrap()), before).unwrap();
        let file = IndexFile { path: path.clone(), stamp: after };
        assert!(file.extend(&old, &all[200..], 0));
        let whole = encode(after, &Index { header_bytes: 10, entries: all.clone() }).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), whole, "the same bytes as indexing every entry at once");
        let new = file.open().unwrap();
        for (i, id) in ids.iter().enumerate() {
            let rows = new.find_id(id).unwrap();
            assert_eq!(rows.entry, Some(i), "{id}");
            assert!(!rows.names_parent);
        }
        let missing = new.find_id("missing").unwrap();
        assert_eq!((missing.entry, missing.names_parent), (None, true));
        assert_eq!(new.find_id("nobody").unwrap(), IdRows::default());
    }
}
