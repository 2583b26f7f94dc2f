//! What `check` and `repair` keep of each entry while the file streams by:
//! a few integers per entry and its id in one arena, never a decoded entry.
//!
//! Ids resolve through a table of entry numbers (4 bytes a slot, the id
//! read from the arena), so the later line of a repeated id wins as the
//! session's id map has it. The tool calls and tool results, labels and
//! compactions are kept sparsely, in entry order, for the walk
//! ([`super::walk`]).

use std::collections::HashMap;
use std::hash::BuildHasher;

use compact_str::CompactString;
use hashbrown::HashTable;

use arbor_log::idhash::IdHash;
use arbor_log::stream::CallFacts;
use arbor_log::{EntryKind, Role};

/// No entry.
pub(crate) const NONE: u32 = u32::MAX;

/// The entry is not live: a later line holds its id.
pub(super) const DEAD: u8 = 1;
/// `parentId` is the entry's own id.
pub(super) const SELF_PARENT: u8 = 2;
/// One entry of a parent cycle, read as a root.
pub(super) const CYCLE_ROOT: u8 = 4;
/// A compaction (see [`Ledger::compactions`]).
pub(super) const COMPACTION: u8 = 8;
/// An assistant message or a tool result (see [`Ledger::effects`]).
pub(super) const EFFECT: u8 = 16;

/// A string in [`Ledger::strs`]: start and length.
pub(crate) type StrRef = (u32, u32);

/// What one entry does to the tool calls open on its path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Effect {
    pub entry: u32,
    /// Its calls: `Ledger::calls[calls.0..calls.1]`.
    pub calls: (u32, u32),
    /// The call id a tool result answers (`""` when it names none).
    pub answers: Option<StrRef>,
}

/// The per-entry state of a streamed session, in file order.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    ids: Ids,
    /// Where entries stop following each other line by line: `(entry, its
    /// line)`; the entries after one, up to the next, are on the lines after it.
    lines: Vec<(u32, u32)>,
    /// The entry its `parentId` resolves to (`NONE`: a root, a self-parent or an orphan).
    pub parent: Vec<u32>,
    pub flags: Vec<u8>,
    table: HashTable<u32>,
    hasher: IdHash,
    /// Entries whose parent was not seen yet (or is missing): the entry and its `parentId`.
    pending: Vec<(u32, CompactString)>,
    /// Entries whose parent is missing, with its id (after [`Ledger::finish`]).
    pub orphans: Vec<(u32, CompactString)>,
    /// A repeated id's first line, by the entry now holding it.
    first_lines: HashMap<u32, u32>,
    pub effects: Vec<Effect>,
    /// Tool calls: `(id, name)` (`""` and `tool` where the block has none).
    pub calls: Vec<(StrRef, StrRef)>,
    strs: Vec<u8>,
    /// Label entries: the entry and the target it names.
    pub labels: Vec<(u32, String)>,
    /// Compactions: the entry and its `firstKeptEntryId` with the entry it
    /// resolves to (`NONE`: no entry; resolved by [`Ledger::finish`]).
    pub compactions: Vec<(u32, Option<(String, u32)>)>,
}

impl Ledger {
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// The 1-based line of entry `i`.
    pub fn line(&self, i: u32) -> usize {
        let k = self.lines.partition_point(|&(e, _)| e <= i);
        let (e, line) = self.lines.get(k.wrapping_sub(1)).copied().unwrap_or((0, 0));
        (line + (i - e)) as usize
    }

    /// The id of entry `i`.
    pub fn id(&self, i: u32) -> &str {
        std::str::from_utf8(self.ids.get(i)).unwrap_or_default()
    }

    /// A string of [`Ledger::strs`].
    pub fn str(&self, (start, len): StrRef) -> &str {
        std::str::from_utf8(&self.strs[start as usize..(start + len) as usize]).unwrap_or_default()
    }

    pub fn live(&self, i: u32) -> bool {
        self.flags[i as usize] & DEAD == 0
    }

    pub fn has(&self, i: u32, flag: u8) -> bool {
        self.flags[i as usize] & flag != 0
    }

    /// Room for `more` entries.
    pub fn reserve(&mut self, more: usize) {
        self.parent.reserve_exact(more);
        self.flags.reserve_exact(more);
        self.ids.reserve(more);
        let (ids, hasher) = (&self.ids, &self.hasher);
        self.table.reserve(more, |&k| hasher.hash_one(ids.get(k)));
    }

    /// The live entry holding `id`.
    pub fn lookup(&self, id: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(id.as_bytes());
        self.table.find(hash, |&k| same(self.ids.get(k), id.as_bytes())).copied()
    }

