//! The catalog of every session under a sessions root: what a listing shows
//! of each session, and search over the text of every entry, kept in SQLite
//! and refreshed incrementally; and [`FileSessions`], the
//! [`arbor_tree::sessions::Sessions`] of a local sessions root, answered
//! through it.
//!
//! ```
//! use arbor_catalog::FileSessions;
//! use arbor_tree::sessions::{ListRequest, NoProgress, Scope, SearchRequest, Sessions};
//!
//! # let dir = tempfile::tempdir()?;
//! # let root = dir.path().join("sessions");
//! # std::fs::create_dir_all(root.join("--w--"))?;
//! # std::fs::write(root.join("--w--").join("s.jsonl"), [
//! #     r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
//! #     r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"where is the gearbox?"}}"#,
//! # ].join("\n") + "\n")?;
//! // The catalog in memory: nothing is written anywhere.
//! let sessions = FileSessions::new(&root);
//! let listed = sessions.listing(&ListRequest::new(Scope::All), &NoProgress)?;
//! assert_eq!(listed[0].first_message, "where is the gearbox?");
//! let hits = sessions.search(&SearchRequest::new("gearbox", Scope::cwd("/w")), &NoProgress)?;
//! assert_eq!((hits[0].entry_id.as_str(), hits[0].on_active_path), ("u1", true));
//! assert_eq!(sessions.resolve("s1")?, listed[0].path);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `arbor-catalog` owns [`Catalog`]: its file (in the cache directory a
//! caller names, `<cache>/catalog/<hash of the root>.sqlite`; by default the
//! catalog is kept in memory and nothing is written), its schema (versioned:
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
//! [`FileSessions`] follows a file as `tail -F` does (whole lines; a file
//! replaced, cut short or rewritten in place is handed out whole again; one
//! that goes away is reported and followed again when it comes back; only
//! regular files).
//!
//! It does not know about terminals, output formats or the tree's layout. It
//! is synchronous (no async runtime) and never prints: warnings are returned
//! ([`Catalog::take_warnings`]) and progress is reported through [`Progress`].

#![deny(missing_docs)]

mod build;
mod catalog;
mod db;
mod error;
mod facts;
mod filters;
mod follow;
mod lines;
mod names;
mod refresh;
mod search;
mod sessions;
mod stamp;
mod walk;
mod work;

pub use arbor_search::Flow;
/// The shared types of every backend's sessions, from `arbor-tree`.
pub use arbor_tree::sessions::{
    fuzzy_match, parse_query, Hit, NoProgress, Pass, PathLabel, Progress, Query, Relevance, Scope, Token, TokenKind,
};
pub use build::BuildStats;
pub use catalog::{clear_cache, Background, Catalog, CatalogOptions};
pub use error::CatalogError;
pub use facts::all_messages_text;
pub use names::Named;
pub use refresh::RefreshStats;
pub use search::{SearchOptions, FUZZY_FALLBACK_BYTES};
pub use sessions::FileSessions;

#[cfg(test)]
mod test_support {
    /// Every `.jsonl` file under the repository's `fixtures/`.
    pub fn fixture_logs() -> Vec<std::path::PathBuf> {
        arbor_test_support::jsonl_under(&arbor_test_support::fixtures())
    }
}
