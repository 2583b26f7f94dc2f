//! Maps keyed by entry ids ([`IdMap`]): ids are short strings, and a session
//! of a million entries hashes each several times on open, where std's
//! SipHash was the largest single cost.
//!
//! The hasher is `foldhash`'s fast one (the default of `hashbrown`): keyed
//! per process from a random seed, so a file cannot be crafted in advance to
//! make every id land in one bucket, though it is not a cryptographic hash
//! like SipHash.

use std::collections::HashMap;

use compact_str::CompactString;

/// Builds the hashers of [`IdMap`]s (per-process random keys).
pub type IdHash = foldhash::fast::RandomState;

/// A `HashMap` keyed by entry ids, held inline (pi's 8-hex ids and uuids
/// need no allocation); looked up by `&str`.
pub type IdMap<V> = HashMap<CompactString, V, IdHash>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

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
}
