//! The tree's rows as `arbor tree` writes them, made one at a time by a
//! walk over the session's children lists ([`Walk`]): the same order,
//! levels and connectors as [`super::forest`] and [`super::layout`] give
//! (docs/cli.md, "How the tree is laid out"), without their arrays of a few
//! integers per entry (37 bytes an entry: a million-entry session's text
//! tree held 90 MB of them).
//!
//! The walk keeps what depth first keeps: the entries still to visit (the
//! other children of the branch points above) and, for the rows still
//! waiting for a child, their level, flags and how many children they show
//! and have shown; a row is the last of its parent when it is the count's
//! last. A chain of rows without branches closes each row as its child
//! opens, so a path a million entries deep holds one row, not a million.
//! The gutter (the ancestors that draw connectors) is kept as linked cells
//! on a stack that unwinds with the walk. Whatever depends on the whole
//! tree is measured by walks before: pi's depth ([`pi_depth`]), and in the
//! compact style the rail's first and last rows ([`Walk::rails`]).

use arbor_tree::{Position, Tree};

use super::forest::NONE;
use super::layout::{draw_prefix, draws_gutter, lay_row, on_rail, Gutter, Prefix, Style};

/// A set of session positions, a bit each.
#[derive(Debug, Clone, Default)]
pub struct Bits(Vec<u64>);

impl Bits {
    /// No position, room for `n`.
    pub fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    /// Adds `p`.
    pub fn insert(&mut self, p: usize) {
        if let Some(w) = self.0.get_mut(p / 64) {
            *w |= 1 << (p % 64);
        }
    }

    /// True when `p` is in the set.
    pub fn contains(&self, p: usize) -> bool {
        self.0.get(p / 64).is_some_and(|w| w & (1 << (p % 64)) != 0)
    }
}

/// The tree's shape as the walk reads it: children, the active path and what shows.
#[derive(Debug)]
pub struct Shape<'t> {
    tree: &'t Tree<'t>,
    /// The active path (root to leaf) by position.
    on_path: Bits,
    /// The leaf's position, when it is in the tree.
    leaf: Option<u32>,
    /// The positions shown (`None`: every one).
    shown: Option<Bits>,
}

impl<'t> Shape<'t> {
    /// The shape of `tree` (of a session of `n` positions) with the path to `leaf` active.
    pub fn new(tree: &'t Tree<'t>, n: usize, leaf: Option<Position>) -> Shape<'t> {
        // Parents as the children lists give them (u32 each, dropped once the path is marked).
        let mut parent = vec![NONE; n];
        for p in (0..n).map(Position::new) {
            for c in tree.child_positions(p) {
                parent[c.get()] = p.get() as u32;
            }
        }
        let mut on_path = Bits::new(n);
        let mut cur = leaf.map_or(NONE, |p| p.get() as u32);
        while cur != NONE && !on_path.contains(cur as usize) {
            on_path.insert(cur as usize);
            cur = parent.get(cur as usize).copied().unwrap_or(NONE);
        }
        let leaf = leaf.map(|p| p.get() as u32).filter(|&p| on_path.contains(p as usize));
        Shape { tree, on_path, leaf, shown: None }
    }

    /// Shows only the positions `shown` holds.
    pub fn with_shown(mut self, shown: Bits) -> Shape<'t> {
        self.shown = Some(shown);
        self
    }

    /// The leaf's position.
    pub fn leaf(&self) -> Option<Position> {
        self.leaf.map(|p| Position::new(p as usize))
    }

    fn shows(&self, p: u32) -> bool {
        self.shown.as_ref().is_none_or(|s| s.contains(p as usize))
    }

    /// The children of `p` (the roots for [`NONE`]), oldest first.
    fn children(&self, p: u32) -> &'t [Position] {
        match p {
            NONE => self.tree.root_positions(),
            p => self.tree.child_positions(Position::new(p as usize)),
        }
    }

    /// How many rows hang directly from `p` (from the top for [`NONE`]): its
    /// shown children, and through each hidden one, that one's.
    fn shown_kids(&self, p: u32) -> u32 {
        if self.shown.is_none() {
            return self.children(p).len() as u32;
        }
        let mut n = 0;
        let mut todo: Vec<u32> = self.children(p).iter().map(|c| c.get() as u32).collect();
        while let Some(c) = todo.pop() {
            if self.shows(c) {
                n += 1;
            } else {
                todo.extend(self.children(c).iter().map(|c| c.get() as u32));
            }
        }
        n
    }
}

