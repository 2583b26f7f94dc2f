//! The selector's tests, and the fixture sessions `view` and `fork_selector` draw.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use super::reference;

use super::*;
use crate::ui::tui::loader::Loader;
use arbor_log::ids::CounterIds;
use arbor_log::FixedClock;
use arbor_tree::{MemoryStore, Session, SessionOptions};
use crossterm::event::KeyCode;
use serde_json::json;
use serde_json::Value;

impl TreeSelector {
    /// A selector over `session` with every entry read and every row's text
    /// made: what the screen has once the loader is done.
    pub(crate) fn full(session: &Session, page: usize, initial: Option<&str>, mode: FilterMode) -> TreeSelector {
        let at: Vec<&str> = initial.into_iter().collect();
        let (mut loader, mut sel) = Loader::open(session, None, (page, 120), &at, mode);
        loader.finish(session, &mut sel);
        let all: Vec<u32> = (0..sel.data().len() as u32).collect();
        loader.render(session, &mut sel, all);
        sel
    }

    /// The rows and layout a computation from scratch gives for the state
    /// as it is (each entry asked in turn, not through [`show_bits`]).
    fn fresh(&self) -> List {
        let mut s = self.clone();
        let matched = s.matched();
        let vis = Visible::new(&s.data.forest, shows(&s.data, s.mode, matched.as_ref()), &s.folded);
        let layout = Layout::new(&s.data.forest, &vis, s.style(), level_budget(s.width));
        (vis, layout)
    }

    /// Checks that the rows and layout are a fresh computation's, and so is
    /// every list kept or marked clean (what a later swap would show).
    pub(super) fn assert_fresh(&self, at: &str) {
        assert_eq!((self.vis.clone(), self.layout.clone()), self.fresh(), "{at}");
        self.assert_kept_fresh(at);
    }

    /// Checks that every list kept or marked clean is a fresh computation's
    /// (the rows themselves may wait for a refresh while entries are read).
    pub(super) fn assert_kept_fresh(&self, at: &str) {
        let clean_list = |mode: FilterMode| {
            let mut s = self.clone();
            (s.mode, s.query, s.folded) = (mode, String::new(), vec![]);
            s.fresh()
        };
        if let Some(m) = self.clean {
            assert_eq!(self.clean_target(), Some(m), "{at}: marked clean");
            assert_eq!((self.vis.clone(), self.layout.clone()), clean_list(m), "{at}: clean");
        }
        if let Some((_, vis, layout, Some(m))) = &self.undo {
            assert_eq!((vis.clone(), layout.clone()), clean_list(*m), "{at}: undo of {m:?}");
        }
        for m in FilterMode::CYCLE {
            if let Some(list) = self.kept.clone().take(m) {
                assert_eq!(list, clean_list(m), "{at}: kept {m:?}");
            }
        }
    }
}

/// A session whose entries are known by test names.
pub(crate) struct Fixture {
    pub(crate) s: Session,
    names: HashMap<String, String>,
}

pub(crate) fn user(text: &str) -> Value {
    json!({"role": "user", "content": text, "timestamp": 1})
}

pub(crate) fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop",
           "api": "x", "provider": "p", "model": "m", "timestamp": 2})
}

