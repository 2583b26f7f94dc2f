//! The selector's search (docs/cli.md, "arbor tui": every token of the query must be a
//! substring of the entry's searchable text): a text index built once, in
//! display order, and answered incrementally.
//!
//! The index keeps each entry's searchable text (pi's `searchableText`
//! without the label, lowercased, at most about 200 characters of message
//! text) one after another in a single buffer, each followed by a newline.
//! Query tokens hold no white space, so no match can run from one text into
//! the next, and a token is found in every text at once by one `memmem` scan
//! of the buffer, split over the cores, which jumps to the next text after
//! each hit, noting where the hit is. The answers along the query as it is
//! typed are kept: a keystroke that extends the last token, when at most half
//! the entries hit, only looks again at the last answer's entries, from where
//! the shorter token first occurred in each (any occurrence of the longer
//! token is one of the shorter), through the few bytes kept from after it
//! while they reach (no look at the text); a
//! query that narrows another way looks among the last answer's entries when
//! they are few; Backspace goes back to an answer already made. Labels, which
//! change while the selector is open, are matched apart: labelled entries are
//! few. A query's first keystroke, a one-byte token that most texts hold,
//! is answered without the scan: each entry keeps a 64-bit mask of the
//! letters, digits and common punctuation its text holds ([`MASK_BYTES`]),
//! so the token's answer is one pass over a word an entry.

use std::collections::HashMap;

use memchr::memmem::Finder;

/// A set of entries (by display index) as bits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    /// The set of `ks` among `n` entries.
    pub fn of(n: usize, ks: impl Iterator<Item = u32>) -> Bits {
        let mut b = Bits::new(n);
        ks.for_each(|k| b.set(k, true));
        b
    }

    /// The set as words: bit `k % 64` of word `k / 64`.
    pub fn words(&self) -> &[u64] {
        &self.0
    }

    /// The set of these words (see [`Bits::words`]).
    pub fn from_words(words: Vec<u64>) -> Bits {
        Bits(words)
    }

    /// True when entry `k` is in the set.
    pub fn get(&self, k: u32) -> bool {
        self.0.get(k as usize / 64).is_some_and(|w| w >> (k % 64) & 1 == 1)
    }

    fn set(&mut self, k: u32, on: bool) {
        if let Some(w) = self.0.get_mut(k as usize / 64) {
            if on {
                *w |= 1 << (k % 64);
            } else {
                *w &= !(1 << (k % 64));
            }
        }
    }

    fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some(i as u32 * 64 + b)
            })
        })
    }
}

/// The bytes an entry's mask notes, one bit each (a one-byte token of any
/// other byte is found by the scan).
const MASK_BYTES: &[u8; 64] = b"abcdefghijklmnopqrstuvwxyz0123456789-_./:()[]{}=,'\"<>!?#$%&*+;@|";

/// Each byte's bit in the masks (0 for a byte not in [`MASK_BYTES`]).
const MASK_OF: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < MASK_BYTES.len() {
        t[MASK_BYTES[i] as usize] = 1 << i;
        i += 1;
    }
    t
};

/// The searchable texts of the entries, in display order (see the module docs).
#[derive(Debug, Clone)]
pub struct TextIndex {
    text: Vec<u8>,
    /// Where each entry's text starts; one more, the end, once complete.
    starts: Vec<u64>,
    /// The bits of [`MASK_BYTES`] each entry's text holds.
    masks: Vec<u64>,
    total: usize,
}

/// The query's tokens: lowercased, split at white space.
pub fn tokens(query: &str) -> Vec<String> {
    query.to_lowercase().split_whitespace().map(str::to_owned).collect()
}

impl TextIndex {
    /// An empty index for `total` entries, to be filled in display order.
    pub fn new(total: usize) -> TextIndex {
        TextIndex { text: Vec::new(), starts: Vec::with_capacity(total + 1), masks: Vec::with_capacity(total), total }
    }

