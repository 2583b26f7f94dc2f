//! Telling whether a session file changed since it was cataloged: one
//! `stat` when nothing changed; when something did, a checksum of every byte
//! read before tells an append from a rewrite (an edit in place, even of the
//! same length, with the size and mtime set back).

use std::fs::Metadata;
use std::io;

use arbor_log::scan::ReadAt;

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

/// A checksum of a byte stream fed in pieces of any size (the same bytes
/// give the same sum however they are cut): Fletcher's sums over 64-bit
/// words (a running sum, and a sum of the running sums, so a word's place
/// counts too), 32 bytes at a time in four lanes: two additions a word,
/// which the compiler makes vector ones, a small part of reading the bytes.
/// It tells an edit from no edit; it is no defence against a file made to
/// collide.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Checksum {
    /// Per lane: the running sum and the sum of running sums.
    lanes: [u64; 4],
    sums: [u64; 4],
    /// Bytes not yet in a lane: `pending[..filled]`.
    pending: [u8; 32],
    filled: usize,
    /// Bytes fed in all.
    total: u64,
}

impl PartialEq for Checksum {
    /// The same bytes fed: what is past `filled` in `pending` is left over, not fed.
    fn eq(&self, o: &Self) -> bool {
        self.lanes == o.lanes
            && self.sums == o.sums
            && self.total == o.total
            && self.pending[..self.filled] == o.pending[..o.filled]
    }
}

impl Eq for Checksum {}

impl Checksum {
    #[inline]
    fn mix(state: u64, word: u64) -> u64 {
        let x = (state ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^ (x >> 29)
    }

    #[inline]
    fn block(&mut self, b: &[u8]) {
        for k in 0..4 {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[8 * k..8 * k + 8]);
            self.lanes[k] = self.lanes[k].wrapping_add(u64::from_le_bytes(w));
            self.sums[k] = self.sums[k].wrapping_add(self.lanes[k]);
        }
    }

    pub fn update(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.filled > 0 {
            let take = (32 - self.filled).min(bytes.len());
            self.pending[self.filled..self.filled + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled < 32 {
                return;
            }
            let block = self.pending;
            self.block(&block);
            self.filled = 0;
        }
        let mut blocks = bytes.chunks_exact(32);
        for b in &mut blocks {
            self.block(b);
        }
        let rest = blocks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    /// The sum of what was fed so far.
    pub fn value(&self) -> i64 {
        let mut h = self.total;
        for (&l, &s) in self.lanes.iter().zip(&self.sums) {
            h = Self::mix(Self::mix(h, l), s);
        }
        for chunk in self.pending[..self.filled].chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = Self::mix(h, u64::from_le_bytes(w));
        }
        h as i64
    }

    /// The sum of `[0, end)` of a file.
    pub fn of(src: &dyn ReadAt, end: u64) -> io::Result<Checksum> {
        let mut sum = Checksum::default();
        let mut buf = vec![0u8; (256 << 10).min(end as usize).max(1)];
        let mut at = 0;
        while at < end {
            let want = buf.len().min((end - at) as usize);
            let n = match src.read_at(&mut buf[..want], at) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            sum.update(&buf[..n]);
            at += n as u64;
        }
        if at < end {
            // Shorter than it was: another sum than any full read gives.
            sum.update(&[0xFF; 9]);
        }
        Ok(sum)
    }
}

/// How many bytes the head and tail checksums of [`Sums`] cover.
pub(crate) const EDGE: u64 = 4096;

/// Checksums of the first bytes of a file and of the bytes just before `end`,
/// [`EDGE`] bytes each at most: what a follower (`follow.rs`), which looks
/// many times a second, compares to tell an append from a rewrite cheaply.
/// The catalog itself compares a [`Checksum`] of everything it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Sums {
    pub head: i64,
    pub tail: i64,
}

impl Sums {
    pub fn read(src: &dyn ReadAt, end: u64) -> io::Result<Sums> {
        let n = end.min(EDGE);
        let head = arbor_log::scan::read_exact_at(src, 0, n as usize)?;
        let tail = arbor_log::scan::read_exact_at(src, end - n, n as usize)?;
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
    /// The checksum of the bytes before `scanned`.
    pub sum: i64,
}

/// What a refresh must do with a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// The same `stat`: nothing to read.
    Unchanged,
    /// Another `stat` but the same bytes as far as they were read (a `touch`,
    /// a partial line that is still partial).
    Restamp,
    /// The bytes read before are still there: read on from `Known::scanned`
    /// (with the sum of what was read, to carry on).
    Grown(Checksum),
    /// Something before the scanned offset changed, the file shrank, or it
    /// is another file now (another inode): read it all again.
    Rescan,
}

/// Compares what is known of a file with its `stat` now, reading the bytes
/// it read before only when the stats differ.
pub(crate) fn classify(known: &Known, now: &Stat, src: &dyn ReadAt) -> io::Result<Change> {
    if *now == known.stat {
        return Ok(Change::Unchanged);
    }
    if now.size < known.scanned || (now.ino, now.dev) != (known.stat.ino, known.stat.dev) {
        return Ok(Change::Rescan);
    }
    let sum = Checksum::of(src, known.scanned)?;
    if sum.value() != known.sum {
        return Ok(Change::Rescan);
    }
    Ok(if now.size == known.stat.size { Change::Restamp } else { Change::Grown(sum) })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn known(bytes: &[u8], scanned: u64) -> Known {
        let stat = Stat { size: bytes.len() as u64, mtime_ns: 1, ..Stat::default() };
        Known { stat, scanned, sum: Checksum::of(&bytes.to_vec(), scanned).unwrap().value() }
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
        assert!(matches!(classify(&k, &now(&grown, 2), &grown).unwrap(), Change::Grown(_)));
        let replaced = b"{\"a\":9}\n{\"b\":2}\n".to_vec();
        assert_eq!(classify(&k, &now(&replaced, 2), &replaced).unwrap(), Change::Rescan);
        let shrunk = a[..8].to_vec();
        assert_eq!(classify(&k, &now(&shrunk, 2), &shrunk).unwrap(), Change::Rescan);
        let moved = Stat { ino: 9, ..now(&a, 1) };
        assert_eq!(classify(&k, &moved, &a).unwrap(), Change::Rescan, "another inode is another file");
    }

    #[test]
    fn a_change_anywhere_shows_in_the_sum() {
        let mut a = vec![b'x'; 3 * 4096 + 5];
        let k = known(&a, a.len() as u64);
        a[2 * 4096 + 5] = b'y';
        a.push(b'\n');
        assert_eq!(classify(&k, &now(&a, 2), &a).unwrap(), Change::Rescan);
    }

    #[test]
    fn the_sum_does_not_depend_on_how_bytes_are_cut() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
        let whole = Checksum::of(&bytes, 1000).unwrap().value();
        for cut in [1, 3, 7, 8, 9, 500, 999] {
            let mut s = Checksum::default();
            for piece in bytes.chunks(cut) {
                s.update(piece);
            }
            assert_eq!(s.value(), whole, "{cut}");
        }
        assert_ne!(Checksum::of(&bytes, 999).unwrap().value(), whole);
    }
}
