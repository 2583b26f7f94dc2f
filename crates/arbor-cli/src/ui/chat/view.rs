//! The chat's editable state: the prompt being typed and its cursor, what
//! streams, the notes and status lines, and what each key does to them (the
//! editing itself is in [`super::editor`]).

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::commands::complete;
use super::settings::DoubleEscape;

const DOUBLE_ESCAPE: Duration = Duration::from_millis(500);

/// Two Ctrl+C on an empty prompt within this time leave (pi's 500 ms).
const DOUBLE_CTRL_C: Duration = Duration::from_millis(500);

/// What the screen shows besides the conversation.
#[derive(Debug, Default, Clone)]
pub struct ChatView {
    /// The prompt being typed.
    pub input: String,
    /// The cursor, in characters.
    pub cursor: usize,
    /// The prompt sent and not yet in the session (shown while its reply streams).
    pub pending_user: Option<String>,
    /// The reply streaming in.
    pub streaming: Option<String>,
    /// Lines to show after the conversation (help, notices); cleared on the next prompt.
    pub notes: Vec<String>,
    /// The status line.
    pub status: Option<String>,
    /// What runs now (a reply, a summary), as the status line shows it: spinner, elapsed time, retries.
    pub busy: Option<String>,
    /// Lines scrolled up from the bottom.
    pub scroll: usize,
    /// Prompts typed (Enter) while a reply streamed, sent in turn once it is done.
    pub queued: Vec<String>,
    /// Earlier prompts and commands, oldest first (↑ and ↓ on an empty prompt).
    pub history: Vec<String>,
    /// Which of `history` the prompt shows while going through it.
    pub history_pos: Option<usize>,
    /// Ctrl+O: tool results, branch summaries and compactions shown whole.
    pub expanded: bool,
    /// Ctrl+T: thinking shown as one line.
    pub thinking_collapsed: bool,
    /// `/context` is shown: its line (the last of the notes) is made again after each change.
    pub context_shown: bool,
    /// When Escape was last pressed on an empty prompt (the first of a double Escape).
    pub(super) last_escape: Option<Instant>,
    /// When Ctrl+C last cleared or found an empty prompt (the first of a double Ctrl+C).
    pub(super) last_ctrl_c: Option<Instant>,
    /// Deleted text, newest last (Ctrl+Y).
    pub(super) kill_ring: Vec<String>,
}

/// What a key asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing beyond the new state.
    None,
    /// Send this line.
    Submit(String),
    /// Open the tree selector.
    Tree,
    /// Open the user-message selector.
    Branch,
    /// Open the model selector (Ctrl+L).
    SelectModel,
    /// The next (or previous) model (Ctrl+P, Shift+Ctrl+P).
    CycleModel {
        /// Direction.
        forward: bool,
    },
    /// The next thinking level (Shift+Tab).
    CycleThinking,
    /// Edit the prompt in `$VISUAL` / `$EDITOR` (Ctrl+G).
    ExternalEditor,
    /// Show this in the status line.
    Say(String),
    /// Leave.
    Quit,
}

impl ChatView {
    /// Sets the prompt text with the cursor at its end.
    pub fn set_input(&mut self, text: &str) {
        self.input = text.to_owned();
        self.cursor = text.chars().count();
    }

    /// Remembers a sent line for ↑ (not twice in a row).
    pub fn remember(&mut self, line: &str) {
        self.history_pos = None;
        if !line.trim().is_empty() && self.history.last().map(String::as_str) != Some(line) {
            self.history.push(line.to_owned());
        }
    }

    /// ↑: the previous prompt, when the prompt is empty or already shows one.
    fn history_back(&mut self) -> bool {
        if self.history.is_empty() || (self.history_pos.is_none() && !self.input.is_empty()) {
            return false;
        }
        let pos = self.history_pos.map_or(self.history.len() - 1, |p| p.saturating_sub(1));
        self.history_pos = Some(pos);
        let text = self.history[pos].clone();
        self.set_input(&text);
        true
    }

    /// ↓: the next prompt, or back to an empty prompt after the newest.
    fn history_forward(&mut self) -> bool {
        let Some(pos) = self.history_pos else { return false };
        if pos + 1 < self.history.len() {
            self.history_pos = Some(pos + 1);
            let text = self.history[pos + 1].clone();
            self.set_input(&text);
        } else {
            self.history_pos = None;
            self.set_input("");
        }
        true
    }

