//! `arbor chat`: a branching conversation with a model, written to a
//! pi-compatible session file as it goes.
//!
//! [`core::Chat`] holds the agent session and one method per command; two
//! front ends drive it: [`screen`] in a terminal (streaming reply, the tree and
//! message selectors, Esc to abort, double Escape, queued prompts, history and
//! completion; its state in [`view`], drawn by [`draw`] from the path's
//! messages as [`transcript`] shows them) and [`line`](mod@line) when standard
//! input is not a terminal (one line per prompt, command or answer: scripts,
//! pipes and tests). Settings come from one file ([`settings`]). [`bench`](mod@bench)
//! times the first screen with no terminal (`arbor chat FILE --bench`).

pub mod bench;
mod commands;
mod core;
mod draw;
mod line;
mod screen;
mod settings;
mod transcript;
mod view;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

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
    let mut chat = core::Chat::open(target, flags, settings, globals)?;
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        screen::run(&mut chat)?;
        // The conversation leaves with the alternate screen: its last exchange stays on the normal one.
        // Text from the file and the model: its control characters are shown, not obeyed.
        for line in transcript::last_exchange(&transcript::path_messages(chat.session())) {
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
