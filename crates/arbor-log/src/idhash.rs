//! A fast hasher for maps keyed by entry ids ([`IdMap`]): ids are short
//! strings, and a session of a million entries hashes each several times on
//! open, where SipHash was the largest single cost.
//!
//! It is keyed per process from std's own random keys (`RandomState`), and
//! mixes each 8-byte word with a folded 64×64→128 multiply by a keyed odd
//! constant (the construction of foldhash's and ahash's fallback), so a file
//! cannot be crafted in advance to make every id land in one bucket.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::OnceLock;

/// A `HashMap` keyed by entry ids.
pub type IdMap<V> = HashMap<String, V, IdHash>;

/// Builds [`IdHasher`]s with this process's keys.
#[derive(Debug, Clone, Copy)]
pub struct IdHash {
    k0: u64,
    k1: u64,
}

impl Default for IdHash {
    fn default() -> Self {
        static KEYS: OnceLock<(u64, u64)> = OnceLock::new();
        let &(k0, k1) = KEYS.get_or_init(|| {
            let s = RandomState::new();
            (s.hash_one(0x5eed_u64), s.hash_one(0xf00d_u64) | 1)
        });
        IdHash { k0, k1 }
    }
}

impl BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher { h: self.k0, k: self.k1 }
    }
}

/// See the module docs.
#[derive(Debug, Clone, Copy)]
pub struct IdHasher {
    h: u64,
    k: u64,
}

#[inline]
fn fold_mul(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.h = fold_mul(self.h ^ u64::from_le_bytes(w), self.k);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.h = fold_mul(self.h ^ u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59), self.k);
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.h = fold_mul(self.h ^ u64::from(i) ^ 0xff00, self.k);
    }

    #[inline]
    fn finish(&self) -> u64 {
        fold_mul(self.h, self.k.rotate_left(17) | 1)
    }
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
}
