//! The sessions, wherever they live: [`Sessions`] answers for all of a
//! backend's sessions what [`crate::Store`] answers for one session's bytes.
//!
//! A backend (the files under a sessions root, `arbor_catalog::FileSessions`;
//! a PostgreSQL server, `arbor_pg::PgStore`) lists its sessions (pi's
//! [`SessionListInfo`], newest first), searches the text of every entry on
//! every branch (one [`Hit`] type whichever backend answers), finds the one
//! session a name means ([`Sessions::resolve`]: a path, `DIR/FILE`, a file
//! name, a session id or a unique prefix of one), follows a session while
//! others write it ([`Follow`]), says where a new session for a working
//! directory goes ([`Sessions::import_into`], its name checked first), and
//! gives the [`SessionOptions`] to open any of them with. A program that
//! holds a `dyn Sessions` runs the same code whichever backend it was given;
//! a new backend is one more implementation.
//!
//! ```
//! use arbor_tree::sessions::{Scope, SearchRequest};
//!
//! // The ten best hits for two words in the sessions of one working directory.
//! let request = SearchRequest::new("parse json", Scope::cwd("/home/me/proj")).limit(10);
//! assert_eq!(request.scope, Scope::Dir("--home-me-proj--".into()));
//! ```
//!
//! The query syntax is pi's session picker's ([`parse_query`]): space-separated
//! tokens that must all match, `"quoted phrases"`, and `re:REGEX`.

mod follow;
mod hit;
mod names;
mod progress;
mod query;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::TreeError;
use crate::listing::SessionListInfo;
use crate::session::SessionOptions;

pub use follow::{Follow, FollowFrom, Followed};
pub use hit::{Hit, PathLabel, Relevance};
pub use names::{check_component, choose, Candidate, SHOWN};
pub use progress::{NoProgress, Pass, Progress};
pub use query::{fuzzy_match, parse as parse_query, Query, Token, TokenKind};

/// Which sessions a question covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Every working directory's sessions.
    All,
    /// The sessions of one directory of the root (pi's encoded cwd, see
    /// [`crate::paths::encode_cwd`]).
    Dir(String),
}

impl Scope {
    /// The sessions of working directory `cwd`.
    pub fn cwd(cwd: &str) -> Scope {
        Scope::Dir(crate::paths::encode_cwd(cwd))
    }
}

/// What [`Sessions::listing`] fills in of each session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListDetail {
    /// The listing facts only; `all_messages_text` is left empty (no
    /// session is read for it: the fast listing).
    #[default]
    Facts,
    /// Also pi's `allMessagesText`, read from every session listed.
    WithText,
}

/// A listing to make ([`Sessions::listing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListRequest {
    /// The sessions to list.
    pub scope: Scope,
    /// What to fill in of each.
    pub detail: ListDetail,
}

impl ListRequest {
    /// The listing facts of the sessions of `scope`.
    pub fn new(scope: Scope) -> ListRequest {
        ListRequest { scope, detail: ListDetail::Facts }
    }

    /// With pi's `allMessagesText` of each session too.
    pub fn with_text(mut self) -> ListRequest {
        self.detail = ListDetail::WithText;
        self
    }
}

/// Whether a search first brings the search index up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Freshness {
    /// The index is brought up to date first: the answer is what the
    /// sessions hold now (the default).
    #[default]
    Refresh,
    /// The index as it stands: what was written since the last update may
    /// be missing. For an interface that updates the index on another
    /// thread ([`Sessions::update_index`]) and must answer at once.
    AsIs,
}

/// Whether a search goes on after the hits it handed on ([`Sessions::search_each`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Go,
    /// Stop: the hits so far are the answer.
    Stop,
}

/// The hits a search returns unless told otherwise.
pub const DEFAULT_LIMIT: usize = 20;

