//! [`Session`]: pi's `SessionManager` (spec section 3) over a [`Store`].
//!
//! The session holds every entry in file order with the JSON text it was read
//! as (so nothing is re-encoded by accident), an id index where the later line
//! wins, children lists, resolved labels and the leaf. Writes follow pi's
//! lifecycle (spec 1.11) without its bugs: a new session reaches disk with its
//! first assistant message in one atomic write, a loaded file is appended to,
//! a migrated file is rewritten atomically on its first write (never on read),
//! and a damaged file opened for writing is backed up before it is replaced.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use compact_str::CompactString;
use serde_json::Value;

use arbor_log::{
    format_iso_ms, full_entry, parse_iso_ms, read_exact_at, BranchSummary, Clock, Compaction, CustomEntry,
    CustomMessageEntry, Diagnostic, DiagnosticKind, Durability, Entry, EntryKind, IdGenerator, IdHash, IdMap,
    LabelEntry, MessageEntry, MigrationReport, ModelChange, OwnedLine, ParentField, RandomIds, ReadAt, ScannedEntry,
    ScannedLog, SeededIds, SessionHeader, SessionInfo, SessionLog, SystemClock, TailRepair, ThinkingLevelChange,
    CURRENT_VERSION,
};

use crate::error::TreeError;
use crate::labels::{Label, Labels};
use crate::paths::{session_dir_for, session_file_name, sessions_root};
use crate::sidecar::{self, INDEX_SUFFIX, MIN_INDEXED_BYTES};
use crate::store::{AppendHandle, FileStore, Store, WriteLock};

/// `Session::parent_idx` of a slot whose parent does not resolve.
const NO_PARENT: usize = usize::MAX;

/// The slots whose `parentId` names one id, in file order: most ids have one child.
#[derive(Debug, Clone)]
enum Kids {
    One(usize),
    Many(Vec<usize>),
}

impl Kids {
    fn push(&mut self, i: usize) {
        match self {
            Kids::One(first) => *self = Kids::Many(vec![*first, i]),
            Kids::Many(v) => v.push(i),
        }
    }

    fn as_slice(&self) -> &[usize] {
        match self {
            Kids::One(i) => std::slice::from_ref(i),
            Kids::Many(v) => v,
        }
    }
}

/// The `customType` of the hidden entry that makes a leaf move durable.
pub const LEAF_MARKER_TYPE: &str = "arbor.leaf";

/// How a session is opened: injected ids, clock and store; durability; read-only.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Where files live.
    pub store: Arc<dyn Store>,
    /// Id generator (pi's random 8-hex by default).
    pub ids: Arc<std::sync::Mutex<dyn IdGenerator>>,
    /// Clock for timestamps.
    pub clock: Arc<dyn Clock>,
    /// fsync every append, or not.
    pub durability: Durability,
    /// Open without the write lock; every write fails.
    pub read_only: bool,
    /// The session directory for new files (`None`: the default for the cwd, or the file's directory).
    pub session_dir: Option<PathBuf>,
    /// The sessions root (`None`: `$ARBOR_SESSIONS_DIR` or pi's `~/.pi/agent/sessions`).
    pub sessions_root: Option<PathBuf>,
    /// Ids for migrating a v1 file: seeded from its session id (the default,
    /// so every read shows the same ids), or taken from `ids` when false.
    pub seeded_migration_ids: bool,
    /// pi's `setSessionFile` for writers (the default): a missing file starts a
    /// new session at that path, and a file without a usable header is backed
    /// up and replaced. When false, a writer refuses both, as a reader does.
    pub create_or_recover: bool,
    /// Open current-version files index-first (the default): a parallel light
    /// scan keeps each entry's place in the file, and bodies are decoded on
    /// first use. When false, every entry is decoded on open (the reference
    /// behaviour the tests compare against). Files that need a migration are
    /// always decoded in full.
    pub index_first: bool,
    /// Use and keep the sidecar index `FILE.arbor-index` (the default; see
    /// [`crate::INDEX_SUFFIX`]): an unchanged file reopens without a scan.
    /// Only with `index_first`.
    pub sidecar_index: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            store: Arc::new(FileStore),
            ids: Arc::new(std::sync::Mutex::new(RandomIds)),
            clock: Arc::new(SystemClock),
            durability: Durability::Buffered,
            read_only: false,
            session_dir: None,
            sessions_root: None,
            seeded_migration_ids: true,
            create_or_recover: true,
            index_first: true,
            sidecar_index: true,
        }
    }
}

impl SessionOptions {
    /// Options that open files read-only.
    pub fn read_only() -> Self {
        SessionOptions { read_only: true, ..Self::default() }
    }

    /// Replaces the id generator.
    pub fn with_ids(mut self, ids: impl IdGenerator + 'static) -> Self {
        self.ids = Arc::new(std::sync::Mutex::new(ids));
        self.seeded_migration_ids = false;
        self
    }

    /// Replaces the clock.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Replaces the store.
    pub fn with_store(mut self, store: impl Store + 'static) -> Self {
        self.store = Arc::new(store);
        self
    }

    fn root(&self) -> PathBuf {
        self.sessions_root.clone().unwrap_or_else(sessions_root)
    }
}

/// One entry of the session. What the tree needs (id, parent, type, role,
/// time) is always at hand; the decoded entry and its JSON text are filled in
/// on first use from the line's place in the file (`src`), so opening a file
/// costs a scan, not a decode of every body.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub(crate) id: CompactString,
    pub(crate) parent_id: Option<CompactString>,
    pub(crate) entry_type: Cow<'static, str>,
    /// The `role` of a message entry's message.
    pub(crate) role: Option<Cow<'static, str>>,
    /// The line the entry was read from (0 for an entry appended in this process).
    pub(crate) line: usize,
    pub(crate) ts_ms: Option<i64>,
    /// False for an earlier line whose id a later line took over.
    pub(crate) live: bool,
    /// Only JavaScript's reading accepts the line (`arbor_log::parse_line_detail`): its text
    /// may not be what `JSON.stringify` writes for what it means (a number beyond `f64` reads
    /// as `null`), so its JSON text is the line's value written again, never the line itself.
    pub(crate) js_only: bool,
    /// Where the line is in the session's source: (offset, length).
    src: Option<(u64, usize)>,
    entry: OnceLock<Box<Entry>>,
    json: OnceLock<Box<str>>,
}

/// Id → slot over `slots`, the later line of an id winning.
fn id_index(slots: &[Slot]) -> IdMap<usize> {
    let mut by_id: IdMap<usize> = IdMap::default();
    by_id.reserve(slots.len());
    for (i, s) in slots.iter().enumerate() {
        by_id.insert(s.id.clone(), i);
    }
    by_id
}

/// The parent ids that resolve to no slot.
fn unresolved_parents(slots: &[Slot], parent_idx: &[usize]) -> HashSet<CompactString, IdHash> {
    slots.iter().zip(parent_idx).filter(|(_, &p)| p == NO_PARENT).filter_map(|(s, _)| s.parent_id.clone()).collect()
}

/// Parent id → the live slots of `slots` naming it, in file order.
fn children_index(slots: &[Slot]) -> IdMap<Kids> {
    let mut children: IdMap<Kids> = IdMap::default();
    for (i, s) in slots.iter().enumerate() {
        let Some(p) = s.parent_id.as_ref().filter(|_| s.live) else { continue };
        match children.get_mut(p) {
            Some(kids) => kids.push(i),
            None => {
                children.insert(p.clone(), Kids::One(i));
            }
        }
    }
    children
}

/// Names the entry types and roles once, so a million slots do not hold a million copies.
fn intern(s: &str) -> Cow<'static, str> {
    match sidecar::NAMES.iter().find(|n| **n == s) {
        Some(n) => Cow::Borrowed(n),
        None => Cow::Owned(s.to_owned()),
    }
}

