//! The catalog of every session under a sessions root: what a listing shows
//! of each session, every entry with its text in a full-text index, and
//! search over all of it, kept in SQLite in Arbor's cache directory and
//! refreshed incrementally.
//!
//! `arbor-catalog` owns [`Catalog`]: its file (`<cache>/catalog/<hash of the
//! root>.sqlite`, see [`arbor_tree::paths::cache_dir`]), its schema (versioned:
//! an older catalog is rebuilt), the refresh of the listing facts (pi's
//! `SessionInfo`) and of the entries, and [`Catalog::search`] with pi's picker syntax.
//! The session files stay the only source of truth: a catalog can be deleted
//! at any time and is built again; a damaged one is rebuilt with one warning.
//!
//! A refresh costs one `stat` per file that did not change (size, mtime,
//! ctime, inode); a file that only grew is read from where the last refresh
//! stopped, and one rewritten or shrunk is read again (checksums of its head
//! and of the bytes before the last read offset tell which). Only complete
//! lines are read, so a live writer's last line waits for the next refresh.
//! Files are read on all cores; the listing facts first, the text after, so a
//! listing never waits for the full-text index. Several processes may refresh
//! at once (WAL, a busy timeout, and updates applied only to rows no other
//! process changed in between).
//!
//! It does not know about terminals, output formats or the tree's layout. It
//! is synchronous (no async runtime) and never prints: warnings are returned
//! ([`Catalog::take_warnings`]) and progress is reported through [`Progress`].

mod catalog;
mod db;
mod error;
mod facts;
mod index;
mod lines;
mod refresh;
mod search;
mod stamp;
mod walk;
mod work;

/// The shared types of every backend's sessions, from `arbor-tree`.
pub use arbor_tree::sessions::{
    fuzzy_match, parse_query, Hit, NoProgress, Pass, PathLabel, Progress, Query, Relevance, Scope, Token, TokenKind,
};
pub use catalog::{Catalog, CatalogOptions};
pub use error::CatalogError;
pub use facts::all_messages_text;
pub use index::IndexStats;
pub use refresh::RefreshStats;
pub use search::{SearchOptions, FUZZY_TERMS};

#[cfg(test)]
mod test_support {
    /// Every `.jsonl` file under the repository's `fixtures/`.
    pub fn fixture_logs() -> Vec<std::path::PathBuf> {
        arbor_test_support::jsonl_under(&arbor_test_support::fixtures())
    }
}
