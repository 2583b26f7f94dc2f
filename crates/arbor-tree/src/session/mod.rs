//! [`Session`]: pi's `SessionManager` over a [`Store`] (docs/architecture.md,
//! "Opening a session" to "The tree").
//!
//! The session holds every entry in file order with the JSON text it was read
//! as (so nothing is re-encoded by accident), an id index where the later line
//! wins, children lists, resolved labels and the leaf. Writes follow pi's
//! lifecycle without its bugs (docs/architecture.md, "The persist state
//! machine"): a new session reaches disk with its first assistant message in
//! one atomic write, a loaded file is appended to, a migrated file is
//! rewritten atomically on its first write (never on read), and a damaged
//! file is replaced only when the caller asks for pi's recovery.
//!
//! One room per job:
//! - `options.rs`: [`OpenMode`] and [`SessionOptions`];
//! - `open.rs`: the factories (`open`, `create`, `in_memory`,
//!   `continue_recent`, `new_session`);
//! - `load.rs`: filling a session from a scan, the index or a full read;
//! - `grown.rs`: the index of a file that grew, and the lines after it;
//! - `persist.rs`: what is on disk, locking, materialization;
//! - `append.rs`: every append; `leaf.rs`: leaf moves;
//! - `lookup.rs`: ids answered through the index's id rows, without the id map;
//! - `query.rs`: reading by id (the user's vocabulary);
//! - `positions.rs`: [`Position`] and reading by position, one or many at a
//!   time on all cores (the fast paths' vocabulary);
//! - `branched.rs`: `create_branched_session` and `fork_from`;
//! - `slot.rs`: one entry (`Slot`, packed into 40 bytes);
//! - `cursor.rs`: the line cursor, many lines read through one buffer;
//! - `packed.rs`: ids held as integers ([`EntryId`]) and the id → slot table;
//! - `slots.rs`: every entry in file order, read from the index on demand;
//! - `verify.rs`: lines placed by the index checked against the file.

mod append;
mod branched;
mod cursor;
mod grown;
mod leaf;
mod load;
mod long_line;
mod lookup;
mod open;
mod options;
mod packed;
mod persist;
mod positions;
mod query;
mod slot;
mod slots;
mod verify;
mod watch;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use compact_str::CompactString;

use arbor_log::idhash::{IdHash, IdMap};
use arbor_log::scan::ReadAt;
use arbor_log::time::format_iso_ms;
use arbor_log::{Diagnostic, MigrationReport, SessionHeader};

use crate::error::TreeError;
use crate::labels::Labels;
use crate::store::{AppendHandle, WriteLock};

pub(crate) use cursor::LineCursor;
pub use long_line::LongLine;
pub use options::{OpenMode, SessionOptions};
pub use packed::EntryId;
pub(crate) use persist::Disk;
pub use positions::Position;
pub(crate) use slot::Slot;
pub(crate) use slots::Slots;

/// The `customType` of the hidden entry that makes a leaf move durable.
///
/// ```
/// use arbor_tree::{EntryKind, OpenMode, Session, SessionOptions, LEAF_MARKER_TYPE};
///
/// # let dir = tempfile::tempdir()?;
/// # let file = dir.path().join("s.jsonl");
/// # std::fs::write(&file, concat!(
/// #     r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#, "\n",
/// #     r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}"#, "\n",
/// #     r#"{"type":"message","id":"u2","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"again"}}"#, "\n",
/// # ))?;
/// let mut s = Session::open(&file, OpenMode::Write, SessionOptions::default())?;
/// s.branch("u1")?;
/// let marker = s.persist_leaf()?.expect("the leaf moved");
/// let entry = s.get_entry(&marker)?.expect("appended");
/// assert!(matches!(&entry.kind, EntryKind::Custom(c) if c.custom_type == LEAF_MARKER_TYPE));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const LEAF_MARKER_TYPE: &str = "arbor.leaf";

/// The entries and everything derived from them. `Default` is the empty
/// session, so resetting all of it is one assignment ([`Session::clear`]).
#[derive(Debug, Default)]
pub(crate) struct Entries {
    pub(crate) slots: Slots,
    /// Id → slot; built by a bulk load that hashes ids anyway, else on first use.
    by_id: OnceLock<arbor_log::idhash::IdTable>,
    /// Built on first use.
    children: OnceLock<IdMap<slot::Kids>>,
    /// Parent ids naming no entry (built by the first append): an append
    /// whose id is one of them re-points the entries naming it.
    unresolved: OnceLock<HashSet<CompactString, IdHash>>,
    /// Resolved on first use (a context never needs them).
    labels: OnceLock<Labels>,
    /// Ids looked up through the index's id rows so far (`lookup.rs`).
    index_lookups: std::sync::atomic::AtomicUsize,
    leaf: Option<String>,
    leaf_moved: bool,
    has_assistant: bool,
    /// One entry of each parent cycle, shown as a root.
    pub(crate) cycle_roots: HashSet<usize>,
    /// The file as opened, for decoding entries on demand (`None` when every
    /// slot is decoded); the watch over it when the store names its versions.
    source: Option<Arc<dyn ReadAt>>,
    watch: Option<Arc<watch::Watched>>,
}