/// The deepest level pi's layout gives any entry (every entry counts, shown
/// or not): [`super::layout::pi_depth`] over the children lists.
pub fn pi_depth(shape: &Shape<'_>) -> u32 {
    let roots = shape.children(NONE);
    let mut todo: Vec<(u32, u32, bool)> = roots.iter().map(|r| (r.get() as u32, 0, roots.len() > 1)).collect();
    let mut deepest = 0;
    while let Some((p, level, jb)) = todo.pop() {
        deepest = deepest.max(level);
        let kids = shape.children(p);
        let branching = kids.len() > 1;
        todo.extend(kids.iter().map(|c| (c.get() as u32, level + u32::from(branching || jb), branching)));
    }
    deepest
}

/// One row of the walk.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The entry's position.
    pub position: Position,
    /// Its index among the rows.
    pub index: u32,
    /// True on the active path.
    pub active: bool,
    /// True for the leaf.
    pub leaf: bool,
    level: u32,
    flags: u8,
    last: bool,
    /// The row's gutter: a cell of [`Walk::cells`].
    gutter: u32,
}

/// A row still waiting for children: what they are laid out from.
struct Open {
    level: u32,
    flags: u8,
    branches: bool,
    /// The rows it shows directly, and how many have been made.
    kids: u32,
    made: u32,
    /// Its children's gutter: a cell of [`Walk::cells`] or [`NONE`].
    gutter: u32,
}

/// An entry still to visit: how many rows were open and how many gutter
/// cells existed when its parent was visited.
#[derive(Clone, Copy)]
struct Todo {
    node: u32,
    open: u32,
    cells: u32,
}

/// The rows in display order, one at a time (see the module docs).
pub struct Walk<'s, 't> {
    shape: &'s Shape<'t>,
    style: Style,
    budget: u32,
    /// The rail's first and last rows ([`NONE`]: none).
    rails: (u32, u32),
    multiple_roots: bool,
    todo: Vec<Todo>,
    /// The open rows, outermost first; the first stands for the top level.
    open: Vec<Open>,
    /// Gutter cells: an ancestor's level, whether it is its parent's last row, the next cell out.
    cells: Vec<(u32, bool, u32)>,
    still_active: bool,
    rows: u32,
}

impl std::fmt::Debug for Walk<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walk").field("style", &self.style).field("rows", &self.rows).finish_non_exhaustive()
    }
}

impl<'s, 't> Walk<'s, 't> {
    /// A walk over `shape` laid out in `style`, showing at most `budget` levels.
    pub fn new(shape: &'s Shape<'t>, style: Style, budget: usize) -> Walk<'s, 't> {
        let top = shape.shown_kids(NONE);
        let mut walk = Walk {
            shape,
            style,
            budget: u32::try_from(budget.max(1)).unwrap_or(u32::MAX),
            rails: (NONE, NONE),
            multiple_roots: top > 1,
            todo: vec![],
            open: vec![Open { level: 0, flags: 0, branches: false, kids: top, made: 0, gutter: NONE }],
            cells: vec![],
            still_active: true,
            rows: 0,
        };
        walk.push_children(NONE, 1, 0);
        walk
    }

    /// The rail's first and last rows in `style`: one walk over every row.
    pub fn rails(shape: &'s Shape<'t>, style: Style) -> (u32, u32) {
        let mut walk = Walk::new(shape, style, 1);
        let (mut first, mut last) = (NONE, NONE);
        while let Some(row) = walk.next_row() {
            if on_rail(row.flags) {
                first = first.min(row.index);
                last = row.index;
            }
        }
        (first, last)
    }

