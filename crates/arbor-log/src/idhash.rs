//! Maps keyed by entry ids ([`IdMap`]): ids are short strings, and a session
//! of a million entries hashes each several times on open, where std's
//! SipHash was the largest single cost.
//!
//! The hasher is `foldhash`'s fast one (the default of `hashbrown`): keyed
//! per process from a random seed, so a file cannot be crafted in advance to
//! make every id land in one bucket, though it is not a cryptographic hash
//! like SipHash. [`IdTable`] places ids by 32 bits of that hash (spread
//! again over 64), which it can keep beside a position while it is made.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::ops::Deref;

use compact_str::CompactString;
use hashbrown::hash_table::Entry;
use hashbrown::HashTable;

/// Builds the hashers of [`IdMap`]s (per-process random keys).
pub type IdHash = foldhash::fast::RandomState;

/// A `HashMap` keyed by entry ids, held inline (pi's 8-hex ids and uuids
/// need no allocation); looked up by `&str`.
pub type IdMap<V> = HashMap<CompactString, V, IdHash>;

/// Id → position in a list of entries: a hash table of positions (4 bytes
/// each) whose keys are the entries' own ids, read back through `id_of`
/// whenever two must be compared or an entry rehashed. The light scan fills
/// one with the first entry of each id ([`crate::scan::ScannedLog::ids`]); a
/// session keeps the later of two entries with one id.
#[derive(Debug, Default, Clone)]
pub struct IdTable {
    table: HashTable<u32>,
    hasher: IdHash,
}

impl IdTable {
    /// An empty table with room for `n` ids.
    pub fn with_capacity(n: usize) -> IdTable {
        IdTable { table: HashTable::with_capacity(n), hasher: IdHash::default() }
    }

    fn hash(&self, id: &str) -> u64 {
        table_hash(&self.hasher, id)
    }

    /// The position `id` resolves to.
    pub fn get<D: Deref<Target = str>>(&self, id: &str, id_of: impl Fn(usize) -> D) -> Option<usize> {
        self.table.find(self.hash(id), |&i| *id_of(i as usize) == *id).map(|&i| i as usize)
    }

    /// Makes `id` resolve to position `i` (whose id it is); the position it resolved to before, if any.
    pub fn insert<D: Deref<Target = str>>(&mut self, id: &str, i: usize, id_of: impl Fn(usize) -> D) -> Option<usize> {
        match self.entry(id, id_of) {
            Entry::Occupied(mut e) => Some(std::mem::replace(e.get_mut(), position(i)) as usize),
            Entry::Vacant(e) => {
                e.insert(position(i));
                None
            }
        }
    }

    /// Makes `id` resolve to position `i` unless it already resolves:
    /// then the table is unchanged and that position is the answer.
    pub fn insert_first<D: Deref<Target = str>>(
        &mut self,
        id: &str,
        i: usize,
        id_of: impl Fn(usize) -> D,
    ) -> Option<usize> {
        match self.entry(id, id_of) {
            Entry::Occupied(e) => Some(*e.get() as usize),
            Entry::Vacant(e) => {
                e.insert(position(i));
                None
            }
        }
    }

    /// The table of the first position of each id among `n` entries (their
    /// ids read through `id_of`), with each later position of a repeated id
    /// and its first: `(later, first)`, in position order.
    ///
    /// What [`IdTable::insert_first`] called on every position in turn
    /// gives, built faster: inserted in position order, a million ids land
    /// at random in a table of megabytes, a cache miss each. Here the
    /// positions are first grouped by the part of the table their hash falls
    /// in (a counting sort, stable, so the positions of one id stay in
    /// order), each with its 4-byte hash (what the table's hash is made
    /// from), and each part is filled while it is in the cache: 8 bytes an
    /// entry held while the table is made.
    pub fn first_positions<D: Deref<Target = str>>(
        n: usize,
        id_of: impl Fn(usize) -> D,
    ) -> (IdTable, Vec<(usize, usize)>) {
        let mut t = IdTable::with_capacity(n);
        let short = |i: usize| short_hash(&t.hasher, &id_of(i));
        // hashbrown starts probing at `hash & (buckets - 1)`: group by the top bits of that.
        let buckets = (t.table.capacity() / 7 * 8).next_power_of_two().max(1);
        let shift = buckets.trailing_zeros().saturating_sub(PART_BITS);
        let part = |h: u32| ((spread(h) as usize & (buckets - 1)) >> shift) & ((1 << PART_BITS) - 1);
        let mut starts = vec![0usize; (1 << PART_BITS) + 1];
        for i in 0..n {
            starts[part(short(i)) + 1] += 1;
        }
        for k in 1..starts.len() {
            starts[k] += starts[k - 1];
        }
        let mut order = vec![(0u32, 0u32); n];
        for i in 0..n {
            let h = short(i);
            let at = &mut starts[part(h)];
            order[*at] = (h, position(i));
            *at += 1;
        }
        let mut repeats = vec![];
        let hasher = &t.hasher;
        for &(h, i) in &order {
            // Ids are read (at random) only when two hashes meet: rarely but for a repeated id.
            let same = |&k: &u32| *id_of(k as usize) == *id_of(i as usize);
            let rehash = |&k: &u32| table_hash(hasher, &id_of(k as usize));
            match t.table.entry(spread(h), same, rehash) {
                Entry::Occupied(e) => repeats.push((i as usize, *e.get() as usize)),
                Entry::Vacant(e) => {
                    e.insert(i);
                }
            }
        }
        repeats.sort_unstable();
        (t, repeats)
    }

