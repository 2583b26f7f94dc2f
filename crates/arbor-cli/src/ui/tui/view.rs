//! Drawing the selector into a ratatui [`Buffer`] (docs/cli.md, "arbor tui"). Pure: the
//! same state always draws the same cells, so frames can be snapshot-tested.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use super::fork_selector::{self, ForkSelector};
use super::selector::TreeSelector;

/// pi's help line.
pub const HELP: &str =
    "  ↑/↓: move. ←/→: page. ^←/^→ or Alt+←/Alt+→: fold/branch. Shift+L: label. ^D/^T/^U/^L/^A: filters (^O/⇧^O cycle)";

/// Cuts styled pieces to `width` display columns, never splitting a character.
fn truncate(pieces: Vec<(String, Style)>, width: usize) -> Line<'static> {
    let mut used = 0;
    let mut spans = vec![];
    for (text, style) in pieces {
        let mut kept = String::new();
        let mut full = false;
        for c in text.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width {
                full = true;
                break;
            }
            used += w;
            kept.push(c);
        }
        if !kept.is_empty() {
            spans.push(Span::styled(kept, style));
        }
        if full {
            break;
        }
    }
    Line::from(spans)
}

fn plain(text: impl Into<String>) -> Vec<(String, Style)> {
    vec![(text.into(), Style::default())]
}

fn put(buf: &mut Buffer, area: Rect, y: &mut u16, pieces: Vec<(String, Style)>) {
    if *y < area.height {
        let line = truncate(pieces, usize::from(area.width));
        buf.set_line(area.x, area.y + *y, &line, area.width);
    }
    *y += 1;
}

fn border(area: Rect) -> Vec<(String, Style)> {
    plain("─".repeat(usize::from(area.width)))
}

fn header(buf: &mut Buffer, area: Rect, y: &mut u16, title: &str) {
    put(buf, area, y, plain(""));
    put(buf, area, y, border(area));
    put(buf, area, y, vec![(format!("  {title}"), Style::default().add_modifier(Modifier::BOLD))]);
}

/// Draws the whole selector: header, search line, list (or label editor), footer and a status line.
pub fn draw_selector(sel: &TreeSelector, status: Option<&str>, area: Rect, buf: &mut Buffer) {
    let mut y = 0;
    header(buf, area, &mut y, "Session Tree");
    put(buf, area, &mut y, plain(HELP));
    put(buf, area, &mut y, plain(format!("  Type to search: {}", sel.query())));
    put(buf, area, &mut y, border(area));
    put(buf, area, &mut y, plain(""));
    if let Some(edit) = sel.label_edit() {
        put(buf, area, &mut y, plain("  Label (empty to remove):"));
        put(buf, area, &mut y, vec![("  > ".into(), Style::default()), (format!("{}▏", edit.value), Style::default())]);
        put(buf, area, &mut y, plain("  Enter: save. Esc: cancel."));
    } else if sel.visible_len() == 0 {
        put(buf, area, &mut y, plain("  No entries found"));
        put(buf, area, &mut y, plain(sel.footer()));
    } else {
        let (start, end) = sel.window();
        let accent = Style::default().fg(Color::Cyan);
        for row in sel.rows(start, end) {
            let mut pieces = vec![];
            pieces.push((if row.selected { "› " } else { "  " }.to_owned(), accent));
            pieces.push((row.prefix, Style::default().add_modifier(Modifier::DIM)));
            pieces.push((row.fold_marker.to_owned(), accent));
            if row.active {
                pieces.push(("• ".to_owned(), accent));
            }
            if let Some(l) = &row.label {
                pieces.push((format!("[{l}] "), Style::default().fg(Color::Yellow)));
            }
            let content = if row.selected { Style::default().add_modifier(Modifier::BOLD) } else { Style::default() };
            pieces.push((row.text, content));
            if row.selected {
                pieces = pieces.into_iter().map(|(t, s)| (t, s.bg(Color::DarkGray))).collect();
            }
            put(buf, area, &mut y, pieces);
        }
        put(buf, area, &mut y, plain(sel.footer()));
    }
    put(buf, area, &mut y, plain(""));
    put(buf, area, &mut y, border(area));
    if let Some(s) = status {
        put(buf, area, &mut y, plain(format!("  {s}")));
    }
}

/// Draws a titled list of options with one highlighted (pi's selector dialog).
pub fn draw_choice(title: &str, options: &[&str], selected: usize, area: Rect, buf: &mut Buffer) {
    let mut y = 0;
    header(buf, area, &mut y, title);
    put(buf, area, &mut y, plain("  ↑/↓: move. Enter: choose. Esc: back to the tree"));
    put(buf, area, &mut y, border(area));
    for (k, o) in options.iter().enumerate() {
        let cursor = if k == selected { "› " } else { "  " };
        let style = if k == selected { Style::default().add_modifier(Modifier::BOLD) } else { Style::default() };
        put(buf, area, &mut y, vec![(cursor.to_owned(), Style::default().fg(Color::Cyan)), ((*o).to_owned(), style)]);
    }
    put(buf, area, &mut y, border(area));
}