/// A search to run ([`Sessions::search`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchRequest {
    /// The query, in pi's picker syntax ([`parse_query`]).
    pub query: String,
    /// The sessions to search.
    pub scope: Scope,
    /// The most hits to return.
    pub limit: usize,
    /// Whether the index is brought up to date first.
    pub freshness: Freshness,
    /// Fuzzy hits after the exact ones ([`Relevance::Fuzzy`]); without it
    /// they come only when nothing matches exactly.
    pub fuzzy: bool,
}

impl SearchRequest {
    /// A search for `query` in the sessions of `scope`, at most
    /// [`DEFAULT_LIMIT`] hits, on an index brought up to date first, fuzzy
    /// hits only when there is no exact one.
    pub fn new(query: impl Into<String>, scope: Scope) -> SearchRequest {
        SearchRequest { query: query.into(), scope, limit: DEFAULT_LIMIT, freshness: Freshness::Refresh, fuzzy: false }
    }

    /// Fuzzy hits after the exact ones too.
    pub fn fuzzy(mut self) -> SearchRequest {
        self.fuzzy = true;
        self
    }

    /// At most `limit` hits.
    pub fn limit(mut self, limit: usize) -> SearchRequest {
        self.limit = limit;
        self
    }

    /// On the index as it stands ([`Freshness::AsIs`]).
    pub fn as_is(mut self) -> SearchRequest {
        self.freshness = Freshness::AsIs;
        self
    }
}

