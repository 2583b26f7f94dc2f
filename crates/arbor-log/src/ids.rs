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
    fn counter_ids_start_at_one_and_skip_taken() {
        let mut g = CounterIds::new();
        assert_eq!(g.entry_id(&|_| false), "00000001");
        assert_eq!(g.entry_id(&|s| s == "00000002"), "00000003");
        assert_eq!(g.session_id(), "00000000-0000-4000-8000-000000000001");
    }
}
