//! Physical lines of a session file from a byte offset on, read in large
//! positioned reads: only complete lines, so a line a live writer is still
//! writing waits for the next refresh. A line longer than [`MAX_LINE`] is
//! read past, not held (its bytes still go into the checksum): memory
//! follows the buffer, not the file's shape.

use std::cell::Cell;
use std::io;

use arbor_log::scan::ReadAt;

use crate::stamp::Checksum;

const CHUNK: usize = 256 << 10;

/// The longest line held; a longer one is yielded empty, marked [`Line::long`].
pub(crate) const MAX_LINE: usize = arbor_search::MAX_LINE;

thread_local! {
    /// Each thread's read buffer, kept from one file to the next: a fresh
    /// 256 KiB buffer per file costs its page faults (and the kernel's
    /// zeroing) every time, which on a store of short sessions is a good part
    /// of a first listing.
    static BUFFER: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// One physical line.
#[derive(Debug)]
pub(crate) struct Line<'a> {
    /// Its bytes, the `\n` included (absent only on a final line without one);
    /// empty for a long line.
    pub bytes: &'a [u8],
    /// True for a line longer than [`MAX_LINE`], read past.
    pub long: bool,
}

/// The lines of `[from, end)`, where `end` is the file's size when the refresh looked.
#[derive(Debug)]
pub(crate) struct Lines<'a> {
    src: &'a dyn ReadAt,
    /// Next byte to read from the file.
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    /// `buf[start..filled]` holds unread bytes from file offset `base + start`.
    start: usize,
    filled: usize,
    base: u64,
    /// The checksum of the bytes of every line yielded so far.
    sum: Checksum,
}

impl<'a> Lines<'a> {
    pub fn new(src: &'a dyn ReadAt, from: u64, end: u64) -> Lines<'a> {
        let size = usize::try_from(end.saturating_sub(from)).unwrap_or(CHUNK).clamp(1, CHUNK);
        // Bytes are read into the buffer before they are looked at: what a
        // kept buffer held before does not matter, only its length.
        let mut buf = BUFFER.take();
        if buf.len() < size {
            buf.resize(size, 0);
        }
        Lines { src, pos: from, end, buf, start: 0, filled: 0, base: from, sum: Checksum::default() }
    }

    /// Like [`Lines::new`], carrying on the checksum of the bytes before `from`.
    pub fn with_sum(src: &'a dyn ReadAt, from: u64, end: u64, sum: Checksum) -> Lines<'a> {
        let mut lines = Lines::new(src, from, end);
        lines.sum = sum;
        lines
    }

    /// The checksum of everything before the lines not yet yielded (the bytes
    /// of [`Lines::rest`] are not in it).
    pub fn sum(&self) -> Checksum {
        self.sum
    }

    /// The next complete line, or `None` at the end (see [`Lines::rest`]).
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.filled]) {
                let (a, b) = (self.start, self.start + i + 1);
                self.start = b;
                self.sum.update(&self.buf[a..b]);
                return Ok(Some(Line { bytes: &self.buf[a..b], long: false }));
            }
            if self.pos >= self.end {
                return Ok(None);
            }
            if self.start == 0 && self.filled >= MAX_LINE {
                return self.read_past();
            }
            self.fill()?;
        }
    }

    /// Reads past a line longer than [`MAX_LINE`] (its first bytes fill the
    /// buffer) to its end; `None` when the range ends first (the line is not whole).
    fn read_past(&mut self) -> io::Result<Option<Line<'_>>> {
        let offset = self.base;
        let mut sum = self.sum;
        // The line starts at `offset`: what follows is read past.
        loop {
            let unread = &self.buf[self.start..self.filled];
            if let Some(i) = memchr::memchr(b'\n', unread) {
                sum.update(&unread[..=i]);
                self.start += i + 1;
                self.sum = sum;
                return Ok(Some(Line { bytes: &[], long: true }));
            }
            sum.update(unread);
            self.base += self.filled as u64;
            self.start = 0;
            self.filled = 0;
            if self.pos >= self.end {
                // The range ends inside the line: it is not whole yet.
                self.base = offset;
                return Ok(None);
            }
            self.fill()?;
        }
    }

    /// Reads more of the file behind the unread bytes; stops at `end`.
    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.filled, 0);
            self.base += self.start as u64;
            self.filled -= self.start;
            self.start = 0;
        }
        if self.filled == self.buf.len() {
            // A line longer than the buffer.
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let want = (self.buf.len() - self.filled).min(usize::try_from(self.end - self.pos).unwrap_or(usize::MAX));
        let n = loop {
            match self.src.read_at(&mut self.buf[self.filled..self.filled + want], self.pos) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r?,
            }
        };
        if n == 0 {
            // The file is shorter than when it was looked at: stop here.
            self.end = self.pos;
        }
        self.filled += n;
        self.pos += n as u64;
        Ok(())
    }

    /// After [`Lines::next_line`] returned `None`: the offset where the
    /// complete lines end, and the bytes after it (a final line without its
    /// `\n`, possibly still being written), if any.
    pub fn rest(&self) -> (u64, &[u8]) {
        (self.base + self.start as u64, &self.buf[self.start..self.filled])
    }
}

