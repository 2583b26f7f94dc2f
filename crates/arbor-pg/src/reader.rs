//! Reading a session on the server by byte ranges, as a file is read:
//! [`ServerFile`] is arbor-log's [`ReadAt`] over one version of a session
//! (its length as it was when opened), fetching only the bytes asked for
//! (and a little ahead) with the lines' offsets (migration 3), so that
//! index-first loading reads a few entries, not the session. A few recent
//! blocks are kept; nothing else is held. Told where the next reads are
//! ([`ReadAt::will_read`]: the lines of a context in file order, or the
//! lines of a tree in the order its walk reads them), it fetches the ranges
//! a read of them needs and those after it in that order, up to [`BATCH`]
//! bytes, in one statement, instead of a statement a block; a run of reads
//! that goes on where the last fetch ended (a walk in file order) is
//! fetched [`BATCH`] bytes a statement too. While a batch is read, the next
//! one is fetched ahead on a connection of its own, so the server sends it
//! while the reader works (two cores at work, not one after the other); at
//! most a few batches are held. A session replaced whole
//! while it is read (a migration's rewrite) is an error, never a mix of two
//! versions.

use std::collections::VecDeque;
use std::io;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_log::scan::ReadAt;
use postgres::types::Type;
use postgres::GenericClient;

use crate::conns::Conns;
use crate::error::{PgError, SqlError};
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

/// The most bytes of planned ranges one statement fetches, and of a run
/// of reads that goes on where the last fetch ended.
const BATCH: u64 = 2 << 20;
/// Batches kept: one a reader (a core) reading through its plan, and more
/// for a read that straddles two of them.
const BATCHES: usize = 4;
/// Batches a reader has fetched ahead of the one it reads: the server
/// sends one while the other is made (a second core at work).
const DEPTH: usize = 2;
/// Fetches made ahead at once (each reader's next [`DEPTH`] batches, for two readers).
const AHEAD: usize = 2 * DEPTH;

/// Bytes fetched in one statement: ranges of the session, one after the
/// other in `bytes`, as `(start in the session, start in bytes, length)`.
#[derive(Debug)]
struct Batch {
    ranges: Vec<(u64, usize, usize)>,
    bytes: Vec<u8>,
}

impl Batch {
    /// The ranges `ranges` fetched as `bytes` (their lengths one after the other).
    fn new(ranges: &[(u64, u64)], bytes: Vec<u8>) -> Batch {
        let mut at = 0;
        let ranges = ranges
            .iter()
            .map(|&(s, e)| {
                let n = (e - s) as usize;
                at += n;
                (s, at - n, n)
            })
            .collect();
        Batch { ranges, bytes }
    }

    /// The bytes held from `offset` on (up to the end of the range holding it).
    fn from(&self, offset: u64) -> Option<&[u8]> {
        let &(s, at, n) = self.ranges.iter().find(|&&(s, _, n)| s <= offset && offset < s + n as u64)?;
        let skip = (offset - s) as usize;
        Some(&self.bytes[at + skip..at + n])
    }

    /// True when a range ends at `offset` (a run of reads going on from there continues this batch).
    fn ends_at(&self, offset: u64) -> bool {
        self.ranges.last().is_some_and(|&(s, _, n)| s + n as u64 == offset)
    }
}

/// A batch fetched ahead on a connection of its own while the reader works
/// through the one before: its ranges, and the answer to come.
#[derive(Debug)]
struct Ahead {
    ranges: Vec<(u64, u64)>,
    answer: Receiver<Result<Vec<u8>, PgError>>,
}

/// What readers said they will read, and what was fetched for it.
#[derive(Debug, Default)]
struct Planned {
    /// The most recent plans (one a reader), each as ranges in file order.
    plans: VecDeque<Vec<(u64, u64)>>,
    /// Batches fetched, most recent last.
    batches: VecDeque<Batch>,
    /// Batches being fetched ahead, most recent last.
    ahead: VecDeque<Ahead>,
    /// The ranges of the batch a reader took last (fetched, or fetched ahead).
    last: Vec<(u64, u64)>,
}

