//! The reference implementation, live: pi's npm package installed into a
//! cache directory (never into the repository) and node scripts run against it.
//!
//! The differential test and the benchmarks compare Arbor with pi's own
//! `SessionManager`, `buildSessionContext`, `convertToLlm` and
//! `createBranchedSession`. They call [`ensure_pi`] for the install and
//! [`node`] for a command that runs a script with the package importable.
//! Where node or npm is missing, [`ensure_pi`] fails with
//! [`PiUnavailable`], so a caller can skip with one clear line.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::npm::{NpmUnavailable, Package};

/// The npm package of the reference implementation.
pub const PI_PACKAGE: &str = "@mariozechner/pi-coding-agent";
/// The version every comparison is made against.
pub const PI_VERSION: &str = "0.73.1";

/// The package as [`crate::npm`] installs it.
pub const PI: Package = Package { name: PI_PACKAGE, version: PI_VERSION, dir_env: "ARBOR_PI_DIR", folder: "pi" };

/// node or npm is missing: pi cannot run here.
pub type PiUnavailable = NpmUnavailable;

/// Installs pi's package (once; later calls find it) and returns the folder
/// whose `node_modules` holds it. Fails with [`PiUnavailable`] when node or npm
/// is missing. npm's output goes to stderr (see [`crate::npm`]).
pub fn ensure_pi() -> Result<PathBuf> {
    PI.ensure()
}

/// [`ensure_pi`] for callers that skip pi when node or npm is missing:
/// `None` after `skip` is told why; any other failure is an error.
pub fn ensure_pi_or_skip(skip: impl FnOnce(&PiUnavailable)) -> Result<Option<PathBuf>> {
    match ensure_pi() {
        Ok(dir) => Ok(Some(dir)),
        Err(e) => match e.downcast_ref::<PiUnavailable>() {
            Some(why) => {
                skip(why);
                Ok(None)
            }
            None => Err(e),
        },
    }
}

/// A `node` command that runs `script` (an ES module) with pi's package
/// importable as `@mariozechner/pi-coding-agent`: the script is run from a
/// copy inside the install folder, where node's resolution finds
/// `node_modules`. Arguments are appended by the caller.
pub fn node(pi: &Path, script_name: &str, script: &str) -> Result<Command> {
    let scripts = pi.join("arbor-scripts");
    std::fs::create_dir_all(&scripts).with_context(|| format!("creating {}", scripts.display()))?;
    let path = scripts.join(script_name);
    std::fs::write(&path, script).with_context(|| format!("writing {}", path.display()))?;
    let mut cmd = Command::new("node");
    cmd.arg(path);
    Ok(cmd)
}
