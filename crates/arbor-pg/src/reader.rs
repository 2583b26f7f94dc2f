//! Reading a session on the server by byte ranges, as a file is read:
//! [`ServerFile`] is arbor-log's [`ReadAt`] over one version of a session
//! (its length as it was when opened), fetching only the bytes asked for
//! (and a little ahead) with the lines' offsets (migration 3), so that
//! index-first loading reads a few entries, not the session. A few recent
//! blocks are kept; nothing else is held. Told where the next reads are
//! ([`ReadAt::will_read`]: the lines of a context), it fetches the ranges a
//! read of them needs and those after it, up to [`BATCH`] bytes, in one
//! statement, instead of a statement a block. A session replaced whole
//! while it is read (a migration's rewrite) is an error, never a mix of two
//! versions.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex};

use arbor_log::scan::ReadAt;
use postgres::types::Type;
use postgres::GenericClient;

use crate::conns::Conns;
use crate::error::SqlError;
use crate::rows::{read_range, read_ranges, SessionRow};

/// The unit fetched and kept: reads are served from aligned blocks.
const BLOCK: u64 = 64 << 10;
/// Blocks kept (the most recently used).
const KEPT: usize = 128;
/// A read of more blocks than this (a scan's range) is fetched whole and not kept.
const DIRECT: u64 = 8;
/// The most bytes one statement fetches: a large read is made of several.
const FETCH: i64 = 8 << 20;
/// At most this many blocks are read ahead of a run of reads that follow one another.
const MAX_AHEAD: u64 = 64;

/// Runs of reads followed at once (a check on all cores reads the session
/// in one stretch a core, each through its own cursor).
const STREAMS: usize = 8;

/// The most bytes of planned ranges one statement fetches.
const BATCH: u64 = 4 << 20;
/// Batches kept: one a reader (a core) reading through its plan, and one more.
const BATCHES: usize = 3;

/// What readers said they will read, and what was fetched for it.
#[derive(Debug, Default)]
struct Planned {
    /// The most recent plans (one a reader), each as ranges in file order.
    plans: VecDeque<Vec<(u64, u64)>>,
    /// Batches fetched, most recent last: ranges as `(start, bytes)`.
    batches: VecDeque<Vec<(u64, Vec<u8>)>>,
}

impl Planned {
    /// Copies `[offset, offset + buf.len())` from a batch, when one holds it all.
    fn copy(&self, buf: &mut [u8], offset: u64) -> bool {
        let end = offset + buf.len() as u64;
        let held = self.batches.iter().flatten().find(|(s, b)| *s <= offset && end <= s + b.len() as u64);
        match held {
            Some((s, b)) => {
                let at = (offset - s) as usize;
                buf.copy_from_slice(&b[at..at + buf.len()]);
                true
            }
            None => false,
        }
    }

    /// The ranges to fetch for a read of `[offset, end)` that a plan holds:
    /// from it on through the plan, at most [`BATCH`] bytes (the read whole).
    fn batch_for(&self, offset: u64, end: u64) -> Option<Vec<(u64, u64)>> {
        let plan = self.plans.iter().rev().find(|p| p.iter().any(|&(s, e)| s <= offset && end <= e))?;
        let first = plan.partition_point(|&(_, e)| e < end);
        let mut left = BATCH.max(end - offset);
        let mut out = vec![];
        for (k, &(s, e)) in plan[first..].iter().enumerate() {
            let s = if k == 0 { offset } else { s };
            let e = e.min(s + left);
            out.push((s, e));
            left -= e - s;
            if left == 0 {
                break;
            }
        }
        Some(out)
    }
}

