//! The reference implementation, live: pi's npm package installed into a
//! cache directory (never into the repository) and node scripts run against it.
//!
//! The differential test and the benchmarks compare Arbor with pi's own
//! `SessionManager`, `buildSessionContext`, `convertToLlm` and
//! `createBranchedSession`. They call [`ensure_pi`] for the install and
//! [`node`] for a command that runs a script with the package importable.
//! Where node or npm is missing, [`ensure_pi`] fails with
//! [`PiUnavailable`], so a caller can skip with one clear line.

use std::env;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The npm package of the reference implementation.
pub const PI_PACKAGE: &str = "@mariozechner/pi-coding-agent";
/// The version every comparison is made against.
pub const PI_VERSION: &str = "0.73.1";

/// node or npm is not on this machine: the comparison cannot run here.
#[derive(Debug)]
pub struct PiUnavailable(pub String);

impl fmt::Display for PiUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pi's npm package cannot be installed here: {}", self.0)
    }
}

impl std::error::Error for PiUnavailable {}

/// The folder the package is installed into: `$ARBOR_PI_DIR`, else
/// `<cache>/arbor-dev/pi-<version>` (`$XDG_CACHE_HOME`, else `~/.cache`).
pub fn pi_dir() -> Result<PathBuf> {
    if let Some(dir) = env::var_os("ARBOR_PI_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let cache = match env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => env::home_dir().context("no home directory for the pi install (set ARBOR_PI_DIR)")?.join(".cache"),
    };
    Ok(cache.join("arbor-dev").join(format!("pi-{PI_VERSION}")))
}

/// Installs pi's package (once; later calls find it) and returns the folder
/// whose `node_modules` holds it. Fails with [`PiUnavailable`] when node or npm
/// is missing.
pub fn ensure_pi() -> Result<PathBuf> {
    for tool in ["node", "npm"] {
        let found = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
        if !found {
            return Err(PiUnavailable(format!("`{tool}` is not on the PATH")).into());
        }
    }
    let dir = pi_dir()?;
    let manifest = dir.join("node_modules").join(PI_PACKAGE).join("package.json");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // One install at a time, and no one reads the package while another
    // process installs it (tests that run at once each ask for it): the
    // check and the install both hold the lock, released when it is dropped.
    let lock_path = dir.join(".install.lock");
    let lock = std::fs::File::create(&lock_path).with_context(|| format!("creating {}", lock_path.display()))?;
    lock.lock().with_context(|| format!("locking {}", lock_path.display()))?;
    if installed_version(&manifest).as_deref() == Some(PI_VERSION) {
        return Ok(dir);
    }
    eprintln!("installing {PI_PACKAGE}@{PI_VERSION} into {}", dir.display());
    let status = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
        .arg(&dir)
        .arg(format!("{PI_PACKAGE}@{PI_VERSION}"))
        .status()
        .context("running npm install")?;
    if !status.success() {
        bail!("npm install {PI_PACKAGE}@{PI_VERSION} failed ({status})");
    }
    match installed_version(&manifest) {
        Some(v) if v == PI_VERSION => Ok(dir),
        other => bail!("after npm install, {} says version {other:?}", manifest.display()),
    }
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

fn installed_version(manifest: &Path) -> Option<String> {
    let text = std::fs::read_to_string(manifest).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json.get("version")?.as_str().map(str::to_owned)
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