impl Slot {
    /// A slot holding a decoded entry and its JSON text (appends, the slow path).
    fn decoded(entry: Entry, json: Box<str>, line: usize, js_only: bool) -> Slot {
        Slot {
            id: entry.id.as_str().into(),
            parent_id: entry.parent_id.as_deref().map(CompactString::from),
            entry_type: intern(entry.entry_type()),
            role: entry.message_role().map(intern),
            line,
            ts_ms: parse_iso_ms(&entry.timestamp),
            live: true,
            js_only,
            src: None,
            entry: OnceLock::from(Box::new(entry)),
            json: OnceLock::from(json),
        }
    }

    /// A slot from the sidecar index: nothing decoded yet.
    fn indexed(e: sidecar::IndexedEntry<'_>, parent_id: Option<CompactString>) -> Slot {
        Slot {
            id: e.id.into(),
            parent_id,
            entry_type: intern(e.entry_type),
            role: e.role.map(intern),
            line: e.line as usize,
            ts_ms: e.ts_ms,
            live: true,
            js_only: e.js_only,
            src: Some((e.offset, e.len as usize)),
            entry: OnceLock::new(),
            json: OnceLock::new(),
        }
    }

    /// A slot for a scanned line; the entry is decoded now only when the scan did.
    fn scanned(e: ScannedEntry) -> Slot {
        let h = e.head;
        let entry = match h.entry {
            Some(entry) => OnceLock::from(entry),
            None => OnceLock::new(),
        };
        Slot {
            id: h.id.unwrap_or_default(),
            parent_id: match h.parent {
                ParentField::Id(p) => Some(p),
                _ => None,
            },
            entry_type: intern(h.entry_type.as_deref().unwrap_or_default()),
            role: h.role.as_deref().map(intern),
            line: e.line,
            ts_ms: h.ts_ms,
            live: true,
            js_only: h.js_only,
            src: Some((e.offset, e.len)),
            entry,
            json: OnceLock::new(),
        }
    }

    /// The entry, decoded from the source on first use.
    pub(crate) fn entry(&self, src: Option<&dyn ReadAt>) -> &Entry {
        self.entry.get_or_init(|| Box::new(self.decode(src)))
    }

    fn read_line(&self, src: Option<&dyn ReadAt>) -> Result<Vec<u8>, String> {
        let (Some(src), Some((offset, len))) = (src, self.src) else {
            return Err("the entry has no source line".to_owned());
        };
        let bytes = read_exact_at(src, offset, len).map_err(|e| format!("cannot read line {}: {e}", self.line))?;
        if bytes.len() != len {
            return Err(format!("cannot read line {}: the file is shorter than when it was opened", self.line));
        }
        Ok(bytes)
    }

    fn decode(&self, src: Option<&dyn ReadAt>) -> Entry {
        let decoded = self.read_line(src).and_then(|bytes| {
            full_entry(&bytes)
                .filter(|e| e.id == self.id)
                .ok_or_else(|| format!("line {} changed on disk since the session was opened", self.line))
        });
        match decoded {
            Ok(e) => *e,
            // The file changed under a reader: keep the tree whole and say why the body is missing.
            Err(error) => Entry {
                id: self.id.to_string(),
                parent_id: self.parent_id.as_ref().map(CompactString::to_string),
                timestamp: String::new(),
                kind: EntryKind::Malformed {
                    entry_type: self.entry_type.to_string(),
                    fields: Default::default(),
                    error,
                },
            },
        }
    }

    /// The JSON text, read from the source on first use.
    pub(crate) fn json(&self, src: Option<&dyn ReadAt>) -> &str {
        self.json.get_or_init(|| match self.read_line(src) {
            Ok(bytes) => line_json(bytes, self.js_only),
            Err(_) => entry_json(self.entry(src)),
        })
    }

    /// Calls `f` with the JSON text without keeping it (for writers that stream every entry).
    pub(crate) fn with_json<R>(&self, src: Option<&dyn ReadAt>, f: impl FnOnce(&str) -> R) -> R {
        self.with_json_via(&mut LineCursor::new(src), f)
    }

    /// [`Slot::with_json`] reading the line through `cursor` (see [`LineCursor`]).
    pub(crate) fn with_json_via<R>(&self, cursor: &mut LineCursor<'_>, f: impl FnOnce(&str) -> R) -> R {
        if let Some(j) = self.json.get() {
            return f(j);
        }
        let line = self.src.and_then(|(offset, len)| cursor.line(offset, len));
        match line {
            Some(bytes) => {
                let text = arbor_log::trim_line(bytes);
                let text = match std::str::from_utf8(text) {
                    Ok(t) => Cow::Borrowed(t),
                    Err(_) => String::from_utf8_lossy(text),
                };
                match self.js_only.then(|| stringified(&text)).flatten() {
                    Some(again) => f(&again),
                    None => f(&text),
                }
            }
            None => f(&entry_json(self.entry(cursor.src))),
        }
    }
}

/// Reads the lines of many slots through one window of the source, so that a
/// walk that mostly moves forward through the file (a tree written depth
/// first, a session copied whole) costs a few large reads instead of one read
/// per entry. The window doubles (up to 4 MiB) while requests land just ahead
/// of it and drops to single lines when they jump elsewhere, so a walk that
/// hops between short side branches reads little more than their lines.
#[derive(Debug)]
pub(crate) struct LineCursor<'s> {
    src: Option<&'s dyn ReadAt>,
    /// `buf[..filled]` holds the file from `start` on; the rest is spare room.
    buf: Vec<u8>,
    filled: usize,
    start: u64,
    window: usize,
}

impl<'s> LineCursor<'s> {
    const MAX_WINDOW: usize = 4 << 20;
    const MIN_WINDOW: usize = 16 << 10;
    /// How far past the window a request still counts as moving forward.
    const SLACK: u64 = 64 << 10;

