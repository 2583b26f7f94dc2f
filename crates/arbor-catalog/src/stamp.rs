//! Telling whether a session file changed since it was cataloged, as cheaply
//! as the answer allows: one `stat` when nothing changed; two small reads
//! (the head and the bytes before the last scanned offset) when something
//! did, to tell an append from a rewrite.

use std::fs::Metadata;
use std::io;

use arbor_log::scan::{read_exact_at, ReadAt};

/// What `stat` says about a file. Equal stats mean the file is unchanged:
/// a rewrite changes the ctime (which no user can set back) or the inode
/// even when it keeps the size and mtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Stat {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub dev: u64,
}

impl Stat {
    pub fn of(meta: &Metadata) -> Stat {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
            Stat {
                size: meta.len(),
                mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
                ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
                ino: meta.ino(),
                dev: meta.dev(),
            }
        }
        #[cfg(not(unix))]
        {
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            Stat { size: meta.len(), mtime_ns, ctime_ns: 0, ino: 0, dev: 0 }
        }
    }

    /// The modification time in ms (the listing's last resort for `modified`).
    pub fn mtime_ms(&self) -> i64 {
        self.mtime_ns.div_euclid(1_000_000)
    }
}

/// How many bytes the head and tail checksums cover.
pub(crate) const EDGE: u64 = 4096;

/// Checksums of the first bytes of a file and of the bytes just before `end`
/// (the end of what was scanned), [`EDGE`] bytes each at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Sums {
    pub head: i64,
    pub tail: i64,
}

impl Sums {
    pub fn read(src: &dyn ReadAt, end: u64) -> io::Result<Sums> {
        let n = end.min(EDGE);
        let head = read_exact_at(src, 0, n as usize)?;
        let tail = read_exact_at(src, end - n, n as usize)?;
        // A file shorter than `end` now gives short reads, and so other sums.
        let sum = |b: &[u8]| if b.len() as u64 == n { fnv1a(b) as i64 } else { !(fnv1a(b) as i64) };
        Ok(Sums { head: sum(&head), tail: sum(&tail) })
    }
}

/// FNV-1a, 64 bits: stable across releases, which a catalog on disk needs.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// What the catalog knows of a file from its last scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Known {
    pub stat: Stat,
    /// The end of the last complete line read.
    pub scanned: u64,
    /// The checksums up to `scanned`.
    pub sums: Sums,
}

/// What a refresh must do with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// The same `stat`: nothing to read.
    Unchanged,
    /// Another `stat` but the same bytes as far as they were read (a `touch`,
    /// a copy with the same content, a partial line that is still partial).
    Restamp,
    /// The bytes read before are still there: read on from `Known::scanned`.
    Grown,
    /// Something before the scanned offset changed, or the file shrank: read it all again.
    Rescan,
}

/// Compares what is known of a file with its `stat` now, reading its edges only when the stats differ.
pub(crate) fn classify(known: &Known, now: &Stat, src: &dyn ReadAt) -> io::Result<Change> {
    if *now == known.stat {
        return Ok(Change::Unchanged);
    }
    if now.size < known.scanned || Sums::read(src, known.scanned)? != known.sums {
        return Ok(Change::Rescan);
    }
    Ok(if now.size == known.stat.size { Change::Restamp } else { Change::Grown })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn known(bytes: &[u8], scanned: u64) -> Known {
        let stat = Stat { size: bytes.len() as u64, mtime_ns: 1, ..Stat::default() };
        Known { stat, scanned, sums: Sums::read(&bytes.to_vec(), scanned).unwrap() }
    }

    fn now(bytes: &[u8], mtime_ns: i64) -> Stat {
        Stat { size: bytes.len() as u64, mtime_ns, ..Stat::default() }
    }

    #[test]
    fn same_stat_reads_nothing_and_other_bytes_are_rescanned() {
        let a = b"{\"a\":1}\n{\"b\":2}\n".to_vec();
        let k = known(&a, a.len() as u64);
        assert_eq!(classify(&k, &k.stat, &Vec::new()).unwrap(), Change::Unchanged);
        assert_eq!(classify(&k, &now(&a, 2), &a).unwrap(), Change::Restamp);
        let mut grown = a.clone();
        grown.extend_from_slice(b"{\"c\":3}\n");
        assert_eq!(classify(&k, &now(&grown, 2), &grown).unwrap(), Change::Grown);
        let replaced = b"{\"a\":9}\n{\"b\":2}\n".to_vec();
        assert_eq!(classify(&k, &now(&replaced, 2), &replaced).unwrap(), Change::Rescan);
        let shrunk = a[..8].to_vec();
        assert_eq!(classify(&k, &now(&shrunk, 2), &shrunk).unwrap(), Change::Rescan);
    }

    #[test]
    fn a_change_in_the_middle_of_a_long_file_shows_in_the_tail_sum() {
        let mut a = vec![b'x'; 3 * EDGE as usize];
        let k = known(&a, a.len() as u64);
        a[2 * EDGE as usize + 5] = b'y';
        a.push(b'\n');
        assert_eq!(classify(&k, &now(&a, 2), &a).unwrap(), Change::Rescan);
    }
}
