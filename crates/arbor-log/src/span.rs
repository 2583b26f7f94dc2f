//! The lines that start in a byte range of a file, read a chunk at a time by
//! positioned reads: how the parallel scans ([`crate::scan`] and
//! [`crate::stream`]) share a file out among threads without reading any of
//! it twice.
//!
//! A line belongs to the range its first byte is in, so ranges cut at any
//! byte offsets split the file's lines between them: a range reads the line
//! that straddles its end whole, and the next range skips it.
//!
//! A line longer than [`LONG_LINE`] is not held: it is read again in
//! windows and handed over reduced ([`crate::long`]), with its length in
//! the file beside it; only a line that cannot be reduced is held whole.

use std::io;

use crate::long::{reduce_line, LONG_LINE};
use crate::read_at::{read_some, ReadAt};

/// Small enough that a chunk read is still in the core's cache when its lines are scanned.
pub(crate) const CHUNK: usize = 256 << 10;

/// Bytes read at a time past a range's end, to finish the line that straddles it.
const TAIL: usize = 16 << 10;

/// Calls `line(bytes, offset, length)` for each line whose first byte is
/// in `[from, to)`, in order, reading nothing at or past `len` (the file's
/// length when the read began: bytes appended since are not read, so the
/// last line may lack its `\n`); returns how many lines there were.
/// `bytes` is the line, or its reduced form for a long line (see the
/// module's docs); `length` is always the line's length in the file.
pub(crate) fn lines_starting_in(
    src: &dyn ReadAt,
    (from, to): (u64, u64),
    len: u64,
    line: &mut dyn FnMut(&[u8], u64, usize),
) -> io::Result<usize> {
    let to = to.min(len);
    if from >= to {
        return Ok(0);
    }
    // Start one byte early: a range whose first byte follows a `\n` starts with a line.
    let mut pos = from.saturating_sub(1);
    let mut skip = from > 0;
    let first = usize::try_from(to - pos).map_or(CHUNK, |n| n.saturating_add(1).min(CHUNK));
    let mut buf = vec![0u8; first.max(1)];
    // buf[..filled] holds the file from offset `base`.
    let mut base = pos;
    let mut filled = 0usize;
    // `buf[..searched]` holds no line end after the current line's start: a
    // line longer than the buffer is searched once, not again at each read.
    let mut searched = 0usize;
    // Lines handed over; the start of a long line that could not be reduced (held whole).
    let (mut count, mut whole) = (0usize, None);
    loop {
        if filled == buf.len() {
            // One line longer than the buffer: grow.
            buf.resize(buf.len() * 2, 0);
        }
        let want = read_len(buf.len() - filled, filled, pos, to, len);
        let n = if want == 0 { 0 } else { read_some(src, &mut buf[filled..filled + want], pos)? };
        let eof = n == 0;
        (filled, pos) = (filled + n, pos + n as u64);
        let mut start = 0usize;
        if skip {
            // The bytes up to the first line start are the end of the range before's last line.
            let Some(i) = memchr::memchr(b'\n', &buf[..filled]) else {
                // No line starts in the range: the line before runs past its end.
                if eof || base + filled as u64 >= to {
                    return Ok(0);
                }
                (base, filled, searched) = (base + filled as u64, 0, 0);
                continue;
            };
            (start, skip) = (i + 1, false);
        }
        let scanned_from = start.max(searched);
        for nl in memchr::memchr_iter(b'\n', &buf[scanned_from..filled]) {
            let at = base + start as u64;
            if at >= to {
                return Ok(count);
            }
            let end = scanned_from + nl + 1;
            line(&buf[start..end], at, end - start);
            count += 1;
            start = end;
        }
        let at = base + start as u64;
        if at >= to {
            return Ok(count);
        }
        if eof {
            if start < filled {
                line(&buf[start..filled], at, filled - start);
                count += 1;
            }
            return Ok(count);
        }
        if filled - start > LONG_LINE {
            if let Some(next) = hand_reduced(src, (at, len), &mut whole, line)? {
                count += 1; // On after the line, with an empty buffer.
                (base, pos, filled, searched) = (next, next, 0, 0);
                continue;
            }
        }
        buf.copy_within(start..filled, 0);
        filled -= start;
        searched = filled;
        base = at;
    }
}

/// Hands the long line at `at` to `line` reduced, unless it is the one at
/// `whole` (it could not be): the offset after it, or `None` when it could
/// not be reduced (`whole` then says so, and the caller holds it whole).
fn hand_reduced(
    src: &dyn ReadAt,
    (at, len): (u64, u64),
    whole: &mut Option<u64>,
    line: &mut dyn FnMut(&[u8], u64, usize),
) -> io::Result<Option<u64>> {
    if *whole == Some(at) {
        return Ok(None);
    }
    match reduce_line(src, at, len)? {
        Some(r) => {
            line(&r.bytes, at, usize::try_from(r.len).unwrap_or(usize::MAX));
            Ok(Some(at + r.len))
        }
        None => {
            *whole = Some(at);
            Ok(None)
        }
    }
}

