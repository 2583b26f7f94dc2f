//! Checking a session opened through its index against the file, before
//! lines are copied on the index's word (docs/format.md, "The index"): a
//! line that is not where the index put it means the file was changed in
//! place behind the index, so the index is dropped and the session read
//! again from the file, with a notice.
//!
//! Copies are safe without this (a line that fails the check is never
//! copied: the entry decoded from the file, or a placeholder saying that
//! the line changed, is written instead); checking first is what lets a
//! command print the file as it is now rather than placeholders.

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
            Some(s.with_json_via(cursor, |j| f(k, &id, j)))
        });
        read.into_iter().map(|r| r.map_or(Some(None), |r| r.map(Some))).collect()
    }

    /// [`Session::verify_lines`] for every entry.
    pub fn verify_all_lines(&mut self) -> Result<bool, TreeError> {
        if !self.opened_from_index() || self.all_lines_sound() {
            return Ok(false);
        }
        self.read_again_without_index()?;
        Ok(true)
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

    /// Drops the index of this session's file and reads the file again (the
    /// lock, the file name and what was said so far stay), with a notice:
    /// for a line found not where the index says. Positions taken before
    /// are then stale.
    pub fn read_again_without_index(&mut self) -> Result<(), TreeError> {
        let Some(path) = self.file.clone() else { return Ok(()) };
        let kept = self.state.slots.index().is_some_and(|x| x.ids.is_some());
        if let (Some(dir), Some(src)) = (self.opts.index_dir.as_deref(), self.state.source.clone()) {
            if let Some(index) = IndexFile::locate(dir, self.opts.store.as_ref(), &path, &*src) {
                index.remove();
            }
        }
        let fresh = Session::open_as(&path, OpenMode::ReadOnly, self.opts.clone(), false)?;
        let whose = if kept { "the index the store keeps" } else { "the index in the cache" };
        self.notices.push(format!(
            "{}: {whose} did not match the file (it was changed in place); read the file again",
            path.display()
        ));
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
