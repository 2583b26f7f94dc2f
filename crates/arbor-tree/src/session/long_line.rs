//! Long lines of a session read without holding them (`arbor_log::long`):
//! the check that a line the index placed is still there, in windows; the
//! line reduced (for previews); its text copied from the file a block at a
//! time (for writers of the full text); its cut strings' text decoded
//! from the file a block at a time ([`LongLine`], for writers of text).

use std::io::{self, Write};

use arbor_log::long::text::{decode_long_string, long_texts, LongText};
use arbor_log::long::{copy_line_range, reduce_line, Reduced, LONG_LINE};
use arbor_log::reader::trim_line;
use arbor_log::scan::{read_exact_at, ReadAt};

use super::cursor::LineCursor;
use super::slot::{holds_id, Slot, Stale};
use super::watch::changed_in;
use super::{Position, Session};
use crate::error::TreeError;

/// The line of an entry too long to hold ([`Session::long_line_at`]),
/// reduced once: each string value it cut to a preview (`arbor_log::long`),
/// named by the JSON Pointer of its value in the entry's record with its
/// preview's text ([`LongLine::texts`]), and its whole text decoded from the
/// file a block at a time ([`LongLine::decode`]). A writer of an entry
/// decoded as a preview ([`Session::decode_previews`]) finds which of its
/// strings is a preview ([`LongLine::text_at`]) and streams that one's text.
///
/// ```no_run
/// use arbor_tree::{OpenMode, Session, SessionOptions};
///
/// let s = Session::open("s.jsonl".as_ref(), OpenMode::ReadOnly, SessionOptions::default())?;
/// let p = s.branch_positions(None)[1];
/// let record = s.decode_previews(&[p])?.pop().flatten().map(|e| e.to_value()).unwrap_or_default();
/// if let Some(line) = s.long_line_at(p)? {
///     let preview = record.pointer("/message/content/0/text").and_then(|v| v.as_str()).unwrap_or("");
///     if let Some(long) = line.text_at("/message/content/0/text", preview) {
///         let mut out = std::io::stdout().lock();
///         line.decode(long, &mut |chunk| std::io::Write::write_all(&mut out, chunk.as_bytes()))?;
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LongLine<'s> {
    session: &'s Session,
    slot: &'s Slot,
    offset: u64,
    reduced: Reduced,
    texts: Vec<LongText>,
}

impl LongLine<'_> {
    /// The strings cut, in line order.
    pub fn texts(&self) -> &[LongText] {
        &self.texts
    }

    /// The cut string whose value is at `pointer` of the entry's record (of
    /// duplicate keys, the last: the one a decoded record keeps), when its
    /// preview's text is `preview`; `None` when the value there is whole.
    pub fn text_at(&self, pointer: &str, preview: &str) -> Option<&LongText> {
        let t = self.texts.iter().rev().find(|t| t.pointer.as_deref() == Some(pointer))?;
        (t.preview == preview).then_some(t)
    }

    /// The reduced line's JSON text (every long string cut to its preview).
    pub fn preview_json(&self) -> &[u8] {
        &self.reduced.bytes
    }

    /// Hands the whole decoded text of `text` (one of [`LongLine::texts`])
    /// to `emit` in chunks of valid UTF-8 (at most a MiB's worth each),
    /// read from the file a block at a time: exactly what decoding the
    /// whole line gives. A block that changed on disk since the line was
    /// reduced fails, before any of its text is handed on, with an I/O error
    /// holding [`TreeError::Changed`] naming the file and line; `emit`'s
    /// errors come back as they are.
    pub fn decode(&self, text: &LongText, emit: &mut dyn FnMut(&str) -> io::Result<()>) -> io::Result<()> {
        let Some(src) = self.session.src() else { return Err(io::Error::other("the session has no file")) };
        let decoded = decode_long_string(src, self.offset, &self.reduced, text.index, emit);
        decoded.map_err(|e| self.session.changed_io(self.slot.typed(e)))
    }
}

impl Session {
    /// The line of the entry at `p` when it is too long to hold (over
    /// [`LONG_LINE`]) and could be reduced: see [`LongLine`]. `None` for a
    /// short line, one held in memory, one only JavaScript's reading
    /// accepts, or one that must be read whole (then
    /// what the entry's decoders give is the whole text). Reads the line
    /// once, in windows; a line not where the index put it, or changed
    /// since the session was opened, fails with [`TreeError::Changed`].
    pub fn long_line_at(&self, p: Position) -> Result<Option<LongLine<'_>>, TreeError> {
        let Some(slot) = self.slot_at(p) else { return Ok(None) };
        // A line only JavaScript reads holds text a decoded record keeps otherwise (markers).
        if slot.held_json().is_some() || slot.js_only() {
            return Ok(None);
        }
        let (Some(reduced), Some((offset, _))) = (slot.reduced(self.src()).map_err(|e| self.stale(e))?, slot.src())
        else {
            return Ok(None);
        };
        let texts = long_texts(&reduced);
        Ok(Some(LongLine { session: self, slot, offset, reduced, texts }))
    }
}

