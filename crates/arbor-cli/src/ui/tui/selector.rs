//! The tree selector as a pure state machine (docs/cli.md, "arbor tui"): flattening, the active
//! path, filters and search, folding, selection and label editing. It knows
//! nothing about terminals: inputs are [`Input`] values, results are [`Outcome`]s,
//! and the view reads the state through [`TreeSelector::rows`] and friends.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use arbor_log::{content_text, Role};
use arbor_log::{Entry, EntryKind, EntryType};
use arbor_tree::{Position, Session};

use arbor_context::render::{entry_text, ToolCalls};

use crate::shared::layout::{active_path, layout, layout_tree};

/// Which entries the list shows (docs/cli.md, "arbor tui").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FilterMode {
    /// Everything but settings entries.
    #[default]
    Default,
    /// Default minus tool results.
    NoTools,
    /// Only user messages.
    UserOnly,
    /// Only labelled entries.
    LabeledOnly,
    /// Every entry.
    All,
}

impl FilterMode {
    const CYCLE: [FilterMode; 5] =
        [FilterMode::Default, FilterMode::NoTools, FilterMode::UserOnly, FilterMode::LabeledOnly, FilterMode::All];

    /// The footer suffix naming the mode.
    pub fn footer_label(self) -> &'static str {
        match self {
            FilterMode::Default => "",
            FilterMode::NoTools => " [no-tools]",
            FilterMode::UserOnly => " [user]",
            FilterMode::LabeledOnly => " [labeled]",
            FilterMode::All => " [all]",
        }
    }

    fn step(self, forward: bool) -> FilterMode {
        let i = Self::CYCLE.iter().position(|m| *m == self).unwrap_or(0);
        let n = Self::CYCLE.len();
        Self::CYCLE[if forward { (i + 1) % n } else { (i + n - 1) % n }]
    }
}

/// One user input, already decoded from the terminal (docs/cli.md, "arbor tui").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// ↑: previous row, wrapping.
    Up,
    /// ↓: next row, wrapping.
    Down,
    /// Ctrl+← or Alt+←: fold, or jump to the start of the branch segment.
    FoldOrUp,
    /// Ctrl+→ or Alt+→: unfold, or jump to the end of the segment.
    UnfoldOrDown,
    /// ←, Ctrl+B, PageUp.
    PageUp,
    /// →, Ctrl+F, PageDown.
    PageDown,
    /// Home: the first row.
    Home,
    /// End: the last row.
    End,
    /// Enter.
    Enter,
    /// Escape or Ctrl+C.
    Escape,
    /// Ctrl+D: the default filter.
    FilterDefault,
    /// Ctrl+T / Ctrl+U / Ctrl+L / Ctrl+A: toggle this mode against the default.
    ToggleFilter(FilterMode),
    /// Ctrl+O (forwards) or Shift+Ctrl+O (backwards).
    CycleFilter {
        /// Direction of the cycle.
        forward: bool,
    },
    /// Backspace.
    Backspace,
    /// A printable character (Shift+L arrives as `Char('L')`).
    Char(char),
}

/// What an input asks the caller to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing beyond the new state.
    None,
    /// The user chose this entry.
    Select(String),
    /// The user closed the selector.
    Cancel,
    /// The user set (`Some`) or cleared (`None`) the label of an entry.
    LabelChanged(String, Option<String>),
}

/// The label editor shown in place of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelEdit {
    /// The entry being labelled.
    pub id: String,
    /// The text typed so far (pre-filled with the current label).
    pub value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Settings,
    ToolResult,
    User,
    Other,
}

#[derive(Debug, Clone)]
struct Node {
    id: String,
    /// Real parent (index into `nodes`).
    parent: Option<usize>,
    class: Class,
    always_hidden: bool,
    label: Option<String>,
    text: String,
    /// Lower-cased searchable text without the label.
    search: String,
}

