//! The gram filter: which byte trigrams a range of a session file holds, as
//! a bitmap, so that a search reads only the ranges that may hold its
//! literals.
//!
//! A gram is three bytes of the raw line with ASCII case folded (each byte
//! `| 0x20`, which folds more than letters; both sides fold alike). A
//! range's [`Filter`] has one bit per bucket of a hash of its grams (the
//! bits of a multiplicative hash), about one bit for every eight bytes of the range (a MiB of
//! real sessions holds 20,000 to 30,000 distinct grams: a fifth of the bits
//! are set, and a literal of four grams passes a range that does not hold
//! it one time in 600). A literal
//! may be in the range only if the bits of all its grams are set ([`Need`]);
//! a clear bit proves it is not. False positives cost a read, never a hit.

/// The version of the filters' format: what a gram is, its hash, the
/// buckets and the bitmap's layout ([`Filter::words`]). A backend that keeps
/// filters keeps this beside them and reads a filter of another version as
/// absent; any change to those must change it.
pub const FORMAT: u32 = 1;

/// The fewest bits of a filter, as a power of two.
pub const MIN_LOG: u8 = 9;
/// The most bits of a filter, as a power of two.
pub const MAX_LOG: u8 = 21;

/// The size of a range's filter (log2 of its bits): a bit for every eight bytes, within bounds.
pub fn log_for(len: u64) -> u8 {
    let want = (len / 8).max(1);
    let log = 64 - (want - 1).leading_zeros() as u8;
    log.clamp(MIN_LOG, MAX_LOG)
}

/// Three bytes, folded, as a number.
#[inline]
fn gram(a: u8, b: u8, c: u8) -> u32 {
    u32::from_le_bytes([a, b, c, 0]) | 0x0020_2020
}

/// The multiplier of the gram hash, and how far its product is shifted: the
/// top [`MAX_LOG`] bits of the product, of which a filter of `2^log` bits
/// takes the low `log` (a constant shift and a mask: cheaper in the build's
/// loop than a shift by `64 - log`).
const MUL: u64 = 0x9E37_79B9_7F4A_7C15;
const SHIFT: u32 = 64 - MAX_LOG as u32;

/// The bucket of a gram in a filter of `2^log` bits.
#[inline]
pub fn bucket(gram: u32, log: u8) -> usize {
    ((u64::from(gram).wrapping_mul(MUL) >> SHIFT) as usize) & ((1 << log) - 1)
}

/// A range's gram bitmap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// log2 of the number of bits.
    pub log: u8,
    /// The bits, 64 to a word.
    pub words: Vec<u64>,
}

impl Filter {
    /// True when the gram's bit is set.
    pub fn has(&self, gram: u32) -> bool {
        let b = bucket(gram, self.log);
        self.words.get(b / 64).is_some_and(|w| w >> (b % 64) & 1 == 1)
    }

    /// The share of bits set.
    pub fn fill(&self) -> f64 {
        let set: u32 = self.words.iter().map(|w| w.count_ones()).sum();
        f64::from(set) / (1u64 << self.log) as f64
    }
}

