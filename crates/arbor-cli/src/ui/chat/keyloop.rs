//! `arbor chat` in a terminal: [`run`] owns the terminal and the key loop
//! over the [`Screen`], and opens the tree and message selectors of
//! [`crate::ui::tui`] over the chat's own session. What the keys do is pi's
//! (the list: [`super::hotkeys`]); what runs long (a reply, a summary, a
//! compaction, a shell command) is in [`super::running`], the dialogs
//! (models, settings, sessions, the external editor) in [`super::dialogs`].
//!
//! While the chat waits for a key it looks at its file four times a second:
//! what another program (pi) appended is taken in and shown, and the next
//! prompt continues after it.

use std::io;
use std::time::Instant;

use anyhow::Result;
use crossterm::event::{Event, KeyEventKind};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use super::commands::{self, Input, HELP};
use super::core::Chat;
use super::dialogs;
use super::hotkeys;
use super::running;
use super::screen::{Paste, Screen, WATCH};
use super::settings::DoubleEscape;
use super::view::Action;
use crate::shared::output::error_line;
use crate::ui::terminal::TerminalGuard;

/// Runs the chat in the terminal until the user leaves; with `at`, the tree
/// selector opens first at that entry (a search hit of the session picker).
pub fn run(chat: &mut Chat, at: Option<String>) -> Result<()> {
    let _guard = TerminalGuard::enter()?;
    let _paste = Paste::enable();
    let mut term = Terminal::new(CrosstermBackend::new(io::stderr()))?;
    term.clear()?;
    let mut screen = Screen::new(term, chat);
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
            screen.view.notes = vec![chat.context_info().unwrap_or_else(|e| format!("{e:#}"))];
            Ok(())
        }
        Input::Resume => dialogs::resume(chat, screen),
        Input::New => say(screen, chat.new_session()),
        Input::Session => notes(screen, chat.session_info().unwrap_or_else(|e| vec![format!("{e:#}")])),
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
