//! Entry and session id generation.
//!
//! pi's entry ids are the first 8 hex characters of a random UUID v4, checked
//! against the ids already in use (100 tries, then a full UUID). The generator
//! is a trait object so that tests (and the reference outputs, which were made
//! with a counter) can be reproduced exactly.

use std::fmt;

/// Makes new entry ids and session ids.
pub trait IdGenerator: Send + fmt::Debug {
    /// Returns a fresh entry id for which `taken` is false where possible.
    fn entry_id(&mut self, taken: &dyn Fn(&str) -> bool) -> String;
    /// Returns a fresh session id.
    fn session_id(&mut self) -> String;
}

/// pi's generator: 8 lowercase hex characters from a random UUID v4.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomIds;

impl IdGenerator for RandomIds {
    fn entry_id(&mut self, taken: &dyn Fn(&str) -> bool) -> String {
        for _ in 0..100 {
            let uuid = uuid::Uuid::new_v4().simple().to_string();
            let id = &uuid[..8];
            if !taken(id) {
                return id.to_owned();
            }
        }
        uuid::Uuid::new_v4().to_string()
    }

    fn session_id(&mut self) -> String {
        uuid::Uuid::new_v4().to_string()
    }
}

/// A deterministic generator: the n-th entry id is `format!("{:08x}", n)`,
/// starting at 1, exactly as the reference outputs were produced. Ids that are
/// taken are skipped. Session ids are `00000000-0000-4000-8000-<n as 12 hex>`.
#[derive(Clone, Default)]
pub struct CounterIds {
    next: u64,
    sessions: u64,
}

impl CounterIds {
    /// A counter whose first entry id is `00000001`.
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Debug for CounterIds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CounterIds(next={})", self.next + 1)
    }
}

impl IdGenerator for CounterIds {
    fn entry_id(&mut self, taken: &dyn Fn(&str) -> bool) -> String {
        loop {
            self.next += 1;
            let id = format!("{:08x}", self.next);
            if !taken(&id) {
                return id;
            }
        }
    }

    fn session_id(&mut self) -> String {
        self.sessions += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.sessions)
    }
}

/// Ids derived from a seed: the same seed gives the same sequence of
/// 8-hex ids. Used to migrate a v1 file, whose entries have no ids, so that
/// every read of the same unmigrated file shows the same ids (the first write
/// then makes them permanent).
#[derive(Debug, Clone)]
pub struct SeededIds {
    state: u64,
}

impl SeededIds {
    /// A sequence seeded from arbitrary text (for example the session id).
    pub fn from_text(text: &str) -> Self {
        // FNV-1a: a stable hash (std's hashers are not stable across releases).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        SeededIds { state: h }
    }

    fn next_u64(&mut self) -> u64 {
        // splitmix64
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl IdGenerator for SeededIds {
    fn entry_id(&mut self, taken: &dyn Fn(&str) -> bool) -> String {
        for _ in 0..100 {
            let id = format!("{:08x}", self.next_u64() >> 32);
            if !taken(&id) {
                return id;
            }
        }
        format!("{:016x}", self.next_u64())
    }

    fn session_id(&mut self) -> String {
        let (a, b) = (self.next_u64(), self.next_u64());
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            0x8000 | (b >> 48 & 0x3fff),
            b & 0xffff_ffff_ffff
        )
    }
}

/// True when `id` has the shape pi writes: 8 lowercase hex characters.
pub fn is_pi_entry_id(id: &str) -> bool {
    id.len() == 8 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_ids_are_8_hex_and_avoid_taken() {
        let mut g = RandomIds;
        let id = g.entry_id(&|_| false);
        assert!(is_pi_entry_id(&id), "{id}");
        let first = id.clone();
        let other = g.entry_id(&|s| s == first);
        assert_ne!(other, first);
    }

    #[test]
    fn random_ids_fall_back_to_a_full_uuid_when_everything_collides() {
        let id = RandomIds.entry_id(&|_| true);
        assert_eq!(id.len(), 36);
    }

    #[test]
    fn seeded_ids_repeat_for_the_same_seed() {
        let a: Vec<String> = (0..5)
            .map({
                let mut g = SeededIds::from_text("s1");
                move |_| g.entry_id(&|_| false)
            })
            .collect();
        let mut g = SeededIds::from_text("s1");
        let b: Vec<String> = (0..5).map(|_| g.entry_id(&|_| false)).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|i| is_pi_entry_id(i)));
        assert_ne!(SeededIds::from_text("s2").entry_id(&|_| false), a[0]);
        assert_eq!(SeededIds::from_text("x").session_id().len(), 36);
    }

    #[test]
    fn counter_ids_start_at_one_and_skip_taken() {
        let mut g = CounterIds::new();
        assert_eq!(g.entry_id(&|_| false), "00000001");
        assert_eq!(g.entry_id(&|s| s == "00000002"), "00000003");
        assert_eq!(g.session_id(), "00000000-0000-4000-8000-000000000001");
    }
}
