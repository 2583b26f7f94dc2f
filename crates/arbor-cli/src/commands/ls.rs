//! `arbor ls`: the sessions of a working directory, or of all, newest first,
//! from the catalog, or with `--store` from the server's rows.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};

use arbor_catalog::Scope;
use arbor_context::render::normalize;
use arbor_pg::PgStore;
use arbor_tree::{paths, read_session_info, SessionListInfo};

use crate::shared::catalog;
use crate::shared::output::write_json_line;
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
    let list = match g.server()? {
        Some(store) => {
            if args.sessions_dir.is_some() {
                bail!("--sessions-dir names a local folder; with --store the sessions are on the server");
            }
            server_list(store, cwd.as_deref(), args.json)?
        }
        None => {
            let root = args.sessions_dir.unwrap_or_else(paths::sessions_root);
            let scope = cwd.as_deref().map_or(Scope::All, Scope::cwd);
            catalog::list(&root, &scope, args.json)?
        }
    };
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

/// The sessions on the server, from the facts in their rows; with `texts`,
/// each with pi's `allMessagesText` (read from the session).
fn server_list(store: &PgStore, cwd: Option<&str>, texts: bool) -> Result<Vec<SessionListInfo>> {
    let mut list = store.sessions(cwd)?;
    if texts {
        for info in &mut list {
            let Some(r) = arbor_tree::Store::read_from(store, &info.path, 0)? else { continue };
            if let Some(full) = read_session_info(r, &info.path, None)? {
                info.all_messages_text = full.all_messages_text;
            }
        }
    }
    Ok(list)
}
