//! Text for people: one line per entry ([`entry_text`], as the tree and its
//! selector show it) and the transcript of a context ([`write_transcript`]).
//!
//! Plain text with no terminal in mind (no colours, no widths): a front end
//! truncates and styles it.

mod entry;
mod facts;
pub(crate) mod transcript;

pub use entry::{entry_text, format_tool_call, normalize, CallText, ToolCalls};
pub use facts::{entry_facts, message_facts, EntryFacts, SEARCH_CHARS};
pub use transcript::{write_transcript, Form};

#[cfg(test)]
mod oracle;
