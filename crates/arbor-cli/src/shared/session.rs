//! The global flags, and opening a session for a command: the CLI never
//! turns a missing or damaged file into a new session (each command says
//! what may happen to the file with an `OpenMode`), and shows a file's
//! diagnostics on stderr.

use std::path::Path;

use anyhow::Result;
use clap::{Args, ValueEnum};

use arbor_log::{CounterIds, Diagnostic};
use arbor_tree::{OpenMode, Session, SessionOptions};

/// The flags every command takes (`arbor --ids … <command>`), passed to every `run`.
#[derive(Debug, Clone, Args)]
pub struct Globals {
    /// How new ids are made (`counter` is deterministic, for tests).
    #[arg(long, global = true, hide = true, value_enum, default_value = "random", env = "ARBOR_IDS")]
    pub ids: IdMode,
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
    /// The options every command opens sessions with (the index cache as the
    /// library places it: `$ARBOR_CACHE_DIR`, …, none under `ARBOR_NO_INDEX`).
    pub fn options(&self) -> SessionOptions {
        let opts = SessionOptions::default();
        match self.ids {
            IdMode::Random => opts,
            IdMode::Counter => opts.with_ids(CounterIds::new()),
        }
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
        let s = Session::open(file, mode, self.options())?;
        print_diagnostics(file, s.diagnostics());
        Ok(s)
    }
}

/// Prints the diagnostics of a file to stderr as `FILE:LINE: reason`.
pub fn print_diagnostics(file: &Path, diags: &[Diagnostic]) {
    let name = file.display().to_string();
    for d in diags {
        eprintln!("{}", d.with_file(&name));
    }
}

/// Leaves a large read-only value to the end of the process instead of
/// freeing it piece by piece: the answer is written, and a session of a
/// million entries takes longer to free than to answer from. Only for values
/// that own no file handle needing a flush (a read-only session's writer is never opened).
pub fn exit_without_freeing<T>(value: T) {
    std::mem::forget(value);
}