impl Slot {
    /// True when the line of this slot is where the index put it (always
    /// true for slots that did not come from the index).
    pub(crate) fn line_is_sound(&self, cursor: &mut LineCursor<'_>) -> bool {
        if !self.placed_by_index() {
            return true;
        }
        match (cursor.src, self.span()) {
            (Some(src), Some((offset, len))) if self.is_long() => {
                long_line_is_sound(src, offset, len, &self.id()).unwrap_or(false)
            }
            _ => self.line_via(cursor).is_some(),
        }
    }

    /// True when the slot's line is longer than [`LONG_LINE`].
    pub(crate) fn is_long(&self) -> bool {
        self.src().is_some_and(|(_, len)| len > LONG_LINE)
    }

    /// The reduced form of the slot's line when it is long (`None` for a
    /// short line, or one that cannot be reduced). A long line that is not
    /// where the index put it, or read after the file changed, fails
    /// (never read again whole to say why).
    pub(super) fn reduced(&self, src: Option<&dyn ReadAt>) -> Result<Option<Reduced>, Stale> {
        let (Some(src), Some((offset, len))) = (src, self.src()) else { return Ok(None) };
        if len <= LONG_LINE {
            return Ok(None);
        }
        if self.placed_by_index() {
            let Some(before) = offset.checked_sub(1) else { return Err(self.misplaced()) };
            if !long_line_is_sound(src, before, len + 1, &self.id()).map_err(|e| self.unread(&e))? {
                return Err(self.misplaced());
            }
        }
        let reduced = match reduce_line(src, offset, offset + len as u64) {
            Ok(r) => r,
            Err(e) => return changed_in(&e).map_or(Ok(None), |what| Err(self.stale(what))),
        };
        Ok(reduced.filter(|r| r.len == len as u64))
    }

    /// Why a read of the slot's line failed, as a [`Stale`].
    fn unread(&self, e: &io::Error) -> Stale {
        match changed_in(e) {
            Some(what) => self.stale(what),
            None => self.stale(&format!("cannot read the line: {e}")),
        }
    }

    /// A failed read or copy of the slot's long line as an I/O error: one
    /// that says the file changed holds a [`Stale`] (the session turns it
    /// into [`crate::TreeError::Changed`]); any other is `e`.
    fn typed(&self, e: io::Error) -> io::Error {
        if let Some(what) = changed_in(&e) {
            return io::Error::other(self.stale(what));
        }
        match e.kind() {
            io::ErrorKind::InvalidData => io::Error::other(self.stale("the line changed on disk while it was copied")),
            _ => e,
        }
    }

    /// Copies a part of the slot's long line: `pick` is handed the line's
    /// reduced JSON text and gives a range of it, whose bytes in the file
    /// are first read in windows (each with the 64 bytes before it) by
    /// `refuse`, then copied to `out` a block at a time (see
    /// [`Slot::copy_long_text`]). `Ok(false)`, with nothing written, when the
    /// line is short or cannot be reduced, `pick` gives nothing or cuts a
    /// string, or `refuse` says so.
    pub(crate) fn copy_long_part(
        &self,
        src: Option<&dyn ReadAt>,
        pick: impl FnOnce(&str) -> Option<std::ops::Range<usize>>,
        refuse: impl Fn(&[u8]) -> bool,
        out: &mut dyn Write,
    ) -> io::Result<bool> {
        if self.held_json().is_some() || self.js_only() {
            return Ok(false);
        }
        let reduced = self.reduced(src).map_err(io::Error::other)?;
        let (Some(src), Some(r)) = (src, reduced) else { return Ok(false) };
        let Ok(text) = std::str::from_utf8(&r.bytes) else { return Ok(false) };
        let Some(range) = pick(text) else { return Ok(false) };
        let (Some(from), Some(to)) = (r.line_offset(range.start), r.line_offset(range.end)) else { return Ok(false) };
        let Some((offset, _)) = self.src() else { return Ok(false) };
        // The part's bytes as the file holds them, read for `refuse` a window at a time.
        let mut at = from;
        while at < to {
            let back = (at - from).min(64);
            let want = usize::try_from((to - at).min(4 << 20)).unwrap_or(4 << 20);
            let window = read_exact_at(src, offset + at - back, want + back as usize).map_err(|e| self.typed(e))?;
            if window.len() != want + back as usize {
                return Err(io::Error::other(self.stale("the file is shorter than when it was opened")));
            }
            if refuse(&window) {
                return Ok(false);
            }
            at += want as u64;
        }
        copy_line_range(src, offset, &r, (from, to), out).map_err(|e| self.typed(e))?;
        Ok(true)
    }

