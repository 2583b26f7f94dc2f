//! `arbor context`: the context the model sees at the leaf.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use arbor_context::render::write_plan_transcript;
use arbor_context::{context_of_plan, plan_session_context, write_plan_json, SessionPlan};
use arbor_tree::Session;

use crate::shared::session::{check_lines, exit_without_freeing, require_entry, Globals};
use crate::shared::visible::for_people;

/// Print the context the model sees at the leaf (pi's buildSessionContext).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
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
    // The lines the context reads are checked first; a stale index is
    // dropped and the file read again (and the leaf moved again).
    if check_lines(&mut s, Some(&plan.lines()))? {
        plan = plan_at(&mut s, &args)?;
    }
    if args.json && !args.llm {
        // Messages are copied from the file, a batch at a time: never all in memory.
        write_plan_json(&s, &plan, out)?;
    } else if !args.json {
        // Decoded a batch at a time, written and dropped: never all in memory.
        write_plan_transcript(&s, &plan, out, args.llm)?;
    } else {
        // Only the entries the context reads are decoded, without being kept,
        // and moved into the context: one copy of each message.
        let ctx = context_of_plan(&s, plan);
        arbor_log::json::to_writer(&mut *out, &ctx.llm_messages())?;
        exit_without_freeing(ctx);
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
    Ok(plan_session_context(s))
}
