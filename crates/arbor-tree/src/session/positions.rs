//! Reading a session by [`Position`], the vocabulary of bulk and fast paths:
//! an entry's place in file order answers type, role and id without
//! decoding, and many entries are decoded or copied on all cores at once.
//! Users name entries by id (`query.rs`); a position is what a walk or a
//! tree hands back for the next question.

use std::fmt;
use std::io::{self, Write};
use std::ops::Range;

use arbor_log::scan::ReadAt;
use arbor_log::{Entry, EntryType, Role};

use super::cursor::LineCursor;
use super::slot::{Slot, Stale};
use super::EntryId;
use super::{Session, Slots};
use crate::error::TreeError;

/// A place in a session's file order: the n-th entry read or appended,
/// duplicates included (the first entry after the header is `Position(0)`).
/// Valid for the session that gave it, until its entries are replaced
/// (`new_session`, `create_branched_session`).
///
/// ```
/// use arbor_tree::{Message, Session, SessionOptions};
///
/// let mut s = Session::in_memory("/w", SessionOptions::default());
/// let a = s.append_message(Message::user("hi", 1))?;
/// let b = s.append_message(Message::user("again", 2))?;
/// let path = s.branch_positions(None);
/// assert_eq!(path.iter().map(|p| p.get()).collect::<Vec<_>>(), [0, 1]);
/// assert_eq!(s.position_of(&b), Some(path[1]));
/// assert_eq!(s.id_at(path[0]).map(|id| id.to_string()), Some(a));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
///
/// Held as a `u32` (lists of positions as long as the session cost 4 bytes
/// an entry): a session of four billion entries would not fit in memory.
pub struct Position(u32);

impl Position {
    /// The position of the `index`-th entry in file order.
    pub const fn new(index: usize) -> Position {
        Position(index as u32)
    }

    /// The index in file order.
    pub const fn get(self) -> usize {
        self.0 as usize
    }
}

