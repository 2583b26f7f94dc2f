//! What a tool call can fail with: each a message the model reads (an MCP
//! tool error, `isError: true`), never a crash of the server.

use arbor_tree::sessions::SessionsError;
use arbor_tree::TreeError;

/// A tool call that could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The sessions' backend said no: an unknown session, an ambiguous
    /// prefix, a bad query, a server that cannot be reached.
    #[error(transparent)]
    Sessions(#[from] SessionsError),
    /// A session could not be read or written (a lock held by another writer included).
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// An entry of a session that is not there, or that a prefix does not name alone.
    #[error("{0}")]
    Entry(String),
    /// A budget too small to answer in.
    #[error("{0}")]
    Budget(String),
    /// A cursor from another call, or not from this server.
    #[error("{0}")]
    Cursor(String),
    /// An argument that cannot be used (a date that does not parse, an empty query).
    #[error("{0}")]
    Argument(String),
    /// What a library said about a session (a diff, an export).
    #[error(transparent)]
    Interop(#[from] arbor_interop::InteropError),
    /// The work itself failed (a task that did not finish).
    #[error("{0}")]
    Internal(String),
}
