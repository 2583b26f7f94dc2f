//! The user-message selector of the /branch flow (docs/architecture.md, "Forking before a user message", pi's
//! `showUserMessageSelector`) as a pure state machine: the list is every user
//! message with text, on every branch, in file order; the last one starts
//! selected, Up/Down wrap, Enter picks, Escape/Ctrl+C cancels.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use arbor_tree::Session;

/// At most this many messages are visible at once.
pub const MAX_VISIBLE: usize = 10;

/// One message that can be forked from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkItem {
    /// The user message's entry id.
    pub id: String,
    /// Its text (text blocks joined with "").
    pub text: String,
}

/// What a key does in the selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkInput {
    Up,
    Down,
    Enter,
    Cancel,
}

/// The result of one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForkOutcome {
    None,
    Select(String),
    Cancel,
}

/// The selector's state: the messages and the selected index.
#[derive(Debug, Clone)]
pub struct ForkSelector {
    items: Vec<ForkItem>,
    selected: usize,
    /// Rows that fit the terminal (at most [`MAX_VISIBLE`]).
    visible: usize,
}

impl ForkSelector {
    /// A selector over `items` with the last one selected; `None` when there is nothing to fork from.
    pub fn new(items: Vec<ForkItem>) -> Option<ForkSelector> {
        let selected = items.len().checked_sub(1)?;
        Some(ForkSelector { items, selected, visible: MAX_VISIBLE })
    }

    /// The selector over `Session::user_messages_for_forking()`.
    pub fn from_session(session: &Session) -> Option<ForkSelector> {
        ForkSelector::new(
            // A file changed on disk offers nothing to fork from (the next read says why).
            session
                .user_messages_for_forking()
                .ok()?
                .into_iter()
                .map(|(e, text)| ForkItem { id: e.id.clone(), text })
                .collect(),
        )
    }

    pub fn items(&self) -> &[ForkItem] {
        &self.items
    }

    pub fn selected(&self) -> usize {
        self.selected
    }

    pub fn selected_id(&self) -> &str {
        &self.items[self.selected].id
    }

    /// Fits the list to a terminal of `rows` lines: each message takes three lines and the
    /// title, subtitle and footer nine, so a short terminal shows fewer (at least one) messages.
    pub fn set_terminal_height(&mut self, rows: u16) {
        self.visible = (usize::from(rows).saturating_sub(9) / 3).clamp(1, MAX_VISIBLE);
    }

    /// The visible range `start..end`: at most [`MAX_VISIBLE`] rows (fewer in a short terminal),
    /// centred on the selection where possible (pi's window), always containing it.
    pub fn window(&self) -> (usize, usize) {
        let n = self.items.len();
        let start = self.selected.saturating_sub(self.visible / 2).min(n.saturating_sub(self.visible));
        (start, (start + self.visible).min(n))
    }

    pub fn handle(&mut self, input: ForkInput) -> ForkOutcome {
        let n = self.items.len();
        match input {
            ForkInput::Up => self.selected = (self.selected + n - 1) % n,
            ForkInput::Down => self.selected = (self.selected + 1) % n,
            ForkInput::Enter => return ForkOutcome::Select(self.selected_id().to_owned()),
            ForkInput::Cancel => return ForkOutcome::Cancel,
        }
        ForkOutcome::None
    }
}

/// A message on one line: line breaks (and other control characters) become spaces, ends trimmed.
pub fn one_line(text: &str) -> String {
    let t = text.replace("\r\n", " ");
    let t: String = t.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    t.trim().to_owned()
}