/// Spans (`(start, end)`, in file order) merged into the ranges a cursor
/// reads them by: spans that overlap or touch (a server is [`ReadAt::remote`]:
/// no gap is read through).
fn ranges_of(spans: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &(s, e) in spans {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The blocks kept, most recently used last, and how far reads run ahead.
#[derive(Debug, Default)]
struct Blocks {
    kept: VecDeque<(u64, Vec<u8>)>,
    /// Each run of reads that follow one another, most recent last: the
    /// block after the last one it fetched, and how many blocks its next
    /// fetch reads ahead. Kept apart, so that runs read at once (one a
    /// core) each read further ahead instead of breaking one another's run.
    streams: VecDeque<(u64, u64)>,
}

impl Blocks {
    /// How far a fetch starting at block `i` reads ahead: further each time
    /// it goes on where a run's last fetch ended, none for a new run.
    fn ahead_at(&mut self, i: u64) -> u64 {
        let ahead = match self.streams.iter().position(|&(next, _)| next == i) {
            Some(k) => {
                let (_, ahead) = self.streams.remove(k).unwrap_or_default();
                (ahead * 2).clamp(1, MAX_AHEAD)
            }
            None => 0,
        };
        if self.streams.len() >= STREAMS {
            self.streams.pop_front();
        }
        self.streams.push_back((i, ahead));
        ahead
    }

    /// The run fetching from `i` ended its fetch before block `next`.
    fn fetched(&mut self, next: u64) {
        if let Some(last) = self.streams.back_mut() {
            last.0 = next;
        }
    }
}

/// One version of a session on the server, read by byte ranges.
#[derive(Debug)]
pub(crate) struct ServerFile {
    conns: Arc<Conns>,
    id: i64,
    generation: i64,
    len: u64,
    /// The session's lines (`None`), or this part of its index on the server.
    part: Option<i16>,
    blocks: Mutex<Blocks>,
    planned: Mutex<Planned>,
}

impl ServerFile {
    /// The session of `row` as it is now.
    pub fn new(conns: Arc<Conns>, row: &SessionRow) -> ServerFile {
        ServerFile {
            conns,
            id: row.id,
            generation: row.generation,
            len: u64::try_from(row.byte_size).unwrap_or_default(),
            part: None,
            blocks: Mutex::new(Blocks::default()),
            planned: Mutex::new(Planned::default()),
        }
    }

    /// Part `part` of the index the server keeps of session `row`, `len` bytes of it.
    pub fn part(conns: Arc<Conns>, row: &SessionRow, part: i16, len: u64) -> ServerFile {
        ServerFile { part: Some(part), len, ..ServerFile::new(conns, row) }
    }

    /// Bytes `[start, end)` of the session, from the server.
    fn fetch(&self, start: u64, end: u64) -> io::Result<Vec<u8>> {
        let (id, generation) = (self.id, self.generation);
        let (s, e) = (start as i64, end as i64);
        // In pieces of at most FETCH bytes: each read is bounded in time (PgStore::read_bounded).
        let mut bytes = Vec::with_capacity(usize::try_from(end - start).unwrap_or_default());
        let mut at = s;
        while at < e {
            let to = e.min(at + FETCH);
            let piece = match self.part {
                None => self.conns.read_bounded(move |c| read_range(c, id, generation, at, to)),
                Some(p) => self.conns.read_bounded(move |c| read_part(c, id, generation, p, at, to)),
            }
            .map_err(io::Error::other)?;
            let short = (piece.len() as i64) < to - at;
            bytes.extend(piece);
            if short {
                break;
            }
            at = to;
        }
        if bytes.len() as u64 != end - start {
            return Err(io::Error::other(format!(
                "session {id} changed on the server while it was read (replaced whole): open it again"
            )));
        }
        Ok(bytes)
    }

    /// Answers a read of `buf.len()` bytes at `offset` from what was fetched
    /// for a plan, fetching the plan's next batch when a plan holds the read;
    /// false when none does (the read goes by blocks).
    fn planned_read(&self, buf: &mut [u8], offset: u64) -> io::Result<bool> {
        let mut p = self.planned.lock().unwrap_or_else(|p| p.into_inner());
        if p.copy(buf, offset) {
            return Ok(true);
        }
        let Some(ranges) = p.batch_for(offset, offset + buf.len() as u64) else { return Ok(false) };
        let (id, generation) = (self.id, self.generation);
        let asked: Vec<(i64, i64)> = ranges.iter().map(|&(s, e)| (s as i64, e as i64)).collect();
        let want: u64 = ranges.iter().map(|(s, e)| e - s).sum();
        let len = self.len as i64;
        let bytes =
            self.conns.read_bounded(move |c| read_ranges(c, id, generation, len, &asked)).map_err(io::Error::other)?;
        if bytes.len() as u64 != want {
            return Err(io::Error::other(format!(
                "session {id} changed on the server while it was read (replaced whole): open it again"
            )));
        }
        let mut at = 0;
        let batch = ranges
            .iter()
            .map(|&(s, e)| {
                let n = (e - s) as usize;
                at += n;
                (s, bytes[at - n..at].to_vec())
            })
            .collect();
        if p.batches.len() >= BATCHES {
            p.batches.pop_front();
        }
        p.batches.push_back(batch);
        Ok(p.copy(buf, offset))
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
            // Reads that go on where a run's last fetch ended read further ahead each time.
            let ahead = b.ahead_at(i);
            let mut end = i;
            while end < last && !b.kept.iter().any(|(k, _)| *k == end + 1) {
                end += 1;
            }
            if end == last {
                end = (last + ahead).min(blocks_in_file - 1);
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
            b.fetched(end + 1);
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
        if self.part.is_none() && self.planned_read(&mut buf[..want as usize], offset)? {
            return Ok(want as usize);
        }
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

    fn remote(&self) -> bool {
        true
    }

    fn will_read(&self, spans: &[(u64, u64)]) {
        if self.part.is_some() || spans.is_empty() {
            return;
        }
        let mut p = self.planned.lock().unwrap_or_else(|p| p.into_inner());
        if p.plans.len() >= STREAMS {
            p.plans.pop_front();
        }
        let len = self.len;
        p.plans.push_back(ranges_of(spans).into_iter().map(|(s, e)| (s.min(len), e.min(len))).collect());
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

/// The chunk size of the index's parts on the server (`index.rs`'s `CHUNK`,
/// which asserts they agree): the query below aligns to it.
pub(crate) const PART_CHUNK: u64 = 4096;

/// Bytes `[start, end)` of part `part` of the index of session `id` at
/// generation `generation` (fewer when the session was replaced since).
pub(crate) fn read_part(
    c: &mut impl GenericClient,
    id: i64,
    generation: i64,
    part: i16,
    start: i64,
    end: i64,
) -> Result<Vec<u8>, SqlError> {
    let rows = c.query_typed(
        "SELECT substring(p.bytes FROM (greatest(p.off, $4) - p.off + 1)::int \
                                 FOR (least(p.off + length(p.bytes), $5) - greatest(p.off, $4))::int) \
         FROM arbor.index_parts p JOIN arbor.sessions s ON s.id = p.session AND s.generation = $2 \
         WHERE p.session = $1 AND p.part = $3 AND p.off >= ($4 / 4096) * 4096 AND p.off < $5 ORDER BY p.off",
        &[(&id, Type::INT8), (&generation, Type::INT8), (&part, Type::INT2), (&start, Type::INT8), (&end, Type::INT8)],
    )?;
    let mut out = Vec::with_capacity(usize::try_from(end - start).unwrap_or_default());
    for r in rows {
        out.extend_from_slice(r.get::<_, &[u8]>(0));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_read_at_once_each_read_further_ahead() {
        let mut b = Blocks::default();
        // Two runs interleaved, each going on where its last fetch ended.
        let (mut x, mut y) = (0, 1000);
        let mut aheads = vec![];
        for _ in 0..4 {
            let a = b.ahead_at(x);
            x += 1 + a;
            b.fetched(x);
            let c = b.ahead_at(y);
            y += 1 + c;
            b.fetched(y);
            aheads.push((a, c));
        }
        assert_eq!(aheads, [(0, 0), (1, 1), (2, 2), (4, 4)]);
        // A read elsewhere starts a run of its own.
        assert_eq!(b.ahead_at(500), 0);
    }
}
