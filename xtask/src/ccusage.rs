//! ccusage, the usage reporter people reach for, as the yardstick of `arbor
//! usage`: its npm package (which ships a native binary) installed on first
//! use into the cache through [`crate::npm`], never into the repository.
//!
//! `cargo xtask ccusage` prints the path of its command; `cargo xtask
//! ccusage ARGS…` runs it with them (its output on stdout, npm's on
//! stderr). The differential test (`arbor-cli`'s `usage_ccusage`) and
//! `cargo xtask bench --usage` call it so.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::npm::Package;

/// The version every comparison is made against.
pub const CCUSAGE_VERSION: &str = "20.0.24";

/// The package as [`crate::npm`] installs it.
pub const CCUSAGE: Package =
    Package { name: "ccusage", version: CCUSAGE_VERSION, dir_env: "ARBOR_CCUSAGE_DIR", folder: "ccusage" };

/// Installs ccusage (once) and returns its command: the package's launcher,
/// as `npx ccusage` runs it (it starts the native binary the package ships).
pub fn ensure() -> Result<PathBuf> {
    let dir = CCUSAGE.ensure()?;
    let bin = dir.join("node_modules").join(".bin").join("ccusage");
    if !bin.exists() {
        bail!("{} is missing after installing ccusage@{CCUSAGE_VERSION}", bin.display());
    }
    Ok(bin)
}

/// `cargo xtask ccusage [ARGS…]`.
pub fn cli(args: &[String]) -> Result<()> {
    let bin = ensure()?;
    if args.is_empty() {
        println!("{}", bin.display());
        return Ok(());
    }
    let status = Command::new(&bin).args(args).status().with_context(|| format!("running {}", bin.display()))?;
    if !status.success() {
        bail!("ccusage {} failed ({status})", args.join(" "));
    }
    Ok(())
}
