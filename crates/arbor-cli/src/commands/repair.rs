//! `arbor repair`: a clean copy of a damaged session file.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use arbor_tree::repair::{repair_file, Repair};

use crate::shared::output::write_json_line;
use crate::shared::session::Globals;
use crate::shared::visible::for_people;

/// Write a clean copy of a damaged session file (dry run unless --write).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    // The help names the side files as `FILE.backup-<ms>`, which rustdoc would read as HTML.
    #[arg(long, help = "Apply: keep the original as FILE.backup-<ms>, move rejected lines to FILE.rejected-<ms>")]
    write: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    g.local_only("repair", "pull the session (arbor pull) and repair the local copy")?;
    let Args { file, write, json } = args;
    let report = repair_file(&file, if write { Repair::Write } else { Repair::Report })?;
    if json {
        write_json_line(out, &report)?;
    } else if report.clean {
        writeln!(out, "{}: nothing to repair", file.display())?;
    } else {
        for a in &report.actions {
            writeln!(out, "{}:{a}", file.display())?;
        }
        let verb = if write { "kept" } else { "would keep" };
        writeln!(out, "{verb} {} lines, moved {} to the side file", report.kept, report.rejected)?;
        match (&report.backup, &report.rejected_file) {
            (Some(b), r) => {
                writeln!(out, "original kept as {}", b.display())?;
                if let Some(r) = r {
                    writeln!(out, "rejected lines in {}", r.display())?;
                }
            }
            (None, _) => writeln!(out, "dry run: nothing written (use --write to apply)")?,
        }
    }
    Ok(ExitCode::SUCCESS)
}
