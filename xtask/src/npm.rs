//! npm packages the tests and benchmarks use (pi, ccusage, the MCP
//! inspector), installed on first use into a cache folder, never into the
//! repository.
//!
//! Every install holds a file lock in its folder for the check and the
//! install together, so tests that ask for a package at once on a fresh
//! machine wait for one install instead of reading a half-installed one.
//! npm's own output goes to stderr: a command whose stdout a test reads
//! (`cargo xtask pi` prints the folder) prints only its answer there, on the
//! run that installs as on every later one.

use std::env;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// node or npm is not on this machine: what needs the package cannot run here.
#[derive(Debug)]
pub struct NpmUnavailable(pub String);

impl fmt::Display for NpmUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "npm packages cannot be installed here: {}", self.0)
    }
}

impl std::error::Error for NpmUnavailable {}

/// One npm package at one version.
#[derive(Debug, Clone, Copy)]
pub struct Package {
    /// The package's name (`@mariozechner/pi-coding-agent`).
    pub name: &'static str,
    /// The exact version installed.
    pub version: &'static str,
    /// The environment variable that names another folder for it.
    pub dir_env: &'static str,
    /// The folder's name under `<cache>/arbor-dev/` (with the version appended).
    pub folder: &'static str,
}

impl Package {
    /// The folder the package is installed into: `$<dir_env>`, else
    /// `<cache>/arbor-dev/<folder>-<version>` (`$XDG_CACHE_HOME`, else `~/.cache`).
    pub fn dir(&self) -> Result<PathBuf> {
        if let Some(dir) = env::var_os(self.dir_env).filter(|d| !d.is_empty()) {
            return Ok(PathBuf::from(dir));
        }
        Ok(cache_root()?.join(format!("{}-{}", self.folder, self.version)))
    }

    /// The package's own folder inside [`Package::dir`].
    pub fn package_dir(&self, dir: &Path) -> PathBuf {
        dir.join("node_modules").join(self.name)
    }

    /// Installs the package (once; later calls find it) and returns the
    /// folder whose `node_modules` holds it. Fails with [`NpmUnavailable`]
    /// when node or npm is missing.
    pub fn ensure(&self) -> Result<PathBuf> {
        for tool in ["node", "npm"] {
            let found = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
            if !found {
                return Err(NpmUnavailable(format!("`{tool}` is not on the PATH")).into());
            }
        }
        let dir = self.dir()?;
        let manifest = self.package_dir(&dir).join("package.json");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let lock_path = dir.join(".install.lock");
        let lock = std::fs::File::create(&lock_path).with_context(|| format!("creating {}", lock_path.display()))?;
        lock.lock().with_context(|| format!("locking {}", lock_path.display()))?;
        if installed_version(&manifest).as_deref() == Some(self.version) {
            return Ok(dir);
        }
        eprintln!("installing {}@{} into {}", self.name, self.version, dir.display());
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
            .arg(&dir)
            .arg(format!("{}@{}", self.name, self.version))
            // npm's "added N packages" must not reach our stdout, which
            // callers read for the folder.
            .stdout(Stdio::from(std::io::stderr()))
            .stdin(Stdio::null())
            .status()
            .context("running npm install")?;
        if !status.success() {
            bail!("npm install {}@{} failed ({status})", self.name, self.version);
        }
        match installed_version(&manifest) {
            Some(v) if v == self.version => Ok(dir),
            other => bail!("after npm install, {} says version {other:?}", manifest.display()),
        }
    }
}

/// `<cache>/arbor-dev`: `$XDG_CACHE_HOME`, else `~/.cache`.
pub fn cache_root() -> Result<PathBuf> {
    let cache = match env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => env::home_dir().context("no home directory for the install cache (set XDG_CACHE_HOME)")?.join(".cache"),
    };
    Ok(cache.join("arbor-dev"))
}

fn installed_version(manifest: &Path) -> Option<String> {
    let text = std::fs::read_to_string(manifest).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json.get("version")?.as_str().map(str::to_owned)
}

/// Runs `cmd` (an install, a build) with its stdout sent to stderr, where
/// callers whose stdout is their answer want a tool's chatter; an error
/// naming `what` when it fails.
pub fn run_quietly(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd
        .stdout(Stdio::from(std::io::stderr()))
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_folder_is_named_by_the_environment_or_the_cache() {
        let p = Package { name: "x", version: "1.2.3", dir_env: "ARBOR_XTASK_TEST_NO_SUCH_DIR", folder: "x" };
        let dir = p.dir().unwrap();
        assert!(dir.ends_with("arbor-dev/x-1.2.3"), "{}", dir.display());
        assert_eq!(p.package_dir(Path::new("/d")), Path::new("/d/node_modules/x"));
    }
}
