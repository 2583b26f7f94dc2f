//! The usage cache: each file's sessions as last read, keyed by the file's
//! stamp (size, times, identity), so a repeated report reads only the files
//! that changed. One file, in a folder the caller names (the CLI: Arbor's
//! cache directory), in a compact binary form (a report reads it whole:
//! hundreds of thousands of replies in a few milliseconds); written
//! atomically, and a damaged or older one is simply read again from the
//! sessions. The session files stay the only truth.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use arbor_tree::FileStamp;

use crate::error::UsageError;
use crate::forks::Copies;
use crate::model::{Agent, Place, Reply, SessionUsage, Tokens};

/// The first bytes of a cache file; the number after it is bumped when
/// what is cached (or how it is read from sessions) changes.
const MAGIC: &[u8] = b"arbor-usage-cache\n";
const VERSION: u32 = 2;

/// A file's sessions as last read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cached {
    pub stamp: FileStamp,
    pub sessions: Vec<SessionUsage>,
}

/// The cache: what every file held when it was last read, and the copies
/// found among them the last time (with the fingerprint of the sessions
/// they were found in, see [`crate::Usage::with_cache`]).
#[derive(Debug, Default)]
pub struct Cache {
    path: Option<PathBuf>,
    files: HashMap<String, Cached>,
    copies: Option<(u64, Copies)>,
    changed: bool,
    /// Files whose sessions are lent out (see [`Cache::lend`]).
    lent: usize,
    warning: Option<String>,
}

impl Cache {
    /// A cache kept in memory only (nothing is written).
    pub fn in_memory() -> Cache {
        Cache::default()
    }

    /// The cache in `file`: read when it is there and whole; a missing one
    /// starts empty, a damaged or older one too (with a warning,
    /// [`Cache::take_warning`]). [`Cache::save`] writes it back.
    pub fn open(file: &Path) -> Cache {
        let mut cache = Cache { path: Some(file.to_owned()), ..Cache::default() };
        match std::fs::File::open(file).and_then(|f| Ok((f.metadata()?.len(), f))) {
            Ok((len, f)) => match decode(f, len) {
                Some((files, copies)) => (cache.files, cache.copies) = (files, copies),
                None => cache.warning = Some(format!("{}: unreadable usage cache, read again", file.display())),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => cache.warning = Some(format!("{}: {e}; usage cache read again", file.display())),
        }
        cache
    }

    /// A warning about the cache file, once.
    pub fn take_warning(&mut self) -> Option<String> {
        self.warning.take()
    }

    /// Files cached.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn get(&self, location: &str, stamp: &FileStamp) -> Option<&[SessionUsage]> {
        self.files.get(location).filter(|c| c.stamp == *stamp).map(|c| c.sessions.as_slice())
    }

    /// True when the cache holds `location`'s sessions as of `stamp`.
    pub(crate) fn knows(&self, location: &str, stamp: &FileStamp) -> bool {
        self.files.get(location).is_some_and(|c| c.stamp == *stamp)
    }

    /// Lends `location`'s sessions out (no copy: a report holds hundreds of
    /// thousands of replies); [`Cache::give_back`] returns them before a save.
    pub(crate) fn lend(&mut self, location: &str) -> Vec<SessionUsage> {
        let lent = self.files.get_mut(location).map(|c| std::mem::take(&mut c.sessions)).unwrap_or_default();
        self.lent += usize::from(!lent.is_empty());
        lent
    }

    /// Returns what [`Cache::lend`] lent, when the cache will be written.
    pub(crate) fn give_back(&mut self, location: &str, sessions: &[SessionUsage]) {
        if let Some(c) = self.files.get_mut(location) {
            if c.sessions.is_empty() && !sessions.is_empty() {
                self.lent = self.lent.saturating_sub(1);
            }
            c.sessions = sessions.to_vec();
        }
    }

    /// The copies kept for sessions of this fingerprint.
    pub(crate) fn copies(&self, fingerprint: u64, sessions: usize) -> Option<&Copies> {
        self.copies.as_ref().filter(|(f, c)| *f == fingerprint && c.sessions() == sessions).map(|(_, c)| c)
    }

