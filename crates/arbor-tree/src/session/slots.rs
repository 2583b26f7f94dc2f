//! The session's entries in file order ([`Slots`]): held in memory after a
//! scan or a full read, or, after an open through the index cache, read
//! from the index a run of [`RUN`] entries at a time when something first
//! asks for one of them (docs/performance.md, "How Arbor loads a session").
//! A command that reads the context at the leaf of a million-entry session
//! so builds the few thousand slots it reads, not a million.

use std::collections::HashMap;
use std::ops::{Index, IndexMut};
use std::sync::OnceLock;

use compact_str::CompactString;

use arbor_log::{EntryType, Role};

use super::slot::{Slot, NO_PARENT};
use crate::index::LazyIndex;

/// Entries read from the index at once.
const RUN: usize = 64;

/// Every slot of a session, in file order, and the slot each one's parent
/// resolves to.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    /// The slots the index holds, built a run at a time on first use.
    indexed: Option<Indexed>,
    /// Every other slot: after `indexed`'s (appended in this process), or all of them.
    owned: Vec<Slot>,
    /// For each owned slot, the slot its `parentId` resolves to (`u32::MAX`: none).
    owned_parents: Vec<u32>,
    /// Slots of the index whose parent was resolved again after the load
    /// (an appended entry took the id they name): slot → parent.
    repointed: HashMap<usize, usize>,
}

#[derive(Debug)]
struct Indexed {
    index: LazyIndex,
    runs: Vec<OnceLock<Box<[Slot]>>>,
}

impl Indexed {
    fn run(&self, r: usize) -> &[Slot] {
        self.runs[r].get_or_init(|| self.build(r))
    }

    /// The slots of run `r`; placeholders (no id, no line: whatever reads
    /// them says the line changed, and `Session::verify_lines` reads the
    /// file again) when the index cannot be read there.
    fn build(&self, r: usize) -> Box<[Slot]> {
        let start = r * RUN;
        let end = (start + RUN).min(self.index.len());
        // The run before is read with it (in the same two reads): the parents
        // of a run's entries are mostly there or in the run itself (a chain,
        // and the branches forking off it), and each other one costs two reads.
        let before = start.saturating_sub(RUN);
        let Some(mut entries) = self.index.entries(before..end) else {
            return (start..end).map(|_| Slot::unreadable()).collect();
        };
        let earlier: Vec<CompactString> = entries.drain(..start - before).map(|e| e.id).collect();
        let mut out: Vec<Slot> = Vec::with_capacity(entries.len());
        for e in entries {
            // A resolved parent's id is that entry's id: in this run, the one before, or read from the index.
            let parent_id: Option<CompactString> = match e.parent {
                Some(p) if p >= start => out.get(p - start).map(|s| CompactString::from(&*s.id())),
                Some(p) if p >= before => earlier.get(p - before).cloned(),
                Some(p) => self.index.id(p).or_else(|| Some(CompactString::default())),
                None => e.parent_id.clone(),
            };
            out.push(Slot::indexed(e, parent_id.as_deref()));
        }
        out.into_boxed_slice()
    }
}

impl Slots {
    /// The slots of a loaded index (none built yet).
    pub(crate) fn from_index(index: LazyIndex) -> Slots {
        let runs = (0..index.len().div_ceil(RUN)).map(|_| OnceLock::new()).collect();
        Slots { indexed: Some(Indexed { index, runs }), ..Slots::default() }
    }

    /// Slots held in memory (their parents resolved later, [`Slots::set_parents`]).
    pub(crate) fn from_vec(slots: Vec<Slot>) -> Slots {
        Slots { owned: slots, ..Slots::default() }
    }

    /// The slot the parent of slot `i` resolves to.
    pub(crate) fn parent(&self, i: usize) -> Option<usize> {
        let n = self.indexed_len();
        let p = match &self.indexed {
            Some(x) if i < n => return self.repointed.get(&i).copied().or_else(|| x.index.parent(i)),
            _ => self.owned_parents.get(i - n).copied().map(widen)?,
        };
        (p != NO_PARENT).then_some(p)
    }

    /// Calls `f` with slot `i`, the slot its parent resolves to, and so on
    /// up to a root, as [`Slots::parent`] resolves them, for at most `limit`
    /// slots; returns false when the walk was cut there (a parent cycle
    /// among appended slots). Inside the index, whose parents are always
    /// earlier entries, it reads the parents column a block at a time.
    pub(crate) fn walk_up(&self, mut i: usize, limit: usize, f: &mut impl FnMut(usize)) -> bool {
        let n = self.indexed_len();
        let mut walked = 0;
        loop {
            if let Some(x) = self.indexed.as_ref().filter(|_| i < n && self.repointed.is_empty()) {
                x.index.walk_up(i, f);
                return true;
            }
            if walked == limit {
                return false;
            }
            f(i);
            walked += 1;
            match self.parent(i) {
                Some(p) => i = p,
                None => return true,
            }
        }
    }

