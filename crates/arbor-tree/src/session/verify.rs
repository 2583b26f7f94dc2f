//! Checking a session's lines against the file before they are copied
//! (docs/format.md, "The index"; docs/reliability.md, "A file changed
//! behind an open session"): a line that is not where the index put it
//! means the file was changed in place behind the index, so the index is
//! dropped and the session read again from the file, with a notice; a file
//! changed since the session was opened (`watch.rs`) is read again too.
//!
//! Reads are safe without this (a line that fails the check is never
//! answered from: the read fails with [`TreeError::Changed`]); checking
//! first is what lets a command print the file as it is now rather than
//! fail half-way.

use super::cursor::LineCursor;
use super::positions::on_all_cores_in;
use super::{OpenMode, Position, Session};
use crate::error::TreeError;
use crate::index::IndexFile;

impl Session {
    /// True when the session was opened through the index cache (its lines'
    /// places come from the index, not from reading the file now).
    pub fn opened_from_index(&self) -> bool {
        self.state.slots.first().is_some_and(|s| s.placed_by_index())
    }

    /// True when the session was opened through the index its store keeps
    /// (a server's, maintained with the lines in the same transactions),
    /// not through the index cache.
    pub fn opened_from_stored_index(&self) -> bool {
        self.opened_from_index() && self.state.slots.index().is_some_and(|x| x.ids.is_some())
    }

    /// Checks that the lines at `positions` are where the index says (see
    /// the module docs); when one is not, drops the index, reads the file
    /// again and returns true (positions taken before are then stale: take
    /// them again). A session not opened through its index is not read.
    pub fn verify_lines(&mut self, positions: &[Position]) -> Result<bool, TreeError> {
        if self.lines_sound(positions) {
            return Ok(false);
        }
        self.read_again_without_index()?;
        Ok(true)
    }

    /// True when the lines at `positions` are where the index says (always
    /// true for a session not opened through its index, which is not read):
    /// [`Session::verify_lines`] without its answer to a line that is not.
    pub fn lines_sound(&self, positions: &[Position]) -> bool {
        if !self.file_sound() {
            return false;
        }
        if !self.opened_from_index() {
            return true;
        }
        // Read in file order (a path is, nearly always: then without a
        // copy), on all cores, each through its own cursor.
        let sound_all = |order: &[Position]| {
            self.map_slots(order, |_, s, cursor| s.line_is_sound(cursor)).into_iter().all(|ok| ok.is_none_or(|ok| ok))
        };
        if positions.is_sorted_by(|a, b| a < b) {
            return sound_all(positions);
        }
        let mut order: Vec<Position> = positions.to_vec();
        order.sort_unstable();
        order.dedup();
        sound_all(&order)
    }

    /// [`Session::map_id_json_many`] that checks each line the index placed
    /// as it reads it: `None` when one is not where the index says (the
    /// caller then reads the file again, [`Session::read_again_without_index`]),
    /// so a writer reads each line once to check and to copy it.
    pub fn map_id_json_sound<R: Send>(
        &self,
        positions: &[Position],
        f: impl Fn(usize, &str, &str) -> R + Sync,
    ) -> Option<Vec<Option<R>>> {
        let read = self.map_slots(positions, |k, s, cursor| {
            if !s.line_is_sound(cursor) {
                return None;
            }
            let id = s.id();
            s.with_json_via(cursor, |j| f(k, &id, j)).ok()
        });
        read.into_iter().map(|r| r.map_or(Some(None), |r| r.map(Some))).collect()
    }

    /// [`Session::verify_lines`] for every entry.
    pub fn verify_all_lines(&mut self) -> Result<bool, TreeError> {
        if self.file_sound() && (!self.opened_from_index() || self.all_lines_sound()) {
            return Ok(false);
        }
        self.read_again_without_index()?;
        Ok(true)
    }

    /// False when the file changed since the session was opened in a way
    /// it cannot answer from (`watch.rs`).
    fn file_sound(&self) -> bool {
        self.state.watch.as_ref().is_none_or(|w| w.check().is_ok())
    }

    /// True when every line is where the index says: the slots cut into
    /// one stretch per core, each read in order through its own cursor.
    fn all_lines_sound(&self) -> bool {
        let (slots, src) = (&self.state.slots, self.src());
        let sound = on_all_cores_in(slots.len(), |stretch| {
            let mut cursor = LineCursor::new(src);
            // In passing: checking every line builds no slot.
            let mut slots = slots.passing();
            vec![stretch.into_iter().all(|i| slots.get(i).is_none_or(|s| s.line_is_sound(&mut cursor)))]
        });
        sound.into_iter().all(|ok| ok)
    }

