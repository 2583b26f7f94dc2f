//! How a session is opened: the [`OpenMode`] (what may happen to the file)
//! and the [`SessionOptions`] (injected store, ids and clock; durability;
//! directories; loading), kept apart so that no default can create or
//! replace a file.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arbor_log::ids::{IdGenerator, RandomIds};
use arbor_log::writer::Durability;
use arbor_log::{Clock, SystemClock};

use crate::error::TreeError;
use crate::paths::session_dir_for;
use crate::store::{FileStore, Store};

/// What [`crate::Session::open`] may do to the file at the path it is given.
///
/// Every mode refuses a file that exists but is not a session (no usable
/// header), except [`OpenMode::WriteCreateOrRecover`], which asks for pi's
/// behaviour by name.
///
/// ```
/// use arbor_tree::{OpenMode, Session, SessionOptions};
///
/// # let dir = tempfile::tempdir()?;
/// let file = dir.path().join("new.jsonl");
/// // Read-only and Write refuse a missing file; WriteOrCreate starts one there.
/// assert!(Session::open(&file, OpenMode::ReadOnly, SessionOptions::default()).is_err());
/// assert!(Session::open(&file, OpenMode::Write, SessionOptions::default()).is_err());
/// let s = Session::open(&file, OpenMode::WriteOrCreate, SessionOptions::default())?;
/// assert!(s.get_branch(None)?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Read only: no lock, and nothing is written anywhere near the file (an
    /// index goes only to the cache directory the options name, see
    /// [`SessionOptions::index_dir`]).
    /// A missing file is [`crate::TreeError::Missing`]; every write fails.
    ReadOnly,
    /// Write an existing session: the write lock is taken and new entries are
    /// appended. A missing file is [`crate::TreeError::Missing`] (checked
    /// before a lock file is made), so a mistyped path is an error, not a new
    /// session.
    Write,
    /// Write, starting a new session at the path when no file is there yet
    /// (written with its first assistant message, as pi does).
    WriteOrCreate,
    /// pi's `setSessionFile`: like [`OpenMode::WriteOrCreate`], and a file
    /// without a usable header is first copied to `FILE.corrupt-<ms>` and
    /// then replaced by a fresh session (docs/format.md, "Side files").
    WriteCreateOrRecover,
}

impl OpenMode {
    /// True for [`OpenMode::ReadOnly`].
    pub fn is_read_only(self) -> bool {
        self == OpenMode::ReadOnly
    }

    /// True when a missing file starts a new session.
    pub(crate) fn creates(self) -> bool {
        matches!(self, OpenMode::WriteOrCreate | OpenMode::WriteCreateOrRecover)
    }

    /// True when a file without a usable header is backed up and replaced.
    pub(crate) fn recovers(self) -> bool {
        self == OpenMode::WriteCreateOrRecover
    }
}

/// Everything about a session but what may happen to its file: injected ids,
/// clock and store; durability; directories; how files are loaded. The
/// default is safe for any [`OpenMode`], reads no environment variable and
/// writes nowhere the caller did not name: no index cache, and no sessions
/// root (new sessions for a cwd need [`SessionOptions::sessions_root`] or
/// [`SessionOptions::session_dir`]). Policy such as Arbor's cache directory
/// ([`crate::paths::index_dir`]) or pi's sessions root
/// ([`crate::paths::sessions_root`]) is the caller's to turn on.
///
/// ```
/// use arbor_tree::{OpenMode, Session, SessionOptions};
///
/// # let dir = tempfile::tempdir()?;
/// # let file = dir.path().join("s.jsonl");
/// # std::fs::write(&file, concat!(r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#, "\n"))?;
/// let cache = dir.path().join("cache");
/// // The default writes nothing; naming a cache directory turns the index cache on.
/// let opts = SessionOptions::default().with_index_dir(Some(cache.clone()));
/// let s = Session::open(&file, OpenMode::ReadOnly, opts)?;
/// assert_eq!(s.get_branch(None)?.len(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Where files live.
    pub store: Arc<dyn Store>,
    /// Id generator (pi's random 8-hex by default).
    pub ids: Arc<Mutex<dyn IdGenerator>>,
    /// Clock for timestamps.
    pub clock: Arc<dyn Clock>,
    /// fsync every append, or not.
    pub durability: Durability,
    /// The session directory for new files (`None`: the default for the cwd, or the file's directory).
    pub session_dir: Option<PathBuf>,
    /// The sessions root, under which new sessions for a cwd go
    /// (`<root>/<encoded cwd>/`); `None`: none (creating a session for a cwd
    /// without a `session_dir` is then [`TreeError::NoSessionsRoot`]).
    pub sessions_root: Option<PathBuf>,
    /// Ids for migrating a v1 file: seeded from its session id (the default,
    /// so every read shows the same ids), or taken from `ids` when false.
    pub seeded_migration_ids: bool,
    /// Open current-version files index-first (the default): a parallel light
    /// scan keeps each entry's place in the file, and bodies are decoded on
    /// first use. When false, every entry is decoded on open (the reference
    /// behaviour the tests compare against). Files that need a migration are
    /// always decoded in full.
    pub index_first: bool,
    /// Where the index cache lives (docs/format.md, "The index"): an
    /// unchanged file reopens without a scan. `None` (the default) keeps no
    /// index; Arbor's CLI names [`crate::paths::index_dir`] (`<cache>/index`,
    /// or none under `ARBOR_NO_INDEX`). Only with `index_first`.
    pub index_dir: Option<PathBuf>,
    /// Files smaller than this are scanned and never indexed (default
    /// [`crate::storage::MIN_INDEXED_BYTES`]: below it the scan costs less than the
    /// index). Tests set 0 to read every file through its index.
    pub index_min_bytes: u64,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            store: Arc::new(FileStore),
            ids: Arc::new(Mutex::new(RandomIds)),
            clock: Arc::new(SystemClock),
            durability: Durability::Buffered,
            session_dir: None,
            sessions_root: None,
            seeded_migration_ids: true,
            index_first: true,
            index_dir: None,
            index_min_bytes: crate::index::MIN_INDEXED_BYTES,
        }
    }
}

impl SessionOptions {
    /// Replaces the id generator (migrated v1 ids then come from it too).
    pub fn with_ids(mut self, ids: impl IdGenerator + 'static) -> Self {
        self.ids = Arc::new(Mutex::new(ids));
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

    /// Keeps the index cache in `dir` (`None`: no index).
    pub fn with_index_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.index_dir = dir;
        self
    }

    /// Puts new sessions under the sessions root `root` (`<root>/<encoded cwd>/`).
    pub fn with_sessions_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.sessions_root = Some(root.into());
        self
    }

    /// The directory new sessions for `cwd` go to: `session_dir`, else the
    /// cwd's directory under `sessions_root`; with neither,
    /// [`TreeError::NoSessionsRoot`].
    pub fn dir_for(&self, cwd: &str) -> Result<PathBuf, TreeError> {
        match (&self.session_dir, &self.sessions_root) {
            (Some(dir), _) => Ok(dir.clone()),
            (None, Some(root)) => Ok(session_dir_for(root, cwd)),
            (None, None) => Err(TreeError::NoSessionsRoot { cwd: cwd.to_owned() }),
        }
    }
}
