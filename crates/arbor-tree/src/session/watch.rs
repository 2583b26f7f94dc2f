//! Watching the file behind an open session (docs/reliability.md, "A file
//! changed behind an open session"): the session's lines are read from the
//! file on demand, long after it was opened, so every read of the file is
//! checked against what the session was read from.
//!
//! The session remembers the length and content hash
//! ([`crate::index::content_hash`]) of the bytes it was read from (the
//! index's, when it was opened through one that covers them all) and the
//! file's stamp ([`Store::stamp`]). After each read, the stamp is taken
//! again: while it is the one last found sound, the bytes read are the
//! session's. When it is not, the file is checked once: a file that only
//! grew (lines appended, by pi or by this session) or was replaced by
//! another file (this session reads on from the one it opened) still holds
//! the session's bytes, and the new stamp is taken as sound; a file that is
//! shorter, or whose bytes before its end were rewritten, fails the read
//! with [`crate::TreeError::Changed`]. A store that names no version of its
//! files (none is watched) hands out bytes that do not change.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arbor_log::scan::ReadAt;

use crate::index::content_hash;
use crate::store::{FileStamp, Store};

/// Why a read of a watched source failed: the file changed (in a few words).
#[derive(Debug)]
pub(crate) struct FileChanged(pub(crate) String);

impl fmt::Display for FileChanged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FileChanged {}

/// What changed, when `e` is a watched source's refusal.
pub(crate) fn changed_in(e: &io::Error) -> Option<&str> {
    e.get_ref().and_then(|e| e.downcast_ref::<FileChanged>()).map(|c| c.0.as_str())
}

/// A session's source, each read checked against the bytes the session
/// was read from (see the module docs).
#[derive(Debug)]
pub(crate) struct Watched {
    inner: Arc<dyn ReadAt>,
    store: Arc<dyn Store>,
    path: PathBuf,
    /// The bytes the session was read from: how many, and their content hash.
    len: u64,
    content: u64,
    /// The file's stamp when its first `len` bytes were last found to be those.
    seen: Mutex<Option<FileStamp>>,
    /// The file's stamp when the session was read from it.
    opened: FileStamp,
}

impl Watched {
    /// Watches `inner`, the file `path` of `store` a session was just read
    /// from; `known` is the length and content hash of its bytes when an
    /// index says them. `None` when the store names no version of the file.
    pub(crate) fn new(
        inner: Arc<dyn ReadAt>,
        store: Arc<dyn Store>,
        path: PathBuf,
        known: Option<(u64, u64)>,
    ) -> Option<Watched> {
        // Taken before the bytes are hashed: a change meanwhile is a change after.
        let seen = store.stamp(&path)?;
        let (len, content) = match known.filter(|&(_, c)| c != 0) {
            Some(k) => k,
            None => {
                let len = inner.len().ok()?;
                (len, content_hash(&*inner, len).ok()?)
            }
        };
        Some(Watched { inner, store, path, len, content, seen: Mutex::new(Some(seen.clone())), opened: seen })
    }

    /// True when the file is not as the session was read from it (another
    /// file, or lines appended or changed since).
    pub(crate) fn changed_since_open(&self) -> bool {
        self.store.stamp(&self.path).as_ref() != Some(&self.opened)
    }

    /// Ok while the first `len` bytes of the file are those the session
    /// was read from; else what changed.
    pub(crate) fn check(&self) -> Result<(), FileChanged> {
        let now = self.store.stamp(&self.path);
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if *seen == now {
            return Ok(());
        }
        let len = self.inner.len().map_err(|e| FileChanged(format!("cannot read it: {e}")))?;
        if len < self.len {
            return Err(FileChanged(format!("truncated to {len} bytes from {}", self.len)));
        }
        match content_hash(&*self.inner, self.len) {
            Ok(h) if h == self.content => {}
            Ok(_) => return Err(FileChanged("rewritten before its end".to_owned())),
            Err(e) => return Err(FileChanged(format!("cannot read it: {e}"))),
        }
        *seen = now;
        Ok(())
    }

    /// Runs `append`, an append of this session to the file: when the file
    /// was sound before it, it is after (its stamp taken as sound), so the
    /// session's own appends cost no check of the bytes before them.
    pub(crate) fn appending<T>(&self, append: impl FnOnce() -> T) -> T {
        let sound = self.check().is_ok();
        let done = append();
        if sound {
            *self.seen.lock().unwrap_or_else(|p| p.into_inner()) = self.store.stamp(&self.path);
        }
        done
    }
}

impl ReadAt for Watched {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = self.inner.read_at(buf, offset)?;
        // Checked after the read: a change before the check is a change
        // before the read, as far as the bytes read can tell.
        self.check().map_err(io::Error::other)?;
        Ok(n)
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}