thread_local! {
    /// Each thread's flags, kept zeroed between filters: a fresh table per
    /// filter would cost its allocation and page faults every time.
    static FLAGS: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Builds the filter of a range from its bytes, fed in pieces that end at line ends.
#[derive(Debug)]
pub struct Builder {
    log: u8,
    /// One byte per bucket (zero or one): stores without reads keep the loop
    /// free of dependencies. Zeroed again by [`Builder::finish`].
    flags: Vec<u8>,
}

impl Builder {
    /// A builder for a range of `len` bytes.
    pub fn new(len: u64) -> Builder {
        let log = log_for(len);
        let mut flags = FLAGS.take();
        if flags.len() < 1 << log {
            flags = vec![0; 1 << log];
        }
        Builder { log, flags }
    }

    /// Adds the grams of `bytes` (grams across the ends of pieces are not added:
    /// pieces end at line ends, and no literal holds a line end).
    pub fn add(&mut self, bytes: &[u8]) {
        let flags = &mut self.flags[..1 << self.log];
        let mask = flags.len() - 1;
        let mut i = 0;
        // Six grams from each eight bytes read.
        while i + 8 <= bytes.len() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i..i + 8]);
            let w = u64::from_le_bytes(w) | 0x2020_2020_2020_2020;
            for k in 0..6 {
                let g = (w >> (8 * k)) & 0x00FF_FFFF;
                flags[(g.wrapping_mul(MUL) >> SHIFT) as usize & mask] = 1;
            }
            i += 6;
        }
        while i + 3 <= bytes.len() {
            flags[bucket(gram(bytes[i], bytes[i + 1], bytes[i + 2]), self.log) & mask] = 1;
            i += 1;
        }
    }

    /// The filter of what was added.
    pub fn finish(mut self) -> Filter {
        let n = 1usize << self.log;
        let mut words = vec![0u64; (n / 64).max(1)];
        for (w, chunk) in words.iter_mut().zip(self.flags[..n].chunks_exact_mut(64)) {
            // Eight flags (bytes of 0 or 1) at a time: the multiply gathers their low bits into one byte.
            for (k, eight) in chunk.chunks_exact_mut(8).enumerate() {
                let mut b = [0u8; 8];
                b.copy_from_slice(eight);
                let v = u64::from_le_bytes(b);
                if v != 0 {
                    *w |= (v.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k);
                    eight.fill(0);
                }
            }
        }
        if n < 64 {
            for (k, f) in self.flags[..n].iter_mut().enumerate() {
                words[0] |= u64::from(*f) << k;
                *f = 0;
            }
        }
        FLAGS.set(std::mem::take(&mut self.flags));
        Filter { log: self.log, words }
    }
}

/// What a filter must hold for a range to be read: grams, all or any of
/// several needs, or nothing it can vouch for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Every range may hold it.
    Anything,
    /// The bit of this gram (its hash).
    Gram(u32),
    /// Every one of these.
    All(Vec<Need>),
    /// At least one of these.
    Any(Vec<Need>),
}

impl Need {
    /// The grams of a literal's bytes that hold only bytes marked safe (see
    /// [`crate::fold`]): a range holding the literal holds all of them.
    pub(crate) fn literal(bytes: &[u8], safe: &[bool]) -> Need {
        let mut grams = vec![];
        for i in 0..bytes.len().saturating_sub(2) {
            if safe[i..i + 3].iter().all(|&s| s) {
                let g = gram(bytes[i], bytes[i + 1], bytes[i + 2]);
                if !grams.contains(&Need::Gram(g)) {
                    grams.push(Need::Gram(g));
                }
            }
        }
        Need::all(grams)
    }

    /// All of `needs`, simplified.
    pub fn all(needs: Vec<Need>) -> Need {
        let mut out = vec![];
        for n in needs {
            match n {
                Need::Anything => {}
                Need::All(inner) => out.extend(inner),
                n => out.push(n),
            }
        }
        match out.len() {
            0 => Need::Anything,
            1 => out.pop().unwrap_or(Need::Anything),
            _ => Need::All(out),
        }
    }

    /// Any of `needs`, simplified (any that needs nothing makes the whole need nothing).
    pub fn any(needs: Vec<Need>) -> Need {
        let mut out = vec![];
        for n in needs {
            match n {
                Need::Anything => return Need::Anything,
                Need::Any(inner) => out.extend(inner),
                n => out.push(n),
            }
        }
        match out.len() {
            0 => Need::Anything,
            1 => out.pop().unwrap_or(Need::Anything),
            _ => Need::Any(out),
        }
    }

    /// True when a filter can rule a range out for this need.
    pub fn selects(&self) -> bool {
        !matches!(self, Need::Anything)
    }

    /// Whether a range whose filter answers `has` may hold what is needed.
    pub fn eval(&self, has: &dyn Fn(u32) -> bool) -> bool {
        match self {
            Need::Anything => true,
            Need::Gram(g) => has(*g),
            Need::All(v) => v.iter().all(|n| n.eval(has)),
            Need::Any(v) => v.iter().any(|n| n.eval(has)),
        }
    }