    /// Edits the prompt (pi's editor keys); used while idle and, for typing
    /// ahead, while busy. False for a key that is not an editing key.
    pub fn edit(&mut self, key: &KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Up if !alt => return self.history_back(),
            KeyCode::Down if !alt => return self.history_forward(),
            KeyCode::Tab => {
                return match complete(&self.input) {
                    Some(c) => {
                        self.set_input(&c);
                        true
                    }
                    None => false,
                }
            }
            _ => self.history_pos = None,
        }
        match key.code {
            KeyCode::Char('a') if ctrl => self.line_home(),
            KeyCode::Char('e') if ctrl => self.line_end_move(),
            KeyCode::Char('b') if ctrl => self.left(),
            KeyCode::Char('f') if ctrl => self.right(),
            KeyCode::Char('b') if alt => self.move_word_left(),
            KeyCode::Char('f') if alt => self.move_word_right(),
            KeyCode::Char('u') if ctrl => self.delete_to_line_start(),
            KeyCode::Char('k') if ctrl => self.delete_to_line_end(),
            KeyCode::Char('w') if ctrl => self.delete_word_backward(),
            KeyCode::Char('d') if alt => self.delete_word_forward(),
            KeyCode::Char('d') if ctrl => self.delete_forward(),
            KeyCode::Char('y') if ctrl => self.yank(),
            KeyCode::Char('j') if ctrl => self.insert('\n'),
            KeyCode::Enter if key.modifiers.intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) => self.insert('\n'),
            KeyCode::Char(c) if !ctrl && !alt => self.insert(c),
            KeyCode::Backspace if alt || ctrl => self.delete_word_backward(),
            KeyCode::Backspace => self.delete_backward(),
            KeyCode::Delete if alt => self.delete_word_forward(),
            KeyCode::Delete => self.delete_forward(),
            KeyCode::Left if ctrl || alt => self.move_word_left(),
            KeyCode::Right if ctrl || alt => self.move_word_right(),
            KeyCode::Left => self.left(),
            KeyCode::Right => self.right(),
            KeyCode::Home => self.line_home(),
            KeyCode::End => self.line_end_move(),
            KeyCode::PageUp => self.scroll += 10,
            KeyCode::PageDown => self.scroll = self.scroll.saturating_sub(10),
            _ => return false,
        }
        true
    }

    /// One key while idle.
    pub fn key(&mut self, key: &KeyEvent, double_escape: DoubleEscape, now: Instant) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        if key.code != KeyCode::Esc {
            self.last_escape = None;
        }
        let ctrl_c = key.code == KeyCode::Char('c') && ctrl;
        if !ctrl_c {
            self.last_ctrl_c = None;
        }
        match key.code {
            KeyCode::Enter if key.modifiers.is_empty() => {
                let text = std::mem::take(&mut self.input);
                self.cursor = 0;
                self.scroll = 0;
                self.remember(&text);
                Action::Submit(text)
            }
            // pi: Ctrl+C clears the prompt; twice within 500 ms leaves.
            KeyCode::Char('c') if ctrl => {
                if self.last_ctrl_c.take().is_some_and(|t| now.duration_since(t) <= DOUBLE_CTRL_C) {
                    return Action::Quit;
                }
                self.last_ctrl_c = Some(now);
                self.set_input("");
                Action::Say("Press Ctrl+C again to quit".to_owned())
            }
            KeyCode::Char('d') if ctrl && self.input.is_empty() => Action::Quit,
            KeyCode::Char('l') if ctrl => Action::SelectModel,
            KeyCode::Char('p' | 'P') if ctrl => {
                Action::CycleModel { forward: !shift && key.code != KeyCode::Char('P') }
            }
            KeyCode::BackTab => Action::CycleThinking,
            KeyCode::Char('g') if ctrl => Action::ExternalEditor,
            KeyCode::Char('o') if ctrl => {
                self.expanded = !self.expanded;
                Action::Say(
                    if self.expanded { "Expanded: tool output, summaries, compactions" } else { "Collapsed" }
                        .to_owned(),
                )
            }
            KeyCode::Char('t') if ctrl => {
                self.thinking_collapsed = !self.thinking_collapsed;
                Action::Say(if self.thinking_collapsed { "Thinking collapsed" } else { "Thinking shown" }.to_owned())
            }
            KeyCode::Esc => {
                if !self.input.is_empty() {
                    self.last_escape = None;
                    return Action::None;
                }
                match self.last_escape.take() {
                    Some(t) if now.duration_since(t) <= DOUBLE_ESCAPE => match double_escape {
                        DoubleEscape::Tree => Action::Tree,
                        DoubleEscape::Branch => Action::Branch,
                        DoubleEscape::None => Action::None,
                    },
                    _ => {
                        self.last_escape = Some(now);
                        Action::None
                    }
                }
            }
            _ => {
                self.edit(key);
                Action::None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn keys_edit_submit_and_double_escape() {
        let mut v = ChatView::default();
        let t0 = Instant::now();
        for c in "helo".chars() {
            v.key(&key(KeyCode::Char(c)), DoubleEscape::Tree, t0);
        }
        v.key(&key(KeyCode::Left), DoubleEscape::Tree, t0);
        v.key(&key(KeyCode::Char('l')), DoubleEscape::Tree, t0);
        assert_eq!(v.input, "hello");
        // Esc with text does nothing; Enter submits and clears.
        assert_eq!(v.key(&key(KeyCode::Esc), DoubleEscape::Tree, t0), Action::None);
        assert_eq!(v.key(&key(KeyCode::Enter), DoubleEscape::Tree, t0), Action::Submit("hello".into()));
        assert_eq!(v.input, "");
        // Two Escapes within 500 ms on an empty prompt open the configured selector.
        assert_eq!(v.key(&key(KeyCode::Esc), DoubleEscape::Tree, t0), Action::None);
        assert_eq!(v.key(&key(KeyCode::Esc), DoubleEscape::Tree, t0 + Duration::from_millis(300)), Action::Tree);
        assert_eq!(v.key(&key(KeyCode::Esc), DoubleEscape::Branch, t0), Action::None);
        assert_eq!(v.key(&key(KeyCode::Esc), DoubleEscape::Branch, t0 + Duration::from_millis(100)), Action::Branch);
        // Too slow: the second Escape starts a new pair.
        assert_eq!(v.key(&key(KeyCode::Esc), DoubleEscape::Tree, t0), Action::None);
        assert_eq!(v.key(&key(KeyCode::Esc), DoubleEscape::Tree, t0 + Duration::from_millis(900)), Action::None);
        assert_eq!(v.key(&key(KeyCode::Esc), DoubleEscape::Tree, t0 + Duration::from_millis(1000)), Action::Tree);
        // `none` never opens anything.
        v.key(&key(KeyCode::Esc), DoubleEscape::None, t0);
        assert_eq!(v.key(&key(KeyCode::Esc), DoubleEscape::None, t0), Action::None);
        // Ctrl+C clears; a second one within 500 ms quits, a later one only clears again.
        v.set_input("x");
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert!(matches!(v.key(&ctrl_c, DoubleEscape::Tree, t0), Action::Say(_)));
        assert_eq!(v.input, "");
        assert!(matches!(v.key(&ctrl_c, DoubleEscape::Tree, t0 + Duration::from_millis(700)), Action::Say(_)));
        assert_eq!(v.key(&ctrl_c, DoubleEscape::Tree, t0 + Duration::from_millis(900)), Action::Quit);
    }

    #[test]
    fn pis_chat_keys_ask_for_their_actions() {
        let mut v = ChatView::default();
        let t0 = Instant::now();
        let k = |code, m| KeyEvent::new(code, m);
        let (c, s) = (KeyModifiers::CONTROL, KeyModifiers::SHIFT);
        let at = |v: &mut ChatView, key: KeyEvent| v.key(&key, DoubleEscape::Tree, t0);
        assert_eq!(at(&mut v, k(KeyCode::Char('l'), c)), Action::SelectModel);
        assert_eq!(at(&mut v, k(KeyCode::Char('p'), c)), Action::CycleModel { forward: true });
        assert_eq!(at(&mut v, k(KeyCode::Char('p'), c | s)), Action::CycleModel { forward: false });
        assert_eq!(at(&mut v, k(KeyCode::Char('P'), c | s)), Action::CycleModel { forward: false });
        assert_eq!(at(&mut v, k(KeyCode::BackTab, s)), Action::CycleThinking);
        assert_eq!(at(&mut v, k(KeyCode::Char('g'), c)), Action::ExternalEditor);
        assert!(matches!(at(&mut v, k(KeyCode::Char('o'), c)), Action::Say(_)) && v.expanded);
        assert!(matches!(at(&mut v, k(KeyCode::Char('t'), c)), Action::Say(_)) && v.thinking_collapsed);
    }

    #[test]
    fn up_recalls_earlier_prompts_and_tab_completes_commands() {
        let mut v = ChatView::default();
        let t0 = Instant::now();
        for line in ["first", "second"] {
            v.set_input(line);
            v.key(&key(KeyCode::Enter), DoubleEscape::Tree, t0);
        }
        v.key(&key(KeyCode::Up), DoubleEscape::Tree, t0);
        assert_eq!(v.input, "second");
        v.key(&key(KeyCode::Up), DoubleEscape::Tree, t0);
        v.key(&key(KeyCode::Up), DoubleEscape::Tree, t0);
        assert_eq!(v.input, "first");
        v.key(&key(KeyCode::Down), DoubleEscape::Tree, t0);
        assert_eq!(v.input, "second");
        v.key(&key(KeyCode::Down), DoubleEscape::Tree, t0);
        assert_eq!(v.input, "");
        // A prompt being typed is not replaced by ↑.
        v.set_input("draft");
        v.key(&key(KeyCode::Up), DoubleEscape::Tree, t0);
        assert_eq!(v.input, "draft");
        v.set_input("/comp");
        v.key(&key(KeyCode::Tab), DoubleEscape::Tree, t0);
        assert_eq!(v.input, "/compact ");
    }
}
