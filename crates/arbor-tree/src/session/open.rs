//! Where sessions come from: [`Session::open`] in an explicit [`OpenMode`],
//! [`Session::create`], [`Session::in_memory`], [`Session::continue_recent`]
//! and [`Session::new_session`] (docs/architecture.md, "Opening a session").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_log::{DiagnosticKind, SeededIds, SessionHeader, SessionLog};

use super::{Disk, OpenMode, Session, SessionOptions};
use crate::error::TreeError;
use crate::paths::session_file_name;
use crate::store::Store;

fn process_cwd() -> String {
    std::env::current_dir().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
}

pub(super) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Why a read file is not a session: the line at fault (if any) and the reason.
fn no_header_reason(log: &SessionLog) -> (Option<usize>, String) {
    log.diagnostics()
        .iter()
        .find_map(|d| match &d.kind {
            DiagnosticKind::MissingHeader { found } => {
                Some((Some(d.line), format!("the first record is {found}, not a session header")))
            }
            _ => None,
        })
        .unwrap_or_else(|| (None, "no session header (the file has no records)".to_owned()))
}

impl Session {
    /// An in-memory session: nothing is ever written.
    pub fn in_memory(cwd: &str, opts: SessionOptions) -> Session {
        let mut s = Session::blank(opts, cwd.to_owned(), false, PathBuf::new());
        s.new_session(None, None);
        s
    }

    /// A new persistent session for `cwd` in the session directory (default:
    /// `<root>/--<cwd>--/`, [`SessionOptions::dir_for`]), under a new file
    /// name. Nothing is written until the first assistant message.
    pub fn create(cwd: &str, opts: SessionOptions) -> Result<Session, TreeError> {
        let dir = opts.dir_for(cwd)?;
        opts.store.create_dir_all(&dir)?;
        let mut s = Session::blank(opts, cwd.to_owned(), true, dir);
        s.new_session(None, None);
        s.take_lock()?;
        Ok(s)
    }

    /// Opens the session file at `path`; `mode` says what may happen to it.
    ///
    /// - a missing file is [`TreeError::Missing`], or in a creating mode a new
    ///   session that will be written to `path`;
    /// - a file without a usable header is [`TreeError::NoHeader`], or with
    ///   [`OpenMode::WriteCreateOrRecover`] first copied to `FILE.corrupt-<ms>`
    ///   and then replaced by a fresh header (pi's `setSessionFile`);
    /// - otherwise the entries are loaded and migrated in memory (the file is
    ///   rewritten, atomically, only on the first write).
    pub fn open(path: &Path, mode: OpenMode, opts: SessionOptions) -> Result<Session, TreeError> {
        Session::open_as(path, mode, opts, true)
    }

    /// [`Session::open`]; `stored` false leaves aside the index the store
    /// keeps (one found not to match the session).
    pub(super) fn open_as(
        path: &Path,
        mode: OpenMode,
        opts: SessionOptions,
        stored: bool,
    ) -> Result<Session, TreeError> {
        // Errors name the file as the caller did; the session keeps it absolute.
        let given = path.to_owned();
        let path = absolute(path);
        let dir = opts.session_dir.clone().unwrap_or_else(|| path.parent().map(Path::to_owned).unwrap_or_default());
        let store = opts.store.clone();
        let mut s = Session::blank(opts, process_cwd(), true, dir);
        s.file = Some(path.clone());
        s.read_only = mode.is_read_only();
        if !mode.creates() && !store.exists(&path)? {
            // Checked before locking, so a refused writer leaves no lock file behind.
            return Err(TreeError::Missing(given));
        }
        s.take_lock()?;
        if s.opts.index_first {
            let opened = if stored { store.open_indexed(&path)? } else { store.open_at(&path)?.map(|src| (src, None)) };
            let Some((src, index)) = opened else { return s.start_at_missing(mode, given) };
            if s.load_index_first(src, index).map_err(|e| TreeError::io(&given, e))? {
                s.watch_source();
                return Ok(s);
            }
        }
        let Some(reader) = store.read_from(&path, 0)? else { return s.start_at_missing(mode, given) };
        let log = SessionLog::read(reader).map_err(|e| TreeError::io(&given, e))?;
        s.diagnostics = log.diagnostics().to_vec();
        match log.header() {
            Some(header) => {
                s.load_log(log, header);
                Ok(s)
            }
            None => s.refuse_or_recover(mode, &log, given),
        }
    }

