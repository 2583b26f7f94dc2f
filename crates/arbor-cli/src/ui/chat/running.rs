//! What runs long in the terminal chat, with a spinner, the elapsed time and
//! retries in the status line, and Esc (or Ctrl+C) to abort: a prompt and
//! its streamed reply (and the prompts queued meanwhile), a summary on a
//! move in the tree, a compaction, a shell command.

use std::time::Instant;

use anyhow::Result;
use serde_json::Value;

use arbor_agent::hooks::HookFailure;
use arbor_agent::model::StreamDelta;
use arbor_agent::prompt::AgentEvent;

use super::core::{auto_compaction_report, auto_compaction_stopped, manual_compaction_report, Chat};
use super::progress::Progress;
use super::screen::Screen;
use super::shell;
use crate::shared::output::error_line;
use crate::ui::tui::{self, Decision, ForkSelector, TreeHost};

/// Hooks that failed, as lines for the notes under the conversation.
fn hook_notes(failures: &[HookFailure]) -> Vec<String> {
    failures.iter().map(|f| format!("hook failed: {f}")).collect()
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

/// Sends `text`, then each prompt queued meanwhile; an abort puts the queued
/// prompts back into the prompt line instead (as pi does).
pub(super) fn prompt(chat: &mut Chat, screen: &mut Screen, text: &str) -> Result<()> {
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

/// What one agent event does to the screen while a prompt runs.
fn on_event(screen: &mut Screen, ev: AgentEvent) {
    let progress = screen.progress.get_or_insert_with(|| Progress::new("", "Esc to abort", Instant::now()));
    match ev {
        AgentEvent::Delta(StreamDelta::Text(t)) => {
            progress.set("Streaming…");
            screen.view.streaming.get_or_insert_with(String::new).push_str(&t);
        }
        AgentEvent::Delta(StreamDelta::Thinking(_)) => progress.set("Thinking…"),
        AgentEvent::Retry(n) => progress.retry(&n, Instant::now()),
        AgentEvent::AutoCompactionStart { reason } => {
            *progress =
                Progress::new(&format!("Auto-compacting ({})…", reason.as_str()), "Esc to cancel", Instant::now());
        }
        AgentEvent::AutoCompactionEnd { result, aborted, error_message, .. } => {
            *progress = Progress::new("Waiting for the model…", "Esc to abort", Instant::now());
            if let Some(m) = auto_compaction_report(result.as_ref(), aborted, error_message) {
                screen.view.status = Some(m);
            }
        }
        AgentEvent::AutoCompactionStopped { failures } => screen.view.notes.push(auto_compaction_stopped(failures)),
        // The reply is in the session; the next full redraw shows it from there.
        _ => {}
    }
}

/// One prompt and its reply; true when the reply was aborted.
fn prompt_once(chat: &mut Chat, screen: &mut Screen, text: &str) -> Result<bool> {
    screen.snapshot(chat);
    screen.view.notes.clear();
    screen.view.context_shown = false;
    screen.view.pending_user = Some(text.to_owned());
    screen.view.streaming = Some(String::new());
    screen.progress = Some(Progress::new("Waiting for the model…", "Esc to abort", Instant::now()));
    let mut failed: Option<anyhow::Error> = None;
    let r = chat.prompt(text, &mut |ev| {
        if let Some(ev) = ev {
            on_event(screen, ev);
        }
        if failed.is_none() {
            if let Err(e) = screen.redraw() {
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
    screen.progress = None;
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

/// Runs `op` with a spinner labelled `what`; Esc or Ctrl+C aborts it.
fn busy<T>(
    chat: &mut Chat,
    screen: &mut Screen,
    what: &str,
    cancel: &'static str,
    op: impl FnOnce(&mut Chat, &mut dyn FnMut(Option<AgentEvent>) -> bool) -> Result<T>,
) -> Result<T> {
    screen.snapshot(chat);
    screen.progress = Some(Progress::new(what, cancel, Instant::now()));
    let mut failed: Option<anyhow::Error> = None;
    let r = op(chat, &mut |ev| {
        if let (Some(AgentEvent::Retry(n)), Some(p)) = (ev, screen.progress.as_mut()) {
            p.retry(&n, Instant::now());
        }
        if failed.is_none() {
            if let Err(e) = screen.redraw() {
                failed = Some(e);
            }
        }
        screen.poll_keys().unwrap_or(true)
    });
    screen.progress = None;
    if let Some(e) = failed {
        return Err(e);
    }
    r
}

/// The tree selector over the chat's session (at `initial` when given), and the move chosen there.
pub(super) fn tree(chat: &mut Chat, screen: &mut Screen, mut initial: Option<String>) -> Result<()> {
    if chat.session().get_tree().is_empty() {
        screen.view.status = Some("No entries in session".to_owned());
        return Ok(());
    }
    let mut status = None;
    loop {
        let filter = chat.settings.tree_filter;
        let skip = chat.settings.skip_summary_prompt;
        let decision = {
            let keys = &screen.keys;
            let mut next = |wait| keys.next(wait);
            let mut host = ChatHost { chat };
            screen.term.clear()?;
            let at: Vec<&str> = initial.as_deref().into_iter().collect();
            tui::select(&mut screen.term, &mut host, &mut next, &at, filter, status.take(), skip)?
        };
        screen.term.clear()?;
        let Decision::Navigate { id, summarize, instructions } = decision else { return Ok(()) };
        let (what, cancel) = if summarize { ("Summarizing branch…", "Esc to cancel") } else { ("Navigating…", "") };
        let r = busy(chat, screen, what, cancel, |chat, poll| chat.navigate(&id, summarize, instructions, poll));
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

/// The user-message selector, and the fork chosen there.
pub(super) fn branch(chat: &mut Chat, screen: &mut Screen) -> Result<()> {
    let Some(sel) = ForkSelector::from_session(chat.session()) else {
        screen.view.status = Some("No messages to fork from".to_owned());
        return Ok(());
    };
    let picked = {
        let keys = &screen.keys;
        let mut next = |wait| keys.next(wait);
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

/// `/compact`: a cancelled compaction is said so, not shown as an error.
pub(super) fn compact(chat: &mut Chat, screen: &mut Screen, instructions: Option<String>) -> Result<()> {
    let r = busy(chat, screen, "Compacting…", "Esc to cancel", |chat, poll| chat.compact(instructions, poll))?;
    screen.view.status = Some(manual_compaction_report(&r));
    Ok(())
}

/// `!COMMAND` / `!!COMMAND`: runs it, records it and shows its output.
pub(super) fn shell(chat: &mut Chat, screen: &mut Screen, command: &str, exclude: bool) -> Result<()> {
    screen.snapshot(chat);
    screen.progress = Some(Progress::new(&format!("Running {command}…"), "Esc to stop", Instant::now()));
    let mut failed = None;
    let ran = shell::run(command, &mut || {
        if let Err(e) = screen.redraw() {
            failed.get_or_insert(e);
        }
        screen.poll_keys().unwrap_or(true)
    });
    screen.progress = None;
    if let Some(e) = failed {
        return Err(e);
    }
    let ran = ran?;
    let message: Value = ran.message(command, exclude, now_ms());
    chat.record(message)?;
    screen.view.status = Some(match (ran.cancelled, ran.exit_code) {
        (true, _) => "Stopped".to_owned(),
        (false, Some(0)) if exclude => "Done (kept out of the context)".to_owned(),
        (false, Some(0)) => "Done: the output goes to the model with the next prompt".to_owned(),
        (false, Some(code)) => format!("Exit code {code}"),
        (false, None) => "Ended by a signal".to_owned(),
    });
    Ok(())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
