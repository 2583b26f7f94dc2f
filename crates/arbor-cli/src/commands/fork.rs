//! `arbor fork`: copy a path into a new session file, at an entry (pi's
//! `createBranchedSession`) or before a user message (the /branch flow,
//! through `arbor-agent`, with its hooks).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use serde_json::json;

use arbor_tree::{OpenMode, Session, SessionOptions};

use crate::shared::agent::{fork_before, write_fork, AgentSetup, ModelArgs};
use crate::shared::output::write_json_line;
use crate::shared::session::{print_diagnostics, Globals};
use crate::shared::visible::for_people;

/// Copy the path to an entry into a new session file (--at: pi's createBranchedSession;
/// --before: the /branch flow, up to the parent of a user message).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    /// The entry the new session ends at.
    #[arg(long, value_name = "ID", required_unless_present = "before", conflicts_with = "before")]
    at: Option<String>,
    /// A user message: the new session ends at its parent, and its text is printed for the editor.
    #[arg(long, value_name = "USER_MESSAGE_ID")]
    before: Option<String>,
    /// A hooks file for the fork events (with --before); see docs/hooks.md.
    #[arg(long, value_name = "FILE", env = "ARBOR_HOOKS", requires = "before")]
    hooks: Option<PathBuf>,
    /// Directory for the new file (default: beside the original).
    #[arg(long, value_name = "DIR")]
    sessions_dir: Option<PathBuf>,
    /// Print `{"path": …}`.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let opts = SessionOptions { session_dir: args.sessions_dir.clone(), ..g.options()? };
    let file = g.session(&args.file)?;
    if let Some(before) = &args.before {
        create_dir(&opts, args.sessions_dir.as_deref())?;
        let model = ModelArgs::hooks_only(args.hooks.clone());
        // The source is only read; the fork writes a new file.
        let setup = AgentSetup { file: &file, model: &model, mode: OpenMode::ReadOnly, session: opts };
        let r = fork_before(setup, before)?;
        return write_fork(out, &r, args.json);
    }
    let at = args.at.as_deref().context("--at or --before is required")?;
    let mut s = Session::open(&file, OpenMode::ReadOnly, opts.clone())?;
    print_diagnostics(&file, s.diagnostics());
    create_dir(&opts, args.sessions_dir.as_deref())?;
    let path = s.create_branched_session(at).with_context(|| file.display().to_string())?;
    s.materialize()?;
    let path = path.context("a file session always forks into a file")?;
    if args.json {
        write_json_line(out, &json!({ "path": path }))?;
    } else {
        writeln!(out, "{}", path.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Makes the directory for the new session in the session's store (a folder; nothing on a server).
fn create_dir(opts: &SessionOptions, dir: Option<&Path>) -> Result<()> {
    if let Some(dir) = dir {
        opts.store.create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    Ok(())
}