/// What can go wrong with a backend's sessions.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// No session has this name.
    #[error("{location}: no session {name}")]
    NotFound {
        /// The backend ([`Sessions::location`]).
        location: String,
        /// The name as given.
        name: String,
    },
    /// A name (an id prefix, a file name) that several sessions match.
    #[error("{location}: {name} names {count} sessions ({}); give more of the id or DIR/FILE", listed(candidates, *count))]
    Ambiguous {
        /// The backend ([`Sessions::location`]).
        location: String,
        /// The name as given.
        name: String,
        /// How many sessions match: all of them, not only those listed.
        count: usize,
        /// The first of them (at most [`SHOWN`]), as `DIR/FILE`.
        candidates: Vec<String>,
    },
    /// A name that cannot be one component of a session's path
    /// ([`check_component`]).
    #[error("{name:?} cannot name a session: {reason}")]
    BadName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A search query that does not parse (an empty or invalid `re:` pattern).
    #[error("invalid search query: {0}")]
    Query(String),
    /// The tree model or its store failed (reading a session).
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The backend itself failed (a catalog, a server): its own error, kept
    /// as the source (downcast it to the backend's error type).
    #[error(transparent)]
    Backend(Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl SessionsError {
    /// A backend's own error.
    pub fn backend(e: impl std::error::Error + Send + Sync + 'static) -> SessionsError {
        SessionsError::Backend(Box::new(e))
    }
}

/// `a, b, … and N more`.
fn listed(candidates: &[String], count: usize) -> String {
    let mut s = candidates.join(", ");
    if count > candidates.len() {
        s.push_str(&format!(", and {} more", count - candidates.len()));
    }
    s
}

/// The sessions of one backend: listing, search, names, following and where
/// new sessions go (see the module docs). Object-safe and shared across
/// threads (`Arc<dyn Sessions>`).
pub trait Sessions: Send + Sync + fmt::Debug {
    /// Where the sessions are, as messages name them: the sessions root, or
    /// the server's address (never with its password).
    fn location(&self) -> String;

    /// The options to open this backend's sessions with: its store and its
    /// sessions root (new sessions go under it), the rest as
    /// [`SessionOptions::default`] has them (no index cache unless the
    /// caller names one).
    fn session_options(&self) -> SessionOptions;

    /// pi's `SessionInfo` of the sessions of `request.scope`, newest first
    /// (by modification time, then by path), as they are now.
    fn listing(&self, request: &ListRequest, progress: &dyn Progress) -> Result<Vec<SessionListInfo>, SessionsError>;

    /// The entries of the sessions of `request.scope` whose text matches
    /// `request.query`, at most `request.limit`, in the one order every
    /// backend gives: exact hits before fuzzy ones ([`Relevance`]); sessions
    /// newest first (pi's `modified`, ties by `DIR/FILE`), and in a session
    /// its entries last line first. With the marks of the active path and the
    /// labels on each hit's path.
    fn search(&self, request: &SearchRequest, progress: &dyn Progress) -> Result<Vec<Hit>, SessionsError>;

    /// [`Sessions::search`], handing the hits on as they are found (in the
    /// answer's order, a session at a time, possibly none), so that an
    /// interface shows them before the search ends; it stops early when
    /// `on_hits` says [`Flow::Stop`]. By default, all at once at the end.
    fn search_each(
        &self,
        request: &SearchRequest,
        progress: &dyn Progress,
        on_hits: &mut dyn FnMut(&[Hit]) -> Flow,
    ) -> Result<Vec<Hit>, SessionsError> {
        let hits = self.search(request, progress)?;
        on_hits(&hits);
        Ok(hits)
    }

    /// Brings the search index of `scope` up to date (what a search with
    /// [`Freshness::Refresh`] does first), so that searches
    /// [`Freshness::AsIs`] find what the sessions hold now.
    fn update_index(&self, scope: &Scope, progress: &dyn Progress) -> Result<(), SessionsError>;

    /// The session `name` means, as this backend names it (open it with
    /// [`Sessions::session_options`]): a path of the backend, `DIR/FILE` (pi's
    /// cwd folder and file name), a file name, a session id or a unique
    /// prefix of one. An id or file name that no session has is
    /// [`SessionsError::NotFound`]; one that several have is
    /// [`SessionsError::Ambiguous`] (a whole id wins over the ids it begins).
    fn resolve(&self, name: &str) -> Result<PathBuf, SessionsError>;

    /// Starts following `session` (a path [`Sessions::resolve`] gave): the
    /// follower, and the session's whole lines as they are now (none with
    /// [`FollowFrom::End`]).
    fn follow(&self, session: &Path, from: FollowFrom) -> Result<(Box<dyn Follow>, Vec<u8>), SessionsError>;

    /// Where a new session file `file_name` for working directory `cwd`
    /// goes in this backend (pi's layout: `<root>/<encoded cwd>/<file_name>`).
    /// Both names are checked ([`check_component`]) before they become a
    /// path; nothing is created.
    fn import_into(&self, cwd: &str, file_name: &str) -> Result<PathBuf, SessionsError>;

    /// Warnings since the last call (a damaged catalog built again, one kept
    /// in memory), one line each. None by default.
    fn take_warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// [`Sessions::import_into`] for a backend whose sessions live at
/// `<root>/<encoded cwd>/<file_name>`: both names checked.
pub fn path_under(root: &Path, cwd: &str, file_name: &str) -> Result<PathBuf, SessionsError> {
    let dir = crate::paths::encode_cwd(cwd);
    check_component(&dir)?;
    check_component(file_name)?;
    Ok(root.join(dir).join(file_name))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn new_sessions_go_under_the_cwd_folder_and_bad_names_are_refused() {
        let root = Path::new("/r");
        assert_eq!(path_under(root, "/home/me", "a.jsonl").unwrap(), Path::new("/r/--home-me--/a.jsonl"));
        for bad in ["../x.jsonl", "x/y.jsonl", "", ".."] {
            let e = path_under(root, "/home/me", bad).unwrap_err();
            assert!(matches!(e, SessionsError::BadName { .. }), "{bad:?}: {e}");
        }
        assert!(path_under(root, "/a\0b", "a.jsonl").is_err(), "a NUL in the cwd");
    }

    #[test]
    fn the_trait_is_object_safe_and_shared() {
        fn shared<T: Send + Sync + ?Sized>() {}
        shared::<dyn Sessions>();
        shared::<SessionsError>();
    }
}
