//! `cargo xtask py`: the Python package `arbor-sessions` (crates/arbor-py).
//!
//! - `py build`: the wheel (one abi3 wheel, release build), built by
//!   maturin from a venv in the cache (`<cache>/arbor-dev/py-build-<pin>`,
//!   made on first use under a lock), into this checkout's folder in the
//!   cache (`<cache>/arbor-dev/py/<checkout>/wheel/`); its path on stdout.
//! - `py test`: that wheel installed into a fresh venv (beside it in the
//!   cache), which sees pinned pytest and pandas from a tools venv made once
//!   (`<cache>/arbor-dev/py-tools-<pins>`); then pytest over
//!   `crates/arbor-py/tests` against the `arbor` binary (`--arbor BIN`,
//!   else the workspace's dev build), then the example over 1,000 generated
//!   sessions.
//!
//! pip's, maturin's and cargo's chatter goes to stderr. Nothing is written
//! into the repository: no wheel, no venv, no `__pycache__`, no pytest cache
//! (cargo's own build goes to `target/`, as every build does).

use std::env;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::npm::{cache_root, run_quietly};

/// The maturin that builds the wheel.
const MATURIN: &[&str] = &["maturin==1.16.0"];
/// What the tests and the example run with (the oldest Python the wheel
/// serves, 3.9, has them too).
const TEST_PACKAGES: &[&str] = &["pytest==8.4.2", "pandas==2.3.3"];

/// The example's store: this many sessions of a few dozen entries each.
const EXAMPLE_SESSIONS: &str = "1000";
const EXAMPLE_ENTRIES: &str = "10-60";

pub fn cli(root: &Path, args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("build") => {
            let work = Checkout::lock(root)?;
            let wheel = build_wheel(root, &work)?;
            println!("{}", wheel.display());
            Ok(())
        }
        Some("test") => {
            let arbor = match args.get(1..).unwrap_or_default() {
                [] => None,
                [flag, bin] if flag == "--arbor" => {
                    Some(std::path::absolute(bin).with_context(|| format!("the path of {bin}"))?)
                }
                other => bail!("py test: unknown arguments {other:?} (py test [--arbor BIN])"),
            };
            test(root, arbor)
        }
        _ => bail!("usage: cargo xtask py build | py test [--arbor BIN]"),
    }
}

/// This checkout's folder in the cache, held under a lock while we work
/// in it (two runs from one checkout wait for each other; two checkouts
/// have two folders).
struct Checkout {
    dir: PathBuf,
    _lock: std::fs::File,
}

impl Checkout {
    fn lock(root: &Path) -> Result<Checkout> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        root.hash(&mut h);
        let dir = cache_root()?.join("py").join(format!("{:016x}", h.finish()));
        let lock = locked(&dir)?;
        Ok(Checkout { dir, _lock: lock })
    }
}

/// Creates `dir` and holds the lock file in it.
fn locked(dir: &Path) -> Result<std::fs::File> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(".lock");
    let lock = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    lock.lock().with_context(|| format!("locking {}", path.display()))?;
    Ok(lock)
}

/// Empties (or makes) `dir`.
fn fresh(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// The Python that makes venvs: `$ARBOR_PYTHON`, else `python3`.
fn python() -> String {
    env::var("ARBOR_PYTHON").ok().filter(|p| !p.is_empty()).unwrap_or_else(|| "python3".into())
}

/// A tool in a venv's `bin` folder (`Scripts` on Windows).
fn bin(venv: &Path, tool: &str) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join(format!("{tool}.exe"))
    } else {
        venv.join("bin").join(tool)
    }
}

/// The venv in the cache that holds `packages`, made once (under a lock,
/// so two runs at once wait for one install) in `<cache>/arbor-dev/<name>-<pins>`.
fn tools_venv(name: &str, packages: &[&str]) -> Result<PathBuf> {
    let pins = packages.join("-").replace("==", "-");
    let dir = cache_root()?.join(format!("{name}-{pins}"));
    let _lock = locked(&dir)?;
    let venv = dir.join("venv");
    let done = dir.join(".installed");
    if !done.exists() {
        if venv.exists() {
            std::fs::remove_dir_all(&venv).with_context(|| format!("removing {}", venv.display()))?;
        }
        eprintln!("making a Python venv at {} with {}", venv.display(), packages.join(" "));
        run_quietly(Command::new(python()).args(["-m", "venv"]).arg(&venv), "python3 -m venv")?;
        let mut pip = Command::new(bin(&venv, "python"));
        pip.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]).args(packages);
        run_quietly(&mut pip, "pip install")?;
        std::fs::write(&done, packages.join("\n")).with_context(|| format!("writing {}", done.display()))?;
    }
    Ok(venv)
}