    /// The position of the entry `id` names. When the index does not know
    /// it, the file is checked first (an index that no longer matches it is
    /// dropped and the file read again: [`Session::verify_all_lines`]), so
    /// an id the file holds is never refused on the index's word.
    /// [`TreeError::NotFound`] when the file holds no such entry either.
    pub fn find_entry(&mut self, id: &str) -> Result<Position, TreeError> {
        if self.position_of(id).is_none() && (self.opened_from_index() || !self.file_sound()) {
            self.verify_all_lines()?;
        }
        self.position_of(id).ok_or_else(|| TreeError::NotFound(id.to_owned()))
    }

    /// Runs `read` on the session; when it finds the file changed under the
    /// session ([`TreeError::Changed`]: truncated, rewritten, or a line not
    /// where the index put it), reads the file again
    /// ([`Session::read_again_without_index`], which leaves a notice) and runs
    /// `read` once more, on the file as it is now. The one place a reader
    /// takes in a change; a file that keeps changing fails with the error.
    /// Positions and ids taken before are to be taken again inside `read`.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("s.jsonl");
    /// # std::fs::write(&path, concat!(
    /// #     r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#, "\n",
    /// #     r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}"#, "\n",
    /// # ))?;
    /// use arbor_tree::{OpenMode, Session, SessionOptions};
    /// let mut s = Session::open(&path, OpenMode::ReadOnly, SessionOptions::default())?;
    /// // Whatever happens to the file meanwhile, the answer is the file's.
    /// let path_len = s.reading(|s| Ok(s.get_branch(None)?.len()))?;
    /// assert_eq!(path_len, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn reading<T>(&mut self, mut read: impl FnMut(&Session) -> Result<T, TreeError>) -> Result<T, TreeError> {
        match read(self) {
            Err(TreeError::Changed { .. }) => {
                self.read_again_without_index()?;
                read(self)
            }
            done => done,
        }
    }

    /// Reads the file again when it changed since the session was opened
    /// (lines appended by another writer are then part of the session; a
    /// file rewritten is read as it is now); true when it did. A session
    /// that holds the write lock is not read again (its own appends are
    /// what changed the file, and nobody else appends while it holds it).
    pub fn refresh(&mut self) -> Result<bool, TreeError> {
        let changed = self.lock.is_none() && self.state.watch.as_ref().is_some_and(|w| w.changed_since_open());
        if changed {
            self.read_again_without_index()?;
        }
        Ok(changed)
    }

    /// Drops the index of this session's file and reads the file again (the
    /// lock, the file name and what was said so far stay), with a notice:
    /// for a line found not where the index says. Positions taken before
    /// are then stale.
    pub fn read_again_without_index(&mut self) -> Result<(), TreeError> {
        let Some(path) = self.file.clone() else { return Ok(()) };
        // The file changed since it was opened: the index (if any) was not at fault.
        let changed = self.state.watch.as_ref().and_then(|w| w.check().err());
        let kept = self.state.slots.index().is_some_and(|x| x.ids.is_some());
        if let (None, Some(dir), Some(src)) = (&changed, self.opts.index_dir.as_deref(), self.state.source.clone()) {
            if let Some(index) = IndexFile::locate(dir, self.opts.store.as_ref(), &path, &*src) {
                index.remove();
            }
        }
        let fresh = Session::open_as(&path, OpenMode::ReadOnly, self.opts.clone(), changed.is_some())?;
        let whose = if kept { "the index the store keeps" } else { "the index in the cache" };
        self.notices.push(match changed {
            Some(what) => format!("{}: changed since it was opened ({what}); read the file again", path.display()),
            None => format!(
                "{}: {whose} did not match the file (it was changed in place); read the file again",
                path.display()
            ),
        });
        self.header = fresh.header;
        self.header_text = fresh.header_text;
        self.cwd = fresh.cwd;
        self.diagnostics = fresh.diagnostics;
        self.migration = fresh.migration;
        self.disk = fresh.disk;
        self.writer = None;
        let Session { state, .. } = fresh;
        self.state = state;
        Ok(())
    }
}
