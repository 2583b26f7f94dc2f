//! `arbor tree`: the session tree.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use crate::shared::output::print_tree;
use crate::shared::session::{check_lines, exit_without_freeing, Globals};
use crate::shared::visible::for_people;

/// Show the session tree: branches, the active path, labels and the leaf.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    file: PathBuf,
    /// Print pi's `getTree()` JSON.
    #[arg(long)]
    json: bool,
    /// Show the tree as if the leaf were at this entry.
    #[arg(long, value_name = "ID")]
    leaf: Option<String>,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let mut s = g.open_read(&args.file)?;
    check_lines(&mut s, None)?;
    if let Some(id) = &args.leaf {
        s.branch(id).with_context(|| args.file.display().to_string())?;
    }
    if args.json {
        s.get_tree().write_json(out)?;
        out.write_all(b"\n")?;
    } else {
        print_tree(&s, out)?;
    }
    exit_without_freeing(s);
    Ok(ExitCode::SUCCESS)
}