    /// A cursor whose first read is just the line asked for (one line read
    /// through a fresh cursor costs what a single read does).
    pub(crate) fn new(src: Option<&'s dyn ReadAt>) -> LineCursor<'s> {
        LineCursor { src, buf: Vec::new(), filled: 0, start: 0, window: 0 }
    }

    /// The `len` bytes at `offset`; `None` when there is no source or the file is shorter now.
    fn line(&mut self, offset: u64, len: usize) -> Option<&[u8]> {
        let end = self.start + self.filled as u64;
        let inside = offset >= self.start && offset + len as u64 <= end;
        if !inside {
            let src = self.src?;
            let forward = self.filled > 0 && offset >= end && offset - end <= Self::SLACK.max(self.window as u64);
            self.window = if forward { (self.window * 2).clamp(Self::MIN_WINDOW, Self::MAX_WINDOW) } else { 0 };
            let want = len.max(self.window);
            if self.buf.len() < want {
                self.buf.resize(want, 0);
            }
            let mut filled = 0;
            while filled < want {
                match src.read_at(&mut self.buf[filled..want], offset + filled as u64) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            self.filled = filled;
            self.start = offset;
            if filled < len {
                return None;
            }
        }
        let at = usize::try_from(offset - self.start).ok()?;
        Some(&self.buf[at..at + len])
    }
}

#[derive(Debug)]
enum Disk {
    /// No file yet (deferred until the first assistant message).
    NotMaterialized,
    /// The file holds the header and the first `count` slots.
    Synced { count: usize },
    /// The file holds the first `count` slots, but needs a rewrite (migration) before the next write.
    NeedsRewrite { log: Box<SessionLog>, count: usize },
}

/// A session: the tree/leaf model over one log. See the module docs.
#[derive(Debug)]
pub struct Session {
    header: SessionHeader,
    pub(crate) slots: Vec<Slot>,
    /// Id → slot; built by a bulk load that hashes ids anyway, else on first use.
    by_id: OnceLock<IdMap<usize>>,
    /// For each slot, the slot its `parentId` resolves to through `by_id`
    /// ([`NO_PARENT`] when none): walks follow indices, not hash lookups.
    parent_idx: Vec<usize>,
    /// Built on first use.
    children: OnceLock<IdMap<Kids>>,
    /// Parent ids naming no entry (built by the first append): an append
    /// whose id is one of them re-points the entries naming it.
    unresolved: OnceLock<HashSet<CompactString, IdHash>>,
    labels: Labels,
    leaf: Option<String>,
    leaf_moved: bool,
    has_assistant: bool,
    pub(crate) cycle_roots: HashSet<usize>,
    /// The file as opened, for decoding entries on demand (`None` when every slot is decoded).
    source: Option<Arc<dyn ReadAt>>,
    persist: bool,
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
}

fn process_cwd() -> String {
    std::env::current_dir().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

impl Session {
    fn blank(opts: SessionOptions, cwd: String, persist: bool, session_dir: PathBuf) -> Session {
        let header = SessionHeader::new(String::new(), String::new(), cwd.clone(), None);
        Session {
            header,
            slots: vec![],
            by_id: OnceLock::new(),
            parent_idx: Vec::new(),
            children: OnceLock::new(),
            unresolved: OnceLock::new(),
            labels: Labels::default(),
            leaf: None,
            leaf_moved: false,
            has_assistant: false,
            cycle_roots: HashSet::new(),
            source: None,
            persist,
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
        }
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

    // ---- factories (spec 3.10) ----

    /// An in-memory session (`persist = false`): nothing is ever written.
    pub fn in_memory(cwd: &str, opts: SessionOptions) -> Session {
        let mut s = Session::blank(opts, cwd.to_owned(), false, PathBuf::new());
        s.new_session(None, None);
        s
    }

    /// A new persistent session for `cwd` in the session directory (default: `<root>/--<cwd>--/`).
    /// Nothing is written until the first assistant message.
    pub fn create(cwd: &str, opts: SessionOptions) -> Result<Session, TreeError> {
        let dir = opts.session_dir.clone().unwrap_or_else(|| session_dir_for(&opts.root(), cwd));
        opts.store.create_dir_all(&dir)?;
        let mut s = Session::blank(opts, cwd.to_owned(), true, dir);
        s.new_session(None, None);
        s.take_lock()?;
        Ok(s)
    }

    /// Opens `path` (spec 3.10 `open` and 1.12 `setSessionFile`).
    ///
    /// - a missing file starts a new session that will be written to `path`;
    /// - a file without a usable header is refused read-only, and for writing is
    ///   first backed up to `FILE.corrupt-<ms>` and then replaced by a fresh header;
    /// - otherwise the entries are loaded and migrated in memory (the file is
    ///   rewritten, atomically, only on the first write).
    pub fn open(path: &Path, opts: SessionOptions) -> Result<Session, TreeError> {
        // Errors name the file as the caller did; the session keeps it absolute.
        let given = path.to_owned();
        let path = absolute(path);
        let dir = opts.session_dir.clone().unwrap_or_else(|| path.parent().map(Path::to_owned).unwrap_or_default());
        let read_only = opts.read_only;
        let refuse_damaged = read_only || !opts.create_or_recover;
        let store = opts.store.clone();
        let mut s = Session::blank(opts, process_cwd(), true, dir);
        s.file = Some(path.clone());
        if refuse_damaged && !store.exists(&path) {
            // Checked before locking, so a refused writer leaves no lock file behind.
            return Err(TreeError::Missing(given));
        }
        if !read_only {
            s.take_lock()?;
        }
        if s.opts.index_first {
            match store.open_at(&path)? {
                None if refuse_damaged => return Err(TreeError::Missing(given)),
                None => {
                    s.reset_fresh(None, None);
                    return Ok(s);
                }
                Some(src) => {
                    if s.load_scanned(src).map_err(|e| TreeError::io(&given, e))? {
                        return Ok(s);
                    }
                }
            }
        }
        let reader = match store.read_from(&path, 0)? {
            Some(r) => r,
            None if refuse_damaged => return Err(TreeError::Missing(given)),
            None => {
                // A missing file: a new session that will be written to exactly this path.
                s.reset_fresh(None, None);
                return Ok(s);
            }
        };
        let mut log = SessionLog::read(reader).map_err(|e| TreeError::io(&given, e))?;
        s.diagnostics = log.diagnostics().to_vec();
        let Some(header) = log.header() else {
            let (line, reason) = s
                .diagnostics
                .iter()
                .find_map(|d| match &d.kind {
                    DiagnosticKind::MissingHeader { found } => {
                        Some((Some(d.line), format!("the first record is {found}, not a session header")))
                    }
                    _ => None,
                })
                .unwrap_or_else(|| (None, "no session header (the file has no records)".to_owned()));
            if refuse_damaged {
                return Err(TreeError::NoHeader { path: given, line, reason });
            }
            // pi overwrites such a file with a fresh header; we keep the original first.
            let backup = if log.lines().is_empty() { None } else { Some(store.backup(&path, "corrupt")?) };
            s.reset_fresh(None, None);
            let mut bytes = arbor_log::json::to_string(&s.header.to_value()).map_err(arbor_log::LogError::from)?;
            bytes.push('\n');
            store.rewrite(&path, bytes.as_bytes())?;
            s.disk = Disk::Synced { count: 0 };
            if let Some(b) = backup {
                s.notices.push(format!("{}: {reason}; kept the original as {}", path.display(), b.display()));
            }
            return Ok(s);
        };
        s.cwd = header.cwd.clone().unwrap_or_default();
        s.header = header;
        let report = if s.opts.seeded_migration_ids {
            log.migrate(&mut SeededIds::from_text(&s.header.id))
        } else {
            let mut ids = s.opts.ids.lock().unwrap_or_else(|p| p.into_inner());
            log.migrate(&mut *ids)
        };
        if report.migrated() {
            // The migrated header is what later rewrites and the dump show.
            if let Some(h) = log.header() {
                s.header = h;
            }
        }
        s.migration = report;
        if log.is_dirty() {
            // The rewrite on the first write needs the log as read (junk lines included).
            let (entries, diags) = log.clone().into_entries();
            s.load_entries(entries, diags);
            let count = s.slots.len();
            s.disk = Disk::NeedsRewrite { log: Box::new(log), count };
        } else {
            let (entries, diags) = log.into_entries();
            s.load_entries(entries, diags);
            s.disk = Disk::Synced { count: s.slots.len() };
        }
        Ok(s)
    }

    /// The index-first load: true when done, false when the file needs the full
    /// path (no usable header, or an old version that needs a migration).
    fn load_scanned(&mut self, src: Arc<dyn ReadAt>) -> std::io::Result<bool> {
        let path = self.file.clone().unwrap_or_default();
        let use_index = self.opts.sidecar_index;
        let stamp = if use_index { self.stamp(&path, &*src) } else { None };
        if let Some(stamp) = stamp {
            if self.load_indexed(&path, &src, stamp)? {
                return Ok(true);
            }
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        let scanned = ScannedLog::read(&*src, threads)?;
        let clean = scanned.diagnostics.is_empty() && !scanned.entries.is_empty();
        let header_bytes = scanned.prefix.lines().last().map_or(0, |l| l.offset + l.raw().len() as u64);
        if !self.load_scan(src, scanned)? {
            return Ok(false);
        }
        if let Some(stamp) = stamp.filter(|s| clean && s.size >= MIN_INDEXED_BYTES && self.diagnostics.is_empty()) {
            // A cache: failing to write it changes nothing.
            if let Some(bytes) = self.index_of_slots(header_bytes).and_then(|index| sidecar::encode(stamp, &index)) {
                let _ = self.opts.store.write_side(&path, INDEX_SUFFIX, &bytes);
            }
        }
        Ok(true)
    }

    /// The file's validity stamp for the sidecar index, when the store knows one
    /// and the file ends with a newline (an index never covers a half-written line).
    fn stamp(&self, path: &Path, src: &dyn ReadAt) -> Option<sidecar::Stamp> {
        let (size, mtime_ns) = self.opts.store.stamp(path)?;
        if src.len().ok()? != size || size == 0 {
            return None;
        }
        let last = read_exact_at(src, size - 1, 1).ok()?;
        if last != b"\n" {
            return None;
        }
        let checksum = sidecar::checksum(src, size).ok()?;
        Some(sidecar::Stamp { size, mtime_ns, checksum })
    }

    /// The index of a loaded file; `None` when a parent comes after its child
    /// (the index keeps only parents that point back, so it can hold no cycle).
    fn index_of_slots(&self, header_bytes: u64) -> Option<sidecar::Index<'_>> {
        let entries = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (offset, len) = s.src?;
                let parent = self.parent_of(i);
                if parent.is_some_and(|p| p >= i) {
                    return None;
                }
                Some(sidecar::IndexedEntry {
                    parent,
                    offset,
                    len: u32::try_from(len).ok()?,
                    line: u32::try_from(s.line).ok()?,
                    ts_ms: s.ts_ms,
                    js_only: s.js_only,
                    entry_type: &s.entry_type,
                    role: s.role.as_deref(),
                    id: &s.id,
                    parent_id: s.parent_id.as_deref(),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(sidecar::Index { header_bytes, entries })
    }

    /// Loads from a sidecar index whose stamp matches `stamp`; false when there is none usable.
    fn load_indexed(&mut self, path: &Path, src: &Arc<dyn ReadAt>, stamp: sidecar::Stamp) -> std::io::Result<bool> {
        let Some(bytes) = self.opts.store.read_side(path, INDEX_SUFFIX) else { return Ok(false) };
        if sidecar::stamp_of(&bytes) != Some(stamp) {
            return Ok(false);
        }
        // The index holds each parent already resolved, and only clean files
        // (no duplicate ids, no cycles) are indexed: no id is hashed here.
        let n = sidecar::entry_count(&bytes);
        let (mut slots, mut parents): (Vec<Slot>, Vec<usize>) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let decoded = sidecar::decode_each(&bytes, |e| {
            // A resolved parent's id is that entry's id (the index stores it once).
            let parent_id = match (e.parent, e.parent_id) {
                (Some(p), _) => slots.get(p).map(|s| s.id.clone()),
                (None, id) => id.map(CompactString::from),
            };
            parents.push(e.parent.unwrap_or(NO_PARENT));
            slots.push(Slot::indexed(e, parent_id));
        });
        drop(bytes);
        let Some(header_bytes) = decoded else { return Ok(false) };
        let raw = read_exact_at(&**src, 0, usize::try_from(header_bytes).unwrap_or(usize::MAX))?;
        let prefix = SessionLog::read(&raw[..])?;
        let Some(header) = prefix.header() else { return Ok(false) };
        if header.version() < CURRENT_VERSION || !prefix.diagnostics().is_empty() {
            return Ok(false);
        }
        Ok(self.load_slots(prefix, header, vec![], src.clone(), slots, Some(parents)))
    }

    /// Takes a v3 prefix's header and the loaded slots; false (nothing
    /// changed) when the prefix would need a migration or a rewrite.
    fn load_slots(
        &mut self,
        mut prefix: SessionLog,
        header: SessionHeader,
        diagnostics: Vec<Diagnostic>,
        src: Arc<dyn ReadAt>,
        slots: Vec<Slot>,
        parents: Option<Vec<usize>>,
    ) -> bool {
        let report = prefix.migrate(&mut SeededIds::from_text(&header.id));
        if report.migrated() || prefix.is_dirty() {
            return false;
        }
        self.cwd = header.cwd.clone().unwrap_or_default();
        self.header = header;
        self.migration = report;
        self.diagnostics = diagnostics;
        self.source = Some(src);
        // Moved in whole (a million slots are not copied one by one).
        self.slots = slots;
        for i in 0..self.slots.len() {
            self.note_loaded(i);
        }
        self.leaf = self.slots.last().map(|s| s.id.to_string());
        match parents {
            Some(parents) => self.parent_idx = parents,
            None => {
                self.resolve_ids();
                self.find_cycles();
            }
        }
        self.diagnostics.sort_by_key(|d| d.line);
        self.disk = Disk::Synced { count: self.slots.len() };
        true
    }

    /// Loads from a fresh scan; false when the file needs the full path.
    fn load_scan(&mut self, src: Arc<dyn ReadAt>, scanned: ScannedLog) -> std::io::Result<bool> {
        let Some(header) = scanned.prefix.header() else { return Ok(false) };
        if header.version() < CURRENT_VERSION {
            return Ok(false);
        }
        let slots = scanned.entries.into_iter().map(Slot::scanned).collect();
        Ok(self.load_slots(scanned.prefix, header, scanned.diagnostics, src, slots, None))
    }

    fn src(&self) -> Option<&dyn ReadAt> {
        self.source.as_deref()
    }

    pub(crate) fn source(&self) -> Option<&dyn ReadAt> {
        self.source.as_deref()
    }

    /// The entry at `i`, decoded on first use.
    fn entry_of(&self, i: usize) -> &Entry {
        self.slots[i].entry(self.src())
    }

    fn load_entries(&mut self, entries: Vec<(usize, Entry, OwnedLine)>, diags: Vec<Diagnostic>) {
        self.diagnostics.extend(diags);
        self.slots.reserve_exact(entries.len());
        for (line, entry, owned) in entries {
            let json = line_json(owned.raw, owned.js_only);
            self.push_loaded(Slot::decoded(entry, json, line, owned.js_only));
        }
        self.leaf = self.slots.last().map(|s| s.id.to_string());
        self.resolve_ids();
        self.find_cycles();
        self.diagnostics.sort_by_key(|d| d.line);
    }

    fn push_slot(&mut self, entry: Entry, json: Box<str>, line: usize, js_only: bool) -> usize {
        self.push(Slot::decoded(entry, json, line, js_only))
    }

    /// Appends a slot after the load: the id index and children lists follow it.
    fn push(&mut self, slot: Slot) -> usize {
        self.leaf = Some(slot.id.to_string());
        let mut by_id = self.by_id.take().unwrap_or_else(|| id_index(&self.slots));
        let mut unresolved =
            self.unresolved.take().unwrap_or_else(|| unresolved_parents(&self.slots, &self.parent_idx));
        let i = self.push_loaded(slot);
        let id = self.slots[i].id.clone();
        let prev = by_id.insert(id.clone(), i);
        if let Some(prev) = prev {
            self.slots[prev].live = false;
        }
        let own = self.slots[i].parent_id.as_deref().and_then(|p| by_id.get(p).copied());
        self.parent_idx.push(own.unwrap_or(NO_PARENT));
        // Entries naming this id as their parent now resolve to it (the later
        // line wins). Only possible when the id was taken before or was some
        // entry's unresolved parent; a fresh id (every append) skips the walk.
        if prev.is_some() || unresolved.remove(&id) {
            for k in 0..i {
                if self.slots[k].parent_id.as_ref() == Some(&id) {
                    self.parent_idx[k] = i;
                }
            }
        }
        if let (None, Some(p)) = (own, &self.slots[i].parent_id) {
            unresolved.insert(p.clone());
        }
        if let (Some(children), Some(p)) = (self.children.get_mut(), &self.slots[i].parent_id) {
            match children.get_mut(p) {
                Some(kids) => kids.push(i),
                None => {
                    children.insert(p.clone(), Kids::One(i));
                }
            }
        }
        self.by_id = OnceLock::from(by_id);
        self.unresolved = OnceLock::from(unresolved);
        i
    }

    /// After a bulk load: the id index (the later line of an id wins, earlier
    /// ones are no longer live) and every slot's parent resolved through it.
    fn resolve_ids(&mut self) {
        let mut by_id: IdMap<usize> = IdMap::default();
        by_id.reserve(self.slots.len());
        for i in 0..self.slots.len() {
            if let Some(prev) = by_id.insert(self.slots[i].id.clone(), i) {
                self.slots[prev].live = false;
            }
        }
        self.parent_idx = self
            .slots
            .iter()
            .map(|s| s.parent_id.as_deref().and_then(|p| by_id.get(p).copied()).unwrap_or(NO_PARENT))
            .collect();
        self.by_id = OnceLock::from(by_id);
        self.children = OnceLock::new();
        self.unresolved = OnceLock::new();
    }

    /// The slot an id resolves to. The last entry (usually the leaf) is
    /// answered without the id map, so reading the context at the leaf of a
    /// file opened through its index hashes no id at all.
    fn position_of(&self, id: &str) -> Option<usize> {
        match self.slots.last() {
            // The last line holding an id is the one the id resolves to.
            Some(last) if last.id == id => Some(self.slots.len() - 1),
            _ => self.ids().get(id).copied(),
        }
    }

    /// Id → slot (the later line of an id wins), built on first use.
    fn ids(&self) -> &IdMap<usize> {
        self.by_id.get_or_init(|| id_index(&self.slots))
    }

    /// Parent id → the live slots naming it, in file order, built on first use.
    fn kids(&self) -> &IdMap<Kids> {
        self.children.get_or_init(|| children_index(&self.slots))
    }

    /// The slot the parent of slot `i` resolves to.
    pub(crate) fn parent_of(&self, i: usize) -> Option<usize> {
        self.parent_idx.get(i).copied().filter(|&p| p != NO_PARENT)
    }

    /// Adds a loaded slot (see [`Session::note_loaded`]).
    fn push_loaded(&mut self, slot: Slot) -> usize {
        let i = self.slots.len();
        self.slots.push(slot);
        self.note_loaded(i);
        i
    }

    /// Counts a loaded slot: its label and whether it is an assistant message.
    fn note_loaded(&mut self, i: usize) {
        let slot = &self.slots[i];
        if !self.has_assistant && slot.role.as_deref() == Some("assistant") {
            self.has_assistant = true;
        }
        if slot.entry_type == "label" {
            let src = self.source.as_deref();
            let entry = slot.entry(src);
            if let EntryKind::Label(l) = &entry.kind {
                // The entry's `timestamp` as written (a label keeps it, and a fork copies it).
                let timestamp = match entry.timestamp.as_str() {
                    "" => arbor_log::json::parse(slot.json(src)).ok().and_then(|v| v.get("timestamp").cloned()),
                    ts => Some(Value::String(ts.to_owned())),
                };
                self.labels.apply(l, timestamp);
            }
        }
    }

    fn find_cycles(&mut self) {
        // 0 = unseen, 1 = on the current walk, 2 = done.
        let mut state = vec![0u8; self.slots.len()];
        for start in 0..self.slots.len() {
            if !self.slots[start].live || state[start] != 0 {
                continue;
            }
            let mut walk = vec![];
            let mut cur = Some(start);
            while let Some(i) = cur {
                match state[i] {
                    2 => break,
                    1 => {
                        // A cycle: from the first occurrence of i in this walk to its end.
                        let pos = walk.iter().position(|&w| w == i).unwrap_or(0);
                        let members: Vec<usize> = walk[pos..].to_vec();
                        if let Some(&first) = members.iter().min() {
                            self.diagnostics.push(Diagnostic {
                                line: self.slots[first].line,
                                offset: 0,
                                kind: DiagnosticKind::ParentCycle { id: self.slots[first].id.to_string() },
                            });
                            self.cycle_roots.insert(first);
                        }
                        break;
                    }
                    _ => {}
                }
                state[i] = 1;
                walk.push(i);
                let e = &self.slots[i];
                cur = match &e.parent_id {
                    Some(p) if p != e.id => self.parent_of(i),
                    _ => None,
                };
            }
            for w in walk {
                state[w] = 2;
            }
        }
    }

    /// Continues the most recent session in the cwd's directory, or starts a new one (spec 3.10).
    pub fn continue_recent(cwd: &str, opts: SessionOptions) -> Result<Session, TreeError> {
        let dir = opts.session_dir.clone().unwrap_or_else(|| session_dir_for(&opts.root(), cwd));
        match crate::listing::find_most_recent_session(opts.store.as_ref(), &dir)? {
            Some(path) => Session::open(&path, SessionOptions { session_dir: Some(dir), ..opts }),
            None => Session::create(cwd, SessionOptions { session_dir: Some(dir), ..opts }),
        }
    }

    /// Copies every entry of `source` (migrated first, unlike pi) into a new
    /// session file for `target_cwd` whose header names the source as its parent,
    /// and opens it (spec 3.10 `forkFrom`).
    pub fn fork_from(source: &Path, target_cwd: &str, opts: SessionOptions) -> Result<Session, TreeError> {
        let source = absolute(source);
        let src = Session::open(&source, SessionOptions { read_only: true, ..opts.clone() }).map_err(|e| match e {
            TreeError::Missing(_) => TreeError::ForkSourceInvalid(source.clone()),
            TreeError::NoHeader { line: None, .. } => TreeError::ForkSourceInvalid(source.clone()),
            TreeError::NoHeader { .. } => TreeError::ForkSourceNoHeader(source.clone()),
            other => other,
        })?;
        let dir = opts.session_dir.clone().unwrap_or_else(|| session_dir_for(&opts.root(), target_cwd));
        opts.store.create_dir_all(&dir)?;
        let mut fork = Session::blank(opts, target_cwd.to_owned(), true, dir);
        fork.new_session(None, Some(source.to_string_lossy().into_owned()));
        let path = fork.file.clone().ok_or_else(|| TreeError::NotFound("session file".into()))?;
        let mut bytes = String::new();
        bytes.push_str(&entry_json_value(&fork.header.to_value()));
        bytes.push('\n');
        let mut cursor = LineCursor::new(src.src());
        for slot in &src.slots {
            slot.with_json_via(&mut cursor, |j| bytes.push_str(j));
            bytes.push('\n');
        }
        drop(src);
        fork.opts.store.rewrite(&path, bytes.as_bytes())?;
        let opts = fork.opts.clone();
        drop(fork);
        Session::open(&path, opts)
    }

    /// Starts a fresh session in this manager (spec 3.10 `newSession`): new
    /// header, no entries, leaf null. Returns the (not yet created) file path in
    /// persistent mode.
    pub fn new_session(&mut self, id: Option<String>, parent_session: Option<String>) -> Option<PathBuf> {
        let (id, timestamp) = self.reset_fresh(id, parent_session);
        if !self.persist {
            return None;
        }
        let path = self.session_dir.join(session_file_name(&timestamp, &id));
        if self.file.as_ref() != Some(&path) && (self.lock.is_some() || self.opts.read_only) {
            // The old file's lock goes (read-only applied to the old file); the new file's is taken.
            self.lock = None;
            self.opts.read_only = false;
            self.file = Some(path.clone());
            if let Err(e) = self.take_lock() {
                self.failed = Some(e.to_string());
            }
        }
        self.file = Some(path.clone());
        Some(path)
    }

    /// Resets to an empty session with a fresh header; the file and lock stay as they are.
    fn reset_fresh(&mut self, id: Option<String>, parent_session: Option<String>) -> (String, String) {
        let id = id.unwrap_or_else(|| self.next_session_id());
        let timestamp = self.now_iso();
        self.header = SessionHeader::new(id.clone(), timestamp.clone(), self.cwd.clone(), parent_session);
        self.slots.clear();
        self.parent_idx.clear();
        self.by_id = OnceLock::new();
        self.children = OnceLock::new();
        self.unresolved = OnceLock::new();
        self.labels.clear();
        self.cycle_roots.clear();
        self.source = None;
        self.leaf = None;
        self.leaf_moved = false;
        self.has_assistant = false;
        self.disk = Disk::NotMaterialized;
        self.writer = None;
        (id, timestamp)
    }

    fn take_lock(&mut self) -> Result<(), TreeError> {
        if self.opts.read_only || !self.persist {
            return Ok(());
        }
        if let Some(f) = &self.file {
            self.lock = Some(self.opts.store.lock(f)?);
        }
        Ok(())
    }

    // ---- accessors (spec 3.4) ----

    /// The logical header (migrated; an omp-S title slot folded in).
    pub fn header(&self) -> &SessionHeader {
        &self.header
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
        self.opts.read_only
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

    /// Every entry in file order, duplicates included (pi's `getEntries`).
    pub fn entries(&self) -> impl ExactSizeIterator<Item = &Entry> + '_ {
        self.slots.iter().map(|s| s.entry(self.src()))
    }
    /// Every entry in file order with the JSON text it is held as.
    pub fn entries_json(&self) -> impl ExactSizeIterator<Item = (&Entry, &str)> + '_ {
        self.slots.iter().map(|s| (s.entry(self.src()), s.json(self.src())))
    }
    /// The number of entries (duplicates included).
    pub fn len(&self) -> usize {
        self.slots.len()
    }
    /// True when the session has no entries.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
    /// The leaf id (`None` for an empty session or after `reset_leaf`).
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }
    /// The leaf entry.
    pub fn leaf_entry(&self) -> Option<&Entry> {
        self.get_entry(self.leaf.as_deref()?)
    }
    /// An entry by id (the later line wins on duplicates).
    pub fn get_entry(&self, id: &str) -> Option<&Entry> {
        self.position_of(id).map(|i| self.entry_of(i))
    }
    /// True unless a later line with the same id replaced the entry at `index`.
    pub fn is_live(&self, index: usize) -> bool {
        self.slots.get(index).is_some_and(|s| s.live)
    }
    /// The line an entry was read from (0 for one appended in this process).
    pub fn line_at(&self, index: usize) -> usize {
        self.slots.get(index).map_or(0, |s| s.line)
    }
    /// The entry at a position in file order.
    pub fn entry_at(&self, index: usize) -> Option<&Entry> {
        self.slots.get(index).map(|s| s.entry(self.src()))
    }
    /// The entry at a position in file order as an owned value, without
    /// keeping a decoded copy in the session (a copy when one is kept already).
    pub fn decode_at(&self, index: usize) -> Option<Entry> {
        let s = self.slots.get(index)?;
        Some(match s.entry.get() {
            Some(e) => (**e).clone(),
            None => s.decode(self.src()),
        })
    }
    /// [`Session::decode_at`] for many positions, decoded on all cores (in order).
    pub fn decode_many(&self, indices: &[usize]) -> Vec<Option<Entry>> {
        self.map_slots(indices, |_, s, src| match s.entry.get() {
            Some(e) => (**e).clone(),
            None => s.decode(src),
        })
    }

    /// Calls `f(k, text)` with the JSON text of the entry at `indices[k]`, on
    /// all cores and without keeping the texts; the results come in order
    /// (`None` for a position past the end). For writers that copy many
    /// entries' text, such as `arbor context --json`.
    pub fn map_json_many<R: Send>(&self, indices: &[usize], f: impl Fn(usize, &str) -> R + Sync) -> Vec<Option<R>> {
        self.map_slots(indices, |k, s, src| s.with_json(src, |j| f(k, j)))
    }

    /// `one(k, slot, source)` for the slot at each of `indices`, on all cores, in order.
    fn map_slots<R: Send>(
        &self,
        indices: &[usize],
        one: impl Fn(usize, &Slot, Option<&dyn ReadAt>) -> R + Sync,
    ) -> Vec<Option<R>> {
        let (slots, src) = (&self.slots, self.source.as_deref());
        let run = |base: usize, part: &[usize]| -> Vec<Option<R>> {
            part.iter().enumerate().map(|(k, &i)| slots.get(i).map(|s| one(base + k, s, src))).collect()
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        if threads < 2 || indices.len() < 64 {
            return run(0, indices);
        }
        let chunk = indices.len().div_ceil(threads);
        std::thread::scope(|sc| {
            let run = &run;
            let handles: Vec<_> = indices
                .chunks(chunk)
                .enumerate()
                .map(|(n, part)| (n * chunk, part, sc.spawn(move || run(n * chunk, part))))
                .collect();
            let mut out = Vec::with_capacity(indices.len());
            for (base, part, h) in handles {
                // A worker cannot panic on data; if one did anyway, redo its part here.
                out.extend(h.join().unwrap_or_else(|_| run(base, part)));
            }
            out
        })
    }

    /// The id of the entry at a position in file order (no decoding).
    pub fn id_at(&self, index: usize) -> Option<&str> {
        self.slots.get(index).map(|s| s.id.as_str())
    }
    /// The `type` of the entry at a position in file order (no decoding).
    pub fn entry_type_at(&self, index: usize) -> Option<&str> {
        self.slots.get(index).map(|s| &*s.entry_type)
    }
    /// The message `role` of the message entry at a position in file order (no decoding).
    pub fn message_role_at(&self, index: usize) -> Option<&str> {
        self.slots.get(index).and_then(|s| s.role.as_deref())
    }
    /// Calls `f` with the JSON text of the entry at `index` without keeping
    /// the text in the session (for writers that stream many entries).
    pub fn with_json_at<R>(&self, index: usize, f: impl FnOnce(&str) -> R) -> Option<R> {
        self.slots.get(index).map(|s| s.with_json(self.src(), f))
    }
    /// The JSON text of the entry at a position in file order.
    pub fn json_at(&self, index: usize) -> Option<&str> {
        self.slots.get(index).map(|s| s.json(self.src()))
    }
    /// The JSON text an entry is held as.
    pub fn entry_json(&self, id: &str) -> Option<&str> {
        self.position_of(id).map(|i| self.slots[i].json(self.src()))
    }
    /// The position (in file order) of the entry an id resolves to.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.position_of(id)
    }
    /// The direct children of `parent_id`, in file order (not sorted).
    pub fn get_children(&self, parent_id: &str) -> Vec<&Entry> {
        self.kids()
            .get(parent_id)
            .map(|v| {
                v.as_slice().iter().filter(|&&i| self.slots[i].id != parent_id).map(|&i| self.entry_of(i)).collect()
            })
            .unwrap_or_default()
    }
    /// The resolved label of an entry.
    pub fn get_label(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(|l| l.text.as_str())
    }
    /// The resolved label of an entry: its value as written and when it was set.
    pub fn label(&self, id: &str) -> Option<&Label> {
        self.labels.get(id)
    }
    /// Every resolved label, in the order the targets first got one.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.labels.iter().map(|(k, v)| (k, v.text.as_str()))
    }

    /// The path root → `from` (or the leaf), every entry type included; empty
    /// when the start is unknown. Stops at a missing parent and at a repeated id.
    pub fn get_branch(&self, from: Option<&str>) -> Vec<&Entry> {
        self.branch_indices(from).into_iter().map(|i| self.entry_of(i)).collect()
    }

    /// [`Session::get_branch`] as positions in file order.
    pub fn branch_indices(&self, from: Option<&str>) -> Vec<usize> {
        let Some(start) = from.or(self.leaf.as_deref()).and_then(|id| self.position_of(id)) else {
            return vec![];
        };
        // A path without a repeated entry is at most every slot long: walk
        // without bookkeeping, and only a walk that gets longer (a parent
        // cycle) is walked again with a set of the positions seen.
        let mut out = vec![];
        let mut cur = Some(start);
        while let Some(i) = cur {
            if out.len() == self.slots.len() {
                return self.branch_indices_with_cycle(start);
            }
            out.push(i);
            cur = self.parent_of(i);
        }
        out.reverse();
        out
    }

    fn branch_indices_with_cycle(&self, start: usize) -> Vec<usize> {
        let mut seen: HashSet<usize, IdHash> = HashSet::default();
        let mut out = vec![];
        let mut cur = Some(start);
        while let Some(i) = cur {
            if !seen.insert(i) {
                break;
            }
            out.push(i);
            cur = self.parent_of(i);
        }
        out.reverse();
        out
    }

    /// The session name: the newest `session_info` with a non-empty name, on any branch (spec 3.11).
    pub fn session_name(&self) -> Option<&str> {
        self.slots.iter().rev().filter(|s| s.entry_type == "session_info").find_map(|s| {
            match &s.entry(self.src()).kind {
                EntryKind::SessionInfo(SessionInfo { name: Some(n), .. }) if !n.is_empty() => Some(n.as_str()),
                _ => None,
            }
        })
    }

    /// User messages with non-empty text on every branch, in file order (pi's `getUserMessagesForForking`).
    pub fn user_messages_for_forking(&self) -> Vec<(&Entry, String)> {
        self.slots
            .iter()
            .filter(|s| s.live && s.role.as_deref() == Some("user"))
            .filter_map(|s| {
                let entry = s.entry(self.src());
                let m = entry.message()?;
                if m.role() != Some("user") {
                    return None;
                }
                let text = crate::text::message_text(&m.message, "");
                (!text.is_empty()).then_some((entry, text))
            })
            .collect()
    }

    // ---- leaf moves (spec 3.8) ----

    /// Moves the leaf to `id` without writing anything.
    pub fn branch(&mut self, id: &str) -> Result<(), TreeError> {
        if !self.ids().contains_key(id) {
            return Err(TreeError::NotFound(id.to_owned()));
        }
        self.leaf = Some(id.to_owned());
        self.leaf_moved = true;
        Ok(())
    }

    /// Moves the leaf before the first entry: the next append is a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
        self.leaf_moved = true;
    }

    /// Moves the leaf to `from` (or null) and appends a `branch_summary` there.
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String, TreeError> {
        if let Some(id) = from {
            if !self.ids().contains_key(id) {
                return Err(TreeError::NotFound(id.to_owned()));
            }
        }
        self.check_writable()?;
        self.leaf = from.map(str::to_owned);
        self.append(EntryKind::BranchSummary(BranchSummary {
            from_id: from.unwrap_or("root").to_owned(),
            summary: summary.to_owned(),
            details,
            from_hook,
            extra: Default::default(),
        }))
    }

    /// True when the leaf was moved since the last append.
    pub fn leaf_moved(&self) -> bool {
        self.leaf_moved
    }

    /// Makes a leaf move durable: when the leaf moved since the last append,
    /// appends a hidden `custom` entry (`customType: "arbor.leaf"`) as a child
    /// of the new position, so that pi and Arbor both resume there.
    pub fn persist_leaf(&mut self) -> Result<Option<String>, TreeError> {
        if !self.leaf_moved || !self.persist || self.opts.read_only {
            return Ok(None);
        }
        let data = serde_json::json!({ "leafId": self.leaf });
        self.append_custom_entry(LEAF_MARKER_TYPE, Some(data)).map(Some)
    }

    // ---- appends (spec 3.3) ----

    fn check_writable(&self) -> Result<(), TreeError> {
        if self.opts.read_only {
            return Err(TreeError::ReadOnly(self.file.clone().unwrap_or_default()));
        }
        if let Some(f) = &self.failed {
            return Err(TreeError::Poisoned(f.clone()));
        }
        Ok(())
    }

    fn append(&mut self, kind: EntryKind) -> Result<String, TreeError> {
        self.check_writable()?;
        let by_id = self.ids();
        let id = self.next_entry_id(&|s| by_id.contains_key(s));
        let entry = Entry { id: id.clone(), parent_id: self.leaf.clone(), timestamp: self.now_iso(), kind };
        let json = entry_json(&entry);
        self.push_slot(entry, json, 0, false);
        self.leaf_moved = false;
        if let Err(e) = self.persist() {
            self.failed = Some(e.to_string());
            return Err(e);
        }
        Ok(id)
    }

    /// Appends a `message` entry (any role).
    pub fn append_message(&mut self, message: Value) -> Result<String, TreeError> {
        self.append(EntryKind::Message(MessageEntry { message, extra: Default::default() }))
    }
    /// Appends a `thinking_level_change`.
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String, TreeError> {
        self.append(EntryKind::ThinkingLevelChange(ThinkingLevelChange {
            thinking_level: Some(level.into()),
            extra: Default::default(),
        }))
    }
    /// Appends a `model_change` in pi's shape.
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String, TreeError> {
        self.append(EntryKind::ModelChange(ModelChange {
            provider: Some(provider.into()),
            model_id: Some(model_id.into()),
            model: None,
            role: None,
            extra: Default::default(),
        }))
    }
    /// Appends a `compaction`.
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: &str,
        tokens_before: u64,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String, TreeError> {
        self.append(EntryKind::Compaction(Compaction {
            summary: summary.to_owned(),
            first_kept_entry_id: Some(first_kept_entry_id.to_owned()),
            tokens_before: Some(tokens_before.into()),
            details,
            from_hook,
            extra: Default::default(),
        }))
    }
    /// Appends a `custom` entry (extension state).
    pub fn append_custom_entry(&mut self, custom_type: &str, data: Option<Value>) -> Result<String, TreeError> {
        self.append(EntryKind::Custom(CustomEntry {
            custom_type: custom_type.to_owned(),
            data,
            extra: Default::default(),
        }))
    }
    /// Appends a `custom_message` entry (part of the context).
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: &str,
        content: Value,
        display: bool,
        details: Option<Value>,
    ) -> Result<String, TreeError> {
        self.append(EntryKind::CustomMessage(CustomMessageEntry {
            custom_type: custom_type.to_owned(),
            content: Some(content),
            display: Some(display.into()),
            details,
            extra: Default::default(),
        }))
    }
    /// Appends a `session_info` with the trimmed name.
    pub fn append_session_info(&mut self, name: &str) -> Result<String, TreeError> {
        self.append(EntryKind::SessionInfo(SessionInfo {
            name: Some(name.trim().to_owned()),
            extra: Default::default(),
        }))
    }
    /// Sets (or, with `None` or `""`, clears) the label of `target_id` by appending a `label` entry.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String, TreeError> {
        if !self.ids().contains_key(target_id) {
            return Err(TreeError::NotFound(target_id.to_owned()));
        }
        let label = label.filter(|l| !l.is_empty()).map(|l| Value::String(l.to_owned()));
        self.append(EntryKind::Label(LabelEntry { target_id: target_id.to_owned(), label, extra: Default::default() }))
    }

