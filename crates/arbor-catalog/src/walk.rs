//! The session files under a sessions root, with one `stat` each.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::CatalogError;
use crate::stamp::Stat;
use arbor_tree::sessions::Scope;

/// One session file found under the root.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// `DIR/FILE.jsonl`.
    pub rel: String,
    pub dir: String,
    pub stat: Stat,
}

/// A file's path from its path under `root` (`DIR/FILE.jsonl`).
pub(crate) fn path_under(root: &Path, rel: &str) -> PathBuf {
    rel.split('/').fold(root.to_owned(), |p, part| p.join(part))
}

/// The `.jsonl` files of the scope's directories, with their stats, as pi
/// finds them: the root's directories (a link to a directory is not one, so
/// no link leads out of the root or round in a loop), and in each, every
/// name ending in `.jsonl` that is a regular file or a link to one. A
/// directory that cannot be read is left out with a warning.
pub(crate) fn walk(root: &Path, scope: &Scope, warnings: &mut Vec<String>) -> Result<Vec<Found>, CatalogError> {
    let dirs = match scope {
        Scope::Dir(d) => vec![d.clone()],
        Scope::All => {
            let mut dirs = vec![];
            for ent in read_dir(root)? {
                let ent = ent.map_err(|e| CatalogError::io(root, e))?;
                if ent.file_type().is_ok_and(|t| t.is_dir()) {
                    if let Some(name) = ent.file_name().to_str() {
                        dirs.push(name.to_owned());
                    }
                }
            }
            dirs
        }
    };
    // The directories' entries on two threads (a `stat` each): a large root
    // spends its refresh here.
    if dirs.len() < 8 {
        let (out, mut w) = files_of(root, &dirs);
        warnings.append(&mut w);
        return Ok(out);
    }
    let half = dirs.len() / 2;
    let (a, b) = dirs.split_at(half);
    let (mut out, mut more) = std::thread::scope(|s| {
        let other = s.spawn(|| files_of(root, a));
        let mine = files_of(root, b);
        (other.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), mine)
    });
    out.0.append(&mut more.0);
    warnings.append(&mut out.1);
    warnings.append(&mut more.1);
    Ok(out.0)
}

/// The session files of some directories of the root, and a warning for each directory that cannot be read.
fn files_of(root: &Path, dirs: &[String]) -> (Vec<Found>, Vec<String>) {
    let mut out = vec![];
    let mut warnings = vec![];
    for dir in dirs {
        let path = root.join(dir);
        // One directory asked for by name is taken as pi takes it: links followed.
        let entries = match fs::read_dir(&path) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory => continue,
            Err(e) => {
                warnings.push(format!("cannot read {} ({e}); its sessions are left out", path.display()));
                continue;
            }
        };
        for ent in entries {
            let Ok(ent) = ent else { continue };
            let Some(name) = ent.file_name().to_str().map(str::to_owned) else { continue };
            if !name.ends_with(".jsonl") || name.len() == ".jsonl".len() {
                continue;
            }
            // A link is followed to what it names: a session file linked in is listed.
            let meta = match ent.file_type() {
                Ok(t) if t.is_symlink() => fs::metadata(ent.path()),
                _ => ent.metadata(),
            };
            let meta = match meta {
                Ok(m) if m.is_file() => m,
                _ => continue,
            };
            out.push(Found { rel: format!("{dir}/{name}"), dir: dir.clone(), stat: Stat::of(&meta) });
        }
    }
    (out, warnings)
}

/// A directory's entries; a missing directory has none.
fn read_dir(dir: &Path) -> Result<Box<dyn Iterator<Item = io::Result<fs::DirEntry>>>, CatalogError> {
    match fs::read_dir(dir) {
        Ok(rd) => Ok(Box::new(rd)),
        Err(e) if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory => {
            Ok(Box::new(std::iter::empty()))
        }
        Err(e) => Err(CatalogError::io(dir, e)),
    }
}
