//! The error type of `arbor-catalog`.

use std::path::PathBuf;

/// What can go wrong with the catalog. Damaged catalog data is never one of
/// these: a catalog that does not read is rebuilt (see [`crate::Catalog::open`]).
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// Reading a session file or a directory of the sessions root failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The catalog database failed in a way a rebuild does not mend (a full
    /// disk, a lock held past the busy timeout).
    #[error("catalog {}: {source}", path.display())]
    Db {
        /// The catalog file (`:memory:` for one in memory).
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// A search query that does not parse (an empty or invalid `re:` pattern).
    #[error("invalid search query: {0}")]
    Query(String),
}

impl CatalogError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> CatalogError {
        CatalogError::Io { path: path.into(), source }
    }
}