    /// Keeps `copies`, found in sessions of this fingerprint.
    pub(crate) fn keep_copies(&mut self, fingerprint: u64, copies: Copies) {
        self.copies = Some((fingerprint, copies));
        self.changed = true;
    }

    /// True when [`Cache::save`] would write.
    pub(crate) fn changed(&self) -> bool {
        self.changed
    }

    pub(crate) fn put(&mut self, location: String, cached: Cached) {
        self.files.insert(location, cached);
        self.changed = true;
    }

    /// Forgets every file not in `keep` (files gone since).
    pub(crate) fn retain(&mut self, keep: &std::collections::HashSet<String>) {
        let before = self.files.len();
        self.files.retain(|k, _| keep.contains(k));
        self.changed |= self.files.len() != before;
    }

    /// Writes the cache back to its file when something changed (atomically:
    /// a temporary file beside it, then renamed over it). A cache in memory
    /// writes nothing, nor does one whose sessions a scan lent out and kept
    /// (it did not change those files: they are only not here to be written).
    pub fn save(&mut self) -> Result<(), UsageError> {
        let Some(path) = &self.path else { return Ok(()) };
        if !self.changed || self.lent > 0 {
            return Ok(());
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| UsageError::io(dir, e))?;
        }
        let bytes = encode(&self.files, self.copies.as_ref());
        arbor_log::atomic_write(path, |w| w.write_all(&bytes))
            .map_err(|e| UsageError::Cache { path: path.clone(), reason: e.to_string() })?;
        self.changed = false;
        Ok(())
    }
}

/// Little-endian fields, length-prefixed strings.
#[derive(Debug, Default)]
struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i128(&mut self, v: i128) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
            None => self.u8(0),
        }
    }
}

/// Reads the fields [`Out`] wrote, through a buffer of its own: the file
/// is decoded as it is read (never held whole: a store's cache is tens of
/// MB, and memory the process touches costs a repeated report more than
/// the decoding does).
#[derive(Debug)]
struct In<R> {
    r: R,
    buf: Vec<u8>,
    at: usize,
    end: usize,
    /// Bytes of the file not taken yet.
    left: u64,
}

/// What [`In`] reads at a time.
const CHUNK: usize = 256 * 1024;

