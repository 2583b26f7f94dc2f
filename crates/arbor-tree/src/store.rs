//! Where session files live: a small trait with a local-file implementation
//! and an in-memory one (for `in_memory` sessions and tests).
//!
//! Everything above this module talks to a [`Store`], never to `std::fs`, so
//! a server-backed store can be added without touching the tree model.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use arbor_log::files::{ensure_writable, is_link, open_read, resolve};
use arbor_log::scan::ReadAt;
use arbor_log::writer::{backup_copy, ensure_one_name};
use arbor_log::{atomic_write, Appender, Durability, LogError, TailRepair};

use crate::error::{LockHolder, TreeError};
use crate::index::stored::StoredIndex;
use crate::lock;
pub use crate::lock::WriteLock;

/// A reader of a session's bytes, with the index its store keeps of
/// exactly those bytes when it keeps one ([`Store::open_indexed`]).
pub type Indexed = (Arc<dyn ReadAt>, Option<StoredIndex>);

/// An open append handle on one session file.
pub trait AppendHandle: Send + fmt::Debug {
    /// Appends whole lines (each already ending in `\n`).
    fn append(&mut self, bytes: &[u8]) -> Result<(), TreeError>;
}

/// What names a stored file and its current version ([`Store::stamp`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    /// Names the file for as long as it is the same file (for local files:
    /// device, inode and canonical path).
    pub identity: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time in ns since the epoch.
    pub mtime_ns: i128,
    /// Status change time (ctime) in ns since the epoch, 0 where unknown:
    /// an edit in place that restores the modification time still changes it.
    pub changed_ns: i128,
}

/// One stored session file, as listings see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// Where it is.
    pub path: PathBuf,
    /// Last modification time, when the store knows it.
    pub modified: Option<SystemTime>,
}

/// Storage for session files. See the module docs.
pub trait Store: Send + Sync + fmt::Debug {
    /// True when `path` exists (an `Err` when the store cannot tell, e.g. a
    /// server that cannot be reached: never taken for "missing").
    fn exists(&self, path: &Path) -> Result<bool, TreeError>;
    /// Reads `path` from byte `offset`; `None` when it does not exist.
    fn read_from(&self, path: &Path, offset: u64) -> Result<Option<Box<dyn Read + Send>>, TreeError>;
    /// Opens `path` for positioned reads (index-first loading decodes entries
    /// from it on demand); `None` when it does not exist. The default reads
    /// the whole file into memory through [`Store::read_from`].
    fn open_at(&self, path: &Path) -> Result<Option<Arc<dyn ReadAt>>, TreeError> {
        let Some(mut r) = self.read_from(path, 0)? else { return Ok(None) };
        let mut bytes = Vec::new();
        r.read_to_end(&mut bytes).map_err(|e| TreeError::io(path, e))?;
        Ok(Some(Arc::new(bytes)))
    }
    /// [`Store::open_at`], with the index the store keeps of `path` itself
    /// when it keeps one for exactly the bytes the reader reads (a server
    /// maintaining it with every write: [`StoredIndex`]); loading then goes
    /// through it as through the index cache, and a first open reads only
    /// what the command needs. The default keeps none.
    fn open_indexed(&self, path: &Path) -> Result<Option<Indexed>, TreeError> {
        Ok(self.open_at(path)?.map(|src| (src, None)))
    }
    /// What names `path` and its current version, when the store knows it:
    /// the key and validity stamp of its index in the cache directory. The
    /// default knows nothing, so files of such a store are never indexed.
    fn stamp(&self, _path: &Path) -> Option<FileStamp> {
        None
    }
    /// Opens `path` for appending (creating it), first making it end cleanly.
    fn open_append(
        &self,
        path: &Path,
        durability: Durability,
    ) -> Result<(Box<dyn AppendHandle>, Option<TailRepair>), TreeError>;
    /// Replaces `path` with `bytes` atomically (for local files: the file a
    /// link names, never the link).
    fn rewrite(&self, path: &Path, bytes: &[u8]) -> Result<(), TreeError>;
    /// The file a link at `path` names (which [`Store::rewrite`] replaces),
    /// or `None` when `path` is no link. The default: there are no links.
    fn link_target(&self, _path: &Path) -> Option<PathBuf> {
        None
    }
    /// Copies `path` to a side name (`FILE.<what>-<ms>`) and returns it.
    fn backup(&self, path: &Path, what: &str) -> Result<PathBuf, TreeError>;
    /// Takes the write lock for `path`, or says who holds it. For local
    /// files it is keyed on the file, whatever name it is given (crate::lock).
    fn lock(&self, path: &Path) -> Result<Box<dyn WriteLock>, TreeError>;
    /// The `.jsonl` files directly in `dir` (empty when `dir` does not exist).
    fn list(&self, dir: &Path) -> Result<Vec<StoredFile>, TreeError>;
    /// The sub-directories of `dir` (empty when it does not exist).
    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>, TreeError>;
    /// Creates `dir` and its parents.
    fn create_dir_all(&self, dir: &Path) -> Result<(), TreeError>;
}

