//! The global flags, and opening a session for a command: the CLI never
//! turns a missing or damaged file into a new session (each command says
//! what may happen to the file with an `OpenMode`), and shows a file's
//! diagnostics on stderr.
//!
//! Sessions live in one backend ([`Globals::sessions`], built by
//! [`crate::shared::backend`]): local files under the sessions root, or with
//! `--store postgres://…` (or `ARBOR_STORE`) a PostgreSQL server
//! (docs/postgres.md). Every command names, lists, searches, follows and
//! opens sessions through it, the same way for both: a session argument is
//! what [`Globals::session`] resolves (a path, `DIR/FILE`, a file name, a
//! session id or a unique prefix of one).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

use crate::shared::backend;
use crate::shared::visible::say;
use arbor_log::{CounterIds, Diagnostic};
use arbor_tree::sessions::Sessions;
use arbor_tree::{paths, OpenMode, Position, Session, SessionOptions};

use super::progress::Spinner;

/// The flags every command takes (`arbor --ids … <command>`), passed to every `run`.
#[derive(Debug, Clone, Args)]
pub struct Globals {
    /// How new ids are made (`counter` is deterministic, for tests).
    #[arg(long, global = true, hide = true, value_enum, default_value = "random", env = "ARBOR_IDS")]
    pub ids: IdMode,
    /// Keep sessions on this PostgreSQL server (a connection string: postgres://USER@HOST/DB);
    /// sessions are then named DIR/FILE, by file name or by session id (see docs/postgres.md).
    #[arg(long, global = true, value_name = "URL", env = "ARBOR_STORE", hide_env_values = true)]
    pub store: Option<String>,
    /// The sessions, made on first use.
    #[arg(skip)]
    sessions: OnceLock<Arc<dyn Sessions>>,
}

/// How new entry ids are made.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum IdMode {
    /// pi's random 8-hex ids.
    Random,
    /// `00000001`, `00000002`, …: repeatable output for tests.
    Counter,
}

impl Globals {
    /// The sessions every command works on: the server's with `--store`
    /// (connected, its schema brought up to date, on first use), else the
    /// files under the sessions root.
    pub fn sessions(&self) -> Result<&Arc<dyn Sessions>> {
        if self.sessions.get().is_none() {
            let built = backend::open(self.store.as_deref(), None)?;
            let _ = self.sessions.set(built);
        }
        match self.sessions.get() {
            Some(s) => Ok(s),
            None => bail!("the sessions could not be opened"),
        }
    }

    /// [`Globals::sessions`], or for a command given `--sessions-dir DIR` the
    /// files under DIR (refused with `--store`).
    pub fn sessions_in(&self, sessions_dir: Option<&Path>) -> Result<Arc<dyn Sessions>> {
        match sessions_dir {
            None => self.sessions().cloned(),
            Some(dir) => backend::open(self.store.as_deref(), Some(dir)),
        }
    }

    /// Refuses a command that works on local files only (`repair`, `import`)
    /// under `--store`, saying what to do instead.
    pub fn local_only(&self, what: &str, instead: &str) -> Result<()> {
        if self.store.is_some() {
            bail!("{what} works on local session files, not with --store: {instead}");
        }
        Ok(())
    }

    /// The options every command opens sessions with: the backend's (its
    /// store and sessions root), with the index cache in Arbor's cache
    /// directory ([`paths::index_dir`]: none under `ARBOR_NO_INDEX`; a store
    /// that cannot name a file's version keeps none anyway).
    pub fn options(&self) -> Result<SessionOptions> {
        let opts = self.sessions()?.session_options().with_index_dir(paths::index_dir());
        Ok(match self.ids {
            IdMode::Random => opts,
            IdMode::Counter => opts.with_ids(CounterIds::new()),
        })
    }

    /// The session a command's argument names ([`Sessions::resolve`]): a
    /// path, `DIR/FILE`, a file name, a session id or a unique prefix of one.
    pub fn session(&self, arg: &Path) -> Result<PathBuf> {
        Ok(self.sessions()?.resolve(&arg.to_string_lossy())?)
    }

    /// Opens `file` read-only and prints its diagnostics.
    pub fn open_read(&self, file: &Path) -> Result<Session> {
        self.open(file, OpenMode::ReadOnly)
    }

    /// Opens `file` for writing (it must be a session) and prints its diagnostics.
    pub fn open_write(&self, file: &Path) -> Result<Session> {
        self.open(file, OpenMode::Write)
    }

    fn open(&self, file: &Path, mode: OpenMode) -> Result<Session> {
        let file = self.session(file)?;
        let s = open_showing_progress(&file, mode, self.options()?)?;
        print_diagnostics(&file, s.diagnostics());
        Ok(s)
    }
}

/// Before a command copies or shows lines of `s`: checks the lines at
/// `positions` (all of them for `None`) against the file when the session
/// was opened through its index ([`Session::verify_lines`]); a stale index is
/// dropped and the file read again, which one line on stderr says (and the
/// answer is true: positions taken before are stale).
pub fn check_lines(s: &mut Session, positions: Option<&[Position]>) -> Result<bool> {
    let reloaded = match positions {
        Some(p) => s.verify_lines(p)?,
        None => s.verify_all_lines()?,
    };
    if reloaded {
        if let Some(n) = s.notices().last() {
            say!("arbor: {n}");
        }
    }
    Ok(reloaded)
}

/// Reads `s` again from its file after a line was found not where its index
/// put it (a writer that checks lines as it reads them said so): the index
/// is dropped, which one line on stderr says. Positions taken before are stale.
pub fn read_again(s: &mut Session) -> Result<()> {
    s.read_again_without_index()?;
    if let Some(n) = s.notices().last() {
        say!("arbor: {n}");
    }
    Ok(())
}

/// Refuses an `id` that names no entry of `file`'s session `s`: the
/// library looks for it in the file itself when the index does not know
/// it ([`Session::find_entry`]), which one line on stderr says.
pub fn require_entry(s: &mut Session, id: &str, file: &Path) -> Result<()> {
    let said = s.notices().len();
    let found = s.find_entry(id);
    for n in &s.notices()[said.min(s.notices().len())..] {
        say!("arbor: {n}");
    }
    match found {
        Ok(_) => Ok(()),
        Err(arbor_tree::TreeError::NotFound(_)) => bail!("{}: Entry {id} not found", file.display()),
        Err(e) => Err(e.into()),
    }
}

/// Opens a session; a spinner on stderr says so when it takes long (a big
/// file opened for the first time, before its index exists).
pub fn open_showing_progress(file: &Path, mode: OpenMode, opts: SessionOptions) -> Result<Session> {
    let _spinner = Spinner::after(OPEN_SPINNER_AFTER, &format!("Opening {}…", file.display()), "");
    Ok(Session::open(file, mode, opts)?)
}

/// How long an open runs before its spinner shows.
const OPEN_SPINNER_AFTER: std::time::Duration = std::time::Duration::from_millis(300);

/// Prints the diagnostics of a file to stderr as `FILE:LINE: reason`.
pub fn print_diagnostics(file: &Path, diags: &[Diagnostic]) {
    let name = file.display().to_string();
    for d in diags {
        say!("{}", d.with_file(&name));
    }
}

/// Leaves a large read-only value to the end of the process instead of
/// freeing it piece by piece: the answer is written, and a session of a
/// million entries takes longer to free than to answer from. Only for values
/// that own no file handle needing a flush (a read-only session's writer is never opened).
pub fn exit_without_freeing<T>(value: T) {
    std::mem::forget(value);
}
