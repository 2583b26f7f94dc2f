//! `arbor export`: a session as Markdown (a path), as one self-contained HTML
//! page (the whole tree) or as clean JSONL (a path or the whole tree).

mod body;
mod html;
mod jsonl;
mod live;
mod markdown;
mod markup;
mod stream;
#[cfg(test)]
mod tests;
mod text;
mod tools;
mod whole;

use arbor_log::Entry;
use arbor_tree::Session;

pub use html::{export_html, HtmlOptions, Served};
pub use jsonl::export_jsonl;
pub use live::LiveEntries;
pub use markdown::export_markdown;
pub use markup::escape as escape_html;

use crate::InteropError;

/// What part of a session an export holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// The path from the root to this entry (`None`: the leaf).
    Path(Option<&'a str>),
    /// Every entry of the tree.
    All,
}

/// The path root → `leaf` (default: the session's leaf), or an error naming an unknown id.
pub(crate) fn path_to<'s>(s: &'s Session, leaf: Option<&str>) -> Result<Vec<&'s Entry>, InteropError> {
    if let Some(id) = leaf {
        if s.position_of(id).is_none() {
            return Err(InteropError::NoEntry {
                path: s.session_file().unwrap_or(s.session_dir()).to_owned(),
                id: id.to_owned(),
            });
        }
    }
    Ok(s.get_branch(leaf)?)
}
