//! Writing an imported session: created, left unchanged, extended with the
//! lines a grown transcript adds, or replaced atomically with the same ids.

use std::io::Read;
use std::path::{Path, PathBuf};

use arbor_log::files::is_link;
use arbor_log::LogError;
use arbor_tree::{FileStore, Store};
use serde::Serialize;
use serde_json::Value;

use crate::InteropError;

/// What an import did to a session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The file was new.
    Created,
    /// The file already held exactly this import.
    Unchanged,
    /// The file held an import of an earlier part of the transcript; the new entries were appended.
    Extended,
    /// The file held an earlier import whose entries changed (say, a reply
    /// completed by later lines); it was replaced atomically, with the same
    /// ids, after a backup copy.
    Replaced,
}

#[derive(Debug)]
pub(crate) struct Written {
    pub outcome: Outcome,
    pub written: usize,
    pub backup: Option<PathBuf>,
}

/// Writes `lines` (header first) to `path`; see [`Outcome`]. A file holding
/// entries that the import does not make (a session continued after its
/// import) is left alone: [`InteropError::Diverged`].
///
/// The path is predictable (the transcript's cwd, time and id), so a link
/// planted there, or at its directory, is refused and never followed; a new
/// file is created exclusively (written aside, then linked in under its
/// name only if that name is still free).
pub(crate) fn write_session(path: &Path, lines: &[String]) -> Result<Written, InteropError> {
    let store = FileStore;
    refuse_links(path)?;
    if present(path)? && read_lines(path)? == lines {
        return Ok(Written { outcome: Outcome::Unchanged, written: 0, backup: None });
    }
    if let Some(dir) = path.parent() {
        store.create_dir_all(dir)?;
    }
    refuse_links(path)?;
    let _lock = store.lock(path)?;
    refuse_links(path)?;
    if !present(path)? {
        arbor_log::writer::create_exclusive(path, joined(lines).as_bytes())?;
        return Ok(Written { outcome: Outcome::Created, written: lines.len() - 1, backup: None });
    }
    let existing = read_lines(path)?;
    if existing == lines {
        return Ok(Written { outcome: Outcome::Unchanged, written: 0, backup: None });
    }
    if !existing.is_empty() && lines.starts_with(&existing) {
        let rest = &lines[existing.len()..];
        let (mut handle, _repair) = store.open_append(path, arbor_log::writer::Durability::Fsync)?;
        handle.append(joined(rest).as_bytes())?;
        return Ok(Written { outcome: Outcome::Extended, written: rest.len(), backup: None });
    }
    let new_ids: std::collections::HashSet<String> = lines.iter().skip(1).filter_map(|l| id_of(l)).collect();
    let foreign = existing.iter().skip(1).filter(|l| id_of(l).is_none_or(|id| !new_ids.contains(&id))).count();
    if foreign > 0 {
        return Err(InteropError::Diverged { path: path.to_owned(), foreign });
    }
    let backup = store.backup(path, "backup")?;
    store.rewrite(path, joined(lines).as_bytes())?;
    Ok(Written { outcome: Outcome::Replaced, written: lines.len() - 1, backup: Some(backup) })
}

/// Refuses a symbolic link at the session file `path` or at its directory
/// (the `--cwd--` folder the import names): Arbor never writes through one.
fn refuse_links(path: &Path) -> Result<(), InteropError> {
    if is_link(path) {
        return Err(LogError::LinkInTheWay { path: path.to_owned(), what: "file" }.into());
    }
    match path.parent() {
        Some(dir) if is_link(dir) => Err(LogError::LinkInTheWay { path: dir.to_owned(), what: "directory" }.into()),
        _ => Ok(()),
    }
}

/// True when something is at `path` (a link is not followed).
fn present(path: &Path) -> Result<bool, InteropError> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(InteropError::io(path, e)),
    }
}

fn joined(lines: &[String]) -> String {
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

/// The file's complete lines (an unfinished last line is left out).
fn read_lines(path: &Path) -> Result<Vec<String>, InteropError> {
    let mut text = String::new();
    arbor_log::files::open_read(path)?.read_to_string(&mut text).map_err(|e| InteropError::io(path, e))?;
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    lines.pop();
    Ok(lines)
}

fn id_of(line: &str) -> Option<String> {
    serde_json::from_str::<Value>(line).ok()?.get("id")?.as_str().map(str::to_owned)
}
