//! `arbor navigate`: move the leaf (pi's /tree), optionally summarizing the
//! branch left behind, through `arbor-agent`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use arbor_agent::{NavigateOptions, NavigateResult};
use arbor_tree::OpenMode;

use crate::shared::agent::{navigate, AgentSetup, ModelArgs};
use crate::shared::output::write_json_line;
use crate::shared::progress::Spinner;
use crate::shared::session::Globals;
use crate::shared::visible::for_people;

/// Move the leaf to TARGET (pi's /tree), optionally summarizing the branch left behind.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    /// The entry to go to (a user message: the leaf goes to its parent and its text is printed).
    target: String,
    /// Summarize the abandoned branch with the model.
    #[arg(long)]
    summarize: bool,
    /// Extra instructions for the summary ("Additional focus: …").
    #[arg(long, value_name = "TEXT")]
    instructions: Option<String>,
    /// Use --instructions instead of the built-in summary prompt.
    #[arg(long, requires = "instructions")]
    replace_instructions: bool,
    /// Label the selected entry (with --summarize: the summary entry).
    #[arg(long, value_name = "TEXT")]
    label: Option<String>,
    #[command(flatten)]
    model: ModelArgs,
    /// Print `{"newLeafId", "oldLeafId", "summaryEntryId", "editorText", "cancelled", "aborted"}`.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let opts = NavigateOptions {
        summarize: args.summarize,
        custom_instructions: args.instructions,
        replace_instructions: args.replace_instructions.then_some(true),
        label: args.label,
    };
    let file = g.session(&args.file)?;
    let setup = AgentSetup { file: &file, model: &args.model, mode: OpenMode::Write, session: g.options()? };
    let r = {
        let _spinner = opts.summarize.then(|| Spinner::now("Summarizing branch…", " (Ctrl+C to cancel)"));
        navigate(setup, &args.target, opts, None)?
    };
    if args.json {
        write_json(out, &r)?;
    } else {
        write_text(out, &r)?;
    }
    Ok(if r.cancelled { ExitCode::from(3) } else { ExitCode::SUCCESS })
}

fn write_json(out: &mut dyn Write, r: &NavigateResult) -> Result<()> {
    let summary_id = r.summary_entry.as_ref().map(|e| &e.id);
    write_json_line(
        out,
        &json!({
            "newLeafId": r.new_leaf_id,
            "oldLeafId": r.old_leaf_id,
            "summaryEntryId": summary_id,
            "editorText": r.editor_text,
            "cancelled": r.cancelled,
            "aborted": r.aborted,
        }),
    )
}

fn write_text(out: &mut dyn Write, r: &NavigateResult) -> Result<()> {
    if r.aborted {
        writeln!(out, "summary aborted: nothing changed")?;
    } else if r.cancelled {
        writeln!(out, "navigation cancelled by a hook: nothing changed")?;
    } else {
        writeln!(
            out,
            "leaf {} -> {}",
            r.old_leaf_id.as_deref().unwrap_or("(none)"),
            r.new_leaf_id.as_deref().unwrap_or("(before the first entry)")
        )?;
        if let Some(e) = &r.summary_entry {
            writeln!(out, "branch summary {}", e.id)?;
        }
        if let Some(t) = &r.editor_text {
            writeln!(out, "editor text:\n{t}")?;
        }
    }
    Ok(())
}
