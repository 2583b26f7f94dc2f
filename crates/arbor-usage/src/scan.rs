//! Where usage is read from, and reading it: pi's session files through
//! `arbor-tree` (any [`arbor_tree::Store`]: local files or a server),
//! other agents' transcripts in place through `arbor-interop`'s readers
//! (nothing is written), every file on its own thread, and a file whose
//! stamp the [`Cache`] knows not read again.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use arbor_interop::Format;
use arbor_tree::{FileStamp, MemoryStore, OpenMode, Session, SessionOptions};

use crate::cache::{Cache, Cached};
use crate::error::UsageError;
use crate::files::local_stamp;
use crate::model::{Agent, SessionUsage};
use crate::read::read_session;

/// A file to read usage from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Source {
    /// The agent that wrote it.
    pub agent: Agent,
    /// A pi session file (as its store names it), a Claude Code or Codex
    /// transcript, or an OpenCode session's `info` file.
    pub path: PathBuf,
}

/// How files are read.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// How pi's sessions are opened (their store; an index directory, if any).
    pub session: SessionOptions,
    /// Files read at once.
    pub threads: usize,
    /// True when `session.store` is this machine's file system: pi's files
    /// are then stamped for the [`Cache`] with one `stat` each, as the other
    /// agents' are, instead of through the store (whose stamp also resolves
    /// the path, a `stat` per folder on the way). Only the caller knows its
    /// store, so it is off by default.
    pub local: bool,
}

impl Default for ScanOptions {
    /// Local files (stamped through the store: see [`ScanOptions::local`]),
    /// no index, a thread per core.
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        ScanOptions { session: SessionOptions::default().with_index_dir(None), threads, local: false }
    }
}

/// What a scan found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Every session read, in the order of the sources.
    pub sessions: Vec<SessionUsage>,
    /// Files read.
    pub read: usize,
    /// Files whose sessions came from the cache.
    pub reused: usize,
    /// Files that could not be read: one line each, naming the file.
    pub unreadable: Vec<String>,
}

/// Reads every source (on `opts.threads` threads), taking from `cache`
/// the files whose stamp it knows and putting there what was read.
pub fn scan(sources: &[Source], opts: &ScanOptions, cache: &mut Cache) -> Scan {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Result<Read, UsageError>)>> = Mutex::new(Vec::new());
    let cache_ref = &*cache;
    std::thread::scope(|scope| {
        for _ in 0..opts.threads.clamp(1, sources.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(source) = sources.get(i) else { break };
                let result = read_source(source, opts, cache_ref);
                done.lock().unwrap_or_else(|p| p.into_inner()).push((i, result));
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_by_key(|(i, _)| *i);
    let mut out = Scan::default();
    let mut seen = HashSet::new();
    let mut lent = Vec::new();
    for (i, result) in done {
        let location = location_of(&sources[i]);
        seen.insert(location.clone());
        match result {
            Ok(Read::Cached) => {
                out.reused += 1;
                let start = out.sessions.len();
                out.sessions.extend(cache.lend(&location));
                // A file given twice is lent once: the second loan is empty and must not be given back.
                if out.sessions.len() > start {
                    lent.push((location, start..out.sessions.len()));
                }
            }
            Ok(Read::Fresh(sessions, stamp)) => {
                out.read += 1;
                if let Some(stamp) = stamp {
                    cache.put(location, Cached { stamp, sessions: sessions.clone() });
                }
                out.sessions.extend(sessions);
            }
            Err(e) => out.unreadable.push(e.to_string()),
        }
    }
    cache.retain(&seen);
    if cache.changed() {
        // It will be written whole: what was lent goes back (only then copied).
        for (location, range) in lent {
            cache.give_back(&location, &out.sessions[range]);
        }
    }
    out
}

/// One file's sessions, and whether they came from the cache.
#[derive(Debug)]
enum Read {
    /// The cache has it as it is (lent out after the threads are done).
    Cached,
    Fresh(Vec<SessionUsage>, Option<FileStamp>),
}

fn location_of(source: &Source) -> String {
    source.path.to_string_lossy().into_owned()
}

fn read_source(source: &Source, opts: &ScanOptions, cache: &Cache) -> Result<Read, UsageError> {
    let location = location_of(source);
    let stamp = match source.agent {
        Agent::Pi if !opts.local => opts.session.store.stamp(&source.path),
        Agent::OpenCode => crate::opencode::stamp(&source.path),
        Agent::Pi | Agent::Claude | Agent::Codex => local_stamp(&source.path),
    };
    if stamp.as_ref().is_some_and(|s| cache.knows(&location, s)) {
        return Ok(Read::Cached);
    }
    let sessions = match source.agent {
        Agent::Pi => {
            let s = Session::open(&source.path, OpenMode::ReadOnly, opts.session.clone())?;
            vec![read_session(&s, Agent::Pi, location)?]
        }
        Agent::Claude => in_place(Format::Claude, source, &location)?,
        Agent::Codex => in_place(Format::Codex, source, &location)?,
        Agent::OpenCode => in_place(Format::OpenCode, source, &location)?,
    };
    Ok(Read::Fresh(sessions, stamp))
}

/// Another agent's transcript, read as the importer maps it, into sessions
/// held in memory: nothing is written anywhere.
fn in_place(format: Format, source: &Source, location: &str) -> Result<Vec<SessionUsage>, UsageError> {
    let transcript = arbor_interop::read_transcript(format, &source.path)?;
    let mut out = Vec::new();
    for (n, planned) in transcript.sessions.iter().enumerate() {
        let store = MemoryStore::new();
        let path = PathBuf::from(format!("/in-place/{n}.jsonl"));
        let mut bytes = planned.lines.join("\n");
        bytes.push('\n');
        store.put(&path, bytes.as_bytes());
        let opts = SessionOptions::default().with_store(store).with_index_dir(None);
        let s = Session::open(&path, OpenMode::ReadOnly, opts)?;
        let location = if n == 0 { location.to_owned() } else { format!("{location}#{}", n + 1) };
        out.push(read_session(&s, source.agent, location)?);
    }
    Ok(out)
}
