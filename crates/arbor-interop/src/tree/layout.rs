//! How a tree is laid out (docs/cli.md, "How the tree is laid out"):
//! connectors and gutters on a grid of three-column cells, for `arbor tree`
//! and the tree selector alike.
//!
//! Two styles. [`Style::Pi`] is pi's layout exactly: every branch point
//! indents its children one level, the first generation after a branch one
//! more. It is kept whenever every entry of the session fits in the level
//! budget. Past it (a session with thousands of branch points on its active
//! path puts the leaf thousands of levels deep), [`Style::Compact`] draws the
//! active path as one straight column: its branch points send their other
//! branches to a single rail in the first column instead of opening a level
//! each, and everything off the active path keeps pi's rules. In either
//! style a row deeper than the budget shows its level as a number in place of
//! its outermost cells (`level_marker`).
//!
//! [`Layout`] computes, in one pass over a [`Visible`] forest, each row's
//! level and connector; [`Layout::prefix`] then draws any one row on demand,
//! walking only its connector ancestors within the budget. Nothing is kept
//! per row beyond a few integers, so a million rows cost a few megabytes.

use super::forest::{Forest, Visible, NONE};

/// How branch points indent (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// pi's layout.
    Pi,
    /// The active path in one column, its branches on a rail.
    Compact,
}

/// The number of levels a row may be indented before its level is shown as a
/// number: the prefix keeps at most half of `width` (and at least 24 columns
/// for the text), as oh-my-pi's selector does.
pub fn level_budget(width: usize) -> usize {
    (width.saturating_sub((width / 2).max(24)).saturating_sub(4) / 3).max(1)
}

/// The deepest level pi's layout would give any entry of `forest`.
pub fn pi_depth(forest: &Forest) -> u32 {
    let n = forest.len();
    // Children counted up to 2 (whether a parent branches is all that
    // matters): a byte an entry.
    let mut kids = vec![0u8; n];
    let mut roots = 0;
    for k in 0..n as u32 {
        match forest.parent(k) {
            Some(p) => kids[p as usize] = kids[p as usize].saturating_add(1).min(2),
            None => roots += 1,
        }
    }
    // The level of each entry, parents first, with "just branched" in the
    // top bit (4 bytes an entry).
    const JUST: u32 = 1 << 31;
    let mut state = vec![0u32; n];
    let mut deepest = 0;
    for k in 0..n as u32 {
        let (level, jb) = match forest.parent(k) {
            None => (0, roots > 1),
            Some(p) => {
                let (level, jb) = (state[p as usize] & !JUST, state[p as usize] & JUST != 0);
                let branching = kids[p as usize] > 1;
                (level + u32::from(branching || jb), branching)
            }
        };
        deepest = deepest.max(level);
        state[k as usize] = level | if jb { JUST } else { 0 };
    }
    deepest
}

/// The style for a session: pi's when its whole tree fits in `budget` levels.
pub fn style_for(forest: &Forest, budget: usize) -> Style {
    if pi_depth(forest) as usize <= budget {
        Style::Pi
    } else {
        Style::Compact
    }
}

/// The number a row past the budget shows in place of its outer cells, and
/// how many cells it takes: two (`⋯123 `, so the number never touches the
/// gutter after it) when the budget has room, else one.
pub(crate) fn level_marker(level: u32, budget: u32) -> (String, u32) {
    if budget >= 4 {
        (format!("{:<6}", format!("⋯{level} ")), 2)
    } else {
        (format!("{:<3}", format!("⋯{level}")), 1)
    }
}

const JB: u8 = 1;
const CONN: u8 = 2;
const RAIL: u8 = 4;
const SPINE: u8 = 8;

/// The drawn prefix of one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix {
    /// Connector, gutter and level cells, three columns each.
    pub text: String,
    /// The character index of the connector's second character, where the
    /// selector puts its fold glyph; `None` when the row has no connector.
    pub glyph_at: Option<usize>,
}

/// The levels and connectors of a visible forest's rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    budget: u32,
    level: Vec<u32>,
    flags: Vec<u8>,
    /// The nearest ancestor that draws a connector off the rail.
    conn_anc: Vec<u32>,
    first_rail: u32,
    last_rail: u32,
}