pub(crate) fn tool_only() -> Value {
    json!({"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "bash",
           "arguments": {"command": "ls"}}], "stopReason": "toolUse", "timestamp": 2})
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let opts = SessionOptions::default()
            .with_ids(CounterIds::new())
            .with_clock(FixedClock::new(1_767_225_600_000, 1))
            .with_store(MemoryStore::new());
        Fixture { s: Session::in_memory("/proj", opts), names: HashMap::new() }
    }
    /// Appends a message under `parent` (None: at the current leaf).
    pub(crate) fn msg(&mut self, name: &str, parent: Option<&str>, m: Value) -> &mut Self {
        if let Some(p) = parent {
            let id = self.id(p);
            self.s.branch(&id).unwrap();
        }
        let id = self.s.append_message(m).unwrap();
        self.names.insert(name.to_owned(), id);
        self
    }
    pub(crate) fn user(&mut self, name: &str, parent: Option<&str>) -> &mut Self {
        let text = format!("{} message", name);
        self.msg(name, parent, user(&text))
    }
    pub(crate) fn asst(&mut self, name: &str, parent: Option<&str>) -> &mut Self {
        let text = format!("{} response", name);
        self.msg(name, parent, assistant(&text))
    }
    pub(crate) fn root(&mut self, name: &str) -> &mut Self {
        self.s.reset_leaf();
        self.user(name, None)
    }
    pub(crate) fn name(&mut self, name: &str, id: String) {
        self.names.insert(name.to_owned(), id);
    }
    pub(crate) fn id(&self, name: &str) -> String {
        self.names.get(name).cloned().unwrap_or_else(|| panic!("no entry {name}"))
    }
    pub(crate) fn leaf(&mut self, name: &str) -> &mut Self {
        let id = self.id(name);
        self.s.branch(&id).unwrap();
        self
    }
    pub(crate) fn selector(&self) -> TreeSelector {
        TreeSelector::full(&self.s, 12, None, FilterMode::Default)
    }
    pub(crate) fn name_of(&self, id: Option<&str>) -> Option<String> {
        let id = id?;
        self.names.iter().find(|(_, v)| v.as_str() == id).map(|(k, _)| k.clone())
    }
}

/// The tree of docs/cli.md, "arbor tui" with the leaf at `asst-4a`.
pub(crate) fn branching() -> Fixture {
    let mut f = Fixture::new();
    f.user("user-1", None).asst("asst-1", None).user("user-2", None).asst("asst-2", None);
    f.user("user-3a", None).asst("asst-3a", None).user("user-4a", None).asst("asst-4a", None);
    f.user("user-3b", Some("asst-2")).asst("asst-3b", None).user("user-4b", None);
    f.leaf("asst-4a");
    f
}

fn sel_name(f: &Fixture, t: &TreeSelector) -> Option<String> {
    f.name_of(t.selected_id())
}

fn press(f: &Fixture, t: &mut TreeSelector, input: Input, expect: &str) {
    t.handle(input.clone());
    assert_eq!(sel_name(f, t).as_deref(), Some(expect), "after {input:?}");
}

/// user-1 → asst-1 → {user-2 → asst-2, user-3 → asst-3}.
fn two_branches() -> Fixture {
    let mut f = Fixture::new();
    f.user("user-1", None).asst("asst-1", None).user("user-2", None).asst("asst-2", None);
    f.user("user-3", Some("asst-1")).asst("asst-3", None);
    f
}

#[test]
fn flattening_matches_the_worked_example() {
    let f = branching();
    let t = f.selector();
    let rows: Vec<String> = t
        .rows(0, 100)
        .iter()
        .map(|r| format!("{}{}{}{}", r.prefix, r.fold_marker, if r.active { "• " } else { "" }, r.text))
        .collect();
    assert_eq!(
        rows,
        [
            "• user: user-1 message",
            "• assistant: asst-1 response",
            "• user: user-2 message",
            "• assistant: asst-2 response",
            "├⊟ • user: user-3a message",
            "│     • assistant: asst-3a response",
            "│     • user: user-4a message",
            "│     • assistant: asst-4a response",
            "└⊟ user: user-3b message",
            "      assistant: asst-3b response",
            "      user: user-4b message",
        ]
    );
    assert_eq!(t.footer(), "  (8/11)");
}

// 7.8 case 1
#[test]
fn model_change_leaf_selects_its_visible_parent() {
    let mut f = Fixture::new();
    f.user("user-1", None).asst("asst-1", None).user("user-2", None);
    f.user("user-3", Some("user-2"));
    f.leaf("user-2");
    let id = f.s.append_model_change("anthropic", "claude").unwrap();
    f.name("model", id);
    let t = f.selector();
    assert_eq!(sel_name(&f, &t).as_deref(), Some("user-2"));
}

