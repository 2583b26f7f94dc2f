//! [`PgError`]: what can go wrong between Arbor and the server, each a clear
//! line naming the server (its URL without a password) and, where there is
//! one, the session or local file at fault.

use std::path::{Path, PathBuf};

use arbor_tree::TreeError;

/// What can go wrong with sessions on a PostgreSQL server.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The store's address is not a PostgreSQL connection string.
    #[error("not a PostgreSQL address ({reason}): {url}")]
    Url {
        /// The address as given (without a password).
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server could not be reached, or refused the connection.
    #[error("cannot reach the PostgreSQL server at {server}: {reason}")]
    Connect {
        /// The server's URL, without a password.
        server: String,
        /// Why, in the driver's or the server's words.
        reason: String,
    },
    /// The connection dropped while a write was under way. The write was one
    /// transaction: the session holds all of it or none of it.
    #[error(
        "the connection to the PostgreSQL server at {server} dropped during a write ({reason}); \
         the session holds the whole write or none of it: run the command again"
    )]
    LostDuringWrite {
        /// The server's URL, without a password.
        server: String,
        /// Why, in the driver's words.
        reason: String,
    },
    /// The connection dropped during an append, and what reconnecting told
    /// about it (its write token found or not, see [`crate::PgStore`]).
    #[error("the connection to the PostgreSQL server at {server} dropped during a write ({reason}); {outcome}")]
    LostWrite {
        /// The server's URL, without a password.
        server: String,
        /// Why, in the driver's words.
        reason: String,
        /// Whether the write was committed, and what to do.
        outcome: String,
    },
    /// The connection dropped (outside a write), or a query failed.
    #[error("PostgreSQL server at {server}: {reason}")]
    Server {
        /// The server's URL, without a password.
        server: String,
        /// What the server or the driver said.
        reason: String,
    },
    /// The server's schema was made by a newer Arbor.
    #[error(
        "the Arbor schema on {server} is at version {found}, newer than this arbor knows ({known}): upgrade arbor"
    )]
    NewerSchema {
        /// The server's URL, without a password.
        server: String,
        /// The newest migration applied on the server.
        found: i32,
        /// The newest migration this build knows.
        known: i32,
    },
    /// No session on the server has this name.
    #[error("{server}: no session {name}")]
    NoSession {
        /// The server's URL, without a password.
        server: String,
        /// The name as given.
        name: String,
    },
    /// A session id prefix names several sessions.
    #[error(
        "{server}: {name} names {total} sessions ({}{}); give more of the id or DIR/FILE",
        candidates.join(", "),
        more(*total, candidates.len())
    )]
    Ambiguous {
        /// The server's URL, without a password.
        server: String,
        /// The name as given.
        name: String,
        /// How many sessions it names in all.
        total: u64,
        /// The first sessions it could mean (`DIR/FILE`), at most eight.
        candidates: Vec<String>,
    },
    /// A session name that is not one folder and one file name
    /// ([`crate::SessionKey::check`]): nothing was read or written under it.
    #[error("{server}: session {name}: not a safe name ({reason}); refused")]
    BadName {
        /// The server's URL, without a password.
        server: String,
        /// The name, escaped for a terminal.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A push or pull that would lose lines: nothing was written.
    #[error("{name}: {reason}")]
    Refused {
        /// The local file or session at fault.
        name: String,
        /// Why, and what to do.
        reason: String,
    },
    /// A write the arbor-tree seam refused (a live writer holds the session).
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// A local file of a push or pull.
    #[error("{}: {source}", path.display())]
    Local {
        /// The local file.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
}

/// `, and N more` when `total` is more than the `shown` (as
/// `arbor_tree::sessions::SessionsError::Ambiguous` says it).
fn more(total: u64, shown: usize) -> String {
    match total.checked_sub(shown as u64) {
        Some(n) if n > 0 => format!(", and {n} more"),
        _ => String::new(),
    }
}

impl PgError {
    /// This error as the tree model reports it for `path`.
    pub(crate) fn into_tree(self, path: &Path) -> TreeError {
        match self {
            PgError::Tree(e) => e,
            other => TreeError::Storage { path: path.to_owned(), source: Box::new(other) },
        }
    }

    pub(crate) fn local(path: &Path, source: std::io::Error) -> PgError {
        PgError::Local { path: path.to_owned(), source }
    }

    /// True when the connection is gone (the next use reconnects).
    pub fn is_connection_lost(&self) -> bool {
        matches!(self, PgError::LostDuringWrite { .. } | PgError::LostWrite { .. } | PgError::Connect { .. })
    }
}

/// The driver's error in one line: the server's message for a database
/// error, else the deepest cause (an I/O error: "Connection refused (os
/// error 111)"), else the driver's own words ("connection closed").
pub(crate) fn reason(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = db.message().to_owned();
        if db.code() == &postgres::error::SqlState::QUERY_CANCELED && s.contains("statement timeout") {
            s.push_str(&format!(
                " (the server's statement_timeout: Arbor's statements may run {} s unless the address's options set it, \
                 e.g. options=-c%20statement_timeout=600s)",
                crate::settings::STATEMENT_TIMEOUT.as_secs()
            ));
        }
        if let Some(d) = db.detail() {
            s.push_str(" (");
            s.push_str(d);
            s.push(')');
        }
        return s;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    let mut last = None;
    while let Some(c) = cause {
        last = Some(c);
        cause = c.source();
    }
    match last {
        Some(c) => c.to_string(),
        None => e.to_string(),
    }
}

/// What the queries of this crate fail with, before they are worded for the user.
#[derive(Debug)]
pub(crate) enum SqlError {
    Pg(postgres::Error),
    NewerSchema {
        found: i32,
        known: i32,
    },
    /// Something that cannot happen inside one transaction happened.
    Invariant(String),
    Other(PgError),
}

impl From<postgres::Error> for SqlError {
    fn from(e: postgres::Error) -> Self {
        SqlError::Pg(e)
    }
}

impl From<PgError> for SqlError {
    fn from(e: PgError) -> Self {
        SqlError::Other(e)
    }
}
