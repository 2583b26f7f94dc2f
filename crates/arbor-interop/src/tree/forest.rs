//! A session's tree in the order the views show it, as flat arrays
//! ([`Forest`]), and the part of it a filter, a search and folds leave
//! visible ([`Visible`]), with each visible entry attached to its nearest
//! visible ancestor (docs/cli.md, "How the tree is laid out").
//!
//! The order is pi's: depth first, the branch that holds the leaf first under
//! every branch point, other children oldest first. Two facts make the views
//! cheap at any size. A subtree is a contiguous range of that order, so
//! "everything under this entry" is `k..end(k)`. And the active path (root to
//! leaf) is the order's first `active_len` entries, since every entry on it
//! comes first among its siblings.
//!
//! Nothing here decodes an entry: the forest is built from the session's
//! heads, and a visible set from a predicate the caller answers.

use arbor_tree::{Position, Session};

/// "None" in the arrays of indexes.
pub const NONE: u32 = u32::MAX;

/// Every entry of a session's tree, in display order.
#[derive(Debug, Clone, Default)]
pub struct Forest {
    /// The session position of each entry, by index in display order.
    pos: Vec<u32>,
    /// Just past each entry's subtree (an index in display order).
    end: Vec<u32>,
    /// Each entry's parent in the tree ([`NONE`] for a root).
    parent: Vec<u32>,
    /// How many entries the active path holds: they are indexes `0..active_len`.
    active_len: u32,
}

fn idx(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(NONE)
}

impl Forest {
    /// The tree of `session` with its leaf's path first.
    pub fn of_session(session: &Session) -> Forest {
        let tree = session.get_tree();
        let leaf = session.leaf_id().and_then(|id| session.position_of(id)).map(Position::get);
        let roots: Vec<usize> = tree.root_positions().iter().map(|p| p.get()).collect();
        Forest::build(session.len(), &roots, |p| tree.child_positions(Position::new(p)).iter().map(|c| c.get()), leaf)
    }

    /// The forest of `n` positions with these roots and children (each
    /// listed once, oldest first), ordered for `leaf`.
    pub fn build<I: DoubleEndedIterator<Item = usize>>(
        n: usize,
        roots: &[usize],
        children: impl Fn(usize) -> I,
        leaf: Option<usize>,
    ) -> Forest {
        // The tree's own parents (a cycle's entry that became a root has none).
        let mut tparent = vec![NONE; n];
        for p in 0..n {
            for c in children(p) {
                tparent[c] = idx(p);
            }
        }
        let mut on_path = vec![false; n];
        let mut cur = leaf.map_or(NONE, idx);
        while cur != NONE && !on_path[cur as usize] {
            on_path[cur as usize] = true;
            cur = tparent[cur as usize];
        }
        drop(tparent);
        let mut f =
            Forest { pos: Vec::with_capacity(n), end: Vec::new(), parent: Vec::with_capacity(n), active_len: 0 };
        // (position, parent index); the active child is pushed last, so it comes out first.
        let mut stack: Vec<(u32, u32)> = vec![];
        let push_children =
            |stack: &mut Vec<(u32, u32)>, kids: &mut dyn DoubleEndedIterator<Item = usize>, parent: u32| {
                let mut active = None;
                for c in kids.rev() {
                    if on_path[c] {
                        active = Some(c);
                    } else {
                        stack.push((idx(c), parent));
                    }
                }
                if let Some(c) = active {
                    stack.push((idx(c), parent));
                }
            };
        push_children(&mut stack, &mut roots.iter().copied(), NONE);
        let mut still_active = true;
        while let Some((p, parent)) = stack.pop() {
            let k = idx(f.pos.len());
            if still_active && on_path[p as usize] {
                f.active_len = k + 1;
            } else {
                still_active = false;
            }
            f.pos.push(p);
            f.parent.push(parent);
            push_children(&mut stack, &mut children(p as usize), k);
        }
        // Subtree ends, children before parents.
        let mut end: Vec<u32> = (1..=f.pos.len()).map(idx).collect();
        for k in (0..f.pos.len()).rev() {
            let p = f.parent[k];
            if p != NONE {
                end[p as usize] = end[p as usize].max(end[k]);
            }
        }
        f.end = end;
        f
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// True when the forest holds no entry.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// The session position of the entry at display index `k`.
    pub fn position(&self, k: u32) -> Position {
        Position::new(self.pos[k as usize] as usize)
    }

    /// Just past the subtree of `k`.
    pub fn end(&self, k: u32) -> u32 {
        self.end[k as usize]
    }

    /// The parent of `k` in the tree.
    pub fn parent(&self, k: u32) -> Option<u32> {
        Some(self.parent[k as usize]).filter(|&p| p != NONE)
    }

    /// True when `k` is on the active path.
    pub fn is_active(&self, k: u32) -> bool {
        k < self.active_len
    }

    /// The leaf's index (the last entry of the active path).
    pub fn leaf(&self) -> Option<u32> {
        self.active_len.checked_sub(1)
    }
}

/// The entries left visible, each attached to its nearest visible ancestor;
/// all indexes here are into the visible list (`v`), except [`Visible::node`]'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Visible {
    /// The visible entries in display order.
    rows: Vec<Row>,
    roots: u32,
    last_root: u32,
}

