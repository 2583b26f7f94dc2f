//! The session tree over a pi log: pi's `SessionManager`, without its bugs.
//!
//! ```
//! use arbor_tree::{OpenMode, Role, Session, SessionOptions};
//!
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("session.jsonl");
//! # std::fs::write(&path, [
//! #     r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
//! #     r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}"#,
//! #     r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}"#,
//! #     r#"{"type":"message","id":"u2","parentId":"u1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":"another try"}}"#,
//! # ].join("\n") + "\n")?;
//! // Read only: no lock, and nothing is written anywhere near the file.
//! let session = Session::open(&path, OpenMode::ReadOnly, SessionOptions::default())?;
//! // The active path, root to leaf (the leaf is the last line: u2 left a1's branch).
//! let path: Vec<String> = session
//!     .get_branch(None)?
//!     .iter()
//!     .map(|e| {
//!         let m = e.message().map(|m| m.view());
//!         let role = m.and_then(|m| m.role()).unwrap_or(Role::Custom);
//!         format!("{} {role}: {}", e.id, m.map(|m| m.text(" ")).unwrap_or_default())
//!     })
//!     .collect();
//! assert_eq!(path, ["u1 user: hi", "u2 user: another try"]);
//! assert_eq!(session.get_children("u1")?.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `arbor-tree` owns the tree/leaf model over an `arbor-log` log ([`Session`]):
//! the id map (the later line wins), children, resolved labels and the leaf;
//! `branch`, `reset_leaf`, `branch_with_summary`; every append; `get_branch`,
//! `get_tree` ([`Tree`]), `get_children`; the session name; branched sessions;
//! open (in an explicit [`OpenMode`]) / create / continue-recent / in-memory /
//! fork-from; where files live ([`paths`]) and listing ([`listing`]);
//! checking and repairing a file ([`check`], [`repair`]);
//! one writer per file. Session files are reached only through a [`Store`]
//! ([`FileStore`], [`MemoryStore`]): one session's bytes. All the sessions
//! of a backend (a sessions root, a server) are reached through the
//! [`sessions::Sessions`] trait (listing, search, names, following, where a
//! new session goes), with the types every backend answers with; its
//! implementations live with their backends (`arbor_catalog::FileSessions`,
//! `arbor_pg::PgStore`). Users name entries by id; bulk and fast
//! paths by [`Position`] (an entry's place in file order). Current-version
//! files are opened index-first: a parallel light scan (or the index cached
//! in Arbor's cache directory) keeps each entry's id, parent, type and byte
//! range, and an entry's body and JSON text are decoded from the file on
//! first use ([`SessionOptions::index_first`]), so opening costs a scan and
//! every later question costs what its answer costs; the index is cached
//! only where the options name a directory ([`SessionOptions::index_dir`]).
//! The `arbor-log` types its entries are read through are re-exported here
//! (the rest under [`log`]).
//!
//! It does not know about LLM contexts, models, summaries or async runtimes.
//!
//! Promises:
//! - every walk is cycle-safe and no entry appears twice in a tree;
//! - index-first and full loading are indistinguishable to callers (same
//!   entries, JSON text, diagnostics, tree); a line that changed on disk after
//!   opening decodes as a malformed entry saying so, never as a panic;
//! - reading never modifies a file nor writes beside it; a migrated file is
//!   rewritten atomically on the first write;
//! - a default ([`SessionOptions::default`]) reads no environment variable
//!   and writes nowhere its caller did not name (the environment's
//!   directories are [`paths`] helpers a program calls as its policy);
//! - no open mode creates a session at a missing path or replaces a file that
//!   is not a session unless it says so; pi's recovery backs the file up first;
//! - a new session reaches disk with its first assistant message, exactly once
//!   (no duplicated header);
//! - a leaf move can be made durable ([`Session::persist_leaf`]) in a way pi reads;
//! - a second writer on the same file is refused with the holder's pid.

#![deny(missing_docs)]

pub mod check;
mod error;
mod facts;
mod index;
mod labels;
pub mod listing;
mod lock;
pub mod paths;
pub mod repair;
mod session;
pub mod sessions;
mod store;
mod tree;

pub use error::{LockHolder, TreeError};
pub use labels::{Label, Labeled};
pub use session::{EntryId, LongLine, OpenMode, Position, Session, SessionOptions, LEAF_MARKER_TYPE};
pub use store::{FileStore, MemoryStore, Store};
pub use tree::{Tree, TreeNode};

/// The log format crate, for what the root does not re-export.
pub use arbor_log as log;
/// The `arbor-log` types a session's entries are read through, so common
/// work needs only `arbor-tree` (the rest is under [`log`]).
pub use arbor_log::{Entry, EntryKind, EntryType, Message, MessageView, Role};

pub mod storage {
    //! What a [`Store`](crate::Store) implementation deals in: a session's
    //! stored file ([`StoredFile`], its [`FileStamp`] and [`Indexed`] form),
    //! append handles and write locks, positioned reads ([`ReadAt`]), and the
    //! index a session is opened through, cached on disk ([`stored_index`],
    //! made for files of [`MIN_INDEXED_BYTES`] and more).
    //!
    //! ```
    //! use arbor_tree::storage::MIN_INDEXED_BYTES;
    //! use arbor_tree::SessionOptions;
    //!
    //! // Small files are read whole; an index pays off from this size up.
    //! assert_eq!(SessionOptions::default().index_min_bytes, MIN_INDEXED_BYTES);
    //! ```

    pub use crate::index::stored as stored_index;
    pub use crate::index::MIN_INDEXED_BYTES;
    pub use crate::store::{AppendHandle, FileStamp, Indexed, StoredFile, WriteLock};
    pub use arbor_log::scan::ReadAt;
}

pub mod walk {
    //! Walking a [`Tree`](crate::Tree) depth first ([`Walk`], one [`Step`]
    //! at a time) and pi's order of siblings ([`sort_by_timestamp`]).
    //!
    //! ```
    //! use arbor_tree::walk::Step;
    //! use arbor_tree::{Session, SessionOptions};
    //! use serde_json::json;
    //!
    //! let mut session = Session::in_memory("/w", SessionOptions::default());
    //! session.append_message(json!({"role": "user", "content": "hi", "timestamp": 1}))?;
    //! let tree = session.get_tree();
    //! let entered = tree.walk().filter(|s| matches!(s, Step::Enter { .. })).count();
    //! assert_eq!(entered, 1);
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```

    pub use crate::tree::{sort_by_timestamp, Step, Walk};
}