impl Planned {
    /// The first byte of `[offset, end)` the batches do not hold (`end` when they hold it all).
    fn held_until(&self, offset: u64, end: u64) -> u64 {
        let mut at = offset;
        while at < end {
            match self.batches.iter().rev().find_map(|b| b.from(at)) {
                Some(held) => at = (at + held.len() as u64).min(end),
                None => break,
            }
        }
        at
    }

    /// Copies `[offset, offset + buf.len())` from the batches, when they hold it all.
    fn copy(&self, buf: &mut [u8], offset: u64) -> bool {
        if self.held_until(offset, offset + buf.len() as u64) < offset + buf.len() as u64 {
            return false;
        }
        let mut done = 0;
        while done < buf.len() {
            let Some(held) = self.batches.iter().rev().find_map(|b| b.from(offset + done as u64)) else { return false };
            let n = held.len().min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&held[..n]);
            done += n;
        }
        true
    }

    /// Keeps `batch`, forgetting the oldest past [`BATCHES`].
    fn keep(&mut self, batch: Batch) {
        if self.batches.len() >= BATCHES {
            self.batches.pop_front();
        }
        self.batches.push_back(batch);
    }

    /// The ranges to fetch for a read of `[offset, end)` that a plan holds:
    /// from it on through the plan (in the plan's order), at most [`BATCH`]
    /// bytes (the read whole).
    fn batch_for(&self, offset: u64, end: u64) -> Option<Vec<(u64, u64)>> {
        let (plan, k) = self.plan_holding(offset, end)?;
        Some(plan_from(plan, k, offset, BATCH.max(end - offset)))
    }

    /// The most recent plan with a range that holds `[offset, end)`, and that range's place in it.
    fn plan_holding(&self, offset: u64, end: u64) -> Option<(&[(u64, u64)], usize)> {
        self.plans
            .iter()
            .rev()
            .find_map(|p| p.iter().position(|&(s, e)| s <= offset && end <= e).map(|k| (p.as_slice(), k)))
    }

    /// The ranges to fetch for a read of `[offset, end)` that goes on where
    /// a batch ended (a walk through the session in file order): [`BATCH`]
    /// bytes from there.
    fn run_for(&self, offset: u64, end: u64, len: u64) -> Option<Vec<(u64, u64)>> {
        if end - offset > BATCH || !self.batches.iter().any(|b| b.ends_at(offset)) {
            return None;
        }
        Some(vec![(offset, (offset + BATCH).min(len))])
    }

    /// The batch that follows `batch` in a session of `len` bytes: the
    /// ranges of its plan after it, [`BATCH`] bytes of them, or for a run
    /// (one range no plan holds) the [`BATCH`] bytes after it.
    fn following(&self, batch: &[(u64, u64)], len: u64) -> Vec<(u64, u64)> {
        let Some(&(s, e)) = batch.last() else { return vec![] };
        match self.plan_holding(s, e) {
            Some((plan, k)) => plan_from(plan, k, e, BATCH),
            None if batch.len() == 1 && e < len => vec![(e, (e + BATCH).min(len))],
            None => vec![],
        }
    }

    /// The fetch made ahead whose first range starts at `offset`, taken out.
    fn take_ahead(&mut self, offset: u64) -> Option<Ahead> {
        let k = self.ahead.iter().position(|a| a.ranges.first().is_some_and(|r| r.0 == offset))?;
        self.ahead.remove(k)
    }

    /// The batches to fetch ahead now: of the [`DEPTH`] after the one
    /// taken last, each following the one before, those not being fetched.
    /// A fetch made ahead from a plan that has grown since was cut short
    /// by its end: the batch after it goes on from where it ends, so that
    /// nothing is fetched twice.
    fn wanted_ahead(&self, len: u64) -> Vec<Vec<(u64, u64)>> {
        let mut out = vec![];
        let mut last = self.last.clone();
        for _ in 0..DEPTH {
            let next = self.following(&last, len);
            let Some(&(s, _)) = next.first() else { break };
            match self.fetching(s) {
                Some(made) => last = made.to_vec(),
                None => {
                    out.push(next.clone());
                    last = next;
                }
            }
        }
        out
    }

    /// The ranges of the fetch made ahead that starts at `offset`.
    fn fetching(&self, offset: u64) -> Option<&[(u64, u64)]> {
        self.ahead.iter().find(|a| a.ranges.first().is_some_and(|r| r.0 == offset)).map(|a| a.ranges.as_slice())
    }
}