/// One visible entry (one array of these: a row is written and read at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    /// The forest index (ascending along the rows).
    node: u32,
    /// The nearest visible ancestor.
    parent: u32,
    /// How many visible children it has.
    kids: u32,
    /// The last visible child.
    last_kid: u32,
}

impl Row {
    /// Moves the row indexes of this row by `by` where `moved` says.
    fn shift(&mut self, moved: impl Fn(u32) -> bool, by: impl Fn(u32) -> u32) {
        if self.parent != NONE && moved(self.parent) {
            self.parent = by(self.parent);
        }
        if self.last_kid != NONE && moved(self.last_kid) {
            self.last_kid = by(self.last_kid);
        }
    }
}

/// Which forest entries show, for [`Visible::push_range`].
trait Shown {
    /// The first shown entry in `from..end`, or `end` (or `from`, when past `end`).
    fn next(&mut self, from: u32, end: u32) -> u32;
}

/// Shown entries as a predicate, asked of each entry in turn.
struct ByFn<F>(F);

impl<F: FnMut(u32) -> bool> Shown for ByFn<F> {
    fn next(&mut self, mut from: u32, end: u32) -> u32 {
        while from < end && !(self.0)(from) {
            from += 1;
        }
        from
    }
}

/// Shown entries as bits (bit `k % 64` of word `k / 64`): the hidden ones
/// are passed a word at a time, with no branch an entry.
struct ByBits<'a>(&'a [u64]);

impl Shown for ByBits<'_> {
    fn next(&mut self, from: u32, end: u32) -> u32 {
        let mut w = from as usize / 64;
        let Some(&first) = self.0.get(w) else { return end.max(from) };
        let mut word = first & (!0u64 << (from % 64));
        loop {
            if word != 0 {
                return (idx(w * 64) + word.trailing_zeros()).min(end.max(from));
            }
            w += 1;
            match self.0.get(w) {
                Some(&x) if idx(w * 64) < end => word = x,
                _ => return end.max(from),
            }
        }
    }
}

impl Visible {
    /// The visible part of `forest`: the entries `show` accepts, without the
    /// subtrees under the entries `folded` names (ascending; pi folds by the
    /// real tree, so a folded entry hides its subtree even where it is filtered out).
    pub fn new(forest: &Forest, show: impl FnMut(u32) -> bool, folded: &[u32]) -> Visible {
        let mut v = Visible::default();
        v.rebuild(forest, show, folded);
        v
    }

