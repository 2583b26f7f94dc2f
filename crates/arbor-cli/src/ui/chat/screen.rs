//! `arbor chat` in a terminal: the conversation above, a status bar and the
//! prompt below, drawn by [`super::draw`] from the state in [`super::view`];
//! [`run`] owns the terminal and the key loop, and opens the tree and
//! message selectors of [`crate::ui::tui`] over the chat's own session.
//!
//! Keys: Enter sends (while a reply streams it queues the prompt, sent once
//! the reply is done); Esc or Ctrl+C while a reply streams aborts it (and a
//! running summary or compaction; queued prompts come back into the prompt);
//! Esc twice within 500 ms on an empty prompt opens the selector named by
//! `doubleEscapeAction`; ↑/↓ on an empty prompt go through earlier prompts;
//! Tab completes a command name; Ctrl+C clears the prompt, and on an empty
//! prompt leaves (so does Ctrl+D); PageUp/PageDown scroll.

use std::io;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Instant;

use anyhow::{anyhow, Result};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use serde_json::Value;

use arbor_agent::{AgentEvent, HookFailure, StreamDelta};

use super::commands::{self, Input, HELP};
use super::core::{auto_compaction_report, auto_compaction_stopped, manual_compaction_report, Chat};
use super::draw::{draw, Bar};
use super::settings::DoubleEscape;
use super::transcript::path_messages;
use super::view::{Action, ChatView};
use crate::shared::output::error_line;
use crate::ui::terminal::{Term, TerminalGuard};
use crate::ui::tui::{self, Decision, ForkSelector, TreeHost};

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
    fn session(&self) -> &arbor_tree::Session {
        self.chat.session()
    }

    fn save_label(&mut self, id: &str, label: Option<&str>) -> Result<String> {
        self.chat.set_label(id, label)
    }

    fn exit_hint(&self) -> &'static str {
        "back to the chat"
    }
}

/// The selectors' next event from the key reader's channel (see `NextEvent`).
fn next_from(events: &Receiver<Event>, wait: Option<std::time::Duration>) -> Result<Option<Event>> {
    let closed = || anyhow!("the terminal closed");
    match wait {
        None => events.recv().map(Some).map_err(|_| closed()),
        Some(w) => match events.recv_timeout(w) {
            Ok(e) => Ok(Some(e)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(closed()),
        },
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

    /// While something runs: take the keys that came in; true when one asks
    /// to abort. Enter queues the prompt typed so far (pi's steering).
    fn poll_keys(&mut self) -> Result<bool> {
        let mut abort = false;
        loop {
            match self.events.try_recv() {
                Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => {
                    if is_abort(&k) {
                        abort = true;
                    } else if k.code == KeyCode::Enter && k.modifiers.is_empty() {
                        let text = std::mem::take(&mut self.view.input);
                        self.view.cursor = 0;
                        if !text.trim().is_empty() {
                            self.view.remember(&text);
                            self.view.queued.push(text);
                        }
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

/// The status bar of the chat as it is now.
fn bar_of(chat: &Chat) -> Bar {
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

fn snapshot(chat: &Chat) -> (Vec<Value>, Bar) {
    (path_messages(chat.session()), bar_of(chat))
}

/// What the first screen draws: the view (the chat's notices, and ↑ starting
/// with the prompts already on the path), the conversation and the status bar.
pub(super) fn first_screen(chat: &mut Chat) -> (ChatView, Vec<Value>, Bar) {
    let mut view = ChatView { notes: std::mem::take(&mut chat.notices), ..ChatView::default() };
    let (messages, bar) = snapshot(chat);
    for m in messages.iter().filter(|m| arbor_log::MessageView::new(m).role() == Some(arbor_log::Role::User)) {
        view.remember(&arbor_log::content_text(m.get("content"), ""));
    }
    (view, messages, bar)
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
    // What the conversation shows; taken again only after something that can change the session.
    let (view, mut messages, mut bar) = first_screen(chat);
    let mut screen = Screen { term, events: rx, view };
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
            screen.view.status = Some(format!("Error: {}", error_line(&e)));
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
        Input::Branch | Input::Fork => branch(chat, screen),
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

/// Sends `text`, then each prompt queued meanwhile; an abort puts the queued
/// prompts back into the prompt line instead (as pi does).
fn prompt(chat: &mut Chat, screen: &mut Screen, text: &str) -> Result<()> {
    let mut next = Some(text.to_owned());
    while let Some(text) = next.take() {
        let aborted = prompt_once(chat, screen, &text)?;
        let queued = std::mem::take(&mut screen.view.queued);
        if aborted {
            if !queued.is_empty() {
                let mut restored = queued.join("\n");
                if !screen.view.input.is_empty() {
                    restored.push('\n');
                    restored.push_str(&screen.view.input);
                }
                screen.view.set_input(&restored);
            }
            break;
        }
        let mut rest = queued.into_iter();
        next = rest.next();
        screen.view.queued = rest.collect();
    }
    Ok(())
}

/// One prompt and its reply; true when the reply was aborted.
fn prompt_once(chat: &mut Chat, screen: &mut Screen, text: &str) -> Result<bool> {
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
            Some(AgentEvent::AutoCompactionStopped { failures }) => {
                screen.view.notes.push(auto_compaction_stopped(failures));
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
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            // Refused before anything was written (no model, no key): the text goes back into the prompt.
            if screen.view.input.is_empty() {
                screen.view.set_input(text);
            }
            return Err(e);
        }
    };
    screen.view.notes.extend(hook_notes(&r.hook_failures));
    match r.reply.stop_reason() {
        "aborted" => {
            screen.view.status = Some("Aborted".to_owned());
            return Ok(true);
        }
        "error" => {
            screen.view.status = Some(format!("Error: {}", r.reply.error_message().unwrap_or("the model failed")))
        }
        "length" => screen.view.status = Some("The reply reached its length limit".to_owned()),
        _ => {}
    }
    Ok(false)
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
            let mut next = |wait| next_from(events, wait);
            let mut host = ChatHost { chat };
            screen.term.clear()?;
            tui::select(
                &mut screen.term,
                &mut host,
                &mut next,
                &initial.as_deref().into_iter().collect::<Vec<_>>(),
                filter,
                status.take(),
                skip,
            )?
        };
        screen.term.clear()?;
        let Decision::Navigate { id, summarize, instructions } = decision else { return Ok(()) };
        let label = if summarize { "Summarizing branch... (Esc or Ctrl+C to cancel)" } else { "Navigating..." };
        let r = busy(chat, screen, label, |chat, poll| chat.navigate(&id, summarize, instructions, poll));
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                status = Some(format!("Error: {}", error_line(&e)));
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
        let mut next = |wait| next_from(events, wait);
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
    screen.view.status = Some(manual_compaction_report(r.as_ref()));
    Ok(())
}
