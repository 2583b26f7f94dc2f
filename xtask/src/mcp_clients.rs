//! The MCP clients the tests of `arbor mcp` drive, written by others and
//! installed on first use into the cache (never into the repository):
//! the official Python SDK (`mcp` from PyPI) in a venv, and the MCP
//! inspector (npm) whose CLI mode lists and calls tools.
//!
//! Like [`crate::npm`]: a file lock around the check and the install, so
//! tests that ask at once on a fresh machine wait for one install; pip's and
//! npm's output go to stderr, so a command whose stdout a test reads
//! (`cargo xtask mcp-clients`) prints only its answer there.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::npm::{cache_root, run_quietly, Package};

/// The Python SDK's version the tests are made against.
pub const PY_MCP_VERSION: &str = "1.26.0";

/// The MCP inspector, whose CLI mode (`--cli`) the tests drive.
pub const INSPECTOR: Package = Package {
    name: "@modelcontextprotocol/inspector",
    version: "0.17.2",
    dir_env: "ARBOR_MCP_INSPECTOR_DIR",
    folder: "mcp-inspector",
};

/// The venv's folder: `$ARBOR_PY_MCP_DIR`, else `<cache>/arbor-dev/py-mcp-<version>`.
fn py_dir() -> Result<PathBuf> {
    if let Some(dir) = env::var_os("ARBOR_PY_MCP_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    Ok(cache_root()?.join(format!("py-mcp-{PY_MCP_VERSION}")))
}

/// The venv's python with the SDK importable: made (once) with
/// `python3 -m venv` and pip. Fails when python3 or its venv module is missing.
pub fn ensure_py_mcp() -> Result<PathBuf> {
    let dir = py_dir()?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let lock_path = dir.join(".install.lock");
    let lock = std::fs::File::create(&lock_path).with_context(|| format!("creating {}", lock_path.display()))?;
    lock.lock().with_context(|| format!("locking {}", lock_path.display()))?;
    let python = dir.join("venv/bin/python");
    let marker = dir.join(".installed");
    if std::fs::read_to_string(&marker).is_ok_and(|v| v.trim() == PY_MCP_VERSION) && python.exists() {
        return Ok(python);
    }
    eprintln!("installing mcp=={PY_MCP_VERSION} (PyPI) into {}", dir.display());
    run_quietly(Command::new("python3").args(["-m", "venv", "--clear"]).arg(dir.join("venv")), "python3 -m venv")?;
    run_quietly(
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
            &format!("mcp=={PY_MCP_VERSION}"),
        ]),
        "pip install mcp",
    )?;
    let o = Command::new(&python).args(["-c", "import importlib.metadata as m; print(m.version('mcp'))"]).output()?;
    let got = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    if got != PY_MCP_VERSION {
        bail!("after pip install, the venv's mcp says version {got:?}");
    }
    std::fs::write(&marker, PY_MCP_VERSION).with_context(|| format!("writing {}", marker.display()))?;
    Ok(python)
}

/// The inspector's CLI entry point (`cli/build/cli.js` of its package).
pub fn ensure_inspector() -> Result<PathBuf> {
    let dir = INSPECTOR.ensure()?;
    Ok(inspector_cli(&INSPECTOR.package_dir(&dir)))
}

fn inspector_cli(package: &Path) -> PathBuf {
    package.join("cli/build/cli.js")
}

/// `cargo xtask mcp-clients`: installs both and prints, one a line, the
/// venv's python and the inspector's CLI script.
pub fn cli() -> Result<()> {
    let python = ensure_py_mcp()?;
    let inspector = ensure_inspector()?;
    println!("{}", python.display());
    println!("{}", inspector.display());
    Ok(())
}