/// Builds the wheel (release) into the checkout's `wheel/` and returns its path.
fn build_wheel(root: &Path, work: &Checkout) -> Result<PathBuf> {
    let venv = tools_venv("py-build", MATURIN)?;
    let out = work.dir.join("wheel");
    fresh(&out)?;
    let mut maturin = Command::new(bin(&venv, "maturin"));
    maturin
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(root.join("crates/arbor-py/Cargo.toml"))
        .arg("--out")
        .arg(&out)
        .current_dir(root);
    run_quietly(&mut maturin, "maturin build")?;
    let wheels: Vec<PathBuf> = std::fs::read_dir(&out)
        .with_context(|| format!("reading {}", out.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(one.clone()),
        other => bail!("maturin left {} wheels in {}, not one", other.len(), out.display()),
    }
}

/// The `arbor` binary the tests compare with: the workspace's dev build.
fn dev_arbor(root: &Path) -> Result<PathBuf> {
    let mut cargo = crate::cargo();
    cargo.args(["build", "-p", "arbor-cli"]).current_dir(root);
    run_quietly(&mut cargo, "cargo build -p arbor-cli")?;
    Ok(root.join("target").join("debug").join(if cfg!(windows) { "arbor.exe" } else { "arbor" }))
}

/// A fresh venv at `venv` with only the wheel installed (no dependencies:
/// it has none), which also sees the tools venv's packages (a `.pth` file).
fn test_venv(venv: &Path, wheel: &Path, tools: &Path) -> Result<PathBuf> {
    run_quietly(Command::new(python()).args(["-m", "venv", "--without-pip"]).arg(venv), "python3 -m venv")?;
    let python = bin(venv, "python");
    let mut pip = Command::new(bin(tools, "python"));
    pip.args(["-m", "pip", "--python"])
        .arg(&python)
        .args(["install", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-index"])
        .arg(wheel);
    run_quietly(&mut pip, "pip install (the wheel)")?;
    let purelib = |py: &Path| -> Result<PathBuf> {
        let out = Command::new(py)
            .args(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", py.display()))?;
        if !out.status.success() {
            bail!("{} could not say where its packages are", py.display());
        }
        Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    };
    let pth = purelib(&python)?.join("arbor-test-tools.pth");
    let tools_lib = purelib(&bin(tools, "python"))?;
    std::fs::write(&pth, format!("{}\n", tools_lib.display())).with_context(|| format!("writing {}", pth.display()))?;
    Ok(python)
}

fn test(root: &Path, arbor: Option<PathBuf>) -> Result<()> {
    let arbor = match arbor {
        Some(bin) => bin,
        None => dev_arbor(root)?,
    };
    let work = Checkout::lock(root)?;
    let started = std::time::Instant::now();
    let wheel = build_wheel(root, &work)?;
    let built = started.elapsed();
    let tools = tools_venv("py-tools", TEST_PACKAGES)?;
    let venv = work.dir.join("venv");
    fresh(&venv)?;
    let python = test_venv(&venv, &wheel, &tools)?;

    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-q", "crates/arbor-py/tests"])
        .env("ARBOR_BIN", &arbor)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(root);
    // pytest's report is the answer here: on stdout.
    let status = pytest.stdin(Stdio::null()).status().context("running pytest")?;
    if !status.success() {
        bail!("pytest failed ({status})");
    }

    let store = work.dir.join("store");
    if store.exists() {
        std::fs::remove_dir_all(&store).with_context(|| format!("removing {}", store.display()))?;
    }
    let mut gen = Command::new(env::current_exe().context("the xtask binary")?);
    gen.arg("gen-store").arg(&store).args([EXAMPLE_SESSIONS, "7", "--entries", EXAMPLE_ENTRIES]);
    run_quietly(&mut gen, "cargo xtask gen-store")?;
    let mut example = Command::new(&python);
    example
        .arg(root.join("crates/arbor-py/examples/usage_frame.py"))
        .arg(&store)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(root);
    let out = example.stdin(Stdio::null()).stderr(Stdio::inherit()).output().context("running the example")?;
    let text = String::from_utf8_lossy(&out.stdout);
    print!("{text}");
    if !out.status.success() {
        bail!("crates/arbor-py/examples/usage_frame.py failed ({})", out.status);
    }
    let loaded = format!("{EXAMPLE_SESSIONS} sessions from ");
    if !text.starts_with(&loaded) {
        bail!("the example did not load the {EXAMPLE_SESSIONS} sessions it was given");
    }
    eprintln!(
        "py test: the wheel built in {:.0} s, the venv, pytest and the example took {:.0} s",
        built.as_secs_f64(),
        (started.elapsed() - built).as_secs_f64()
    );
    Ok(())
}