    /// The same question over many ranges at once: `rows(g)` gives, for a
    /// gram, a bit per range (set when its filter has the gram); the answer
    /// has a bit per range that may hold what is needed. `all` is a row of
    /// every range.
    pub fn eval_rows(&self, rows: &mut dyn FnMut(u32) -> Vec<u64>, all: &[u64]) -> Vec<u64> {
        match self {
            Need::Anything => all.to_vec(),
            Need::Gram(g) => rows(*g),
            Need::All(v) => {
                let mut acc = all.to_vec();
                for n in v {
                    let r = n.eval_rows(rows, all);
                    acc.iter_mut().zip(&r).for_each(|(a, b)| *a &= b);
                    if acc.iter().all(|&w| w == 0) {
                        break;
                    }
                }
                acc
            }
            Need::Any(v) => {
                let mut acc = vec![0; all.len()];
                for n in v {
                    let r = n.eval_rows(rows, all);
                    acc.iter_mut().zip(&r).for_each(|(a, b)| *a |= b);
                }
                acc
            }
        }
    }

    /// Every gram it names, once.
    pub fn grams(&self) -> Vec<u32> {
        let mut out = vec![];
        let mut stack = vec![self];
        while let Some(n) = stack.pop() {
            match n {
                Need::Anything => {}
                Need::Gram(g) => {
                    if !out.contains(g) {
                        out.push(*g)
                    }
                }
                Need::All(v) | Need::Any(v) => stack.extend(v.iter()),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::fold::Literal;

    fn filter(text: &str) -> Filter {
        let mut b = Builder::new(text.len() as u64);
        for line in text.split_inclusive('\n') {
            b.add(line.as_bytes());
        }
        b.finish()
    }

    fn may_hold(f: &Filter, lit: &str) -> bool {
        let l = Literal::new(lit, crate::fold::Case::Words);
        Need::literal(&l.bytes, &l.safe).eval(&|g| f.has(g))
    }

    #[test]
    fn every_literal_of_the_text_passes_whatever_its_case() {
        let text = "The Quick brown fox\nhttps://example.com/openclaw-backup.git 百度云自动备份 Привет 😀\n";
        let f = filter(text);
        for lit in ["quick", "QUICK", "k b", "openclaw", "backup.git", "备份", "百度云自动备份", "привет", "😀", "x"]
        {
            assert!(may_hold(&f, lit), "{lit}");
        }
        assert!(!may_hold(&f, "zebra") && !may_hold(&f, "openclawz"));
    }

    #[test]
    fn sizes_grow_with_the_range_within_bounds() {
        assert_eq!(log_for(0), MIN_LOG);
        assert_eq!(log_for(8 << 20), 20);
        assert_eq!(log_for(1 << 40), MAX_LOG);
        assert_eq!(filter("abc").words.len(), 1 << (MIN_LOG - 6));
    }

    #[test]
    fn the_fast_loop_and_the_tail_agree() {
        let text: String = (0..500).map(|i| char::from(b'a' + (i * 7 % 26) as u8)).collect();
        let f = filter(&text);
        for i in 0..text.len() - 2 {
            assert!(may_hold(&f, &text[i..i + 3]), "{i}");
        }
    }

    #[test]
    fn needs_simplify_and_evaluate_over_rows() {
        assert_eq!(Need::all(vec![Need::Anything, Need::Gram(1)]), Need::Gram(1));
        assert_eq!(Need::any(vec![Need::Anything, Need::Gram(1)]), Need::Anything);
        let n = Need::all(vec![Need::Gram(1), Need::any(vec![Need::Gram(2), Need::Gram(3)])]);
        // Three ranges: bit k of each row is range k.
        let mut rows = |g: u32| {
            vec![match g {
                1 => 0b111,
                2 => 0b001,
                3 => 0b100,
                _ => 0,
            }]
        };
        assert_eq!(n.eval_rows(&mut rows, &[0b111]), vec![0b101]);
        assert_eq!(n.grams().len(), 3);
    }
}
