//! The layout rules written the plain way, for the differential tests: an
//! explicit-stack walk in which every row carries its whole list of gutters,
//! and the budget cuts the finished prefix.

use std::collections::HashSet;

use super::{Prefix, Style};

struct Item {
    node: usize,
    level: usize,
    jb: bool,
    conn: bool,
    rail: bool,
    spine: bool,
    is_last: bool,
    gutters: Vec<(usize, bool)>,
}

/// Rows of the tree given by `roots` and `children` (each list in display
/// order), with `active` the active path, in `style`, at most `budget` levels.
pub fn layout(
    roots: &[usize],
    children: &dyn Fn(usize) -> Vec<usize>,
    active: &HashSet<usize>,
    style: Style,
    budget: usize,
) -> Vec<(usize, Prefix)> {
    let compact = style == Style::Compact;
    let multiple = roots.len() > 1;
    let mut stack: Vec<Item> = roots
        .iter()
        .enumerate()
        .rev()
        .map(|(k, &r)| Item {
            node: r,
            level: 0,
            jb: multiple,
            conn: false,
            rail: false,
            spine: compact && active.contains(&r),
            is_last: k + 1 == roots.len(),
            gutters: vec![],
        })
        .collect();
    let mut items = vec![];
    while let Some(it) = stack.pop() {
        let kids = children(it.node);
        let branching = kids.len() > 1;
        let next: Vec<Item> = kids
            .iter()
            .enumerate()
            .map(|(k, &c)| child_item(&it, c, k + 1 == kids.len(), branching, compact && active.contains(&c)))
            .collect();
        items.push(it);
        stack.extend(next.into_iter().rev());
    }
    let rails: Vec<usize> = items.iter().enumerate().filter(|(_, it)| it.rail).map(|(i, _)| i).collect();
    let (first_rail, last_rail) = (rails.first().copied(), rails.last().copied());
    items.iter().enumerate().map(|(i, it)| (it.node, prefix(it, i, first_rail, last_rail, budget))).collect()
}

/// The item of child `c` of `it` (`branching`: `it` has more than one child).
fn child_item(it: &Item, c: usize, is_last: bool, branching: bool, spine: bool) -> Item {
    if it.spine {
        let level = if branching { 1 } else { it.level + usize::from(it.jb) };
        return Item {
            node: c,
            level,
            jb: branching && !spine,
            conn: branching,
            rail: branching,
            spine,
            is_last,
            gutters: vec![],
        };
    }
    let mut gutters = it.gutters.clone();
    if it.conn && !it.rail {
        gutters.push((it.level - 1, !it.is_last));
    }
    Item {
        node: c,
        level: it.level + usize::from(branching || it.jb),
        jb: branching,
        conn: branching,
        rail: false,
        spine,
        is_last,
        gutters,
    }
}

/// The prefix of item `i`, cut to `budget` levels.
fn prefix(it: &Item, i: usize, first_rail: Option<usize>, last_rail: Option<usize>, budget: usize) -> Prefix {
    let mut cells: Vec<String> = vec![];
    let mut glyph_cell = None;
    for l in 0..it.level {
        let gutter = it.gutters.iter().find(|g| g.0 == l);
        let cell = if let Some(&(_, show)) = gutter {
            if show {
                "│  "
            } else {
                "   "
            }
        } else if it.conn && l + 1 == it.level {
            glyph_cell = Some(l);
            let last = if it.rail { Some(i) == last_rail } else { it.is_last };
            if last {
                "└─ "
            } else {
                "├─ "
            }
        } else if l == 0 && first_rail.is_some_and(|f| f < i) && last_rail.is_some_and(|t| i < t) {
            "│  "
        } else {
            "   "
        };
        cells.push(cell.to_owned());
    }
    let (text, glyph_at) = if it.level > budget {
        let (marker, span) = super::level_marker(it.level as u32, budget as u32);
        let cut = it.level - budget + span as usize;
        let glyph_at = glyph_cell.filter(|&l| l >= cut).map(|l| marker.chars().count() + 3 * (l - cut) + 1);
        (format!("{marker}{}", cells[cut..].concat()), glyph_at)
    } else {
        (cells.concat(), glyph_cell.map(|l| 3 * l + 1))
    };
    Prefix { text, glyph_at }
}