    // ---- persistence (spec 1.11, fixed) ----

    fn header_line(&self) -> Result<String, TreeError> {
        Ok(arbor_log::json::to_string(&self.header.to_value()).map_err(arbor_log::LogError::from)?)
    }

    fn persist(&mut self) -> Result<(), TreeError> {
        if !self.persist {
            return Ok(());
        }
        let Some(path) = self.file.clone() else { return Ok(()) };
        let store = self.opts.store.clone();
        match std::mem::replace(&mut self.disk, Disk::NotMaterialized) {
            Disk::NotMaterialized => {
                if !self.has_assistant {
                    return Ok(());
                }
                let mut bytes = self.header_line()?;
                bytes.push('\n');
                let mut cursor = LineCursor::new(self.source.as_deref());
                for s in &self.slots {
                    s.with_json_via(&mut cursor, |j| bytes.push_str(j));
                    bytes.push('\n');
                }
                if let Some(dir) = path.parent() {
                    store.create_dir_all(dir)?;
                }
                store.rewrite(&path, bytes.as_bytes())?;
                self.disk = Disk::Synced { count: self.slots.len() };
            }
            Disk::Synced { count } => {
                self.disk = Disk::Synced { count };
                let mut bytes = String::new();
                for s in &self.slots[count..] {
                    s.with_json(self.source.as_deref(), |j| bytes.push_str(j));
                    bytes.push('\n');
                }
                if self.writer.is_none() {
                    let (w, repair) = store.open_append(&path, self.opts.durability)?;
                    if let Some(r) = repair {
                        self.notices.push(describe_repair(&path, &r));
                    }
                    self.writer = Some(w);
                }
                if let Some(w) = self.writer.as_mut() {
                    w.append(bytes.as_bytes())?;
                }
                self.disk = Disk::Synced { count: self.slots.len() };
            }
            Disk::NeedsRewrite { log, count } => {
                let mut bytes = log.to_bytes(true);
                for s in &self.slots[count..] {
                    s.with_json(self.source.as_deref(), |j| bytes.extend_from_slice(j.as_bytes()));
                    bytes.push(b'\n');
                }
                if let Err(e) = store.rewrite(&path, &bytes) {
                    self.disk = Disk::NeedsRewrite { log, count };
                    return Err(e);
                }
                self.writer = None;
                self.disk = Disk::Synced { count: self.slots.len() };
            }
        }
        Ok(())
    }