    fn entry<D: Deref<Target = str>>(&mut self, id: &str, id_of: impl Fn(usize) -> D) -> Entry<'_, u32> {
        let hash = self.hash(id);
        let hasher = &self.hasher;
        self.table.entry(hash, |&k| *id_of(k as usize) == *id, |&k| table_hash(hasher, &id_of(k as usize)))
    }
}

/// [`IdTable::first_positions`] fills the table in `2^PART_BITS` parts.
const PART_BITS: u32 = 12;

/// An id's 4-byte hash: what the table keeps beside a position while it is
/// made ([`IdTable::first_positions`]), and what its 8-byte hash is made of.
fn short_hash(hasher: &IdHash, id: &str) -> u32 {
    let h = hasher.hash_one(id);
    (h ^ (h >> 32)) as u32
}

/// The table's hash of an id: its 4-byte hash, spread.
fn table_hash(hasher: &IdHash, id: &str) -> u64 {
    spread(short_hash(hasher, id))
}

/// The table's hash of a 4-byte hash: spread over 64 bits (hashbrown reads
/// the low bits for where to look and the top 7 for a tag).
fn spread(h: u32) -> u64 {
    u64::from(h).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn position(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_ids_spread() {
        let b = IdHash::default();
        let mut seen = std::collections::HashSet::new();
        for i in 0..100_000 {
            seen.insert(b.hash_one(format!("{i:08x}")));
        }
        assert_eq!(seen.len(), 100_000);
        assert_ne!(b.hash_one("ab"), b.hash_one("ab\0"));
        let mut m: IdMap<usize> = IdMap::default();
        m.insert("a".into(), 1);
        assert_eq!(m.get("a"), Some(&1));
    }

    #[test]
    fn the_table_finds_the_later_slot_of_an_id() {
        let ids = ["a", "00000001", "b", "a", "00000001"];
        let id_of = |i: usize| ids[i];
        let mut t = IdTable::with_capacity(1);
        let prev: Vec<_> = ids.iter().enumerate().map(|(i, id)| t.insert(id, i, id_of)).collect();
        assert_eq!(prev, [None, None, None, Some(0), Some(1)]);
        assert_eq!(t.get("a", id_of), Some(3));
        assert_eq!(t.get("b", id_of), Some(2));
        assert_eq!(t.get("00000001", id_of), Some(4));
        assert_eq!(t.get("c", id_of), None);
    }

    /// Built at once, the table answers what inserting each position in turn answers.
    #[test]
    fn the_first_positions_are_what_inserting_in_turn_gives() {
        for n in [0usize, 1, 7, 100, 5000, 70_000] {
            // Every 13th id repeats one of the ids before it.
            let ids: Vec<String> =
                (0..n).map(|i| if i % 13 == 12 { format!("{:08x}", i * 7 % i) } else { format!("{i:08x}") }).collect();
            let id_of = |i: usize| ids[i].as_str();
            let mut one_by_one = IdTable::with_capacity(n);
            let mut repeats = vec![];
            for (i, id) in ids.iter().enumerate() {
                if let Some(first) = one_by_one.insert_first(id, i, id_of) {
                    repeats.push((i, first));
                }
            }
            assert_eq!(n > 12, !repeats.is_empty());
            let (t, got) = IdTable::first_positions(n, id_of);
            assert_eq!(got, repeats, "{n} ids");
            for (i, id) in ids.iter().enumerate() {
                assert_eq!(t.get(id, id_of), one_by_one.get(id, id_of), "{n} ids, {i}");
            }
            assert_eq!(t.get("none", id_of), None);
        }
    }

    #[test]
    fn the_first_slot_of_an_id_stays_when_asked() {
        let ids = ["a", "b", "a", "a"];
        let id_of = |i: usize| ids[i];
        let mut t = IdTable::with_capacity(1);
        let first: Vec<_> = ids.iter().enumerate().map(|(i, id)| t.insert_first(id, i, id_of)).collect();
        assert_eq!(first, [None, None, Some(0), Some(0)]);
        assert_eq!(t.get("a", id_of), Some(0));
    }
}
