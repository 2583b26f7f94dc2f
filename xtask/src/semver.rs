//! `cargo xtask semver`: `cargo semver-checks` over every crate published to
//! crates.io, against the last release (a `vX.Y.Z` tag) or, until there is
//! one, against the merge base with `main` as a report.
//!
//! cargo-semver-checks is installed on first use into the cache
//! (`<cache>/arbor-dev/cargo-semver-checks-<version>`), never the repository;
//! the install holds a lock so two runs at once wait for one build. It is not
//! part of CI: building it costs about ten CPU minutes on a fresh machine,
//! which the 40-minute budget of `.ci/run` does not hold (docs/library.md,
//! "Publishing").

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::npm::{cache_root, run_quietly};

/// The version installed, pinned so every run checks with the same lints.
const VERSION: &str = "0.51.0";

/// Crates that are not published to crates.io (the CLI is, but has no
/// library API; arbor-py is published as a wheel).
const NOT_CHECKED: [&str; 4] = ["xtask", "arbor-test-support", "arbor-py", "arbor-cli"];

/// `cargo xtask semver [--baseline REV]`.
pub fn cli(root: &Path, args: &[String]) -> Result<()> {
    let baseline = match args {
        [] => None,
        [flag, rev] if flag == "--baseline" => Some(rev.clone()),
        _ => bail!("usage: cargo xtask semver [--baseline REV]"),
    };
    let (rev, release) = match baseline {
        Some(rev) => (rev, true),
        None => match last_release(root)? {
            Some(tag) => (tag, true),
            None => (merge_base(root)?, false),
        },
    };
    let tool = ensure()?;
    if release {
        eprintln!("== cargo semver-checks against {rev}");
    } else {
        eprintln!("== no release tag (v*) yet: a report against {rev}, the merge base with main");
    }
    let mut cmd = Command::new(&tool);
    cmd.args(["semver-checks", "check-release", "--workspace", "--baseline-rev", &rev]).current_dir(root);
    for name in NOT_CHECKED {
        cmd.args(["--exclude", name]);
    }
    let status = cmd.status().context("running cargo-semver-checks")?;
    match (status.success(), release) {
        (true, _) => Ok(()),
        (false, true) => bail!("cargo semver-checks found breaking changes against {rev} ({status})"),
        (false, false) => {
            eprintln!("(a report: these changes would need a new major version once a release exists)");
            Ok(())
        }
    }
}

/// The newest `vX.Y.Z` tag reachable from HEAD, if any.
fn last_release(root: &Path) -> Result<Option<String>> {
    let out = git(root, &["describe", "--tags", "--abbrev=0", "--match", "v[0-9]*"])?;
    Ok(out.filter(|t| !t.is_empty()))
}

/// Where HEAD left `main`; on `main` itself, its parent.
fn merge_base(root: &Path) -> Result<String> {
    let head = git(root, &["rev-parse", "HEAD"])?.context("git rev-parse HEAD failed")?;
    let base = git(root, &["merge-base", "HEAD", "main"])?.unwrap_or_else(|| head.clone());
    if base != head {
        return Ok(base);
    }
    git(root, &["rev-parse", "HEAD~1"])?.context("HEAD has no parent to compare with")
}

/// `git ARGS` in `root`: its trimmed stdout, or `None` when git says no.
fn git(root: &Path, args: &[&str]) -> Result<Option<String>> {
    let out = Command::new("git").args(args).current_dir(root).stderr(Stdio::null()).output().context("running git")?;
    Ok(out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
}

/// The `cargo-semver-checks` binary, installed into the cache on first use.
fn ensure() -> Result<PathBuf> {
    let dir = cache_root()?.join(format!("cargo-semver-checks-{VERSION}"));
    let bin = dir.join("bin").join("cargo-semver-checks");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let lock_path = dir.join(".install.lock");
    let lock = std::fs::File::create(&lock_path).with_context(|| format!("creating {}", lock_path.display()))?;
    lock.lock().with_context(|| format!("locking {}", lock_path.display()))?;
    if bin.is_file() {
        return Ok(bin);
    }
    eprintln!("installing cargo-semver-checks {VERSION} into {} (a build of several minutes)", dir.display());
    let mut install = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    install.args(["install", "cargo-semver-checks", "--locked", "--version", VERSION, "--root"]).arg(&dir);
    run_quietly(&mut install, "cargo install cargo-semver-checks")?;
    if !bin.is_file() {
        bail!("cargo install cargo-semver-checks {VERSION} left no {}", bin.display());
    }
    Ok(bin)
}
