//! `arbor chat` in a terminal: the conversation above, a status bar and the
//! prompt below, drawn by [`super::draw`] from the state in [`super::view`];
//! [`run`] owns the terminal and the key loop, and opens the tree and
//! message selectors of [`crate::ui::tui`] over the chat's own session.
//! What the keys do is pi's (the list: [`super::hotkeys`]); what runs long
//! (a reply, a summary, a compaction, a shell command) is in
//! [`super::running`], the dialogs (models, settings, sessions, the external
//! editor) in [`super::dialogs`].
//!
//! While the chat waits for a key it looks at its file four times a second:
//! what another program (pi) appended is taken in and shown, and the next
//! prompt continues after it.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use crossterm::event::{
    self, DisableBracketedPaste, EnableBracketedPaste, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use serde_json::Value;

use super::commands::{self, Input, HELP};
use super::core::Chat;
use super::dialogs;
use super::draw::{draw, Bar};
use super::hotkeys;
use super::progress::Progress;
use super::running;
use super::settings::DoubleEscape;
use super::transcript::path_messages;
use super::view::{Action, ChatView};
use crate::shared::output::error_line;
use crate::ui::terminal::{Term, TerminalGuard};

/// How often the file is looked at for another writer's entries while no key comes.
const WATCH: Duration = Duration::from_millis(250);

/// True for the keys that abort a running operation: Esc and Ctrl+C.
pub(super) fn is_abort(key: &KeyEvent) -> bool {
    key.code == KeyCode::Esc || (key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL))
}

/// The terminal's events, read on a thread of their own; the thread can be
/// parked (it then reads nothing) while an external editor has the terminal.
pub(super) struct Keys {
    pub(super) rx: Receiver<Event>,
    paused: Arc<AtomicBool>,
    parked: Arc<AtomicBool>,
}