    /// Resolves the parent of slot `i` to slot `p` (`NO_PARENT`: none).
    pub(crate) fn set_parent(&mut self, i: usize, p: usize) {
        let n = self.indexed_len();
        if i < n {
            self.repointed.insert(i, p);
        } else if let Some(slot) = self.owned_parents.get_mut(i - n) {
            *slot = narrow(p);
        }
    }

    /// The parents of the slots held in memory, narrowed ([`narrow`]; the index holds its own).
    pub(crate) fn set_parents(&mut self, parents: Vec<u32>) {
        self.owned_parents = parents;
    }

    fn indexed_len(&self) -> usize {
        self.indexed.as_ref().map_or(0, |x| x.index.len())
    }

    /// The index the slots come from, if any.
    pub(crate) fn index(&self) -> Option<&LazyIndex> {
        self.indexed.as_ref().map(|x| &x.index)
    }

    pub(crate) fn len(&self) -> usize {
        self.indexed_len() + self.owned.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Slot> {
        let n = self.indexed_len();
        match &self.indexed {
            Some(x) if i < n => x.run(i / RUN).get(i % RUN),
            _ => self.owned.get(i - n),
        }
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut Slot> {
        let n = self.indexed_len();
        match &mut self.indexed {
            Some(x) if i < n => {
                x.run(i / RUN);
                x.runs[i / RUN].get_mut().and_then(|run| run.get_mut(i % RUN))
            }
            _ => self.owned.get_mut(i - n),
        }
    }

    pub(crate) fn first(&self) -> Option<&Slot> {
        self.get(0)
    }

    pub(crate) fn last(&self) -> Option<&Slot> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// Adds a slot whose parent resolves to `parent` (`NO_PARENT`: none).
    pub(crate) fn push(&mut self, slot: Slot, parent: usize) {
        self.owned.push(slot);
        self.owned_parents.push(narrow(parent));
    }

    pub(crate) fn reserve_exact(&mut self, n: usize) {
        self.owned.reserve_exact(n);
    }

    /// Every slot in file order (building what the index has not built yet).
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &Slot> + ExactSizeIterator + '_ {
        (0..self.len()).map(move |i| &self[i])
    }

    /// The slots from `start` on, in file order.
    pub(crate) fn iter_from(&self, start: usize) -> impl Iterator<Item = &Slot> + '_ {
        (start..self.len()).map(move |i| &self[i])
    }

    /// A reader of slots in passing (see [`Passing`]).
    pub(crate) fn passing(&self) -> Passing<'_> {
        self.passing_holding(HELD)
    }

    /// A reader of slots in passing that holds up to `runs` runs.
    pub(crate) fn passing_holding(&self, runs: usize) -> Passing<'_> {
        Passing { slots: self, held: Vec::with_capacity(runs), cap: runs.max(1), next: 0, keep: self.keeps_runs() }
    }

    /// True when readers in passing build runs into the session: where
    /// every slot costs less than a twentieth of its line (entries of
    /// kilobytes), the runs are kept as they are built: a walk that comes
    /// back costs no second build, and memory stays far under the file's.
    fn keeps_runs(&self) -> bool {
        self.indexed.as_ref().is_some_and(|x| {
            let slots = (x.index.len() as u64).saturating_mul(std::mem::size_of::<Slot>() as u64);
            slots.saturating_mul(20) <= x.index.file_size()
        })
    }

    /// How many of the slots `order` names, from the first (at least one),
    /// a reader in passing that holds `runs` runs reads with each of their
    /// runs built once, however often it reads each slot.
    pub(crate) fn fitting(&self, order: impl Iterator<Item = usize>, runs: usize) -> usize {
        let keep = self.keeps_runs();
        let built = |x: &Indexed, r: usize| keep || x.runs[r].get().is_some();
        let mut seen: Vec<usize> = Vec::with_capacity(runs);
        let mut n = 0;
        for i in order {
            let r = i / RUN;
            let to_build = self.indexed.as_ref().is_some_and(|x| i < x.index.len() && !built(x, r));
            if to_build && !seen.iter().rev().any(|&s| s == r) {
                if seen.len() == runs {
                    break;
                }
                seen.push(r);
            }
            n += 1;
        }
        n.max(1)
    }

    /// The timestamp of slot `i`, read from the index's record when its run
    /// has not been built (nothing is kept: a tree sorts the children of
    /// every branch point by time, scattered over the whole file).
    pub(crate) fn ts_ms(&self, i: usize) -> Option<i64> {
        let n = self.indexed_len();
        if let Some(x) = self.indexed.as_ref().filter(|x| i < n && x.runs[i / RUN].get().is_none()) {
            if let Some(e) = x.index.entries(i..i + 1).and_then(|mut e| e.pop()) {
                return e.ts_ms;
            }
        }
        self.get(i).and_then(Slot::ts_ms)
    }

    /// The length of slot `i`'s line, from the index's records when its run
    /// has not been built: asking must not build (and keep) a run of slots
    /// per entry, as a context of a whole chain asks of every entry.
    pub(crate) fn line_len(&self, i: usize) -> Option<usize> {
        let n = self.indexed_len();
        if let Some(x) = self.indexed.as_ref().filter(|x| i < n && x.runs[i / RUN].get().is_none()) {
            if let Some(e) = x.index.entries(i..i + 1).and_then(|mut e| e.pop()) {
                return usize::try_from(e.len).ok();
            }
        }
        self.get(i).and_then(Slot::src).map(|(_, len)| len)
    }

    /// The type of slot `i`, from the index's column when it has not been built.
    pub(crate) fn entry_type(&self, i: usize) -> Option<&EntryType> {
        match self.indexed.as_ref().and_then(|x| x.index.entry_type(i)) {
            Some(t) => Some(t),
            None => self.get(i).map(Slot::entry_type),
        }
    }

    /// The role of slot `i`, from the index's column when it has not been built.
    pub(crate) fn role(&self, i: usize) -> Option<&Role> {
        match self.indexed.as_ref().and_then(|x| x.index.role(i)) {
            Some(r) => r,
            None => self.get(i).and_then(Slot::role),
        }
    }

    /// The type and role of slot `i` ([`Slots::entry_type`], [`Slots::role`]) with one look at the index's column.
    pub(crate) fn head(&self, i: usize) -> Option<(&EntryType, Option<&Role>)> {
        match self.indexed.as_ref().and_then(|x| x.index.head(i)) {
            Some(h) => Some(h),
            None => Some((self.entry_type(i)?, self.role(i))),
        }
    }

    /// The positions of the slots of type `t`, from the index's column where it can.
    pub(crate) fn positions_of(&self, t: &EntryType) -> Vec<usize> {
        let n = self.indexed_len();
        let mut out = match self.index() {
            Some(index) => index.positions_of(t).into_iter().filter(|&i| self.entry_type(i) == Some(t)).collect(),
            None => vec![],
        };
        out.extend(self.owned.iter().enumerate().filter(|(_, s)| s.entry_type() == t).map(|(k, _)| n + k));
        out
    }
}

