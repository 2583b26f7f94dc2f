//! The session files under a sessions root, with one `stat` each.

use std::fs;
use std::io;
use std::path::Path;

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

/// The `.jsonl` files of the scope's directories (regular files only, as
/// `arbor_tree::FileStore::list` takes them), with their stats.
pub(crate) fn walk(root: &Path, scope: &Scope) -> Result<Vec<Found>, CatalogError> {
    let dirs = match scope {
        Scope::Dir(d) => vec![d.clone()],
        Scope::All => {
            let mut dirs = vec![];
            for ent in read_dir(root)? {
                let ent = ent.map_err(|e| CatalogError::io(root, e))?;
                // A directory, or a link to one (as `FileStore::list_dirs` follows them).
                if ent.path().is_dir() {
                    if let Some(name) = ent.file_name().to_str() {
                        dirs.push(name.to_owned());
                    }
                }
            }
            dirs
        }
    };
    let mut out = vec![];
    for dir in dirs {
        let path = root.join(&dir);
        for ent in read_dir(&path)? {
            let ent = ent.map_err(|e| CatalogError::io(&path, e))?;
            let Some(name) = ent.file_name().to_str().map(str::to_owned) else { continue };
            if !name.ends_with(".jsonl") || name.len() == ".jsonl".len() {
                continue;
            }
            let meta = match ent.metadata() {
                Ok(m) if m.is_file() => m,
                _ => continue,
            };
            out.push(Found { rel: format!("{dir}/{name}"), dir: dir.clone(), stat: Stat::of(&meta) });
        }
    }
    Ok(out)
}

/// A directory's entries; a missing directory has none.
fn read_dir(dir: &Path) -> Result<Box<dyn Iterator<Item = io::Result<fs::DirEntry>>>, CatalogError> {
    match fs::read_dir(dir) {
        Ok(rd) => Ok(Box::new(rd)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Box::new(std::iter::empty())),
        Err(e) => Err(CatalogError::io(dir, e)),
    }
}