    /// Adds an entry read on `line`; the first line of its id when it repeats one.
    pub fn push(&mut self, line: usize, id: &str, parent_id: Option<&str>) -> Option<usize> {
        let i = u32::try_from(self.len()).unwrap_or(NONE);
        self.ids.push(id.as_bytes());
        let line = u32::try_from(line).unwrap_or(NONE);
        if i == 0 || self.line(i - 1) + 1 != line as usize {
            self.lines.push((i, line));
        }
        let mut flags = 0;
        let parent = match parent_id {
            None => NONE,
            Some(p) if p == id => {
                flags |= SELF_PARENT;
                NONE
            }
            // Most parents are the entry just before (the last entry pushed holds its id).
            Some(p) if i > 0 && same(self.ids.get(i - 1), p.as_bytes()) => i - 1,
            Some(p) => self.lookup(p).unwrap_or_else(|| {
                self.pending.push((i, p.into()));
                NONE
            }),
        };
        push_slim(&mut self.parent, parent);
        push_slim(&mut self.flags, flags);
        let hash = self.hasher.hash_one(id.as_bytes());
        let ids = &self.ids;
        let id_of = |k: u32| ids.get(k);
        let hasher = &self.hasher;
        match self.table.find_mut(hash, |&k| same(id_of(k), id.as_bytes())) {
            Some(held) => {
                let prev = std::mem::replace(held, i);
                self.flags[prev as usize] |= DEAD;
                let first = self.first_lines.get(&prev).copied().unwrap_or(self.line(prev) as u32);
                self.first_lines.insert(i, first);
                Some(first as usize)
            }
            None => {
                self.table.insert_unique(hash, i, |&k| hasher.hash_one(id_of(k)));
                None
            }
        }
    }

    fn intern(&mut self, s: &str) -> StrRef {
        let start = u32::try_from(self.strs.len()).unwrap_or(NONE);
        self.strs.extend_from_slice(s.as_bytes());
        (start, u32::try_from(s.len()).unwrap_or(0))
    }

    /// Notes what the last entry pushed does for the walk: its tool calls
    /// or the call it answers, and, decoded, a label's target or a
    /// compaction's first kept entry.
    pub fn note(
        &mut self,
        role: Option<&Role>,
        calls: &[CallFacts],
        answers: Option<&Option<CompactString>>,
        entry: Option<&arbor_log::Entry>,
    ) {
        let Some(i) = self.len().checked_sub(1) else { return };
        let i = i as u32;
        match (role, answers) {
            (Some(Role::Assistant), _) if !calls.is_empty() => {
                let start = self.calls.len() as u32;
                for (id, name) in calls {
                    let call =
                        (self.intern(id.as_deref().unwrap_or("")), self.intern(name.as_deref().unwrap_or("tool")));
                    self.calls.push(call);
                }
                self.effects.push(Effect { entry: i, calls: (start, self.calls.len() as u32), answers: None });
                self.flags[i as usize] |= EFFECT;
            }
            (Some(Role::ToolResult), Some(id)) => {
                let id = self.intern(id.as_deref().unwrap_or(""));
                let at = self.calls.len() as u32;
                self.effects.push(Effect { entry: i, calls: (at, at), answers: Some(id) });
                self.flags[i as usize] |= EFFECT;
            }
            _ => {}
        }
        match entry.map(|e| &e.kind) {
            Some(EntryKind::Label(l)) => self.labels.push((i, l.target_id.clone())),
            Some(EntryKind::Compaction(c)) => {
                self.flags[i as usize] |= COMPACTION;
                self.compactions.push((i, c.first_kept_entry_id.clone().map(|k| (k, NONE))));
            }
            _ => {}
        }
    }

    /// The effect of entry `i` (one with [`EFFECT`]).
    pub fn effect(&self, i: u32) -> Option<&Effect> {
        let k = self.effects.binary_search_by_key(&i, |e| e.entry).ok()?;
        self.effects.get(k)
    }

    /// The kept entry of compaction `i` (one with [`COMPACTION`]): its id and the entry it resolves to.
    pub fn compaction(&self, i: u32) -> Option<Option<(&str, u32)>> {
        let k = self.compactions.binary_search_by_key(&i, |c| c.0).ok()?;
        self.compactions.get(k).map(|c| c.1.as_ref().map(|(id, at)| (id.as_str(), *at)))
    }