    /// Writes the session file now, even before the first assistant message
    /// (pi defers it; a CLI fork wants the file to exist). No-op when on disk already.
    pub fn materialize(&mut self) -> Result<(), TreeError> {
        self.check_writable()?;
        if !self.persist || !matches!(self.disk, Disk::NotMaterialized) {
            return Ok(());
        }
        let had = self.has_assistant;
        self.has_assistant = true;
        let r = self.persist();
        self.has_assistant = had;
        r
    }

    // ---- branched sessions (spec 3.9) ----

    /// The entries a fork of `path` keeps, decoded (the new session has no
    /// source file to decode from): every entry but the label entries (any
    /// `type: "label"`, whatever its body), each re-linked across the label
    /// entries left out to the kept entry before it, so the fork's context at
    /// its leaf is the original's. pi (up to 0.73.1) keeps them pointing at
    /// the missing labels, which cuts the context off after the last label.
    fn kept_for_fork(&self, path: &[usize]) -> Vec<(Entry, Box<str>, usize, bool)> {
        let src = self.src();
        let mut kept: Vec<(Entry, Box<str>, usize, bool)> = Vec::with_capacity(path.len());
        for &i in path {
            let s = &self.slots[i];
            if s.entry_type == "label" {
                continue;
            }
            let (mut entry, mut json) = (s.entry(src).clone(), Box::<str>::from(s.json(src)));
            // The parent is the path's entry before this one (or, in a cycle, one after it).
            let parent_left_out = self.parent_of(i).is_some_and(|p| self.slots[p].entry_type == "label");
            if parent_left_out {
                let parent = kept.last().map(|(e, ..)| e.id.clone());
                json = with_parent(&json, parent.as_deref()).into_boxed_str();
                entry.parent_id = parent;
            }
            kept.push((entry, json, s.line, s.js_only && !parent_left_out));
        }
        kept
    }

