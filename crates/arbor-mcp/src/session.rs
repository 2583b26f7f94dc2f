//! Sessions and entries as the tools name them: a session by what
//! [`Sessions::resolve`] takes (a path, `DIR/FILE`, a file name, an id or a
//! unique prefix of one), an entry by its id or a unique prefix of it.

use std::path::{Path, PathBuf};

use arbor_tree::sessions::Sessions;
use arbor_tree::{OpenMode, Position, Session, SessionOptions};

use crate::error::ToolError;

/// The session `name` means, opened read-only with `opts` (through its
/// index when `opts` names an index directory).
pub fn open_read(sessions: &dyn Sessions, opts: &SessionOptions, name: &str) -> Result<(PathBuf, Session), ToolError> {
    let path = resolve(sessions, name)?;
    let s = Session::open(&path, OpenMode::ReadOnly, opts.clone())?;
    Ok((path, s))
}

/// The session `name` means.
pub fn resolve(sessions: &dyn Sessions, name: &str) -> Result<PathBuf, ToolError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ToolError::Argument("no session given: name one by id, id prefix, file name or path".into()));
    }
    Ok(sessions.resolve(name)?)
}

/// The position of the entry `id` names in `s` (of the session at `path`):
/// its whole id, else the one entry whose id begins with it.
pub fn entry(s: &Session, path: &Path, id: &str) -> Result<Position, ToolError> {
    let id = id.trim();
    if id.is_empty() {
        return Err(ToolError::Argument("no entry given: name one by its id or a prefix of it".into()));
    }
    if let Some(p) = s.position_of(id) {
        return Ok(p);
    }
    let mut found: Vec<(Position, String)> = Vec::new();
    let mut count = 0usize;
    s.for_each_id(s.positions(), |p, e| {
        if e.starts_with(id) {
            count += 1;
            if found.len() < 5 {
                found.push((p, e.to_owned()));
            }
        }
    });
    match (count, found.first()) {
        (1, Some((p, _))) => Ok(*p),
        (0, _) => Err(ToolError::Entry(format!("{}: no entry {id}", path.display()))),
        _ => {
            let listed: Vec<&str> = found.iter().map(|(_, e)| e.as_str()).collect();
            let more =
                if count > listed.len() { format!(", and {} more", count - listed.len()) } else { String::new() };
            Err(ToolError::Entry(format!(
                "{}: {id} begins {count} entry ids ({}{more}); give more of the id",
                path.display(),
                listed.join(", ")
            )))
        }
    }
}

/// The id of the entry at `p`.
pub fn id_at(s: &Session, p: Position) -> String {
    s.id_at(p).map(|id| id.to_string()).unwrap_or_default()
}

/// A note on what a damaged file lost, for the head of an answer (none for a sound file).
pub fn damage_note(s: &Session) -> Option<String> {
    let n = s.diagnostics().len();
    (n > 0)
        .then(|| format!("note: {n} line(s) of this session could not be read as entries (`arbor check` names them)"))
}
