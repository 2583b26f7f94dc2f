//! The catalog of every session under a sessions root: what a listing shows
//! of each session, and search over the text of every entry, kept in SQLite
//! in Arbor's cache directory and refreshed incrementally.
//!
//! `arbor-catalog` owns [`Catalog`]: its file (`<cache>/catalog/<hash of the
//! root>.sqlite`, see [`arbor_tree::paths::cache_dir`]), its schema (versioned:
//! an older catalog is rebuilt), the refresh of the listing facts (pi's
//! `SessionInfo`), and [`Catalog::search`] with pi's picker syntax, run by
//! [`arbor_search`]'s engine over the session files themselves: the catalog
//! keeps no text, only each range's gram filter, so that a search reads the
//! ranges that may hold its literals (`filters.rs`). The session files stay
//! the only source of truth: a catalog can be deleted at any time
//! ([`clear_cache`]) and is built again; a damaged one is rebuilt with one
//! warning, in the run that found it.
//!
//! A refresh costs one `stat` per file that did not change (size, mtime,
//! ctime, inode); a file whose stat changed has the bytes it read before
//! checked against their checksum: a file that only grew is read from where
//! the last refresh stopped, one rewritten, replaced or shrunk is read again
//! and its filters go. Only complete lines are read, so a live writer's last
//! line waits for the next refresh. A file that cannot be read is left out
//! with a warning naming it. Files are read on all cores. Several processes
//! may refresh and search at once (WAL, a busy timeout, updates applied only
//! to rows no other process changed in between, filters written to files of
//! their own).
//!
//! The catalog file is opened without following a link and written only when
//! it is Arbor's; one that cannot be kept (a link, someone else's database,
//! no write access) is replaced by one in memory, with a warning.
//!
//! It does not know about terminals, output formats or the tree's layout. It
//! is synchronous (no async runtime) and never prints: warnings are returned
//! ([`Catalog::take_warnings`]) and progress is reported through [`Progress`].

mod catalog;
mod db;
mod error;
mod facts;
mod filters;
mod lines;
mod refresh;
mod search;
mod stamp;
mod walk;
mod work;

pub use arbor_search::{fuzzy_match, parse_query, Flow, Query, Token, TokenKind};
pub use catalog::{clear_cache, Catalog, CatalogOptions};
pub use error::CatalogError;
pub use facts::all_messages_text;
pub use refresh::RefreshStats;
pub use search::{Hit, PathLabel, Relevance, SearchOptions};
pub use walk::Scope;
pub use work::{NoProgress, Pass, Progress};

#[cfg(test)]
mod test_support {
    /// Every `.jsonl` file under the repository's `fixtures/`.
    pub fn fixture_logs() -> Vec<std::path::PathBuf> {
        arbor_test_support::jsonl_under(&arbor_test_support::fixtures())
    }
}