/// Session files on the local file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct FileStore;

#[derive(Debug)]
struct FileAppend(Appender);

impl AppendHandle for FileAppend {
    fn append(&mut self, bytes: &[u8]) -> Result<(), TreeError> {
        let text = std::str::from_utf8(bytes).map_err(|e| TreeError::io(self.0.path(), io::Error::other(e)))?;
        let lines: Vec<&str> = text.strip_suffix('\n').unwrap_or(text).split('\n').collect();
        Ok(self.0.append_lines(&lines)?)
    }
}

impl Store for FileStore {
    fn exists(&self, path: &Path) -> Result<bool, TreeError> {
        // A link that cannot be followed exists too: opening it says why (a loop).
        match fs::symlink_metadata(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(TreeError::io(path, e)),
        }
    }

    fn read_from(&self, path: &Path, offset: u64) -> Result<Option<Box<dyn Read + Send>>, TreeError> {
        match open_regular(path)? {
            Some(mut f) => {
                if offset > 0 {
                    f.seek(SeekFrom::Start(offset)).map_err(|e| TreeError::io(path, e))?;
                }
                // No more than the file holds now (a kernel file that says 0 and never ends reads as empty).
                let len = f.metadata().map_err(|e| TreeError::io(path, e))?.len();
                Ok(Some(Box::new(f.take(len.saturating_sub(offset)))))
            }
            None => Ok(None),
        }
    }