/// Decodes one key press; `None` for keys the selector ignores (and releases).
pub fn decode(ev: &KeyEvent) -> Option<ForkInput> {
    if ev.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    match ev.code {
        KeyCode::Up => Some(ForkInput::Up),
        KeyCode::Down => Some(ForkInput::Down),
        KeyCode::Enter => Some(ForkInput::Enter),
        KeyCode::Esc => Some(ForkInput::Cancel),
        KeyCode::Char('c' | 'C') if ctrl => Some(ForkInput::Cancel),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::ui::terminal::buffer_text;
    use crate::ui::tui::selector::tests::{branching, user, Fixture};
    use crate::ui::tui::view::draw_fork_selector;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn items(n: usize) -> Vec<ForkItem> {
        (1..=n).map(|i| ForkItem { id: format!("id-{i}"), text: format!("message {i}") }).collect()
    }

    fn frame(sel: &ForkSelector, w: u16, h: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        term.draw(|f| {
            let area = f.area();
            draw_fork_selector(sel, area, f.buffer_mut());
        })
        .unwrap();
        buffer_text(term.backend().buffer())
    }

    #[test]
    fn empty_list_has_no_selector() {
        assert!(ForkSelector::new(vec![]).is_none());
        let f = Fixture::new();
        assert!(ForkSelector::from_session(&f.s).is_none());
    }

    #[test]
    fn last_message_starts_selected() {
        let sel = ForkSelector::new(items(3)).unwrap();
        assert_eq!(sel.selected(), 2);
        assert_eq!(sel.selected_id(), "id-3");
    }

    #[test]
    fn up_and_down_wrap() {
        let mut sel = ForkSelector::new(items(3)).unwrap();
        assert_eq!(sel.handle(ForkInput::Down), ForkOutcome::None);
        assert_eq!(sel.selected(), 0);
        assert_eq!(sel.handle(ForkInput::Up), ForkOutcome::None);
        assert_eq!(sel.selected(), 2);
        sel.handle(ForkInput::Up);
        assert_eq!(sel.selected(), 1);
        let mut one = ForkSelector::new(items(1)).unwrap();
        one.handle(ForkInput::Up);
        one.handle(ForkInput::Down);
        assert_eq!(one.selected(), 0);
    }

    #[test]
    fn enter_selects_and_escape_cancels() {
        let mut sel = ForkSelector::new(items(4)).unwrap();
        sel.handle(ForkInput::Up);
        assert_eq!(sel.handle(ForkInput::Enter), ForkOutcome::Select("id-3".to_owned()));
        assert_eq!(sel.handle(ForkInput::Cancel), ForkOutcome::Cancel);
    }

    #[test]
    fn at_most_ten_rows_and_the_selection_stays_visible() {
        let mut sel = ForkSelector::new(items(25)).unwrap();
        assert_eq!(sel.window(), (15, 25));
        for _ in 0..60 {
            let (start, end) = sel.window();
            assert_eq!(end - start, MAX_VISIBLE);
            assert!((start..end).contains(&sel.selected()), "{} not in {start}..{end}", sel.selected());
            sel.handle(ForkInput::Up);
        }
        // Wrapping from the first message shows the last ten.
        while sel.selected() != 0 {
            sel.handle(ForkInput::Up);
        }
        assert_eq!(sel.window(), (0, 10));
        sel.handle(ForkInput::Up);
        assert_eq!(sel.window(), (15, 25));
        let small = ForkSelector::new(items(4)).unwrap();
        assert_eq!(small.window(), (0, 4));
    }

    #[test]
    fn a_short_terminal_shows_fewer_rows() {
        let mut sel = ForkSelector::new(items(25)).unwrap();
        sel.set_terminal_height(24);
        assert_eq!(sel.window(), (20, 25));
        sel.set_terminal_height(3);
        assert_eq!(sel.window(), (24, 25));
        sel.handle(ForkInput::Down);
        assert_eq!(sel.window(), (0, 1));
        sel.set_terminal_height(200);
        assert_eq!(sel.window(), (0, 10));
    }

    #[test]
    fn every_user_message_on_every_branch_in_file_order() {
        let mut f = branching();
        f.msg("blank", Some("asst-1"), user(""));
        let sel = ForkSelector::from_session(&f.s).unwrap();
        let got: Vec<&str> = sel.items().iter().map(|i| i.text.as_str()).collect();
        assert_eq!(
            got,
            [
                "user-1 message",
                "user-2 message",
                "user-3a message",
                "user-4a message",
                "user-3b message",
                "user-4b message"
            ]
        );
        assert_eq!(sel.selected_id(), f.id("user-4b"));
    }

    #[test]
    fn keys() {
        let k = |c, m| decode(&KeyEvent::new(c, m));
        assert_eq!(k(KeyCode::Up, KeyModifiers::NONE), Some(ForkInput::Up));
        assert_eq!(k(KeyCode::Down, KeyModifiers::NONE), Some(ForkInput::Down));
        assert_eq!(k(KeyCode::Enter, KeyModifiers::NONE), Some(ForkInput::Enter));
        assert_eq!(k(KeyCode::Esc, KeyModifiers::NONE), Some(ForkInput::Cancel));
        assert_eq!(k(KeyCode::Char('c'), KeyModifiers::CONTROL), Some(ForkInput::Cancel));
        assert_eq!(k(KeyCode::Char('c'), KeyModifiers::NONE), None);
        assert_eq!(k(KeyCode::Char('b'), KeyModifiers::CONTROL), None);
    }

    #[test]
    fn one_line_replaces_line_breaks() {
        assert_eq!(one_line("  a\nb\r\nc\td \n"), "a b c d");
    }

    #[test]
    fn frame_with_a_few_messages() {
        let mut sel = ForkSelector::from_session(&branching().s).unwrap();
        let last = frame(&sel, 60, 26);
        sel.handle(ForkInput::Down);
        let wrapped = frame(&sel, 60, 26);
        insta::assert_snapshot!(format!("{last}=== Down (wraps)\n{wrapped}"));
    }

    #[test]
    fn frame_with_more_than_ten_messages() {
        let mut sel = ForkSelector::new(items(14)).unwrap();
        let at_end = frame(&sel, 50, 40);
        for _ in 0..8 {
            sel.handle(ForkInput::Up);
        }
        let middle = frame(&sel, 50, 40);
        insta::assert_snapshot!(format!("{at_end}=== Up x8\n{middle}"));
    }

    #[test]
    fn frame_with_newlines_and_wide_characters_in_a_narrow_terminal() {
        let mut f = Fixture::new();
        f.msg("multi", None, user("first line\nsecond line\n\nthird line that is long"));
        f.msg("wide", None, user("日本語のテキスト🦀がとても長い行になります"));
        f.msg("emoji", None, user("🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀🦀"));
        let sel = ForkSelector::from_session(&f.s).unwrap();
        let text = frame(&sel, 21, 16);
        use unicode_width::UnicodeWidthStr;
        for line in text.lines() {
            assert!(line.width() <= 21, "{line:?}");
        }
        insta::assert_snapshot!(text);
    }
}
