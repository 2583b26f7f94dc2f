//! `arbor dump`: the header and every entry, after migration.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use arbor_tree::Position;

use crate::shared::output::{write_entries_json, write_entry_lines};
use crate::shared::session::{check_lines, Globals};
use crate::shared::visible::for_people;

/// Print the header and every entry (after migration), one line each.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    /// Print `{"header", "entries", "leafId"}` as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let mut s = g.open_read(&args.file)?;
    check_lines(&mut s, None)?;
    if args.json {
        out.write_all(b"{\"header\":")?;
        arbor_log::json::to_writer(&mut *out, &s.header().to_value())?;
        out.write_all(b",\"entries\":")?;
        let all: Vec<Position> = s.positions().collect();
        write_entries_json(out, &s, &all)?;
        out.write_all(b",\"leafId\":")?;
        arbor_log::json::to_writer(&mut *out, &s.leaf_id())?;
        out.write_all(b"}\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    // Rows show a line of each entry: long lines are read as previews.
    s.read_previews(true);
    let h = s.header();
    writeln!(out, "session {} v{} {} cwd={}", h.id, h.version(), h.timestamp, h.cwd.as_deref().unwrap_or(""))?;
    let all: Vec<Position> = s.positions().collect();
    write_entry_lines(out, &s, &all)?;
    writeln!(out, "leaf {}", s.leaf_id().unwrap_or("(none)"))?;
    Ok(ExitCode::SUCCESS)
}
