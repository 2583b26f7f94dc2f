//! `arbor chat` in a terminal: the conversation above, a status bar and the
//! prompt below. The drawing is pure ([`draw`]) so frames are snapshot-tested;
//! [`run`] owns the terminal and the key loop.
//!
//! Keys: Enter sends; Esc or Ctrl+C while a reply streams aborts it (and a
//! running summary or compaction); Esc twice within 500 ms on an empty prompt
//! opens the selector named by `doubleEscapeAction`; Ctrl+C clears the prompt,
//! and on an empty prompt leaves (so does Ctrl+D); PageUp/PageDown scroll.

use std::io;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::backend::CrosstermBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::Terminal;
use serde_json::Value;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use arbor_agent::{AgentEvent, HookFailure, StreamDelta};

use super::commands::{self, Input, HELP};
use super::core::{auto_compaction_report, compaction_report, Chat};
use super::settings::DoubleEscape;
use crate::tui::{self, Decision, FilterMode, ForkSelector, Term, TerminalGuard, TreeHost, TreeSelector};

/// The most context messages the transcript looks at (the newest ones).
const TRANSCRIPT_MESSAGES: usize = 200;
const DOUBLE_ESCAPE: Duration = Duration::from_millis(500);

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
    /// Lines to show after the conversation (help, /context, notices); cleared on the next prompt.
    pub notes: Vec<String>,
    /// The status line.
    pub status: Option<String>,
    /// What runs now (a reply, a summary), with how to cancel it.
    pub busy: Option<String>,
    /// Lines scrolled up from the bottom.
    pub scroll: usize,
    last_escape: Option<Instant>,
}

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

impl Bar {
    fn of(chat: &Chat) -> Bar {
        let name = chat.session().session_name().map(str::to_owned).unwrap_or_else(|| {
            chat.file().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        });
        Bar {
            model: chat.model_name(),
            thinking: chat.agent().thinking_level().to_owned(),
            tokens: chat.agent().context_tokens(),
            window: chat.agent().context_window(),
            name,
        }
    }
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
    match m.get("role").and_then(Value::as_str).unwrap_or("") {
        "user" => {
            vec![(
                format!("› {}", text_of(m, "text", "text")),
                Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            )]
        }
        "assistant" => {
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
        "branchSummary" => vec![(format!("[branch summary] {}", str_field("summary")), dim)],
        "compactionSummary" => vec![(
            format!(
                "[compacted {} tokens] {}",
                m.get("tokensBefore").and_then(Value::as_u64).unwrap_or(0),
                str_field("summary")
            ),
            dim,
        )],
        "toolResult" => vec![(format!("[tool result] {}", text_of(m, "text", "text")), dim)],
        "bashExecution" => vec![(format!("[bash] $ {}", str_field("command")), dim)],
        "custom" | "hookMessage" => {
            vec![(format!("[{}] {}", str_field("customType"), text_of(m, "text", "text")), dim)]
        }
        other => vec![(format!("[{other}]"), dim)],
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
    /// Leave.
    Quit,
}

impl ChatView {
    fn insert(&mut self, c: char) {
        let at = self.byte_at(self.cursor);
        self.input.insert(at, c);
        self.cursor += 1;
    }

    fn byte_at(&self, chars: usize) -> usize {
        self.input.char_indices().nth(chars).map_or(self.input.len(), |(i, _)| i)
    }

    /// Sets the prompt text with the cursor at its end.
    pub fn set_input(&mut self, text: &str) {
        self.input = text.to_owned();
        self.cursor = text.chars().count();
    }

    /// Edits the prompt; used while idle and, for typing ahead, while busy.
    fn edit(&mut self, key: &KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('a') if ctrl => self.cursor = 0,
            KeyCode::Char('e') if ctrl => self.cursor = self.input.chars().count(),
            KeyCode::Char('u') if ctrl => {
                let at = self.byte_at(self.cursor);
                self.input.replace_range(..at, "");
                self.cursor = 0;
            }
            KeyCode::Char('j') if ctrl => self.insert('\n'),
            KeyCode::Enter if key.modifiers.intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) => self.insert('\n'),
            KeyCode::Char(c) if !ctrl => self.insert(c),
            KeyCode::Backspace if self.cursor > 0 => {
                let at = self.byte_at(self.cursor - 1);
                self.input.remove(at);
                self.cursor -= 1;
            }
            KeyCode::Delete if self.cursor < self.input.chars().count() => {
                let at = self.byte_at(self.cursor);
                self.input.remove(at);
            }
            KeyCode::Left => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Right => self.cursor = (self.cursor + 1).min(self.input.chars().count()),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = self.input.chars().count(),
            KeyCode::PageUp => self.scroll += 10,
            KeyCode::PageDown => self.scroll = self.scroll.saturating_sub(10),
            _ => return false,
        }
        true
    }

