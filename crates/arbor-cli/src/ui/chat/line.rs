//! `arbor chat` without a terminal: one line of standard input per step.
//!
//! Each line is a prompt or a command. The selectors ask their question on
//! stderr and read the answer from the next line: `/tree` prints the tree and
//! reads an entry id, then (unless `branchSummary.skipPrompt`) the summary
//! choice `1` No summary, `2` Summarize, `3` Summarize with custom prompt (and
//! then the instructions); `/fork` prints the user messages numbered and
//! reads a number (`/branch` does what `/tree` does with the default
//! `doubleEscapeAction`, else what `/fork` does). The reply streams to
//! stdout; notices, questions and errors go to stderr. Ctrl-C (SIGINT) while a reply, summary or compaction runs
//! aborts it; otherwise it ends the chat.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;

use arbor_agent::{AgentEvent, StreamDelta};

use super::commands::{self, Input, HELP};
use super::core::{auto_compaction_report, auto_compaction_stopped, manual_compaction_report, Chat, Compacted};
use super::settings::DoubleEscape;
use crate::shared::agent::report_hook_failures;
use crate::shared::output::error_line;
use crate::shared::tree_text::{print_tree, TreeText};
use crate::shared::visible::{say, Visible};
use crate::ui::tui::one_line;

struct Signals {
    busy: Arc<AtomicBool>,
    abort: Arc<AtomicBool>,
}

impl Signals {
    fn install(chat: &Chat) -> Signals {
        let busy = Arc::new(AtomicBool::new(false));
        let abort = Arc::new(AtomicBool::new(false));
        let (b, a) = (busy.clone(), abort.clone());
        chat.spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if b.load(Ordering::SeqCst) {
                    a.store(true, Ordering::SeqCst);
                } else {
                    std::process::exit(130);
                }
            }
        });
        Signals { busy, abort }
    }

    fn start(&self) {
        self.abort.store(false, Ordering::SeqCst);
        self.busy.store(true, Ordering::SeqCst);
    }

    fn stop(&self) {
        self.busy.store(false, Ordering::SeqCst);
    }

    fn aborted(&self) -> bool {
        self.abort.swap(false, Ordering::SeqCst)
    }
}

fn read_line(input: &mut dyn BufRead) -> Result<Option<String>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim_end_matches(['\n', '\r']).to_owned()))
}

fn ask(question: &str, input: &mut dyn BufRead) -> Result<Option<String>> {
    say!("{question}");
    read_line(input)
}

