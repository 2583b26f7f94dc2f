//! Where tool calls were made, so that a tool result's row names its call
//! ([`CallsAt`], [`CallsInBatch`]) without keeping the calls' entries: a
//! table of a few bytes a call ([`CallTable`]).

use std::cell::Cell;
use std::collections::HashMap;

use compact_str::CompactString;

use arbor_context::render::{CallText, ToolCalls};
use arbor_log::Entry;
use arbor_tree::{Position, Session};

/// Where tool calls were made: the positions of the assistant entries
/// that made a call with an id, the last made first.
pub trait CallSites {
    /// The positions that made a call with `id` (or, for a table of hashes, one whose id hashes alike), the last first.
    fn sites(&self, id: &str) -> Vec<Position>;
}

impl CallSites for HashMap<CompactString, Position> {
    fn sites(&self, id: &str) -> Vec<Position> {
        self.get(id).copied().into_iter().collect()
    }
}

/// Where every tool call was made, held as 32 bits of a hash of its id
/// and the position, in one `u64` (8 bytes a call, not the id): sorted by
/// hash, the calls of one hash in the order they were made. A hash names
/// candidates only; the call is then looked up by its id in the entry
/// ([`CallsAt`]). Hashes are uniform, so a lookup starts where its hash
/// would fall and searches a few neighbours.
#[derive(Debug, Default)]
pub struct CallTable {
    sites: Vec<u64>,
}

fn call_hash(id: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(id) >> 32
}

impl CallTable {
    /// Adds a call made at `p` (after every call made before it).
    pub fn push(&mut self, id: &str, p: Position) {
        self.sites.push(call_hash(id) << 32 | p.get() as u64);
    }

    /// Sorts the table for [`CallSites::sites`] (stable: the order made stays within a hash).
    pub fn sorted(mut self) -> CallTable {
        self.sites.sort_by_key(|&s| s >> 32);
        self.sites.shrink_to_fit();
        self
    }

    /// The first index whose hash is not below `h`: from where `h` would
    /// fall, steps doubling until the answer is bracketed, then a binary search there.
    fn first_at(&self, h: u64) -> usize {
        let n = self.sites.len();
        let below = |i: usize| self.sites[i] >> 32 < h;
        let guess = ((h * n as u64) >> 32) as usize;
        let (mut lo, mut hi) = (guess.min(n), guess.min(n));
        let mut step = 1;
        while lo > 0 && !below(lo - 1) {
            lo = lo.saturating_sub(step);
            step *= 2;
        }
        step = 1;
        while hi < n && below(hi) {
            hi = (hi + step).min(n);
            step *= 2;
        }
        lo + self.sites[lo..hi].partition_point(|&s| s >> 32 < h)
    }
}

impl CallSites for CallTable {
    fn sites(&self, id: &str) -> Vec<Position> {
        let h = call_hash(id);
        let from = self.first_at(h);
        let to = from + self.sites[from..].iter().take_while(|&&s| s >> 32 == h).count();
        self.sites[from..to].iter().rev().map(|&s| Position::new((s & u64::from(u32::MAX)) as usize)).collect()
    }
}

/// A tool result's call, found through where each call was made (by call
/// id): in the batch being written (its assistant message is nearly always
/// the result's parent), else decoded again. A million calls so cost a few
/// bytes each, not their rows.
pub struct CallsAt<'a> {
    /// The session the calls were made in.
    pub session: &'a Session,
    /// The positions of the assistant entries that made each call.
    pub made_at: &'a (dyn CallSites + Sync),
    /// The entries decoded for the batch being written.
    pub batch: &'a HashMap<Position, &'a Entry>,
}

impl std::fmt::Debug for CallsAt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallsAt").field("batch", &self.batch.len()).finish_non_exhaustive()
    }
}

impl std::fmt::Debug for CallsInBatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallsInBatch")
            .field("batch", &self.batch.len())
            .field("missed", &self.missed)
            .finish_non_exhaustive()
    }
}

impl CallText for CallsAt<'_> {
    fn call_text(&self, id: &str, home: Option<&str>) -> Option<String> {
        // A file changed under the session finds no call here; the rows
        // decode their own entries, and fail with the change.
        find_call(self.made_at, self.batch, id, home, |p| self.session.decode_at(p).ok().flatten())
    }
}

/// [`CallsAt`] without the session, for rows made on other threads: a call
/// made outside the batch is not read, and `missed` says so (the row is
/// then made again through [`CallsAt`]).
pub struct CallsInBatch<'a> {
    /// The positions of the assistant entries that made each call.
    pub made_at: &'a (dyn CallSites + Sync),
    /// The entries decoded for the batch being written.
    pub batch: &'a HashMap<Position, &'a Entry>,
    /// Set when a site of a call was outside the batch.
    pub missed: Cell<bool>,
}

impl CallText for CallsInBatch<'_> {
    fn call_text(&self, id: &str, home: Option<&str>) -> Option<String> {
        find_call(self.made_at, self.batch, id, home, |_| {
            self.missed.set(true);
            None
        })
    }
}

/// The text of call `id`: from the last site whose entry holds the call
/// (only a hash's other calls come before it), each site's entry taken
/// from `batch`, else from `outside`.
fn find_call(
    made_at: &(dyn CallSites + Sync),
    batch: &HashMap<Position, &Entry>,
    id: &str,
    home: Option<&str>,
    outside: impl Fn(Position) -> Option<Entry>,
) -> Option<String> {
    made_at.sites(id).into_iter().find_map(|p| {
        let mut calls = ToolCalls::new();
        match batch.get(&p) {
            Some(e) => calls.record(e),
            None => calls.record(&outside(p)?),
        }
        calls.call_text(id, home)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table names every site of an id, the last made first, whatever
    /// its size and however often an id repeats; an id never made finds
    /// none, or only other ids' sites sharing its hash.
    #[test]
    fn the_call_table_finds_every_site_of_an_id() {
        let mut rng = arbor_test_support::Rng(0x2545_F491_4F6C_DD1D);
        for n in [0, 1, 2, 3, 10, 100, 5000] {
            let ids: Vec<String> = (0..n).map(|_| format!("call_{}", rng.below(n.max(1) * 2))).collect();
            let mut table = CallTable::default();
            for (k, id) in ids.iter().enumerate() {
                table.push(id, Position::new(k));
            }
            let table = table.sorted();
            for (k, id) in ids.iter().enumerate() {
                let want: Vec<Position> = (0..n).rev().filter(|&j| &ids[j] == id).map(Position::new).collect();
                let got: Vec<Position> = table.sites(id).into_iter().filter(|p| &ids[p.get()] == id).collect();
                assert_eq!(got, want, "{id} (n = {n}, made at {k})");
            }
            let stray: Vec<Position> = table.sites("never").into_iter().filter(|p| ids[p.get()] == "never").collect();
            assert!(stray.is_empty());
        }
    }
}
