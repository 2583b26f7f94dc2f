//! The error type of this crate: only I/O fails; bad data is a diagnostic.

use std::io;
use std::path::PathBuf;

/// A failure to read or write a log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// An I/O error on a named file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
    /// A value could not be encoded (never happens for values read from JSON).
    #[error("cannot encode entry: {0}")]
    Encode(#[from] serde_json::Error),
}

impl LogError {
    /// Wraps an I/O error with the file it happened on.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        LogError::Io { path: path.into(), source }
    }
}
