//! What went wrong, sorted into the few kinds a binding raises as errors of
//! its own language, each with the library's one-line message.

use std::fmt;
use std::path::Path;

use arbor_tree::sessions::SessionsError;
use arbor_tree::TreeError;

/// A failure of the library, or of an argument a binding was given, as one
/// kind and one line (naming the file, entry or name at fault).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Another process holds the session's write lock.
    Locked {
        /// The one-line message (naming the file and the holder).
        message: String,
        /// The session file.
        path: String,
        /// The holder's process id, when the lock says.
        pid: Option<u32>,
        /// The holder's host, when the store records it.
        host: Option<String>,
    },
    /// A session file, an entry id or a session name that does not exist.
    NotFound(String),
    /// A name (an id prefix, a file name) that several sessions have.
    Ambiguous {
        /// The one-line message (naming the first candidates).
        message: String,
        /// How many sessions match.
        count: usize,
        /// The first of them, as `DIR/FILE`.
        candidates: Vec<String>,
    },
    /// A write to a session opened read-only.
    ReadOnly(String),
    /// A file that exists but is not a session (no usable header).
    NotASession(String),
    /// A search query that does not parse.
    Query(String),
    /// An argument that cannot be used: an open mode, a message that is not
    /// a JSON object, a name that cannot be part of a path.
    Invalid(String),
    /// Anything else (I/O, the catalog, a failed write), in the library's words.
    Other(String),
}

impl Failure {
    /// The one-line message.
    pub fn message(&self) -> &str {
        match self {
            Failure::Locked { message, .. } | Failure::Ambiguous { message, .. } => message,
            Failure::NotFound(m)
            | Failure::ReadOnly(m)
            | Failure::NotASession(m)
            | Failure::Query(m)
            | Failure::Invalid(m)
            | Failure::Other(m) => m,
        }
    }

    /// A failure of the tree model on the session `file` (an entry that is
    /// not found is named with the file, as the `arbor` command names it).
    pub fn of_tree(e: TreeError, file: Option<&Path>) -> Failure {
        let at = |m: String| match file {
            Some(f) => format!("{}: {m}", f.display()),
            None => m,
        };
        match e {
            TreeError::Locked { ref path, ref holder } => Failure::Locked {
                message: e.to_string(),
                path: path.display().to_string(),
                pid: holder.as_ref().map(|h| h.pid),
                host: holder.as_ref().and_then(|h| h.host.clone()),
            },
            TreeError::NotFound(_) => Failure::NotFound(at(e.to_string())),
            TreeError::Missing(_) => Failure::NotFound(e.to_string()),
            TreeError::ReadOnly(_) => Failure::ReadOnly(e.to_string()),
            TreeError::NoHeader { .. } => Failure::NotASession(e.to_string()),
            TreeError::NoSessionsRoot { .. } => Failure::Invalid(e.to_string()),
            e => Failure::Other(one_line(&e)),
        }
    }

    /// A failure of a backend's sessions.
    pub fn of_sessions(e: SessionsError) -> Failure {
        match e {
            SessionsError::NotFound { .. } => Failure::NotFound(e.to_string()),
            SessionsError::Ambiguous { count, ref candidates, .. } => {
                Failure::Ambiguous { message: e.to_string(), count, candidates: candidates.clone() }
            }
            SessionsError::BadName { .. } => Failure::Invalid(e.to_string()),
            SessionsError::Query(_) => Failure::Query(e.to_string()),
            SessionsError::Tree(t) => Failure::of_tree(t, None),
            e => Failure::Other(one_line(&e)),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Failure {}

/// An error and its causes on one line, each cause once (a message that
/// already ends with its cause's text does not repeat it).
fn one_line(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        cause = c.source();
    }
    msg.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_tree::LockHolder;
    use std::path::PathBuf;

    #[test]
    fn each_library_error_has_its_kind_and_names_what_is_at_fault() {
        let file = Path::new("/s/a.jsonl");
        let locked = TreeError::Locked { path: file.into(), holder: Some(LockHolder::pid(4242)) };
        match Failure::of_tree(locked, Some(file)) {
            Failure::Locked { message, path, pid, host } => {
                assert!(message.contains("pid 4242"), "{message}");
                assert_eq!((path.as_str(), pid, host), ("/s/a.jsonl", Some(4242), None));
            }
            other => panic!("{other:?}"),
        }
        let missing = Failure::of_tree(TreeError::NotFound("abc".into()), Some(file));
        assert_eq!(missing, Failure::NotFound("/s/a.jsonl: Entry abc not found".into()));
        let gone = Failure::of_tree(TreeError::Missing(PathBuf::from("/s/b.jsonl")), None);
        assert!(matches!(gone, Failure::NotFound(ref m) if m.starts_with("/s/b.jsonl")), "{gone:?}");
        let ro = Failure::of_tree(TreeError::ReadOnly(file.into()), None);
        assert!(matches!(ro, Failure::ReadOnly(_)));
        let bad = SessionsError::BadName { name: "../x".into(), reason: "it climbs out" };
        assert!(matches!(Failure::of_sessions(bad), Failure::Invalid(_)));
        let many = SessionsError::Ambiguous {
            location: "/s".into(),
            name: "0b".into(),
            count: 3,
            candidates: vec!["--w--/a.jsonl".into(), "--w--/b.jsonl".into()],
        };
        match Failure::of_sessions(many) {
            Failure::Ambiguous { message, count, candidates } => {
                assert_eq!((count, candidates.len()), (3, 2));
                assert!(message.contains("and 1 more"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