    /// The same as [`Visible::new`], in place: the buffer is reused, so a
    /// recompute touches no new memory once it has held as many rows.
    pub fn rebuild(&mut self, forest: &Forest, show: impl FnMut(u32) -> bool, folded: &[u32]) {
        self.rebuild_with(forest, ByFn(show), folded);
    }

    /// The same as `Visible::rebuild` (in tests), with the entries shown as bits
    /// (bit `k % 64` of word `k / 64`): faster when many are hidden here and there.
    pub fn rebuild_shown(&mut self, forest: &Forest, shown: &[u64], folded: &[u32]) {
        self.rebuild_with(forest, ByBits(shown), folded);
    }

    fn rebuild_with(&mut self, forest: &Forest, show: impl Shown, folded: &[u32]) {
        self.rows.clear();
        // Room for every entry at once (after a fold the buffer is small): no copies as it grows.
        self.rows.reserve(forest.len());
        let (roots, last_root) = self.push_range(forest, 0..idx(forest.len()), NONE, show, folded);
        (self.roots, self.last_root) = (roots, last_root);
    }

    /// Pushes the visible rows of the forest entries `range`, all under the
    /// visible row `under` ([`NONE`]: the top level) or one of them, as if
    /// they came right after row `under` (their indexes count from
    /// `self.len()` when `under` is [`NONE`], from `under + 1` otherwise).
    /// Returns how many of them hang directly from `under`, and the last.
    fn push_range(
        &mut self,
        forest: &Forest,
        range: std::ops::Range<u32>,
        under: u32,
        mut show: impl Shown,
        folded: &[u32],
    ) -> (u32, u32) {
        let base = if under == NONE { idx(self.rows.len()) } else { under + 1 };
        let local = idx(self.rows.len());
        let (mut top_kids, mut top_last) = (0u32, NONE);
        // The visible ancestors of the entry being looked at, innermost last, with their subtrees' ends.
        let mut open: Vec<(u32, u32)> = vec![];
        let mut f = folded.partition_point(|&x| x < range.start);
        let mut from = range.start;
        loop {
            let mut k = show.next(from, range.end);
            // A folded entry passed on the way hides its subtree, shown or not: `k` may be in it.
            while let Some(&x) = folded.get(f).filter(|&&x| x < k) {
                f += 1;
                if x >= from && forest.end(x) > k {
                    from = forest.end(x);
                    k = show.next(from, range.end);
                }
            }
            if k >= range.end {
                break;
            }
            let fold = folded.get(f) == Some(&k);
            let vk = base + idx(self.rows.len()) - local;
            while let Some(&(_, end)) = open.last() {
                if end > k {
                    break;
                }
                open.pop();
            }
            let parent = open.last().map_or(under, |&(p, _)| p);
            self.rows.push(Row { node: k, parent, kids: 0, last_kid: NONE });
            if parent == under {
                top_kids += 1;
                top_last = vk;
            } else {
                let row = &mut self.rows[(parent - base + local) as usize];
                row.kids += 1;
                row.last_kid = vk;
            }
            if fold {
                from = forest.end(k);
            } else {
                open.push((vk, forest.end(k)));
                from = k + 1;
            }
        }
        (top_kids, top_last)
    }

    /// The rows just past `v` that its subtree holds: `v + 1..` the returned end.
    pub fn subtree_end(&self, forest: &Forest, v: u32) -> u32 {
        let end = forest.end(self.node(v));
        v + 1 + idx(self.rows[v as usize + 1..].partition_point(|r| r.node < end))
    }

