//! `get_tree` (docs/architecture.md, "The tree") as a flat view over
//! positions: no recursion anywhere, so a path a million entries deep is as
//! safe as a shallow one.

use std::io::{self, Write};

use arbor_log::Entry;

use crate::error::TreeError;
use crate::session::{LineCursor, Position, Session, Slot};

/// One node of the tree: an entry, its JSON text and its resolved label.
#[derive(Debug, Clone, Copy)]
pub struct TreeNode<'a> {
    /// Where the entry is in the session's file order.
    pub position: Position,
    /// The entry.
    pub entry: &'a Entry,
    /// The JSON text the entry is held as.
    pub json: &'a str,
    /// The resolved label, if any.
    pub label: Option<&'a str>,
}

/// The session as a tree: roots in file order, children oldest first.
#[derive(Debug)]
pub struct Tree<'a> {
    session: &'a Session,
    roots: Vec<Position>,
    /// The children of position `i` are `child_list[child_start[i]..child_start[i + 1]]`.
    child_start: Vec<u32>,
    child_list: Vec<Position>,
}

/// Sorts `items` by `key` ascending and stably, treating a missing key (an
/// unparseable timestamp, NaN in JavaScript) as equal to everything, the way
/// the reference's comparator does; never panics on that inconsistent order.
pub fn sort_by_timestamp<T: Copy>(items: &mut [T], key: impl Fn(T) -> Option<i64>) {
    if items.iter().all(|&i| key(i).is_some()) {
        items.sort_by_key(|&i| key(i));
        return;
    }
    // Insertion sort: an element moves left only past elements that compare greater.
    for n in 1..items.len() {
        let mut j = n;
        while j > 0 {
            match (key(items[j - 1]), key(items[j])) {
                (Some(a), Some(b)) if a > b => items.swap(j - 1, j),
                _ => break,
            }
            j -= 1;
        }
    }
}

impl<'a> Tree<'a> {
    pub(crate) fn build(session: &'a Session) -> Tree<'a> {
        let slots = &session.state.slots;
        let n = slots.len();
        // Each slot's parent in the tree, read once and in passing (building
        // the tree of a session opened through its index builds none of its
        // slots): `ROOT` for a live root, `DEAD` for a slot a later line replaced.
        const ROOT: u32 = u32::MAX - 1;
        const DEAD: u32 = u32::MAX;
        let mut passing = slots.passing();
        let up: Vec<u32> = (0..n)
            .map(|i| {
                let Some(slot) = passing.get(i) else { return DEAD };
                if !slot.live() {
                    return DEAD;
                }
                let parent = match slot.parent_id() {
                    Some(p)
                        if p != slot.id()
                            && (session.state.cycle_roots.is_empty() || !session.state.cycle_roots.contains(&i)) =>
                    {
                        session.parent_of(i)
                    }
                    _ => None,
                };
                parent.map_or(ROOT, |p| p as u32)
            })
            .collect();
        drop(passing);
        // The children laid out parent by parent in one list, in file order
        // (a counting sort: 8 bytes an entry, whatever the shape).
        let mut roots = vec![];
        let mut child_start = vec![0u32; n + 1];
        for (i, &p) in up.iter().enumerate() {
            match p {
                ROOT => roots.push(Position::new(i)),
                DEAD => {}
                p => child_start[p as usize + 1] += 1,
            }
        }
        for k in 0..n {
            child_start[k + 1] += child_start[k];
        }
        let mut child_list = vec![Position::new(0); child_start[n] as usize];
        // Filled from the back, each parent's end moving down to its start.
        for (i, &p) in up.iter().enumerate().rev() {
            if p < ROOT {
                let end = &mut child_start[p as usize + 1];
                *end -= 1;
                child_list[*end as usize] = Position::new(i);
            }
        }
        drop(up);
        // child_start[p + 1] is now p's start: shift back by one.
        child_start.rotate_left(1);
        child_start[n] = child_list.len() as u32;
        for k in 0..n {
            let list = &mut child_list[child_start[k] as usize..child_start[k + 1] as usize];
            if list.len() > 1 {
                // Each time read once (from the index's record, nothing kept).
                let mut timed: Vec<(Position, Option<i64>)> = list.iter().map(|&p| (p, slots.ts_ms(p.get()))).collect();
                sort_by_timestamp(&mut timed, |(_, t)| t);
                for (to, (p, _)) in list.iter_mut().zip(timed) {
                    *to = p;
                }
            }
        }
        Tree { session, roots, child_start, child_list }
    }

    /// The node at a position of the session.
    ///
    /// # Panics
    ///
    /// When `position` is not one of this session's.
    /// An `Err` when the file changed under the session ([`TreeError::Changed`]).
    pub fn node(&self, position: Position) -> Result<TreeNode<'a>, TreeError> {
        let session = self.session;
        let s = &session.state.slots[position.get()];
        let src = session.src();
        let entry = s.entry(src).map_err(|e| session.stale(e))?;
        let json = s.json(src).map_err(|e| session.stale(e))?;
        Ok(TreeNode { position, entry, json, label: session.label(&s.id()).map(|l| l.map(|l| l.text.as_str()))? })
    }

