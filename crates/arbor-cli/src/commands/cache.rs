//! `arbor cache clear`: removes the derived data Arbor keeps in its cache
//! directory (the catalogs with their search filters, the sessions' tree
//! indexes, the local copies of sessions read from a server). The session files are never touched; the next command builds
//! what it needs again.
//!
//! `arbor cache build`: builds every derived datum the catalog lacks (the
//! listing and the search filters of every range without one), under the
//! builder's lock (`<cache>/build.lock`): a builder already running makes
//! it skip. A first search over much text without filters starts one in the
//! background (see [`crate::shared::background`]).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context as _, Result};

use arbor_tree::paths;
use arbor_tree::sessions::Scope;

use crate::shared::backend;
use crate::shared::background;
use crate::shared::progress::Bar;
use crate::shared::session::Globals;

/// The cache of derived data (catalogs, search filters, tree indexes, local copies of server sessions).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Remove everything Arbor derived from session files, and its copies of server sessions ($ARBOR_CACHE_DIR, else $XDG_CACHE_HOME/arbor, else ~/.cache/arbor).
    Clear,
    /// Build what the catalog lacks: the listing and the search filters (skipped while another build runs).
    Build {
        /// The sessions root (default: $ARBOR_SESSIONS_DIR, else $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions).
        #[arg(long, value_name = "DIR")]
        sessions_dir: Option<PathBuf>,
    },
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let cache = paths::cache_dir();
    match args.action {
        Action::Clear => {
            let Some(cache) = cache else {
                writeln!(out, "no cache directory (no $ARBOR_CACHE_DIR, $XDG_CACHE_HOME or home directory)")?;
                return Ok(ExitCode::SUCCESS);
            };
            let bytes = backend::clear_cache(&cache).with_context(|| format!("clearing {}", cache.display()))?;
            writeln!(out, "removed {:.1} MB of derived data from {}", bytes as f64 / 1e6, cache.display())?;
        }
        Action::Build { sessions_dir } => {
            // The server keeps its filters as it writes; only local files have a builder to wait for.
            let _lock = match (&cache, g.store.is_none()) {
                (Some(cache), true) => {
                    let lock = background::try_lock(cache)
                        .with_context(|| format!("locking {}", background::lock_path(cache).display()))?;
                    match lock {
                        Some(lock) => Some(lock),
                        None => {
                            writeln!(out, "another `arbor cache build` is running for {}; skipped", cache.display())?;
                            return Ok(ExitCode::SUCCESS);
                        }
                    }
                }
                _ => None,
            };
            let sessions = g.sessions_in(sessions_dir.as_deref())?;
            let started = Instant::now();
            let built = sessions.update_index(&Scope::All, &Bar::new());
            backend::warn(sessions.as_ref());
            built?;
            let where_ = cache.map_or_else(|| "memory".to_owned(), |c| c.display().to_string());
            writeln!(
                out,
                "built the catalog of {} in {:.1} s ({where_})",
                sessions.location(),
                started.elapsed().as_secs_f64()
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
