//! The tree selector as a pure state machine (docs/cli.md, "arbor tui"): the active path,
//! filters and search, folding, selection and label editing over a session's
//! tree. It knows nothing about terminals or files: inputs are [`Input`]
//! values, results are [`Outcome`]s, and the view reads the state through
//! [`TreeSelector::rows`] and friends.
//!
//! It is built for any size (docs/cli.md, "The tree selector"). It opens from
//! the session's heads alone ([`SelectorData`]); what needs an entry's
//! content arrives later from the caller ([`TreeSelector::classify`],
//! [`TreeSelector::add_text`], [`TreeSelector::set_row_text`]), so the first
//! screen does not wait for a million entries to be read. Each change of
//! filter or search recomputes the visible rows in one pass over flat arrays
//! ([`Visible`], [`Layout`]), in place, except that each mode's list with no
//! search and no folds is kept once made and swapped back in ([`kept`]); a fold cuts its subtree's rows out
//! and an unfold puts back the rows before that fold or makes only its
//! subtree's rows (tests: the same as a recompute); a row's prefix and text
//! are made only when it is drawn; a search keystroke narrows the last
//! answer ([`search::Search`]).

mod data;
mod kept;
mod search;

use std::collections::HashMap;

pub use data::SelectorData;
use kept::{Kept, List};
use search::{tokens, Bits, Search};

pub use crate::shared::filter::FilterMode;
use crate::shared::forest::Visible;
use crate::shared::layout::{level_budget, Layout, Style};

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
    /// Several printable characters typed before the list could answer the
    /// first (type-ahead): the same as each as a [`Input::Char`], answered once.
    Chars(String),
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
    /// The entry's row as the list showed it.
    pub text: String,
    /// The text typed so far (pre-filled with the current label).
    pub value: String,
    node: u32,
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
    data: SelectorData,
    search: Search,
    mode: FilterMode,
    query: String,
    /// The folded entries (display indexes), ascending.
    folded: Vec<u32>,
    width: usize,
    page: usize,
    vis: Visible,
    layout: Layout,
    /// The rows and layout before the last fold (of this entry), while
    /// nothing else changed, and the mode whose clean list they are (see `clean`).
    undo: Option<(u32, Visible, Layout, Option<FilterMode>)>,
    /// The mode whose list with no search and no folds `vis` and `layout`
    /// hold, as fresh as a recompute's; `None` when they hold another list.
    clean: Option<FilterMode>,
    /// The clean lists of other modes, kept once made ([`kept`]).
    kept: Kept,
    /// The buffers of a list no longer needed, for the next recompute.
    spare: Option<List>,
    /// The selected row (an index into the visible rows).
    selected: u32,
    /// The last entry selected (a display index), kept across filters.
    last_selected: Option<u32>,
    label_edit: Option<LabelEdit>,
    /// The text of rows drawn so far, by display index.
    texts: HashMap<u32, String>,
}

impl TreeSelector {
    /// A selector over `data`, `page` rows high and `width` columns wide, on
    /// the first of `initial` (display indexes; the leaf when empty) that is
    /// visible or has a visible ancestor (pi's `nearestVisible`, which takes
    /// the last row when none has).
    pub fn new(data: SelectorData, page: usize, width: usize, initial: &[u32], mode: FilterMode) -> TreeSelector {
        let n = data.len();
        let mut sel = TreeSelector {
            data,
            search: Search::new(n),
            mode,
            query: String::new(),
            folded: Vec::new(),
            width,
            page: page.max(1),
            vis: Visible::default(),
            layout: Layout::default(),
            undo: None,
            clean: None,
            kept: Kept::default(),
            spare: None,
            selected: 0,
            last_selected: None,
            label_edit: None,
            texts: HashMap::new(),
        };
        sel.recompute();
        let leaf = sel.data.forest.leaf();
        let candidates: Vec<Option<u32>> =
            if initial.is_empty() { vec![leaf] } else { initial.iter().map(|&k| Some(k)).collect() };
        let found = candidates.iter().find_map(|&k| sel.visible_self_or_ancestor(k));
        sel.selected = found.unwrap_or_else(|| sel.nearest_visible(candidates[0]));
        sel.last_selected = sel.node_at(sel.selected);
        sel
    }

