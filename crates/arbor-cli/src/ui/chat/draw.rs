//! Drawing the chat: the conversation (the newest messages, wrapped to the
//! width), the status bar, the prompt and the status line. Pure: it draws
//! into a buffer, so frames are snapshot-tested.

use arbor_log::{MessageView, Role};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::view::ChatView;

/// The most context messages the transcript looks at (the newest ones).
pub const TRANSCRIPT_MESSAGES: usize = 200;

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

fn text_of(m: &Value, kind: &str, field: &str) -> String {
    match m.get("content") {
        Some(Value::String(s)) if kind == "text" => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some(kind))
            .filter_map(|b| b.get(field).and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// One message as (text, style) paragraphs.
fn paragraphs(m: &Value) -> Vec<(String, Style)> {
    let dim = Style::default().fg(Color::DarkGray);
    let str_field = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let Some(role) = MessageView::new(m).role() else { return vec![("[]".to_owned(), dim)] };
    match role {
        Role::User => {
            vec![(
                format!("› {}", text_of(m, "text", "text")),
                Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            )]
        }
        Role::Assistant => {
            let mut out = vec![];
            let thinking = text_of(m, "thinking", "thinking");
            if !thinking.trim().is_empty() {
                out.push((format!("(thinking) {}", thinking.trim()), dim.add_modifier(Modifier::ITALIC)));
            }
            let text = text_of(m, "text", "text");
            if !text.is_empty() {
                out.push((text, Style::default()));
            }
            match m.get("stopReason").and_then(Value::as_str) {
                Some("aborted") => out.push(("(aborted)".to_owned(), Style::default().fg(Color::Yellow))),
                Some("error") => out.push((
                    format!("(error: {})", m.get("errorMessage").and_then(Value::as_str).unwrap_or("unknown")),
                    Style::default().fg(Color::Red),
                )),
                _ => {}
            }
            out
        }
        Role::BranchSummary => vec![(format!("[branch summary] {}", str_field("summary")), dim)],
        Role::CompactionSummary => vec![(
            format!(
                "[compacted {} tokens] {}",
                m.get("tokensBefore").and_then(Value::as_u64).unwrap_or(0),
                str_field("summary")
            ),
            dim,
        )],
        Role::ToolResult => vec![(format!("[tool result] {}", text_of(m, "text", "text")), dim)],
        Role::BashExecution => vec![(format!("[bash] $ {}", str_field("command")), dim)],
        Role::Custom | Role::HookMessage => {
            vec![(format!("[{}] {}", str_field("customType"), text_of(m, "text", "text")), dim)]
        }
        Role::Developer | Role::Other(_) => vec![(format!("[{role}]"), dim)],
    }
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
    let start = messages.len().saturating_sub(TRANSCRIPT_MESSAGES);
    let mut paras: Vec<(String, Style)> = vec![];
    for m in &messages[start..] {
        paras.extend(paragraphs(m));
        paras.push((String::new(), Style::default()));
    }
    if let Some(u) = &view.pending_user {
        paras.push((format!("› {u}"), Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD)));
        paras.push((String::new(), Style::default()));
    }
    if let Some(s) = &view.streaming {
        paras.push((format!("{s}▌"), Style::default()));
        paras.push((String::new(), Style::default()));
    }
    for n in &view.notes {
        paras.push((n.clone(), Style::default().fg(Color::Magenta)));
    }
    for (text, style) in paras {
        if text.is_empty() {
            lines.push(Line::default());
        } else {
            wrap(&text, width, style, &mut lines);
        }
    }
    lines
}

fn put(buf: &mut Buffer, area: Rect, y: u16, line: &Line<'_>) {
    if y < area.height {
        buf.set_line(area.x, area.y + y, line, area.width);
    }
}

/// The visible part of the prompt and the cursor column: it scrolls
/// horizontally so the cursor stays on screen.
fn input_window(input: &str, cursor: usize, width: usize) -> (String, usize) {
    let chars: Vec<char> = input.chars().map(|c| if c == '\n' { '↵' } else { c }).collect();
    let cursor = cursor.min(chars.len());
    let col = |from: usize, to: usize| chars[from..to].iter().map(|c| c.width().unwrap_or(0)).sum::<usize>();
    let mut start = 0;
    while start < cursor && col(start, cursor) >= width.max(1) {
        start += 1;
    }
    let mut shown = String::new();
    let mut used = 0;
    for c in &chars[start..] {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            break;
        }
        used += w;
        shown.push(*c);
    }
    (shown, col(start, cursor))
}

/// Draws the chat: the conversation, the status bar, the prompt and the status line.
/// Returns the cursor position on screen.
pub fn draw(messages: &[Value], view: &ChatView, bar: &Bar, area: Rect, buf: &mut Buffer) -> (u16, u16) {
    if area.height == 0 || area.width == 0 {
        return (area.x, area.y);
    }
    let width = usize::from(area.width);
    let reserved = 3.min(area.height);
    let body = area.height - reserved;
    let lines = transcript(messages, view, width);
    let visible = usize::from(body);
    let end = lines.len().saturating_sub(view.scroll.min(lines.len().saturating_sub(visible)));
    let first = end.saturating_sub(visible);
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
    let y_bar = area.height.saturating_sub(3);
    if area.height >= 3 {
        put(buf, area, y_bar, &Line::from(Span::styled(info, bar_style)));
    }
    let y_input = area.height.saturating_sub(2);
    let (shown, cursor_col) = input_window(&view.input, view.cursor, width.saturating_sub(2));
    if area.height >= 2 {
        put(
            buf,
            area,
            y_input,
            &Line::from(vec![Span::styled("> ", Style::default().fg(Color::Cyan)), Span::raw(shown)]),
        );
    }
    let y_status = area.height - 1;
    let status = match (&view.busy, &view.status) {
        (Some(b), _) => Line::from(Span::styled(b.clone(), Style::default().fg(Color::Yellow))),
        (None, Some(s)) => Line::from(Span::styled(s.clone(), Style::default().fg(Color::Green))),
        (None, None) => Line::from(Span::styled(
            "Enter: send · /help: commands · Esc Esc: tree · Ctrl+D: quit",
            Style::default().fg(Color::DarkGray),
        )),
    };
    put(buf, area, y_status, &status);
    let cx = area.x + (2 + cursor_col).min(width.saturating_sub(1)) as u16;
    (cx, area.y + y_input)
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
    fn the_prompt_scrolls_to_keep_the_cursor_visible() {
        let (shown, col) = input_window("abcdefghij", 10, 4);
        assert_eq!((shown.as_str(), col), ("hij", 3));
        let (shown, col) = input_window("abcdefghij", 0, 4);
        assert_eq!((shown.as_str(), col), ("abcd", 0));
        let (shown, _) = input_window("日本語", 3, 4);
        assert_eq!(shown, "語");
    }
}
