//! What keeps a million slots small: an entry id held as a `u32` when it is
//! one of pi's 8-hex-digit ids ([`PackedId`], read back as an [`EntryId`]), and
//! the id → slot table ([`IdTable`]) that holds slot numbers only and reads
//! each slot's id back from the slots to compare (docs/performance.md,
//! "Memory bounded by the file").

use std::fmt;
use std::hash::BuildHasher;
use std::ops::Deref;

use arbor_log::idhash::IdHash;
use hashbrown::HashTable;

/// An id as a slot holds it: pi's ids (8 lowercase hex digits) as their
/// value; any other id is kept beside the slot, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PackedId {
    Hex(u32),
    Other,
}

impl PackedId {
    /// `id` packed when it is exactly 8 lowercase hex digits (so it reads back the same).
    pub(crate) fn of(id: &str) -> PackedId {
        let b = id.as_bytes();
        if b.len() == 8 && b.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c)) {
            if let Ok(v) = u32::from_str_radix(id, 16) {
                return PackedId::Hex(v);
            }
        }
        PackedId::Other
    }
}

/// An entry's id as the session holds it: the 8 hex digits of a packed
/// one, or the text it was written as. Reads as a `&str` (`&*id`, or
/// wherever a `&str` is expected); `to_string` gives an owned one.
#[derive(Clone, Copy)]
pub enum EntryId<'a> {
    /// The digits of one of pi's ids.
    Hex([u8; 8]),
    /// Any other id, as written.
    Text(&'a str),
}

impl Default for EntryId<'_> {
    fn default() -> Self {
        EntryId::Text("")
    }
}

impl EntryId<'_> {
    /// The digits of a packed id.
    pub(crate) fn hex(v: u32) -> EntryId<'static> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 8];
        for (k, b) in out.iter_mut().enumerate() {
            *b = DIGITS[((v >> (28 - 4 * k)) & 0xf) as usize];
        }
        EntryId::Hex(out)
    }
}

impl Deref for EntryId<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            // Hex digits are ASCII.
            EntryId::Hex(b) => std::str::from_utf8(b).unwrap_or_default(),
            EntryId::Text(s) => s,
        }
    }
}

impl AsRef<str> for EntryId<'_> {
    fn as_ref(&self) -> &str {
        self
    }
}

impl fmt::Debug for EntryId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for EntryId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl PartialEq for EntryId<'_> {
    fn eq(&self, other: &EntryId<'_>) -> bool {
        **self == **other
    }
}

impl PartialEq<str> for EntryId<'_> {
    fn eq(&self, other: &str) -> bool {
        &**self == other
    }
}

impl PartialEq<EntryId<'_>> for &str {
    fn eq(&self, other: &EntryId<'_>) -> bool {
        *self == &**other
    }
}

impl PartialEq<&str> for EntryId<'_> {
    fn eq(&self, other: &&str) -> bool {
        &**self == *other
    }
}

/// Id → slot, the later of two slots with one id winning: a hash table of
/// slot numbers (4 bytes each) whose keys are the slots' own ids, read back
/// through `id_of` whenever two must be compared or a slot rehashed.
#[derive(Debug, Default)]
pub(crate) struct IdTable {
    table: HashTable<u32>,
    hasher: IdHash,
}

impl IdTable {
    pub(crate) fn with_capacity(n: usize) -> IdTable {
        IdTable { table: HashTable::with_capacity(n), hasher: IdHash::default() }
    }

    fn hash(&self, id: &str) -> u64 {
        self.hasher.hash_one(id)
    }

    /// The slot `id` resolves to.
    pub(crate) fn get<'s>(&self, id: &str, id_of: impl Fn(usize) -> EntryId<'s>) -> Option<usize> {
        self.table.find(self.hash(id), |&i| *id_of(i as usize) == *id).map(|&i| i as usize)
    }

    /// Makes `id` resolve to slot `i` (whose id it is); the slot it resolved to before, if any.
    pub(crate) fn insert<'s>(&mut self, id: &str, i: usize, id_of: impl Fn(usize) -> EntryId<'s>) -> Option<usize> {
        let slot = u32::try_from(i).unwrap_or(u32::MAX);
        let hash = self.hash(id);
        let hasher = &self.hasher;
        match self.table.entry(hash, |&k| *id_of(k as usize) == *id, |&k| hasher.hash_one(&*id_of(k as usize))) {
            hashbrown::hash_table::Entry::Occupied(mut e) => {
                let prev = *e.get() as usize;
                *e.get_mut() = slot;
                Some(prev)
            }
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert(slot);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ids_that_read_back_the_same_are_packed() {
        for id in ["00000000", "ffffffff", "0a1b2c3d", "deadbeef"] {
            let PackedId::Hex(v) = PackedId::of(id) else { panic!("{id} packs") };
            assert_eq!(&*EntryId::hex(v), id);
        }
        for id in ["DEADBEEF", "0a1b2c3", "0a1b2c3d4", "+a1b2c3d", "0x1b2c3d", "", "é1b2c3d", "0a1b 2c3"] {
            assert_eq!(PackedId::of(id), PackedId::Other, "{id:?}");
        }
    }

    #[test]
    fn the_table_finds_the_later_slot_of_an_id() {
        let ids = ["a", "00000001", "b", "a", "00000001"];
        let id_of = |i: usize| EntryId::Text(ids[i]);
        let mut t = IdTable::with_capacity(1);
        let prev: Vec<_> = ids.iter().enumerate().map(|(i, id)| t.insert(id, i, id_of)).collect();
        assert_eq!(prev, [None, None, None, Some(0), Some(1)]);
        assert_eq!(t.get("a", id_of), Some(3));
        assert_eq!(t.get("b", id_of), Some(2));
        assert_eq!(t.get("00000001", id_of), Some(4));
        assert_eq!(t.get("c", id_of), None);
    }
}