    /// One key while idle.
    pub fn key(&mut self, key: &KeyEvent, double_escape: DoubleEscape, now: Instant) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if key.code != KeyCode::Esc {
            self.last_escape = None;
        }
        match key.code {
            KeyCode::Enter if key.modifiers.is_empty() => {
                let text = std::mem::take(&mut self.input);
                self.cursor = 0;
                self.scroll = 0;
                Action::Submit(text)
            }
            KeyCode::Char('c') if ctrl => {
                if self.input.is_empty() {
                    return Action::Quit;
                }
                self.set_input("");
                Action::None
            }
            KeyCode::Char('d') if ctrl && self.input.is_empty() => Action::Quit,
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

/// Hooks that failed, as lines for the notes under the conversation.
fn hook_notes(failures: &[HookFailure]) -> Vec<String> {
    failures.iter().map(|f| format!("hook failed: {f}")).collect()
}

/// True for the keys that abort a running operation: Esc and Ctrl+C.
fn is_abort(key: &KeyEvent) -> bool {
    key.code == KeyCode::Esc || (key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL))
}

/// The chat's own session as the tree selector's host.
struct ChatHost<'a> {
    chat: &'a mut Chat,
}

impl TreeHost for ChatHost<'_> {
    fn selector(
        &mut self,
        height: u16,
        initial: Option<&str>,
        filter: FilterMode,
    ) -> Result<(TreeSelector, Option<String>)> {
        Ok(tui::selector_over(self.chat.session(), height, initial, filter))
    }

    fn save_label(&mut self, id: &str, label: Option<&str>) -> Result<String> {
        self.chat.set_label(id, label)
    }
}

struct Screen {
    term: Term,
    events: Receiver<Event>,
    view: ChatView,
}

impl Screen {
    fn redraw(&mut self, messages: &[Value], bar: &Bar) -> Result<()> {
        let view = &self.view;
        self.term.draw(|f| {
            let area = f.area();
            let (x, y) = draw(messages, view, bar, area, f.buffer_mut());
            f.set_cursor_position((x, y));
        })?;
        Ok(())
    }

    fn next_event(&self) -> Result<Event> {
        self.events.recv().map_err(|_| anyhow!("the terminal closed"))
    }

    /// While something runs: take the keys that came in; true when one asks to abort.
    fn poll_keys(&mut self) -> Result<bool> {
        let mut abort = false;
        loop {
            match self.events.try_recv() {
                Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => {
                    if is_abort(&k) {
                        abort = true;
                    } else {
                        self.view.edit(&k);
                    }
                }
                Ok(_) => {}
                Err(TryRecvError::Empty) => return Ok(abort),
                Err(TryRecvError::Disconnected) => return Err(anyhow!("the terminal closed")),
            }
        }
    }
}

fn snapshot(chat: &Chat) -> (Vec<Value>, Bar) {
    let m = chat.messages();
    (m[m.len().saturating_sub(TRANSCRIPT_MESSAGES)..].to_vec(), Bar::of(chat))
}

/// Runs the chat in the terminal until the user leaves.
pub fn run(chat: &mut Chat) -> Result<()> {
    let _guard = TerminalGuard::enter()?;
    let mut term = Terminal::new(CrosstermBackend::new(io::stderr()))?;
    term.clear()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        while let Ok(ev) = event::read() {
            if tx.send(ev).is_err() {
                break;
            }
        }
    });
    let mut screen = Screen { term, events: rx, view: ChatView::default() };
    screen.view.notes = std::mem::take(&mut chat.notices);
    // What the conversation shows; taken again only after something that can change the session.
    let (mut messages, mut bar) = snapshot(chat);
    loop {
        screen.redraw(&messages, &bar)?;
        let key = match screen.next_event()? {
            Event::Key(k) if k.kind != KeyEventKind::Release => k,
            _ => continue,
        };
        let action = screen.view.key(&key, chat.settings.double_escape, Instant::now());
        if action != Action::None {
            screen.view.status = None;
        }
        let r = match action {
            Action::None => continue,
            Action::Quit => return Ok(()),
            Action::Tree => tree(chat, &mut screen, None),
            Action::Branch => branch(chat, &mut screen),
            Action::Submit(line) => match commands::parse(&line) {
                Input::Quit => return Ok(()),
                input => command(chat, &mut screen, input, &line),
            },
        };
        (messages, bar) = snapshot(chat);
        if let Err(e) = r {
            screen.view.busy = None;
            screen.view.status = Some(format!("Error: {}", crate::one_line(&e)));
            if chat.agent().write_failure().is_some() {
                return Err(e);
            }
        }
    }
}