    /// Turns the path to `leaf_id` into a new session (labels rebuilt from the
    /// resolved labels); in persistent mode a new file beside this one, written
    /// at once when the path holds an assistant message. Returns the new path.
    /// The new session's context at its leaf is the original's at `leaf_id`
    /// (see `kept_for_fork`).
    pub fn create_branched_session(&mut self, leaf_id: &str) -> Result<Option<PathBuf>, TreeError> {
        let path = self.branch_indices(Some(leaf_id));
        if path.is_empty() {
            return Err(TreeError::NotFound(leaf_id.to_owned()));
        }
        if let Some(f) = &self.failed {
            return Err(TreeError::Poisoned(f.clone()));
        }
        let kept = self.kept_for_fork(&path);
        let kept_ids: HashSet<String> = kept.iter().map(|s| s.0.id.clone()).collect();
        let labels_to_write: Vec<(String, Label)> =
            self.labels.iter().filter(|(t, _)| kept_ids.contains(*t)).map(|(t, l)| (t.to_owned(), l.clone())).collect();
        let new_id = self.next_session_id();
        let timestamp = self.now_iso();
        let parent_session =
            if self.persist { self.file.as_ref().map(|f| f.to_string_lossy().into_owned()) } else { None };
        let header = SessionHeader::new(new_id.clone(), timestamp.clone(), self.cwd.clone(), parent_session);

        let mut taken: HashSet<String> = kept_ids;
        let mut parent = kept.last().map(|s| s.0.id.clone());
        let mut label_slots = vec![];
        for (target, label) in labels_to_write {
            let id = self.next_entry_id(&|s| taken.contains(s));
            taken.insert(id.clone());
            // pi's key order; the label keeps its value and the time it was set.
            let mut v = serde_json::Map::new();
            v.insert("type".into(), "label".into());
            v.insert("id".into(), id.clone().into());
            v.insert("parentId".into(), parent.clone().map_or(Value::Null, Value::String));
            if let Some(ts) = label.timestamp {
                v.insert("timestamp".into(), ts);
            }
            v.insert("targetId".into(), target.into());
            v.insert("label".into(), label.value);
            let v = Value::Object(v);
            let Ok(entry) = Entry::from_value(&v) else { continue };
            parent = Some(id);
            label_slots.push((entry, entry_json_value(&v).into_boxed_str()));
        }

        self.header = header;
        self.slots.clear();
        self.parent_idx.clear();
        self.by_id = OnceLock::new();
        self.children = OnceLock::new();
        self.unresolved = OnceLock::new();
        self.labels.clear();
        self.cycle_roots.clear();
        self.has_assistant = false;
        self.leaf = None;
        self.source = None;
        for (entry, json, line, js_only) in kept {
            self.push_slot(entry, json, line, js_only);
        }
        for (e, j) in label_slots {
            self.push_slot(e, j, 0, false);
        }
        self.leaf_moved = false;
        self.writer = None;
        self.disk = Disk::NotMaterialized;
        if !self.persist {
            return Ok(None);
        }
        let new_path = self.session_dir.join(session_file_name(&timestamp, &new_id));
        self.lock = None;
        self.file = Some(new_path.clone());
        // Read-only applied to the old file; the new one is ours to write.
        self.opts.read_only = false;
        self.take_lock()?;
        if self.has_assistant {
            self.persist()?;
        }
        Ok(Some(new_path))
    }
}

