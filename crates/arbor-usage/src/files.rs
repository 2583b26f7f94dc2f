//! Finding the files usage is read from, and stamping them: pi's sessions
//! root, other agents' folders, and a local file's stamp from one `stat`.
//! (Below both the scan and OpenCode's stamps.)

use std::path::{Path, PathBuf};

use arbor_tree::FileStamp;

use crate::error::UsageError;

/// The session files of a sessions root in pi's layout
/// (`ROOT/<cwd folder>/*.jsonl`): every folder's, or `cwd`'s only.
/// (Folders and files are told apart by what the folder's listing says of
/// each entry: a `stat` only for a link, whose target decides.)
pub fn pi_files(root: &Path, cwd: Option<&str>) -> Result<Vec<PathBuf>, UsageError> {
    let dirs = match cwd {
        Some(c) => vec![root.join(arbor_tree::paths::encode_cwd(c))],
        None => sorted_entries(root)?.into_iter().filter(|(p, t)| is(p, *t, Kind::Dir)).map(|(p, _)| p).collect(),
    };
    let mut out = Vec::new();
    for dir in dirs {
        for (p, t) in sorted_entries(&dir)? {
            if is_named(&p, ".jsonl") && is(&p, t, Kind::File) {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// The files under `dir` whose names end with `suffix`, at any depth
/// (Claude Code's projects, Codex's dated folders); links to folders are
/// not followed.
pub fn files_under(dir: &Path, suffix: &str) -> Result<Vec<PathBuf>, UsageError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for (p, t) in sorted_entries(&d)? {
            if t.is_dir() {
                stack.push(p);
            } else if t.is_file() && is_named(&p, suffix) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
}

/// True when `p` (of type `t` in its folder's listing) is a `kind`, a link
/// by what it names.
fn is(p: &Path, t: std::fs::FileType, kind: Kind) -> bool {
    let (dir, file) = if t.is_symlink() {
        std::fs::metadata(p).map_or((false, false), |m| (m.is_dir(), m.is_file()))
    } else {
        (t.is_dir(), t.is_file())
    };
    match kind {
        Kind::Dir => dir,
        Kind::File => file,
    }
}

fn is_named(p: &Path, suffix: &str) -> bool {
    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.len() > suffix.len() && n.ends_with(suffix))
}

/// A folder's entries and their types (as the listing says: a link is a
/// link), sorted; a missing folder has none.
fn sorted_entries(dir: &Path) -> Result<Vec<(PathBuf, std::fs::FileType)>, UsageError> {
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(UsageError::io(dir, e)),
    };
    let mut out = Vec::new();
    for e in read {
        let e = e.map_err(|e| UsageError::io(dir, e))?;
        let t = e.file_type().map_err(|err| UsageError::io(e.path(), err))?;
        out.push((e.path(), t));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// A local file's stamp from one `stat` (through a link, of what it
/// names): device and inode (another file renamed over it is another
/// identity), size, modification and change times. The cache keys it by
/// the path it was found at, so the path need not be resolved.
pub(crate) fn local_stamp(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mtime = meta.modified().ok()?.duration_since(std::time::SystemTime::UNIX_EPOCH).ok()?;
    #[cfg(unix)]
    let (identity, changed_ns) = {
        use std::os::unix::fs::MetadataExt;
        (
            format!("{}:{}", meta.dev(), meta.ino()),
            i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        )
    };
    #[cfg(not(unix))]
    let (identity, changed_ns) = (String::new(), 0);
    Some(FileStamp { identity, size: meta.len(), mtime_ns: mtime.as_nanos() as i128, changed_ns })
}