impl Layout {
    /// Lays out `vis` (a visible part of `forest`) in `style`, showing at most `budget` levels.
    pub fn new(forest: &Forest, vis: &Visible, style: Style, budget: usize) -> Layout {
        let mut l = Layout::default();
        l.rebuild(forest, vis, style, budget);
        l
    }

    /// Lays out `vis` (a visible part of `forest`) in `style`, showing at most `budget` levels, reusing the buffers.
    pub fn rebuild(&mut self, forest: &Forest, vis: &Visible, style: Style, budget: usize) {
        let n = vis.len();
        self.budget = u32::try_from(budget.max(1)).unwrap_or(u32::MAX);
        self.level.clear();
        self.flags.clear();
        self.conn_anc.clear();
        self.level.resize(n, 0);
        self.flags.resize(n, 0);
        self.conn_anc.resize(n, NONE);
        self.lay_rows(forest, vis, style, 0..n as u32);
        self.find_rails();
    }

    /// Lays out rows `rows` of `vis`, whose ancestors are laid out already.
    fn lay_rows(&mut self, forest: &Forest, vis: &Visible, style: Style, rows: std::ops::Range<u32>) {
        let multiple_roots = vis.roots() > 1;
        for v in rows {
            let spine = style == Style::Compact && forest.is_active(vis.node(v));
            let parent = vis.parent(v);
            let above = parent.map(|p| (self.level[p as usize], self.flags[p as usize], vis.kids(p) > 1));
            let (level, flags, from) = lay_row(above, spine, multiple_roots);
            self.level[v as usize] = level;
            self.flags[v as usize] = flags;
            self.conn_anc[v as usize] = match (from, parent) {
                (Gutter::Parent, Some(p)) => p,
                (Gutter::Parents, Some(p)) => self.conn_anc[p as usize],
                _ => NONE,
            };
        }
    }

    /// The first and last rows on the rail.
    fn find_rails(&mut self) {
        let rail = |f: &u8| f & RAIL != 0;
        self.first_rail = self.flags.iter().position(rail).map_or(NONE, |v| v as u32);
        self.last_rail = self.flags.iter().rposition(rail).map_or(NONE, |v| v as u32);
    }

    /// Follows [`Visible::fold`]: rows `v + 1..w` (row `v`'s subtree) are
    /// gone. No other row's level or connector changes: their parents and
    /// their parents' children stay. Returns the previous layout.
    pub fn fold(&mut self, v: u32, w: u32) -> Layout {
        let m = w - v - 1;
        let (a, b) = (v as usize + 1, w as usize);
        let mut new = Layout {
            budget: self.budget,
            level: [&self.level[..a], &self.level[b..]].concat(),
            flags: [&self.flags[..a], &self.flags[b..]].concat(),
            conn_anc: [&self.conn_anc[..a], &self.conn_anc[b..]].concat(),
            first_rail: NONE,
            last_rail: NONE,
        };
        for x in &mut new.conn_anc[a..] {
            if *x != NONE && *x >= w {
                *x -= m;
            }
        }
        new.find_rails();
        std::mem::replace(self, new)
    }

    /// Follows [`Visible::unfold`]: `m` rows were inserted after row `v` of `vis`.
    pub fn unfold(&mut self, forest: &Forest, vis: &Visible, style: Style, v: u32, m: u32) {
        let at = v as usize + 1;
        for x in &mut self.conn_anc[at..] {
            if *x != NONE && *x > v {
                *x += m;
            }
        }
        let gap = m as usize;
        self.level.splice(at..at, std::iter::repeat_n(0, gap));
        self.flags.splice(at..at, std::iter::repeat_n(0, gap));
        self.conn_anc.splice(at..at, std::iter::repeat_n(NONE, gap));
        self.lay_rows(forest, vis, style, v + 1..v + 1 + m);
        self.find_rails();
    }

    /// The level of row `v` (how many cells its prefix would have without the budget).
    pub fn level(&self, v: u32) -> u32 {
        self.level[v as usize]
    }

    /// Draws row `v`'s prefix; `vis` is the visible forest the layout was made for.
    pub fn prefix(&self, vis: &Visible, v: u32) -> Prefix {
        let flags = self.flags[v as usize];
        let gutter =
            std::iter::successors(Some(self.conn_anc[v as usize]), |&a| self.conn_anc.get(a as usize).copied())
                .take_while(|&a| a != NONE)
                .map(|a| (self.level[a as usize], vis.is_last(a)));
        let last = if flags & RAIL != 0 { v == self.last_rail } else { vis.is_last(v) };
        let on_rail = self.first_rail != NONE && v > self.first_rail && v < self.last_rail;
        draw_prefix(self.level(v), self.budget, flags, gutter, last, on_rail)
    }
}

