//! `arbor ls`: the sessions of a working directory, or of all, newest first,
//! from the backend the sessions live in (the catalog of the sessions root,
//! or the server's rows with `--store`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use arbor_context::render::normalize;
use arbor_tree::sessions::{ListRequest, Scope};

use crate::shared::backend;
use crate::shared::output::write_json_line;
use crate::shared::progress::Bar;
use crate::shared::session::Globals;
use crate::shared::visible::for_people;
/// List sessions, newest first.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// List the sessions of this working directory (default: the current one).
    #[arg(long, value_name = "DIR", conflicts_with = "all")]
    cwd: Option<PathBuf>,
    /// List the sessions of every working directory.
    #[arg(long)]
    all: bool,
    /// The sessions root (default: $ARBOR_SESSIONS_DIR, else $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions).
    #[arg(long, value_name = "DIR")]
    sessions_dir: Option<PathBuf>,
    /// Print pi's SessionInfo objects as a JSON list.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let cwd = match (args.cwd, args.all) {
        (_, true) => None,
        (Some(c), false) => Some(c.to_string_lossy().into_owned()),
        (None, false) => {
            Some(std::env::current_dir().context("cannot read the current directory")?.to_string_lossy().into_owned())
        }
    };
    let sessions = g.sessions_in(args.sessions_dir.as_deref())?;
    let scope = cwd.as_deref().map_or(Scope::All, Scope::cwd);
    // pi's SessionInfo in JSON has every message's text.
    let request = if args.json { ListRequest::new(scope).with_text() } else { ListRequest::new(scope) };
    let list = sessions.listing(&request, &Bar::new());
    backend::warn(sessions.as_ref());
    let list = list?;
    if args.json {
        write_json_line(out, &list)?;
    } else if list.is_empty() {
        writeln!(out, "no sessions")?;
    } else {
        for i in &list {
            let title = i.name.clone().unwrap_or_else(|| normalize(&i.first_message));
            let title: String = title.chars().take(60).collect();
            writeln!(out, "{}  {:>5} msgs  {}  {}", i.modified, i.message_count, title, i.path.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