fn describe_repair(path: &Path, r: &TailRepair) -> String {
    match r {
        TailRepair::AddedNewline => format!("{}: added the missing newline at the end", path.display()),
        TailRepair::MovedTornTail { side_file, bytes } => format!(
            "{}: moved a torn last line ({bytes} bytes) to {} before appending",
            path.display(),
            side_file.display()
        ),
    }
}

/// A line's bytes as the JSON text of its entry: trimmed as the reader trims
/// it, without a copy in the common case of clean UTF-8 ending in `\n`; a
/// line only JavaScript reads is written again as `JSON.stringify` would.
fn line_json(raw: Vec<u8>, js_only: bool) -> Box<str> {
    let text = trimmed_text(raw);
    if js_only {
        return stringified(&text).map_or(text, String::into_boxed_str);
    }
    text
}

/// An entry's JSON text with another `parentId` (in its place among the keys).
fn with_parent(text: &str, parent: Option<&str>) -> String {
    match arbor_log::json::parse(text) {
        Ok(Value::Object(mut v)) => {
            v.insert("parentId".into(), parent.map_or(Value::Null, |p| Value::String(p.to_owned())));
            entry_json_value(&Value::Object(v))
        }
        _ => text.to_owned(),
    }
}

/// The JSON text `JSON.stringify` writes for what `text` means.
fn stringified(text: &str) -> Option<String> {
    arbor_log::json::parse(text).ok().and_then(|v| arbor_log::json::to_string(&v).ok())
}

