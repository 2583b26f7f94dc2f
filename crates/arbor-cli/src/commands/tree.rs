//! `arbor tree`: the session tree.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use arbor_tree::Session;

use crate::shared::filter::FilterMode;
use crate::shared::held::{changed, reads_once, Held};
use crate::shared::session::{check_lines, exit_without_freeing, read_again, Globals};
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
    if args.json && reads_once(&s) {
        write_json_once(&mut s, &args, out)?;
        exit_without_freeing(s);
        return Ok(ExitCode::SUCCESS);
    }
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

/// `tree --json` of a session opened through the index its store keeps
/// (a server's, which changes with its lines in the same transactions):
/// each line is read once, checked as it is written (a line not where the
/// index put it fails the write, [`arbor_tree::TreeError::Changed`]),
/// instead of all of them checked first and read again to be written. Such
/// a line within the first [`crate::shared::held::HOLD`] bytes of output: nothing is written,
/// the session is read again without the index and written from that.
/// Later (the output is on its way): the command fails saying so.
fn write_json_once(s: &mut Session, args: &Args, out: &mut dyn Write) -> Result<()> {
    if let Some(id) = &args.leaf {
        s.branch(id).with_context(|| args.file.display().to_string())?;
    }
    let mut held = Held::new(&mut *out);
    match s.get_tree().write_json(&mut held) {
        Ok(()) => held.flush()?,
        Err(e) if held.holding() && changed(&e) => {
            read_again(s)?;
            if let Some(id) = &args.leaf {
                s.branch(id).with_context(|| args.file.display().to_string())?;
            }
            s.get_tree().write_json(out)?;
        }
        Err(e) => {
            out.flush()?;
            bail!("{}: {e} (while the tree was written)", args.file.display());
        }
    }
    out.write_all(b"\n")?;
    Ok(())
}
