//! A list to pick one item from, drawn over the chat: the model selector
//! (Ctrl+L, `/model`), `/settings` and its values, and `/resume`'s
//! sessions. Typing narrows the list (every word must occur, any case), ↑/↓
//! move (wrapping), PageUp/PageDown page, Enter picks, Escape (or Ctrl+C)
//! goes back to the chat. The state is pure ([`Select`]); [`pick`] runs it on
//! the chat's terminal and key channel.

use anyhow::Result;
use crossterm::event::{Event, KeyCode, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::shared::visible::visible;
use crate::ui::terminal::{read_key, NextEvent, Term};

/// One item: what the list shows, a dim detail after it, and what picking it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The text shown (and searched).
    pub label: String,
    /// Shown dim after the label (and searched).
    pub detail: String,
    /// The answer when picked.
    pub value: String,
}

impl Item {
    /// An item whose label is its value.
    pub fn plain(label: &str, detail: &str) -> Item {
        Item { label: label.to_owned(), detail: detail.to_owned(), value: label.to_owned() }
    }
}

/// The selector's state.
#[derive(Debug, Clone)]
pub struct Select {
    title: String,
    items: Vec<Item>,
    query: String,
    /// Indexes of the items the query leaves.
    shown: Vec<usize>,
    /// Position in `shown`.
    at: usize,
}

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Picked {
    /// Still choosing.
    No,
    /// This item's value.
    Value(String),
    /// Back, nothing picked.
    Back,
}

impl Select {
    /// A selector over `items` with the one whose value is `current` selected.
    pub fn new(title: &str, items: Vec<Item>, current: Option<&str>) -> Select {
        let at = current.and_then(|c| items.iter().position(|i| i.value == c)).unwrap_or(0);
        let shown = (0..items.len()).collect();
        Select { title: title.to_owned(), items, query: String::new(), shown, at }
    }

    fn refilter(&mut self) {
        let words: Vec<String> = self.query.to_lowercase().split_whitespace().map(str::to_owned).collect();
        self.shown = (0..self.items.len())
            .filter(|&i| {
                let text = format!("{} {}", self.items[i].label, self.items[i].detail).to_lowercase();
                words.iter().all(|w| text.contains(w.as_str()))
            })
            .collect();
        self.at = 0;
    }

    /// Applies one key press.
    pub fn key(&mut self, code: KeyCode, modifiers: KeyModifiers, page: usize) -> Picked {
        let n = self.shown.len();
        match code {
            KeyCode::Esc => return Picked::Back,
            KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => return Picked::Back,
            KeyCode::Enter => {
                return self.shown.get(self.at).map_or(Picked::No, |&i| Picked::Value(self.items[i].value.clone()))
            }
            KeyCode::Up if n > 0 => self.at = (self.at + n - 1) % n,
            KeyCode::Down if n > 0 => self.at = (self.at + 1) % n,
            KeyCode::PageUp => self.at = self.at.saturating_sub(page.max(1)),
            KeyCode::PageDown if n > 0 => self.at = (self.at + page.max(1)).min(n - 1),
            KeyCode::Home => self.at = 0,
            KeyCode::End => self.at = n.saturating_sub(1),
            KeyCode::Backspace => {
                self.query.pop();
                self.refilter();
            }
            KeyCode::Char(c) if !modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) => {
                self.query.push(c);
                self.refilter();
            }
            _ => {}
        }
        Picked::No
    }

    /// Draws the selector into `buf`.
    pub fn draw(&self, area: Rect, buf: &mut Buffer) {
        let width = usize::from(area.width);
        let mut y = 0u16;
        let mut put = |buf: &mut Buffer, spans: Vec<Span<'static>>| {
            if y < area.height {
                buf.set_line(area.x, area.y + y, &Line::from(spans), area.width);
            }
            y += 1;
        };
        let rule = "─".repeat(width);
        put(buf, vec![Span::raw(rule.clone())]);
        put(buf, vec![Span::styled(format!("  {}", self.title), Style::default().add_modifier(Modifier::BOLD))]);
        put(buf, vec![Span::raw("  ↑/↓: move. Enter: choose. Esc: back to the chat")]);
        put(buf, vec![Span::raw(format!("  Type to search: {}", visible(&self.query)))]);
        put(buf, vec![Span::raw(rule.clone())]);
        let rows = usize::from(area.height).saturating_sub(7).max(1);
        let first = (self.at + 1).saturating_sub(rows);
        if self.shown.is_empty() {
            put(buf, vec![Span::raw("  No match")]);
        }
        for (k, &i) in self.shown.iter().enumerate().skip(first).take(rows) {
            let item = &self.items[i];
            let selected = k == self.at;
            let lead = if selected { "› " } else { "  " };
            let style = if selected { Style::default().add_modifier(Modifier::BOLD) } else { Style::default() };
            put(
                buf,
                vec![
                    Span::styled(lead, Style::default().fg(Color::Cyan)),
                    Span::styled(visible(&item.label).into_owned(), style),
                    Span::styled(format!("  {}", visible(&item.detail)), Style::default().fg(Color::DarkGray)),
                ],
            );
        }
        put(buf, vec![Span::raw(format!("  ({}/{})", (self.at + 1).min(self.shown.len()), self.shown.len()))]);
        put(buf, vec![Span::raw(rule)]);
    }
}

/// Runs `sel` on the chat's terminal until an item is picked (its value) or the user goes back (`None`).
pub fn pick(term: &mut Term, next: NextEvent<'_>, mut sel: Select) -> Result<Option<String>> {
    term.clear()?;
    let picked = loop {
        term.draw(|f| sel.draw(f.area(), f.buffer_mut()))?;
        let Some(event) = next(None)? else { continue };
        if matches!(event, Event::Resize(..)) {
            continue;
        }
        let Some(key) = read_key(event) else { continue };
        let page = usize::from(term.size().map_or(24, |s| s.height)).saturating_sub(7);
        match sel.key(key.code, key.modifiers, page) {
            Picked::No => {}
            Picked::Value(v) => break Some(v),
            Picked::Back => break None,
        }
    };
    term.clear()?;
    Ok(picked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_narrows_arrows_wrap_enter_picks() {
        let items = vec![
            Item::plain("openai/gpt-4o", ""),
            Item::plain("local/small", "4096 tokens"),
            Item::plain("local/big", ""),
        ];
        let mut s = Select::new("Models", items, Some("local/small"));
        let none = KeyModifiers::NONE;
        assert_eq!(s.key(KeyCode::Enter, none, 5), Picked::Value("local/small".into()));
        s.key(KeyCode::Down, none, 5);
        s.key(KeyCode::Down, none, 5);
        assert_eq!(s.key(KeyCode::Enter, none, 5), Picked::Value("openai/gpt-4o".into()), "wrapped");
        for c in "LOC b".chars() {
            s.key(KeyCode::Char(c), none, 5);
        }
        assert_eq!(s.key(KeyCode::Enter, none, 5), Picked::Value("local/big".into()));
        s.key(KeyCode::Char('x'), none, 5);
        assert_eq!(s.key(KeyCode::Enter, none, 5), Picked::No, "nothing left to pick");
        assert_eq!(s.key(KeyCode::Esc, none, 5), Picked::Back);
    }
}