    /// Writes the slot's JSON text (with `as_written`, as the line holds
    /// it) to `out`, a long line copied from the file a block at a time,
    /// each block checked against what the reduction read; `None` when the
    /// line is short, held, or cannot be copied so (the caller reads it whole).
    pub(crate) fn copy_long_text(
        &self,
        src: Option<&dyn ReadAt>,
        as_written: bool,
        out: &mut dyn Write,
    ) -> Option<io::Result<()>> {
        if self.held_json().is_some() || (self.js_only() && !as_written) {
            return None;
        }
        let r = match self.reduced(src) {
            Ok(r) => r?,
            Err(e) => return Some(Err(io::Error::other(e))),
        };
        let text = trim_line(&r.bytes);
        let lead = (text.as_ptr() as usize).wrapping_sub(r.bytes.as_ptr() as usize);
        let trail = r.bytes.len() - lead - text.len();
        let (offset, _) = self.src()?;
        let copied = copy_line_range(src?, offset, &r, (lead as u64, r.len - trail as u64), out);
        Some(copied.map_err(|e| self.typed(e)))
    }
}

/// [`Slot::indexed_line`]'s check of a long line, read in windows: the
/// byte before it (at `offset`, the line then `len - 1` bytes) a newline,
/// the line ending in one, a JSON object's braces at its trimmed ends, and
/// the id's `"id":"…"` somewhere in it.
pub(super) fn long_line_is_sound(src: &dyn ReadAt, offset: u64, len: usize, id: &str) -> io::Result<bool> {
    const EDGE: usize = 64 << 10;
    let head = read_exact_at(src, offset, EDGE.min(len))?;
    let tail_at = offset + len.saturating_sub(EDGE) as u64;
    let tail = read_exact_at(src, tail_at, EDGE.min(len))?;
    if head.len() != EDGE.min(len) || tail.len() != head.len() {
        return Ok(false);
    }
    let (Some((&b'\n', line_head)), Some(&b'\n')) = (head.split_first(), tail.last()) else { return Ok(false) };
    if trim_line(line_head).first() != Some(&b'{') || trim_line(&tail).last() != Some(&b'}') {
        return Ok(false);
    }
    // The id's key and value may straddle two windows: each window starts that much before the last one's end.
    let overlap = 16 + 6 * id.len();
    let mut at = offset + 1;
    let end = offset + len as u64;
    while at < end {
        let want = usize::try_from(end - at).unwrap_or(usize::MAX).min(4 << 20);
        let window = read_exact_at(src, at, want)?;
        if window.len() != want {
            return Ok(false);
        }
        if holds_id(&window, id) {
            return Ok(true);
        }
        if at + want as u64 >= end {
            return Ok(false);
        }
        at += (want - overlap.min(want - 1)) as u64;
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sound(src: &dyn ReadAt, offset: u64, len: usize, id: &str) -> bool {
        long_line_is_sound(src, offset, len, id).unwrap_or(false)
    }

    /// A file of a short line, then a line whose id is `at` bytes into a long text.
    fn file(id_after: usize) -> (Vec<u8>, u64, usize) {
        let mut f = b"{\"a\":1}\n".to_vec();
        let offset = f.len() as u64 - 1;
        let text = "x".repeat(id_after);
        let line = format!("{{\"type\":\"message\",\"message\":{{\"content\":\"{text}\"}},\"id\":\"e1\"}}\n");
        f.extend_from_slice(line.as_bytes());
        (f, offset, line.len() + 1)
    }

    /// The id is found wherever it is in the line, across windows too; a
    /// line moved or changed is not sound.
    #[test]
    fn a_long_line_is_checked_in_windows() {
        for id_after in [10, (4 << 20) - 40, (4 << 20) - 20, 9 << 20] {
            let (f, offset, len) = file(id_after);
            assert!(sound(&f, offset, len, "e1"), "id after {id_after} bytes");
            assert!(!sound(&f, offset, len, "e2"), "another id");
            assert!(!sound(&f, offset + 1, len - 1, "e1"), "not after a newline");
            let mut cut = f.clone();
            cut.truncate(cut.len() - 2);
            cut.push(b'\n');
            assert!(!sound(&cut, offset, len - 1, "e1"), "no closing brace");
        }
    }
}
