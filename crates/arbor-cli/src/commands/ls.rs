//! `arbor ls`: the sessions of a working directory, or of all, newest first,
//! from the catalog.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use arbor_catalog::Scope;
use arbor_context::render::normalize;
use arbor_tree::paths;

use crate::shared::catalog;
use crate::shared::output::write_json_line;
use crate::shared::session::Globals;

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

pub fn run(args: Args, _: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let root = args.sessions_dir.unwrap_or_else(paths::sessions_root);
    let scope = if args.all {
        Scope::All
    } else {
        let cwd = match args.cwd {
            Some(c) => c,
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        Scope::cwd(&cwd.to_string_lossy())
    };
    let list = catalog::list(&root, &scope, args.json)?;
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
