//! `arbor cache clear`: removes the derived data Arbor keeps in its cache
//! directory (the catalogs with their search filters, the sessions' tree
//! indexes). The session files are never touched; the next command builds
//! what it needs again.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use arbor_tree::paths;

use crate::shared::backend;
use crate::shared::session::Globals;

/// The cache of derived data (catalogs, search filters, tree indexes).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Remove everything Arbor derived from session files ($ARBOR_CACHE_DIR, else $XDG_CACHE_HOME/arbor, else ~/.cache/arbor).
    Clear,
}

pub fn run(args: Args, _g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    match args.action {
        Action::Clear => {
            let Some(cache) = paths::cache_dir() else {
                writeln!(out, "no cache directory (no $ARBOR_CACHE_DIR, $XDG_CACHE_HOME or home directory)")?;
                return Ok(ExitCode::SUCCESS);
            };
            let bytes = backend::clear_cache(&cache).with_context(|| format!("clearing {}", cache.display()))?;
            writeln!(out, "removed {:.1} MB of derived data from {}", bytes as f64 / 1e6, cache.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