/// One visible row, as the view draws it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisibleRow {
    /// The entry id.
    pub id: String,
    /// Connector and gutter prefix, fold glyph included.
    pub prefix: String,
    /// `⊞ ` for a folded row without a connector, else empty.
    pub fold_marker: &'static str,
    /// On the active path.
    pub active: bool,
    /// The resolved label.
    pub label: Option<String>,
    /// The entry's one-line text.
    pub text: String,
    /// The cursor is on this row.
    pub selected: bool,
}

/// The selector state (pi's `TreeSelectorComponent`).
#[derive(Debug, Clone)]
pub struct TreeSelector {
    nodes: Vec<Node>,
    by_id: HashMap<String, usize>,
    active: HashSet<usize>,
    multiple_roots: bool,
    leaf: Option<usize>,
    mode: FilterMode,
    query: String,
    folded: HashSet<usize>,
    visible: Vec<usize>,
    /// Node → its index in `visible`.
    visible_pos: HashMap<usize, usize>,
    prefixes: Vec<(String, Option<usize>)>,
    visible_parent: HashMap<usize, usize>,
    visible_children: HashMap<usize, Vec<usize>>,
    selected: usize,
    last_selected: Option<usize>,
    max_visible: usize,
    label_edit: Option<LabelEdit>,
}

fn assistant_always_hidden(entry: &Entry, is_leaf: bool) -> bool {
    let Some(m) = entry.message() else { return false };
    if m.role() != Some(Role::Assistant) || is_leaf {
        return false;
    }
    let has_text = match m.message.get("content") {
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Array(blocks)) => blocks.iter().any(|b| {
            b.get("type").and_then(Value::as_str) == Some("text")
                && b.get("text").and_then(Value::as_str).is_some_and(|t| !t.trim().is_empty())
        }),
        _ => false,
    };
    if has_text {
        return false;
    }
    let stop = m.message.get("stopReason").and_then(Value::as_str);
    !matches!(stop, Some(r) if r != "stop" && r != "toolUse")
}

fn class_of(entry: &Entry) -> Class {
    match &entry.kind {
        EntryKind::Label(_) | EntryKind::Custom(_) | EntryKind::ModelChange(_) | EntryKind::ThinkingLevelChange(_) => {
            Class::Settings
        }
        EntryKind::Message(m) => match m.role() {
            Some(Role::ToolResult) => Class::ToolResult,
            Some(Role::User) => Class::User,
            Some(
                Role::Assistant
                | Role::BashExecution
                | Role::Custom
                | Role::BranchSummary
                | Role::CompactionSummary
                | Role::HookMessage
                | Role::Developer
                | Role::Other(_),
            )
            | None => Class::Other,
        },
        EntryKind::Compaction(_)
        | EntryKind::BranchSummary(_)
        | EntryKind::CustomMessage(_)
        | EntryKind::SessionInfo(_)
        | EntryKind::TtsrInjection(_)
        | EntryKind::ModeChange(_)
        | EntryKind::Unknown { .. }
        | EntryKind::Malformed { .. } => Class::Other,
    }
}

/// pi's `searchableText` without the label.
fn searchable(entry: &Entry) -> String {
    let parts: Vec<String> = match &entry.kind {
        EntryKind::Message(m) => {
            let mut p = vec![m.role().as_ref().map_or("", Role::as_str).to_owned()];
            let text: String = content_text(m.message.get("content"), "").chars().take(200).collect();
            p.push(text);
            if m.role() == Some(Role::BashExecution) {
                p.push(m.message.get("command").and_then(Value::as_str).unwrap_or("").to_owned());
            }
            p
        }
        EntryKind::CustomMessage(c) => vec![c.custom_type.clone(), content_text(c.content.as_ref(), "")],
        EntryKind::Compaction(_) => vec![EntryType::Compaction.as_str().into()],
        EntryKind::BranchSummary(b) => vec!["branch summary".into(), b.summary.clone()],
        EntryKind::ModelChange(m) => {
            vec!["model".into(), m.model_text().unwrap_or_default().to_owned()]
        }
        EntryKind::ThinkingLevelChange(t) => {
            vec!["thinking".into(), t.level().unwrap_or_default().to_owned()]
        }
        EntryKind::Custom(c) => vec![EntryType::Custom.as_str().into(), c.custom_type.clone()],
        EntryKind::Label(l) => vec![EntryType::Label.as_str().into(), l.text().unwrap_or_default()],
        EntryKind::SessionInfo(_)
        | EntryKind::TtsrInjection(_)
        | EntryKind::ModeChange(_)
        | EntryKind::Unknown { .. }
        | EntryKind::Malformed { .. } => vec![],
    };
    parts.join(" ").to_lowercase()
}

