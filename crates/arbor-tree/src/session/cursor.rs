//! The [`LineCursor`]: the lines of many slots read through one buffer of
//! the file, so that many lines cost a few large reads instead of one read
//! each.

use std::collections::VecDeque;
use std::fmt;
use std::iter::Peekable;

use arbor_log::scan::ReadAt;

/// Reads the lines of many slots through one window of the source.
///
/// Told where the next lines are ([`LineCursor::plan`]), a read takes in
/// the planned lines after the one asked for while the gaps between them
/// are short ([`LineCursor::GAP`]), up to 1 MiB: the lines of a context,
/// a few kilobytes each among other branches' lines, are read with little
/// more than themselves, and a run of adjacent lines in a few large reads.
///
/// Without a plan, the window doubles (up to 1 MiB) while requests land
/// just ahead of it and drops to single lines when they jump elsewhere, so
/// a walk that mostly moves forward through the file (a tree written depth
/// first) costs a few large reads, and one that hops between short side
/// branches reads little more than their lines.
///
/// Told the order every next line will be asked in ([`LineCursor::follow`]),
/// a read takes in the lines asked for next while each starts where the one
/// before ends (or a short gap after), up to 1 MiB: a walk that comes back
/// to lines it passed (a tree written depth first, branch after branch)
/// reads each line once. A source far away ([`ReadAt::remote`]) is also
/// told the spans to come in that order, 16 MiB of them ahead
/// ([`ReadAt::will_read`]), so that it may fetch many runs at once.
#[derive(Debug)]
pub(crate) struct LineCursor<'s> {
    pub(crate) src: Option<&'s dyn ReadAt>,
    /// `buf[..filled]` holds the file from `start` on; the rest is spare room.
    buf: Vec<u8>,
    filled: usize,
    start: u64,
    window: usize,
    /// The spans the next requests ask for, as `(start, end)` in file order.
    plan: Vec<(u64, u64)>,
    /// The order of the requests to come, when told.
    order: Option<Order<'s>>,
    /// Entries on long lines are decoded as previews (see [`crate::Session::read_previews`]).
    pub(crate) previews: bool,
}

/// The spans of the requests to come, in the order they come.
struct Order<'s> {
    /// The spans not yet taken into the window, as `(offset, len)`.
    next: Peekable<Box<dyn Iterator<Item = (u64, usize)> + 's>>,
    /// Spans taken into the window whose requests have not come yet.
    read: usize,
    /// For a source far away: the spans after the window already taken off
    /// `next` and told to the source ([`ReadAt::will_read`]), in order, and their bytes.
    told: VecDeque<(u64, usize)>,
    told_bytes: u64,
}

impl fmt::Debug for Order<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Order").field("read", &self.read).finish_non_exhaustive()
    }
}

impl Order<'_> {
    /// Told to a source far away ahead of the reads, at least (while the order lasts).
    const TELL: u64 = 16 << 20;

    /// The next span of the order.
    fn peek(&mut self) -> Option<(u64, usize)> {
        self.told.front().copied().or_else(|| self.next.peek().copied())
    }

    /// Takes the next span off the order.
    fn pop(&mut self) {
        match self.told.pop_front() {
            Some((_, len)) => self.told_bytes -= len as u64,
            None => drop(self.next.next()),
        }
    }

    /// Tells `src` (far away) the spans to come in their order, when fewer
    /// than half of [`Order::TELL`] bytes of them were told: it may then fetch
    /// many at once, in that order, instead of a statement a run.
    fn tell(&mut self, src: &dyn ReadAt) {
        if self.told_bytes >= Self::TELL / 2 {
            return;
        }
        while self.told_bytes < Self::TELL {
            let Some(span) = self.next.next() else { break };
            self.told.push_back(span);
            self.told_bytes += span.1 as u64;
        }
        let spans: Vec<(u64, u64)> = self.told.iter().map(|&(o, l)| (o, o + l as u64)).collect();
        src.will_read(&spans);
    }

    /// Takes the request for `(offset, len)` off the order; false when it
    /// is not the one the order says comes next (then the order is wrong).
    fn ask(&mut self, offset: u64, len: usize, inside: bool) -> bool {
        if self.read > 0 {
            self.read -= 1;
            return inside;
        }
        if self.peek() == Some((offset, len)) {
            self.pop();
            return true;
        }
        false
    }

    /// The end of a read from `offset` to `end`, taking in the requests that
    /// follow while each starts inside the read or a short gap after its
    /// end (the spans of lines placed by the index overlap by a byte), and
    /// the read stays within `max` bytes.
    fn read_on(&mut self, offset: u64, mut end: u64, gap: u64, max: u64) -> u64 {
        while let Some((o, l)) = self.peek() {
            let e = o.saturating_add(l as u64);
            if o < offset || o > end + gap || e > offset + max {
                break;
            }
            end = end.max(e);
            self.pop();
            self.read += 1;
        }
        end
    }
}

