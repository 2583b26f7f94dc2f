//! The usage cache: each file's sessions as last read, keyed by the file's
//! stamp (size, times, identity), so a repeated report reads only the files
//! that changed. One file, in a folder the caller names (the CLI: Arbor's
//! cache directory), in a compact binary form (a report reads it whole:
//! hundreds of thousands of replies in a few milliseconds); written
//! atomically, and a damaged or older one is simply read again from the
//! sessions. The session files stay the only truth.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arbor_tree::storage::FileStamp;

use crate::error::UsageError;
use crate::model::{Agent, Place, Reply, SessionUsage, Tokens};

/// The first bytes of a cache file; the number after it is bumped when
/// what is cached (or how it is read from sessions) changes.
const MAGIC: &[u8] = b"arbor-usage-cache\n";
const VERSION: u32 = 1;

/// A file's sessions as last read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cached {
    pub stamp: FileStamp,
    pub sessions: Vec<SessionUsage>,
}

/// The cache: what every file held when it was last read.
#[derive(Debug, Default)]
pub struct Cache {
    path: Option<PathBuf>,
    files: HashMap<String, Cached>,
    changed: bool,
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
        match std::fs::read(file) {
            Ok(bytes) => match decode(&bytes) {
                Some(files) => cache.files = files,
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
        self.files.get_mut(location).map(|c| std::mem::take(&mut c.sessions)).unwrap_or_default()
    }

    /// Returns what [`Cache::lend`] lent, when the cache will be written.
    pub(crate) fn give_back(&mut self, location: &str, sessions: &[SessionUsage]) {
        if let Some(c) = self.files.get_mut(location) {
            c.sessions = sessions.to_vec();
        }
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
    /// writes nothing.
    pub fn save(&mut self) -> Result<(), UsageError> {
        let Some(path) = &self.path else { return Ok(()) };
        if !self.changed {
            return Ok(());
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| UsageError::io(dir, e))?;
        }
        let bytes = encode(&self.files);
        arbor_log::writer::atomic_write(path, |w| w.write_all(&bytes))
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

#[derive(Debug)]
struct In<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> In<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.bytes.get(self.at..end)?;
        self.at = end;
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
        String::from_utf8(self.take(n)?.to_vec()).ok()
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
        (n.saturating_mul(min_bytes_each) <= self.bytes.len() - self.at).then_some(n)
    }
}

fn encode(files: &HashMap<String, Cached>) -> Vec<u8> {
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
    o.0
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

fn decode(bytes: &[u8]) -> Option<HashMap<String, Cached>> {
    let mut i = In { bytes, at: 0 };
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
    (i.at == bytes.len()).then_some(files)
}

fn decode_session(i: &mut In) -> Option<SessionUsage> {
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
        let entry = i.str()?.into();
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
        let bytes = encode(&files);
        assert_eq!(decode(&bytes).unwrap(), files);
        for cut in [0, MAGIC.len(), bytes.len() / 2, bytes.len() - 1] {
            assert!(decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_none(), "trailing bytes");
        let mut other = bytes;
        other[MAGIC.len()] ^= 1;
        assert!(decode(&other).is_none(), "another version");
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