    /// The data the selector was opened on.
    pub fn data(&self) -> &SelectorData {
        &self.data
    }

    /// Rows per page.
    #[cfg(test)]
    pub fn page(&self) -> usize {
        self.page
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

    /// True when the visible tree has more than one root.
    #[cfg(test)]
    pub fn has_multiple_roots(&self) -> bool {
        self.vis.roots() > 1
    }

    /// The display index of the visible row `v`.
    fn node_at(&self, v: u32) -> Option<u32> {
        ((v as usize) < self.vis.len()).then(|| self.vis.node(v))
    }

    /// The id of the selected entry (`None` when the list is empty).
    pub fn selected_id(&self) -> Option<&str> {
        self.node_at(self.selected).map(|k| self.data.ids[k as usize].as_str())
    }

    /// The number of visible rows.
    pub fn visible_len(&self) -> usize {
        self.vis.len()
    }

    /// The footer: `  (i/n)` and the filter label.
    pub fn footer(&self) -> String {
        if self.vis.is_empty() {
            format!("  (0/0){}", self.mode.footer_label())
        } else {
            format!("  ({}/{}){}", self.selected + 1, self.vis.len(), self.mode.footer_label())
        }
    }

    /// While the entries' contents are still being read: how many of how
    /// many are (the list and its count may still change; a search waits).
    pub fn reading(&self) -> Option<(usize, usize)> {
        let index = self.search.index();
        (!index.is_complete()).then(|| (index.filled(), self.data.len()))
    }

    /// True when a search is typed but waits for the entries' texts.
    pub fn search_waits(&self) -> bool {
        !self.query.trim().is_empty() && !self.search.index().is_complete()
    }

    /// The scroll window `(start, end)` (docs/cli.md, "arbor tui", with a page of the list's own height).
    pub fn window(&self) -> (usize, usize) {
        let count = self.vis.len();
        let max = self.page;
        let start = (self.selected as usize).saturating_sub(max / 2).min(count.saturating_sub(max));
        (start, (start + max).min(count))
    }

    /// Follows a resize: `page` rows fit in the list, `width` columns in a row.
    pub fn set_size(&mut self, page: usize, width: usize) {
        self.page = page.max(1);
        if width != self.width {
            self.width = width;
            // Every kept layout was made for the old width; the current list stays clean.
            self.kept.clear();
            self.undo = None;
            self.layout.rebuild(&self.data.forest, &self.vis, self.style(), level_budget(self.width));
        }
    }

    fn style(&self) -> Style {
        if self.data.pi_depth as usize <= level_budget(self.width) {
            Style::Pi
        } else {
            Style::Compact
        }
    }

    /// The display indexes of the rows in the window and half a page around
    /// it: what a draw needs (its texts) or should know (unknown kinds).
    pub fn around_window(&self) -> Vec<u32> {
        let (start, end) = self.window();
        let margin = self.page / 2;
        let (lo, hi) = (start.saturating_sub(margin), (end + margin).min(self.vis.len()));
        (lo..hi).map(|v| self.vis.node(v as u32)).collect()
    }

    /// The visible rows between `start` and `end` (indexes into the visible list).
    pub fn rows(&self, start: usize, end: usize) -> Vec<VisibleRow> {
        let end = end.min(self.vis.len());
        (start.min(end)..end)
            .map(|v| {
                let v = v as u32;
                let k = self.vis.node(v);
                let folded = self.is_folded(k);
                let p = self.layout.prefix(&self.vis, v);
                let glyph = if folded {
                    Some('⊞')
                } else if self.is_foldable(v) {
                    Some('⊟')
                } else {
                    None
                };
                let prefix = match (p.glyph_at, glyph) {
                    (Some(at), Some(g)) => {
                        p.text.chars().enumerate().map(|(i, c)| if i == at { g } else { c }).collect()
                    }
                    _ => p.text,
                };
                VisibleRow {
                    id: self.data.ids[k as usize].to_string(),
                    prefix,
                    fold_marker: if folded && p.glyph_at.is_none() { "⊞ " } else { "" },
                    active: self.data.forest.is_active(k),
                    label: self.data.labels.get(&k).cloned(),
                    text: self.texts.get(&k).cloned().unwrap_or_default(),
                    selected: v == self.selected,
                }
            })
            .collect()
    }

    /// Records whether assistant entry `k` is one pi always hides; true when
    /// that is news. The rows are recomputed by [`TreeSelector::refresh`].
    pub fn classify(&mut self, k: u32, hidden: bool) -> bool {
        let news = self.data.classify(k, hidden);
        if news && hidden {
            // Every list may have shown it (an entry not yet known is shown).
            self.kept.clear();
            self.clean = None;
            if let Some(undo) = &mut self.undo {
                undo.3 = None;
            }
        }
        news
    }

    /// Once every entry is read: makes the clean list (no search, no folds)
    /// of one more filter mode and keeps it, so that switching to it is a
    /// swap; then spare buffers for a whole list, so that the first search
    /// keystroke does not wait for fresh memory. False when there is
    /// nothing left to make (nothing was done).
    pub fn warm(&mut self) -> bool {
        let (style, budget) = (self.style(), level_budget(self.width));
        match self.to_warm() {
            None => return false,
            Some(Some(mode)) => {
                self.kept.put(mode, compute(&self.data, mode, None, &[], style, budget, List::default()))
            }
            Some(None) => {
                self.spare = Some(compute(&self.data, FilterMode::All, None, &[], style, budget, List::default()));
            }
        }
        true
    }

    /// What [`TreeSelector::warm`] would make: a mode's list, or (`Some(None)`) the spare buffers.
    fn to_warm(&self) -> Option<Option<FilterMode>> {
        if !self.search.index().is_complete() {
            return None;
        }
        let undone = self.undo.as_ref().and_then(|u| u.3);
        match FilterMode::CYCLE.into_iter().find(|&m| self.clean != Some(m) && undone != Some(m) && !self.kept.has(m)) {
            Some(m) => Some(Some(m)),
            None => self.spare.is_none().then_some(None),
        }
    }

    /// True when [`TreeSelector::warm`] has a list left to make.
    pub fn wants_warm(&self) -> bool {
        self.to_warm().is_some()
    }

    /// Adds the searchable text of the next entry in display order; when the
    /// last one arrives, a waiting search is answered.
    pub fn add_text(&mut self, text: &str) {
        self.search.push(text);
        if self.search.index().is_complete() && !tokens(&self.query).is_empty() {
            self.refilter();
        }
    }

    /// The text row `k` shows.
    pub fn set_row_text(&mut self, k: u32, text: String) {
        self.texts.insert(k, text);
    }

    /// True when row `k`'s text is known.
    pub fn has_row_text(&self, k: u32) -> bool {
        self.texts.contains_key(&k)
    }

    /// Forgets the rows' texts (they are made again when drawn).
    pub fn clear_row_texts(&mut self) {
        self.texts.clear();
    }

    /// Recomputes the rows after [`TreeSelector::classify`], keeping the selection.
    pub fn refresh(&mut self) {
        self.refilter();
    }

    fn set_label_at(&mut self, k: u32, label: Option<String>) {
        // Only the labeled-only list depends on labels.
        self.kept.forget(FilterMode::LabeledOnly);
        if self.clean == Some(FilterMode::LabeledOnly) {
            self.clean = None;
        }
        if let Some(undo) = self.undo.as_mut().filter(|u| u.3 == Some(FilterMode::LabeledOnly)) {
            undo.3 = None;
        }
        match label {
            Some(l) => self.data.labels.insert(k, l),
            None => self.data.labels.remove(&k),
        };
        if self.mode == FilterMode::LabeledOnly || !self.query.is_empty() {
            self.refilter();
        }
    }

    /// Filter, search, fold, then rebuild the visual structure (docs/cli.md,
    /// "arbor tui"). A list with no search and no folds is kept when left
    /// and swapped back in when wanted again ([`kept`]).
    fn recompute(&mut self) {
        self.drop_undo();
        let target = self.clean_target();
        if target.is_some() && self.clean == target {
            return;
        }
        let old = (std::mem::take(&mut self.vis), std::mem::take(&mut self.layout));
        // The buffers to compute in: the spare ones when the old list is kept, else the old list's.
        let buffers = match self.clean.take() {
            Some(m) => {
                self.kept.put(m, old);
                self.spare.take()
            }
            None => Some(old),
        };
        let list = match target.and_then(|m| self.kept.take(m)) {
            Some(list) => {
                if self.spare.is_none() {
                    self.spare = buffers;
                }
                list
            }
            None => {
                let matched = self.matched();
                let (style, budget) = (self.style(), level_budget(self.width));
                let into = buffers.unwrap_or_default();
                compute(&self.data, self.mode, matched.as_ref(), &self.folded, style, budget, into)
            }
        };
        (self.vis, self.layout) = list;
        self.clean = target;
    }

    /// The mode whose clean list the state shows: `None` with a search or a fold.
    fn clean_target(&self) -> Option<FilterMode> {
        (self.folded.is_empty() && tokens(&self.query).is_empty()).then_some(self.mode)
    }

    /// Forgets the state before the last fold, keeping it when it is a clean list.
    fn drop_undo(&mut self) {
        if let Some((_, vis, layout, Some(m))) = self.undo.take() {
            self.kept.put(m, (vis, layout));
        }
    }

    /// The entries the search leaves (`None`: no search). While the texts
    /// are still read, a search shows nothing yet.
    fn matched(&mut self) -> Option<Bits> {
        let toks = tokens(&self.query);
        (!toks.is_empty()).then(|| self.search.matches(&toks, &self.data.labels).unwrap_or_default())
    }

    /// True when entry `k` is folded.
    fn is_folded(&self, k: u32) -> bool {
        self.folded.binary_search(&k).is_ok()
    }

    /// Folds visible row `v` (its entry just joined `folded`): its subtree's
    /// rows go, nothing else changes (the same as a recompute; see the tests).
    fn fold_rows(&mut self, v: u32) {
        let k = self.vis.node(v);
        let w = self.vis.subtree_end(&self.data.forest, v);
        let vis = self.vis.fold(v, w);
        let layout = self.layout.fold(v, w);
        self.drop_undo();
        self.undo = Some((k, vis, layout, self.clean.take()));
    }

    /// Unfolds visible row `v` (its entry just left `folded`): back to the
    /// state before its fold if nothing changed since, else its subtree's
    /// rows computed and inserted (or, for a subtree of most entries, all
    /// rows recomputed in place, which costs less than inserting them).
    fn unfold_rows(&mut self, v: u32) {
        let k = self.vis.node(v);
        if let Some((_, vis, layout, clean)) = self.undo.take_if(|u| u.0 == k) {
            (self.vis, self.layout, self.clean) = (vis, layout, clean);
            return;
        }
        self.drop_undo();
        let forest = &self.data.forest;
        if (forest.end(k) - k) as usize * 2 > forest.len() {
            // The rows before `v` stay: the selection keeps its row.
            return self.recompute();
        }
        let matched = self.matched();
        let show = shows(&self.data, self.mode, matched.as_ref());
        let m = self.vis.unfold(&self.data.forest, v, show, &self.folded);
        let style = self.style();
        self.layout.unfold(&self.data.forest, &self.vis, style, v, m);
        // The same as a recompute's (the tests say so): clean when that was the last fold.
        self.clean = self.clean_target();
    }

    /// Re-filters and restores the selection (docs/cli.md, "arbor tui").
    fn refilter(&mut self) {
        if let Some(k) = self.node_at(self.selected) {
            self.last_selected = Some(k);
        }
        self.recompute();
        match self.last_selected {
            Some(k) => self.selected = self.nearest_visible(Some(k)),
            None => self.selected = self.selected.min((self.vis.len() as u32).saturating_sub(1)),
        }
        if let Some(k) = self.node_at(self.selected) {
            self.last_selected = Some(k);
        }
    }

    /// The visible row of `from` or of its nearest visible ancestor; the last row when none is.
    fn nearest_visible(&self, from: Option<u32>) -> u32 {
        if self.vis.is_empty() {
            return 0;
        }
        self.visible_self_or_ancestor(from).unwrap_or(self.vis.len() as u32 - 1)
    }

    fn visible_self_or_ancestor(&self, from: Option<u32>) -> Option<u32> {
        let mut cur = from;
        while let Some(k) = cur {
            if let Some(v) = self.vis.find(k) {
                return Some(v);
            }
            cur = self.data.forest.parent(k);
        }
        None
    }

    fn is_foldable(&self, v: u32) -> bool {
        self.vis.kids(v) > 0
            && match self.vis.parent(v) {
                None => true,
                Some(p) => self.vis.kids(p) > 1,
            }
    }

    fn select_row(&mut self, v: u32) {
        self.selected = v;
        self.last_selected = self.node_at(v);
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
        let Some(k) = self.node_at(self.selected) else { return };
        let v = self.selected;
        if self.is_foldable(v) && !self.is_folded(k) {
            if let Err(at) = self.folded.binary_search(&k) {
                self.folded.insert(at, k);
            }
            self.fold_rows(v);
            return;
        }
        let mut cur = v;
        loop {
            match self.vis.parent(cur) {
                None => return self.select_row(cur),
                Some(p) => {
                    if self.vis.kids(p) > 1 && cur < self.selected {
                        return self.select_row(cur);
                    }
                    cur = p;
                }
            }
        }
    }

    fn unfold_or_down(&mut self) {
        let Some(k) = self.node_at(self.selected) else { return };
        if let Ok(at) = self.folded.binary_search(&k) {
            self.folded.remove(at);
            self.unfold_rows(self.selected);
            return;
        }
        let mut cur = self.selected;
        loop {
            match self.vis.kids(cur) {
                0 => break,
                1 => cur += 1,
                _ => {
                    cur += 1;
                    break;
                }
            }
        }
        self.select_row(cur);
    }

    fn type_chars(&mut self, chars: &str) {
        self.query.push_str(chars);
        self.clear_folds_and_refilter();
    }

    /// Applies one input (docs/cli.md, "arbor tui") and says what the caller should do.
    pub fn handle(&mut self, input: Input) -> Outcome {
        if self.label_edit.is_some() {
            return self.handle_label(input);
        }
        let count = self.vis.len() as u32;
        let page = self.page as u32;
        match input {
            Input::Up if count > 0 => self.select_row(if self.selected == 0 { count - 1 } else { self.selected - 1 }),
            Input::Down if count > 0 => self.select_row(if self.selected + 1 >= count { 0 } else { self.selected + 1 }),
            Input::FoldOrUp => self.fold_or_up(),
            Input::UnfoldOrDown => self.unfold_or_down(),
            Input::PageUp if count > 0 => self.select_row(self.selected.saturating_sub(page)),
            Input::PageDown if count > 0 => self.select_row((self.selected + page).min(count - 1)),
            Input::Home if count > 0 => self.select_row(0),
            Input::End if count > 0 => self.select_row(count - 1),
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
            Input::ToggleFilter(m) => self.set_mode(if self.mode == m { FilterMode::Default } else { m }),
            Input::CycleFilter { forward } => self.set_mode(self.mode.step(forward)),
            Input::Backspace if !self.query.is_empty() => {
                self.query.pop();
                self.clear_folds_and_refilter();
            }
            Input::Char('L') if self.query.is_empty() => self.open_label_editor(),
            Input::Char(c) if !c.is_control() => self.type_chars(&c.to_string()),
            Input::Chars(s) => return self.handle_chars(&s),
            _ => {}
        }
        Outcome::None
    }

    /// Typed-ahead characters: each as a [`Input::Char`] would be, with one refilter.
    fn handle_chars(&mut self, s: &str) -> Outcome {
        let mut pending = String::new();
        for c in s.chars() {
            if self.label_edit.is_some() {
                self.handle_label(Input::Char(c));
                continue;
            }
            let special = self.query.is_empty() && pending.is_empty() && c == 'L';
            if special {
                match self.handle(Input::Char(c)) {
                    Outcome::None => continue,
                    other => return other,
                }
            }
            if !c.is_control() {
                pending.push(c);
            }
        }
        if !pending.is_empty() {
            self.type_chars(&pending);
        }
        Outcome::None
    }

    fn open_label_editor(&mut self) {
        if let Some(k) = self.node_at(self.selected) {
            self.label_edit = Some(LabelEdit {
                id: self.data.ids[k as usize].to_string(),
                text: self.texts.get(&k).cloned().unwrap_or_default(),
                value: self.data.labels.get(&k).cloned().unwrap_or_default(),
                node: k,
            });
        }
    }

    fn handle_label(&mut self, input: Input) -> Outcome {
        let Some(edit) = self.label_edit.as_mut() else { return Outcome::None };
        match input {
            Input::Char(c) if !c.is_control() => edit.value.push(c),
            Input::Chars(s) => edit.value.extend(s.chars().filter(|c| !c.is_control())),
            Input::Backspace => {
                edit.value.pop();
            }
            Input::Escape => self.label_edit = None,
            Input::Enter => {
                let (id, k) = (edit.id.clone(), edit.node);
                let value = edit.value.trim().to_owned();
                let label = (!value.is_empty()).then_some(value);
                self.label_edit = None;
                self.set_label_at(k, label.clone());
                return Outcome::LabelChanged(id, label);
            }
            _ => {}
        }
        Outcome::None
    }

    /// True when `id` is the leaf the selector was opened with.
    pub fn is_leaf(&self, id: &str) -> bool {
        self.data.forest.leaf().is_some_and(|l| self.data.ids[l as usize] == id)
    }
}

/// The list of `data` that `mode`, the search's answer `matched` and the
/// folds `folded` leave, made from scratch in the buffers of `into`.
fn compute(
    data: &SelectorData,
    mode: FilterMode,
    matched: Option<&Bits>,
    folded: &[u32],
    style: Style,
    budget: usize,
    into: List,
) -> List {
    let (mut vis, mut layout) = into;
    vis.rebuild_shown(&data.forest, show_bits(data, mode, matched).words(), folded);
    layout.rebuild(&data.forest, &vis, style, budget);
    (vis, layout)
}

/// The entries [`shows`] accepts, as bits, made a word at a time from the
/// kinds (the leaf and, in labeled-only mode, the labelled entries asked apart).
fn show_bits(data: &SelectorData, mode: FilterMode, matched: Option<&Bits>) -> Bits {
    let by_kind: [bool; 256] = std::array::from_fn(|kind| mode.shows(kind as u8, false, false));
    let mut words: Vec<u64> = data
        .kinds
        .chunks(64)
        .map(|c| c.iter().enumerate().fold(0, |w, (i, &kind)| w | u64::from(by_kind[kind as usize]) << i))
        .collect();
    let show = shows(data, mode, None);
    let mut ask = |k: u32| {
        let (w, bit) = (k as usize / 64, 1u64 << (k % 64));
        if show(k) {
            words[w] |= bit;
        } else {
            words[w] &= !bit;
        }
    };
    data.forest.leaf().into_iter().for_each(&mut ask);
    if mode == FilterMode::LabeledOnly {
        data.labels.keys().copied().for_each(&mut ask);
    }
    if let Some(m) = matched {
        words.iter_mut().zip(m.words()).for_each(|(w, m)| *w &= m);
    }
    Bits::from_words(words)
}

/// Which entries `mode` and the search's answer `matched` show (docs/cli.md, "arbor tui").
fn shows<'a>(data: &'a SelectorData, mode: FilterMode, matched: Option<&'a Bits>) -> impl Fn(u32) -> bool + 'a {
    let leaf = data.forest.leaf();
    // Only the labeled-only mode asks about labels, through bits: no hash lookup per entry.
    let labelled = (mode == FilterMode::LabeledOnly).then(|| Bits::of(data.len(), data.labels.keys().copied()));
    move |k: u32| {
        let is_labelled = labelled.as_ref().is_some_and(|l| l.get(k));
        mode.shows(data.kinds[k as usize], is_labelled, Some(k) == leaf) && matched.is_none_or(|m| m.get(k))
    }
}

#[cfg(test)]
pub(crate) mod reference;

#[cfg(test)]
pub(crate) mod tests;
