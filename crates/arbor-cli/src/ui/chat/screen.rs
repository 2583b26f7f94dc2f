//! The terminal chat's screen: the conversation above, a status bar and the
//! prompt below, drawn by [`super::draw`] from the state in [`super::view`],
//! and the keys read on their own thread. [`super::keyloop`] drives it; what
//! runs long ([`super::running`]) and the dialogs ([`super::dialogs`]) draw
//! on it.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use crossterm::event::{
    self, DisableBracketedPaste, EnableBracketedPaste, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};
use serde_json::Value;

use super::core::Chat;
use super::draw::{draw, Bar};
use super::progress::Progress;
use super::transcript::path_messages;
use super::view::ChatView;
use crate::ui::terminal::Term;

/// How often the file is looked at for another writer's entries while no key comes.
pub(super) const WATCH: Duration = Duration::from_millis(250);

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
pub(super) struct Paste;

impl Paste {
    pub(super) fn enable() -> Paste {
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
    /// The screen of `chat` on `term`, its first frame not drawn yet.
    pub(super) fn new(term: Term, chat: &mut Chat) -> Screen {
        let (view, messages, bar) = first_screen(chat);
        Screen { term, keys: Keys::start(), view, progress: None, messages, bar }
    }

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
        self.messages = path_messages(chat.session()).unwrap_or_else(|e| {
            // The conversation cannot be read: the error says why, in place of it.
            self.view.notes = vec![e.to_string()];
            vec![]
        });
        self.bar = bar_of(chat);
        if self.view.context_shown {
            self.view.notes = vec![chat.context_info().unwrap_or_else(|e| format!("{e:#}"))];
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
        // A session whose file changed under it shows no level and no count; the next action says why.
        thinking: chat.agent().thinking_level().map_or_else(|_| "?".to_owned(), str::to_owned),
        tokens: chat.agent().context_tokens().unwrap_or(0),
        window: chat.agent().context_window(),
        name: chat.title(),
    }
}

/// What the first screen draws: the view (the chat's notices, and ↑ starting
/// with the prompts already on the path), the conversation and the status bar.
pub(super) fn first_screen(chat: &mut Chat) -> (ChatView, Vec<Value>, Bar) {
    let mut view = ChatView { notes: std::mem::take(&mut chat.notices), ..ChatView::default() };
    let messages = path_messages(chat.session()).unwrap_or_else(|e| {
        view.notes.push(e.to_string());
        vec![]
    });
    for m in messages.iter().filter(|m| arbor_log::MessageView::new(m).role() == Some(arbor_log::Role::User)) {
        view.remember(&arbor_log::content_text(m.get("content"), ""));
    }
    (view, messages, bar_of(chat))
}
