//! The findings only the tree shows, from a [`Ledger`]: self-parents,
//! orphans, labels on missing targets, compactions whose kept entry is off
//! their path, and tool calls without a result on the path to a leaf.
//!
//! One walk down the tree over entry numbers (first child and next sibling,
//! 8 bytes an entry; no frame per entry, no stack): the calls open on the
//! way are one list, the ones a tool result closed are put back when the
//! walk leaves it. A call is open at the leaves the walk meets while it is
//! in the list, which is a run of the walk's leaves: their number and the
//! first of them in file order (the smallest entry among the leaves met
//! since it came in: a stack of the leaves below every later one answers
//! it) are what its finding says.
//! A session with a parent cycle walks each leaf's path instead, as the
//! session's own walk does (see `open_by_paths` in `check`).

use std::collections::HashMap;

use arbor_log::idhash::IdHash;

use super::ledger::{Ledger, COMPACTION, CYCLE_ROOT, EFFECT, NONE, SELF_PARENT};
use super::{warn, Finding};

/// The tree findings of a finished ledger (its id table still in).
pub(super) fn tree_findings(l: &mut Ledger) -> Vec<Finding> {
    let mut out = entry_findings(l);
    // The walk asks no id.
    l.drop_table();
    let l = &*l;
    let cyclic = l.cycle_roots().next().is_some();
    let named = named_as_parent(l);
    let calls = if cyclic { calls_by_paths(l, &named, &mut out) } else { calls_by_walk(l, &named, &mut out) };
    out.extend(report(l, calls));
    out
}

/// Self-parents, orphans and labels on missing targets.
fn entry_findings(l: &Ledger) -> Vec<Finding> {
    let mut out = vec![];
    let line = |i: u32| l.line(i);
    for i in (0..l.len() as u32).filter(|&i| l.live(i) && l.has(i, SELF_PARENT)) {
        let id = l.id(i);
        out.push(warn(line(i), "self-parent", format!("entry {id} is its own parent; shown as a root")));
    }
    for (i, p) in l.orphans.iter().filter(|(i, _)| l.live(*i)) {
        let id = l.id(*i);
        out.push(warn(line(*i), "orphan", format!("entry {id} has a missing parent {p}; shown as a root")));
    }
    for (i, target) in l.labels.iter().filter(|(i, _)| l.live(*i)) {
        if l.lookup(target).is_none() {
            let msg = format!("label {} targets a missing entry {target}", l.id(*i));
            out.push(warn(line(*i), "label-target-missing", msg));
        }
    }
    out
}

/// The compaction finding of live entry `c`, given whether its kept entry is on its path.
fn compaction_finding(l: &Ledger, c: u32, on_path: impl Fn(u32) -> bool) -> Option<Finding> {
    let line = l.line(c);
    let id = l.id(c);
    match l.compaction(c)? {
        None => Some(warn(
            line,
            "compaction-keeps-nothing",
            format!("compaction {id} has no firstKeptEntryId: nothing before it is kept"),
        )),
        Some((kept, k)) if k == NONE || !on_path(k) => Some(warn(
            line,
            "compaction-kept-off-path",
            format!("compaction {id} keeps from {kept}, which is not on its path: nothing before it is kept"),
        )),
        _ => None,
    }
}

/// One bit per entry.
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn get(&self, i: u32) -> bool {
        self.0[i as usize / 64] >> (i % 64) & 1 == 1
    }
    fn set(&mut self, i: u32, on: bool) {
        let (w, b) = (i as usize / 64, i % 64);
        if on {
            self.0[w] |= 1 << b;
        } else {
            self.0[w] &= !(1 << b);
        }
    }
}

/// True for each entry a live entry names as its parent (it is no leaf; a self-parent names itself).
fn named_as_parent(l: &Ledger) -> Bits {
    let mut named = Bits::new(l.len());
    for i in (0..l.len() as u32).filter(|&i| l.live(i)) {
        let p = l.parent[i as usize];
        if p != NONE {
            named.set(p, true);
        }
        if l.has(i, SELF_PARENT) {
            named.set(i, true);
        }
    }
    named
}

/// How each call that is open at some leaf is reported.
#[derive(Debug, Clone, Copy)]
struct Open {
    call: u32,
    /// The entry that made it.
    entry: u32,
    /// How many leaves it is open at.
    leaves: usize,
    /// The first of them in file order.
    first: u32,
    /// Its place in that leaf's open list.
    rank: u64,
}

