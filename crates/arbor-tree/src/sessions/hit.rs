//! What a search answers: one [`Hit`] per matching entry, whichever backend
//! found it. Its JSON (camelCase) is what `arbor search --json` prints.

use std::path::PathBuf;

use serde::Serialize;

use arbor_log::{EntryType, Role};

/// How a hit matches: exact hits come before fuzzy ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Relevance {
    /// Every token, phrase or the regex is found as written (up to case), or
    /// a token names the entry or its session.
    Exact,
    /// Some token matches a word only fuzzily (its characters in order, from
    /// the word's first one).
    Fuzzy,
}

/// A label on the path from a session's root to a hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathLabel {
    /// The labeled entry.
    pub entry_id: String,
    /// Its label.
    pub label: String,
}

/// One entry that matches a search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// The session, as the backend names it (a file, or a server's `/DIR/FILE`):
    /// open it with the backend's [`crate::sessions::Sessions::session_options`].
    pub path: PathBuf,
    /// The session's id.
    pub session_id: String,
    /// The session's name, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    /// The session's working directory.
    pub cwd: String,
    /// The entry's id.
    pub entry_id: String,
    /// The entry's `type`.
    #[serde(rename = "type")]
    pub entry_type: EntryType,
    /// A message's role.
    pub role: Option<Role>,
    /// The entry's time (ISO).
    pub timestamp: String,
    /// The text around the first match, on one line.
    pub snippet: String,
    /// Where the matches are in `snippet`: `[start, end)` in characters.
    pub marks: Vec<[usize; 2]>,
    /// True when the entry is on the path from the root to the session's leaf.
    pub on_active_path: bool,
    /// The labels on the path from the root to the entry, root first.
    pub labels: Vec<PathLabel>,
    /// How well it matches.
    pub relevance: Relevance,
}
