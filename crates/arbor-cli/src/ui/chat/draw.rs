//! Drawing the chat: the conversation (the newest messages, wrapped to the
//! width), the status bar, the prompt (wrapped, growing to a third of the
//! screen) and the status line. Pure: it draws into a buffer, so frames are
//! snapshot-tested.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::commands::completions;
use super::transcript::{paragraphs, user_style, Detail};
use super::view::ChatView;
use crate::shared::visible;

/// The status bar: model, thinking level, tokens, session name.
#[derive(Debug, Clone, Default)]
pub struct Bar {
    /// `provider/model`.
    pub model: String,
    /// Thinking level.
    pub thinking: String,
    /// Estimated context tokens.
    pub tokens: u64,
    /// The model's window.
    pub window: u64,
    /// The session's name, or its file name.
    pub name: String,
}

/// Wraps `text` to `width` columns (words where possible, never splitting a character).
fn wrap(text: &str, width: usize, style: Style, out: &mut Vec<Line<'static>>) {
    let width = width.max(1);
    for line in textwrap::wrap(text, textwrap::Options::new(width).break_words(true)) {
        // textwrap measures in display columns; make sure of it for wide characters.
        let mut s = String::new();
        let mut used = 0;
        for c in line.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width {
                out.push(Line::from(Span::styled(std::mem::take(&mut s), style)));
                used = 0;
            }
            used += w;
            s.push(c);
        }
        out.push(Line::from(Span::styled(s, style)));
    }
}

/// The conversation lines for a width, oldest first.
fn transcript(messages: &[Value], view: &ChatView, width: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = vec![];
    let mut paras: Vec<(String, Style)> = vec![];
    let detail = Detail { expanded: view.expanded, thinking_collapsed: view.thinking_collapsed };
    for m in messages {
        paras.extend(paragraphs(m, detail));
        paras.push((String::new(), Style::default()));
    }
    if let Some(u) = &view.pending_user {
        paras.push((format!("› {u}"), user_style()));
        paras.push((String::new(), Style::default()));
    }
    if let Some(s) = &view.streaming {
        paras.push((format!("{s}▌"), Style::default()));
        paras.push((String::new(), Style::default()));
    }
    for q in &view.queued {
        paras.push((format!("Queued: {q}"), Style::default().fg(Color::DarkGray)));
    }
    for n in &view.notes {
        paras.push((n.clone(), Style::default().fg(Color::Magenta)));
    }
    for (text, style) in paras {
        if text.is_empty() {
            lines.push(Line::default());
        } else {
            // Text from the file or the model: its control characters are shown, not obeyed.
            wrap(&visible::visible(&text), width, style, &mut lines);
        }
    }
    lines
}

fn put(buf: &mut Buffer, area: Rect, y: u16, line: &Line<'_>) {
    if y < area.height {
        buf.set_line(area.x, area.y + y, line, area.width);
    }
}

/// The prompt wrapped to `width` columns (a newline starts a row), and the
/// cursor's row and column.
fn input_rows(input: &str, cursor: usize, width: usize) -> (Vec<String>, (usize, usize)) {
    let width = width.max(1);
    let mut rows = vec![String::new()];
    let (mut used, mut at) = (0, (0, 0));
    for (i, c) in input.chars().enumerate() {
        if i == cursor {
            at = (rows.len() - 1, used);
        }
        if c == '\n' {
            rows.push(String::new());
            used = 0;
            continue;
        }
        let w = c.width().unwrap_or(0);
        if used + w > width {
            rows.push(String::new());
            used = 0;
        }
        if let Some(r) = rows.last_mut() {
            r.push(c);
        }
        used += w;
    }
    if cursor >= input.chars().count() {
        // At the end: after the last character, or at the start of a new row when the last one is full.
        at = if used >= width { (rows.len(), 0) } else { (rows.len() - 1, used) };
        if at.0 == rows.len() {
            rows.push(String::new());
        }
    }
    (rows, at)
}