impl<'s> LineCursor<'s> {
    const MAX_WINDOW: usize = 1 << 20;
    const MIN_WINDOW: usize = 16 << 10;
    /// How far past the window a request still counts as moving forward.
    const SLACK: u64 = 64 << 10;
    /// The longest gap between planned lines a read goes through: reading
    /// it costs about what a read of its own does.
    const GAP: u64 = 16 << 10;

    /// A cursor whose first read is just the line asked for (one line read
    /// through a fresh cursor costs what a single read does).
    pub(crate) fn new(src: Option<&'s dyn ReadAt>) -> LineCursor<'s> {
        LineCursor {
            src,
            buf: Vec::new(),
            filled: 0,
            start: 0,
            window: 0,
            plan: Vec::new(),
            order: None,
            previews: false,
        }
    }

    /// Says the order of every request from now on, as `(offset, len)`:
    /// each read then takes in the requests that come next while they are
    /// adjacent in the file. A request out of that order is still answered,
    /// and the cursor stops following the order.
    pub(crate) fn follow(&mut self, order: impl Iterator<Item = (u64, usize)> + 's) {
        let next: Box<dyn Iterator<Item = (u64, usize)> + 's> = Box::new(order);
        self.order = Some(Order { next: next.peekable(), read: 0, told: VecDeque::new(), told_bytes: 0 });
    }

    /// Says where the next lines asked for are, as `(offset, len)` (in any
    /// order): reads take in the planned lines close after the one asked
    /// for, and no more. Asking for another line still reads it.
    pub(crate) fn plan(&mut self, spans: impl IntoIterator<Item = (u64, usize)>) {
        self.plan.clear();
        self.plan.extend(spans.into_iter().map(|(offset, len)| (offset, offset + len as u64)));
        if !self.plan.is_sorted() {
            self.plan.sort_unstable();
        }
        if let Some(src) = self.src {
            src.will_read(&self.plan);
        }
    }

    /// The `len` bytes at `offset`; `None` when there is no source or the file is shorter now.
    pub(crate) fn line(&mut self, offset: u64, len: usize) -> Option<&[u8]> {
        let end = self.start + self.filled as u64;
        let inside = offset >= self.start && offset + len as u64 <= end;
        if self.order.as_mut().is_some_and(|o| !o.ask(offset, len, inside)) {
            self.order = None;
        }
        if !inside {
            let src = self.src?;
            let want = if let Some(order) = &mut self.order {
                if src.remote() {
                    order.tell(src);
                }
                let end = order.read_on(offset, offset + len as u64, Self::GAP, Self::MAX_WINDOW as u64);
                usize::try_from(end - offset).unwrap_or(len)
            } else if self.plan.is_empty() {
                self.window = self.next_window(offset);
                len.max(self.window)
            } else {
                usize::try_from(self.planned_end(offset, offset + len as u64) - offset).unwrap_or(len)
            };
            if self.buf.len() < want {
                self.buf.resize(want, 0);
            }
            let mut filled = 0;
            while filled < want {
                match src.read_at(&mut self.buf[filled..want], offset + filled as u64) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            self.filled = filled;
            self.start = offset;
            if filled < len {
                return None;
            }
        }
        let at = usize::try_from(offset - self.start).ok()?;
        Some(&self.buf[at..at + len])
    }

    /// The window of an unplanned read at `offset`: doubled when the read
    /// moves forward, none (just the line) when it jumps.
    fn next_window(&self, offset: u64) -> usize {
        let end = self.start + self.filled as u64;
        // Ahead of the window, or starting inside it and running past
        // its end (a line read with the byte before it), is forward.
        let forward = self.filled > 0
            && offset >= self.start
            && offset.saturating_sub(end) <= Self::SLACK.max(self.window as u64);
        if forward {
            (self.window * 2).clamp(Self::MIN_WINDOW, Self::MAX_WINDOW)
        } else {
            0
        }
    }

    /// The end of a read from `offset` that must reach `end`: it goes on
    /// through the planned spans after it while each starts at most
    /// [`LineCursor::GAP`] after the last and the read stays within 1 MiB.
    fn planned_end(&self, offset: u64, mut end: u64) -> u64 {
        let cap = offset + Self::MAX_WINDOW as u64;
        let from = self.plan.partition_point(|&(_, e)| e <= end);
        // A source far away reads only the planned lines, no gap between them.
        let gap = if self.src.is_some_and(|s| s.remote()) { 0 } else { Self::GAP };
        for &(s, e) in &self.plan[from..] {
            if s > end + gap || e > cap {
                break;
            }
            end = end.max(e);
        }
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::{AtomicU64, Ordering};

    /// A file that counts the reads made of it and the bytes they return.
    #[derive(Debug)]
    struct Counted {
        file: Vec<u8>,
        reads: AtomicU64,
        bytes: AtomicU64,
    }

    impl ReadAt for Counted {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
            let n = self.file.read_at(buf, offset)?;
            self.reads.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(n as u64, Ordering::Relaxed);
            Ok(n)
        }
        fn len(&self) -> std::io::Result<u64> {
            Ok(self.file.len() as u64)
        }
    }

    /// Lines of every size from 1 byte to past the largest window, and their places.
    fn lines_file() -> (Vec<u8>, Vec<(u64, usize)>) {
        let mut file = Vec::new();
        let mut lines = Vec::new();
        let mut len = 1usize;
        while file.len() < 12 << 20 {
            let start = file.len();
            file.extend((0..len).map(|k| b'a' + ((start + k) % 26) as u8));
            lines.push((start as u64, len));
            len = (len * 7 + 3) % (5 << 20) + 1;
        }
        (file, lines)
    }

    #[test]
    fn the_line_cursor_reads_what_is_asked_whatever_the_order_or_the_plan() {
        let (file, lines) = lines_file();
        let src: &dyn ReadAt = &file;
        let n = lines.len();
        // Forward, backward, jumping, and the same line twice.
        let order: Vec<usize> =
            (0..n).chain((0..n).rev()).chain((0..n).map(|k| k * 7919 % n)).chain([3, 3, 0]).collect();
        // No plan, the plan of what is asked, a plan of other lines.
        let plans: [Vec<(u64, usize)>; 3] =
            [vec![], order.iter().map(|&i| lines[i]).collect(), (0..n).step_by(3).map(|i| lines[i]).collect()];
        for plan in plans {
            let mut cursor = LineCursor::new(Some(src));
            cursor.plan(plan.iter().copied());
            for &i in &order {
                let (offset, len) = lines[i];
                let got = cursor.line(offset, len).expect("inside the file");
                assert_eq!(got, &file[offset as usize..offset as usize + len], "line {i}");
            }
            // Past the end of the file (it shrank since it was opened): nothing.
            assert!(cursor.line(file.len() as u64 - 2, 5).is_none());
        }
        assert!(LineCursor::new(None).line(0, 1).is_none());
    }

    #[test]
    fn planned_reads_take_in_close_lines_and_skip_far_gaps() {
        // Lines of 3 kB: runs of 10 adjacent ones, between the runs gaps of
        // 100 kB (read around), and inside some runs gaps of 1 kB (read through).
        let mut wanted = vec![];
        let mut at = 0u64;
        for run in 0..100u64 {
            for k in 0..10u64 {
                wanted.push((at, 3000usize));
                at += 3000 + if run % 2 == 0 && k == 4 { 1000 } else { 0 };
            }
            at += 100_000;
        }
        let counted = Counted { file: vec![b'x'; at as usize], reads: AtomicU64::new(0), bytes: AtomicU64::new(0) };
        let mut cursor = LineCursor::new(Some(&counted));
        cursor.plan(wanted.iter().copied());
        for &(offset, len) in &wanted {
            assert_eq!(cursor.line(offset, len).map(<[u8]>::len), Some(len));
        }
        // One read per run, and just the runs' bytes.
        assert_eq!(counted.reads.load(Ordering::Relaxed), 100);
        assert_eq!(counted.bytes.load(Ordering::Relaxed), 100 * 30_000 + 50 * 1000);
    }

    #[test]
    fn following_the_order_reads_each_run_of_lines_asked_in_turn_once() {
        // 3 kB lines, asked for the way a depth-first walk asks: lines 0..40,
        // then a branch written later (200..230), then back to 40..200. Lines
        // placed by the index are asked with the `\n` before them, so that
        // each span overlaps the one before by a byte.
        let (n, size) = (230u64, 3000u64);
        let order: Vec<u64> = (0..40).chain(200..n).chain(40..200).collect();
        let counted =
            Counted { file: vec![b'x'; (n * size) as usize], reads: AtomicU64::new(0), bytes: AtomicU64::new(0) };
        for overlap in [0, 1] {
            let spans: Vec<(u64, usize)> =
                order.iter().map(|&k| ((k * size).saturating_sub(overlap), (size + overlap) as usize)).collect();
            counted.reads.store(0, Ordering::Relaxed);
            counted.bytes.store(0, Ordering::Relaxed);
            let mut cursor = LineCursor::new(Some(&counted));
            cursor.follow(spans.clone().into_iter());
            for &(offset, len) in &spans {
                assert_eq!(cursor.line(offset, len).map(<[u8]>::len), Some(len));
            }
            // One read per run (the last run is 480 kB: under the 1 MiB cap),
            // every byte read once (but the bytes the runs share).
            assert_eq!(counted.reads.load(Ordering::Relaxed), 3, "overlap {overlap}");
            assert!(counted.bytes.load(Ordering::Relaxed) <= n * size + 3 * overlap, "overlap {overlap}");
        }
    }

    #[test]
    fn a_request_out_of_the_order_is_answered_and_the_order_dropped() {
        let (file, lines) = lines_file();
        let src: &dyn ReadAt = &file;
        let mut cursor = LineCursor::new(Some(src));
        cursor.follow(lines.clone().into_iter());
        // In order, then a line the order does not say comes next, then on in order.
        let asked = [0, 1, 2, 7, 3, 4, 5, 6, 8];
        for &i in &asked {
            let (offset, len) = lines[i];
            assert_eq!(cursor.line(offset, len), Some(&file[offset as usize..offset as usize + len]), "line {i}");
        }
        assert!(cursor.order.is_none(), "an order that proved wrong is not followed");
    }
}