// 7.8 case 2
#[test]
fn thinking_change_leaf_selects_its_visible_parent() {
    let mut f = Fixture::new();
    f.user("user-1", None).asst("asst-1", None).user("user-2", None);
    f.user("user-3", Some("user-2"));
    f.leaf("user-2");
    let id = f.s.append_thinking_level_change("high").unwrap();
    f.name("thinking", id);
    let t = f.selector();
    assert_eq!(sel_name(&f, &t).as_deref(), Some("user-2"));
}

// 7.8 cases 3 and 4
#[test]
fn user_only_moves_to_the_nearest_user_ancestor_and_back_stays() {
    let mut f = two_branches();
    f.leaf("asst-2");
    let mut t = f.selector();
    assert_eq!(sel_name(&f, &t).as_deref(), Some("asst-2"));
    press(&f, &mut t, Input::ToggleFilter(FilterMode::UserOnly), "user-2");
    assert_eq!(t.footer(), "  (2/3) [user]");
    press(&f, &mut t, Input::FilterDefault, "user-2");
}

// 7.8 case 5
#[test]
fn empty_labeled_only_then_default_restores_the_selection() {
    let mut f = two_branches();
    f.leaf("asst-2");
    let mut t = f.selector();
    t.handle(Input::ToggleFilter(FilterMode::LabeledOnly));
    assert_eq!(t.selected_id(), None);
    assert_eq!(t.footer(), "  (0/0) [labeled]");
    press(&f, &mut t, Input::FilterDefault, "asst-2");
}

// 7.8 case 6
#[test]
fn toggling_labeled_only_keeps_the_selection() {
    let mut f = two_branches();
    f.leaf("asst-1");
    let mut t = f.selector();
    assert_eq!(sel_name(&f, &t).as_deref(), Some("asst-1"));
    t.handle(Input::ToggleFilter(FilterMode::LabeledOnly));
    assert_eq!(t.selected_id(), None);
    press(&f, &mut t, Input::ToggleFilter(FilterMode::LabeledOnly), "asst-1");
    t.handle(Input::ToggleFilter(FilterMode::LabeledOnly));
    assert_eq!(t.selected_id(), None);
    press(&f, &mut t, Input::FilterDefault, "asst-1");
}

// 7.8 case 7
#[test]
fn fold_then_unfold_then_jump() {
    let f = branching();
    let mut t = f.selector();
    assert_eq!(sel_name(&f, &t).as_deref(), Some("asst-4a"));
    press(&f, &mut t, Input::FoldOrUp, "user-3a");
    press(&f, &mut t, Input::FoldOrUp, "user-3a");
    assert_eq!(t.visible_len(), 8);
    assert_eq!(t.rows(4, 5)[0].prefix, "├⊞ ");
    press(&f, &mut t, Input::Down, "user-3b");
    press(&f, &mut t, Input::Up, "user-3a");
    press(&f, &mut t, Input::UnfoldOrDown, "user-3a");
    assert_eq!(t.visible_len(), 11);
    press(&f, &mut t, Input::Down, "asst-3a");
    press(&f, &mut t, Input::FoldOrUp, "user-3a");
    press(&f, &mut t, Input::UnfoldOrDown, "asst-4a");
}

fn alt(code: crossterm::event::KeyCode) -> Input {
    let ev = crossterm::event::KeyEvent::new(code, crossterm::event::KeyModifiers::ALT);
    crate::ui::tui::keys::decode(&ev).unwrap()
}

// 7.8 case 8
#[test]
fn alt_arrows_are_the_same_inputs() {
    // Alt+← / Alt+→ decode to the same inputs as Ctrl+← / Ctrl+→; replay case 7.
    let f = branching();
    let mut t = f.selector();
    press(&f, &mut t, alt(KeyCode::Left), "user-3a");
    press(&f, &mut t, alt(KeyCode::Left), "user-3a");
    press(&f, &mut t, Input::Down, "user-3b");
    press(&f, &mut t, Input::Up, "user-3a");
    press(&f, &mut t, alt(KeyCode::Right), "user-3a");
    press(&f, &mut t, Input::Down, "asst-3a");
    press(&f, &mut t, alt(KeyCode::Left), "user-3a");
    press(&f, &mut t, alt(KeyCode::Right), "asst-4a");
}

