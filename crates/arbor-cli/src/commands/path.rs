//! `arbor path`: the entries from the root to an entry.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::shared::output::{write_entries_json, write_entry_lines};
use crate::shared::session::{check_lines, require_entry, Globals};
use crate::shared::visible::for_people;

/// Print the path from the root to an entry (default: the leaf).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    /// The entry the path ends at.
    id: Option<String>,
    /// Print the entries as a JSON list.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let mut s = g.open_read(&args.file)?;
    if let Some(id) = &args.id {
        require_entry(&mut s, id, &args.file)?;
    }
    let mut idx = s.branch_positions(args.id.as_deref());
    // A stale index read again may not hold the entry any more.
    if check_lines(&mut s, Some(&idx))? {
        if let Some(id) = &args.id {
            require_entry(&mut s, id, &args.file)?;
        }
        idx = s.branch_positions(args.id.as_deref());
    }
    if args.json {
        write_entries_json(out, &s, &idx)?;
        out.write_all(b"\n")?;
    } else {
        // Rows show a line of each entry: long lines are read as previews.
        s.read_previews(true);
        write_entry_lines(out, &s, &idx)?;
    }
    Ok(ExitCode::SUCCESS)
}
