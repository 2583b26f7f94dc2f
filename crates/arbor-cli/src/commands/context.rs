//! `arbor context`: the context the model sees at the leaf.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};

use arbor_context::render::write_plan_transcript;
use arbor_context::{plan_session_context, write_plan_json, write_plan_llm_json, Checked, SessionPlan};
use arbor_tree::Session;

use crate::shared::session::{check_lines, exit_without_freeing, read_again, require_entry, Globals};
use crate::shared::visible::for_people;

/// Print the context the model sees at the leaf (pi's buildSessionContext).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    /// Build the context as if the leaf were at this entry.
    #[arg(long, value_name = "ID")]
    leaf: Option<String>,
    /// Print the messages after the mapping for the model (pi's convertToLlm).
    #[arg(long)]
    llm: bool,
    /// Print JSON: the SessionContext object, or with --llm the message list.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let mut s = g.open_read(&args.file)?;
    let mut plan = plan_at(&mut s, &args)?;
    if args.json {
        // The lines the context reads are checked first; a stale index is
        // dropped and the file read again (and the leaf moved again).
        if check_lines(&mut s, Some(&plan.lines()))? {
            plan = plan_at(&mut s, &args)?;
        }
    }
    // Each writes a batch of messages at a time: never all in memory.
    // Without --llm the JSON messages are copied from the file.
    match (args.json, args.llm) {
        (true, false) => write_plan_json(&s, &plan, out)?,
        (true, true) => write_plan_llm_json(&s, &plan, out)?,
        // The transcript checks the lines as it reads them (each once) and
        // writes nothing when one is not where the index put it: the file
        // is then read again (and the leaf moved again), without the index.
        (false, llm) => {
            if write_plan_transcript(&s, &plan, out, llm)? == Checked::Moved {
                read_again(&mut s)?;
                plan = plan_at(&mut s, &args)?;
                if write_plan_transcript(&s, &plan, out, llm)? == Checked::Moved {
                    bail!("{}: the file changed while it was read", args.file.display());
                }
            }
        }
    }
    if args.json {
        out.write_all(b"\n")?;
    }
    exit_without_freeing(s);
    Ok(ExitCode::SUCCESS)
}

/// The plan of the context at the leaf `--leaf` names (or the session's).
fn plan_at(s: &mut Session, args: &Args) -> Result<SessionPlan> {
    if let Some(id) = &args.leaf {
        require_entry(s, id, &args.file)?;
        s.branch(id).with_context(|| args.file.display().to_string())?;
    }
    Ok(plan_session_context(s)?)
}
