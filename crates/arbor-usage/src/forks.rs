//! Forks counted once: a reply that an earlier session holds already (pi's
//! fork copies the path with its entries' ids and times; Claude Code copies
//! a conversation's records into a resumed session's file) belongs to the
//! first session that has it, and is not counted again in the copy.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::model::SessionUsage;

/// For every session, its replies that repeat an earlier session's: the
/// reply's index and the session (its index) that has it first, by reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Copies {
    of: Vec<Vec<(u32, u32)>>,
}

impl Copies {
    /// The session whose reply `reply` of session `session` repeats, if any.
    pub fn of(&self, session: usize, reply: usize) -> Option<usize> {
        let copies = self.of.get(session)?;
        if copies.is_empty() {
            return None;
        }
        let reply = u32::try_from(reply).ok()?;
        copies.binary_search_by_key(&reply, |c| c.0).ok().map(|k| copies[k].1 as usize)
    }

    /// How many replies are copies.
    pub fn count(&self) -> usize {
        self.of.iter().map(Vec::len).sum()
    }

    /// The sessions it was found among.
    pub(crate) fn sessions(&self) -> usize {
        self.of.len()
    }

    /// Every copy: session, reply, and the session that has it first.
    pub(crate) fn each(&self) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        self.of.iter().enumerate().flat_map(|(s, c)| c.iter().map(move |&(r, o)| (s as u32, r, o)))
    }

    /// Copies of `sessions` sessions from [`Copies::each`]'s triples (in its
    /// order); `None` when one does not fit.
    pub(crate) fn from_each(sessions: usize, each: impl IntoIterator<Item = (u32, u32, u32)>) -> Option<Copies> {
        let mut of = vec![Vec::new(); sessions];
        for (s, r, o) in each {
            let list: &mut Vec<(u32, u32)> = of.get_mut(s as usize)?;
            if list.last().is_some_and(|l| l.0 >= r) || o as usize >= sessions {
                return None;
            }
            list.push((r, o));
        }
        Some(Copies { of })
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
    let mut of: Vec<Vec<(u32, u32)>> = vec![Vec::new(); sessions.len()];
    for i in order {
        for (k, r) in sessions[i].replies.iter().enumerate() {
            match owner.get(&r.key) {
                Some(&first) => of[i].push((k as u32, first)),
                None => {
                    owner.insert(r.key, i as u32);
                }
            }
        }
    }
    Copies { of }
}

/// What [`find_copies`] depends on, hashed: every session's start, location
/// and reply keys, in order. Copies kept with it are the copies of any
/// sessions that give the same.
pub(crate) fn fingerprint(sessions: &[SessionUsage]) -> u64 {
    // Multiply, then fold the high half down (a multiply alone never moves
    // a high bit down).
    let mix = |h: u64, w: u64| {
        let h = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 32)
    };
    let mut h = mix(0, sessions.len() as u64);
    for s in sessions {
        h = mix(h, s.started_ms as u64);
        h = mix(h, s.location.len() as u64);
        for chunk in s.location.as_bytes().chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            h = mix(h, u64::from_le_bytes(word));
        }
        h = mix(h, s.replies.len() as u64);
        for r in &s.replies {
            h = mix(h, r.key);
        }
    }
    h
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::cache::Cache;
    use crate::model::{Agent, Place, Reply, Tokens};
    use crate::report::Usage;

    fn session(location: &str, started_ms: i64, keys: &[u64]) -> SessionUsage {
        let reply = |key: u64| Reply {
            entry: "e".into(),
            time_ms: started_ms,
            model: 0,
            tokens: Tokens { input: 1, ..Tokens::default() },
            recorded_cost: None,
            place: Place::Active,
            key,
        };
        SessionUsage {
            agent: Agent::Pi,
            location: location.into(),
            id: location.into(),
            cwd: "/w".into(),
            parent_session: None,
            started_ms,
            models: vec![("p".into(), "m".into())],
            replies: keys.iter().map(|&k| reply(k)).collect(),
            branch_summaries: 0,
            compactions: 0,
            leaves: 1,
        }
    }

    #[test]
    fn the_copies_of_the_same_sessions_are_taken_from_the_cache_and_others_found_again() {
        let sessions = vec![session("/a", 1, &[1, 2]), session("/b", 2, &[1, 2, 3])];
        let mut cache = Cache::in_memory();
        let first = Usage::with_cache(sessions.clone(), &mut cache);
        assert_eq!(first.copies, find_copies(&sessions));
        assert_eq!((first.copies.of(1, 0), first.copies.of(1, 1), first.copies.of(1, 2)), (Some(0), Some(0), None));
        // What the cache keeps for these sessions is what is taken: a kept
        // table that says otherwise shows it was not looked for again.
        let other = Copies::from_each(2, [(1, 2, 0)]).unwrap();
        cache.keep_copies(fingerprint(&sessions), other.clone());
        assert_eq!(Usage::with_cache(sessions.clone(), &mut cache).copies, other);
        // Any change to what copies depend on finds them again.
        for changed in [
            vec![session("/a", 1, &[1, 9]), session("/b", 2, &[1, 2, 3])],
            vec![session("/a", 3, &[1, 2]), session("/b", 2, &[1, 2, 3])],
            vec![session("/c", 1, &[1, 2]), session("/b", 2, &[1, 2, 3])],
            vec![session("/b", 2, &[1, 2, 3]), session("/a", 1, &[1, 2])],
            vec![session("/a", 1, &[1, 2])],
        ] {
            cache.keep_copies(fingerprint(&sessions), other.clone());
            let got = Usage::with_cache(changed.clone(), &mut cache).copies;
            assert_eq!(got, find_copies(&changed));
        }
    }

    #[test]
    fn copies_read_back_only_when_they_fit() {
        assert!(Copies::from_each(2, [(1, 0, 0), (1, 1, 0)]).is_some());
        assert!(Copies::from_each(2, [(2, 0, 0)]).is_none(), "no such session");
        assert!(Copies::from_each(2, [(1, 0, 2)]).is_none(), "no such owner");
        assert!(Copies::from_each(2, [(1, 1, 0), (1, 0, 0)]).is_none(), "out of order");
    }
}
