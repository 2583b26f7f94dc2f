//! Reading a session on the server by byte ranges, as a file is read:
//! [`ServerFile`] is arbor-log's [`ReadAt`] over one version of a session
//! (its length as it was when opened), fetching only the bytes asked for
//! (and a little ahead) with the lines' offsets (migration 3), so that
//! index-first loading reads a few entries, not the session. A few recent
//! blocks are kept; nothing else is held. A session replaced whole while it
//! is read (a migration's rewrite) is an error, never a mix of two versions.

use std::collections::VecDeque;
use std::io;
use std::sync::Mutex;

use arbor_log::scan::ReadAt;

use crate::rows::{read_range, SessionRow};
use crate::store::PgStore;

/// The unit fetched and kept: reads are served from aligned blocks.
const BLOCK: u64 = 64 << 10;
/// Blocks kept (the most recently used).
const KEPT: usize = 128;
/// A read of more blocks than this (a scan's range) is fetched whole and not kept.
const DIRECT: u64 = 8;
/// At most this many blocks are read ahead of a run of reads that follow one another.
const MAX_AHEAD: u64 = 64;

/// The blocks kept, most recently used last, and how far reads run ahead.
#[derive(Debug, Default)]
struct Blocks {
    kept: VecDeque<(u64, Vec<u8>)>,
    /// The block after the last one fetched, and how many blocks the next fetch reads ahead.
    next: u64,
    ahead: u64,
}

/// One version of a session on the server, read by byte ranges.
#[derive(Debug)]
pub(crate) struct ServerFile {
    store: PgStore,
    id: i64,
    generation: i64,
    len: u64,
    blocks: Mutex<Blocks>,
}

impl ServerFile {
    /// The session of `row` as it is now.
    pub fn new(store: PgStore, row: &SessionRow) -> ServerFile {
        ServerFile {
            store,
            id: row.id,
            generation: row.generation,
            len: u64::try_from(row.byte_size).unwrap_or_default(),
            blocks: Mutex::new(Blocks::default()),
        }
    }

    /// Bytes `[start, end)` of the session, from the server.
    fn fetch(&self, start: u64, end: u64) -> io::Result<Vec<u8>> {
        let (id, generation) = (self.id, self.generation);
        let (s, e) = (start as i64, end as i64);
        let bytes = self.store.read(|c| read_range(c, id, generation, s, e)).map_err(io::Error::other)?;
        if bytes.len() as u64 != end - start {
            return Err(io::Error::other(format!(
                "session {id} changed on the server while it was read (replaced whole): open it again"
            )));
        }
        Ok(bytes)
    }

    /// Makes blocks `first..=last` kept, fetching the missing ones (and, for
    /// reads that follow one another, a growing number of blocks ahead).
    fn ensure(&self, b: &mut Blocks, first: u64, last: u64) -> io::Result<()> {
        let blocks_in_file = self.len.div_ceil(BLOCK);
        let mut i = first;
        while i <= last {
            if b.kept.iter().any(|(k, _)| *k == i) {
                i += 1;
                continue;
            }
            // Reads that go on where the last fetch ended read further ahead each time.
            b.ahead = if i == b.next { (b.ahead * 2).clamp(1, MAX_AHEAD) } else { 0 };
            let mut end = i;
            while end < last && !b.kept.iter().any(|(k, _)| *k == end + 1) {
                end += 1;
            }
            if end == last {
                end = (last + b.ahead).min(blocks_in_file - 1);
                while end > last && b.kept.iter().any(|(k, _)| *k == end) {
                    end -= 1;
                }
            }
            let bytes = self.fetch(i * BLOCK, ((end + 1) * BLOCK).min(self.len))?;
            for (n, chunk) in bytes.chunks(BLOCK as usize).enumerate() {
                if b.kept.len() >= KEPT {
                    // The least recently used block this read does not need.
                    if let Some(old) = b.kept.iter().position(|(k, _)| *k < first || *k > last) {
                        b.kept.remove(old);
                    }
                }
                b.kept.push_back((i + n as u64, chunk.to_vec()));
            }
            b.next = end + 1;
            i = end + 1;
        }
        Ok(())
    }
}

impl ReadAt for ServerFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        if offset >= self.len || buf.is_empty() {
            return Ok(0);
        }
        let want = (buf.len() as u64).min(self.len - offset);
        let (first, last) = (offset / BLOCK, (offset + want - 1) / BLOCK);
        if last - first >= DIRECT {
            let bytes = self.fetch(offset, offset + want)?;
            buf[..want as usize].copy_from_slice(&bytes);
            return Ok(want as usize);
        }
        let mut b = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
        self.ensure(&mut b, first, last)?;
        let mut done = 0usize;
        for k in first..=last {
            let Some(pos) = b.kept.iter().position(|(i, _)| *i == k) else {
                return Err(io::Error::other("a block read was not kept"));
            };
            // Most recently used last.
            let Some(block) = b.kept.remove(pos) else { continue };
            let at = offset + done as u64 - k * BLOCK;
            let n = ((block.1.len() as u64 - at) as usize).min(want as usize - done);
            buf[done..done + n].copy_from_slice(&block.1[at as usize..at as usize + n]);
            done += n;
            b.kept.push_back(block);
        }
        Ok(done)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.len)
    }
}

/// A session read from the start of a byte offset to its end, a block at a time.
#[derive(Debug)]
pub(crate) struct ServerReader {
    file: ServerFile,
    at: u64,
}

impl ServerReader {
    pub fn new(file: ServerFile, at: u64) -> ServerReader {
        ServerReader { file, at }
    }
}

impl io::Read for ServerReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}