    /// Once every line is in: parents resolved to the live holder of their
    /// id, forward parents resolved or found missing, kept entries resolved.
    pub fn finish(&mut self) {
        if !self.first_lines.is_empty() {
            // A parent resolved while an earlier line held its id: the later line wins.
            for i in 0..self.parent.len() {
                let p = self.parent[i];
                if p != NONE && !self.live(p) {
                    self.parent[i] = self.lookup(self.id(p)).unwrap_or(NONE);
                }
            }
        }
        for (i, p) in std::mem::take(&mut self.pending) {
            match self.lookup(&p) {
                Some(k) => self.parent[i as usize] = k,
                None => self.orphans.push((i, p)),
            }
        }
        let mut compactions = std::mem::take(&mut self.compactions);
        for (_, kept) in &mut compactions {
            if let Some((id, at)) = kept {
                *at = self.lookup(id).unwrap_or(NONE);
            }
        }
        self.compactions = compactions;
        self.find_cycles();
    }

    /// Marks one entry of each parent cycle (see `Session::find_cycles`,
    /// which this follows step for step).
    fn find_cycles(&mut self) {
        let n = self.len();
        // 0 = unseen, 1 = on the current walk, 2 = done.
        let mut state = vec![0u8; n];
        let mut walk: Vec<u32> = vec![];
        for start in 0..n {
            if !self.live(start as u32) || state[start] != 0 {
                continue;
            }
            walk.clear();
            let mut cur = start as u32;
            while cur != NONE {
                match state[cur as usize] {
                    2 => break,
                    1 => {
                        let pos = walk.iter().position(|&w| w == cur).unwrap_or(0);
                        if let Some(&first) = walk[pos..].iter().min() {
                            self.flags[first as usize] |= CYCLE_ROOT;
                        }
                        break;
                    }
                    _ => {}
                }
                state[cur as usize] = 1;
                walk.push(cur);
                cur = self.parent[cur as usize];
            }
            for &w in &walk {
                state[w as usize] = 2;
            }
        }
    }

    /// The entries marked as cycle roots, in file order.
    pub fn cycle_roots(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len() as u32).filter(|&i| self.has(i, CYCLE_ROOT))
    }

    /// Drops what only the scan needed (the id table) before the walk.
    pub fn drop_table(&mut self) {
        self.table = HashTable::new();
    }
}

/// Pushes onto a vector that grows by a quarter, not double: the per-entry
/// columns of a million entries are most of what a check holds.
/// Two ids alike, pi's 8-byte ids compared as one word (a slice compare is a
/// call to `memcmp`, a million times per check).
fn same(a: &[u8], b: &[u8]) -> bool {
    match (<[u8; 8]>::try_from(a), <[u8; 8]>::try_from(b)) {
        (Ok(x), Ok(y)) => u64::from_ne_bytes(x) == u64::from_ne_bytes(y),
        _ => a == b,
    }
}

fn push_slim<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        v.reserve_exact(v.len() / 4 + 64);
    }
    v.push(x);
}

/// Every entry's id in one arena. While all ids have one length (pi's are
/// 8 hex digits) no ends are kept.
#[derive(Debug, Default)]
struct Ids {
    bytes: Vec<u8>,
    /// The length every id has so far (`None` before the first, or once they differ).
    width: Option<usize>,
    /// The end of each id, once lengths differ.
    ends: Vec<u32>,
    count: usize,
}

impl Ids {
    fn push(&mut self, id: &[u8]) {
        if self.count == 0 && self.ends.is_empty() {
            self.width = Some(id.len());
        }
        if let Some(w) = self.width.filter(|&w| w != id.len()) {
            self.ends = (1..=self.count).map(|k| u32::try_from(k * w).unwrap_or(NONE)).collect();
            self.width = None;
        }
        if self.bytes.len() + id.len() > self.bytes.capacity() {
            self.bytes.reserve_exact(self.bytes.len() / 4 + id.len() + 1024);
        }
        self.bytes.extend_from_slice(id);
        if self.width.is_none() {
            push_slim(&mut self.ends, u32::try_from(self.bytes.len()).unwrap_or(NONE));
        }
        self.count += 1;
    }

    fn reserve(&mut self, more: usize) {
        let each = self.bytes.len() / self.count.max(1);
        self.bytes.reserve_exact(more * each);
        if self.width.is_none() {
            self.ends.reserve_exact(more);
        }
    }

    fn get(&self, i: u32) -> &[u8] {
        let i = i as usize;
        match self.width {
            Some(w) => &self.bytes[i * w..(i + 1) * w],
            None => {
                let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
                &self.bytes[start..self.ends[i] as usize]
            }
        }
    }
}