impl From<Position> for usize {
    fn from(p: Position) -> usize {
        p.get()
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Positions whose lines a cursor is told of at once, and the runs of
/// slots held meanwhile (a run is built once for both readings).
const PLANNED: usize = 4096;
const PLANNED_RUNS: usize = 64;

impl Session {
    pub(super) fn slot_at(&self, p: Position) -> Option<&Slot> {
        self.state.slots.get(p.get())
    }

    /// With `on`, the entries [`Session::decode_many`],
    /// [`Session::decode_shares`] and the other batch readers decode from
    /// a line longer than [`arbor_log::long::LONG_LINE`] are its preview:
    /// every long string (over [`arbor_log::long::HELD`] bytes) cut to its
    /// first few KB, read in windows without holding the line
    /// (`arbor_log::long`). For readers that show a line of an entry (`arbor
    /// tree`, `path`, `dump`); a line that cannot be reduced is read whole.
    /// Writers of the full text leave it off (the default).
    pub fn read_previews(&mut self, on: bool) {
        self.previews = on;
    }

    /// Every position, in file order.
    pub fn positions(&self) -> impl DoubleEndedIterator<Item = Position> + ExactSizeIterator {
        (0..self.state.slots.len()).map(Position::new)
    }

    /// The position of the entry an id resolves to (the later line wins on duplicates).
    pub fn position_of(&self, id: &str) -> Option<Position> {
        self.slot_of(id).map(Position::new)
    }

    /// [`Session::get_branch`] as positions, root first.
    pub fn branch_positions(&self, from: Option<&str>) -> Vec<Position> {
        self.path_as(from, Position::new)
    }

    /// The position the entry's `parentId` resolves to (none for a root or an orphan).
    pub fn parent_at(&self, p: Position) -> Option<Position> {
        self.parent_of(p.get()).map(Position::new)
    }

    /// The entry at `p`, decoded on first use (and then kept). Like every
    /// read that decodes a line, an `Err` when the file changed under the
    /// session ([`TreeError::Changed`]).
    pub fn entry_at(&self, p: Position) -> Result<Option<&Entry>, TreeError> {
        self.slot_at(p).map(|s| s.entry(self.src()).map_err(|e| self.stale(e))).transpose()
    }

    /// The entry at `p` as an owned value, without keeping a decoded copy
    /// in the session (a copy when one is kept already).
    pub fn decode_at(&self, p: Position) -> Result<Option<Entry>, TreeError> {
        self.slot_at(p).map(|s| s.owned_entry(self.src()).map_err(|e| self.stale(e))).transpose()
    }

    /// [`Session::decode_at`] for many positions, decoded on all cores (in order).
    pub fn decode_many(&self, positions: &[Position]) -> Result<Vec<Option<Entry>>, TreeError> {
        self.settle(self.map_slots(positions, |_, s, cursor| s.owned_entry_via(cursor)))
    }

    /// The answers of [`Session::map_slots`] for reads that can find the
    /// file changed: all of them, or the first such error.
    fn settle<R>(&self, read: Vec<Option<Result<R, Stale>>>) -> Result<Vec<Option<R>>, TreeError> {
        read.into_iter().map(|r| r.transpose().map_err(|e| self.stale(e))).collect()
    }

    /// Calls `f(k, text)` with the JSON text of the entry at `positions[k]`,
    /// on all cores and without keeping the texts; the results come in order
    /// (`None` for a position past the end). For writers that copy many
    /// entries' text, such as `arbor context --json`. Each core reads its
    /// share through one `LineCursor`, so positions in file order cost a
    /// few large reads.
    pub fn map_json_many<R: Send>(
        &self,
        positions: &[Position],
        f: impl Fn(usize, &str) -> R + Sync,
    ) -> Result<Vec<Option<R>>, TreeError> {
        self.settle(self.map_slots(positions, |k, s, cursor| s.with_json_via(cursor, |j| f(k, j))))
    }

    /// [`Session::map_json_many`] with each line's text as the file holds
    /// it ([`Session::with_line_at`]): for copies of the file.
    pub fn map_lines_many<R: Send>(
        &self,
        positions: &[Position],
        f: impl Fn(usize, &str) -> R + Sync,
    ) -> Result<Vec<Option<R>>, TreeError> {
        self.settle(self.map_slots(positions, |k, s, cursor| s.with_text_via(cursor, true, |j| f(k, j))))
    }

    /// [`Session::map_json_many`] with each entry's id: `f(k, id, text)`.
    /// The ids are read with the texts, so a session opened through its
    /// index builds none of the slots it reads (where [`Session::id_at`]
    /// for each position would build them all).
    pub fn map_id_json_many<R: Send>(
        &self,
        positions: &[Position],
        f: impl Fn(usize, &str, &str) -> R + Sync,
    ) -> Result<Vec<Option<R>>, TreeError> {
        self.settle(self.map_slots(positions, |k, s, cursor| {
            let id = s.id();
            s.with_json_via(cursor, |j| f(k, &id, j))
        }))
    }

    /// Decodes the entries at `positions` on all cores and hands each
    /// core's share to `f` whole: `f(share, entries)`, the share's
    /// positions and their entries in order (`None` past the end). The
    /// shares' results come back in order, and each entry is dropped on
    /// the core that decoded it. For writers whose work on an entry costs
    /// as much as decoding it (`arbor tree`'s rows), and that look at an
    /// entry's neighbours while at it.
    pub fn decode_shares<R: Send>(
        &self,
        positions: &[Position],
        f: impl Fn(&[Position], Vec<Option<Entry>>) -> Vec<R> + Sync,
    ) -> Result<Vec<R>, TreeError> {
        let (slots, src, previews) = (&self.state.slots, self.src(), self.previews);
        let shares = on_all_cores(positions, |base, share| {
            let read = read_share((slots, src, previews), base, share, &|_, s, cursor| s.owned_entry_via(cursor));
            // A share with a line that cannot be read is not handed on.
            match read.into_iter().map(Option::transpose).collect::<Result<Vec<_>, Stale>>() {
                Ok(entries) => f(share, entries).into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            }
        });
        shares.into_iter().map(|r| r.map_err(|e| self.stale(e))).collect()
    }

    /// [`Session::decode_many`] with entries on long lines decoded as
    /// previews, whatever [`Session::read_previews`] says: for readers of
    /// what a preview keeps whole (types, ids, roles, a message's model).
    pub fn decode_previews(&self, positions: &[Position]) -> Result<Vec<Option<Entry>>, TreeError> {
        self.settle(self.map_slots_as(true, positions, |_, s, cursor| s.owned_entry_via(cursor)))
    }

    /// `one(k, slot, cursor)` for the slot at each of `positions`, on all
    /// cores, in order (see [`read_share`]).
    pub(super) fn map_slots<R: Send>(
        &self,
        positions: &[Position],
        one: impl Fn(usize, &Slot, &mut LineCursor<'_>) -> R + Sync,
    ) -> Vec<Option<R>> {
        self.map_slots_as(self.previews, positions, one)
    }

    /// [`Session::map_slots`], long lines read as previews or not.
    fn map_slots_as<R: Send>(
        &self,
        previews: bool,
        positions: &[Position],
        one: impl Fn(usize, &Slot, &mut LineCursor<'_>) -> R + Sync,
    ) -> Vec<Option<R>> {
        let (slots, src) = (&self.state.slots, self.src());
        on_all_cores(positions, |base, share| read_share((slots, src, previews), base, share, &one))
    }

    /// The id of the entry at `p` (no decoding).
    pub fn id_at(&self, p: Position) -> Option<EntryId<'_>> {
        self.slot_at(p).map(Slot::id)
    }

    /// Calls `f` with the position and id of each entry at `positions`
    /// (no decoding), without keeping what was read to answer it: over
    /// every entry of a session opened through its index, this builds none
    /// of its slots (where [`Session::id_at`] would build them all).
    pub fn for_each_id(&self, positions: impl IntoIterator<Item = Position>, mut f: impl FnMut(Position, &str)) {
        let mut slots = self.state.slots.passing();
        for p in positions {
            if let Some(s) = slots.get(p.get()) {
                f(p, &s.id());
            }
        }
    }

    /// The `type` of the entry at `p` (no decoding).
    pub fn entry_type_at(&self, p: Position) -> Option<&EntryType> {
        self.state.slots.entry_type(p.get())
    }

    /// The `type` and message `role` of the entry at `p` at once (no
    /// decoding): [`Session::entry_type_at`] and [`Session::role_at`].
    pub fn head_at(&self, p: Position) -> Option<(&EntryType, Option<&Role>)> {
        self.state.slots.head(p.get())
    }

    /// The message `role` of the message entry at `p` (no decoding).
    pub fn role_at(&self, p: Position) -> Option<&Role> {
        self.state.slots.role(p.get())
    }

    /// True unless a later line with the same id replaced the entry at `p`.
    pub fn is_live_at(&self, p: Position) -> bool {
        self.slot_at(p).is_some_and(|s| s.live())
    }

    /// The line the entry at `p` was read from (0 for one appended in this process).
    pub fn line_at(&self, p: Position) -> usize {
        self.slot_at(p).map_or(0, |s| s.line())
    }

    /// The JSON text of the entry at `p` (read on first use, then kept).
    pub fn json_at(&self, p: Position) -> Result<Option<&str>, TreeError> {
        self.slot_at(p).map(|s| s.json(self.src()).map_err(|e| self.stale(e))).transpose()
    }

    /// Calls `f` with the text of the entry at `p` as its line holds it: its
    /// JSON text, but for a line only JavaScript reads (a number beyond
    /// `f64`, a lone surrogate) the line itself, not what `JSON.stringify`
    /// writes for it. For copies of the file ([`Session::header_text`] gives
    /// its header).
    pub fn with_line_at<R>(&self, p: Position, f: impl FnOnce(&str) -> R) -> Result<Option<R>, TreeError> {
        let read = self.slot_at(p).map(|s| s.with_text_via(&mut LineCursor::new(self.src()), true, f));
        read.transpose().map_err(|e| self.stale(e))
    }

    /// True when the entry at `p` is on a line longer than
    /// [`arbor_log::long::LONG_LINE`]: writers copy its text with
    /// [`Session::write_json_at`] or [`Session::write_line_at`] instead of
    /// holding it.
    pub fn is_long_at(&self, p: Position) -> bool {
        self.state.slots.line_len(p.get()).is_some_and(|len| len > arbor_log::long::LONG_LINE)
    }

    /// Writes the JSON text of the entry at `p` (what
    /// [`Session::with_json_at`] hands over) to `out`. A long line is copied
    /// from the file a block at a time and never held whole. A line read
    /// after the file changed (a long line's block that changed since it
    /// was checked: before any of it is written) fails with an I/O error
    /// holding [`TreeError::Changed`], naming the file and line.
    pub fn write_json_at(&self, p: Position, out: &mut dyn Write) -> io::Result<()> {
        self.write_text_at(p, false, out)
    }

    /// [`Session::write_json_at`] with the text as its line holds it
    /// ([`Session::with_line_at`]): for copies of the file.
    pub fn write_line_at(&self, p: Position, out: &mut dyn Write) -> io::Result<()> {
        self.write_text_at(p, true, out)
    }

    /// For an entry on a long line ([`Session::is_long_at`]): copies the
    /// part of its JSON text that `pick` gives a range of in the line's
    /// reduced text (every long string cut to a preview:
    /// `arbor_log::long`), from the file, never holding it. The part's bytes
    /// are read first, in windows with the 64 bytes before each, by
    /// `refuse`. `Ok(false)`, nothing written, when the entry's line is
    /// short or cannot be reduced, `pick` gives nothing or a range that
    /// starts or ends inside a cut string, or `refuse` says no: the caller
    /// writes the part some other way.
    pub fn write_long_part_at(
        &self,
        p: Position,
        pick: impl FnOnce(&str) -> Option<Range<usize>>,
        refuse: impl Fn(&[u8]) -> bool,
        out: &mut dyn Write,
    ) -> io::Result<bool> {
        match self.slot_at(p) {
            Some(s) => s.copy_long_part(self.src(), pick, refuse, out).map_err(|e| self.changed_io(e)),
            None => Ok(false),
        }
    }

    fn write_text_at(&self, p: Position, as_written: bool, out: &mut dyn Write) -> io::Result<()> {
        let Some(s) = self.slot_at(p) else { return Ok(()) };
        if let Some(copied) = s.copy_long_text(self.src(), as_written, out) {
            return copied.map_err(|e| self.changed_io(e));
        }
        let written = s.with_text_via(&mut LineCursor::new(self.src()), as_written, |t| out.write_all(t.as_bytes()));
        written.map_err(|e| io::Error::other(self.stale(e)))?
    }

    /// An I/O error of a slot's long line that says the file changed (it
    /// holds a [`Stale`]) as one holding [`TreeError::Changed`]; any other as it is.
    pub(crate) fn changed_io(&self, e: io::Error) -> io::Error {
        match e.get_ref().and_then(|inner| inner.downcast_ref::<Stale>()) {
            Some(stale) => io::Error::other(self.stale(stale.clone())),
            None => e,
        }
    }

    /// Calls `f` with the JSON text of the entry at `p` without keeping the
    /// text in the session (for writers that stream many entries).
    pub fn with_json_at<R>(&self, p: Position, f: impl FnOnce(&str) -> R) -> Result<Option<R>, TreeError> {
        self.slot_at(p).map(|s| s.with_json(self.src(), f)).transpose().map_err(|e| self.stale(e))
    }
}

/// `one(k, slot, cursor)` for the slot at each of `share` (`k` counts from
/// `base`), in order, through one cursor told a stretch of lines ahead
/// where they are (so it reads the lines and the short gaps between them,
/// not whole windows of other branches).
fn read_share<R>(
    (slots, src, previews): (&Slots, Option<&dyn ReadAt>, bool),
    base: usize,
    share: &[Position],
    one: &(impl Fn(usize, &Slot, &mut LineCursor<'_>) -> R + Sync),
) -> Vec<Option<R>> {
    let mut cursor = LineCursor::new(src);
    cursor.previews = previews;
    let mut out = Vec::with_capacity(share.len());
    let mut rest = share;
    while !rest.is_empty() {
        // A stretch whose slots are built once though each is read twice.
        let n = slots.fitting(rest.iter().take(PLANNED).map(|p| p.get()), PLANNED_RUNS);
        let (now, later) = rest.split_at(n);
        // In passing: what is read here is not kept in the session.
        let mut held = slots.passing_holding(PLANNED_RUNS);
        // Where the lines are first, so the cursor reads them and little more.
        cursor.plan(now.iter().filter_map(|p| held.get(p.get()).and_then(Slot::span)));
        for p in now {
            let k = base + out.len();
            out.push(held.get(p.get()).map(|s| one(k, s, &mut cursor)));
        }
        rest = later;
    }
    out
}

/// `part(base, share)` for `positions` cut into one share per core (up to
/// 8; `base` is where the share starts in `positions`), the results joined
/// in order.
fn on_all_cores<R: Send>(positions: &[Position], part: impl Fn(usize, &[Position]) -> Vec<R> + Sync) -> Vec<R> {
    on_all_cores_in(positions.len(), |r| part(r.start, &positions[r]))
}

/// `part(range)` for `0..n` cut into one range per core (up to 8), the
/// results joined in order; one range when there is one core or `n` is small.
pub(super) fn on_all_cores_in<R: Send>(n: usize, part: impl Fn(Range<usize>) -> Vec<R> + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(8);
    if threads < 2 || n < 64 {
        return part(0..n);
    }
    let chunk = n.div_ceil(threads);
    std::thread::scope(|sc| {
        let part = &part;
        let handles: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|from| {
                let range = from..n.min(from + chunk);
                (range.clone(), sc.spawn(move || part(range)))
            })
            .collect();
        let mut out = Vec::with_capacity(n);
        for (range, h) in handles {
            // A worker cannot panic on data; if one did anyway, redo its range here.
            out.extend(h.join().unwrap_or_else(|_| part(range)));
        }
        out
    })
}
