//! The error type of this crate: only I/O fails; bad data is a diagnostic.

use std::io;
use std::path::PathBuf;

/// A failure to read or write a log.
///
/// ```
/// use arbor_log::{LogError, SessionLog};
/// use std::path::Path;
///
/// let err = SessionLog::read_path(Path::new("/no/such/session.jsonl")).unwrap_err();
/// assert!(matches!(err, LogError::Io { .. }));
/// assert!(err.to_string().starts_with("/no/such/session.jsonl: "));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// An I/O error on a named file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
    /// A path that names something other than a regular file (a FIFO, a device, a directory).
    #[error("{}: not a regular file ({kind}); Arbor reads and writes only regular files", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead ("a FIFO", "a character device", …).
        kind: &'static str,
    },
    /// A loop of symbolic links.
    #[error("{}: a loop of symbolic links", path.display())]
    LinkLoop {
        /// The path.
        path: PathBuf,
    },
    /// A symbolic link where Arbor keeps a file of its own beside a session.
    #[error("{}: a symbolic link where Arbor keeps the session's {what}; Arbor never writes through it (remove the link and try again)", path.display())]
    LinkInTheWay {
        /// The link.
        path: PathBuf,
        /// What Arbor keeps there ("write lock", …).
        what: &'static str,
    },
    /// A file where Arbor keeps one of its own (the write lock) that is not
    /// one Arbor made: another name of some other file (a hard link), another
    /// user's file, or content that is no lock record. Nothing was written to it.
    #[error("{}: not Arbor's {what} ({why}); Arbor never writes into it (remove it and try again)", path.display())]
    NotOurs {
        /// The file.
        path: PathBuf,
        /// What Arbor keeps there ("write lock", …).
        what: &'static str,
        /// Why it is not Arbor's.
        why: String,
    },
    /// A file its owner may not write: nothing was changed.
    #[error("{}: the file is read-only (mode {mode:04o}); nothing was written (make it writable, e.g. `chmod u+w`, to change it)", path.display())]
    ReadOnly {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A file with other names (hard links) that a rewrite would split from them.
    #[error("{}: the file has {names} names (hard links); replacing it would leave the others on the old content, so nothing was written (copy it with `cp` and work on the copy, or remove the other names)", path.display())]
    HardLinked {
        /// The file.
        path: PathBuf,
        /// How many names it has.
        names: u64,
    },
    /// A value could not be encoded (never happens for values read from JSON).
    #[error("cannot encode entry: {0}")]
    Encode(#[from] serde_json::Error),
}

impl LogError {
    /// Wraps an I/O error with the file it happened on.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        LogError::Io { path: path.into(), source }
    }
}