    /// Draws the rail between `rails` ([`Walk::rails`]); without them, no rail shows.
    pub fn with_rails(mut self, rails: (u32, u32)) -> Walk<'s, 't> {
        self.rails = rails;
        self
    }

    /// Queues the children of `p`, the one on the active path first, the others oldest first.
    fn push_children(&mut self, p: u32, open: u32, cells: u32) {
        let kids = self.shape.children(p);
        let mut active = None;
        for c in kids.iter().rev().map(|c| c.get() as u32) {
            if self.shape.on_path.contains(c as usize) {
                active = Some(c);
            } else {
                self.todo.push(Todo { node: c, open, cells });
            }
        }
        if let Some(c) = active {
            self.todo.push(Todo { node: c, open, cells });
        }
    }

    /// The next row, or `None` after the last.
    pub fn next_row(&mut self) -> Option<Row> {
        while let Some(t) = self.todo.pop() {
            self.open.truncate(t.open as usize);
            self.cells.truncate(t.cells as usize);
            let active = self.still_active && self.shape.on_path.contains(t.node as usize);
            self.still_active = active;
            if !self.shape.shows(t.node) {
                self.push_children(t.node, t.open, t.cells);
                continue;
            }
            return Some(self.make_row(t, active));
        }
        None
    }

    /// Lays out the shown entry `t` under the innermost open row, and opens it when it shows children.
    fn make_row(&mut self, t: Todo, active: bool) -> Row {
        let spine = self.style == Style::Compact && active;
        let top = self.open.len() == 1;
        let Some(parent) = self.open.last_mut() else {
            // Every queued entry has its parent's row (or the top level) open.
            return self.orphan(t, active);
        };
        parent.made += 1;
        let last = parent.made >= parent.kids;
        let above = (!top).then_some((parent.level, parent.flags, parent.branches));
        let parent_gutter = parent.gutter;
        if last && !top {
            self.open.pop();
        }
        let (level, flags, from) = lay_row(above, spine, self.multiple_roots);
        let gutter = match from {
            Gutter::None => NONE,
            // The parent's own cell is pushed when it opens: its children's gutter.
            Gutter::Parent | Gutter::Parents => parent_gutter,
        };
        let row = Row {
            position: Position::new(t.node as usize),
            index: self.rows,
            active,
            leaf: active && self.shape.leaf == Some(t.node),
            level,
            flags,
            last,
            gutter,
        };
        self.rows += 1;
        let kids = self.shape.shown_kids(t.node);
        if kids > 0 {
            // What this row's children inherit: this row's own cell when it draws a connector.
            // (A row on the active path's column has no gutter, and draws none.)
            let child_gutter = if draws_gutter(flags) {
                self.cells.push((level, last, gutter));
                (self.cells.len() - 1) as u32
            } else {
                gutter
            };
            self.open.push(Open { level, flags, branches: kids > 1, kids, made: 0, gutter: child_gutter });
        }
        let (open, cells) = (self.open.len() as u32, self.cells.len() as u32);
        self.push_children(t.node, open, cells);
        row
    }

    /// A row with no open parent (never made by a consistent tree): a root.
    fn orphan(&mut self, t: Todo, active: bool) -> Row {
        let row = Row {
            position: Position::new(t.node as usize),
            index: self.rows,
            active,
            leaf: active && self.shape.leaf == Some(t.node),
            level: 0,
            flags: 0,
            last: true,
            gutter: NONE,
        };
        self.rows += 1;
        row
    }

