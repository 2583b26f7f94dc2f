//! A whole line's string masks, made in one pass before the line is parsed.
//!
//! [`super::Masks`] reads a block when a string reaches it, and a long
//! string pays, block after block, for finding where it ends and checking
//! its escapes. Here one pass over the line makes, for every 64-byte block,
//! the mask of its quotes that end a string (no backslash escapes them) and
//! the mask of its backslashes, checks every escape at once, and learns
//! whether the line is printable ASCII. A string is then a search for the
//! next set bit: a word per 64 bytes.
//!
//! A line with an escape that is not a simple one (`\u`, or one JSON
//! refuses) gets no masks: its strings are read block by block as before,
//! where `\u` escapes are decided one at a time.

use std::cell::Cell;

use wide::u8x16;

use super::{block_at, block_masks, escaped_by};

/// What the pass learned of a line's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bytes {
    /// Every byte is in 0x20..=0x7F.
    PrintableAscii,
    /// No byte is below 0x20, and some are 0x80 or above.
    NoControl,
    /// A byte below 0x20.
    Control,
}

/// The masks of one line (see the module doc). Reused from line to line.
#[derive(Debug, Default)]
pub(super) struct LineMasks {
    /// Per block: the quotes no backslash escapes (the ends of strings).
    pub quotes: Vec<u64>,
    /// Per block: the backslashes.
    pub backslashes: Vec<u64>,
    /// The blocks with escapes other than `\"` and `\\`: the block and those
    /// escaped bytes (the first few slots hold the line's: see [`LineMasks::fill`]).
    others: Vec<(usize, u64)>,
}

thread_local! {
    /// The masks' room, kept from line to line.
    static SCRATCH: Cell<LineMasks> = Cell::default();
}

impl LineMasks {
    /// This thread's masks (empty, with the room the last line left).
    pub fn take() -> LineMasks {
        SCRATCH.with(Cell::take)
    }

    /// Keeps the room for the next line of this thread.
    pub fn give_back(self) {
        SCRATCH.with(|cell| cell.set(self));
    }

    /// Makes the masks of `line`: true when every escape in it is a simple
    /// one, with what its bytes are.
    pub fn fill(&mut self, line: &[u8]) -> (bool, Bytes) {
        self.quotes.clear();
        self.backslashes.clear();
        // Room for a slot a block, kept from line to line (never cleared: slots are written before they are read).
        let blocks = line.len().div_ceil(64);
        if self.others.len() < blocks {
            self.others.resize(blocks, (0, 0));
        }
        let (mut lo, mut hi) = (u8x16::splat(0xFF), u8x16::splat(0));
        // The first byte of the next block is escaped.
        let mut carry = false;
        // Blocks in `others` so far.
        let mut n = 0;
        let mut pad = [b' '; 64];
        for (k, chunk) in line.chunks(64).enumerate() {
            let block = block_at(chunk, &mut pad);
            let (q, b) = block_masks(block, |v| {
                lo = lo.min(v);
                hi = hi.max(v);
            });
            let escaped = escaped_by(b, carry);
            carry = (b & !escaped) >> 63 == 1;
            // Escaped quotes and backslashes are simple escapes; the blocks
            // with others are listed without a branch (about every other
            // block of code has one, which a branch would guess wrong) and
            // looked at after the pass.
            let others = escaped & !(q | b);
            self.others[n] = (k, others);
            n += usize::from(others != 0);
            self.quotes.push(q & !escaped);
            self.backslashes.push(b);
        }
        // Escaped bytes that are not a simple escape's letter.
        let mut not_simple = 0u64;
        for &(k, others) in &self.others[..n] {
            let block = block_at(&line[k * 64..line.len().min(k * 64 + 64)], &mut pad);
            not_simple |= others & !simple_escape_letters(block);
        }
        // A backslash ending the line escapes nothing there is: not simple.
        let simple = not_simple == 0 && !carry;
        let bytes = if lo.to_array().iter().any(|&c| c < 0x20) {
            Bytes::Control
        } else if hi.to_array().iter().any(|&c| c >= 0x80) {
            Bytes::NoControl
        } else {
            Bytes::PrintableAscii
        };
        (simple, bytes)
    }

    /// The string whose content starts at `start` (after its opening quote):
    /// the position of its closing quote and whether it holds a backslash;
    /// `None` when no quote ends it.
    pub fn string_at(&self, start: usize) -> Option<(usize, bool)> {
        let mut k = start / 64;
        let from = u64::MAX << (start % 64);
        let mut quotes = self.quotes.get(k)? & from;
        let mut backslashes = self.backslashes[k] & from;
        let mut escaped = false;
        while quotes == 0 {
            escaped |= backslashes != 0;
            k += 1;
            quotes = *self.quotes.get(k)?;
            backslashes = self.backslashes[k];
        }
        // The bits below the first quote.
        let before = (quotes & quotes.wrapping_neg()) - 1;
        escaped |= backslashes & before != 0;
        Some((k * 64 + quotes.trailing_zeros() as usize, escaped))
    }
}

