//! `arbor context`: the context the model sees at the leaf.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};

use arbor_context::plan::{self, Checked, SessionPlan};
use arbor_context::render::Form;
use arbor_context::Context;
use arbor_tree::Session;

use crate::shared::held::{changed, reads_once, Held};
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
    if args.json && reads_once(&s) {
        write_json_once(&mut s, &args, plan, out)?;
        exit_without_freeing(s);
        return Ok(ExitCode::SUCCESS);
    }
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
        (true, false) => plan::write_json(out, &s, &plan)?,
        (true, true) => plan::write_llm_json(out, &s, &plan)?,
        // The transcript checks the lines as it reads them (each once) and
        // writes nothing when one is not where the index put it: the file
        // is then read again (and the leaf moved again), without the index.
        (false, llm) => {
            let form = if llm { Form::ForModel } else { Form::AsStored };
            if plan::write_transcript(out, &s, &plan, form)? == Checked::Moved {
                read_again(&mut s)?;
                plan = plan_at(&mut s, &args)?;
                if plan::write_transcript(out, &s, &plan, form)? == Checked::Moved {
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

/// `context --json` (or `--json --llm`) of a session opened through the
/// index its store keeps (a server's, which changes with its lines in the
/// same transactions): each line of the context is read once, checked as it
/// is written ([`crate::shared::held`]), instead of all of them checked first
/// and read again to be written. A line not where the index put it within
/// the first [`crate::shared::held::HOLD`] bytes of output: nothing is
/// written, the session is read again without the index and written from
/// that. Later (the output is on its way): the command fails saying so.
fn write_json_once(s: &mut Session, args: &Args, plan: SessionPlan, out: &mut dyn Write) -> Result<()> {
    let write = |s: &Session, plan: &SessionPlan, out: &mut dyn Write| match args.llm {
        false => plan::write_json(out, s, plan),
        true => plan::write_llm_json(out, s, plan),
    };
    let mut held = Held::new(&mut *out);
    match write(s, &plan, &mut held) {
        Ok(()) => held.flush()?,
        Err(e) if held.holding() && changed(&e) => {
            read_again(s)?;
            let plan = plan_at(s, args)?;
            write(s, &plan, out)?;
        }
        Err(e) => {
            out.flush()?;
            bail!("{}: {e} (while the context was written)", args.file.display());
        }
    }
    out.write_all(b"\n")?;
    Ok(())
}

/// The plan of the context at the leaf `--leaf` names (or the session's).
fn plan_at(s: &mut Session, args: &Args) -> Result<SessionPlan> {
    if let Some(id) = &args.leaf {
        require_entry(s, id, &args.file)?;
        s.branch(id).with_context(|| args.file.display().to_string())?;
    }
    Ok(Context::of(s).plan()?)
}
