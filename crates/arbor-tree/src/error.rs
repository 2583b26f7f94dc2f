//! The error type of `arbor-tree`, with the reference's exact messages where it has them.

use std::path::PathBuf;

use arbor_log::LogError;

/// What can go wrong in the tree model and its storage.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// An id that is not in the session (`branch`, `branch_with_summary`, labels, `create_branched_session`).
    #[error("Entry {0} not found")]
    NotFound(String),
    /// `fork_from` on a source without usable content.
    #[error("Cannot fork: source session file is empty or invalid: {}", .0.display())]
    ForkSourceInvalid(PathBuf),
    /// `fork_from` on a source without a header.
    #[error("Cannot fork: source session has no header: {}", .0.display())]
    ForkSourceNoHeader(PathBuf),
    /// Another process holds the write lock.
    #[error("{}: session is open for writing by another process{}; open it read-only or close the other writer", path.display(), holder.as_ref().map(|h| format!(" ({h})")).unwrap_or_default())]
    Locked {
        /// The session file.
        path: PathBuf,
        /// Who holds the lock, when the store can tell.
        holder: Option<LockHolder>,
    },
    /// The write lock cannot be made beside the session (its directory is not writable).
    #[error("{}: cannot create the write lock {} ({source}); Arbor writes a session only while holding it: make {} writable, or open the session read-only", path.display(), lock.display(), dir.display())]
    LockDirectory {
        /// The session file.
        path: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// The directory it goes in.
        dir: PathBuf,
        /// Why it could not be made.
        #[source]
        source: std::io::Error,
    },
    /// A write was attempted on a session opened read-only.
    #[error("{}: session is open read-only", .0.display())]
    ReadOnly(PathBuf),
    /// A file that has no usable header (refused by every open mode but pi's recovery).
    #[error("{}{}: not a session file: {reason}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    NoHeader {
        /// The file, as the caller named it.
        path: PathBuf,
        /// The line of the first record, when there is one.
        line: Option<usize>,
        /// What the first record is instead.
        reason: String,
    },
    /// A new session for a cwd, with options that name neither a sessions
    /// root nor a session directory.
    #[error("no directory for new sessions of {cwd}: the options name no sessions root (SessionOptions::sessions_root) and no session directory")]
    NoSessionsRoot {
        /// The working directory the session was for.
        cwd: String,
    },
    /// A file that does not exist, opened in a mode that does not create one.
    #[error("{}: no such session file", .0.display())]
    Missing(PathBuf),
    /// An earlier write failed; the session refuses further writes until reopened.
    #[error("an earlier write failed, the session no longer accepts writes: {0}")]
    Poisoned(String),
    /// The file changed behind an open session in a way it cannot answer
    /// from (truncated, or rewritten before its end; lines appended are
    /// read on): open the session again (or [`crate::Session::read_again`]).
    #[error("{}{}: changed since the session was opened ({what}); open it again", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Changed {
        /// The session file.
        path: PathBuf,
        /// The line being read when the change was found, when one was.
        line: Option<usize>,
        /// What changed, in a few words.
        what: String,
    },
    /// I/O on the log.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A store that is not the local file system failed (a server that cannot
    /// be reached, a connection lost during a write): its own one-line reason.
    #[error("{}: {source}", path.display())]
    Storage {
        /// The session, as the store names it.
        path: PathBuf,
        /// What went wrong, in the store's words.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Who holds a session's write lock: a process, and the machine it runs on
/// when the store knows it (a lock on a server is held from any machine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    /// The holder's process id.
    pub pid: u32,
    /// The holder's host name, when the store records it.
    pub host: Option<String>,
}

impl LockHolder {
    /// A holder known by its pid only (a local lock file).
    pub fn pid(pid: u32) -> LockHolder {
        LockHolder { pid, host: None }
    }
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {}", self.pid)?;
        if let Some(h) = &self.host {
            write!(f, " on {h}")?;
        }
        Ok(())
    }
}

impl TreeError {
    pub(crate) fn io(path: impl Into<PathBuf>, e: std::io::Error) -> TreeError {
        TreeError::Log(LogError::io(path, e))
    }
}
