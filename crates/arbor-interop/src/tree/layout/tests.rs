#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, HashSet};

use super::*;
use crate::tree::forest::{Forest, Visible};

/// A forest of `parents` (children in index order) with the leaf at `leaf`.
fn forest(parents: &[Option<usize>], leaf: Option<usize>) -> Forest {
    let n = parents.len();
    let mut kids: Vec<Vec<usize>> = vec![vec![]; n];
    let mut roots = vec![];
    for (i, p) in parents.iter().enumerate() {
        match p {
            Some(p) => kids[*p].push(i),
            None => roots.push(i),
        }
    }
    Forest::build(n, &roots, |p| kids[p].clone().into_iter(), leaf)
}

/// Every row drawn by the engine: (forest index, prefix with `*` for the glyph cell).
fn engine(f: &Forest, show: &dyn Fn(u32) -> bool, style: Style, budget: usize) -> Vec<(usize, Prefix)> {
    let vis = Visible::new(f, show, &[]);
    let l = Layout::new(f, &vis, style, budget);
    (0..vis.len() as u32).map(|v| (vis.node(v) as usize, l.prefix(&vis, v))).collect()
}

/// The same through the reference, given the forest's visible structure computed the plain way.
fn plain(f: &Forest, show: &dyn Fn(u32) -> bool, style: Style, budget: usize) -> Vec<(usize, Prefix)> {
    let n = f.len() as u32;
    let visible: Vec<u32> = (0..n).filter(|&k| show(k)).collect();
    let set: HashSet<u32> = visible.iter().copied().collect();
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots = vec![];
    for &k in &visible {
        let mut p = f.parent(k);
        while let Some(q) = p {
            if set.contains(&q) {
                break;
            }
            p = f.parent(q);
        }
        match p {
            Some(q) => children.entry(q as usize).or_default().push(k as usize),
            None => roots.push(k as usize),
        }
    }
    let active: HashSet<usize> = (0..n).filter(|&k| f.is_active(k)).map(|k| k as usize).collect();
    reference::layout(&roots, &|k| children.get(&k).cloned().unwrap_or_default(), &active, style, budget)
}

fn draw(rows: &[(usize, Prefix)]) -> Vec<String> {
    rows.iter()
        .map(|(k, p)| {
            let text: String =
                p.text.chars().enumerate().map(|(i, c)| if Some(i) == p.glyph_at { '*' } else { c }).collect();
            format!("{text}{k}")
        })
        .collect()
}

/// pi's worked layout example (docs/cli.md, "How the tree is laid out"): 0-3 a line, then 4-7 (the leaf at 7) and 8-10.
fn worked() -> Forest {
    let parents = [None, Some(0), Some(1), Some(2), Some(3), Some(4), Some(5), Some(6), Some(3), Some(8), Some(9)];
    forest(&parents, Some(7))
}

#[test]
fn pi_style_is_pis_worked_example() {
    let rows = draw(&engine(&worked(), &|_| true, Style::Pi, 18));
    assert_eq!(rows, ["0", "1", "2", "3", "├* 4", "│     5", "│     6", "│     7", "└* 8", "      9", "      10"]);
}

#[test]
fn compact_style_keeps_the_active_path_in_one_column() {
    // Branch points at 1 and 3 on the active path, and one inside the side branch at 8.
    let parents =
        [None, Some(0), Some(1), Some(2), Some(3), Some(4), Some(1), Some(6), Some(3), Some(8), Some(8), Some(10)];
    let f = forest(&parents, Some(5));
    let rows = draw(&engine(&f, &|_| true, Style::Compact, 18));
    // (Rows name display indexes: 6-9 are entries 8-11, the branch of 3; 10-11 are 6-7, the branch of 1.)
    assert_eq!(
        rows,
        ["0", "1", "├* 2", "│  3", "├* 4", "│  5", "├* 6", "│  ├* 7", "│  └* 8", "│        9", "└* 10", "      11"]
    );
    assert_eq!(rows, draw(&plain(&f, &|_| true, Style::Compact, 18)));
    // pi's layout of the same tree, for comparison: the active path moves right at each branch point.
    let pi = draw(&engine(&f, &|_| true, Style::Pi, 18));
    assert_eq!(pi[5], "│     │     5");
}

#[test]
fn rows_past_the_budget_show_their_level() {
    // A chain where every entry forks once more: level grows by two per step under pi.
    let mut parents = vec![None];
    for i in 0..12 {
        let p = if i == 0 { 0 } else { parents.len() - 2 };
        parents.push(Some(p));
        parents.push(Some(p));
    }
    let f = forest(&parents, None);
    let rows = draw(&engine(&f, &|_| true, Style::Pi, 4));
    assert_eq!(rows, draw(&plain(&f, &|_| true, Style::Pi, 4)));
    let deep = rows.iter().find(|r| r.starts_with("⋯9")).unwrap();
    assert!(deep.starts_with("⋯9 "), "{deep}");
    let rows = engine(&f, &|_| true, Style::Pi, 4);
    assert!(rows.iter().all(|(_, p)| p.text.chars().count() <= 12), "{rows:?}");
}

#[test]
fn pi_depth_is_the_deepest_pi_level() {
    let f = worked();
    assert_eq!(pi_depth(&f), 2);
    assert_eq!(style_for(&f, 2), Style::Pi);
    assert_eq!(style_for(&f, 1), Style::Compact);
    assert_eq!(level_budget(120), 18);
    assert_eq!(level_budget(60), 8);
    assert_eq!(level_budget(10), 1);
}

/// Random trees, leaves, visible sets, styles and budgets: the engine draws what the reference draws.
#[test]
fn the_engine_agrees_with_the_reference() {
    let mut rng = arbor_test_support::Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..400 {
        let n = 1 + rng.below(40);
        let mut parents: Vec<Option<usize>> = vec![];
        for i in 0..n {
            let p = match rng.below(10) {
                0 => None,
                1..=5 if i > 0 => Some(i - 1),
                _ if i > 0 => Some(rng.below(i)),
                _ => None,
            };
            parents.push(p);
        }
        let leaf = (rng.below(4) > 0).then(|| rng.below(n));
        let f = forest(&parents, leaf);
        let hidden: HashSet<u32> = (0..n as u32).filter(|_| rng.below(4) == 0).collect();
        let show = move |k: u32| !hidden.contains(&k);
        for style in [Style::Pi, Style::Compact] {
            for budget in [1, 3, 18] {
                assert_eq!(
                    draw(&engine(&f, &show, style, budget)),
                    draw(&plain(&f, &show, style, budget)),
                    "round {round}, {style:?}, budget {budget}, parents {parents:?}, leaf {leaf:?}"
                );
            }
        }
    }
}
