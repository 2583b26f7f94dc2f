//! `arbor compact`: summarize the older part of the active path into a
//! compaction entry, through `arbor-agent`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use arbor_agent::CompactOptions;
use arbor_tree::OpenMode;

use crate::shared::agent::{compact, AgentSetup, ModelArgs};
use crate::shared::output::write_json_line;
use crate::shared::progress::Spinner;
use crate::shared::session::Globals;
use crate::shared::visible::for_people;

/// Summarize the older part of the active path into a compaction entry.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    /// Keep at least this many tokens of recent messages verbatim (default 20000).
    #[arg(long, value_name = "N")]
    keep_recent_tokens: Option<u64>,
    /// Extra instructions for the summary.
    #[arg(long, value_name = "TEXT")]
    instructions: Option<String>,
    #[command(flatten)]
    model: ModelArgs,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let opts = CompactOptions { custom_instructions: args.instructions, keep_recent_tokens: args.keep_recent_tokens };
    let file = g.session(&args.file)?;
    let setup = AgentSetup { file: &file, model: &args.model, mode: OpenMode::Write, session: g.options()? };
    let r = {
        let _spinner = Spinner::now("Compacting…", " (Ctrl+C to cancel)");
        compact(setup, opts)?
    };
    if args.json {
        write_json_line(
            out,
            &json!({
                "entryId": r.entry_id,
                "firstKeptEntryId": r.first_kept_entry_id,
                "tokensBefore": r.tokens_before,
                "summary": r.summary,
                "fromExtension": r.from_extension,
            }),
        )?;
    } else {
        writeln!(
            out,
            "compaction {} keeps from {} ({} tokens before)",
            r.entry_id, r.first_kept_entry_id, r.tokens_before
        )?;
        writeln!(out, "{}", r.summary)?;
    }
    Ok(ExitCode::SUCCESS)
}
