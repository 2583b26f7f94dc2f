//! A session's tree as text, as `arbor tree` draws it and the tree selector
//! lays it out (docs/cli.md, "How the tree is laid out"): the order and
//! levels ([`forest`], [`layout`]), a walk that makes the rows one at a time
//! without arrays over every entry ([`walk`]), pi's filters ([`filter`]),
//! and the text itself ([`print_tree`]), where a tool result's row names its
//! call ([`CallTable`]). Used by the CLI (`arbor tree`, the selector) and
//! the MCP server's `read_tree`.

mod calls;
pub mod filter;
pub mod forest;
pub mod layout;
pub mod text;
pub mod walk;

pub use calls::{CallSites, CallTable, CallsAt, CallsInBatch};
pub use filter::FilterMode;
pub use text::{print_tree, TreeText, DEFAULT_WIDTH};
