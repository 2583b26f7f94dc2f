//! The one error type of the crate's boundary.

use std::path::PathBuf;

use arbor_log::LogError;
use arbor_tree::TreeError;

/// What can go wrong importing, exporting or diffing. Bad content in a
/// transcript is never an error: it is reported line by line in the
/// [`ImportReport`](crate::ImportReport).
#[derive(Debug, thiserror::Error)]
pub enum InteropError {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The session layer refused (a lock held by another writer, a missing entry, …).
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The log layer failed (an atomic write, an append).
    #[error(transparent)]
    Log(#[from] LogError),
    /// A transcript holds no record to import.
    #[error("{}: no {format} records to import", path.display())]
    Empty {
        /// The transcript.
        path: PathBuf,
        /// `claude`, `codex` or `opencode`.
        format: &'static str,
    },
    /// A file that is not what its format's transcript must be (an OpenCode
    /// session file that is not a JSON object with an `id`).
    #[error("{}: not an {format} session: {reason}", path.display())]
    NotATranscript {
        /// The file.
        path: PathBuf,
        /// `opencode`.
        format: &'static str,
        /// Why.
        reason: String,
    },
    /// The session file of an earlier import has entries the transcript does not make
    /// (the session was continued after the import): it is left alone.
    #[error(
        "{}: {foreign} entries are not from the transcript (was the session continued after the import?); \
         nothing written: move the file away or import into another --sessions-dir",
        path.display()
    )]
    Diverged {
        /// The existing session file.
        path: PathBuf,
        /// How many of its entries the import does not make.
        foreign: usize,
    },
    /// An entry id named on the command line is not in the session.
    #[error("{}: Entry {id} not found", path.display())]
    NoEntry {
        /// The session file.
        path: PathBuf,
        /// The id.
        id: String,
    },
}

impl InteropError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        InteropError::Io { path: path.into(), source }
    }
}
