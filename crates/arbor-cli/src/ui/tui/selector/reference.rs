//! The selector computed the plain way, for the differential tests: every
//! entry decoded up front, the visible tree rebuilt from maps after every
//! change, every row drawn by the reference layout. The state machine must
//! answer exactly what this answers, input after input.

use std::collections::{HashMap, HashSet};

use arbor_context::render::{entry_facts, entry_text, ToolCalls};
use arbor_tree::{Position, Session};

use super::{FilterMode, Input, Outcome, VisibleRow};
use crate::shared::filter::kind;
use crate::shared::layout::{level_budget, reference, Style};

struct Node {
    id: String,
    parent: Option<usize>,
    kind: u8,
    label: Option<String>,
    text: String,
    search: String,
}

/// The plain selector.
pub struct Reference {
    nodes: Vec<Node>,
    active: HashSet<usize>,
    leaf: Option<usize>,
    style: Style,
    budget: usize,
    mode: FilterMode,
    /// The search query.
    pub query: String,
    folded: HashSet<usize>,
    page: usize,
    visible: Vec<usize>,
    prefixes: Vec<(String, Option<usize>)>,
    vparent: HashMap<usize, usize>,
    vkids: HashMap<usize, Vec<usize>>,
    selected: usize,
    last: Option<usize>,
    editing: Option<(usize, String)>,
}

fn order(session: &Session) -> (Vec<usize>, Vec<Option<usize>>, HashSet<usize>) {
    let tree = session.get_tree();
    let mut parent_of: HashMap<usize, usize> = HashMap::new();
    for p in session.positions() {
        for c in tree.child_positions(p) {
            parent_of.insert(c.get(), p.get());
        }
    }
    let mut on_path = HashSet::new();
    let mut cur = session.leaf_id().and_then(|id| session.position_of(id)).map(Position::get);
    while let Some(c) = cur {
        if !on_path.insert(c) {
            break;
        }
        cur = parent_of.get(&c).copied();
    }
    let sorted = |list: &[Position]| -> Vec<usize> {
        let mut v: Vec<usize> = list.iter().map(|p| p.get()).collect();
        v.sort_by_key(|c| !on_path.contains(c));
        v
    };
    let mut out = vec![];
    let mut stack: Vec<usize> = sorted(tree.root_positions()).into_iter().rev().collect();
    while let Some(p) = stack.pop() {
        out.push(p);
        stack.extend(sorted(tree.child_positions(Position::new(p))).into_iter().rev());
    }
    let at: HashMap<usize, usize> = out.iter().enumerate().map(|(k, &p)| (p, k)).collect();
    let parents = out.iter().map(|p| parent_of.get(p).and_then(|q| at.get(q).copied())).collect();
    let active = on_path.iter().filter_map(|p| at.get(p).copied()).collect();
    (out, parents, active)
}

impl Reference {
    /// The plain selector over `session`, `page` rows high, `width` wide, on `initial` (or the leaf).
    pub fn new(session: &Session, page: usize, width: usize, initial: Option<&str>, mode: FilterMode) -> Reference {
        let (order, parents, active) = order(session);
        let leaf_pos = session.leaf_id().and_then(|id| session.position_of(id)).map(Position::get);
        let entries: Vec<_> = order.iter().map(|&p| session.decode_at(Position::new(p)).unwrap()).collect();
        let mut calls = ToolCalls::new();
        for e in entries.iter().flatten() {
            calls.record(e);
        }
        let mut nodes = vec![];
        for ((e, &p), parent) in entries.iter().zip(&order).zip(parents) {
            let Some(e) = e else { continue };
            let facts = entry_facts(e, None);
            let mut bits = crate::shared::filter::kind_of(session, Position::new(p)) & !kind::UNKNOWN;
            if facts.hidden && Some(p) != leaf_pos {
                bits |= kind::HIDDEN;
            }
            nodes.push(Node {
                id: e.id.clone(),
                parent,
                kind: bits,
                label: session.get_label(&e.id).unwrap().map(str::to_owned),
                text: entry_text(e, &calls, None),
                search: facts.search,
            });
        }
        let leaf = leaf_pos.and_then(|lp| order.iter().position(|&p| p == lp));
        let budget = level_budget(width);
        // pi's layout while every entry fits the budget.
        let all: Vec<usize> = (0..nodes.len()).collect();
        let kids = children_of(&nodes, &all);
        let roots: Vec<usize> = all.iter().copied().filter(|&n| nodes[n].parent.is_none()).collect();
        let deep =
            reference::layout(&roots, &|n| kids.get(&n).cloned().unwrap_or_default(), &active, Style::Pi, usize::MAX)
                .iter()
                .map(|(_, p)| p.text.chars().count() / 3)
                .max()
                .unwrap_or(0);
        let style = if deep <= budget { Style::Pi } else { Style::Compact };
        let mut r = Reference {
            nodes,
            active,
            leaf,
            style,
            budget,
            mode,
            query: String::new(),
            folded: HashSet::new(),
            page: page.max(1),
            visible: vec![],
            prefixes: vec![],
            vparent: HashMap::new(),
            vkids: HashMap::new(),
            selected: 0,
            last: None,
            editing: None,
        };
        r.recompute();
        let start = initial.and_then(|id| r.nodes.iter().position(|n| n.id == id)).or(leaf);
        r.selected = r.nearest(start);
        r.last = r.visible.get(r.selected).copied();
        r
    }

