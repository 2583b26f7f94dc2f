//! How a tree is laid out (docs/cli.md, "arbor tui"): connectors and gutters on a grid of
//! characters, the active branch first.
//!
//! Used by `arbor tree` and the interactive selector (`arbor tui`).

use std::collections::HashSet;

use arbor_tree::{Position, Session, Tree};

/// One laid-out row of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Session index of the entry.
    pub index: usize,
    /// The connector and gutter prefix (`displayIndent × 3` characters).
    pub prefix: String,
    /// True when the entry is on the active path (root → leaf).
    pub active: bool,
    /// The level whose cell holds this row's connector (`├─`/`└─`), when one is drawn;
    /// the selector puts its fold glyph in the second character of that cell.
    pub connector_at: Option<usize>,
}

#[derive(Clone)]
struct Gutter {
    position: usize,
    show: bool,
}

/// Positions of the entries on the path root → leaf.
pub fn active_path(session: &Session) -> HashSet<usize> {
    session.branch_positions(None).into_iter().map(Position::get).collect()
}

/// Lays out a tree as pi's selector does (docs/cli.md, "arbor tui"): the active branch first
/// under each branch point, single-child chains flat, connectors and gutters.
/// `visible_children(i)` and `roots` describe the (possibly filtered) tree.
pub fn layout(roots: &[usize], children: &dyn Fn(usize) -> Vec<usize>, active: &HashSet<usize>) -> Vec<Row> {
    struct Item {
        node: usize,
        indent: usize,
        just_branched: bool,
        show_connector: bool,
        is_last: bool,
        gutters: Vec<Gutter>,
        virtual_root_child: bool,
    }
    let multiple_roots = roots.len() > 1;
    let mut ordered_roots: Vec<usize> = roots.to_vec();
    ordered_roots.sort_by_key(|r| !active.contains(r));
    let mut stack: Vec<Item> = vec![];
    let n = ordered_roots.len();
    for (k, &r) in ordered_roots.iter().enumerate().rev() {
        stack.push(Item {
            node: r,
            indent: usize::from(multiple_roots),
            just_branched: multiple_roots,
            show_connector: multiple_roots,
            is_last: k + 1 == n,
            gutters: vec![],
            virtual_root_child: multiple_roots,
        });
    }
    let mut rows = vec![];
    while let Some(item) = stack.pop() {
        let display_indent = if multiple_roots { item.indent.saturating_sub(1) } else { item.indent };
        let connector = item.show_connector && !item.virtual_root_child;
        let connector_at = display_indent.checked_sub(1);
        // The gutter at each level (the first one listed wins), found in one
        // pass: deep, much-branched trees have thousands of levels.
        let mut gutter_at: Vec<Option<bool>> = vec![None; display_indent];
        for g in item.gutters.iter().rev() {
            if let Some(slot) = gutter_at.get_mut(g.position) {
                *slot = Some(g.show);
            }
        }
        let mut prefix = String::with_capacity(display_indent * 3);
        for (level, gutter) in gutter_at.iter().enumerate() {
            if let Some(show) = gutter {
                prefix.push_str(if *show { "│  " } else { "   " });
            } else if connector && connector_at == Some(level) {
                prefix.push_str(if item.is_last { "└─ " } else { "├─ " });
            } else {
                prefix.push_str("   ");
            }
        }
        let drawn_at = connector_at.filter(|&l| connector && !item.gutters.iter().any(|g| g.position == l));
        rows.push(Row { index: item.node, prefix, active: active.contains(&item.node), connector_at: drawn_at });
        let mut kids = children(item.node);
        kids.sort_by_key(|c| !active.contains(c));
        let branching = kids.len() > 1;
        let child_indent =
            if branching || (item.just_branched && item.indent > 0) { item.indent + 1 } else { item.indent };
        let mut gutters = item.gutters.clone();
        if connector {
            gutters.push(Gutter { position: display_indent.saturating_sub(1), show: !item.is_last });
        }
        let m = kids.len();
        for (k, &c) in kids.iter().enumerate().rev() {
            stack.push(Item {
                node: c,
                indent: child_indent,
                just_branched: branching,
                show_connector: branching,
                is_last: k + 1 == m,
                gutters: gutters.clone(),
                virtual_root_child: false,
            });
        }
    }
    rows
}

/// Lays out the whole tree of a session.
pub fn layout_tree(tree: &Tree<'_>, active: &HashSet<usize>) -> Vec<Row> {
    let roots: Vec<usize> = tree.root_positions().iter().map(|p| p.get()).collect();
    layout(&roots, &|i| tree.child_positions(Position::new(i)).iter().map(|p| p.get()).collect(), active)
}