    /// Adds the next entry's text.
    pub fn push(&mut self, text: &str) {
        self.starts.push(self.text.len() as u64);
        self.text.extend_from_slice(text.as_bytes());
        self.text.push(b'\n');
        self.masks.push(text.bytes().fold(0, |m, b| m | MASK_OF[b as usize]));
        if self.starts.len() == self.total {
            self.starts.push(self.text.len() as u64);
            self.text.shrink_to_fit();
        }
    }

    /// How many entries have their text.
    pub fn filled(&self) -> usize {
        self.starts.len().min(self.total)
    }

    /// True once every entry has its text.
    pub fn is_complete(&self) -> bool {
        self.starts.len() > self.total
    }

    fn text(&self, k: u32) -> &[u8] {
        let (a, b) = (self.starts[k as usize] as usize, self.starts[k as usize + 1] as usize);
        &self.text[a..b - 1]
    }

    /// The entries in `lo..hi` whose text holds `token`, as bits from
    /// `lo` on in `words`, and each with where the token first occurs in
    /// its text in `out`, while they are at most half the part (else `out`
    /// is dropped: an answer that large is not narrowed hit by hit).
    fn scan_part(&self, finder: &Finder<'_>, (lo, hi): (usize, usize), words: &mut [u64], out: &mut Option<Vec<Hit>>) {
        let end = self.starts[hi] as usize;
        let mut at = self.starts[lo] as usize;
        let mut k = lo;
        let most = (hi - lo) / 2;
        while at < end {
            let Some(i) = finder.find(&self.text[at..end]) else { break };
            let hit = (at + i) as u64;
            while self.starts[k + 1] <= hit {
                k += 1;
            }
            words[(k - lo) / 64] |= 1 << ((k - lo) % 64);
            if let Some(v) = out {
                if v.len() < most {
                    let (start, end) = (self.starts[k] as usize, self.starts[k + 1] as usize - 1);
                    v.push(Hit::found(k as u32, &self.text[start..end], hit as usize - start, finder.needle().len()));
                } else {
                    *out = None;
                }
            }
            at = self.starts[k + 1] as usize;
        }
    }

    /// Every entry whose text holds `token`: [`TextIndex::scan`]'s answer,
    /// or for a one-byte token the masks' (its hits, while at most half the
    /// entries, at 0: at or before the first occurrence), and whether each
    /// hit is at the first occurrence.
    fn holding(&self, token: &str) -> (Bits, Option<Vec<Hit>>, bool) {
        let bit = match token.as_bytes() {
            &[b] => MASK_OF[b as usize],
            _ => 0,
        };
        if bit == 0 {
            let (bits, hits) = self.scan(token);
            return (bits, hits, true);
        }
        let mut bits = Bits::new(self.total);
        for (word, masks) in bits.0.iter_mut().zip(self.masks.chunks(64)) {
            *word = masks.iter().enumerate().fold(0, |w, (i, &m)| w | (u64::from(m & bit != 0) << i));
        }
        let hits = (bits.count() * 2 <= self.total).then(|| bits.ones().map(Hit::somewhere).collect());
        (bits, hits, false)
    }