    /// The roots, in file order.
    pub fn roots(&self) -> impl ExactSizeIterator<Item = Result<TreeNode<'a>, TreeError>> + '_ {
        self.roots.iter().map(|&p| self.node(p))
    }

    /// The children of a node, oldest first.
    pub fn children(&self, node: &TreeNode<'_>) -> impl ExactSizeIterator<Item = Result<TreeNode<'a>, TreeError>> + '_ {
        self.child_positions(node.position).iter().map(|&p| self.node(p))
    }

    /// The positions of the children of `position`, oldest first (none for
    /// a position that is not the session's).
    pub fn child_positions(&self, position: Position) -> &[Position] {
        let i = position.get();
        match (self.child_start.get(i), self.child_start.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.child_list[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The positions of the roots, in file order.
    pub fn root_positions(&self) -> &[Position] {
        &self.roots
    }

    /// True when the session has no entries.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// The tree depth first, as steps: each node entered before its
    /// children and left after them, roots in file order, children oldest
    /// first. Iterative: any depth is fine.
    pub fn walk(&self) -> Walk<'_, 'a> {
        Walk { tree: self, stack: vec![(Walk::ROOTS, 0)] }
    }

    /// The children of `owner` ([`Walk::ROOTS`]: the roots).
    fn list_of(&self, owner: u32) -> &[Position] {
        match owner {
            Walk::ROOTS => &self.roots,
            p => self.child_positions(Position::new(p as usize)),
        }
    }

    /// Writes pi's `getTree()` JSON: `[{"entry": …, "children": […], "label": …,
    /// "labelTimestamp": …}]`, `label` and `labelTimestamp` absent when none,
    /// entries as held. Iterative: any depth is fine. A file changed under
    /// the session fails the write with the [`TreeError::Changed`] inside
    /// the `io::Error` ([`io::Error::into_inner`]).
    pub fn write_json<W: Write + ?Sized>(&self, w: &mut W) -> io::Result<()> {
        let slots = &self.session.state.slots;
        // In passing: writing every entry keeps none of their slots.
        let mut out = slots.passing();
        let mut cursor = LineCursor::new(self.session.src());
        // Every line is asked for in the walk's order: told it, the cursor
        // reads each run of lines that are written one after the other once.
        let mut ahead = slots.passing();
        cursor.follow(self.walk().filter_map(move |step| match step {
            Step::Enter { position, .. } => {
                ahead.get(position.get()).filter(|s| !s.is_long()).and_then(Slot::json_span)
            }
            Step::Leave(_) => None,
        }));
        let session = self.session;
        let changed = |e| io::Error::other(session.stale(e));
        let any_label = session.has_labels().map_err(io::Error::other)?;
        // Whether each open node has a label (looked up when it is entered).
        let mut labelled: Vec<bool> = vec![];
        w.write_all(b"[")?;
        for step in self.walk() {
            match step {
                Step::Enter { position, first } => {
                    if !first {
                        w.write_all(b",")?;
                    }
                    w.write_all(b"{\"entry\":")?;
                    // Streamed, not kept: writing a tree of a huge file must not hold every entry's text.
                    let mut has_label = false;
                    if let Some(s) = out.get(position.get()) {
                        has_label = any_label && session.label(&s.id()).map_err(io::Error::other)?.is_some();
                        // A long line is copied from the file a block at a time, never held.
                        match s.copy_long_text(cursor.src, false, &mut Dyn(&mut *w)) {
                            Some(copied) => copied.map_err(|e| session.changed_io(e))?,
                            None => s.with_json_via(&mut cursor, |j| w.write_all(j.as_bytes())).map_err(changed)??,
                        }
                    }
                    w.write_all(b",\"children\":[")?;
                    labelled.push(has_label);
                }
                Step::Leave(None) => w.write_all(b"]")?,
                Step::Leave(Some(position)) => {
                    w.write_all(b"]")?;
                    let label = match labelled.pop().unwrap_or(false) {
                        true => match out.get(position.get()) {
                            Some(s) => session.label(&s.id()).map_err(io::Error::other)?,
                            None => None,
                        },
                        false => None,
                    };
                    if let Some(label) = label {
                        w.write_all(b",\"label\":")?;
                        arbor_log::json::to_writer(&mut *w, &label.value)?;
                        if let Some(ts) = &label.timestamp {
                            w.write_all(b",\"labelTimestamp\":")?;
                            arbor_log::json::to_writer(&mut *w, ts)?;
                        }
                    }
                    w.write_all(b"}")?;
                }
            }
        }
        Ok(())
    }
}

/// One step of a walk of the tree ([`Tree::walk`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The walk enters the node at `position`; `first` when it is the
    /// first of its parent's children (or the first root).
    Enter {
        /// The node's position in the session.
        position: Position,
        /// True for the first child of a parent, and for the first root.
        first: bool,
    },
    /// The walk is done with the children of this node (`None`: with the roots).
    Leave(Option<Position>),
}

/// The tree depth first ([`Tree::walk`]): 8 bytes a level of the path it is
/// on, whatever the session's size.
#[derive(Debug, Clone)]
pub struct Walk<'t, 'a> {
    tree: &'t Tree<'a>,
    /// Each level: whose children are walked ([`Walk::ROOTS`]: the roots) and how many are entered.
    stack: Vec<(u32, u32)>,
}

impl Walk<'_, '_> {
    /// The owner of the list of roots.
    const ROOTS: u32 = u32::MAX;
}

impl Iterator for Walk<'_, '_> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        let (owner, entered) = self.stack.last_mut()?;
        let list = self.tree.list_of(*owner);
        let Some(&position) = list.get(*entered as usize) else {
            let owner = *owner;
            self.stack.pop();
            return Some(Step::Leave((owner != Walk::ROOTS).then(|| Position::new(owner as usize))));
        };
        let first = *entered == 0;
        *entered += 1;
        self.stack.push((position.get() as u32, 0));
        Some(Step::Enter { position, first })
    }
}

impl Session {
    /// The tree of every entry: roots in file order (orphans,
    /// self-parents and one entry of each parent cycle included), children
    /// sorted oldest first (stable), labels resolved, no entry twice.
    pub fn get_tree(&self) -> Tree<'_> {
        Tree::build(self)
    }
}

/// A `Write` of any size as a `dyn Write`.
struct Dyn<'a, W: ?Sized>(&'a mut W);

impl<W: Write + ?Sized> Write for Dyn<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_timestamps_keep_their_place() {
        let keys = [Some(3), None, Some(1), Some(2)];
        let mut items = vec![0, 1, 2, 3];
        sort_by_timestamp(&mut items, |i| keys[i]);
        assert_eq!(items, vec![0, 1, 2, 3]);
        let keys = [Some(2), Some(1), None];
        let mut items = vec![0, 1, 2];
        sort_by_timestamp(&mut items, |i| keys[i]);
        assert_eq!(items, vec![1, 0, 2]);
        let keys = [Some(5), Some(1), Some(5), Some(0)];
        let mut items = vec![0, 1, 2, 3];
        sort_by_timestamp(&mut items, |i| keys[i]);
        assert_eq!(items, vec![3, 1, 0, 2], "stable for equal keys");
    }
}