    fn shown(&self, n: usize, tokens: &[String]) -> bool {
        let node = &self.nodes[n];
        let pass = self.mode.shows(node.kind, node.label.is_some(), Some(n) == self.leaf);
        let text = match &node.label {
            Some(l) => format!("{} {}", l.to_lowercase(), node.search),
            None => node.search.clone(),
        };
        pass && tokens.iter().all(|t| text.contains(t.as_str()))
    }

    fn under_fold(&self, n: usize) -> bool {
        let mut cur = self.nodes[n].parent;
        while let Some(p) = cur {
            if self.folded.contains(&p) {
                return true;
            }
            cur = self.nodes[p].parent;
        }
        false
    }

    fn recompute(&mut self) {
        let tokens = super::search::tokens(&self.query);
        let visible: Vec<usize> =
            (0..self.nodes.len()).filter(|&n| self.shown(n, &tokens) && !self.under_fold(n)).collect();
        let set: HashSet<usize> = visible.iter().copied().collect();
        self.vparent.clear();
        let mut roots = vec![];
        for &n in &visible {
            let mut cur = self.nodes[n].parent;
            while let Some(p) = cur {
                if set.contains(&p) {
                    break;
                }
                cur = self.nodes[p].parent;
            }
            match cur {
                Some(p) => {
                    self.vparent.insert(n, p);
                }
                None => roots.push(n),
            }
        }
        self.vkids = HashMap::new();
        for &n in &visible {
            if let Some(&p) = self.vparent.get(&n) {
                self.vkids.entry(p).or_default().push(n);
            }
        }
        let kids = &self.vkids;
        let rows = reference::layout(
            &roots,
            &|n| kids.get(&n).cloned().unwrap_or_default(),
            &self.active,
            self.style,
            self.budget,
        );
        self.visible = rows.iter().map(|(n, _)| *n).collect();
        self.prefixes = rows.into_iter().map(|(_, p)| (p.text, p.glyph_at)).collect();
    }

    fn refilter(&mut self) {
        if let Some(&n) = self.visible.get(self.selected) {
            self.last = Some(n);
        }
        self.recompute();
        match self.last {
            Some(n) => self.selected = self.nearest(Some(n)),
            None => self.selected = self.selected.min(self.visible.len().saturating_sub(1)),
        }
        if let Some(&n) = self.visible.get(self.selected) {
            self.last = Some(n);
        }
    }

    fn nearest(&self, from: Option<usize>) -> usize {
        if self.visible.is_empty() {
            return 0;
        }
        let mut cur = from;
        while let Some(n) = cur {
            if let Some(k) = self.visible.iter().position(|&v| v == n) {
                return k;
            }
            cur = self.nodes[n].parent;
        }
        self.visible.len() - 1
    }

    fn foldable(&self, n: usize) -> bool {
        self.vkids.get(&n).is_some_and(|c| !c.is_empty())
            && self.vparent.get(&n).is_none_or(|p| self.vkids.get(p).is_some_and(|c| c.len() > 1))
    }

    fn select_node(&mut self, n: usize) {
        if let Some(k) = self.visible.iter().position(|&v| v == n) {
            self.selected = k;
            self.last = Some(n);
        }
    }

    fn move_to(&mut self, k: usize) {
        self.selected = k;
        self.last = self.visible.get(k).copied();
    }

    /// The rows as the state machine's [`super::TreeSelector::rows`] gives them.
    pub fn rows(&self) -> Vec<VisibleRow> {
        self.visible
            .iter()
            .enumerate()
            .map(|(k, &n)| {
                let (text, glyph_at) = &self.prefixes[k];
                let folded = self.folded.contains(&n);
                let glyph = if folded { Some('⊞') } else { self.foldable(n).then_some('⊟') };
                let prefix = match (glyph_at, glyph) {
                    (Some(at), Some(g)) => {
                        text.chars().enumerate().map(|(i, c)| if i == *at { g } else { c }).collect()
                    }
                    _ => text.clone(),
                };
                VisibleRow {
                    id: self.nodes[n].id.clone(),
                    prefix,
                    fold_marker: if folded && glyph_at.is_none() { "⊞ " } else { "" },
                    active: self.active.contains(&n),
                    label: self.nodes[n].label.clone(),
                    text: self.nodes[n].text.clone(),
                    selected: k == self.selected,
                }
            })
            .collect()
    }

