//! The session tree over a pi log: pi's `SessionManager`, without its bugs.
//!
//! `arbor-tree` owns the tree/leaf model over an `arbor-log` log ([`Session`]):
//! the id index (the later line wins), children, resolved labels and the leaf;
//! `branch`, `reset_leaf`, `branch_with_summary`; every append; `get_branch`,
//! `get_tree` ([`Tree`]), `get_children`; the session name; branched sessions;
//! new / open / continue-recent / in-memory / fork-from; the sessions directory
//! layout ([`paths`]) and listing ([`list_sessions`]); one writer per file.
//! Files are reached only through a [`Store`] ([`FileStore`], [`MemoryStore`]).
//! Current-version files are opened index-first: a parallel light scan keeps
//! each entry's id, parent, type and byte range, and an entry's body and JSON
//! text are decoded from the file on first use ([`SessionOptions::index_first`]),
//! so opening costs a scan and every later question costs what its answer costs.
//!
//! It does not know about LLM contexts, models, summaries or async runtimes.
//!
//! Promises:
//! - every walk is cycle-safe and no entry appears twice in a tree;
//! - index-first and full loading are indistinguishable to callers (same
//!   entries, JSON text, diagnostics, tree); a line that changed on disk after
//!   opening decodes as a malformed entry saying so, never as a panic;
//! - reading never modifies a file; a migrated file is rewritten atomically on
//!   the first write, a damaged file is backed up before it is replaced;
//! - a new session reaches disk with its first assistant message, exactly once
//!   (no duplicated header);
//! - a leaf move can be made durable ([`Session::persist_leaf`]) in a way pi reads;
//! - a second writer on the same file is refused with the holder's pid.

mod check;
mod error;
mod labels;
mod listing;
pub mod paths;
mod repair;
mod session;
mod sidecar;
mod store;
mod text;
mod tree;

pub use check::{check_file, tree_findings, Finding, Severity};
pub use error::TreeError;
pub use labels::Label;
pub use listing::{find_most_recent_session, list_all_sessions, list_sessions, read_session_info, SessionListInfo};
pub use repair::{repair_file, RepairReport};
pub use session::{Session, SessionOptions, LEAF_MARKER_TYPE};
pub use sidecar::{INDEX_SUFFIX, MIN_INDEXED_BYTES};
pub use store::{lock_path, AppendHandle, FileStore, MemoryStore, Store, StoredFile, WriteLock};
pub use text::{content_text, message_text};
pub use tree::{sort_by_timestamp, Tree, TreeNode};
