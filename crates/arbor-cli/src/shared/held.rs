//! Output written once, from a session whose store keeps its index with its
//! lines in the same transactions (a server's: [`Session::opened_from_stored_index`]):
//! each line is read once and checked as it is written (a line not where
//! the index put it fails the write with [`TreeError::Changed`]) instead of
//! all of them checked first and read again to be written. The first
//! [`HOLD`] bytes of output are held, so that such a line early on leaves
//! nothing written (the caller reads the session again without the index
//! and writes from that); later, the output is on its way and the command
//! fails saying so.

use std::io::Write;

use arbor_tree::{Session, TreeError};

/// Output held before any is written by [`Held`].
pub const HOLD: usize = 4 << 20;

/// True when the session's lines are read once and checked as written (see the module docs).
pub fn reads_once(s: &Session) -> bool {
    s.opened_from_stored_index()
}

/// True when `e` says that the session changed under the reader.
pub fn changed(e: &std::io::Error) -> bool {
    e.get_ref().and_then(|i| i.downcast_ref::<TreeError>()).is_some_and(|t| matches!(t, TreeError::Changed { .. }))
}

/// A writer that holds what it is given until [`HOLD`] bytes, then writes through.
pub struct Held<'w> {
    held: Option<Vec<u8>>,
    out: &'w mut dyn Write,
}

impl<'w> Held<'w> {
    /// Holds what goes to `out` (until [`HOLD`] bytes).
    pub fn new(out: &'w mut dyn Write) -> Held<'w> {
        Held { held: Some(Vec::new()), out }
    }

    /// True while nothing was written through (all of it is still held).
    pub fn holding(&self) -> bool {
        self.held.is_some()
    }
}

impl Write for Held<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let Some(h) = &mut self.held else { return self.out.write(buf) };
        h.extend_from_slice(buf);
        if h.len() > HOLD {
            let h = self.held.take().unwrap_or_default();
            self.out.write_all(&h)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if let Some(h) = self.held.take() {
            self.out.write_all(&h)?;
        }
        self.out.flush()
    }
}
