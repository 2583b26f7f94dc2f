//! `arbor path`: the entries from the root to an entry.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use arbor_context::render::ToolCalls;

use crate::shared::output::{entry_line, home, write_json_list};
use crate::shared::session::{check_lines, require_entry, Globals};
use crate::shared::visible::for_people;

/// Print the path from the root to an entry (default: the leaf).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
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
    let path = s.branch_positions(args.id.as_deref());
    // A stale index read again may not hold the entry any more.
    if check_lines(&mut s, Some(&path))? {
        if let Some(id) = &args.id {
            require_entry(&mut s, id, &args.file)?;
        }
    }
    let idx = s.branch_positions(args.id.as_deref());
    if args.json {
        write_json_list(out, idx.iter().filter_map(|&i| s.json_at(i)))?;
        out.write_all(b"\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let home = home();
    let mut calls = ToolCalls::new();
    for &i in &idx {
        if let Some(e) = s.entry_at(i) {
            calls.record(e);
            writeln!(out, "{}", entry_line(e, &calls, home.as_deref()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
