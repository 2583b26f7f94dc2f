//! `arbor chat`: a branching conversation with a model.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use crate::shared::session::Globals;
use crate::ui::chat::{self, ModelFlags, Target};
use crate::ui::picker::{self, Picked};

/// Talk to a model in a branching session: prompts, /tree, /fork, /label, /compact, … (see docs/cli.md).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file (default: pick one in the session picker; without a terminal, the most
    /// recent session of the current directory, or a new one).
    #[arg(allow_hyphen_values = true)]
    file: Option<PathBuf>,
    /// Start a new session (at FILE when given, else in the sessions directory of the current directory).
    #[arg(long)]
    new: bool,
    /// Continue the most recent session of the current directory (pi's -c).
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["file", "new", "resume", "session"])]
    continue_recent: bool,
    /// Pick the session in the session picker (pi's -r; the default without FILE).
    #[arg(short = 'r', long, conflicts_with_all = ["file", "new", "session"])]
    resume: bool,
    /// The session: a file, or (a prefix of) a session id under the sessions directory (pi's --session).
    #[arg(long, value_name = "PATH|ID", conflicts_with_all = ["file", "new"])]
    session: Option<String>,
    /// Print mode (pi's -p): send PROMPT (after what standard input holds, when it is not a
    /// terminal), print the reply on stdout and exit; a new session unless one is named.
    #[arg(short = 'p', long = "print", value_name = "PROMPT")]
    print: Option<String>,
    /// The model as PROVIDER/MODEL (default: the settings', else the last one used in the session).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    model: Option<String>,
    /// The provider's base URL (for example an OpenAI-compatible server on localhost).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// A hooks file (TOML or JSON) mapping events to commands; see docs/hooks.md.
    #[arg(long, value_name = "FILE", env = "ARBOR_HOOKS")]
    hooks: Option<PathBuf>,
    /// The settings file (default: $ARBOR_CONFIG, else ~/.config/arbor/config.toml when it exists).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Time the first screen on FILE without a terminal or a model (`cargo xtask bench --tui`):
    /// JSON lines on stdout.
    #[arg(long, hide = true, requires = "file", conflicts_with = "new")]
    bench: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    if let (true, Some(file)) = (args.bench, &args.file) {
        return chat::bench::run(&g.session(file)?, g, out);
    }
    let flags = ModelFlags { model: args.model, base_url: args.base_url, hooks: args.hooks };
    if let Some(session) = &args.session {
        let path = chat::find_session(session, g)?;
        let target = Target::File { path, new: false, at: None };
        return match args.print {
            Some(prompt) => chat::print(out, target, &flags, args.config, g, &prompt),
            None => chat::run(out, target, &flags, args.config, g),
        };
    }
    if let Some(prompt) = &args.print {
        let target = match args.file {
            Some(path) => Target::File { path, new: args.new, at: None },
            None if args.continue_recent => Target::Recent,
            None => Target::New,
        };
        return chat::print(out, target, &flags, args.config, g, prompt);
    }
    let target = match args.file {
        Some(path) => Target::File { path, new: args.new, at: None },
        None if args.new => Target::New,
        None if args.continue_recent => Target::Recent,
        None if picker::available() => {
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            match picker::pick(g.sessions()?, &cwd.to_string_lossy())? {
                Picked::Session { path, at } => Target::File { path, new: false, at },
                Picked::Left => return Ok(ExitCode::SUCCESS),
                // No session anywhere yet: start one, as before.
                Picked::NoSessions => Target::Recent,
            }
        }
        None => Target::Recent,
    };
    chat::run(out, target, &flags, args.config, g)
}
