//! Positioned reads of a session file: what the scans, the long-line
//! reader and lazy decoding read through (re-exported by [`crate::scan`]).

use std::fmt;
use std::fs::File;
use std::io;

/// Positioned reads from a session file (or bytes standing in for one).
///
/// `&self` so that many threads (and lazy decoding behind `&Session`) can read at once.
pub trait ReadAt: Send + Sync + fmt::Debug {
    /// Reads up to `buf.len()` bytes at `offset`; 0 at or past the end.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// The current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// True when the length is 0.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Says that the byte ranges `spans` (`(start, end)`) are about to be
    /// read, about in that order (file order for the lines of a context; a
    /// walk's order, which may go back, for a tree): a source far away (a
    /// server) may then fetch many of them at once, in that order. A hint
    /// only: reads outside it are answered as ever. The default does nothing.
    fn will_read(&self, spans: &[(u64, u64)]) {
        let _ = spans;
    }
    /// True for a source far away, where every byte read costs (a
    /// server): readers then read the bytes they need, not the short gaps
    /// between them that a local file reads at no cost. False by default.
    fn remote(&self) -> bool {
        false
    }
}

impl ReadAt for File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_at(self, buf, offset)
        }
        #[cfg(windows)]
        {
            std::os::windows::fs::FileExt::seek_read(self, buf, offset)
        }
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

impl ReadAt for Vec<u8> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(Vec::len(self) as u64)
    }
}

/// Reads exactly `len` bytes at `offset`, or fewer if the source ends first.
pub fn read_exact_at(src: &dyn ReadAt, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; len];
    let mut filled = 0;
    while filled < len {
        match src.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// One positioned read, retried when interrupted.
pub(crate) fn read_some(src: &dyn ReadAt, buf: &mut [u8], at: u64) -> io::Result<usize> {
    loop {
        match src.read_at(buf, at) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}