/// Where a row's gutter comes from ([`lay_row`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gutter {
    /// No gutter: a root, or a row under the active path's column.
    None,
    /// The parent draws a connector: it and its own gutter.
    Parent,
    /// The parent's gutter.
    Parents,
}

/// One row's level, flags and gutter, from its visible parent's level,
/// flags and whether that parent branches (`None` for a root); `spine` when
/// the row is on the active path's column ([`Style::Compact`]).
pub(crate) fn lay_row(parent: Option<(u32, u8, bool)>, spine: bool, multiple_roots: bool) -> (u32, u8, Gutter) {
    let (level, mut flags, from) = match parent {
        None => (0, if multiple_roots { JB } else { 0 }, Gutter::None),
        Some((pl, pf, branching)) => {
            let step = u32::from(pf & JB != 0);
            if pf & SPINE != 0 {
                // Under the active path: its branch points use the rail.
                match (branching, spine) {
                    (true, true) => (1, CONN | RAIL, Gutter::None),
                    (true, false) => (1, CONN | RAIL | JB, Gutter::None),
                    (false, _) => (pl + step, 0, Gutter::None),
                }
            } else {
                let from = if pf & CONN != 0 && pf & RAIL == 0 { Gutter::Parent } else { Gutter::Parents };
                let flags = if branching { CONN | JB } else { 0 };
                (pl + u32::from(branching || step == 1), flags, from)
            }
        }
    };
    if spine {
        flags |= SPINE;
    }
    (level, flags, from)
}

/// True when a row of these flags is on the rail.
pub(crate) fn on_rail(flags: u8) -> bool {
    flags & RAIL != 0
}

/// True when a row of these flags draws a connector its children's gutter
/// shows ([`Gutter::Parent`]): one off the rail and off the active path's column.
pub(crate) fn draws_gutter(flags: u8) -> bool {
    flags & CONN != 0 && flags & (RAIL | SPINE) == 0
}

/// Draws a row's prefix: its `level` within `budget`, its `flags`
/// ([`lay_row`]), its gutter (the level of each ancestor that draws a
/// connector, nearest first, and whether it is its parent's last child),
/// whether the row is the last of its parent (for a row on the rail: the
/// rail's last row) and whether it lies between the rail's first and last rows.
pub(crate) fn draw_prefix(
    level: u32,
    budget: u32,
    flags: u8,
    gutter: impl Iterator<Item = (u32, bool)>,
    last: bool,
    on_rail: bool,
) -> Prefix {
    if level == 0 {
        return Prefix { text: String::new(), glyph_at: None };
    }
    let marker = (level > budget).then(|| level_marker(level, budget));
    let first = marker.as_ref().map_or(0, |(_, cells)| level - budget + cells);
    // One entry per drawn level: Some(true) a gutter line, Some(false) a blank gutter.
    let mut cells: Vec<Option<bool>> = vec![None; (level - first) as usize];
    for (a_level, a_last) in gutter {
        let at = a_level - 1;
        if at < first {
            break;
        }
        cells[(at - first) as usize] = Some(!a_last);
    }
    let rail = on_rail && first == 0;
    let mut text = String::with_capacity(cells.len() * 3 + 4);
    let mut glyph_at = None;
    if let Some((m, _)) = &marker {
        text.push_str(m);
    }
    for (i, cell) in cells.iter().enumerate() {
        let at = first + i as u32;
        let own = flags & CONN != 0 && at == level - 1;
        match cell {
            Some(true) => text.push_str("│  "),
            Some(false) => text.push_str("   "),
            None if own => {
                glyph_at = Some(text.chars().count() + 1);
                text.push_str(if last { "└─ " } else { "├─ " });
            }
            None if at == 0 && rail => text.push_str("│  "),
            None => text.push_str("   "),
        }
    }
    Prefix { text, glyph_at }
}

/// A plain reference layout the tests of the layout and of the tree
/// selector compare with.
#[doc(hidden)]
pub mod reference;

#[cfg(test)]
mod tests;