    /// Row `v` folded: its subtree's rows `v + 1..w` removed (`w` from
    /// [`Visible::subtree_end`]), as a fresh computation with `v`'s entry
    /// folded would give. The rows before and after are copied into a new
    /// buffer; the previous state is returned (unfolding `v` right after
    /// can put it back as it was).
    pub fn fold(&mut self, v: u32, w: u32) -> Visible {
        let m = w - v - 1;
        let mut rows = Vec::with_capacity(self.rows.len() - m as usize);
        rows.extend_from_slice(&self.rows[..=v as usize]);
        rows.extend_from_slice(&self.rows[w as usize..]);
        for r in &mut rows {
            r.shift(|x| x >= w, |x| x - m);
        }
        rows[v as usize].kids = 0;
        rows[v as usize].last_kid = NONE;
        let last_root = if self.last_root != NONE && self.last_root >= w { self.last_root - m } else { self.last_root };
        std::mem::replace(self, Visible { rows, roots: self.roots, last_root })
    }

    /// Row `v` unfolded (its entry just left `folded`): the visible rows of
    /// its subtree inserted after it, as a fresh computation would give.
    /// Returns how many.
    pub fn unfold(&mut self, forest: &Forest, v: u32, show: impl FnMut(u32) -> bool, folded: &[u32]) -> u32 {
        let k = self.node(v);
        let mut sub = Visible::default();
        let (kids, last) = sub.push_range(forest, k + 1..forest.end(k), v, ByFn(show), folded);
        let m = idx(sub.len());
        for r in &mut self.rows {
            r.shift(|x| x > v, |x| x + m);
        }
        if self.last_root != NONE && self.last_root > v {
            self.last_root += m;
        }
        self.rows[v as usize].kids = kids;
        self.rows[v as usize].last_kid = last;
        let at = v as usize + 1;
        self.rows.splice(at..at, sub.rows);
        m
    }

    /// The number of visible entries.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when nothing is visible.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The forest index of visible entry `v`.
    pub fn node(&self, v: u32) -> u32 {
        self.rows[v as usize].node
    }

    /// The nearest visible ancestor of `v`.
    pub fn parent(&self, v: u32) -> Option<u32> {
        Some(self.rows[v as usize].parent).filter(|&p| p != NONE)
    }

    /// How many visible children `v` has.
    pub fn kids(&self, v: u32) -> u32 {
        self.rows[v as usize].kids
    }

    /// The number of visible roots.
    pub fn roots(&self) -> u32 {
        self.roots
    }

    /// True when `v` is the last visible child of its visible parent (or the last root).
    pub fn is_last(&self, v: u32) -> bool {
        match self.parent(v) {
            Some(p) => self.rows[p as usize].last_kid == v,
            None => self.last_root == v,
        }
    }

