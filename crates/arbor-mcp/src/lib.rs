//! An MCP server over Arbor's sessions: every past session, on every
//! branch, for any agent that speaks the Model Context Protocol.
//!
//! `arbor-mcp` owns the tools, resources and prompts (`arbor mcp` serves
//! them): `search_sessions` (the same search as `arbor search`),
//! `list_sessions`, `read_context` (what the model saw at an entry),
//! `read_tree` (as `arbor tree` draws it), `read_entries`, `diff_branches`,
//! and with writes allowed `label_entry` and `set_session_name`; every
//! session as a resource `arbor://session/<id>` (its Markdown export); the
//! prompts `recall` and `compare_branches`. It serves them over stdio
//! ([`serve_stdio`]) or streamable HTTP ([`http::serve`]) with the official
//! Rust SDK (`rmcp`).
//!
//! It is a surface: it translates, the libraries decide. It holds one
//! `dyn Sessions` (files or a PostgreSQL server, it does not know which),
//! opens sessions with the options its caller gives (an index directory,
//! where big sessions open fast), and never prints.
//!
//! Promises:
//! - every tool answers within its `budget` of characters and pages what
//!   did not fit with a cursor; a cursor is refused by any other call;
//! - every failure is a tool error with a message naming the session,
//!   entry or argument at fault, never a crash of the server (a panic in a
//!   call is caught and answered as an error);
//! - read-only unless [`Options::allow_writes`]: the write tools are not
//!   even listed otherwise; writes go through the session's single-writer
//!   lock and are refused with the holder's pid;
//! - the first search index is built in the background, tools answer
//!   meanwhile, and a search waits for it with progress notifications.
//!
//! Serve the read-only tools over stdio, as an agent host starts `arbor
//! mcp` (the sessions come from `arbor_catalog::FileSessions` for a folder,
//! or `arbor_pg::PgStore` for a server):
//!
//! ```no_run
//! # async fn example(sessions: std::sync::Arc<dyn arbor_tree::sessions::Sessions>) -> std::io::Result<()> {
//! use arbor_mcp::{ArborMcp, Options};
//!
//! let options = Options::new(sessions.session_options());
//! arbor_mcp::serve_stdio(ArborMcp::new(sessions, options)).await
//! # }
//! ```

#![deny(missing_docs)]

mod context;
mod diff;
mod entries;
mod error;
pub mod http;
mod list;
mod page;
mod progress;
mod prompts;
mod resources;
mod search;
mod server;
mod session;
mod text;
mod tree;
mod write;

pub use error::ToolError;
pub use page::{DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET};
pub use server::{ArborMcp, Options, Writes};

/// The tools every server offers.
pub const READ_TOOLS: [&str; 6] =
    ["search_sessions", "list_sessions", "read_context", "read_tree", "read_entries", "diff_branches"];
/// The tools only a server that may write offers.
pub const WRITE_TOOLS: [&str; 2] = ["label_entry", "set_session_name"];

/// Serves `server` on standard input and output until the client goes away.
pub async fn serve_stdio(server: ArborMcp) -> Result<(), std::io::Error> {
    use rmcp::ServiceExt as _;
    let running = server.serve(rmcp::transport::stdio()).await.map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}