    /// The footer.
    pub fn footer(&self) -> String {
        if self.visible.is_empty() {
            format!("  (0/0){}", self.mode.footer_label())
        } else {
            format!("  ({}/{}){}", self.selected + 1, self.visible.len(), self.mode.footer_label())
        }
    }

    /// The label being typed.
    pub fn editing(&self) -> Option<(&str, &str)> {
        self.editing.as_ref().map(|(n, v)| (self.nodes[*n].id.as_str(), v.as_str()))
    }

    fn set_mode(&mut self, m: FilterMode) {
        self.mode = m;
        self.folded.clear();
        self.refilter();
    }

    fn fold_or_up(&mut self) {
        let Some(&n) = self.visible.get(self.selected) else { return };
        if self.foldable(n) && !self.folded.contains(&n) {
            self.folded.insert(n);
            return self.refilter();
        }
        let mut cur = n;
        loop {
            match self.vparent.get(&cur).copied() {
                None => return self.select_node(cur),
                Some(p) => {
                    let idx = self.visible.iter().position(|&v| v == cur).unwrap_or(usize::MAX);
                    if self.vkids.get(&p).is_some_and(|c| c.len() > 1) && idx < self.selected {
                        return self.select_node(cur);
                    }
                    cur = p;
                }
            }
        }
    }

    fn unfold_or_down(&mut self) {
        let Some(&n) = self.visible.get(self.selected) else { return };
        if self.folded.remove(&n) {
            return self.refilter();
        }
        let mut cur = n;
        loop {
            match self.vkids.get(&cur).map(Vec::as_slice) {
                None | Some([]) => break,
                Some([only]) => cur = *only,
                Some([first, ..]) => {
                    cur = *first;
                    break;
                }
            }
        }
        self.select_node(cur);
    }

    /// One input, as pi's selector (and Arbor's `q`) answers it.
    pub fn handle(&mut self, input: Input) -> Outcome {
        if let Some((n, value)) = self.editing.as_mut() {
            match input {
                Input::Char(c) if !c.is_control() => value.push(c),
                Input::Chars(s) => value.extend(s.chars().filter(|c| !c.is_control())),
                Input::Backspace => {
                    value.pop();
                }
                Input::Escape => self.editing = None,
                Input::Enter => {
                    let n = *n;
                    let v = value.trim().to_owned();
                    let label = (!v.is_empty()).then_some(v);
                    self.editing = None;
                    self.nodes[n].label = label.clone();
                    if self.mode == FilterMode::LabeledOnly || !self.query.is_empty() {
                        self.refilter();
                    }
                    return Outcome::LabelChanged(self.nodes[n].id.clone(), label);
                }
                _ => {}
            }
            return Outcome::None;
        }
        let count = self.visible.len();
        match input {
            Input::Up if count > 0 => self.move_to(if self.selected == 0 { count - 1 } else { self.selected - 1 }),
            Input::Down if count > 0 => self.move_to(if self.selected + 1 >= count { 0 } else { self.selected + 1 }),
            Input::FoldOrUp => self.fold_or_up(),
            Input::UnfoldOrDown => self.unfold_or_down(),
            Input::PageUp if count > 0 => self.move_to(self.selected.saturating_sub(self.page)),
            Input::PageDown if count > 0 => self.move_to((self.selected + self.page).min(count - 1)),
            Input::Home if count > 0 => self.move_to(0),
            Input::End if count > 0 => self.move_to(count - 1),
            Input::Enter => {
                if let Some(&n) = self.visible.get(self.selected) {
                    return Outcome::Select(self.nodes[n].id.clone());
                }
            }
            Input::Escape => {
                if self.query.is_empty() {
                    return Outcome::Cancel;
                }
                self.query.clear();
                self.folded.clear();
                self.refilter();
            }
            Input::FilterDefault => self.set_mode(FilterMode::Default),
            Input::ToggleFilter(m) => self.set_mode(if self.mode == m { FilterMode::Default } else { m }),
            Input::CycleFilter { forward } => self.set_mode(self.mode.step(forward)),
            Input::Backspace if !self.query.is_empty() => {
                self.query.pop();
                self.folded.clear();
                self.refilter();
            }
            Input::Char('L') if self.query.is_empty() => {
                if let Some(&n) = self.visible.get(self.selected) {
                    self.editing = Some((n, self.nodes[n].label.clone().unwrap_or_default()));
                }
            }
            Input::Char(c) if !c.is_control() => {
                self.query.push(c);
                self.folded.clear();
                self.refilter();
            }
            Input::Chars(s) => {
                for c in s.chars() {
                    match self.handle(Input::Char(c)) {
                        Outcome::None => {}
                        other => return other,
                    }
                }
            }
            _ => {}
        }
        Outcome::None
    }
}

fn children_of(nodes: &[Node], visible: &[usize]) -> HashMap<usize, Vec<usize>> {
    let mut kids: HashMap<usize, Vec<usize>> = HashMap::new();
    for &n in visible {
        if let Some(p) = nodes[n].parent {
            kids.entry(p).or_default().push(n);
        }
    }
    kids
}