/// How much the next read at `pos` takes: the room left in the buffer
/// (`room`, with `filled` bytes held), up to the range's end `to` while in
/// it, and never past `len`. Past the range, the line that straddles its
/// end is finished in reads that grow with it (a 200 MB line is not 12,800
/// reads of 16 KiB).
fn read_len(room: usize, filled: usize, pos: u64, to: u64, len: u64) -> usize {
    let left = usize::try_from(len.saturating_sub(pos)).unwrap_or(usize::MAX);
    let want =
        if pos < to { room.min(usize::try_from(to - pos).unwrap_or(usize::MAX)) } else { room.min(TAIL.max(filled)) };
    want.min(left)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(data: &[u8], from: u64, to: u64) -> Vec<(u64, Vec<u8>)> {
        let mut out = vec![];
        let len = data.len() as u64;
        let n = lines_starting_in(&data.to_vec(), (from, to), len, &mut |b, at, _| out.push((at, b.to_vec()))).unwrap();
        assert_eq!(n, out.len());
        out
    }

    /// Ranges cut at every offset split the lines between them: each line
    /// once, whole, in order, whatever the cuts.
    #[test]
    fn ranges_cut_anywhere_split_the_lines() {
        let data = b"ab\n\ncdef\n{\"x\":1}\nno newline".to_vec();
        let all = lines_of(&data, 0, u64::MAX);
        let starts: Vec<u64> = all.iter().map(|(at, _)| *at).collect();
        assert_eq!(starts, [0, 3, 4, 9, 17]);
        assert_eq!(all.iter().map(|(_, b)| b.len()).sum::<usize>(), data.len());
        for a in 0..=data.len() as u64 {
            for b in a..=data.len() as u64 + 2 {
                let mut got = lines_of(&data, 0, a);
                got.extend(lines_of(&data, a, b));
                got.extend(lines_of(&data, b, u64::MAX));
                assert_eq!(got, all, "cut at {a} and {b}");
            }
        }
    }

    /// A line longer than a chunk, straddling the range's end, is read whole.
    #[test]
    fn a_long_line_across_the_end_is_read_whole() {
        let mut data = b"short\n".to_vec();
        data.extend(std::iter::repeat_n(b'y', 3 * CHUNK));
        data.extend_from_slice(b"\nlast\n");
        let got = lines_of(&data, 0, 7);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].1.len(), 3 * CHUNK + 1);
        assert_eq!(lines_of(&data, 7, u64::MAX), vec![(data.len() as u64 - 5, b"last\n".to_vec())]);
    }

    /// Positioned reads of a source, counted.
    #[derive(Debug)]
    struct Counted(Vec<u8>, std::sync::atomic::AtomicUsize);

    impl ReadAt for Counted {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.0.read_at(buf, offset)
        }
        fn len(&self) -> io::Result<u64> {
            Ok(self.0.len() as u64)
        }
    }

    /// A line of many megabytes straddling the range's end is finished in
    /// reads that grow with it, each searched once: time linear in the
    /// line's length (item 1 of issue #38; before, 16 KiB reads, each
    /// followed by a search of the whole line so far: `check` took 67 s on
    /// a 200 MB line, 0.4 s on 25 MB).
    #[test]
    fn a_line_of_megabytes_takes_a_few_reads() {
        let mut data = b"{}\n".to_vec();
        data.extend(std::iter::repeat_n(b'z', 32 << 20));
        data.push(b'\n');
        let src = Counted(data, 0.into());
        let mut lens = vec![];
        lines_starting_in(&src, (0, 4), src.0.len() as u64, &mut |b, _, _| lens.push(b.len())).unwrap();
        assert_eq!(lens, [3, (32 << 20) + 1]);
        let reads = src.1.load(std::sync::atomic::Ordering::Relaxed);
        assert!(reads < 40, "{reads} reads for a 32 MiB line (2,048 before)");
    }

    /// A long line of JSON is not held: it is handed over reduced, with its
    /// length in the file, in reads of a MiB, and the lines after it follow.
    #[test]
    fn a_long_json_line_is_handed_over_reduced() {
        let mut data = b"{}\n{\"text\":\"".to_vec();
        data.extend(std::iter::repeat_n(b'z', 32 << 20));
        data.extend_from_slice(b"\"}\n{\"a\":1}\n");
        let src = Counted(data, 0.into());
        let mut got = vec![];
        let len = src.0.len() as u64;
        for (from, to) in [(0, 4), (4, len)] {
            lines_starting_in(&src, (from, to), len, &mut |b, at, n| got.push((at, b.len(), n))).unwrap();
        }
        let long = (32 << 20) + 12;
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].0, 3);
        assert_eq!(got[1].2, long);
        assert!(got[1].1 < 8 << 10, "{} bytes handed over", got[1].1);
        assert_eq!(got[2], (3 + long as u64, 8, 8));
        // The range before reads up to LONG_LINE, then the reducer 1 MiB at
        // a time; the range after skips through it 256 KiB at a time.
        let reads = src.1.load(std::sync::atomic::Ordering::Relaxed);
        assert!(reads < 200, "{reads} reads");
    }

    /// Nothing at or past `len` is read: a line cut there ends there.
    #[test]
    fn nothing_past_the_length_is_read() {
        let data = b"one
two
three
"
        .to_vec();
        let mut got = vec![];
        lines_starting_in(&data, (0, u64::MAX), 10, &mut |b, at, _| got.push((at, b.to_vec()))).unwrap();
        assert_eq!(got, [(0, b"one\n".to_vec()), (4, b"two\n".to_vec()), (8, b"th".to_vec())]);
        got.clear();
        lines_starting_in(&data, (5, 9), 10, &mut |b, at, _| got.push((at, b.to_vec()))).unwrap();
        assert_eq!(got, [(8, b"th".to_vec())]);
    }
}