    fn stamp(&self, path: &Path) -> Option<FileStamp> {
        let canonical = fs::canonicalize(path).ok()?;
        let meta = fs::metadata(&canonical).ok()?;
        let mtime = meta.modified().ok()?.duration_since(SystemTime::UNIX_EPOCH).ok()?;
        // The same path holding another file (a rewrite renames a new one in)
        // is another identity: its index starts over.
        #[cfg(unix)]
        let node = {
            use std::os::unix::fs::MetadataExt;
            format!("{}:{}", meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let node = String::new();
        #[cfg(unix)]
        let changed_ns = {
            use std::os::unix::fs::MetadataExt;
            i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec())
        };
        #[cfg(not(unix))]
        let changed_ns = 0;
        Some(FileStamp {
            identity: format!("{node}:{}", canonical.display()),
            size: meta.len(),
            mtime_ns: mtime.as_nanos() as i128,
            changed_ns,
        })
    }

    fn open_at(&self, path: &Path) -> Result<Option<Arc<dyn ReadAt>>, TreeError> {
        Ok(open_regular(path)?.map(|f| Arc::new(f) as Arc<dyn ReadAt>))
    }

    fn open_append(
        &self,
        path: &Path,
        durability: Durability,
    ) -> Result<(Box<dyn AppendHandle>, Option<TailRepair>), TreeError> {
        let (a, repair) = Appender::open(path, durability)?;
        Ok((Box::new(FileAppend(a)), repair))
    }

    fn rewrite(&self, path: &Path, bytes: &[u8]) -> Result<(), TreeError> {
        // Through a link, the file it names is replaced (the link stays a link).
        let target = resolve(path)?;
        ensure_writable(&target)?;
        ensure_one_name(&target)?;
        Ok(atomic_write(&target, |w| w.write_all(bytes))?)
    }

    fn link_target(&self, path: &Path) -> Option<PathBuf> {
        is_link(path).then(|| resolve(path).ok()).flatten()
    }

    fn backup(&self, path: &Path, what: &str) -> Result<PathBuf, TreeError> {
        Ok(backup_copy(path, what)?)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn WriteLock>, TreeError> {
        Ok(Box::new(lock::acquire(path)?))
    }

    fn list(&self, dir: &Path) -> Result<Vec<StoredFile>, TreeError> {
        let rd = match fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(TreeError::io(dir, e)),
        };
        let mut out = vec![];
        for ent in rd {
            let ent = ent.map_err(|e| TreeError::io(dir, e))?;
            let path = ent.path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let meta = match ent.metadata() {
                Ok(m) if m.is_file() => m,
                _ => continue,
            };
            out.push(StoredFile { path, modified: meta.modified().ok() });
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>, TreeError> {
        let rd = match fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(TreeError::io(dir, e)),
        };
        let mut out: Vec<PathBuf> = rd.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()).collect();
        out.sort();
        Ok(out)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<(), TreeError> {
        fs::create_dir_all(dir).map_err(|e| TreeError::io(dir, e))
    }
}

/// Opens a local file for reading: `None` when it does not exist; only a
/// regular file is read ([`arbor_log::files::open_read`]).
fn open_regular(path: &Path) -> Result<Option<fs::File>, TreeError> {
    match open_read(path) {
        Ok(f) => Ok(Some(f)),
        Err(LogError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Session files held in memory (shared between clones).
#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    inner: Arc<Mutex<MemoryInner>>,
}

#[derive(Debug, Default)]
struct MemoryInner {
    files: HashMap<PathBuf, (Vec<u8>, u64)>,
    locks: HashSet<PathBuf>,
    clock: u64,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn guard(&self) -> MutexGuard<'_, MemoryInner> {
        // A poisoned mutex only means another test thread panicked; the map is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bytes of `path`, if it exists.
    pub fn get(&self, path: &Path) -> Option<Vec<u8>> {
        self.guard().files.get(path).map(|(b, _)| b.clone())
    }

    /// Puts a file into the store.
    pub fn put(&self, path: &Path, bytes: &[u8]) {
        let mut g = self.guard();
        g.clock += 1;
        let t = g.clock;
        g.files.insert(path.to_owned(), (bytes.to_vec(), t));
    }
}

#[derive(Debug)]
struct MemoryAppend {
    store: MemoryStore,
    path: PathBuf,
}

impl AppendHandle for MemoryAppend {
    fn append(&mut self, bytes: &[u8]) -> Result<(), TreeError> {
        let mut g = self.store.guard();
        g.clock += 1;
        let t = g.clock;
        let e = g.files.entry(self.path.clone()).or_default();
        e.0.extend_from_slice(bytes);
        e.1 = t;
        Ok(())
    }
}

#[derive(Debug)]
struct MemoryLock {
    store: MemoryStore,
    path: PathBuf,
}

impl WriteLock for MemoryLock {}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        self.store.guard().locks.remove(&self.path);
    }
}

impl Store for MemoryStore {
    fn exists(&self, path: &Path) -> Result<bool, TreeError> {
        Ok(self.guard().files.contains_key(path))
    }

    fn read_from(&self, path: &Path, offset: u64) -> Result<Option<Box<dyn Read + Send>>, TreeError> {
        Ok(self.get(path).map(|b| {
            let start = (offset as usize).min(b.len());
            Box::new(io::Cursor::new(b[start..].to_vec())) as Box<dyn Read + Send>
        }))
    }

    fn open_append(
        &self,
        path: &Path,
        _durability: Durability,
    ) -> Result<(Box<dyn AppendHandle>, Option<TailRepair>), TreeError> {
        let mut g = self.guard();
        let e = g.files.entry(path.to_owned()).or_default();
        let mut repair = None;
        if !e.0.is_empty() && e.0.last() != Some(&b'\n') {
            e.0.push(b'\n');
            repair = Some(TailRepair::AddedNewline);
        }
        drop(g);
        Ok((Box::new(MemoryAppend { store: self.clone(), path: path.to_owned() }), repair))
    }

    fn rewrite(&self, path: &Path, bytes: &[u8]) -> Result<(), TreeError> {
        self.put(path, bytes);
        Ok(())
    }

    fn backup(&self, path: &Path, what: &str) -> Result<PathBuf, TreeError> {
        let bytes = self.get(path).ok_or_else(|| TreeError::Missing(path.to_owned()))?;
        let mut n = 0u32;
        let side = loop {
            n += 1;
            let p = PathBuf::from(format!("{}.{what}-{n}", path.display()));
            if !self.guard().files.contains_key(&p) {
                break p;
            }
        };
        self.put(&side, &bytes);
        Ok(side)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn WriteLock>, TreeError> {
        let mut g = self.guard();
        if !g.locks.insert(path.to_owned()) {
            let holder = Some(LockHolder::pid(std::process::id()));
            return Err(TreeError::Locked { path: path.to_owned(), holder });
        }
        Ok(Box::new(MemoryLock { store: self.clone(), path: path.to_owned() }))
    }

    fn list(&self, dir: &Path) -> Result<Vec<StoredFile>, TreeError> {
        let g = self.guard();
        let mut out: Vec<StoredFile> = g
            .files
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir) && p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
            .map(|(p, (_, t))| StoredFile {
                path: p.clone(),
                modified: Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(*t)),
            })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>, TreeError> {
        let g = self.guard();
        let mut out: Vec<PathBuf> = g
            .files
            .keys()
            .filter_map(|p| p.parent())
            .filter(|d| d.parent() == Some(dir))
            .map(Path::to_path_buf)
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }

    fn create_dir_all(&self, _dir: &Path) -> Result<(), TreeError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_lock_is_exclusive_within_a_process_too() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        let first = FileStore.lock(&p).unwrap();
        let err = FileStore.lock(&p).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("s.jsonl") && msg.contains(&format!("pid {}", std::process::id())), "{msg}");
        drop(first);
        FileStore.lock(&p).unwrap();
    }

    #[test]
    fn memory_store_round_trip() {
        let s = MemoryStore::new();
        let p = Path::new("/m/a.jsonl");
        let (mut a, _) = s.open_append(p, Durability::Buffered).unwrap();
        a.append(b"x\n").unwrap();
        let mut r = s.read_from(p, 0).unwrap().unwrap();
        let mut out = String::new();
        r.read_to_string(&mut out).unwrap();
        assert_eq!(out, "x\n");
        assert_eq!(s.list(Path::new("/m")).unwrap().len(), 1);
        let _l = s.lock(p).unwrap();
        assert!(s.lock(p).is_err());
    }
}