// 7.8 case 9
#[test]
fn folding_the_root() {
    let f = branching();
    let mut t = f.selector();
    press(&f, &mut t, Input::FoldOrUp, "user-3a");
    press(&f, &mut t, Input::FoldOrUp, "user-3a");
    press(&f, &mut t, Input::FoldOrUp, "user-1");
    press(&f, &mut t, Input::FoldOrUp, "user-1");
    assert_eq!(t.visible_len(), 1);
    assert_eq!(t.rows(0, 1)[0].fold_marker, "⊞ ");
    press(&f, &mut t, Input::Down, "user-1");
    press(&f, &mut t, Input::UnfoldOrDown, "user-1");
    press(&f, &mut t, Input::UnfoldOrDown, "user-3a");
    press(&f, &mut t, Input::Down, "user-3b");
}

// 7.8 case 10
#[test]
fn segments_on_a_non_active_branch() {
    let f = branching();
    let mut t = f.selector();
    press(&f, &mut t, Input::Down, "user-3b");
    press(&f, &mut t, Input::UnfoldOrDown, "user-4b");
    press(&f, &mut t, Input::FoldOrUp, "user-3b");
    press(&f, &mut t, Input::FoldOrUp, "user-3b");
    assert_eq!(t.visible_len(), 9);
    press(&f, &mut t, Input::FoldOrUp, "user-1");
}

// 7.8 case 11
#[test]
fn multiple_roots() {
    let mut f = Fixture::new();
    f.user("user-1", None).asst("asst-1", None);
    f.root("user-2").asst("asst-2", None);
    f.leaf("asst-1");
    let mut t = f.selector();
    assert!(t.has_multiple_roots());
    assert_eq!(sel_name(&f, &t).as_deref(), Some("asst-1"));
    press(&f, &mut t, Input::FoldOrUp, "user-1");
    press(&f, &mut t, Input::FoldOrUp, "user-1");
    press(&f, &mut t, Input::Down, "user-2");
    press(&f, &mut t, Input::UnfoldOrDown, "asst-2");
    press(&f, &mut t, Input::FoldOrUp, "user-2");
    press(&f, &mut t, Input::FoldOrUp, "user-2");
    assert_eq!(t.visible_len(), 2);
    press(&f, &mut t, Input::FoldOrUp, "user-2");
}

// 7.8 case 12
#[test]
fn folding_a_root_over_a_hidden_node() {
    let mut f = Fixture::new();
    f.user("user-1", None).msg("tools", None, tool_only()).user("user-2", None).asst("asst-2", None);
    let mut t = f.selector();
    assert_eq!(t.visible_len(), 3);
    press(&f, &mut t, Input::FoldOrUp, "user-1");
    press(&f, &mut t, Input::FoldOrUp, "user-1");
    assert_eq!(t.visible_len(), 1);
    press(&f, &mut t, Input::Down, "user-1");
}

// 7.8 case 13
#[test]
fn search_resets_folds() {
    let f = branching();
    let mut t = f.selector();
    t.handle(Input::FoldOrUp);
    t.handle(Input::FoldOrUp);
    assert_eq!(t.visible_len(), 8);
    t.handle(Input::Char('b'));
    assert_eq!(t.query(), "b");
    assert_eq!(t.handle(Input::Escape), Outcome::None);
    assert_eq!(t.query(), "");
    assert_eq!(t.visible_len(), 11);
    assert_eq!(t.rows(4, 5)[0].prefix, "├⊟ ");
    // No "b" above user-3a: the search moved the cursor to the last match, user-4b.
    assert_eq!(sel_name(&f, &t).as_deref(), Some("user-4b"));
}

// 7.8 case 14
#[test]
fn filter_change_resets_folds() {
    let f = branching();
    let mut t = f.selector();
    t.handle(Input::FoldOrUp);
    t.handle(Input::FoldOrUp);
    assert_eq!(t.visible_len(), 8);
    t.handle(Input::ToggleFilter(FilterMode::UserOnly));
    t.handle(Input::FilterDefault);
    assert_eq!(t.visible_len(), 11);
    press(&f, &mut t, Input::Down, "asst-3a");
}