    /// Draws `row`'s prefix (the row last made by [`Walk::next_row`]).
    pub fn prefix(&self, row: &Row) -> Prefix {
        let gutter = std::iter::successors(self.cells.get(row.gutter as usize), |c| self.cells.get(c.2 as usize))
            .map(|&(level, last, _)| (level, last));
        let last = if on_rail(row.flags) { row.index == self.rails.1 } else { row.last };
        let between = self.rails.0 != NONE && row.index > self.rails.0 && row.index < self.rails.1;
        draw_prefix(row.level, self.budget, row.flags, gutter, last, between)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use arbor_tree::Session;
    use serde_json::json;

    use super::*;
    use crate::tree::forest::{Forest, Visible};
    use crate::tree::layout::{style_for, Layout};

    /// Every session under the repository's `fixtures/` with a tree, and the demo.
    fn fixture_sessions() -> impl Iterator<Item = (std::path::PathBuf, Session)> {
        let mut files = arbor_test_support::jsonl_under(&arbor_test_support::fixtures());
        files.push(arbor_test_support::fixtures().join("demo/demo.jsonl"));
        files.into_iter().filter_map(|file| {
            let s = Session::open(&file, arbor_tree::OpenMode::ReadOnly, arbor_tree::SessionOptions::default()).ok()?;
            (!s.get_tree().is_empty()).then_some((file, s))
        })
    }

    /// (position, prefix, active, leaf) of every row.
    type Rows = Vec<(usize, String, bool, bool)>;

    /// The rows as the forest's and the layout's arrays give them.
    fn by_arrays(s: &Session, shown: Option<&Bits>, budget: usize) -> Rows {
        let forest = Forest::of_session(s);
        let vis = Visible::new(&forest, |k| shown.is_none_or(|b| b.contains(forest.position(k).get())), &[]);
        let layout = Layout::new(&forest, &vis, style_for(&forest, budget), budget);
        (0..vis.len() as u32)
            .map(|v| {
                let k = vis.node(v);
                let text = layout.prefix(&vis, v).text;
                (forest.position(k).get(), text, forest.is_active(k), Some(k) == forest.leaf())
            })
            .collect()
    }

    /// The rows as the walk makes them.
    fn by_walk(s: &Session, shown: Option<&Bits>, budget: usize) -> Rows {
        let tree = s.get_tree();
        let mut shape = Shape::new(&tree, s.len(), s.leaf_id().and_then(|id| s.position_of(id)));
        if let Some(b) = shown {
            shape = shape.with_shown(b.clone());
        }
        let style = if pi_depth(&shape) as usize <= budget { Style::Pi } else { Style::Compact };
        let rails = match style {
            Style::Pi => (NONE, NONE),
            Style::Compact => Walk::rails(&shape, style),
        };
        let mut walk = Walk::new(&shape, style, budget).with_rails(rails);
        std::iter::from_fn(|| {
            let row = walk.next_row()?;
            Some((row.position.get(), walk.prefix(&row).text, row.active, row.leaf))
        })
        .collect()
    }

    /// A session of `n` entries that branches, labels, compacts and
    /// summarizes branches at random, its leaf left anywhere.
    fn generated(seed: u64, n: usize) -> Session {
        let mut s = Session::in_memory("/w", arbor_test_support::deterministic_options());
        fill(&mut s, seed, n);
        s
    }

    /// Appends `n` entries to `s` as [`generated`] describes.
    fn fill(s: &mut Session, seed: u64, n: usize) {
        let mut rng = arbor_test_support::Rng(seed);
        let mut ids: Vec<String> = vec![];
        for k in 0..n {
            if !ids.is_empty() && rng.below(8) == 0 {
                let to = rng.pick(&ids).clone();
                s.branch(&to).unwrap();
            }
            let id = match rng.below(12) {
                0 if !ids.is_empty() => {
                    let target = rng.pick(&ids).clone();
                    s.append_label_change(&target, Some(&format!("l{k}"))).unwrap()
                }
                1 if !ids.is_empty() => {
                    let kept = rng.pick(&ids).clone();
                    s.append_compaction("sum", &kept, 10, None, None).unwrap()
                }
                2 if !ids.is_empty() => {
                    let from = rng.pick(&ids).clone();
                    s.branch_with_summary(Some(&from), "left", None, None).unwrap()
                }
                3 => s.append_thinking_level_change("high").unwrap(),
                4 | 5 => s
                    .append_message(json!({"role": "assistant", "content": [{"type": "text", "text": "a"}],
                        "provider": "p", "model": "m", "usage": {}, "stopReason": "stop", "timestamp": 1}))
                    .unwrap(),
                6 => s
                    .append_message(json!({"role": "toolResult", "toolCallId": "c", "toolName": "t",
                        "content": [], "isError": false, "timestamp": 1}))
                    .unwrap(),
                _ => s.append_message(json!({"role": "user", "content": format!("u{k}"), "timestamp": 1})).unwrap(),
            };
            ids.push(id);
        }
        if rng.below(3) > 0 {
            let to = rng.pick(&ids).clone();
            s.branch(&to).unwrap();
            s.persist_leaf().unwrap();
        }
    }

    /// Every shown set a test tries on a session of `n` positions: all, and random ones from sparse to dense.
    fn shown_sets(rng: &mut arbor_test_support::Rng, n: usize) -> Vec<Option<Bits>> {
        let mut sets = vec![None];
        for hidden in 1..4 {
            let mut b = Bits::new(n);
            (0..n).filter(|_| rng.below(4) >= hidden).for_each(|p| b.insert(p));
            sets.push(Some(b));
        }
        sets
    }

    /// The walk makes the rows the arrays make, on every fixture and on
    /// generated sessions with branches, labels, compactions and branch
    /// summaries, with every entry shown or random ones, in pi's style
    /// and the compact one, at budgets from one level up.
    #[test]
    fn the_walk_makes_the_rows_the_arrays_make() {
        let mut rng = arbor_test_support::Rng(0xB5C0_FBCF_EC4D_3B2F);
        let mut sessions: Vec<(String, Session)> =
            fixture_sessions().map(|(file, s)| (file.display().to_string(), s)).collect();
        sessions.extend((0..40).map(|seed| (format!("generated {seed}"), generated(seed, 5 + seed as usize * 7))));
        for (name, s) in &sessions {
            for shown in shown_sets(&mut rng, s.len()) {
                for budget in [1, 2, 3, 5, 40] {
                    let want = by_arrays(s, shown.as_ref(), budget);
                    assert_eq!(by_walk(s, shown.as_ref(), budget), want, "{name}, budget {budget}");
                }
            }
        }
    }

    /// `arbor tree`'s text of `s` with `filter`, at 120 columns.
    fn text(s: &Session, filter: Option<crate::tree::filter::FilterMode>) -> String {
        let mut out = vec![];
        let opts = crate::tree::text::TreeText { filter, depth: None, width: Some(120), home: None };
        crate::tree::text::print_tree(s, &opts, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// A session on disk opened through its index (read lazily, no slot
    /// built ahead) writes the text and makes the rows that the same file
    /// read in full writes and the arrays make, with every filter.
    #[test]
    fn through_the_index_the_walk_writes_what_the_full_load_writes() {
        use crate::tree::filter::FilterMode;
        use arbor_tree::{OpenMode, SessionOptions};
        let dir = tempfile::tempdir().unwrap();
        for seed in 0..4 {
            let opts = SessionOptions {
                session_dir: Some(dir.path().join(format!("s{seed}"))),
                ..arbor_test_support::deterministic_options()
            };
            let mut s = Session::create("/w", opts).unwrap();
            fill(&mut s, 100 + seed, 3000);
            let file = s.session_file().unwrap().to_path_buf();
            drop(s);
            let full = SessionOptions { index_first: false, ..SessionOptions::default() };
            let full = Session::open(&file, OpenMode::ReadOnly, full).unwrap();
            let indexed = || {
                let opts = SessionOptions { index_min_bytes: 0, ..SessionOptions::default() }
                    .with_index_dir(Some(dir.path().join("index")));
                Session::open(&file, OpenMode::ReadOnly, opts).unwrap()
            };
            // The first open writes the index; the second reads it.
            drop(indexed());
            let lazy = indexed();
            assert!(lazy.len() >= 3000 && lazy.len() == full.len());
            assert!(std::fs::read_dir(dir.path().join("index")).unwrap().count() > seed as usize, "no index written");
            for filter in [None].into_iter().chain(FilterMode::CYCLE.map(Some)) {
                assert_eq!(text(&lazy, filter), text(&full, filter), "seed {seed}, {filter:?}");
            }
            for budget in [2, 40] {
                assert_eq!(by_walk(&lazy, None, budget), by_arrays(&full, None, budget), "seed {seed}");
            }
        }
    }
}