    /// A missing file: a new session to be written to exactly this path, in a creating mode.
    fn start_at_missing(mut self, mode: OpenMode, given: PathBuf) -> Result<Session, TreeError> {
        if !mode.creates() {
            return Err(TreeError::Missing(given));
        }
        self.reset_fresh(None, None);
        Ok(self)
    }

    /// A file without a usable header: refused, or backed up and replaced
    /// by a fresh session when the caller asked for pi's recovery.
    fn refuse_or_recover(mut self, mode: OpenMode, log: &SessionLog, given: PathBuf) -> Result<Session, TreeError> {
        let (line, reason) = no_header_reason(log);
        if !mode.recovers() {
            return Err(TreeError::NoHeader { path: given, line, reason });
        }
        let path = self.file.clone().unwrap_or_default();
        let store: Arc<dyn Store> = self.opts.store.clone();
        // pi overwrites such a file with a fresh header; we keep the original first.
        let backup = if log.lines().is_empty() { None } else { Some(store.backup(&path, "corrupt")?) };
        self.reset_fresh(None, None);
        let mut bytes = self.header_line()?;
        bytes.push('\n');
        store.rewrite(&path, bytes.as_bytes())?;
        self.note_link_rewrite(&path);
        self.disk = Disk::Synced { count: 0 };
        if let Some(b) = backup {
            self.notices.push(format!("{}: {reason}; kept the original as {}", path.display(), b.display()));
        }
        Ok(self)
    }

    /// The full load: migrated in memory (the first write rewrites the file).
    fn load_log(&mut self, mut log: SessionLog, header: SessionHeader) {
        self.cwd = header.cwd.clone().unwrap_or_default();
        self.header = header;
        let report = if self.opts.seeded_migration_ids {
            log.migrate(&mut SeededIds::from_text(&self.header.id))
        } else {
            let mut ids = self.opts.ids.lock().unwrap_or_else(|p| p.into_inner());
            log.migrate(&mut *ids)
        };
        if report.migrated() {
            // The migrated header is what later rewrites and the dump show.
            if let Some(h) = log.header() {
                self.header = h;
            }
        }
        self.migration = report;
        self.header_text = log.header_text().map(String::into_boxed_str);
        if log.is_dirty() {
            // The rewrite on the first write needs the log as read (junk lines included).
            let (entries, diags) = log.clone().into_entries();
            self.load_entries(entries, diags);
            let count = self.state.slots.len();
            self.disk = Disk::NeedsRewrite { log: Box::new(log), count };
        } else {
            let (entries, diags) = log.into_entries();
            self.load_entries(entries, diags);
            self.disk = Disk::Synced { count: self.state.slots.len() };
        }
    }

    /// Continues the most recent session in the cwd's directory (opened for
    /// writing), or starts a new one there.
    pub fn continue_recent(cwd: &str, opts: SessionOptions) -> Result<Session, TreeError> {
        let dir = opts.dir_for(cwd)?;
        let opts = SessionOptions { session_dir: Some(dir.clone()), ..opts };
        match crate::listing::find_most_recent_session(opts.store.as_ref(), &dir)? {
            Some(path) => Session::open(&path, OpenMode::Write, opts),
            None => Session::create(cwd, opts),
        }
    }

    /// Starts a fresh session in this manager (pi's `newSession`): new
    /// header, no entries, leaf null. Returns the (not yet created) file path
    /// in persistent mode.
    pub fn new_session(&mut self, id: Option<String>, parent_session: Option<String>) -> Option<PathBuf> {
        let (id, timestamp) = self.reset_fresh(id, parent_session);
        if !self.persist {
            return None;
        }
        let path = self.session_dir.join(session_file_name(&timestamp, &id));
        if self.file.as_ref() != Some(&path) && (self.lock.is_some() || self.read_only) {
            // The old file's lock goes (read-only applied to the old file); the new file's is taken.
            self.lock = None;
            self.read_only = false;
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
        self.header_text = None;
        self.clear();
        (id, timestamp)
    }
}