fn trimmed_text(mut raw: Vec<u8>) -> Box<str> {
    let trimmed = arbor_log::trim_line(&raw);
    if trimmed.len() != raw.len() && raw.starts_with(trimmed) {
        raw.truncate(trimmed.len());
    } else if trimmed.len() != raw.len() {
        raw = trimmed.to_vec();
    }
    match String::from_utf8(raw) {
        Ok(s) => s.into_boxed_str(),
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned().into_boxed_str(),
    }
}

fn entry_json(entry: &Entry) -> Box<str> {
    entry_json_value(&entry.to_value()).into_boxed_str()
}

fn entry_json_value(v: &Value) -> String {
    // Encoding a Value built from JSON cannot fail.
    arbor_log::json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_cursor_reads_what_is_asked_whatever_the_order() {
        // Lines of every size from 1 byte to past the largest window.
        let mut file = Vec::new();
        let mut lines = Vec::new();
        let mut len = 1usize;
        while file.len() < 12 << 20 {
            let start = file.len();
            file.extend((0..len).map(|k| b'a' + ((start + k) % 26) as u8));
            lines.push((start as u64, len));
            len = (len * 7 + 3) % (5 << 20) + 1;
        }
        let src: &dyn ReadAt = &file;
        let mut cursor = LineCursor::new(Some(src));
        let check = |cursor: &mut LineCursor<'_>, i: usize| {
            let (offset, len) = lines[i];
            let got = cursor.line(offset, len).expect("inside the file");
            assert_eq!(got, &file[offset as usize..offset as usize + len], "line {i}");
        };
        // Forward, backward, jumping, and the same line twice.
        let n = lines.len();
        let order: Vec<usize> =
            (0..n).chain((0..n).rev()).chain((0..n).map(|k| k * 7919 % n)).chain([3, 3, 0]).collect();
        for i in order {
            check(&mut cursor, i);
        }
        // Past the end of the file (it shrank since it was opened): nothing.
        assert!(cursor.line(file.len() as u64 - 2, 5).is_none());
        assert!(LineCursor::new(None).line(0, 1).is_none());
    }
}