#[test]
fn tool_call_only_assistant_is_hidden_in_every_mode_unless_leaf_or_error() {
    let mut f = Fixture::new();
    f.user("user-1", None).msg("tools", None, tool_only());
    f.msg(
        "err",
        Some("user-1"),
        json!({"role": "assistant", "content": [], "stopReason": "error",
            "errorMessage": "boom", "timestamp": 3}),
    );
    f.user("user-2", Some("tools"));
    let mut t = f.selector();
    assert_eq!(t.visible_len(), 3, "{:?}", t.rows(0, 9));
    t.handle(Input::ToggleFilter(FilterMode::All));
    assert_eq!(t.visible_len(), 3);
    f.leaf("tools");
    assert_eq!(f.selector().visible_len(), 4);
}

#[test]
fn filters_modes_and_cycle() {
    let mut f = Fixture::new();
    f.user("user-1", None).msg("tools", None, tool_only());
    f.msg(
        "result",
        None,
        json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
            "content": [{"type": "text", "text": "out"}], "isError": false, "timestamp": 3}),
    );
    f.asst("asst-1", None);
    let m = f.s.append_model_change("p", "m").unwrap();
    f.name("model", m);
    f.user("user-2", None);
    let mut t = f.selector();
    assert_eq!(t.visible_len(), 4); // user-1, result, asst-1, user-2
    assert_eq!(t.rows(1, 2)[0].text, "[bash: ls]");
    let expect = [
        (FilterMode::NoTools, 3),
        (FilterMode::UserOnly, 2),
        (FilterMode::LabeledOnly, 0),
        (FilterMode::All, 5),
        (FilterMode::Default, 4),
    ];
    for (mode, n) in expect {
        t.handle(Input::CycleFilter { forward: true });
        assert_eq!((t.mode(), t.visible_len()), (mode, n));
    }
    t.handle(Input::CycleFilter { forward: false });
    assert_eq!(t.mode(), FilterMode::All);
    t.handle(Input::ToggleFilter(FilterMode::All));
    assert_eq!(t.mode(), FilterMode::Default);
}

#[test]
fn search_tokens_and_reattachment() {
    let f = branching();
    let mut t = f.selector();
    for c in "user 3".chars() {
        t.handle(Input::Char(c));
    }
    let texts: Vec<String> = t.rows(0, 9).iter().map(|r| format!("{}{}", r.prefix, r.text)).collect();
    assert_eq!(texts, ["user: user-3a message", "user: user-3b message"]);
    assert!(t.has_multiple_roots());
    t.handle(Input::Backspace);
    t.handle(Input::Backspace);
    assert_eq!(t.query(), "user");
    assert_eq!(t.visible_len(), 6);
    for c in " nothing-matches".chars() {
        t.handle(Input::Char(c));
    }
    assert_eq!(t.visible_len(), 0);
    assert_eq!(t.footer(), "  (0/0)");
    assert_eq!(t.handle(Input::Enter), Outcome::None);
}

#[test]
fn shift_l_edits_labels_only_with_an_empty_search() {
    let f = branching();
    let mut t = f.selector();
    t.handle(Input::Char('L'));
    let edit = t.label_edit().unwrap();
    assert_eq!((edit.id.as_str(), edit.value.as_str()), (f.id("asst-4a").as_str(), ""));
    for c in "  keep me ".chars() {
        t.handle(Input::Char(c));
    }
    let out = t.handle(Input::Enter);
    assert_eq!(out, Outcome::LabelChanged(f.id("asst-4a"), Some("keep me".into())));
    assert_eq!(t.rows(7, 8)[0].label.as_deref(), Some("keep me"));
    // Pre-filled, Esc cancels.
    t.handle(Input::Char('L'));
    assert_eq!(t.label_edit().unwrap().value, "keep me");
    t.handle(Input::Char('x'));
    assert_eq!(t.handle(Input::Escape), Outcome::None);
    assert!(t.label_edit().is_none());
    assert_eq!(t.rows(7, 8)[0].label.as_deref(), Some("keep me"));
    // Labeled-only shows it; searching by label works.
    t.handle(Input::ToggleFilter(FilterMode::LabeledOnly));
    assert_eq!(t.visible_len(), 1);
    t.handle(Input::FilterDefault);
    for c in "keep".chars() {
        t.handle(Input::Char(c));
    }
    assert_eq!(t.visible_len(), 1);
    // With a search, L is typed.
    t.handle(Input::Char('L'));
    assert_eq!(t.query(), "keepL");
    assert!(t.label_edit().is_none());
    t.handle(Input::Escape);
    // Empty value clears.
    t.handle(Input::Char('L'));
    for _ in 0..7 {
        t.handle(Input::Backspace);
    }
    assert_eq!(t.handle(Input::Enter), Outcome::LabelChanged(f.id("asst-4a"), None));
}