impl TreeSelector {
    /// Builds the selector over a session's tree (docs/cli.md, "arbor tui"): the leaf is the
    /// session's, the selection starts at `initial` (or the leaf).
    pub fn new(
        session: &Session,
        terminal_height: u16,
        initial: Option<&str>,
        mode: FilterMode,
        home: Option<&str>,
    ) -> TreeSelector {
        let tree = session.get_tree();
        let active_sessions = active_path(session);
        let order = layout_tree(&tree, &active_sessions);
        let leaf_index = session.leaf_id().and_then(|id| session.position_of(id)).map(Position::get);
        let pos: HashMap<usize, usize> = order.iter().enumerate().map(|(k, r)| (r.index, k)).collect();
        // Parents as the tree has them: a cycle in the file is already broken there.
        let tree_parent: HashMap<usize, usize> = order
            .iter()
            .flat_map(|r| tree.child_positions(Position::new(r.index)).iter().map(move |c| (c.get(), r.index)))
            .collect();
        let mut calls = ToolCalls::new();
        let mut nodes = Vec::with_capacity(order.len());
        for row in &order {
            let Some(e) = session.entry_at(Position::new(row.index)) else { continue };
            calls.record(e);
            let parent = tree_parent.get(&row.index).and_then(|p| pos.get(p).copied());
            nodes.push(Node {
                id: e.id.clone(),
                parent,
                class: class_of(e),
                always_hidden: assistant_always_hidden(e, Some(row.index) == leaf_index),
                label: session.get_label(&e.id).map(str::to_owned),
                text: String::new(),
                search: searchable(e),
            });
        }
        // Texts need every tool call seen while flattening (pi records them as it goes).
        for (node, row) in nodes.iter_mut().zip(&order) {
            if let Some(e) = session.entry_at(Position::new(row.index)) {
                node.text = entry_text(e, &calls, home);
            }
        }
        let by_id: HashMap<String, usize> = nodes.iter().enumerate().map(|(k, n)| (n.id.clone(), k)).collect();
        let leaf = leaf_index.and_then(|i| pos.get(&i).copied());
        let mut active = HashSet::new();
        let mut cur = leaf;
        while let Some(c) = cur {
            if !active.insert(c) {
                break;
            }
            cur = nodes[c].parent;
        }
        let mut sel = TreeSelector {
            nodes,
            by_id,
            active,
            multiple_roots: tree.root_positions().len() > 1,
            leaf,
            mode,
            query: String::new(),
            folded: HashSet::new(),
            visible: vec![],
            visible_pos: HashMap::new(),
            prefixes: vec![],
            visible_parent: HashMap::new(),
            visible_children: HashMap::new(),
            selected: 0,
            last_selected: None,
            max_visible: 0,
            label_edit: None,
        };
        sel.set_terminal_height(terminal_height);
        sel.recompute();
        let start = initial.and_then(|id| sel.by_id.get(id).copied()).or(leaf);
        sel.selected = sel.nearest_visible(start);
        sel.last_selected = sel.visible.get(sel.selected).copied();
        sel
    }

    #[cfg(test)]
    /// Rows shown per page (`max(5, floor(height / 2))`).
    pub fn max_visible(&self) -> usize {
        self.max_visible
    }

    /// The current filter mode.
    pub fn mode(&self) -> FilterMode {
        self.mode
    }

    /// The search query.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// The label editor, while it is open.
    pub fn label_edit(&self) -> Option<&LabelEdit> {
        self.label_edit.as_ref()
    }