/// The walk down the tree (no parent cycle).
fn calls_by_walk(l: &Ledger, named: &Bits, out: &mut Vec<Finding>) -> Vec<Open> {
    let n = l.len();
    let tree_parent = |i: u32| if l.has(i, CYCLE_ROOT) { NONE } else { l.parent[i as usize] };
    let (mut first_child, mut next_sibling) = (vec![NONE; n], vec![NONE; n]);
    for i in (0..n as u32).rev().filter(|&i| l.live(i)) {
        let p = tree_parent(i);
        if p != NONE {
            next_sibling[i as usize] = first_child[p as usize];
            first_child[p as usize] = i;
        }
    }
    let mut w = Walker::new(l, named);
    for root in (0..n as u32).filter(|&i| l.live(i) && tree_parent(i) == NONE) {
        let mut cur = root;
        w.enter(cur, out);
        loop {
            let child = first_child[cur as usize];
            if child != NONE {
                cur = child;
                w.enter(cur, out);
                continue;
            }
            // Leave nodes until one has a next sibling, or the root is left.
            loop {
                w.leave(cur);
                if cur == root {
                    break;
                }
                let sib = next_sibling[cur as usize];
                if sib != NONE {
                    cur = sib;
                    w.enter(cur, out);
                    break;
                }
                cur = tree_parent(cur);
            }
            if cur == root && !w.on_path.get(root) {
                break;
            }
        }
    }
    drop((first_child, next_sibling));
    w.finish()
}

/// The walk's state: the path, the calls open on it, and for each call the leaves it is open at.
struct Walker<'l> {
    l: &'l Ledger,
    named: &'l Bits,
    on_path: Bits,
    depth: u32,
    /// Open calls: (call, its entry, the depth of that entry).
    open: Vec<(u32, u32, u32)>,
    /// Calls a tool result closed: (the result's entry, where the call was, the call).
    closed: Vec<(u32, usize, (u32, u32, u32))>,
    /// How many leaves (with a call open) the walk has met.
    leaves: u32,
    /// The smallest entry among the leaves met from each point on: the
    /// leaves (their number and entry) whose entry is below every later one's.
    lows: Vec<(u32, u32)>,
    /// When each open call came into the list (a count of leaves), by call.
    since: HashMap<u32, u32>,
    /// The calls open at some leaf so far.
    found: HashMap<u32, Open>,
    /// How many open calls have each id.
    counts: HashMap<&'l str, u32, IdHash>,
}

impl<'l> Walker<'l> {
    fn new(l: &'l Ledger, named: &'l Bits) -> Walker<'l> {
        Walker {
            l,
            named,
            on_path: Bits::new(l.len()),
            depth: 0,
            open: vec![],
            closed: vec![],
            leaves: 0,
            lows: vec![],
            since: HashMap::new(),
            found: HashMap::new(),
            counts: HashMap::default(),
        }
    }

    fn now(&self) -> u32 {
        self.leaves
    }

    /// A leaf with a call open.
    fn leaf(&mut self, i: u32) {
        while self.lows.last().is_some_and(|&(_, e)| e >= i) {
            self.lows.pop();
        }
        self.lows.push((self.leaves, i));
        self.leaves += 1;
    }

    /// The smallest entry among the leaves met since the `from`th.
    fn lowest_since(&self, from: u32) -> u32 {
        let k = self.lows.partition_point(|&(n, _)| n < from);
        self.lows.get(k).map_or(NONE, |&(_, e)| e)
    }

    fn opened(&mut self, call: u32) {
        self.since.insert(call, self.now());
        *self.counts.entry(self.l.str(self.l.calls[call as usize].0)).or_insert(0) += 1;
    }

    /// A call leaves the list: it was open at the leaves met since it came in.
    fn ended(&mut self, (call, entry, depth): (u32, u32, u32)) {
        if let Some(n) = self.counts.get_mut(self.l.str(self.l.calls[call as usize].0)) {
            *n -= 1;
        }
        let from = self.since.remove(&call).unwrap_or(0);
        if from < self.now() {
            let first = self.lowest_since(from);
            let o = self.found.entry(call).or_insert(Open { call, entry, leaves: 0, first, rank: 0 });
            o.leaves += (self.leaves - from) as usize;
            o.first = o.first.min(first);
            o.rank = u64::from(depth) << 32 | u64::from(call);
        }
    }

    fn enter(&mut self, i: u32, out: &mut Vec<Finding>) {
        let l = self.l;
        self.depth += 1;
        self.on_path.set(i, true);
        if l.has(i, COMPACTION) {
            out.extend(compaction_finding(l, i, |k| self.on_path.get(k)));
        }
        if let Some(e) = l.has(i, EFFECT).then(|| l.effect(i)).flatten() {
            if let Some(id) = e.answers {
                // The calls it answers, from the end (usually the last one made), as many as are open.
                let id = l.str(id);
                let mut need = self.counts.get(id).copied().unwrap_or(0);
                let mut found = vec![];
                let mut k = self.open.len();
                while need > 0 && k > 0 {
                    k -= 1;
                    let c = self.open[k];
                    if l.str(l.calls[c.0 as usize].0) == id {
                        found.push((k, c));
                        need -= 1;
                    }
                }
                // Removed from the end; kept to put back in ascending order of where they were.
                for &(k, c) in &found {
                    self.open.remove(k);
                    self.ended(c);
                }
                self.closed.extend(found.iter().rev().map(|&(k, c)| (i, k, c)));
            }
            for call in e.calls.0..e.calls.1 {
                self.open.push((call, i, self.depth));
                self.opened(call);
            }
        }
        if !self.named.get(i) && !self.open.is_empty() {
            self.leaf(i);
        }
    }

    fn leave(&mut self, i: u32) {
        let l = self.l;
        if let Some(e) = l.has(i, EFFECT).then(|| l.effect(i)).flatten() {
            for _ in e.calls.0..e.calls.1 {
                if let Some(c) = self.open.pop() {
                    self.ended(c);
                }
            }
            let from = self.closed.iter().rev().take_while(|x| x.0 == i).count();
            let back: Vec<_> = self.closed.drain(self.closed.len() - from..).collect();
            for (_, at, c) in back {
                self.open.insert(at, c);
                self.opened(c.0);
            }
        }
        self.on_path.set(i, false);
        self.depth -= 1;
    }

    /// Every call open at a leaf: how many, the first in file order, its place there.
    fn finish(self) -> Vec<Open> {
        self.found.into_values().collect()
    }
}