/// Runs the chat over `input` until `/quit` or the end of input. True when
/// every prompt was answered (none refused, none failed).
pub fn run(chat: &mut Chat, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<bool> {
    let mut all_answered = true;
    // Replies and entries from the file reach a terminal: control characters are made visible.
    let out = &mut Visible::new(out);
    let signals = Signals::install(chat);
    for n in std::mem::take(&mut chat.notices) {
        say!("arbor: {n}");
    }
    while let Some(line) = read_line(input)? {
        let result = match commands::parse(&line) {
            Input::Empty => Ok(()),
            Input::Quit => break,
            Input::Prompt(text) => {
                // What another program appended meanwhile comes first: the prompt continues after it.
                if let Some(n) = chat.take_in_other_writes()? {
                    say!("arbor: {n}");
                }
                let r = prompt(chat, &text, &signals, out);
                all_answered &= matches!(r, Ok(true));
                r.map(|_| ())
            }
            Input::Tree => tree(chat, input, &signals, out),
            Input::Branch if chat.settings.double_escape == DoubleEscape::Tree => tree(chat, input, &signals, out),
            Input::Branch | Input::Fork => branch(chat, input, out),
            Input::Label(l) => chat.label(l.as_deref()).map(|m| say!("{m}")),
            Input::Name(n) => chat.name(n.as_deref()).map(|m| say!("{m}")),
            Input::Model(m) => chat.model(m.as_deref()).map(|m| say!("{m}")),
            Input::Thinking(t) => chat.thinking(t.as_deref()).map(|m| say!("{m}")),
            Input::Context => {
                say!("{}", chat.context_info()?);
                Ok(())
            }
            Input::Compact(i) => compact(chat, i, &signals),
            Input::Help => {
                for (c, what) in HELP {
                    say!("{c:<26} {what}");
                }
                Ok(())
            }
            Input::Shell { command, exclude } => shell(chat, &command, exclude, &signals, out),
            Input::Resume => resume(chat, input, out),
            Input::New => chat.new_session().map(|m| say!("{m}")),
            Input::Session => {
                chat.session_info()?.iter().for_each(|l| say!("{l}"));
                Ok(())
            }
            Input::Clone => chat.clone_branch().map(|m| say!("{m}")),
            Input::Export(file) => chat.export(file.as_deref()).map(|m| say!("{m}")),
            Input::Copy => Err(anyhow::anyhow!("/copy needs a terminal to copy through (the reply is on stdout)")),
            Input::Settings => {
                let s = &chat.settings;
                say!(
                    "thinking level {}, tree filter {:?}, double Escape {:?}, ask to summarize {}",
                    chat.agent().thinking_level()?,
                    s.tree_filter,
                    s.double_escape,
                    !s.skip_summary_prompt
                );
                Ok(())
            }
            Input::Hotkeys => {
                super::hotkeys::lines().iter().for_each(|l| say!("{l}"));
                Ok(())
            }
            Input::Unknown(c) => {
                say!("Unknown command {c} (try /help; start with // to send it to the model)");
                Ok(())
            }
        };
        out.flush()?;
        if let Err(e) = result {
            say!("Error: {}", error_line(&e));
            if chat.agent().write_failure().is_some() {
                return Err(e);
            }
        }
    }
    Ok(all_answered)
}

/// Sends one prompt and streams the reply; false when the model failed.
fn prompt(chat: &mut Chat, text: &str, signals: &Signals, out: &mut dyn Write) -> Result<bool> {
    signals.start();
    let mut wrote = false;
    let mut write_err = None;
    let r = chat.prompt(text, &mut |ev| {
        match ev {
            Some(AgentEvent::Delta(StreamDelta::Text(t))) => {
                wrote = true;
                if let Err(e) = out.write_all(t.as_bytes()).and_then(|_| out.flush()) {
                    write_err.get_or_insert(e);
                }
            }
            Some(AgentEvent::AutoCompactionStart { reason }) => {
                say!("Auto-compacting ({})...", reason.as_str());
            }
            Some(AgentEvent::AutoCompactionEnd { result, aborted, error_message, .. }) => {
                if let Some(m) = auto_compaction_report(result.as_ref(), aborted, error_message) {
                    say!("{m}");
                }
            }
            Some(AgentEvent::AutoCompactionStopped { failures }) => say!("{}", auto_compaction_stopped(failures)),
            _ => {}
        }
        signals.aborted()
    });
    signals.stop();
    if wrote {
        writeln!(out)?;
    }
    if let Some(e) = write_err {
        return Err(e.into());
    }
    let r = r?;
    report_hook_failures(&r.hook_failures);
    match r.reply.stop_reason() {
        "aborted" => say!("[aborted]"),
        "error" => {
            say!("Error: {}", r.reply.error_message().unwrap_or("the model failed"));
            return Ok(false);
        }
        "length" => say!("[stopped: the reply reached its length limit]"),
        _ => {}
    }
    Ok(true)
}

fn tree(chat: &mut Chat, input: &mut dyn BufRead, signals: &Signals, out: &mut dyn Write) -> Result<()> {
    print_tree(chat.session(), &TreeText::default(), out)?;
    out.flush()?;
    let Some(id) = ask("Entry id (empty to cancel):", input)? else { return Ok(()) };
    let id = id.trim().to_owned();
    if id.is_empty() {
        return Ok(());
    }
    if chat.session().position_of(&id).is_none() {
        anyhow::bail!("Entry {id} not found");
    }
    if chat.agent().logical_leaf_id()?.as_deref() == Some(id.as_str()) || chat.session().leaf_id() == Some(id.as_str())
    {
        say!("Already at this point");
        return Ok(());
    }
    let (summarize, instructions) = if chat.settings.skip_summary_prompt {
        (false, None)
    } else {
        let choice = ask("Summarize branch? 1) No summary  2) Summarize  3) Summarize with custom prompt", input)?
            .unwrap_or_default();
        match choice.trim() {
            "1" | "" => (false, None),
            "2" => (true, None),
            "3" => {
                let text = ask("Custom summarization instructions:", input)?.unwrap_or_default();
                (true, Some(text.trim().to_owned()).filter(|t| !t.is_empty()))
            }
            other => anyhow::bail!("{other:?} is not a choice (1, 2 or 3)"),
        }
    };
    if summarize {
        say!("Summarizing branch... (Ctrl+C to cancel)");
    }
    signals.start();
    let r = chat.navigate(&id, summarize, instructions, &mut |_| signals.aborted());
    signals.stop();
    let r = r?;
    report_hook_failures(&r.hook_failures);
    if r.aborted {
        say!("Branch summarization cancelled");
    } else if r.cancelled {
        say!("Navigation cancelled");
    } else {
        say!("Navigated to selected point");
        if let Some(text) = r.editor_text {
            say!("Editor: {text}");
        }
    }
    Ok(())
}

fn branch(chat: &mut Chat, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
    let messages: Vec<(String, String)> =
        chat.session().user_messages_for_forking()?.into_iter().map(|(e, t)| (e.id.clone(), t)).collect();
    if messages.is_empty() {
        say!("No messages to fork from");
        return Ok(());
    }
    for (i, (_, text)) in messages.iter().enumerate() {
        writeln!(out, "{}. {}", i + 1, one_line(text))?;
    }
    out.flush()?;
    let Some(answer) = ask("Message number (empty to cancel):", input)? else { return Ok(()) };
    let answer = answer.trim();
    if answer.is_empty() {
        return Ok(());
    }
    let n: usize = answer
        .parse()
        .ok()
        .filter(|n| (1..=messages.len()).contains(n))
        .ok_or_else(|| anyhow::anyhow!("{answer:?} is not a message number (1 to {})", messages.len()))?;
    let r = chat.fork(&messages[n - 1].0)?;
    report_hook_failures(&r.hook_failures);
    if r.cancelled {
        say!("Fork cancelled");
        return Ok(());
    }
    match &r.path {
        Some(p) => say!("Branched to new session: {}", p.display()),
        None => say!("Branched to a new session"),
    }
    say!("Editor: {}", r.selected_text);
    Ok(())
}

fn compact(chat: &mut Chat, instructions: Option<String>, signals: &Signals) -> Result<()> {
    say!("Compacting... (Ctrl+C to cancel)");
    signals.start();
    let r = chat.compact(instructions, &mut |_| signals.aborted());
    signals.stop();
    let r = r?;
    if let Compacted::Done(r) = &r {
        report_hook_failures(&r.hook_failures);
    }
    say!("{}", manual_compaction_report(&r));
    Ok(())
}

/// `!COMMAND`: runs it (Ctrl+C stops it), prints its output, records it.
fn shell(chat: &mut Chat, command: &str, exclude: bool, signals: &Signals, out: &mut dyn Write) -> Result<()> {
    signals.start();
    let ran = super::shell::run(command, &mut || signals.aborted());
    signals.stop();
    let ran = ran?;
    out.write_all(ran.output.as_bytes())?;
    if !ran.output.is_empty() && !ran.output.ends_with('\n') {
        writeln!(out)?;
    }
    chat.record(ran.message(command, exclude, now_ms()))?;
    match (ran.cancelled, ran.exit_code) {
        (true, _) => say!("[stopped]"),
        (false, Some(0)) => {}
        (false, Some(code)) => say!("[exit code {code}]"),
        (false, None) => say!("[ended by a signal]"),
    }
    Ok(())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `/resume`: the sessions of the current directory, numbered; reads a number.
fn resume(chat: &mut Chat, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
    let sessions = chat.sessions_here()?;
    if sessions.is_empty() {
        say!("No session to resume");
        return Ok(());
    }
    for (i, s) in sessions.iter().enumerate() {
        writeln!(
            out,
            "{}. {}  ({} messages, {})",
            i + 1,
            one_line(s.name.as_deref().unwrap_or(&s.first_message)),
            s.message_count,
            s.modified
        )?;
    }
    out.flush()?;
    let Some(answer) = ask("Session number (empty to cancel):", input)? else { return Ok(()) };
    let answer = answer.trim();
    if answer.is_empty() {
        return Ok(());
    }
    let n: usize = answer
        .parse()
        .ok()
        .filter(|n| (1..=sessions.len()).contains(n))
        .ok_or_else(|| anyhow::anyhow!("{answer:?} is not a session number (1 to {})", sessions.len()))?;
    say!("{}", chat.resume(&sessions[n - 1].path)?);
    Ok(())
}