    #[cfg(test)]
    /// True when the tree had more than one root.
    pub fn has_multiple_roots(&self) -> bool {
        self.multiple_roots
    }

    /// The id of the selected entry (`None` when the list is empty).
    pub fn selected_id(&self) -> Option<&str> {
        self.visible.get(self.selected).map(|&n| self.nodes[n].id.as_str())
    }

    /// The number of visible rows.
    pub fn visible_len(&self) -> usize {
        self.visible.len()
    }

    /// The footer: `  (i/n)` and the filter label.
    pub fn footer(&self) -> String {
        if self.visible.is_empty() {
            format!("  (0/0){}", self.mode.footer_label())
        } else {
            format!("  ({}/{}){}", self.selected + 1, self.visible.len(), self.mode.footer_label())
        }
    }

    /// The visible rows between `start` and `end` (indexes into the visible list).
    pub fn rows(&self, start: usize, end: usize) -> Vec<VisibleRow> {
        let end = end.min(self.visible.len());
        (start.min(end)..end)
            .map(|k| {
                let n = self.visible[k];
                let node = &self.nodes[n];
                let (prefix, connector_at) = &self.prefixes[k];
                let folded = self.folded.contains(&n);
                let mut prefix = prefix.clone();
                let mut fold_marker = "";
                match connector_at {
                    Some(level) => {
                        let glyph = if folded {
                            Some('⊞')
                        } else if self.is_foldable(n) {
                            Some('⊟')
                        } else {
                            None
                        };
                        if let Some(g) = glyph {
                            prefix = prefix
                                .chars()
                                .enumerate()
                                .map(|(i, c)| if i == 3 * level + 1 { g } else { c })
                                .collect();
                        }
                    }
                    None if folded => fold_marker = "⊞ ",
                    None => {}
                }
                VisibleRow {
                    id: node.id.clone(),
                    prefix,
                    fold_marker,
                    active: self.active.contains(&n),
                    label: node.label.clone(),
                    text: node.text.clone(),
                    selected: k == self.selected,
                }
            })
            .collect()
    }

    /// The scroll window `(start, end)` of pi's list (docs/cli.md, "arbor tui").
    pub fn window(&self) -> (usize, usize) {
        let count = self.visible.len();
        let max = self.max_visible;
        let start = self.selected.saturating_sub(max / 2).min(count.saturating_sub(max));
        (start, (start + max).min(count))
    }

    /// Follows a terminal resize: the page size is `max(5, floor(height / 2))`.
    pub fn set_terminal_height(&mut self, height: u16) {
        self.max_visible = usize::max(5, usize::from(height) / 2);
    }

    /// Updates the label of an entry in the UI (after the caller persisted it).
    pub fn set_label(&mut self, id: &str, label: Option<String>) {
        if let Some(&n) = self.by_id.get(id) {
            self.nodes[n].label = label;
            if self.mode == FilterMode::LabeledOnly || !self.query.is_empty() {
                self.refilter();
            }
        }
    }

    fn matches_filter(&self, n: usize) -> bool {
        let node = &self.nodes[n];
        if node.always_hidden {
            return false;
        }
        match self.mode {
            FilterMode::Default => node.class != Class::Settings,
            FilterMode::NoTools => node.class != Class::Settings && node.class != Class::ToolResult,
            FilterMode::UserOnly => node.class == Class::User,
            FilterMode::LabeledOnly => node.label.is_some(),
            FilterMode::All => true,
        }
    }

    fn matches_search(&self, n: usize, tokens: &[String]) -> bool {
        if tokens.is_empty() {
            return true;
        }
        let node = &self.nodes[n];
        let text = match &node.label {
            Some(l) => format!("{} {}", l.to_lowercase(), node.search),
            None => node.search.clone(),
        };
        tokens.iter().all(|t| text.contains(t.as_str()))
    }

