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

    /// True when the tree has no entries.
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

    /// The display index of every session position (`NONE` for an entry not in the tree).
    pub fn index_by_position(&self, positions: usize) -> Vec<u32> {
        let mut by = vec![NONE; positions];
        for (k, &p) in self.pos.iter().enumerate() {
            by[p as usize] = idx(k);
        }
        by
    }
}

/// The entries left visible, each attached to its nearest visible ancestor;
/// all indexes here are into the visible list (`v`), except [`Visible::node`]'s answer.
#[derive(Debug, Clone, Default)]
pub struct Visible {
    /// The forest index of each visible entry, ascending (display order).
    nodes: Vec<u32>,
    /// Each visible entry's nearest visible ancestor.
    parent: Vec<u32>,
    /// How many visible children each has, up to 255 (what the views ask
    /// is whether there are none, one or more: a byte an entry, not four).
    kids: Vec<u8>,
    /// The last visible child of each, and at `roots_last`, the last root.
    last_kid: Vec<u32>,
    roots: u32,
    last_root: u32,
}

impl Visible {
    /// The visible part of `forest`: the entries `show` accepts, without the
    /// subtrees under the entries `folded` names (pi folds by the real tree,
    /// so a folded entry hides its subtree even where it is filtered out).
    pub fn new(forest: &Forest, mut show: impl FnMut(u32) -> bool, folded: impl Fn(u32) -> bool) -> Visible {
        let n = forest.len();
        let mut v = Visible { last_root: NONE, ..Visible::default() };
        // The visible ancestors of the entry being looked at, innermost last.
        let mut open: Vec<u32> = vec![];
        let mut k = 0u32;
        while (k as usize) < n {
            let fold = folded(k);
            if !show(k) {
                k = if fold { forest.end(k) } else { k + 1 };
                continue;
            }
            let vk = idx(v.nodes.len());
            while let Some(&top) = open.last() {
                if forest.end(v.nodes[top as usize]) > k {
                    break;
                }
                open.pop();
            }
            let parent = open.last().copied().unwrap_or(NONE);
            v.nodes.push(k);
            v.parent.push(parent);
            v.kids.push(0);
            v.last_kid.push(NONE);
            if parent == NONE {
                v.roots += 1;
                v.last_root = vk;
            } else {
                let kids = &mut v.kids[parent as usize];
                *kids = kids.saturating_add(1);
                v.last_kid[parent as usize] = vk;
            }
            if fold {
                k = forest.end(k);
            } else {
                open.push(vk);
                k += 1;
            }
        }
        v
    }

    /// The number of visible entries.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when nothing is visible.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The forest index of visible entry `v`.
    pub fn node(&self, v: u32) -> u32 {
        self.nodes[v as usize]
    }

    /// The nearest visible ancestor of `v`.
    pub fn parent(&self, v: u32) -> Option<u32> {
        Some(self.parent[v as usize]).filter(|&p| p != NONE)
    }

    /// How many visible children `v` has (255 for 255 or more).
    pub fn kids(&self, v: u32) -> u32 {
        u32::from(self.kids[v as usize])
    }

    /// The number of visible roots.
    pub fn roots(&self) -> u32 {
        self.roots
    }

    /// True when `v` is the last visible child of its visible parent (or the last root).
    pub fn is_last(&self, v: u32) -> bool {
        match self.parent(v) {
            Some(p) => self.last_kid[p as usize] == v,
            None => self.last_root == v,
        }
    }

    /// The visible index of forest entry `k`, if it is visible.
    pub fn find(&self, k: u32) -> Option<u32> {
        self.nodes.binary_search(&k).ok().map(idx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::ui::tui::selector::tests::branching;

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

    #[test]
    fn hidden_entries_hand_their_children_to_the_nearest_visible_ancestor() {
        let f = branching();
        let forest = Forest::of_session(&f.s);
        // Hide asst-2 (index 3): both branches hang from user-2.
        let v = Visible::new(&forest, |k| k != 3, |_| false);
        assert_eq!(v.len(), 10);
        assert_eq!(v.parent(3), Some(2));
        assert_eq!(v.parent(7), Some(2));
        assert_eq!(v.kids(2), 2);
        assert!(v.is_last(7) && !v.is_last(3));
        // Fold user-3a (index 4): its subtree is skipped.
        let v = Visible::new(&forest, |_| true, |k| k == 4);
        assert_eq!(v.len(), 8);
        assert_eq!(v.node(5), 8);
        assert_eq!(v.kids(4), 0);
        assert_eq!(v.find(8), Some(5));
        assert_eq!(v.find(5), None);
    }
}
