//! What keeps a million slots small: an entry id held as a `u32` when it is
//! one of pi's 8-hex-digit ids ([`PackedId`], read back as an [`EntryId`])
//! (docs/performance.md, "Memory bounded by the file"). The id → slot table
//! is `arbor_log::idhash::IdTable`.

use std::fmt;
use std::ops::Deref;

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
///
/// ```
/// use arbor_tree::{EntryId, Message, Session, SessionOptions};
///
/// let mut s = Session::in_memory("/w", SessionOptions::default());
/// let id = s.append_message(Message::user("hi", 1))?;
/// let held: EntryId = s.id_at(s.branch_positions(None)[0]).expect("an entry");
/// assert_eq!(&*held, id.as_str());
/// assert_eq!(held.to_string(), id);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
}
