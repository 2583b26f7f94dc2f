//! `arbor tree`: the session tree.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use crate::shared::filter::FilterMode;
use crate::shared::session::{check_lines, exit_without_freeing, Globals};
use crate::shared::tree_text::{filter_modes, print_tree, TreeText};
use crate::shared::visible::for_people;

/// Show the session tree: branches, the active path, labels and the leaf.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    /// Print pi's `getTree()` JSON.
    #[arg(long, conflicts_with_all = ["filter", "depth", "width"])]
    json: bool,
    /// Show the tree as if the leaf were at this entry.
    #[arg(long, value_name = "ID")]
    leaf: Option<String>,
    /// Show only what this filter of the tree selector shows (default: every entry).
    #[arg(long, value_name = "MODE", value_parser = filter_modes())]
    filter: Option<FilterMode>,
    /// Indent at most N levels; a deeper row shows its level as a number (default: what fits
    /// half of the width).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    depth: Option<u16>,
    /// Cut every line to N columns (default: the terminal's width; no cut into a pipe or a file).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(20..))]
    width: Option<u16>,
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
        // Rows show a line of each entry: long lines are read as previews.
        s.read_previews(true);
        let terminal = || {
            std::io::stdout()
                .is_terminal()
                .then(|| crossterm::terminal::size().ok().map(|(w, _)| usize::from(w)))
                .flatten()
                // A terminal that reports no size (0 columns) is not cut.
                .filter(|&w| w > 0)
        };
        let width = args.width.map(usize::from).or_else(terminal);
        let opts = TreeText { filter: args.filter, depth: args.depth.map(usize::from), width, home: None };
        print_tree(&s, &opts, out)?;
    }
    exit_without_freeing(s);
    Ok(ExitCode::SUCCESS)
}
