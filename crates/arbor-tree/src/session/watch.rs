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
    base: Mutex<Base>,
    /// The file's stamp when the session was read from it.
    opened: FileStamp,
}

/// What the session's bytes are, and when they were last found in the file.
#[derive(Debug)]
struct Base {
    /// The bytes the session was read from: how many, and their content hash.
    len: u64,
    content: u64,
    /// The file's stamp when its first `len` bytes were last found to be those.
    seen: Option<FileStamp>,
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
        let base = Mutex::new(Base { len, content, seen: Some(seen.clone()) });
        Some(Watched { inner, store, path, base, opened: seen })
    }

    fn base(&self) -> std::sync::MutexGuard<'_, Base> {
        self.base.lock().unwrap_or_else(|p| p.into_inner())
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
        let mut base = self.base();
        if base.seen == now {
            return Ok(());
        }
        let len = self.inner.len().map_err(|e| FileChanged(format!("cannot read it: {e}")))?;
        if len < base.len {
            return Err(FileChanged(format!("truncated to {len} bytes from {}", base.len)));
        }
        match content_hash(&*self.inner, base.len) {
            Ok(h) if h == base.content => {}
            Ok(_) => return Err(FileChanged("rewritten before its end".to_owned())),
            Err(e) => return Err(FileChanged(format!("cannot read it: {e}"))),
        }
        base.seen = now;
        Ok(())
    }

    /// After this session appended to the file, found sound just before
    /// (`check`): the file as it is now is the session's, so its own
    /// appends cost no check of the bytes before them. `rebase` when the
    /// append first cut a torn last line the session had read: the bytes
    /// it reads are still there, and are hashed again as they are now.
    pub(crate) fn appended(&self, rebase: bool) {
        let now = self.store.stamp(&self.path);
        let mut base = self.base();
        if rebase {
            let Some((len, content)) =
                self.inner.len().ok().and_then(|l| Some((l, content_hash(&*self.inner, l).ok()?)))
            else {
                return;
            };
            (base.len, base.content) = (len, content);
        }
        base.seen = now;
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