#[test]
fn navigation_keys() {
    let f = branching();
    let mut t = f.selector();
    assert_eq!(t.page(), 12);
    press(&f, &mut t, Input::Home, "user-1");
    press(&f, &mut t, Input::Up, "user-4b");
    press(&f, &mut t, Input::Down, "user-1");
    press(&f, &mut t, Input::End, "user-4b");
    press(&f, &mut t, Input::PageUp, "user-1");
    press(&f, &mut t, Input::PageDown, "user-4b");
    assert_eq!(t.handle(Input::Enter), Outcome::Select(f.id("user-4b")));
    assert_eq!(t.handle(Input::Escape), Outcome::Cancel);
    assert!(t.is_leaf(&f.id("asst-4a")));
    let t = TreeSelector::full(&f.s, 12, Some(&f.id("user-2")), FilterMode::Default);
    assert_eq!(sel_name(&f, &t).as_deref(), Some("user-2"));
}

#[test]
fn window_follows_pi_scroll_rule() {
    let mut f = Fixture::new();
    f.user("u0", None);
    for i in 1..30 {
        f.user(&format!("u{i}"), None);
    }
    let mut t = TreeSelector::full(&f.s, 5, None, FilterMode::Default);
    assert_eq!(t.window(), (25, 30));
    t.set_size(5, 120);
    assert_eq!(t.page(), 5);
    t.handle(Input::Home);
    assert_eq!(t.window(), (0, 5));
    for _ in 0..10 {
        t.handle(Input::Down);
    }
    assert_eq!(t.window(), (8, 13));
}

/// A random session: messages of every kind the filters tell apart, branches, labels, settings.
fn random_session(rng: &mut arbor_test_support::Rng, n: usize) -> Fixture {
    let mut f = Fixture::new();
    let mut names: Vec<String> = vec![];
    for i in 0..n {
        let name = format!("e{i}");
        let parent = match rng.below(6) {
            0 if !names.is_empty() => Some(names[rng.below(names.len())].clone()),
            _ => None,
        };
        if rng.below(25) == 0 {
            f.s.reset_leaf();
        } else if let Some(p) = &parent {
            f.leaf(p);
        }
        let words = ["alpha", "beta", "gamma", "Delta", "eps"];
        let text = format!("{} {} {}", words[rng.below(5)], words[rng.below(5)], i);
        match rng.below(9) {
            0 | 1 => {
                f.msg(&name, None, user(&text));
            }
            2 | 3 => {
                f.msg(&name, None, assistant(&text));
            }
            4 => {
                f.msg(&name, None, tool_only());
            }
            5 => {
                f.msg(
                    &name,
                    None,
                    json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                        "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 3}),
                );
            }
            6 => {
                let id = f.s.append_model_change("p", &text).unwrap();
                f.name(&name, id);
            }
            7 if !names.is_empty() => {
                let target = f.id(&names[rng.below(names.len())]);
                let id = f.s.append_label_change(&target, Some(&text)).unwrap();
                f.name(&name, id);
            }
            _ => {
                let id = f.s.append_thinking_level_change("high").unwrap();
                f.name(&name, id);
            }
        }
        names.push(name);
    }
    let leaf = names[rng.below(names.len())].clone();
    f.leaf(&leaf);
    f
}

