//! Drawing the selector into a ratatui [`Buffer`] (docs/cli.md, "arbor tui"). Pure: the
//! same state always draws the same cells, so frames can be snapshot-tested.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use super::fork_selector::{self, ForkSelector};
use super::selector::TreeSelector;
use crate::shared::visible::visible;

/// pi's help line, with the way out (`Esc: quit` in `arbor tui`, `Esc:
/// back to the chat` in the chat).
pub fn help(exit: &str) -> String {
    format!(
        "↑/↓: move. ←/→: page. ^←/^→: fold/branch. Shift+L: label. ^D/^T/^U/^L/^A: filters (^O/⇧^O cycle). Esc: {exit}"
    )
}

/// The help wrapped to the width, indented by two: never cut, at most three lines.
fn help_lines(exit: &str, width: u16) -> Vec<String> {
    let width = usize::from(width).saturating_sub(2).max(8);
    let mut lines: Vec<String> = textwrap::wrap(&help(exit), width).into_iter().map(|l| format!("  {l}")).collect();
    lines.truncate(3);
    lines
}

/// Most lines a status (an error, say) may wrap to.
const STATUS_LINES: usize = 4;

/// Cuts styled pieces to `width` display columns, never splitting a character.
fn truncate(pieces: Vec<(String, Style)>, width: usize) -> Line<'static> {
    let mut used = 0;
    let mut spans = vec![];
    for (text, style) in pieces {
        // Text from the files: control characters are shown, not obeyed.
        let text = visible(&text);
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

/// The status wrapped to the width, indented by two, at most [`STATUS_LINES`] lines.
fn status_lines(status: Option<&str>, width: u16) -> Vec<String> {
    let Some(s) = status else { return vec![] };
    let width = usize::from(width).saturating_sub(2).max(8);
    let mut lines: Vec<String> = textwrap::wrap(s, width).into_iter().map(|l| format!("  {l}")).collect();
    if lines.len() > STATUS_LINES {
        lines.truncate(STATUS_LINES);
        if let Some(last) = lines.last_mut() {
            last.push('…');
        }
    }
    lines
}

/// Which optional lines of the selector's frame fit, and the list's height.
struct Frame {
    /// The blank lines around the list and above the frame.
    blanks: bool,
    /// The help's lines (none when there is no room).
    help: u16,
    top_border: bool,
    list: u16,
}

impl Frame {
    /// The frame for a screen `height` rows high with `status` lines at the bottom:
    /// the list gets every row the frame does not take, and at least five while
    /// there are optional lines (blanks, then the help line, then the top border) to give up.
    fn new(height: u16, status: usize, help: usize) -> Frame {
        // Title, search line, border, footer, border, and the status.
        let fixed = 5 + status as u16;
        let mut f = Frame { blanks: true, help: help as u16, top_border: true, list: 0 };
        for step in 0..4 {
            match step {
                1 => f.blanks = false,
                2 => f.help = 0,
                3 => f.top_border = false,
                _ => {}
            }
            let optional = 3 * u16::from(f.blanks) + f.help + u16::from(f.top_border);
            f.list = height.saturating_sub(fixed + optional);
            if f.list >= 5 {
                break;
            }
        }
        f.list = f.list.max(1);
        f
    }
}

/// How many rows the list shows and how wide they are, on a screen
/// `width`×`height` with this status line and way out (what [`draw_selector`] will do).
pub fn list_size(width: u16, height: u16, status: Option<&str>, exit: &str) -> (usize, usize) {
    let f = Frame::new(height, status_lines(status, width).len(), help_lines(exit, width).len());
    (usize::from(f.list), usize::from(width))
}

/// Draws the whole selector: a header naming the session (`title`), the search line,
/// the help (its way out: `exit`), the list (or the label editor), the
/// footer, and the status wrapped at the bottom.
pub fn draw_selector(sel: &TreeSelector, title: &str, exit: &str, status: Option<&str>, area: Rect, buf: &mut Buffer) {
    let status = status_lines(status, area.width);
    let help = help_lines(exit, area.width);
    let frame = Frame::new(area.height, status.len(), help.len());
    let mut y = 0;
    if frame.blanks {
        put(buf, area, &mut y, plain(""));
    }
    if frame.top_border {
        put(buf, area, &mut y, border(area));
    }
    let title = if title.is_empty() { "Session Tree".to_owned() } else { format!("Session Tree: {title}") };
    put(buf, area, &mut y, vec![(format!("  {title}"), Style::default().add_modifier(Modifier::BOLD))]);
    if frame.help > 0 {
        for line in help {
            put(buf, area, &mut y, plain(line));
        }
    }
    put(buf, area, &mut y, plain(format!("  Type to search: {}", sel.query())));
    put(buf, area, &mut y, border(area));
    if frame.blanks {
        put(buf, area, &mut y, plain(""));
    }
    let list_top = y;
    let dim = Style::default().add_modifier(Modifier::DIM);
    if let Some(edit) = sel.label_edit() {
        put(buf, area, &mut y, vec![("  Label for: ".to_owned(), dim), (edit.text.clone(), Style::default())]);
        put(buf, area, &mut y, vec![("  > ".into(), Style::default()), (format!("{}▏", edit.value), Style::default())]);
        put(buf, area, &mut y, plain("  Enter: save (empty to remove). Esc: cancel."));
    } else if sel.visible_len() == 0 {
        match sel.reading().filter(|_| sel.search_waits()) {
            Some((done, total)) => {
                let pct = done * 100 / total.max(1);
                put(buf, area, &mut y, plain(format!("  Reading the entries for the search... {pct}%")));
            }
            None => put(buf, area, &mut y, plain("  No entries found")),
        }
    } else {
        let (start, end) = sel.window();
        let accent = Style::default().fg(Color::Cyan);
        for row in sel.rows(start, end) {
            let mut pieces = vec![];
            pieces.push((if row.selected { "› " } else { "  " }.to_owned(), accent));
            pieces.push((row.prefix, dim));
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
    }
    y = y.max(list_top + frame.list);
    let mut footer = vec![(sel.footer(), Style::default())];
    if let Some((done, total)) = sel.reading() {
        footer.push((format!("  reading entries {}%", done * 100 / total.max(1)), dim));
    }
    put(buf, area, &mut y, footer);
    if frame.blanks {
        put(buf, area, &mut y, plain(""));
    }
    put(buf, area, &mut y, border(area));
    for line in status {
        put(buf, area, &mut y, plain(line));
    }
}

/// Draws one line of what is going on (a navigation, a summary) under a header.
pub fn draw_prompt_line(what: &str, area: Rect, buf: &mut Buffer) {
    let mut y = 0;
    header(buf, area, &mut y, "Session Tree");
    put(buf, area, &mut y, border(area));
    put(buf, area, &mut y, plain(format!("  {what}")));
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

    /// The selector drawn on a `w`×`h` screen (its list sized as the screen's loop sizes it).
    fn frame(sel: &mut TreeSelector, w: u16, h: u16, status: Option<&str>) -> String {
        let (page, width) = list_size(w, h, status, "quit");
        sel.set_size(page, width);
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        term.draw(|f| {
            let area = f.area();
            draw_selector(sel, "s.jsonl", "quit", status, area, f.buffer_mut());
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
        let mut sel = TreeSelector::full(&f.s, 5, None, FilterMode::Default);
        let mut frames = String::new();
        for _ in 0..5 {
            frames.push_str(&format!("=== {:?}\n", sel.mode()));
            frames.push_str(&frame(&mut sel, 90, 26, None));
            sel.handle(Input::CycleFilter { forward: true });
        }
        insta::assert_snapshot!(frames);
    }

    #[test]
    fn search() {
        let f = with_extras();
        let mut sel = TreeSelector::full(&f.s, 5, None, FilterMode::Default);
        for c in "3".chars() {
            sel.handle(Input::Char(c));
        }
        insta::assert_snapshot!(frame(&mut sel, 80, 16, None));
    }

    #[test]
    fn label_editing() {
        let f = branching();
        let mut sel = f.selector();
        sel.handle(Input::Char('L'));
        for c in "v1 ✓".chars() {
            sel.handle(Input::Char(c));
        }
        let editing = frame(&mut sel, 80, 14, None);
        sel.handle(Input::Enter);
        let after = frame(&mut sel, 80, 24, Some("Label saved"));
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
        let mut sel = TreeSelector::full(&f.s, 5, None, FilterMode::Default);
        insta::assert_snapshot!(frame(&mut sel, 60, 22, None));
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
        let mut sel = TreeSelector::full(&f.s, 5, None, FilterMode::Default);
        insta::assert_snapshot!(frame(&mut sel, 70, 32, None));
    }

    #[test]
    fn active_path_and_cursor_in_the_worked_example() {
        let f = branching();
        let mut sel = f.selector();
        let at_leaf = frame(&mut sel, 70, 24, None);
        sel.handle(Input::End);
        let at_end = frame(&mut sel, 70, 24, Some("Already at this point"));
        insta::assert_snapshot!(format!("{at_leaf}=== End\n{at_end}"));
    }

    #[test]
    fn compacted_demo_session() {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo/demo.jsonl");
        let s = arbor_tree::Session::open(&path, arbor_tree::OpenMode::ReadOnly, arbor_tree::SessionOptions::default())
            .unwrap();
        let mut sel = TreeSelector::full(&s, 5, None, FilterMode::Default);
        insta::assert_snapshot!(frame(&mut sel, 100, 40, None));
    }

    #[test]
    fn truncation_by_display_width() {
        let mut f = Fixture::new();
        f.msg("wide", None, super::super::selector::tests::user("日本語のテキストがとても長い行になります"));
        let mut sel = f.selector();
        let text = frame(&mut sel, 23, 10, None);
        let row = text.lines().find(|l| l.starts_with("› ")).unwrap();
        assert_eq!(row, "› • user: 日本語のテキ");
        use unicode_width::UnicodeWidthStr;
        assert!(row.width() <= 23);
    }

    #[test]
    fn tiny_terminal_does_not_panic() {
        let f = with_extras();
        let mut sel = TreeSelector::full(&f.s, 5, None, FilterMode::Default);
        let a = frame(&mut sel, 20, 5, Some("status"));
        sel.handle(Input::Char('L'));
        let b = frame(&mut sel, 20, 5, None);
        let c = frame(&mut sel, 1, 1, None);
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
            let mut sel = TreeSelector::full(&s, 5, None, FilterMode::Default);
            for input in inputs.iter().cloned() {
                sel.handle(input);
                for (w, h) in [(40, 12), (3, 2)] {
                    let (page, width) = list_size(w, h, Some("status"), "quit");
                    sel.set_size(page, width);
                    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
                    draw_selector(&sel, "title", "quit", Some("status"), buf.area, &mut buf);
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod frame_tests {
    use super::*;
    use crate::ui::terminal::buffer_text;
    use crate::ui::tui::selector::tests::branching;
    use unicode_width::UnicodeWidthStr;

    fn draw(sel: &mut TreeSelector, w: u16, h: u16, status: Option<&str>) -> String {
        let (page, width) = list_size(w, h, status, "quit");
        sel.set_size(page, width);
        let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
        draw_selector(sel, "a-session.jsonl", "quit", status, buf.area, &mut buf);
        buffer_text(&buf)
    }

    /// #19: the header names the session, the list takes every row the frame
    /// leaves, the footer is whole at 60×12, and an error wraps instead of being cut.
    #[test]
    fn the_frame_names_the_session_fills_the_height_and_wraps_errors() {
        let f = branching();
        let mut sel = f.selector();
        let error = "Error: No model available for summarization: set ANTHROPIC_API_KEY or pass --model PROVIDER/MODEL with --base-url";
        let small = draw(&mut sel, 60, 12, Some(error));
        insta::assert_snapshot!(small);
        let lines: Vec<&str> = small.lines().collect();
        assert_eq!(lines.len(), 12);
        assert!(lines[0].contains("Session Tree: a-session.jsonl"), "{small}");
        assert!(lines.iter().any(|l| l.trim_start().starts_with("(8/11)")), "the footer is whole: {small}");
        assert!(small.contains("--base-url"), "the error's end is shown: {small}");
        assert!(lines.iter().all(|l| l.width() <= 60));
        // A tall screen: every row of the tree and the footer, no scrolling.
        let tall = draw(&mut sel, 100, 40, None);
        assert_eq!(sel.window(), (0, 11));
        // The frame takes ten rows, and the help one more where it wraps (100 columns).
        assert_eq!(sel.page(), 40 - 11);
        assert!(tall.contains("user: user-4b message"), "{tall}");
    }
}