impl Keys {
    fn start() -> Keys {
        let (tx, rx) = std::sync::mpsc::channel();
        let paused = Arc::new(AtomicBool::new(false));
        let parked = Arc::new(AtomicBool::new(false));
        let (p, k) = (paused.clone(), parked.clone());
        std::thread::spawn(move || loop {
            if p.load(Ordering::SeqCst) {
                k.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            k.store(false, Ordering::SeqCst);
            match event::poll(Duration::from_millis(50)) {
                Ok(true) => match event::read() {
                    Ok(ev) => {
                        if tx.send(ev).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                },
                Ok(false) => {}
                Err(_) => break,
            }
        });
        Keys { rx, paused, parked }
    }

    /// Stops reading the terminal (for another program to read it) until [`Keys::resume`].
    pub(super) fn pause(&self) {
        self.paused.store(true, Ordering::SeqCst);
        let start = Instant::now();
        while !self.parked.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub(super) fn resume(&self) {
        self.paused.store(false, Ordering::SeqCst);
    }

    /// The selectors' next event (see `NextEvent`).
    pub(super) fn next(&self, wait: Option<Duration>) -> Result<Option<Event>> {
        let closed = || anyhow!("the terminal closed");
        match wait {
            None => self.rx.recv().map(Some).map_err(|_| closed()),
            Some(w) => match self.rx.recv_timeout(w) {
                Ok(e) => Ok(Some(e)),
                Err(RecvTimeoutError::Timeout) => Ok(None),
                Err(RecvTimeoutError::Disconnected) => Err(closed()),
            },
        }
    }
}

/// Bracketed paste on while the chat runs: a paste arrives whole, never as keys (Enter would send it).
struct Paste;

impl Paste {
    fn enable() -> Paste {
        let _ = crossterm::execute!(io::stderr(), EnableBracketedPaste);
        Paste
    }
}

impl Drop for Paste {
    fn drop(&mut self) {
        let _ = crossterm::execute!(io::stderr(), DisableBracketedPaste);
    }
}

pub(super) struct Screen {
    pub(super) term: Term,
    pub(super) keys: Keys,
    pub(super) view: ChatView,
    /// What runs now (drawn into `view.busy` at each redraw).
    pub(super) progress: Option<Progress>,
    /// The conversation and status bar as last taken from the chat.
    messages: Vec<Value>,
    bar: Bar,
}

impl Screen {
    pub(super) fn redraw(&mut self) -> Result<()> {
        self.view.busy = self.progress.as_ref().map(|p| p.line(Instant::now()));
        let (view, messages, bar) = (&self.view, &self.messages, &self.bar);
        self.term.draw(|f| {
            let area = f.area();
            let (x, y) = draw(messages, view, bar, area, f.buffer_mut());
            f.set_cursor_position((x, y));
        })?;
        Ok(())
    }

    /// Takes the conversation and the status bar from the chat again (after
    /// anything that can change the session); `/context`'s line is made again.
    pub(super) fn snapshot(&mut self, chat: &Chat) {
        self.messages = path_messages(chat.session());
        self.bar = bar_of(chat);
        if self.view.context_shown {
            self.view.notes = vec![chat.context_info()];
        }
    }

    /// While something runs: take the keys that came in; true when one asks
    /// to abort. Enter queues the prompt typed so far (pi's steering), Alt+↑
    /// takes the queued prompts back, a paste goes into the prompt.
    pub(super) fn poll_keys(&mut self) -> Result<bool> {
        let mut abort = false;
        loop {
            match self.keys.rx.try_recv() {
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
                    } else if k.code == KeyCode::Up && k.modifiers.contains(KeyModifiers::ALT) {
                        let queued = std::mem::take(&mut self.view.queued);
                        if !queued.is_empty() {
                            let mut text = queued.join("\n");
                            if !self.view.input.is_empty() {
                                text.push('\n');
                                text.push_str(&self.view.input);
                            }
                            self.view.set_input(&text);
                        }
                    } else {
                        self.view.edit(&k);
                    }
                }
                Ok(Event::Paste(text)) => self.view.insert_text(&text),
                Ok(_) => {}
                Err(TryRecvError::Empty) => return Ok(abort),
                Err(TryRecvError::Disconnected) => return Err(anyhow!("the terminal closed")),
            }
        }
    }
}

/// The status bar of the chat as it is now: the session's name, else its first prompt.
fn bar_of(chat: &Chat) -> Bar {
    Bar {
        model: chat.model_name(),
        thinking: chat.agent().thinking_level().to_owned(),
        tokens: chat.agent().context_tokens(),
        window: chat.agent().context_window(),
        name: chat.title(),
    }
}

/// What the first screen draws: the view (the chat's notices, and ↑ starting
/// with the prompts already on the path), the conversation and the status bar.
pub(super) fn first_screen(chat: &mut Chat) -> (ChatView, Vec<Value>, Bar) {
    let mut view = ChatView { notes: std::mem::take(&mut chat.notices), ..ChatView::default() };
    let messages = path_messages(chat.session());
    for m in messages.iter().filter(|m| arbor_log::MessageView::new(m).role() == Some(arbor_log::Role::User)) {
        view.remember(&arbor_log::messages::content_text(m.get("content"), ""));
    }
    (view, messages, bar_of(chat))
}

/// Runs the chat in the terminal until the user leaves; with `at`, the tree
/// selector opens first at that entry (a search hit of the session picker).
pub fn run(chat: &mut Chat, at: Option<String>) -> Result<()> {
    let _guard = TerminalGuard::enter()?;
    let _paste = Paste::enable();
    let mut term = Terminal::new(CrosstermBackend::new(io::stderr()))?;
    term.clear()?;
    let (view, messages, bar) = first_screen(chat);
    let mut screen = Screen { term, keys: Keys::start(), view, progress: None, messages, bar };
    if let Some(at) = at {
        let r = running::tree(chat, &mut screen, Some(at));
        after(chat, &mut screen, r)?;
    }
    loop {
        screen.redraw()?;
        let event = match screen.keys.next(Some(WATCH))? {
            Some(e) => e,
            None => {
                let r = other_writer(chat, &mut screen);
                after(chat, &mut screen, r)?;
                continue;
            }
        };
        let key = match event {
            Event::Key(k) if k.kind != KeyEventKind::Release => k,
            Event::Paste(text) => {
                screen.view.insert_text(&text);
                continue;
            }
            _ => continue,
        };
        let action = screen.view.key(&key, chat.settings.double_escape, Instant::now());
        if action != Action::None {
            screen.view.status = None;
        }
        let r = match action {
            Action::None => continue,
            Action::Quit => return Ok(()),
            Action::Submit(line) => match commands::parse(&line) {
                Input::Quit => return Ok(()),
                input => command(chat, &mut screen, input),
            },
            action => act(chat, &mut screen, action),
        };
        after(chat, &mut screen, r)?;
    }
}

/// After an action: the screen taken again, an error shown (a write failure ends the chat).
fn after(chat: &mut Chat, screen: &mut Screen, r: Result<()>) -> Result<()> {
    screen.progress = None;
    screen.snapshot(chat);
    if let Err(e) = r {
        screen.view.status = Some(format!("Error: {}", error_line(&e)));
        if chat.agent().write_failure().is_some() {
            return Err(e);
        }
    }
    Ok(())
}

/// What another program appended is taken in, with a note.
fn other_writer(chat: &mut Chat, screen: &mut Screen) -> Result<()> {
    if let Some(note) = chat.take_in_other_writes()? {
        screen.view.context_shown = false;
        screen.view.notes = vec![note];
    }
    Ok(())
}

/// The keys that are not prompts or commands.
fn act(chat: &mut Chat, screen: &mut Screen, action: Action) -> Result<()> {
    let say = |screen: &mut Screen, r: Result<String>| -> Result<()> {
        screen.view.status = Some(r?);
        Ok(())
    };
    match action {
        Action::Tree => running::tree(chat, screen, None),
        Action::Branch => running::branch(chat, screen),
        Action::SelectModel => dialogs::select_model(chat, screen),
        Action::CycleModel { forward } => say(screen, chat.cycle_model(forward)),
        Action::CycleThinking => say(screen, chat.cycle_thinking()),
        Action::ExternalEditor => dialogs::external_editor(screen),
        Action::Say(s) => say(screen, Ok(s)),
        Action::None | Action::Quit | Action::Submit(_) => Ok(()),
    }
}

fn command(chat: &mut Chat, screen: &mut Screen, input: Input) -> Result<()> {
    let say = |screen: &mut Screen, r: Result<String>| -> Result<()> {
        screen.view.status = Some(r?);
        Ok(())
    };
    let notes = |screen: &mut Screen, lines: Vec<String>| -> Result<()> {
        screen.view.context_shown = false;
        screen.view.notes = lines;
        Ok(())
    };
    match input {
        Input::Empty | Input::Quit => Ok(()),
        Input::Prompt(text) => {
            other_writer(chat, screen)?;
            running::prompt(chat, screen, &text)
        }
        Input::Shell { command, exclude } => running::shell(chat, screen, &command, exclude),
        Input::Tree => running::tree(chat, screen, None),
        Input::Branch if chat.settings.double_escape == DoubleEscape::Tree => running::tree(chat, screen, None),
        Input::Branch | Input::Fork => running::branch(chat, screen),
        Input::Label(l) => say(screen, chat.label(l.as_deref())),
        Input::Name(n) => say(screen, chat.name(n.as_deref())),
        Input::Model(None) => dialogs::select_model(chat, screen),
        Input::Model(m) => say(screen, chat.model(m.as_deref())),
        Input::Thinking(t) => say(screen, chat.thinking(t.as_deref())),
        Input::Context => {
            screen.view.context_shown = true;
            screen.view.notes = vec![chat.context_info()];
            Ok(())
        }
        Input::Resume => dialogs::resume(chat, screen),
        Input::New => say(screen, chat.new_session()),
        Input::Session => notes(screen, chat.session_info()),
        Input::Clone => say(screen, chat.clone_branch()),
        Input::Export(file) => say(screen, chat.export(file.as_deref())),
        Input::Copy => say(screen, dialogs::copy(chat)),
        Input::Settings => dialogs::settings(chat, screen),
        Input::Hotkeys => notes(screen, hotkeys::lines()),
        Input::Help => notes(screen, HELP.iter().map(|(c, what)| format!("{c:<24} {what}")).collect()),
        Input::Compact(i) => running::compact(chat, screen, i),
        // pi refuses an unknown command and clears it.
        Input::Unknown(c) => {
            screen.view.status =
                Some(format!("Unknown command {c} (try /help; start with // to send it to the model)"));
            Ok(())
        }
    }
}