impl<R: Read> In<R> {
    /// Reads `r`, which holds `len` bytes.
    fn new(r: R, len: u64) -> In<R> {
        In { r, buf: vec![0; CHUNK], at: 0, end: 0, left: len }
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if n as u64 > self.left {
            return None;
        }
        if self.end - self.at < n {
            self.buf.copy_within(self.at..self.end, 0);
            (self.end, self.at) = (self.end - self.at, 0);
            if self.buf.len() < n {
                self.buf.resize(n, 0);
            }
            while self.end < n {
                match self.r.read(&mut self.buf[self.end..]) {
                    Ok(0) => return None,
                    Ok(k) => self.end += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return None,
                }
            }
        }
        let out = &self.buf[self.at..self.at + n];
        self.at += n;
        self.left -= n as u64;
        Some(out)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i128(&mut self) -> Option<i128> {
        Some(i128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok().map(str::to_owned)
    }
    /// A string held inline when short (an entry id): no allocation.
    fn compact_str(&mut self) -> Option<compact_str::CompactString> {
        let n = self.u32()? as usize;
        compact_str::CompactString::from_utf8(self.take(n)?).ok()
    }
    fn opt_str(&mut self) -> Option<Option<String>> {
        match self.u8()? {
            0 => Some(None),
            1 => self.str().map(Some),
            _ => None,
        }
    }
    /// A count that cannot be more than the bytes left (a damaged length
    /// must not make a huge allocation).
    fn count(&mut self, min_bytes_each: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.saturating_mul(min_bytes_each) as u64 <= self.left).then_some(n)
    }
}

fn encode(files: &HashMap<String, Cached>, copies: Option<&(u64, Copies)>) -> Vec<u8> {
    let mut o = Out::default();
    o.0.extend_from_slice(MAGIC);
    o.u32(VERSION);
    o.u32(files.len() as u32);
    for (location, c) in files {
        o.str(location);
        o.str(&c.stamp.identity);
        o.u64(c.stamp.size);
        o.i128(c.stamp.mtime_ns);
        o.i128(c.stamp.changed_ns);
        o.u32(c.sessions.len() as u32);
        for s in &c.sessions {
            encode_session(&mut o, s);
        }
    }
    match copies {
        Some((fingerprint, copies)) => {
            o.u8(1);
            o.u64(*fingerprint);
            o.u32(copies.sessions() as u32);
            o.u32(copies.count() as u32);
            for (s, r, owner) in copies.each() {
                o.u32(s);
                o.u32(r);
                o.u32(owner);
            }
        }
        None => o.u8(0),
    }
    o.0
}

/// The copies section: a fingerprint and the copies' triples.
fn decode_copies(i: &mut In<impl Read>) -> Option<Option<(u64, Copies)>> {
    if i.u8()? == 0 {
        return Some(None);
    }
    let fingerprint = i.u64()?;
    let sessions = i.u32()? as usize;
    let n = i.count(12)?;
    let mut each = Vec::with_capacity(n);
    for _ in 0..n {
        each.push((i.u32()?, i.u32()?, i.u32()?));
    }
    Some(Some((fingerprint, Copies::from_each(sessions, each)?)))
}

fn encode_session(o: &mut Out, s: &SessionUsage) {
    o.u8(s.agent.code());
    o.str(&s.location);
    o.str(&s.id);
    o.str(&s.cwd);
    o.opt_str(s.parent_session.as_deref());
    o.i64(s.started_ms);
    o.u32(s.branch_summaries);
    o.u32(s.compactions);
    o.u32(s.leaves);
    o.u32(s.models.len() as u32);
    for (provider, model) in &s.models {
        o.str(provider);
        o.str(model);
    }
    o.u32(s.replies.len() as u32);
    for r in &s.replies {
        o.str(&r.entry);
        o.i64(r.time_ms);
        o.u32(r.model);
        for n in [r.tokens.input, r.tokens.output, r.tokens.cache_read, r.tokens.cache_write] {
            o.u64(n);
        }
        match r.recorded_cost {
            Some(c) => {
                o.u8(1);
                o.u64(c.to_bits());
            }
            None => o.u8(0),
        }
        o.u8(r.place.code());
        o.u64(r.key);
    }
}

type Decoded = (HashMap<String, Cached>, Option<(u64, Copies)>);

/// The cache in `r`, which holds `len` bytes; `None` when it is not whole.
fn decode(r: impl Read, len: u64) -> Option<Decoded> {
    let mut i = In::new(r, len);
    if i.take(MAGIC.len())? != MAGIC || i.u32()? != VERSION {
        return None;
    }
    let n = i.count(8)?;
    let mut files = HashMap::with_capacity(n);
    for _ in 0..n {
        let location = i.str()?;
        let stamp = FileStamp { identity: i.str()?, size: i.u64()?, mtime_ns: i.i128()?, changed_ns: i.i128()? };
        let count = i.count(8)?;
        let mut sessions = Vec::with_capacity(count);
        for _ in 0..count {
            sessions.push(decode_session(&mut i)?);
        }
        files.insert(location, Cached { stamp, sessions });
    }
    let copies = decode_copies(&mut i)?;
    (i.left == 0).then_some((files, copies))
}

fn decode_session(i: &mut In<impl Read>) -> Option<SessionUsage> {
    let agent = Agent::from_code(i.u8()?)?;
    let (location, id, cwd) = (i.str()?, i.str()?, i.str()?);
    let parent_session = i.opt_str()?;
    let started_ms = i.i64()?;
    let (branch_summaries, compactions, leaves) = (i.u32()?, i.u32()?, i.u32()?);
    let n = i.count(8)?;
    let mut models = Vec::with_capacity(n);
    for _ in 0..n {
        models.push((i.str()?, i.str()?));
    }
    let n = i.count(60)?;
    let mut replies = Vec::with_capacity(n);
    for _ in 0..n {
        let entry = i.compact_str()?;
        let time_ms = i.i64()?;
        let model = i.u32()?;
        let tokens = Tokens { input: i.u64()?, output: i.u64()?, cache_read: i.u64()?, cache_write: i.u64()? };
        let recorded_cost = match i.u8()? {
            0 => None,
            1 => Some(f64::from_bits(i.u64()?)),
            _ => return None,
        };
        let place = Place::from_code(i.u8()?)?;
        replies.push(Reply { entry, time_ms, model, tokens, recorded_cost, place, key: i.u64()? });
    }
    Some(SessionUsage {
        agent,
        location,
        id,
        cwd,
        parent_session,
        started_ms,
        models,
        replies,
        branch_summaries,
        compactions,
        leaves,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample() -> HashMap<String, Cached> {
        let reply = Reply {
            entry: "a1b2c3d4".into(),
            time_ms: 1_772_332_200_000,
            model: 0,
            tokens: Tokens { input: 1, output: 2, cache_read: 3, cache_write: 4 },
            recorded_cost: Some(0.25),
            place: Place::Summarized,
            key: 42,
        };
        let s = SessionUsage {
            agent: Agent::Claude,
            location: "/s/a.jsonl".into(),
            id: "s1".into(),
            cwd: "/w".into(),
            parent_session: Some("/s/p.jsonl".into()),
            started_ms: 7,
            models: vec![("anthropic".into(), "claude-sonnet-4-5".into())],
            replies: vec![reply.clone(), Reply { recorded_cost: None, place: Place::Active, ..reply }],
            branch_summaries: 1,
            compactions: 2,
            leaves: 3,
        };
        let stamp = FileStamp { identity: "1:2:/s/a.jsonl".into(), size: 10, mtime_ns: 11, changed_ns: 12 };
        HashMap::from([("/s/a.jsonl".to_owned(), Cached { stamp, sessions: vec![s] })])
    }

    #[test]
    fn what_is_written_reads_back_and_damage_reads_as_nothing() {
        let files = sample();
        let copies = (7, Copies::from_each(1, [(0, 1, 0)]).unwrap());
        let whole = |b: &[u8]| decode(b, b.len() as u64);
        assert_eq!(whole(&encode(&files, None)).unwrap(), (files.clone(), None));
        let bytes = encode(&files, Some(&copies));
        assert_eq!(whole(&bytes).unwrap(), (files, Some(copies)));
        for cut in [0, MAGIC.len(), bytes.len() / 2, bytes.len() - 1] {
            assert!(whole(&bytes[..cut]).is_none(), "cut at {cut}");
            assert!(decode(&bytes[..cut], bytes.len() as u64).is_none(), "cut at {cut}, longer said");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(whole(&longer).is_none(), "trailing bytes");
        let mut other = bytes;
        other[MAGIC.len()] ^= 1;
        assert!(whole(&other).is_none(), "another version");
    }

    /// Gives at most 3 bytes a read.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(3).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_cache_bigger_than_the_buffer_read_in_small_pieces_reads_back() {
        let mut files = sample();
        let cached = files.values_mut().next().unwrap();
        let reply = cached.sessions[0].replies[0].clone();
        cached.sessions[0].replies = (0..10_000).map(|k| Reply { key: k, ..reply.clone() }).collect();
        let bytes = encode(&files, None);
        assert!(bytes.len() > 2 * CHUNK);
        assert_eq!(decode(bytes.as_slice(), bytes.len() as u64).unwrap().0, files);
        assert_eq!(decode(Trickle(&bytes), bytes.len() as u64).unwrap().0, files);
    }

    #[test]
    fn a_cache_file_is_written_only_when_something_changed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub/usage.bin");
        let mut c = Cache::open(&file);
        assert!(c.is_empty() && c.take_warning().is_none());
        c.save().unwrap();
        assert!(!file.exists(), "nothing changed: nothing written");
        let (location, cached) = sample().into_iter().next().unwrap();
        c.put(location.clone(), cached.clone());
        c.save().unwrap();
        let again = Cache::open(&file);
        assert_eq!(again.get(&location, &cached.stamp).map(<[_]>::len), Some(1));
        let other = FileStamp { size: 99, ..cached.stamp };
        assert!(again.get(&location, &other).is_none(), "another stamp is a miss");
        std::fs::write(&file, b"junk").unwrap();
        let mut damaged = Cache::open(&file);
        assert!(damaged.is_empty());
        assert!(damaged.take_warning().unwrap().contains("unreadable usage cache"));
    }
}