/// The ranges of `plan` from its `k`-th on (that one from `from` on), in
/// the plan's order, at most `left` bytes of them.
fn plan_from(plan: &[(u64, u64)], k: usize, from: u64, mut left: u64) -> Vec<(u64, u64)> {
    let mut out = vec![];
    for (i, &(s, e)) in plan.get(k..).unwrap_or_default().iter().enumerate() {
        if left == 0 {
            break;
        }
        let s = if i == 0 { s.max(from) } else { s };
        if s >= e {
            continue;
        }
        let e = e.min(s + left);
        out.push((s, e));
        left -= e - s;
    }
    out
}

/// Spans (`(start, end)`, in the order they will be read: file order for
/// a plan, a walk's order for a cursor told one) merged into the ranges a
/// cursor reads them by: a span that starts inside or at the end of the one
/// before (a server is [`ReadAt::remote`]: no gap is read through).
fn ranges_of(spans: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &(s, e) in spans {
        match out.last_mut() {
            Some(last) if last.0 <= s && s <= last.1 => last.1 = last.1.max(e),
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

    /// Bytes `[start, end)` of the session, from the server (not kept: a check of a few bytes).
    pub fn fetch_exact(&self, start: u64, end: u64) -> io::Result<Vec<u8>> {
        self.fetch(start, end.min(self.len))
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

    /// Answers a read of `buf.len()` bytes at `offset` from what was
    /// fetched for a plan or a run of reads, fetching the next batch when a
    /// plan holds the read or the read goes on where a batch ended (and the
    /// batch after it ahead, on a connection of its own, while this one is
    /// read); false when neither (the read goes by blocks).
    fn planned_read(&self, buf: &mut [u8], offset: u64) -> io::Result<bool> {
        let mut p = self.planned.lock().unwrap_or_else(|p| p.into_inner());
        let end = offset + buf.len() as u64;
        let mut at = p.held_until(offset, end);
        if at == end {
            return Ok(p.copy(buf, offset));
        }
        let mut took = None;
        // The fetches made ahead that go on from there, one after the other
        // (one cut short by the end of its plan is followed by the next).
        while at < end {
            let Some(ahead) = p.take_ahead(at) else { break };
            let bytes = self.answer_of(ahead.answer, &ahead.ranges)?;
            p.keep(Batch::new(&ahead.ranges, bytes));
            took = Some(ahead.ranges);
            at = p.held_until(offset, end);
        }
        if at < end {
            if let Some(now) = p.batch_for(at, end).or_else(|| p.run_for(at, end, self.len)) {
                let bytes = self.fetch_ranges(&now)?;
                p.keep(Batch::new(&now, bytes));
                took = Some(now);
            }
        }
        let Some(fetched) = took else { return Ok(false) };
        // The batches that follow (the plan's next ranges, or the run's next stretches), fetched ahead.
        p.last = fetched;
        self.fill_ahead(&mut p);
        if p.copy(buf, offset) {
            return Ok(true);
        }
        // A read the batch does not hold whole (it was fetched ahead for a smaller one): fetched now.
        let bytes = self.fetch_ranges(&[(at, end)])?;
        p.keep(Batch::new(&[(at, end)], bytes));
        Ok(p.copy(buf, offset))
    }

    /// Ranges `ranges` of the session, one after the other: one statement, bounded in time.
    fn fetch_ranges(&self, ranges: &[(u64, u64)]) -> io::Result<Vec<u8>> {
        let (id, generation, len) = (self.id, self.generation, self.len as i64);
        let asked: Vec<(i64, i64)> = ranges.iter().map(|&(s, e)| (s as i64, e as i64)).collect();
        let bytes =
            self.conns.read_bounded(move |c| read_ranges(c, id, generation, len, &asked)).map_err(io::Error::other)?;
        self.whole(bytes, ranges)
    }

    /// `bytes`, when they are all of `ranges`; else the error of a session replaced whole while it was read.
    fn whole(&self, bytes: Vec<u8>, ranges: &[(u64, u64)]) -> io::Result<Vec<u8>> {
        let want: u64 = ranges.iter().map(|(s, e)| e - s).sum();
        if bytes.len() as u64 != want {
            return Err(io::Error::other(format!(
                "session {} changed on the server while it was read (replaced whole): open it again",
                self.id
            )));
        }
        Ok(bytes)
    }

    /// Keeps the [`DEPTH`] batches after the one taken last fetched ahead ([`Planned::wanted_ahead`]).
    fn fill_ahead(&self, p: &mut Planned) {
        for ranges in p.wanted_ahead(self.len) {
            self.fetch_ahead(p, ranges);
        }
    }

    /// Starts fetching `ranges` ahead, on a connection of its own ([`Conns::read_apart`]).
    fn fetch_ahead(&self, p: &mut Planned, ranges: Vec<(u64, u64)>) {
        let (id, generation, len) = (self.id, self.generation, self.len as i64);
        let asked: Vec<(i64, i64)> = ranges.iter().map(|&(s, e)| (s as i64, e as i64)).collect();
        let (tx, answer) = std::sync::mpsc::sync_channel(1);
        let conns = self.conns.clone();
        let spawned = std::thread::Builder::new().name("arbor-pg-ahead".into()).spawn(move || {
            // Nobody waits any more (the reader went elsewhere): the answer is dropped.
            let _ = tx.send(conns.read_apart(|c| read_ranges(c, id, generation, len, &asked)));
        });
        if spawned.is_ok() {
            if p.ahead.len() >= AHEAD {
                p.ahead.pop_front();
            }
            p.ahead.push_back(Ahead { ranges, answer });
        }
    }

    /// The answer of a fetch made ahead, waited for within the answer limit
    /// (as a read of the shared connection is, [`Conns::read_bounded`]); a
    /// fetch that failed is made again on the shared connection (which
    /// connects again, or says why it cannot).
    fn answer_of(&self, answer: Receiver<Result<Vec<u8>, PgError>>, ranges: &[(u64, u64)]) -> io::Result<Vec<u8>> {
        let got = match self.conns.server.answer_limit() {
            Some(limit) => answer.recv_timeout(limit).map_err(|_| self.conns.no_answer(limit)),
            None => answer.recv().map_err(|_| self.conns.no_answer(Duration::ZERO)),
        };
        match got.map_err(io::Error::other)? {
            Ok(bytes) => self.whole(bytes, ranges),
            Err(_) => self.fetch_ranges(ranges),
        }
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
            if self.part.is_none() && want <= BATCH {
                // Kept: a read that goes on where this one ends is a run, fetched a batch ahead.
                let mut p = self.planned.lock().unwrap_or_else(|p| p.into_inner());
                p.keep(Batch::new(&[(offset, offset + want)], bytes));
            }
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
        // A longer plan: the fetches ahead it makes possible start now, not at the next batch taken.
        if !p.last.is_empty() {
            self.fill_ahead(&mut p);
        }
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

    #[test]
    fn batches_answer_reads_that_straddle_them() {
        let file: Vec<u8> = (0..100u8).collect();
        let mut p = Planned::default();
        p.keep(Batch::new(&[(10, 20), (30, 40)], [&file[10..20], &file[30..40]].concat()));
        p.keep(Batch::new(&[(20, 30)], file[20..30].to_vec()));
        let mut buf = [0u8; 25];
        assert!(p.copy(&mut buf, 12) && buf[..] == file[12..37]);
        assert_eq!(p.held_until(12, 45), 40);
        assert!(!p.copy(&mut buf, 30), "40..55 is not held");
        assert_eq!(p.held_until(5, 15), 5);
    }

    #[test]
    fn a_run_of_reads_fetches_a_batch_and_the_next_one_ahead() {
        let mut p = Planned::default();
        // Not a run yet: no batch ends where the read starts.
        assert!(p.run_for(1000, 2000, 1 << 30).is_none());
        p.keep(Batch::new(&[(0, 1000)], vec![0; 1000]));
        let now = p.run_for(1000, 2000, 1 << 30).unwrap();
        assert_eq!(now, [(1000, 1000 + BATCH)]);
        assert_eq!(p.following(&now, 1 << 30), [(1000 + BATCH, 1000 + 2 * BATCH)]);
        // Near the end of the session: what is left, and nothing after.
        let now = p.run_for(1000, 2000, 5000).unwrap();
        assert_eq!(now, [(1000, 5000)]);
        assert!(p.following(&now, 5000).is_empty());
    }

    #[test]
    fn a_fetch_ahead_cut_short_by_its_plan_is_followed_not_made_again() {
        let mut p = Planned::default();
        p.plans.push_back(vec![(0, 100), (200, 300)]);
        p.last = vec![(0, 100)];
        // The plan ends at 300: the fetch ahead is cut short there.
        let first = p.wanted_ahead(1 << 30);
        assert_eq!(first, [vec![(200, 300)]]);
        let (_tx, answer) = std::sync::mpsc::sync_channel(1);
        p.ahead.push_back(Ahead { ranges: first[0].clone(), answer });
        // The walk tells more: the range it was cut in goes on, and more after it.
        p.plans.push_back(vec![(0, 100), (200, 500), (600, 700)]);
        assert_eq!(p.wanted_ahead(1 << 30), [vec![(300, 500), (600, 700)]], "from where the fetch ahead ends");
        // A read of 200..400 takes the short fetch, then the one after it.
        assert_eq!(p.take_ahead(200).map(|a| a.ranges), Some(vec![(200, 300)]));
    }

    #[test]
    fn a_plan_is_fetched_a_batch_at_a_time_the_next_one_ahead() {
        let mut p = Planned::default();
        let plan: Vec<(u64, u64)> = (0..20).map(|k| (k * BATCH / 4, k * BATCH / 4 + BATCH / 8)).collect();
        p.plans.push_back(plan.clone());
        // In the order given, not the file's: a walk's order.
        let walk: Vec<(u64, u64)> = [5, 6, 1, 2, 3].iter().map(|&k| plan[k]).collect();
        p.plans.push_back(walk);
        let now = p.batch_for(plan[6].0, plan[6].0 + 1).unwrap();
        assert_eq!(now, [plan[6], plan[1], plan[2], plan[3]]);
        p.plans.pop_back();
        let now = p.batch_for(plan[1].0 + 5, plan[1].0 + 10).unwrap();
        // From the read on, BATCH bytes of the plan's ranges (8 ranges of BATCH / 8), then the next BATCH.
        assert_eq!(now[0], (plan[1].0 + 5, plan[1].1));
        assert_eq!(now.iter().map(|(s, e)| e - s).sum::<u64>(), BATCH);
        let next = p.following(&now, 1 << 40);
        assert_eq!(next.first().map(|r| r.0), now.last().map(|r| r.1));
        assert_eq!(next.iter().map(|(s, e)| e - s).sum::<u64>(), BATCH);
        assert!(p.batch_for(plan[1].1 + 1, plan[1].1 + 2).is_none(), "between the plan's ranges");
    }
}