fn random_input(rng: &mut arbor_test_support::Rng) -> Input {
    let modes = [FilterMode::NoTools, FilterMode::UserOnly, FilterMode::LabeledOnly, FilterMode::All];
    match rng.below(20) {
        0..=2 => Input::Down,
        3..=4 => Input::Up,
        5..=6 => Input::FoldOrUp,
        7 => Input::UnfoldOrDown,
        8 => Input::PageDown,
        9 => Input::PageUp,
        10 => Input::Home,
        11 => Input::End,
        12 => Input::ToggleFilter(modes[rng.below(4)]),
        13 => Input::CycleFilter { forward: rng.below(2) == 0 },
        14 => Input::Char(['a', 'e', 'l', ' ', '1', 'L', 'q'][rng.below(7)]),
        15 => Input::Chars(["al", "ph", " 1", "ta g"][rng.below(4)].to_owned()),
        16 => Input::Backspace,
        17 => Input::Escape,
        18 => Input::Enter,
        _ => Input::FilterDefault,
    }
}

/// What the two selectors must agree on after every input.
fn state(rows: Vec<VisibleRow>, footer: String, query: &str, edit: Option<(&str, &str)>) -> String {
    let rows: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{}{}{}{}{}{} {}",
                if r.selected { "> " } else { "  " },
                r.prefix,
                r.fold_marker,
                if r.active { "• " } else { "" },
                r.label.as_deref().map(|l| format!("[{l}] ")).unwrap_or_default(),
                r.text,
                r.id
            )
        })
        .collect();
    format!("{}\n{footer} query {query:?} edit {edit:?}", rows.join("\n"))
}

/// The state machine over random sessions, inputs and terminal widths answers
/// exactly what the plain computation answers: the same rows, prefixes, texts,
/// search hits, selection and outcomes.
#[test]
fn the_state_machine_agrees_with_the_plain_computation() {
    let mut rng = arbor_test_support::Rng(0x2545_F491_4F6C_DD1D);
    for round in 0..60 {
        let n = 5 + rng.below(60);
        let f = random_session(&mut rng, n);
        let page = 3 + rng.below(12);
        let mut fast = TreeSelector::full(&f.s, page, None, FilterMode::Default);
        // A narrow screen sends deep trees to the compact layout.
        let width = [40, 120][rng.below(2)];
        fast.set_size(page, width);
        let mut plain = reference::Reference::new(&f.s, page, width, None, FilterMode::Default);
        for step in 0..80 {
            let input = random_input(&mut rng);
            let (a, b) = (fast.handle(input.clone()), plain.handle(input.clone()));
            assert_eq!(a, b, "round {round} step {step} {input:?}");
            let edit = fast.label_edit().map(|e| (e.id.as_str(), e.value.as_str()));
            let got = state(fast.rows(0, usize::MAX), fast.footer(), fast.query(), edit);
            let want = state(plain.rows(), plain.footer(), &plain.query, plain.editing());
            assert_eq!(got, want, "round {round} step {step} after {input:?}");
            if matches!(a, Outcome::Cancel) {
                break;
            }
        }
    }
}

/// Every fixture and the demo session that opens with a tree, with its path.
pub(crate) fn fixture_sessions() -> impl Iterator<Item = (std::path::PathBuf, Session)> {
    let mut files = crate::fixture_logs();
    files.push(arbor_test_support::fixtures().join("demo/demo.jsonl"));
    files.into_iter().filter_map(|file| {
        let s = Session::open(&file, arbor_tree::OpenMode::ReadOnly, SessionOptions::default()).ok()?;
        (!s.get_tree().is_empty()).then_some((file, s))
    })
}