/// The path of entry `i`, root first, as the session's `branch_positions` walks it: parents
/// followed until one repeats.
fn path_of(l: &Ledger, i: u32, seen: &mut HashMap<u32, ()>) -> Vec<u32> {
    seen.clear();
    let mut out = vec![];
    let mut cur = i;
    while cur != NONE && seen.insert(cur, ()).is_none() {
        out.push(cur);
        cur = l.parent[cur as usize];
    }
    out.reverse();
    out
}

/// Each leaf's path walked from its root (a session with a parent cycle), and each compaction's.
fn calls_by_paths(l: &Ledger, named: &Bits, out: &mut Vec<Finding>) -> Vec<Open> {
    let mut seen = HashMap::new();
    for c in (0..l.len() as u32).filter(|&i| l.live(i) && l.has(i, COMPACTION)) {
        let path = path_of(l, c, &mut seen);
        out.extend(compaction_finding(l, c, |k| path.contains(&k)));
    }
    let mut by_call: HashMap<u32, Open> = HashMap::new();
    for leaf in (0..l.len() as u32).filter(|&i| l.live(i) && !named.get(i)) {
        let mut open: Vec<(u32, u32)> = vec![];
        for p in path_of(l, leaf, &mut seen) {
            let Some(e) = l.has(p, EFFECT).then(|| l.effect(p)).flatten() else { continue };
            if let Some(id) = e.answers {
                let id = l.str(id);
                open.retain(|c| l.str(l.calls[c.0 as usize].0) != id);
            }
            open.extend((e.calls.0..e.calls.1).map(|c| (c, p)));
        }
        for (k, &(call, entry)) in open.iter().enumerate() {
            let o = by_call.entry(call).or_insert(Open { call, entry, leaves: 0, first: leaf, rank: k as u64 });
            o.leaves += 1;
        }
    }
    by_call.into_values().collect()
}

/// The findings for the open calls: one per (call id, tool, entry), in the
/// order a leaf-by-leaf walk in file order meets them.
fn report(l: &Ledger, mut open: Vec<Open>) -> Vec<Finding> {
    open.sort_by_key(|o| (o.first, o.rank));
    let mut seen: Vec<(Open, usize)> = vec![];
    let mut index: HashMap<(&str, &str, u32), usize> = HashMap::new();
    for o in open {
        let (id, name) = l.calls[o.call as usize];
        let key = (l.str(id), l.str(name), o.entry);
        match index.get(&key) {
            Some(&k) => seen[k].1 += o.leaves,
            None => {
                index.insert(key, seen.len());
                seen.push((o, o.leaves));
            }
        }
    }
    seen.into_iter()
        .map(|(o, leaves)| {
            let (call, name) = l.calls[o.call as usize];
            let (call, name, at) = (l.str(call), l.str(name), l.id(o.entry));
            let first = l.id(o.first);
            let whose = if leaves == 1 {
                format!("the path to leaf {first}")
            } else {
                format!("the paths to {leaves} leaves (the first: {first})")
            };
            let mut f = warn(
                l.line(o.entry),
                "tool-call-without-result",
                format!("tool call {call} ({name}) in {at} has no result on {whose}"),
            );
            f.count = leaves;
            f
        })
        .collect()
}