/// The bytes of a block that are the letter of a simple escape other than
/// `\"` and `\\`: `/`, `b`, `f`, `n`, `r`, `t`.
fn simple_escape_letters(block: &[u8; 64]) -> u64 {
    let mut letters = 0u64;
    for (j, lane) in block.chunks_exact(16).enumerate() {
        let v = u8x16::new(lane.try_into().unwrap_or_default());
        let hit = b"/bfnrt".iter().fold(u8x16::splat(0), |hit, &c| hit | v.simd_eq(u8x16::splat(c)));
        letters |= u64::from(hit.to_bitmask()) << (16 * j);
    }
    letters
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every string's end and escape flag, byte by byte: the reading the masks must give.
    fn slow_string_at(line: &[u8], start: usize) -> Option<(usize, bool)> {
        let mut i = start;
        let mut escaped = false;
        while i < line.len() {
            match line[i] {
                b'"' => return Some((i, escaped)),
                b'\\' => {
                    escaped = true;
                    i += 2;
                }
                _ => i += 1,
            }
        }
        None
    }

    fn lines() -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> =
            vec![br#"{"a":"x\"y","b":"\\","c":"\\\"","d":""}"#.to_vec(), b"\"".to_vec(), b"\\".to_vec(), b"".to_vec()];
        // Random lines of quotes, escapes and plain text (runs of backslashes
        // included), of many lengths, so that strings cross blocks everywhere.
        let tokens: [&[u8]; 9] = [b"\"", b"\\\\", b"\\\"", b"\\n", b"\\/", b"a", b"bc", b" ", "\u{e9}".as_bytes()];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for len in (0..300).chain([511, 512, 513, 1000]) {
            for _ in 0..8 {
                let mut line = vec![];
                while line.len() < len {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    line.extend_from_slice(tokens[(x % 9) as usize]);
                }
                out.push(line);
            }
        }
        out
    }

    #[test]
    fn every_string_ends_where_a_byte_by_byte_reading_ends_it() {
        let mut checked = 0;
        for line in lines() {
            let mut masks = LineMasks::default();
            let (simple, _) = masks.fill(&line);
            if !simple {
                continue;
            }
            checked += 1;
            // Every start a string could have: after a quote outside any string, as the parser meets them.
            for start in 0..=line.len() {
                // Only starts whose byte before is not escaped (an opening quote is never escaped).
                let run = line[..start].iter().rev().take_while(|&&c| c == b'\\').count();
                if run % 2 == 1 {
                    continue;
                }
                assert_eq!(masks.string_at(start), slow_string_at(&line, start), "{line:?} from {start}");
            }
        }
        // Every generated line holds only simple escapes (one of the fixed ones does not).
        assert_eq!(checked, lines().len() - 1);
    }

    #[test]
    fn the_letters_are_the_simple_escapes_but_quote_and_backslash() {
        for c in 0..=255u8 {
            let mut block = [b' '; 64];
            block[37] = c;
            let simple = super::super::SIMPLE_ESCAPE[usize::from(c)] && c != b'"' && c != b'\\';
            assert_eq!(simple_escape_letters(&block) == 1 << 37, simple, "{c}");
        }
    }

    #[test]
    fn lines_with_other_escapes_get_no_masks() {
        for (line, simple) in [
            (&br#""a\u0041""#[..], false),
            (br#""a\x""#, false),
            (br#""a\\""#, true),
            (br#""a\"b""#, true),
            (br#""\/\b\f\n\r\t""#, true),
            (b"\"a\\", false),
        ] {
            assert_eq!(LineMasks::default().fill(line).0, simple, "{line:?}");
        }
    }

    #[test]
    fn the_bytes_are_told_apart() {
        let mut long = vec![b'a'; 200];
        for (at, c, bytes) in [
            (0, b'a', Bytes::PrintableAscii),
            (63, 0x7F, Bytes::PrintableAscii),
            (64, 0x80, Bytes::NoControl),
            (199, 0x1F, Bytes::Control),
            (150, 0xFF, Bytes::NoControl),
        ] {
            long[at] = c;
            assert_eq!(LineMasks::default().fill(&long).1, bytes, "{at} {c}");
            long[at] = b'a';
        }
    }
}