/// Opened lazily (texts and kinds read as a screen would, a few at a time),
/// the selector ends where the whole computation is, on every fixture.
#[test]
fn the_lazy_open_ends_where_the_full_one_is() {
    let mut rng = arbor_test_support::Rng(0x9E37_79B9_7F4A_7C15);
    for (file, s) in fixture_sessions() {
        let (mut loader, mut sel) = Loader::open(&s, None, (8, 120), &[], FilterMode::Default);
        loader.prepare(&s, &mut sel);
        let first = sel.rows(sel.window().0, sel.window().1);
        while loader.step(&s, &mut sel) {
            loader.prepare(&s, &mut sel);
        }
        loader.prepare(&s, &mut sel);
        let plain = reference::Reference::new(&s, 8, 120, None, FilterMode::Default);
        let (a, b) = sel.window();
        let want: Vec<VisibleRow> = plain.rows()[a..b].to_vec();
        assert_eq!(sel.rows(a, b), want, "{}", file.display());
        // The first screen already showed the window's rows as they end up, where the window did not move.
        if first.len() == want.len() && first.iter().zip(&want).all(|(x, y)| x.id == y.id) {
            assert_eq!(first, want, "{}", file.display());
        }
        // And a search typed afterwards finds what the plain search finds.
        let q = ["a", "e", "user", "read"][rng.below(4)];
        sel.handle(Input::Chars(q.to_owned()));
        let mut plain = plain;
        plain.handle(Input::Chars(q.to_owned()));
        let all: Vec<u32> = (0..sel.data().len() as u32).collect();
        loader.render(&s, &mut sel, all);
        assert_eq!(sel.rows(0, usize::MAX), plain.rows(), "{} search {q:?}", file.display());
    }
}

/// Folds and unfolds (incremental: a fold removes the subtree's rows, an
/// unfold puts back the state before the fold or inserts the subtree's rows)
/// and the lists kept per filter mode (swapped in on a filter switch, an
/// Escape, the last unfold) leave exactly the rows and layout a fresh
/// computation gives, after every input of random sessions, between filter
/// switches, searches, label edits, resizes and moves; every kept list is a
/// fresh computation's too.
#[test]
fn incremental_folds_agree_with_a_fresh_recompute() {
    let mut rng = arbor_test_support::Rng(0x1405_7B7E_F767_814F);
    for round in 0..60 {
        let n = 5 + rng.below(80);
        let f = random_session(&mut rng, n);
        let mut sel = TreeSelector::full(&f.s, 3 + rng.below(12), None, FilterMode::Default);
        sel.set_size(sel.page(), [40, 120][rng.below(2)]);
        for step in 0..120 {
            let input = match rng.below(8) {
                0..=2 => Input::FoldOrUp,
                3 | 4 => Input::UnfoldOrDown,
                _ => random_input(&mut rng),
            };
            if matches!(sel.handle(input.clone()), Outcome::Cancel | Outcome::Select(_)) {
                break;
            }
            sel.assert_fresh(&format!("round {round} step {step} {input:?}"));
            // Now and then a resize (every kept layout is forgotten), a mode's list made ahead, a label edit.
            match rng.below(16) {
                0 => sel.set_size(sel.page(), [40, 120][rng.below(2)]),
                1 | 2 => {
                    sel.warm();
                }
                // A label set or cleared on the selected row (only the labeled-only list depends on labels).
                3 | 4 if sel.query().is_empty() && sel.label_edit().is_none() => {
                    sel.handle(Input::Char('L'));
                    let value = if rng.below(2) == 0 { "x" } else { "" };
                    if let Some(edit) = sel.label_edit.as_mut() {
                        edit.value = value.to_owned();
                    }
                    sel.handle(Input::Enter);
                }
                _ => continue,
            }
            sel.assert_fresh(&format!("round {round} step {step}, resized, warmed or labelled"));
        }
    }
}

#[test]
fn q_is_typed_into_the_search_as_pi_does() {
    let f = branching();
    let mut t = f.selector();
    // pi's /tree has no key on `q`: a search for "queued" starts with it.
    assert_eq!(t.handle(Input::Char('q')), Outcome::None);
    assert_eq!(t.query(), "q");
    t.handle(Input::Escape);
    assert_eq!(t.handle(Input::Chars("queued".to_owned())), Outcome::None);
    assert_eq!(t.query(), "queued");
    t.handle(Input::Escape);
    assert_eq!(t.handle(Input::Escape), Outcome::Cancel);
}
