//! Bare `arbor`: the most recent session of the current directory, resumed
//! in the chat; without one, a new one when a model is configured (pi's
//! default model, or the settings'), else how to start one.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use arbor_tree::listing::find_most_recent_session;

use crate::shared::session::Globals;
use crate::ui::chat::{self, ModelFlags, Target};

/// Resumes the most recent session of the current directory in `arbor chat`
/// (the settings and pi's configuration name the model), or says how to start one.
pub fn run(g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let opts = g.options()?;
    let dir = opts.dir_for(&cwd.to_string_lossy())?;
    match find_most_recent_session(opts.store.as_ref(), &dir)? {
        Some(path) => chat::run(out, Target::File { path, new: false, at: None }, &ModelFlags::default(), None, g),
        // pi starts a session where there is none: so does Arbor when a model is configured.
        None if default_model_configured()? => chat::run(out, Target::New, &ModelFlags::default(), None, g),
        None => {
            eprintln!(
                "No session in {} yet. Start one with `arbor chat --new --model PROVIDER/MODEL` \
                 (see `arbor chat --help`), or list every session with `arbor ls --all`.",
                cwd.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// True when the settings (Arbor's, or pi's `defaultProvider`/`defaultModel`) name a model.
fn default_model_configured() -> Result<bool> {
    let s = chat::Settings::load(None)?;
    Ok(s.model.is_some() || s.default_model.is_some())
}
