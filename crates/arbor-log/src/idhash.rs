//! Maps keyed by entry ids ([`IdMap`]): ids are short strings, and a session
//! of a million entries hashes each several times on open, where std's
//! SipHash was the largest single cost.
//!
//! The hasher is `foldhash`'s fast one (the default of `hashbrown`): keyed
//! per process from a random seed, so a file cannot be crafted in advance to
//! make every id land in one bucket, though it is not a cryptographic hash
//! like SipHash.

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
        self.hasher.hash_one(id)
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

    fn entry<D: Deref<Target = str>>(&mut self, id: &str, id_of: impl Fn(usize) -> D) -> Entry<'_, u32> {
        let hash = self.hasher.hash_one(id);
        let hasher = &self.hasher;
        self.table.entry(hash, |&k| *id_of(k as usize) == *id, |&k| hasher.hash_one(&*id_of(k as usize)))
    }
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
