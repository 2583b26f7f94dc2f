//! `arbor tui`: the interactive tree selector (or, with `--fork`, the
//! /branch message selector) over a session file.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::shared::agent::ModelArgs;
use crate::shared::session::Globals;
use crate::ui::tui::{self, FilterMode};

/// Browse the session tree interactively: filter, search, fold, label, and navigate (pi's /tree).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file (default: pick one in the session picker).
    #[arg(allow_hyphen_values = true)]
    file: Option<PathBuf>,
    /// Open the selector with this entry selected.
    #[arg(long, value_name = "ID", conflicts_with = "fork")]
    at: Option<String>,
    /// The filter the list opens with (pi's `treeFilterMode` setting).
    #[arg(long, value_name = "MODE", default_value = "default", value_parser = crate::shared::tree_text::filter_modes())]
    filter: FilterMode,
    /// Draw the tree again as entries arrive (from another process, or with --store another
    /// machine), keeping the selection.
    #[arg(long, conflicts_with = "fork")]
    follow: bool,
    /// Pick a user message instead and branch from it (pi's /branch): the new session file is
    /// written and its path and the message text are printed, like `fork --before`.
    #[arg(long)]
    fork: bool,
    /// Time the selector on FILE without a terminal (`cargo xtask bench --tui`): JSON lines on stdout.
    #[arg(long, hide = true, requires = "file", conflicts_with_all = ["fork", "follow"])]
    bench: bool,
    #[command(flatten)]
    model: ModelArgs,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    if let (true, Some(file)) = (args.bench, &args.file) {
        return tui::bench::run(&g.session(file)?, g, out);
    }
    if args.fork {
        tui::run_fork(out, args.file, &args.model, g)
    } else {
        tui::run(out, args.file, args.at, args.filter, args.follow, &args.model, g)
    }
}