/// A session: the tree/leaf model over one log. See the module docs.
///
/// ```
/// use arbor_tree::{Message, Session, SessionOptions};
///
/// let mut s = Session::in_memory("/w", SessionOptions::default());
/// let question = s.append_message(Message::user("Which crate owns the leaf?", 1))?;
/// let first = s.append_message(Message::user("Answer briefly.", 2))?;
/// // Back to the question, then another way on.
/// s.branch(&question)?;
/// let second = s.append_message(Message::user("Answer at length.", 3))?;
/// let path: Vec<&str> = s.get_branch(None)?.iter().map(|e| e.id.as_str()).collect();
/// assert_eq!(path, [question.as_str(), second.as_str()]);
/// assert_eq!(s.get_children(&question)?.len(), 2);
/// assert_eq!(s.leaf_id(), Some(second.as_str()));
/// # let _ = first;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Session {
    header: SessionHeader,
    /// The lines up to the header as the file holds them, while unchanged ([`Session::header_text`]).
    header_text: Option<Box<str>>,
    pub(crate) state: Entries,
    persist: bool,
    read_only: bool,
    file: Option<PathBuf>,
    session_dir: PathBuf,
    cwd: String,
    disk: Disk,
    writer: Option<Box<dyn AppendHandle>>,
    lock: Option<Box<dyn WriteLock>>,
    opts: SessionOptions,
    diagnostics: Vec<Diagnostic>,
    migration: MigrationReport,
    notices: Vec<String>,
    failed: Option<String>,
    /// Long lines are decoded as previews ([`Session::read_previews`]).
    previews: bool,
}

impl Session {
    fn blank(opts: SessionOptions, cwd: String, persist: bool, session_dir: PathBuf) -> Session {
        let header = SessionHeader::new(String::new(), String::new(), cwd.clone(), None);
        Session {
            header,
            header_text: None,
            state: Entries::default(),
            persist,
            read_only: false,
            file: None,
            session_dir,
            cwd,
            disk: Disk::NotMaterialized,
            writer: None,
            lock: None,
            opts,
            diagnostics: vec![],
            migration: MigrationReport::default(),
            notices: vec![],
            failed: None,
            previews: false,
        }
    }

    /// Forgets every entry and what is on disk: an empty, unwritten session
    /// (the header, file, lock and diagnostics stay as they are).
    fn clear(&mut self) {
        self.state = Entries::default();
        self.disk = Disk::NotMaterialized;
        self.writer = None;
    }

    fn now_iso(&self) -> String {
        format_iso_ms(self.opts.clock.now_ms())
    }

    fn next_session_id(&self) -> String {
        self.opts.ids.lock().unwrap_or_else(|p| p.into_inner()).session_id()
    }

    fn next_entry_id(&self, taken: &dyn Fn(&str) -> bool) -> String {
        self.opts.ids.lock().unwrap_or_else(|p| p.into_inner()).entry_id(taken)
    }

    /// The file as opened, for decoding entries on demand (`None` when every slot is decoded).
    pub(crate) fn src(&self) -> Option<&dyn ReadAt> {
        self.state.source.as_deref()
    }

    /// Watches the file this session was just read from, so that no read
    /// answers from bytes changed since (`watch.rs`).
    fn watch_source(&mut self) {
        let (Some(src), Some(path)) = (self.state.source.clone(), self.file.clone()) else { return };
        if !self.opts.store.changes_in_place() {
            return;
        }
        // The index's content hash, when it covers every byte read.
        let len = src.len().ok();
        let known = self.state.slots.index().map(|x| (x.file_size(), x.content)).filter(|&(l, _)| Some(l) == len);
        if let Some(w) = watch::Watched::new(src, self.opts.store.clone(), path, known) {
            let w = Arc::new(w);
            self.state.source = Some(w.clone());
            self.state.watch = Some(w);
        }
    }

    /// A line of this session that could not be read as the session knows
    /// it, as the error a read returns.
    pub(crate) fn stale(&self, e: slot::Stale) -> TreeError {
        TreeError::Changed { path: self.file.clone().unwrap_or_default(), line: Some(e.line), what: e.what }
    }

    /// The logical header (migrated; an omp-S title slot folded in).
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }
    /// The lines up to the header as the file holds them (an oh-my-pi title
    /// slot, then the header line; no final line end), when no migration
    /// changed them. A clean copy of the file (`export --format jsonl
    /// --all`) starts with these bytes.
    pub fn header_text(&self) -> Option<&str> {
        self.header_text.as_deref()
    }
    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.header.id
    }
    /// The session file (persistent mode), whether or not it exists yet.
    pub fn session_file(&self) -> Option<&Path> {
        self.file.as_deref()
    }
    /// The directory new files of this session go to.
    pub fn session_dir(&self) -> &Path {
        &self.session_dir
    }
    /// The session's working directory.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }
    /// True for a persistent session.
    pub fn is_persistent(&self) -> bool {
        self.persist
    }
    /// True when the session holds no write lock and refuses writes.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }
    /// Problems found on load, by line.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
    /// What the migrations did on load (the file is rewritten on the first write).
    pub fn migration(&self) -> &MigrationReport {
        &self.migration
    }
    /// Things done to files that a user should hear about (backups, torn tails moved aside).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }
    /// True when the file is already on disk.
    pub fn is_materialized(&self) -> bool {
        !matches!(self.disk, Disk::NotMaterialized)
    }
    /// The number of entries (duplicates included).
    pub fn len(&self) -> usize {
        self.state.slots.len()
    }
    /// True when the session has no entries.
    pub fn is_empty(&self) -> bool {
        self.state.slots.is_empty()
    }
    /// The leaf id (`None` for an empty session or after `reset_leaf`).
    pub fn leaf_id(&self) -> Option<&str> {
        self.state.leaf.as_deref()
    }
}