/// Draws the chat: the conversation, the status bar, the prompt and the status line.
/// Returns the cursor position on screen.
pub fn draw(messages: &[Value], view: &ChatView, bar: &Bar, area: Rect, buf: &mut Buffer) -> (u16, u16) {
    if area.height == 0 || area.width == 0 {
        return (area.x, area.y);
    }
    let width = usize::from(area.width);
    let (rows, (cursor_row, cursor_col)) = input_rows(&view.input, view.cursor, width.saturating_sub(2));
    // The prompt grows to a third of the screen; past that it shows the rows around the cursor.
    let max_rows = (usize::from(area.height).saturating_sub(2) / 3).max(1);
    let shown_rows = rows.len().min(max_rows);
    let first_row = (cursor_row + 1).saturating_sub(shown_rows).min(rows.len() - shown_rows);
    let reserved = (2 + shown_rows).min(usize::from(area.height));
    let body = usize::from(area.height) - reserved;
    let lines = transcript(messages, view, width);
    let end = lines.len().saturating_sub(view.scroll.min(lines.len().saturating_sub(body)));
    let first = end.saturating_sub(body);
    for (i, line) in lines[first..end].iter().enumerate() {
        put(buf, area, i as u16, line);
    }
    let pct = if bar.window == 0 { 0.0 } else { bar.tokens as f64 * 100.0 / bar.window as f64 };
    let mut info =
        format!(" {} · thinking {} · ~{} tokens ({pct:.0}%) · {}", bar.model, bar.thinking, bar.tokens, bar.name);
    if view.scroll > 0 {
        info.push_str(" · scrolled (PgDn)");
    }
    let pad = width.saturating_sub(UnicodeWidthStr::width(info.as_str()));
    info.push_str(&" ".repeat(pad));
    let bar_style = Style::default().add_modifier(Modifier::REVERSED);
    if body < usize::from(area.height) {
        put(buf, area, body as u16, &Line::from(Span::styled(info, bar_style)));
    }
    for (i, row) in rows[first_row..first_row + shown_rows].iter().enumerate() {
        let y = body + 1 + i;
        if y + 1 >= usize::from(area.height) {
            break;
        }
        let lead = if first_row + i == 0 { "> " } else { "  " };
        put(
            buf,
            area,
            y as u16,
            &Line::from(vec![Span::styled(lead, Style::default().fg(Color::Cyan)), Span::raw(row.clone())]),
        );
    }
    let y_status = area.height - 1;
    let hint = completions(&view.input);
    let status = match (&view.busy, &view.status) {
        (Some(b), _) => Line::from(Span::styled(visible::visible(b).into_owned(), Style::default().fg(Color::Yellow))),
        _ if !hint.is_empty() => {
            Line::from(Span::styled(format!("Tab: {}", hint.join("  ")), Style::default().fg(Color::DarkGray)))
        }
        (None, Some(s)) => {
            Line::from(Span::styled(visible::visible(s).into_owned(), Style::default().fg(Color::Green)))
        }
        (None, None) => Line::from(Span::styled(
            "Enter: send · ↑: earlier prompts · /help, /hotkeys · Esc Esc: tree · Ctrl+L: model · Ctrl+D: quit",
            Style::default().fg(Color::DarkGray),
        )),
    };
    put(buf, area, y_status, &status);
    let cy = (body + 1 + cursor_row.saturating_sub(first_row)).min(usize::from(area.height) - 1);
    let cx = area.x + (2 + cursor_col).min(width.saturating_sub(1)) as u16;
    (cx, area.y + cy as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::terminal::buffer_text;
    use serde_json::json;

    fn frame(messages: &[Value], view: &ChatView, w: u16, h: u16) -> String {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        let bar = Bar {
            model: "openai/test-model".into(),
            thinking: "off".into(),
            tokens: 1234,
            window: 128000,
            name: "demo".into(),
        };
        draw(messages, view, &bar, area, &mut buf);
        buffer_text(&buf)
    }

    fn conversation() -> Vec<Value> {
        vec![
            json!({"role": "user", "content": [{"type": "text", "text": "What is a session tree?"}], "timestamp": 1}),
            json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "Define it."}, {"type": "text", "text": "An append-only log whose entries point at their parents, so every point can be branched from."}], "stopReason": "stop", "timestamp": 2}),
            json!({"role": "branchSummary", "summary": "Tried another wording.", "fromId": "x", "timestamp": 3}),
            json!({"role": "user", "content": [{"type": "text", "text": "Longer, please"}], "timestamp": 4}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "Sure - "}], "stopReason": "aborted", "errorMessage": "Request was aborted", "timestamp": 5}),
        ]
    }

    #[test]
    fn frames() {
        let idle = ChatView::default();
        insta::assert_snapshot!("chat_idle", frame(&conversation(), &idle, 48, 16));
        let mut streaming = ChatView {
            pending_user: Some("And a compaction?".into()),
            streaming: Some("It summarizes older".into()),
            busy: Some("Streaming... (Esc to abort)".into()),
            ..Default::default()
        };
        streaming.set_input("typing ahead");
        insta::assert_snapshot!("chat_streaming", frame(&conversation(), &streaming, 48, 16));
        let noted = ChatView {
            notes: vec!["Context: 5 messages, about 1234 tokens of 128000 (1.0%)".into()],
            status: Some("Label set: start (on a1b2c3d4)".into()),
            ..Default::default()
        };
        insta::assert_snapshot!(
            "chat_notes_cjk",
            frame(
                &[json!({"role": "user", "content": "日本語のテキストと絵文字 🌳🌳 が折り返される"})],
                &noted,
                20,
                10
            )
        );
    }

    #[test]
    fn tiny_terminals_do_not_panic() {
        let mut v = ChatView::default();
        v.set_input("日本語 long input that scrolls");
        for (w, h) in [(1, 1), (2, 2), (3, 3), (10, 4), (0, 0)] {
            frame(&conversation(), &v, w, h);
        }
    }

    #[test]
    fn the_prompt_wraps_and_the_cursor_follows() {
        let (rows, at) = input_rows("abcdefghij", 10, 4);
        assert_eq!((rows, at), (vec!["abcd".to_owned(), "efgh".into(), "ij".into()], (2, 2)));
        let (rows, at) = input_rows("abcdefgh", 8, 4);
        assert_eq!((rows, at), (vec!["abcd".to_owned(), "efgh".into(), String::new()], (2, 0)));
        let (_, at) = input_rows("abcdefghij", 0, 4);
        assert_eq!(at, (0, 0));
        let (rows, at) = input_rows("ab\ncd", 5, 10);
        assert_eq!((rows, at), (vec!["ab".to_owned(), "cd".into()], (1, 2)));
        let (rows, _) = input_rows("日本語", 3, 4);
        assert_eq!(rows[0], "日本");
    }

    #[test]
    fn a_long_prompt_shows_its_start_and_its_end() {
        let mut v = ChatView::default();
        v.set_input(&format!("begin-{}-finish", "x".repeat(60)));
        let f = frame(&[], &v, 40, 16);
        assert!(f.contains("> begin-xxx") && f.contains("xx-finish"), "{f}");
    }
}
