//! The one error type of the crate's boundary.

use std::path::PathBuf;

use arbor_interop::InteropError;
use arbor_tree::TreeError;

/// What can go wrong reading usage. Bad content in a session is never an
/// error: a reply that cannot be read is left out and counted
/// ([`crate::Scan::unreadable`]).
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// Reading a file or a folder failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder at fault.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Opening a session failed.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// Reading another agent's transcript failed.
    #[error(transparent)]
    Interop(#[from] InteropError),
    /// A price table that does not read.
    #[error("price table: {reason}")]
    Prices {
        /// Why.
        reason: String,
    },
    /// A time zone name that is not in the time zone database.
    #[error("unknown time zone {name:?}: {reason}")]
    Zone {
        /// The name as given.
        name: String,
        /// Why.
        reason: String,
    },
    /// The usage cache could not be written.
    #[error("{}: writing the usage cache: {reason}", path.display())]
    Cache {
        /// The cache file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A date that is not `YYYY-MM-DD` (or `YYYYMMDD`).
    #[error("{value:?} is not a date (YYYY-MM-DD or YYYYMMDD)")]
    Date {
        /// The text as given.
        value: String,
    },
}

impl UsageError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        UsageError::Io { path: path.into(), source }
    }
}