    /// The visible index of forest entry `k`, if it is visible.
    pub fn find(&self, k: u32) -> Option<u32> {
        self.rows.binary_search_by_key(&k, |r| r.node).ok().map(idx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    /// user-1 → asst-1 → user-2 → asst-2, then two branches: user-3a →
    /// asst-3a → user-4a → asst-4a (the leaf) and user-3b → asst-3b → user-4b.
    struct Branching {
        s: Session,
        names: Vec<(String, String)>,
    }

    impl Branching {
        fn name_of(&self, id: Option<&str>) -> Option<String> {
            self.names.iter().find(|(i, _)| Some(i.as_str()) == id).map(|(_, n)| n.clone())
        }
    }

    fn branching() -> Branching {
        let mut s = Session::in_memory("/w", arbor_test_support::deterministic_options());
        let mut names = vec![];
        let mut add = |s: &mut Session, name: &str, parent: Option<&str>| {
            if let Some(p) = parent {
                let id = names.iter().find(|(_, n): &&(String, String)| n == p).map(|(i, _)| i.clone()).unwrap();
                s.branch(&id).unwrap();
            }
            let message = if name.starts_with("user") {
                json!({"role": "user", "content": name, "timestamp": 1})
            } else {
                json!({"role": "assistant", "content": [{"type": "text", "text": name}], "provider": "p",
                    "model": "m", "usage": {}, "stopReason": "stop", "timestamp": 1})
            };
            names.push((s.append_message(message).unwrap(), name.to_owned()));
        };
        for n in ["user-1", "asst-1", "user-2", "asst-2", "user-3a", "asst-3a", "user-4a", "asst-4a"] {
            add(&mut s, n, None);
        }
        add(&mut s, "user-3b", Some("asst-2"));
        add(&mut s, "asst-3b", None);
        add(&mut s, "user-4b", None);
        let leaf = names.iter().find(|(_, n)| n == "asst-4a").map(|(i, _)| i.clone()).unwrap();
        s.branch(&leaf).unwrap();
        Branching { s, names }
    }

    #[test]
    fn the_active_path_comes_first_and_subtrees_are_ranges() {
        let f = branching();
        let forest = Forest::of_session(&f.s);
        let names: Vec<String> =
            (0..forest.len() as u32).map(|k| f.name_of(f.s.id_at(forest.position(k)).as_deref()).unwrap()).collect();
        assert_eq!(
            names,
            [
                "user-1", "asst-1", "user-2", "asst-2", "user-3a", "asst-3a", "user-4a", "asst-4a", "user-3b",
                "asst-3b", "user-4b"
            ]
        );
        assert_eq!(forest.leaf(), Some(7));
        assert!(forest.is_active(7) && !forest.is_active(8));
        assert_eq!((forest.end(3), forest.end(4), forest.end(8)), (11, 8, 11));
        assert_eq!(forest.parent(8), Some(3));
    }

    /// The rows made with the shown entries as bits (passed a word at a
    /// time) are the rows made asking each entry in turn, on random forests,
    /// shown sets from sparse to dense, and folds.
    #[test]
    fn shown_as_bits_or_asked_in_turn_gives_the_same_rows() {
        let mut rng = arbor_test_support::Rng(0x6A09_E667_F3BC_C908);
        for round in 0..300 {
            let n = 1 + rng.below(400);
            let mut kids = vec![vec![]; n];
            let mut roots = vec![];
            for p in 0..n {
                match (p > 0 && rng.below(10) != 0).then(|| rng.below(p)) {
                    Some(q) => kids[q].push(p),
                    None => roots.push(p),
                }
            }
            let forest = Forest::build(n, &roots, |p| kids[p].clone().into_iter(), Some(rng.below(n)));
            let hidden = rng.below(5);
            let shown: Vec<bool> = (0..n).map(|_| rng.below(4) >= hidden).collect();
            let mut words = vec![0u64; n.div_ceil(64)];
            for k in (0..n).filter(|&k| shown[k]) {
                words[k / 64] |= 1 << (k % 64);
            }
            let mut folded: Vec<u32> = (0..rng.below(6)).map(|_| rng.below(n) as u32).collect();
            folded.sort_unstable();
            folded.dedup();
            let asked = Visible::new(&forest, |k| shown[k as usize], &folded);
            let mut bits = Visible::default();
            bits.rebuild_shown(&forest, &words, &folded);
            assert_eq!(bits, asked, "round {round}");
        }
    }

    #[test]
    fn hidden_entries_hand_their_children_to_the_nearest_visible_ancestor() {
        let f = branching();
        let forest = Forest::of_session(&f.s);
        // Hide asst-2 (index 3): both branches hang from user-2.
        let v = Visible::new(&forest, |k| k != 3, &[]);
        assert_eq!(v.len(), 10);
        assert_eq!(v.parent(3), Some(2));
        assert_eq!(v.parent(7), Some(2));
        assert_eq!(v.kids(2), 2);
        assert!(v.is_last(7) && !v.is_last(3));
        // Fold user-3a (index 4): its subtree is skipped.
        let v = Visible::new(&forest, |_| true, &[4]);
        assert_eq!(v.len(), 8);
        assert_eq!(v.node(5), 8);
        assert_eq!(v.kids(4), 0);
        assert_eq!(v.find(8), Some(5));
        assert_eq!(v.find(5), None);
    }
}