    /// Every entry whose text holds `token`, one scan of the buffer per
    /// core: the bits, and the hits with where it first occurs when they are
    /// at most half the entries.
    fn scan(&self, token: &str) -> (Bits, Option<Vec<Hit>>) {
        let n = self.total;
        let finder = Finder::new(token.as_bytes());
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(8);
        let mut bits = Bits::new(n);
        if threads < 2 || n < 4096 {
            let mut out = Some(vec![]);
            self.scan_part(&finder, (0, n), &mut bits.0, &mut out);
            return (bits, out);
        }
        // Parts start at multiples of 64 entries, so each fills whole words.
        let part = n.div_ceil(threads).div_ceil(64).max(1) * 64;
        let finder = &finder;
        let parts: Vec<Option<Vec<Hit>>> = std::thread::scope(|sc| {
            let handles: Vec<_> = bits
                .0
                .chunks_mut(part / 64)
                .enumerate()
                .map(|(p, words)| {
                    let lo = p * part;
                    sc.spawn(move || {
                        let mut out = Some(vec![]);
                        self.scan_part(finder, (lo, (lo + part).min(n)), words, &mut out);
                        out
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().ok().flatten()).collect()
        });
        let hits = parts.into_iter().collect::<Option<Vec<Vec<Hit>>>>().map(|v| v.concat());
        (bits, hits)
    }
}

/// An entry a token was found in, where it first occurs in the entry's
/// text, and the bytes that follow it there: a keystroke that extends the
/// token checks those without a look at the text (a cache miss an entry
/// when a third of a million entries hit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hit {
    k: u32,
    at: u32,
    /// The first `known` bytes of the text after the token (none when `at` is only at or before it).
    next: [u8; 7],
    known: u8,
}

impl Hit {
    /// Entry `k`, whose token (`len` bytes) first occurs at `at` in its `text`.
    fn found(k: u32, text: &[u8], at: usize, len: usize) -> Hit {
        let rest = text.get(at + len..).unwrap_or_default();
        let known = rest.len().min(7);
        let mut next = [0; 7];
        next[..known].copy_from_slice(&rest[..known]);
        Hit { k, at: at as u32, next, known: known as u8 }
    }

    /// Entry `k`, whose token occurs somewhere (`at` 0: at or before it, nothing known after it).
    fn somewhere(k: u32) -> Hit {
        Hit { k, at: 0, next: [0; 7], known: 0 }
    }
}

/// True when every token of `narrow` can only match where `wide` matched:
/// each token of `wide` is part of one of `narrow`'s.
fn narrows(wide: &[String], narrow: &[String]) -> bool {
    wide.iter().all(|w| narrow.iter().any(|t| t.contains(w.as_str())))
}

/// True when `new` is `old` with its last token longer at its end: every
/// occurrence of the new last token is one of the old, at the same place.
fn extends_last(old: &[String], new: &[String]) -> bool {
    match (old.split_last(), new.split_last()) {
        (Some((o, o_rest)), Some((t, t_rest))) => o_rest == t_rest && t.starts_with(o.as_str()),
        _ => false,
    }
}

fn holds(text: &[u8], token: &str) -> bool {
    memchr::memmem::find(text, token.as_bytes()).is_some()
}

/// The search: the index and the answers along the query as typed.
#[derive(Debug, Clone)]
pub struct Search {
    index: TextIndex,
    /// Tokens and the entries whose text (labels aside) holds them all, each
    /// narrower than the one before; the last is the current answer.
    answers: Vec<(Vec<String>, Bits)>,
    /// The last answer's entries, with where its last token first occurs in each.
    /// `None` when they are more than half the entries (the next keystroke scans every text).
    hits: Option<Vec<Hit>>,
    /// True when each of `hits` is at the last token's first occurrence (false: at or before it).
    hits_exact: bool,
}

impl Search {
    /// A search over `total` entries whose texts are still to come.
    pub fn new(total: usize) -> Search {
        Search { index: TextIndex::new(total), answers: vec![], hits: None, hits_exact: false }
    }

    /// The index being filled.
    pub fn index(&self) -> &TextIndex {
        &self.index
    }

    /// Adds the next entry's searchable text.
    pub fn push(&mut self, text: &str) {
        self.index.push(text);
    }

    /// The entries matching every token, labels included (`labels`: each
    /// labelled entry's label); `None` while the index is incomplete.
    pub fn matches(&mut self, tokens: &[String], labels: &HashMap<u32, String>) -> Option<Bits> {
        if !self.index.is_complete() {
            return None;
        }
        self.answer(tokens);
        let mut hits = self.answers.last().map(|(_, b)| b.clone()).unwrap_or_default();
        for (&k, label) in labels {
            let mut text = label.to_lowercase().into_bytes();
            text.push(b' ');
            text.extend_from_slice(self.index.text(k));
            hits.set(k, tokens.iter().all(|t| holds(&text, t)));
        }
        Some(hits)
    }

    /// Makes the answer for `tokens` the last of [`Search::answers`].
    fn answer(&mut self, tokens: &[String]) {
        let last = self.answers.len().checked_sub(1);
        let total = self.index.total;
        if let Some(i) = self.answers.iter().rposition(|(t, _)| t == tokens) {
            if Some(i) != last {
                // Back to an earlier answer (Backspace): where its tokens occur is not kept.
                self.answers.truncate(i + 1);
                let bits = &self.answers[i].1;
                self.hits = (bits.count() * 2 <= total).then(|| bits.ones().map(Hit::somewhere).collect());
                self.hits_exact = false;
            }
            return;
        }
        let from = self.answers.iter().rposition(|(t, _)| narrows(t, tokens));
        let listed = |hits: Vec<Hit>| (Bits::of(total, hits.iter().map(|h| h.k)), Some(hits), true);
        let (bits, hits, exact) = match (from, &self.hits) {
            // Extending looks again at each hit: only while they are at most half the entries.
            (Some(i), Some(hits)) if Some(i) == last && extends_last(&self.answers[i].0, tokens) => {
                // The shorter token is at `at` in each hit (or `at` is 0, after a Backspace: nothing is known there).
                let from = if self.hits_exact { self.answers[i].0.last().map_or(0, String::len) } else { 0 };
                listed(self.extend(hits, tokens, from))
            }
            (Some(i), _) if self.answers[i].1.count() * 16 < total => {
                let within: Vec<u32> = self.answers[i].1.ones().collect();
                listed(self.keep(within.into_iter(), tokens))
            }
            _ => match tokens.split_last() {
                None => listed(vec![]),
                Some((last, [])) => self.index.holding(last),
                Some((last, _)) => {
                    let (first, _, _) = self.index.holding(last);
                    listed(self.keep(first.ones(), tokens))
                }
            },
        };
        self.hits = hits;
        self.hits_exact = exact;
        self.answers.truncate(from.map_or(0, |i| i + 1));
        self.answers.push((tokens.to_vec(), bits));
    }

    /// The last answer's entries that hold `tokens`, whose last token extends
    /// the last answer's (see [`extends_last`]) of `from` bytes: each is
    /// looked at from where the shorter token first occurs (where only the
    /// added bytes need a look).
    fn extend(&self, hits: &[Hit], tokens: &[String], from: usize) -> Vec<Hit> {
        let token = tokens.last().map_or(&[][..], |t| t.as_bytes());
        let (len, added) = (token.len(), &token[from.min(token.len())..]);
        let finder = Finder::new(token);
        let mut out = Vec::with_capacity(hits.len());
        for hit in hits {
            let (k, at, known) = (hit.k, hit.at as usize, hit.known as usize);
            // The bytes after the shorter token tell, while they reach past the added ones (only when `at` is exact).
            if from > 0 && known >= added.len() {
                if hit.next[..added.len()] == *added {
                    let mut next = [0; 7];
                    next[..known - added.len()].copy_from_slice(&hit.next[added.len()..known]);
                    out.push(Hit { k, at: at as u32, next, known: (known - added.len()) as u8 });
                    continue;
                }
            } else {
                let text = self.index.text(k);
                if text.len() >= at + len && text[at + from..at + len] == *added {
                    out.push(Hit::found(k, text, at, len));
                    continue;
                }
            }
            let text = self.index.text(k);
            if let Some(i) = text.get(at + 1..).and_then(|rest| finder.find(rest)) {
                out.push(Hit::found(k, text, at + 1 + i, len));
            }
        }
        out
    }

    /// The entries among `within` whose text holds every one of `tokens`,
    /// with where the last token first occurs.
    fn keep(&self, within: impl Iterator<Item = u32>, tokens: &[String]) -> Vec<Hit> {
        let finders: Vec<Finder<'_>> = tokens.iter().map(|t| Finder::new(t.as_bytes())).collect();
        let Some((last, rest)) = finders.split_last() else { return vec![] };
        within
            .filter_map(|k| {
                let text = self.index.text(k);
                let at = last.find(text)?;
                rest.iter().all(|f| f.find(text).is_some()).then(|| Hit::found(k, text, at, last.needle().len()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn index(texts: &[&str]) -> Search {
        let mut s = Search::new(texts.len());
        for t in texts {
            assert!(s.matches(&tokens("x"), &HashMap::new()).is_none());
            s.push(t);
        }
        s
    }

    fn plain(texts: &[&str], labels: &HashMap<u32, String>, query: &str) -> Vec<u32> {
        let toks = tokens(query);
        (0..texts.len() as u32)
            .filter(|&k| {
                let t = match labels.get(&k) {
                    Some(l) => format!("{} {}", l.to_lowercase(), texts[k as usize]),
                    None => texts[k as usize].to_owned(),
                };
                toks.iter().all(|x| t.contains(x.as_str()))
            })
            .collect()
    }

    #[test]
    fn every_keystroke_answers_what_a_plain_filter_answers() {
        // Enough texts for the scan to split over threads; tokens never cross texts.
        let words = ["user alpha", "assistant beta", "tool gamma", "user alphabet", "label delta", "ab"];
        let texts: Vec<String> = (0..10_000).map(|i| format!("{} {}", words[i % words.len()], i % 97)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut s = Search::new(refs.len());
        for t in &refs {
            s.push(t);
        }
        let mut labels = HashMap::new();
        labels.insert(5, "Alpha Label".to_owned());
        labels.insert(9_999, "zeta".to_owned());
        let typed =
            ["a", "al", "alp", "alph", "alph 4", "alph 42", "alph 4", "alph", "al", "ze", "zet", "b", "a b", "lab"];
        for q in typed {
            let got: Vec<u32> = s.matches(&tokens(q), &labels).unwrap().ones().collect();
            assert_eq!(got, plain(&refs, &labels, q), "{q:?}");
        }
        assert!(narrows(&tokens("al"), &tokens("alph 4")));
        assert!(!narrows(&tokens("alph 4"), &tokens("alph")));
    }

    /// Random texts over a few letters (so tokens hit often and overlap),
    /// random typing: extending the last token, starting another, Backspace,
    /// a query replaced at once, one-byte tokens answered from the masks
    /// and bytes they do not note (`^`, `é`). Every answer, made from the
    /// last one or from scratch, is what a plain filter of the texts answers.
    #[test]
    fn incremental_answers_agree_with_a_fresh_filter_over_random_typing() {
        let mut rng = arbor_test_support::Rng(0x5DEE_CE66_D1CE_4E5B);
        // Few letters (most texts hold each) and more letters in shorter texts (few do).
        let few = ['a', 'b', 'c', 'd', ' ', '-', '^', 'é'];
        let more = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', ' ', '-', '^', 'é'];
        for round in 0..40 {
            let n = [50, 700, 6_000][round % 3];
            let (letters, long): (&[char], usize) = if round % 2 == 0 { (&few, 40) } else { (&more, 12) };
            let texts: Vec<String> =
                (0..n).map(|_| (0..rng.below(long)).map(|_| letters[rng.below(letters.len())]).collect()).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let mut s = Search::new(n);
            for t in &refs {
                s.push(t);
            }
            let mut labels = HashMap::new();
            for _ in 0..rng.below(4) {
                labels.insert(rng.below(n) as u32, ["Ab", "cd dc", "x"][rng.below(3)].to_owned());
            }
            let mut query = String::new();
            for step in 0..60 {
                match rng.below(10) {
                    0..=5 => query.push(match rng.below(letters.len() + 1) {
                        0 => 'A',
                        i => letters[i - 1],
                    }),
                    6 => query.push(' '),
                    7 | 8 => {
                        query.pop();
                    }
                    _ => query = ["ab", "b c", "dd", "abc a", ""][rng.below(5)].to_owned(),
                }
                let toks = tokens(&query);
                if toks.is_empty() {
                    continue;
                }
                let got: Vec<u32> = s.matches(&toks, &labels).unwrap().ones().collect();
                assert_eq!(got, plain(&refs, &labels, &query), "round {round} step {step} {query:?}");
            }
        }
    }

    #[test]
    fn nothing_is_answered_until_the_index_is_complete() {
        let mut s = index(&["one", "two"]);
        assert_eq!(s.matches(&tokens("o"), &HashMap::new()).unwrap().ones().collect::<Vec<_>>(), [0, 1]);
        assert!(s.index().is_complete());
        assert_eq!(s.index().filled(), 2);
    }
}
