//! `arbor chat`: a branching conversation with a model, written to a
//! pi-compatible session file as it goes.
//!
//! [`core::Chat`] holds the agent session and one method per command (the
//! session commands and another writer's entries in [`session_ops`]); two
//! front ends drive it: [`keyloop`] in a terminal (on a [`screen`]) (pi's keys, listed in
//! [`hotkeys`] and edited by [`editor`]; what runs long in [`running`] with
//! its [`progress`] line; the dialogs in [`dialogs`] over [`select`]; the
//! state in [`view`], drawn by [`draw`] from the path's messages as
//! [`transcript`] shows them) and [`line`](mod@line) when standard input is
//! not a terminal (one line per prompt, command or answer: scripts, pipes and
//! tests); [`print()`] is pi's `-p`. `!COMMAND` runs in [`shell`]. Settings
//! come from one file ([`settings`]). [`bench`](mod@bench) times the first
//! screen with no terminal (`arbor chat FILE --bench`).

pub mod bench;
mod commands;
mod core;
mod dialogs;
mod draw;
mod editor;
mod hotkeys;
mod keyloop;
mod line;
mod progress;
mod running;
mod screen;
mod select;
mod session_ops;
mod settings;
mod shell;
mod transcript;
mod view;

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};

use arbor_agent::{AgentEvent, StreamDelta};

use crate::shared::session::Globals;

pub use self::core::{ModelFlags, Target};
use crate::shared::visible::say;
pub use settings::Settings;

/// Runs `arbor chat`.
pub fn run(
    out: &mut dyn Write,
    target: Target,
    flags: &ModelFlags,
    config: Option<PathBuf>,
    globals: &Globals,
) -> Result<ExitCode> {
    let settings = Settings::load(config.as_deref())?;
    let at = match &target {
        Target::File { at, .. } => at.clone(),
        _ => None,
    };
    let mut chat = core::Chat::open(target, flags, settings, globals)?;
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        keyloop::run(&mut chat, at)?;
        // The conversation leaves with the alternate screen: its last exchange stays on the normal one.
        // Text from the file and the model: its control characters are shown, not obeyed.
        for line in transcript::last_exchange(&transcript::path_messages(chat.session())?) {
            say!("{line}");
        }
        if let Some(p) = chat.file() {
            say!("Session: {}", p.display());
        }
    } else {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        // A prompt that was refused or failed makes a script's run fail.
        if !line::run(&mut chat, &mut input, out)? {
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The most bytes print mode reads from standard input.
const STDIN_LIMIT: u64 = 4 * 1024 * 1024;

/// The session `--session` names: a file, or (with `--store`) a name on the
/// server, or the one session under the sessions directory whose id starts with it.
pub fn find_session(arg: &str, globals: &Globals) -> Result<PathBuf> {
    if arg.is_empty() {
        bail!("--session needs a file, a name on the server or the start of a session id");
    }
    let sessions_dir = globals.options()?.sessions_root;
    Ok(globals.sessions_in(sessions_dir.as_deref())?.resolve(arg)?)
}

/// `arbor chat -p PROMPT` (pi's print mode): one prompt (what standard input
/// holds first, when it is not a terminal), the reply on stdout, then exit;
/// 1 when the prompt was refused or the model failed.
pub fn print(
    out: &mut dyn Write,
    target: Target,
    flags: &ModelFlags,
    config: Option<PathBuf>,
    globals: &Globals,
    prompt: &str,
) -> Result<ExitCode> {
    let settings = Settings::load(config.as_deref())?;
    let mut chat = core::Chat::open(target, flags, settings, globals)?;
    for n in std::mem::take(&mut chat.notices) {
        say!("arbor: {n}");
    }
    let mut text = String::new();
    if !std::io::stdin().is_terminal() {
        let read = std::io::stdin().lock().take(STDIN_LIMIT + 1).read_to_string(&mut text)?;
        if read as u64 > STDIN_LIMIT {
            bail!("standard input holds more than {} MiB; give a file's path in the prompt instead", STDIN_LIMIT >> 20);
        }
    }
    text.push_str(prompt);
    // The reply reaches a terminal, or a file: its control characters are shown, not obeyed.
    let out = &mut crate::shared::visible::Visible::new(out);
    let mut failed = None;
    let r = chat.prompt(&text, &mut |ev| {
        if let Some(AgentEvent::Delta(StreamDelta::Text(t))) = ev {
            if let Err(e) = out.write_all(t.as_bytes()).and_then(|_| out.flush()) {
                failed.get_or_insert(e);
            }
        }
        false
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    writeln!(out)?;
    if r.reply.stop_reason() == "error" {
        say!("arbor: {}", r.reply.error_message().unwrap_or("the model failed"));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