    fn under_fold(&self, n: usize) -> bool {
        if self.folded.is_empty() {
            return false;
        }
        let mut seen = 0;
        let mut cur = self.nodes[n].parent;
        while let Some(p) = cur {
            if self.folded.contains(&p) {
                return true;
            }
            seen += 1;
            if seen > self.nodes.len() {
                break;
            }
            cur = self.nodes[p].parent;
        }
        false
    }

    /// Filter, search, fold, then rebuild the visual structure (docs/cli.md, "arbor tui").
    fn recompute(&mut self) {
        let tokens: Vec<String> = self.query.to_lowercase().split_whitespace().map(str::to_owned).collect();
        let visible: Vec<usize> = (0..self.nodes.len())
            .filter(|&n| self.matches_filter(n) && self.matches_search(n, &tokens) && !self.under_fold(n))
            .collect();
        let set: HashSet<usize> = visible.iter().copied().collect();
        let mut visible_parent = HashMap::new();
        let mut visible_children: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut roots = vec![];
        for &n in &visible {
            let mut cur = self.nodes[n].parent;
            let mut steps = 0;
            while let Some(p) = cur {
                if set.contains(&p) || steps > self.nodes.len() {
                    break;
                }
                steps += 1;
                cur = self.nodes[p].parent;
            }
            match cur.filter(|p| set.contains(p)) {
                Some(p) => {
                    visible_parent.insert(n, p);
                    visible_children.entry(p).or_default().push(n);
                }
                None => roots.push(n),
            }
        }
        self.multiple_roots = roots.len() > 1;
        let rows = layout(&roots, &|n| visible_children.get(&n).cloned().unwrap_or_default(), &self.active);
        self.visible = rows.iter().map(|r| r.index).collect();
        self.visible_pos = self.visible.iter().enumerate().map(|(k, &n)| (n, k)).collect();
        self.prefixes = rows.into_iter().map(|r| (r.prefix, r.connector_at)).collect();
        self.visible_parent = visible_parent;
        self.visible_children = visible_children;
    }

    /// Re-filters and restores the selection (docs/cli.md, "arbor tui").
    fn refilter(&mut self) {
        if let Some(&n) = self.visible.get(self.selected) {
            self.last_selected = Some(n);
        }
        self.recompute();
        match self.last_selected {
            Some(n) => self.selected = self.nearest_visible(Some(n)),
            None => self.selected = self.selected.min(self.visible.len().saturating_sub(1)),
        }
        if let Some(&n) = self.visible.get(self.selected) {
            self.last_selected = Some(n);
        }
    }

    fn nearest_visible(&self, from: Option<usize>) -> usize {
        if self.visible.is_empty() {
            return 0;
        }
        let mut cur = from;
        let mut steps = 0;
        while let Some(n) = cur {
            if let Some(&k) = self.visible_pos.get(&n) {
                return k;
            }
            steps += 1;
            if steps > self.nodes.len() {
                break;
            }
            cur = self.nodes[n].parent;
        }
        self.visible.len() - 1
    }

    fn is_foldable(&self, n: usize) -> bool {
        let has_children = self.visible_children.get(&n).is_some_and(|c| !c.is_empty());
        has_children
            && match self.visible_parent.get(&n) {
                None => true,
                Some(p) => self.visible_children.get(p).is_some_and(|c| c.len() > 1),
            }
    }

    fn select_node(&mut self, n: usize) {
        if let Some(&k) = self.visible_pos.get(&n) {
            self.selected = k;
            self.last_selected = Some(n);
        }
    }

    fn clear_folds_and_refilter(&mut self) {
        self.folded.clear();
        self.refilter();
    }

    fn set_mode(&mut self, mode: FilterMode) {
        self.mode = mode;
        self.clear_folds_and_refilter();
    }