fn command(chat: &mut Chat, screen: &mut Screen, input: Input, line: &str) -> Result<()> {
    let say = |screen: &mut Screen, r: Result<String>| -> Result<()> {
        screen.view.status = Some(r?);
        Ok(())
    };
    match input {
        Input::Empty | Input::Quit => Ok(()),
        Input::Prompt(text) => prompt(chat, screen, &text),
        Input::Tree => tree(chat, screen, None),
        Input::Branch if chat.settings.double_escape == DoubleEscape::Tree => tree(chat, screen, None),
        Input::Branch => branch(chat, screen),
        Input::Label(l) => say(screen, chat.label(l.as_deref())),
        Input::Name(n) => say(screen, chat.name(n.as_deref())),
        Input::Model(m) => say(screen, chat.model(m.as_deref())),
        Input::Thinking(t) => say(screen, chat.thinking(t.as_deref())),
        Input::Context => {
            screen.view.notes = vec![chat.context_info()];
            Ok(())
        }
        Input::Help => {
            screen.view.notes = HELP.iter().map(|(c, what)| format!("{c:<24} {what}")).collect();
            Ok(())
        }
        Input::Compact(i) => compact(chat, screen, i),
        Input::Unknown(c) => {
            screen.view.set_input(line);
            screen.view.status =
                Some(format!("Unknown command {c} (try /help; start with // to send it to the model)"));
            Ok(())
        }
    }
}

fn prompt(chat: &mut Chat, screen: &mut Screen, text: &str) -> Result<()> {
    let (messages, bar) = snapshot(chat);
    screen.view.notes.clear();
    screen.view.pending_user = Some(text.to_owned());
    screen.view.streaming = Some(String::new());
    screen.view.busy = Some("Waiting for the model... (Esc to abort)".to_owned());
    let mut failed: Option<anyhow::Error> = None;
    let r = chat.prompt(text, &mut |ev| {
        match ev {
            Some(AgentEvent::Delta(StreamDelta::Text(t))) => {
                screen.view.busy = Some("Streaming... (Esc to abort)".to_owned());
                screen.view.streaming.get_or_insert_with(String::new).push_str(&t);
            }
            Some(AgentEvent::Delta(StreamDelta::Thinking(_))) => {
                screen.view.busy = Some("Thinking... (Esc to abort)".to_owned());
            }
            Some(AgentEvent::AssistantMessage { .. }) => {
                // The reply is in the session; the next full redraw shows it from there.
            }
            Some(AgentEvent::AutoCompactionStart { reason }) => {
                screen.view.busy = Some(format!("Auto-compacting ({})... (Esc to cancel)", reason.as_str()));
            }
            Some(AgentEvent::AutoCompactionEnd { result, aborted, error_message, .. }) => {
                if let Some(m) = auto_compaction_report(result.as_ref(), aborted, error_message) {
                    screen.view.status = Some(m);
                }
            }
            _ => {}
        }
        if failed.is_none() {
            if let Err(e) = screen.redraw(&messages, &bar) {
                failed = Some(e);
            }
        }
        match screen.poll_keys() {
            Ok(abort) => abort,
            Err(e) => {
                failed.get_or_insert(e);
                true
            }
        }
    });
    screen.view.pending_user = None;
    screen.view.streaming = None;
    screen.view.busy = None;
    if let Some(e) = failed {
        return Err(e);
    }
    let r = r?;
    screen.view.notes.extend(hook_notes(&r.hook_failures));
    match r.reply.stop_reason() {
        "aborted" => screen.view.status = Some("Aborted".to_owned()),
        "error" => {
            screen.view.status = Some(format!("Error: {}", r.reply.error_message().unwrap_or("the model failed")))
        }
        "length" => screen.view.status = Some("The reply reached its length limit".to_owned()),
        _ => {}
    }
    Ok(())
}