/// Draws a one-line text editor with a title.
pub fn draw_prompt(title: &str, value: &str, area: Rect, buf: &mut Buffer) {
    let mut y = 0;
    header(buf, area, &mut y, title);
    put(buf, area, &mut y, plain("  Enter: submit. Esc: back"));
    put(buf, area, &mut y, border(area));
    put(buf, area, &mut y, plain(format!("  > {value}▏")));
    put(buf, area, &mut y, border(area));
}

/// Draws the /branch message selector (docs/architecture.md, "Forking before a user message"): title, subtitle, then each visible
/// message on one line with `Message i of N` beneath it.
pub fn draw_fork_selector(sel: &ForkSelector, area: Rect, buf: &mut Buffer) {
    let mut y = 0;
    header(buf, area, &mut y, "Branch from Message");
    put(buf, area, &mut y, plain("  Select a message to create a new branch from that point"));
    put(buf, area, &mut y, border(area));
    put(buf, area, &mut y, plain(""));
    let n = sel.items().len();
    let (start, end) = sel.window();
    let accent = Style::default().fg(Color::Cyan);
    for (i, item) in sel.items().iter().enumerate().take(end).skip(start) {
        let selected = i == sel.selected();
        let cursor = if selected { "› " } else { "  " };
        let text = if selected { Style::default().add_modifier(Modifier::BOLD) } else { Style::default() };
        put(buf, area, &mut y, vec![(cursor.to_owned(), accent), (fork_selector::one_line(&item.text), text)]);
        let dim = Style::default().add_modifier(Modifier::DIM);
        put(buf, area, &mut y, vec![(format!("  Message {} of {n}", i + 1), dim)]);
        put(buf, area, &mut y, plain(""));
    }
    if n > fork_selector::MAX_VISIBLE {
        put(buf, area, &mut y, plain(format!("  ({}/{n})", sel.selected() + 1)));
    }
    put(buf, area, &mut y, border(area));
    put(buf, area, &mut y, plain("  ↑/↓: move. Enter: branch from the message. Esc: cancel"));
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::ui::terminal::buffer_text;
    use crate::ui::tui::selector::tests::{branching, Fixture};
    use crate::ui::tui::selector::{FilterMode, Input};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn frame(sel: &TreeSelector, w: u16, h: u16, status: Option<&str>) -> String {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        term.draw(|f| {
            let area = f.area();
            draw_selector(sel, status, area, f.buffer_mut());
        })
        .unwrap();
        buffer_text(term.backend().buffer())
    }

    fn with_extras() -> Fixture {
        let mut f = branching();
        f.leaf("user-4b");
        let m = f.s.append_model_change("anthropic", "claude-x").unwrap();
        f.name("model", m);
        f.msg("tools", None, super::super::selector::tests::tool_only());
        f.msg(
            "result",
            None,
            serde_json::json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                "content": [{"type": "text", "text": "a b"}], "isError": false, "timestamp": 3}),
        );
        f.asst("asst-5b", None);
        let l = f.s.append_label_change(&f.id("user-2"), Some("checkpoint")).unwrap();
        f.name("label", l);
        f.leaf("asst-4a");
        f
    }

    #[test]
    fn every_filter_mode() {
        let f = with_extras();
        let mut sel = TreeSelector::new(&f.s, 40, None, FilterMode::Default, None);
        let mut frames = String::new();
        for _ in 0..5 {
            frames.push_str(&format!("=== {:?}\n", sel.mode()));
            frames.push_str(&frame(&sel, 90, 26, None));
            sel.handle(Input::CycleFilter { forward: true });
        }
        insta::assert_snapshot!(frames);
    }

    #[test]
    fn search() {
        let f = with_extras();
        let mut sel = TreeSelector::new(&f.s, 40, None, FilterMode::Default, None);
        for c in "3".chars() {
            sel.handle(Input::Char(c));
        }
        insta::assert_snapshot!(frame(&sel, 80, 16, None));
    }

    #[test]
    fn label_editing() {
        let f = branching();
        let mut sel = f.selector();
        sel.handle(Input::Char('L'));
        for c in "v1 ✓".chars() {
            sel.handle(Input::Char(c));
        }
        let editing = frame(&sel, 80, 14, None);
        sel.handle(Input::Enter);
        let after = frame(&sel, 80, 24, Some("Label saved"));
        insta::assert_snapshot!(format!("{editing}=== after Enter\n{after}"));
    }

    #[test]
    fn deep_tree_scrolls_around_the_selection() {
        let mut f = Fixture::new();
        f.user("u0", None);
        for i in 1..60 {
            if i % 2 == 0 {
                f.user(&format!("u{i}"), None);
            } else {
                f.asst(&format!("u{i}"), None);
            }
        }
        f.leaf("u30");
        let sel = TreeSelector::new(&f.s, 20, None, FilterMode::Default, None);
        insta::assert_snapshot!(frame(&sel, 60, 22, None));
    }

    #[test]
    fn wide_tree_with_nested_branches() {
        let mut f = Fixture::new();
        f.user("root", None);
        for b in 0..4 {
            f.asst(&format!("a{b}"), Some("root"));
            f.user(&format!("a{b}-x"), None);
            f.user(&format!("a{b}-y"), Some(&format!("a{b}")));
        }
        f.asst("deep", Some("a2-x"));
        f.leaf("deep");
        let sel = TreeSelector::new(&f.s, 60, None, FilterMode::Default, None);
        insta::assert_snapshot!(frame(&sel, 70, 32, None));
    }

    #[test]
    fn active_path_and_cursor_in_the_worked_example() {
        let f = branching();
        let mut sel = f.selector();
        let at_leaf = frame(&sel, 70, 24, None);
        sel.handle(Input::End);
        let at_end = frame(&sel, 70, 24, Some("Already at this point"));
        insta::assert_snapshot!(format!("{at_leaf}=== End\n{at_end}"));
    }

    #[test]
    fn compacted_demo_session() {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo/demo.jsonl");
        let s = arbor_tree::Session::open(&path, arbor_tree::OpenMode::ReadOnly, arbor_tree::SessionOptions::default())
            .unwrap();
        let sel = TreeSelector::new(&s, 60, None, FilterMode::Default, None);
        insta::assert_snapshot!(frame(&sel, 100, 40, None));
    }

    #[test]
    fn truncation_by_display_width() {
        let mut f = Fixture::new();
        f.msg("wide", None, super::super::selector::tests::user("日本語のテキストがとても長い行になります"));
        let sel = f.selector();
        let text = frame(&sel, 23, 10, None);
        let row = text.lines().nth(7).unwrap();
        assert_eq!(row, "› • user: 日本語のテキ");
        use unicode_width::UnicodeWidthStr;
        assert!(row.width() <= 23);
    }

    #[test]
    fn tiny_terminal_does_not_panic() {
        let f = with_extras();
        let mut sel = TreeSelector::new(&f.s, 5, None, FilterMode::Default, None);
        let a = frame(&sel, 20, 5, Some("status"));
        sel.handle(Input::Char('L'));
        let b = frame(&sel, 20, 5, None);
        let c = frame(&sel, 1, 1, None);
        insta::assert_snapshot!(format!("{a}---\n{b}---\n{c}"));
        let mut term = Terminal::new(TestBackend::new(20, 5)).unwrap();
        term.draw(|fr| {
            let area = fr.area();
            draw_choice("Summarize branch?", &["No summary", "Summarize"], 1, area, fr.buffer_mut());
        })
        .unwrap();
        term.draw(|fr| {
            let area = fr.area();
            draw_prompt("Custom summarization instructions", "focus", area, fr.buffer_mut());
        })
        .unwrap();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod robustness {
    use super::*;
    use crate::ui::tui::selector::{FilterMode, Input};

    /// Every fixture log, every input, drawn in a small and a tiny buffer: no panics.
    #[test]
    fn every_fixture_survives_every_input() {
        let files = crate::fixture_logs();
        assert!(files.len() > 10);
        let inputs = [
            Input::Down,
            Input::FoldOrUp,
            Input::FoldOrUp,
            Input::UnfoldOrDown,
            Input::PageDown,
            Input::UnfoldOrDown,
            Input::ToggleFilter(FilterMode::All),
            Input::End,
            Input::FoldOrUp,
            Input::CycleFilter { forward: true },
            Input::Char('e'),
            Input::Up,
            Input::Backspace,
            Input::ToggleFilter(FilterMode::LabeledOnly),
            Input::Up,
            Input::FilterDefault,
            Input::PageUp,
            Input::Home,
            Input::Char('L'),
            Input::Char('x'),
            Input::Escape,
        ];
        for f in files {
            let Ok(s) =
                arbor_tree::Session::open(&f, arbor_tree::OpenMode::ReadOnly, arbor_tree::SessionOptions::default())
            else {
                continue;
            };
            let mut sel = TreeSelector::new(&s, 12, None, FilterMode::Default, None);
            for input in inputs.iter().cloned() {
                sel.handle(input);
                for (w, h) in [(40, 12), (3, 2)] {
                    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
                    draw_selector(&sel, Some("status"), buf.area, &mut buf);
                }
            }
        }
    }
}