/// Runs a [`Passing`] reader holds at once.
const HELD: usize = 8;

/// Reads slots without keeping them in the session: a run the index has
/// not built yet is built for this reader alone and dropped once it has
/// moved on (it holds the last [`HELD`] runs), so a walk over every entry
/// of a million-entry session opened through its index (a tree, a path, a
/// check of every line) holds a few hundred slots, not a million. Slots
/// already built (or held in memory) are read where they are; in a session
/// of large entries, where all its slots are a small part of the file, the
/// runs are built into the session as usual (each is built once).
#[derive(Debug)]
pub(crate) struct Passing<'s> {
    slots: &'s Slots,
    /// (run number, its slots), replaced oldest first.
    held: Vec<(usize, Box<[Slot]>)>,
    /// How many runs it holds at most.
    cap: usize,
    next: usize,
    /// Build runs into the session (kept) instead of for this reader alone.
    keep: bool,
}

impl<'s> Passing<'s> {
    /// Slot `i`, or `None` past the end.
    pub(crate) fn get(&mut self, i: usize) -> Option<&Slot> {
        let n = self.slots.indexed_len();
        let x = match &self.slots.indexed {
            Some(x) if i < n => x,
            _ => return self.slots.owned.get(i - n),
        };
        let r = i / RUN;
        if self.keep {
            return x.run(r).get(i % RUN);
        }
        if let Some(run) = x.runs[r].get() {
            return run.get(i % RUN);
        }
        // The run read last is nearly always the one wanted, and the last held.
        let k = match self.held.iter().rposition(|(h, _)| *h == r) {
            Some(k) => k,
            None if self.held.len() < self.cap => {
                self.held.push((r, x.build(r)));
                self.held.len() - 1
            }
            None => {
                let k = self.next;
                self.next = (k + 1) % self.cap;
                self.held[k] = (r, x.build(r));
                k
            }
        };
        self.held[k].1.get(i % RUN)
    }
}

/// A slot number as a parent column holds it (`NO_PARENT` as `u32::MAX`;
/// a session of four billion entries would not fit in memory anyway).
pub(crate) fn narrow(p: usize) -> u32 {
    u32::try_from(p).unwrap_or(u32::MAX)
}

fn widen(p: u32) -> usize {
    if p == u32::MAX {
        NO_PARENT
    } else {
        p as usize
    }
}

impl Index<usize> for Slots {
    type Output = Slot;

    fn index(&self, i: usize) -> &Slot {
        match self.get(i) {
            Some(s) => s,
            None => panic!("slot {i} of {}", self.len()),
        }
    }
}

impl IndexMut<usize> for Slots {
    fn index_mut(&mut self, i: usize) -> &mut Slot {
        let len = self.len();
        match self.get_mut(i) {
            Some(s) => s,
            None => panic!("slot {i} of {len}"),
        }
    }
}