    fn fold_or_up(&mut self) {
        let Some(&n) = self.visible.get(self.selected) else { return };
        if self.is_foldable(n) && !self.folded.contains(&n) {
            self.folded.insert(n);
            self.refilter();
            return;
        }
        let mut cur = n;
        loop {
            match self.visible_parent.get(&cur).copied() {
                None => {
                    self.select_node(cur);
                    return;
                }
                Some(p) => {
                    let branching = self.visible_children.get(&p).is_some_and(|c| c.len() > 1);
                    let idx = self.visible_pos.get(&cur).copied().unwrap_or(usize::MAX);
                    if branching && idx < self.selected {
                        self.select_node(cur);
                        return;
                    }
                    cur = p;
                }
            }
        }
    }

    fn unfold_or_down(&mut self) {
        let Some(&n) = self.visible.get(self.selected) else { return };
        if self.folded.remove(&n) {
            self.refilter();
            return;
        }
        let mut cur = n;
        for _ in 0..=self.nodes.len() {
            match self.visible_children.get(&cur).map(Vec::as_slice) {
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

    fn move_to(&mut self, k: usize) {
        self.selected = k;
        if let Some(&n) = self.visible.get(k) {
            self.last_selected = Some(n);
        }
    }

    /// Applies one input (docs/cli.md, "arbor tui") and says what the caller should do.
    pub fn handle(&mut self, input: Input) -> Outcome {
        if self.label_edit.is_some() {
            return self.handle_label(input);
        }
        let count = self.visible.len();
        match input {
            Input::Up if count > 0 => self.move_to(if self.selected == 0 { count - 1 } else { self.selected - 1 }),
            Input::Down if count > 0 => self.move_to(if self.selected + 1 >= count { 0 } else { self.selected + 1 }),
            Input::FoldOrUp => self.fold_or_up(),
            Input::UnfoldOrDown => self.unfold_or_down(),
            Input::PageUp if count > 0 => self.move_to(self.selected.saturating_sub(self.max_visible)),
            Input::PageDown if count > 0 => self.move_to((self.selected + self.max_visible).min(count - 1)),
            Input::Home if count > 0 => self.move_to(0),
            Input::End if count > 0 => self.move_to(count - 1),
            Input::Enter => {
                if let Some(id) = self.selected_id() {
                    return Outcome::Select(id.to_owned());
                }
            }
            Input::Escape => {
                if self.query.is_empty() {
                    return Outcome::Cancel;
                }
                self.query.clear();
                self.clear_folds_and_refilter();
            }
            Input::FilterDefault => self.set_mode(FilterMode::Default),
            Input::ToggleFilter(m) => {
                self.set_mode(if self.mode == m { FilterMode::Default } else { m });
            }
            Input::CycleFilter { forward } => self.set_mode(self.mode.step(forward)),
            Input::Backspace if !self.query.is_empty() => {
                self.query.pop();
                self.clear_folds_and_refilter();
            }
            Input::Char('L') if self.query.is_empty() => {
                if let Some(&n) = self.visible.get(self.selected) {
                    let node = &self.nodes[n];
                    self.label_edit =
                        Some(LabelEdit { id: node.id.clone(), value: node.label.clone().unwrap_or_default() });
                }
            }
            Input::Char(c) if !c.is_control() => {
                self.query.push(c);
                self.clear_folds_and_refilter();
            }
            _ => {}
        }
        Outcome::None
    }

    fn handle_label(&mut self, input: Input) -> Outcome {
        let Some(edit) = self.label_edit.as_mut() else { return Outcome::None };
        match input {
            Input::Char(c) if !c.is_control() => edit.value.push(c),
            Input::Backspace => {
                edit.value.pop();
            }
            Input::Escape => self.label_edit = None,
            Input::Enter => {
                let id = edit.id.clone();
                let value = edit.value.trim().to_owned();
                let label = (!value.is_empty()).then_some(value);
                self.label_edit = None;
                self.set_label(&id, label.clone());
                return Outcome::LabelChanged(id, label);
            }
            _ => {}
        }
        Outcome::None
    }

    /// True when `id` is the leaf the selector was opened with.
    pub fn is_leaf(&self, id: &str) -> bool {
        self.leaf.is_some_and(|l| self.nodes[l].id == id)
    }
}

#[cfg(test)]
pub(crate) mod tests;
