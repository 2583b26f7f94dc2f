//! Forks counted once: a reply that an earlier session holds already (pi's
//! fork copies the path with its entries' ids and times; Claude Code copies
//! a conversation's records into a resumed session's file) belongs to the
//! first session that has it, and is not counted again in the copy.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::model::SessionUsage;

/// For every session, for every reply: the session (its index) whose reply it repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Copies {
    of: Vec<Vec<Option<u32>>>,
}

impl Copies {
    /// The session whose reply `reply` of session `session` repeats, if any.
    pub fn of(&self, session: usize, reply: usize) -> Option<usize> {
        self.of.get(session).and_then(|r| r.get(reply)).copied().flatten().map(|i| i as usize)
    }

    /// How many replies are copies.
    pub fn count(&self) -> usize {
        self.of.iter().flatten().filter(|x| x.is_some()).count()
    }
}

/// Finds the copies among `sessions`: the first session is the one that
/// started first (its header's time, then its location), and a reply that
/// repeats one of an earlier session (same key, see the `read` module) is a
/// copy of the session that has it first.
pub fn find_copies(sessions: &[SessionUsage]) -> Copies {
    let mut order: Vec<usize> = (0..sessions.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&sessions[a], &sessions[b]);
        x.started_ms.cmp(&y.started_ms).then_with(|| x.location.cmp(&y.location))
    });
    let n = sessions.iter().map(|s| s.replies.len()).sum();
    let mut owner: HashMap<u64, u32, BuildHasherDefault<KeyHasher>> =
        HashMap::with_capacity_and_hasher(n, BuildHasherDefault::default());
    let mut of: Vec<Vec<Option<u32>>> = sessions.iter().map(|s| vec![None; s.replies.len()]).collect();
    for i in order {
        for (k, r) in sessions[i].replies.iter().enumerate() {
            match owner.get(&r.key) {
                Some(&first) => of[i][k] = Some(first),
                None => {
                    owner.insert(r.key, i as u32);
                }
            }
        }
    }
    Copies { of }
}

/// The keys are FNV hashes already: one multiply spreads them over the
/// bits the table looks at (SipHash over them cost a tenth of a repeated report).
#[derive(Debug, Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}
