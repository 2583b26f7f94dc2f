//! Session names: a name that becomes part of a path is checked first
//! ([`check_component`]), and a name a person gives is matched to the one
//! session it means ([`choose`]), or refused with every match counted.

use std::path::{Component, Path, PathBuf};

use super::SessionsError;

/// How many sessions an ambiguous name lists (the error still counts them all).
pub const SHOWN: usize = 8;

/// Checks that `name` is one usable component of a session's path (a
/// directory or a file name): not empty, not `.` or `..`, no path separator
/// (`/` or `\`), no NUL, nothing absolute or with a drive. Every name that
/// comes from data (a session row, a transcript's cwd, a file name) goes
/// through it before it becomes a path.
///
/// ```
/// use arbor_tree::sessions::check_component;
///
/// assert!(check_component("2026-01-01T00-00-00-000Z_abc.jsonl").is_ok());
/// for bad in ["", "..", "a/b", "..\\x", "/etc", "a\0b"] {
///     assert!(check_component(bad).is_err(), "{bad:?}");
/// }
/// ```
pub fn check_component(name: &str) -> Result<(), SessionsError> {
    let reason = if name.is_empty() {
        "it is empty"
    } else if name.contains('\0') {
        "it holds a NUL character"
    } else if name.contains('/') || name.contains('\\') {
        "it holds a path separator"
    } else if name == "." || name == ".." {
        "it names a directory, not an entry of one"
    } else {
        let mut parts = Path::new(name).components();
        match (parts.next(), parts.next()) {
            (Some(Component::Normal(_)), None) => return Ok(()),
            _ => "it is not a single plain name",
        }
    };
    Err(SessionsError::BadName { name: name.to_owned(), reason })
}

/// A session that a name matched (see [`choose`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The session, as its backend names it.
    pub path: PathBuf,
    /// How messages show it (`DIR/FILE`).
    pub shown: String,
    /// True when the name is the session's whole id (not a prefix of it).
    pub exact: bool,
}

/// The one session `name` means, of the `count` sessions that matched it:
/// `candidates` holds the first of them (at least [`SHOWN`] + 1 when there
/// are that many), exact ids first. A whole id wins over the ids it is a
/// prefix of; no match is [`SessionsError::NotFound`]; several are
/// [`SessionsError::Ambiguous`], with the true `count`.
pub fn choose(location: &str, name: &str, count: usize, candidates: Vec<Candidate>) -> Result<PathBuf, SessionsError> {
    let mut exact = candidates.iter().filter(|c| c.exact);
    if let (Some(one), None) = (exact.next(), exact.next()) {
        return Ok(one.path.clone());
    }
    let count = count.max(candidates.len());
    let mut candidates = candidates.into_iter();
    match (count, candidates.next()) {
        (_, None) => Err(SessionsError::NotFound { location: location.to_owned(), name: name.to_owned() }),
        (1, Some(one)) => Ok(one.path),
        (count, Some(first)) => Err(SessionsError::Ambiguous {
            location: location.to_owned(),
            name: name.to_owned(),
            count,
            candidates: std::iter::once(first).chain(candidates).take(SHOWN).map(|c| c.shown).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn c(shown: &str, exact: bool) -> Candidate {
        Candidate { path: PathBuf::from(format!("/{shown}")), shown: shown.to_owned(), exact }
    }

    #[test]
    fn one_match_or_one_whole_id_wins_and_several_are_counted() {
        assert_eq!(choose("r", "ab", 1, vec![c("d/a", false)]).unwrap(), Path::new("/d/a"));
        assert_eq!(choose("r", "ab", 3, vec![c("d/x", true), c("d/y", false)]).unwrap(), Path::new("/d/x"));
        let e = choose("r", "zz", 0, vec![]).unwrap_err();
        assert!(matches!(e, SessionsError::NotFound { .. }), "{e}");
        assert_eq!(e.to_string(), "r: no session zz");
        let many: Vec<Candidate> = (0..SHOWN + 1).map(|i| c(&format!("d/{i}"), false)).collect();
        let e = choose("r", "0", 301, many).unwrap_err();
        let SessionsError::Ambiguous { count, candidates, .. } = &e else { panic!("{e}") };
        assert_eq!((*count, candidates.len()), (301, SHOWN));
        let text = e.to_string();
        assert!(text.starts_with("r: 0 names 301 sessions (d/0, d/1,") && text.contains("and 293 more"), "{text}");
        let e = choose("r", "0", 2, vec![c("d/x", true), c("e/x", true)]).unwrap_err();
        assert!(matches!(e, SessionsError::Ambiguous { count: 2, .. }), "two whole ids: {e}");
    }
}