impl Drop for Lines<'_> {
    fn drop(&mut self) {
        // A buffer grown for one very long line is not kept.
        if self.buf.len() <= 4 * CHUNK {
            BUFFER.set(std::mem::take(&mut self.buf));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    type Read = (Vec<(u64, Vec<u8>)>, u64, Vec<u8>);

    /// Every line of `bytes` from `from`, then where the complete lines end and the rest.
    fn all(bytes: &[u8], from: u64) -> Read {
        let src = bytes.to_vec();
        let mut lines = Lines::new(&src, from, bytes.len() as u64);
        let mut out = vec![];
        let mut at = from;
        while let Some(l) = lines.next_line().unwrap() {
            out.push((at, l.bytes.to_vec()));
            at += l.bytes.len() as u64;
        }
        let (end, rest) = lines.rest();
        (out, end, rest.to_vec())
    }

    #[test]
    fn a_kept_buffer_holds_nothing_of_the_file_before() {
        // A big file fills the thread's buffer with its bytes; smaller files read after it see only their own.
        let big: Vec<u8> = (0..CHUNK + 999).map(|k| if k % 100 == 99 { b'\n' } else { b'q' }).collect();
        assert_eq!(all(&big, 0).0.len(), (CHUNK + 999) / 100);
        for small in [&b"ab\ncd"[..], b"x", b"", b"\n\n"] {
            let (lines, end, rest) = all(small, 0);
            let mut seen: Vec<u8> = lines.into_iter().flat_map(|(_, l)| l).collect();
            seen.extend_from_slice(&rest);
            assert_eq!((seen.as_slice(), end as usize + rest.len()), (small, small.len()));
        }
    }

    #[test]
    fn complete_lines_then_the_partial_rest() {
        let (lines, end, rest) = all(b"ab\n\ncd\nef", 0);
        assert_eq!(lines, vec![(0, b"ab\n".to_vec()), (3, b"\n".to_vec()), (4, b"cd\n".to_vec())]);
        assert_eq!((end, rest), (7, b"ef".to_vec()));
        let (lines, end, rest) = all(b"ab\ncd\n", 3);
        assert_eq!(lines, vec![(3, b"cd\n".to_vec())]);
        assert_eq!((end, rest), (6, vec![]));
    }

    #[test]
    fn a_line_longer_than_any_buffer_is_read_past_and_summed() {
        let mut bytes = b"head\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', MAX_LINE + 5));
        bytes.extend_from_slice(b"\ntail\n");
        let mut lines = Lines::new(&bytes, 0, bytes.len() as u64);
        let first = lines.next_line().unwrap().map(|l| (l.bytes.to_vec(), l.long));
        assert_eq!(first, Some((b"head\n".to_vec(), false)));
        assert!(lines.next_line().unwrap().is_some_and(|l| l.long && l.bytes.is_empty()));
        assert_eq!(lines.next_line().unwrap().map(|l| l.bytes.to_vec()), Some(b"tail\n".to_vec()));
        assert!(lines.next_line().unwrap().is_none());
        assert_eq!(lines.sum(), Checksum::of(&bytes, bytes.len() as u64).unwrap());
        assert!(lines.buf.len() <= MAX_LINE, "the buffer never held the line");
        // Cut inside the long line: it is not whole yet.
        let cut = 5 + MAX_LINE as u64 + 2;
        let mut lines = Lines::new(&bytes, 0, cut);
        assert!(lines.next_line().unwrap().is_some());
        assert!(lines.next_line().unwrap().is_none());
        assert_eq!(lines.rest().0, 5);
    }

    #[test]
    fn lines_longer_than_a_chunk() {
        let mut bytes = vec![b'x'; CHUNK * 2 + 17];
        bytes.push(b'\n');
        bytes.extend_from_slice(b"y\n");
        let (lines, end, _) = all(&bytes, 0);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].0, CHUNK as u64 * 2 + 18);
        assert_eq!(end, bytes.len() as u64);
    }
}
