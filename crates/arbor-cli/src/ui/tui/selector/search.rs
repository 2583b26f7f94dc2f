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
//! each hit. A query that only narrows the last one (each old token is part
//! of a new one) looks only among the last answer's entries. Labels, which
//! change while the selector is open, are matched apart: labelled entries are
//! few.

use std::collections::HashMap;

use memchr::memmem::Finder;

/// A set of entries (by display index) as bits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
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

    fn and(&mut self, other: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a &= b;
        }
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

/// The searchable texts of the entries, in display order (see the module docs).
#[derive(Debug, Clone)]
pub struct TextIndex {
    text: Vec<u8>,
    /// Where each entry's text starts; one more, the end, once complete.
    starts: Vec<u64>,
    total: usize,
}

/// The query's tokens: lowercased, split at white space.
pub fn tokens(query: &str) -> Vec<String> {
    query.to_lowercase().split_whitespace().map(str::to_owned).collect()
}

impl TextIndex {
    /// An empty index for `total` entries, to be filled in display order.
    pub fn new(total: usize) -> TextIndex {
        TextIndex { text: Vec::new(), starts: Vec::with_capacity(total + 1), total }
    }

    /// Adds the next entry's text.
    pub fn push(&mut self, text: &str) {
        self.starts.push(self.text.len() as u64);
        self.text.extend_from_slice(text.as_bytes());
        self.text.push(b'\n');
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

    /// The entries in `lo..hi` whose text holds `token`, as bits over the whole index.
    fn scan_part(&self, finder: &Finder<'_>, lo: usize, hi: usize, out: &mut [u64]) {
        let end = self.starts[hi] as usize;
        let mut at = self.starts[lo] as usize;
        let mut k = lo;
        while at < end {
            let Some(i) = finder.find(&self.text[at..end]) else { break };
            let hit = (at + i) as u64;
            while self.starts[k + 1] <= hit {
                k += 1;
            }
            out[(k - lo) / 64] |= 1 << ((k - lo) % 64);
            at = self.starts[k + 1] as usize;
        }
    }

    /// Every entry whose text holds `token`, one scan of the buffer per core.
    fn scan(&self, token: &str) -> Bits {
        let n = self.total;
        let finder = Finder::new(token.as_bytes());
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(8);
        // Parts start at multiples of 64 entries, so each fills whole words.
        let part = n.div_ceil(threads).div_ceil(64).max(1) * 64;
        let mut bits = Bits::new(n);
        if threads < 2 || n < 4096 {
            self.scan_part(&finder, 0, n, &mut bits.0);
            return bits;
        }
        std::thread::scope(|sc| {
            let finder = &finder;
            for (p, words) in bits.0.chunks_mut(part / 64).enumerate() {
                let lo = p * part;
                let hi = (lo + part).min(n);
                sc.spawn(move || self.scan_part(finder, lo, hi, words));
            }
        });
        bits
    }
}

/// True when every token of `narrow` can only match where `wide` matched:
/// each token of `wide` is part of one of `narrow`'s.
fn narrows(wide: &[String], narrow: &[String]) -> bool {
    wide.iter().all(|w| narrow.iter().any(|t| t.contains(w.as_str())))
}

fn holds(text: &[u8], token: &str) -> bool {
    memchr::memmem::find(text, token.as_bytes()).is_some()
}

/// The search: the index and the last answer, which the next keystroke narrows.
#[derive(Debug, Clone)]
pub struct Search {
    index: TextIndex,
    /// The last tokens and the entries whose text (labels aside) holds them all.
    last: Option<(Vec<String>, Bits)>,
}

impl Search {
    /// A search over `total` entries whose texts are still to come.
    pub fn new(total: usize) -> Search {
        Search { index: TextIndex::new(total), last: None }
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
        let text_hits = match self.last.take() {
            Some((old, hits)) if old == tokens => hits,
            Some((old, hits)) if narrows(&old, tokens) => self.narrow(hits, tokens),
            _ => self.fresh(tokens),
        };
        let mut hits = text_hits.clone();
        for (&k, label) in labels {
            let mut text = label.to_lowercase().into_bytes();
            text.push(b' ');
            text.extend_from_slice(self.index.text(k));
            hits.set(k, tokens.iter().all(|t| holds(&text, t)));
        }
        self.last = Some((tokens.to_vec(), text_hits));
        Some(hits)
    }

    fn fresh(&self, tokens: &[String]) -> Bits {
        let Some(longest) = tokens.iter().max_by_key(|t| t.len()) else {
            return Bits::new(self.index.total);
        };
        let mut hits = self.index.scan(longest);
        self.keep(&mut hits, tokens.iter().filter(|t| *t != longest));
        hits
    }

    fn narrow(&self, mut hits: Bits, tokens: &[String]) -> Bits {
        if hits.count() * 16 < self.index.total {
            self.keep(&mut hits, tokens.iter());
        } else {
            let fresh = self.fresh(tokens);
            hits.and(&fresh);
        }
        hits
    }

    /// Keeps only the entries of `hits` whose text holds every one of `tokens`.
    fn keep<'t>(&self, hits: &mut Bits, tokens: impl Iterator<Item = &'t String> + Clone) {
        let gone: Vec<u32> = hits.ones().filter(|&k| !tokens.clone().all(|t| holds(self.index.text(k), t))).collect();
        for k in gone {
            hits.set(k, false);
        }
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

    #[test]
    fn nothing_is_answered_until_the_index_is_complete() {
        let mut s = index(&["one", "two"]);
        assert_eq!(s.matches(&tokens("o"), &HashMap::new()).unwrap().ones().collect::<Vec<_>>(), [0, 1]);
        assert!(s.index().is_complete());
        assert_eq!(s.index().filled(), 2);
    }
}