/// Runs `op` with a busy line; Esc or Ctrl+C aborts it.
fn busy<T>(
    chat: &mut Chat,
    screen: &mut Screen,
    label: &str,
    op: impl FnOnce(&mut Chat, &mut dyn FnMut(Option<AgentEvent>) -> bool) -> Result<T>,
) -> Result<T> {
    let (messages, bar) = snapshot(chat);
    screen.view.busy = Some(label.to_owned());
    let mut failed: Option<anyhow::Error> = None;
    let r = op(chat, &mut |_| {
        if failed.is_none() {
            if let Err(e) = screen.redraw(&messages, &bar) {
                failed = Some(e);
            }
        }
        screen.poll_keys().unwrap_or(true)
    });
    screen.view.busy = None;
    if let Some(e) = failed {
        return Err(e);
    }
    r
}

fn tree(chat: &mut Chat, screen: &mut Screen, mut initial: Option<String>) -> Result<()> {
    if chat.session().get_tree().is_empty() {
        screen.view.status = Some("No entries in session".to_owned());
        return Ok(());
    }
    let mut status = None;
    loop {
        let filter = chat.settings.tree_filter;
        let skip = chat.settings.skip_summary_prompt;
        let decision = {
            let events = &screen.events;
            let mut next = || events.recv().map_err(|_| anyhow!("the terminal closed"));
            let mut host = ChatHost { chat };
            screen.term.clear()?;
            tui::select(&mut screen.term, &mut host, &mut next, initial.as_deref(), filter, status.take(), skip)?
        };
        screen.term.clear()?;
        let Decision::Navigate { id, summarize, instructions } = decision else { return Ok(()) };
        let label = if summarize { "Summarizing branch... (Esc or Ctrl+C to cancel)" } else { "Navigating..." };
        let r = busy(chat, screen, label, |chat, poll| chat.navigate(&id, summarize, instructions, poll));
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                status = Some(format!("Error: {}", crate::one_line(&e)));
                initial = Some(id);
                continue;
            }
        };
        if !r.hook_failures.is_empty() {
            screen.view.notes = hook_notes(&r.hook_failures);
        }
        if r.aborted {
            status = Some("Branch summarization cancelled".to_owned());
            initial = Some(id);
            continue;
        }
        if r.cancelled {
            screen.view.status = Some("Navigation cancelled".to_owned());
            return Ok(());
        }
        if let Some(text) = r.editor_text {
            if screen.view.input.is_empty() {
                screen.view.set_input(&text);
            }
        }
        screen.view.status = Some("Navigated to selected point".to_owned());
        return Ok(());
    }
}

fn branch(chat: &mut Chat, screen: &mut Screen) -> Result<()> {
    let Some(sel) = ForkSelector::from_session(chat.session()) else {
        screen.view.status = Some("No messages to fork from".to_owned());
        return Ok(());
    };
    let picked = {
        let events = &screen.events;
        let mut next = || events.recv().map_err(|_| anyhow!("the terminal closed"));
        screen.term.clear()?;
        tui::select_message(&mut screen.term, &mut next, sel)?
    };
    screen.term.clear()?;
    let Some(id) = picked else { return Ok(()) };
    let r = chat.fork(&id)?;
    if r.cancelled {
        screen.view.status = Some("Fork cancelled".to_owned());
        return Ok(());
    }
    screen.view.set_input(&r.selected_text);
    screen.view.status = Some(match &r.path {
        Some(p) => format!("Branched to new session: {}", p.display()),
        None => "Branched to a new session".to_owned(),
    });
    Ok(())
}

fn compact(chat: &mut Chat, screen: &mut Screen, instructions: Option<String>) -> Result<()> {
    let r = busy(chat, screen, "Compacting... (Esc to cancel)", |chat, poll| chat.compact(instructions, poll))?;
    screen.view.status = Some(compaction_report(&r));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::buffer_text;
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
        // Ctrl+C clears, then quits.
        v.set_input("x");
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(v.key(&ctrl_c, DoubleEscape::Tree, t0), Action::None);
        assert_eq!(v.input, "");
        assert_eq!(v.key(&ctrl_c, DoubleEscape::Tree, t0), Action::Quit);
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
