//! `cargo xtask bench --store N`: listing and searching a store of N
//! generated sessions with `arbor ls` and `arbor search` (the catalog), next
//! to pi's own `SessionManager.listAll()` and to ripgrep on the same store,
//! in one run.
//!
//! Rows, each the wall time of a whole `arbor` process (median of the runs):
//! the first listing with no catalog (the catalog is deleted before each
//! run), the listing again with nothing changed, the listing after one
//! session grew by 100 entries (a different session each run); then the
//! search rows beside `rg` ([`crate::bench_search`]). pi's row is the time
//! `listAll()` takes inside node (as pi's users wait for it), and its whole
//! process.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::bench_search;
use crate::measure::{bench_command, BenchCmd, Measured};
use crate::store::{self, Sizes, STORE_VERSION};

/// What `--store` was asked for.
#[derive(Debug, Clone)]
pub struct StoreOpts {
    pub sessions: usize,
    pub seed: u64,
    pub runs: usize,
    pub sizes: Sizes,
    pub pi: bool,
    /// Another `arbor` binary (say, main's) whose first listing is timed in
    /// turn with this one's, run for run.
    pub baseline: Option<PathBuf>,
    /// Time the search rows too.
    pub search: bool,
}

/// pi's `listAll()`, timed inside node.
const LIST_ALL: &str = r#"
import { SessionManager } from "@mariozechner/pi-coding-agent";
const start = performance.now();
const all = await SessionManager.listAll();
const ms = performance.now() - start;
console.log(JSON.stringify({ sessions: all.length, ms }));
"#;

pub fn run(root: &Path, arbor: &Path, target: &Path, o: &StoreOpts) -> Result<()> {
    let store = cached_store(target, o)?;
    let sessions = store.join("sessions");
    let (files, bytes) = warm(&sessions)?;
    let cache = store.join("cache");
    let env = |cmd: BenchCmd| cmd.with_env("ARBOR_CACHE_DIR", &cache.to_string_lossy());
    let ls_with = |arbor: &Path, label: &str| {
        env(BenchCmd::new(
            label,
            [arbor.as_os_str(), "ls".as_ref(), "--all".as_ref(), "--sessions-dir".as_ref(), sessions.as_os_str()],
        ))
    };
    let ls = |label: &str| ls_with(arbor, label);
    let mut rows: Vec<Measured> = vec![];

    // The first listing: no catalog before each run (the baseline's in turn with it).
    let (mut first, mut base_first) = (vec![], vec![]);
    let base_label = "baseline arbor ls --all, no catalog";
    for _ in 0..o.runs {
        if let Some(base) = &o.baseline {
            let _ = fs::remove_dir_all(&cache);
            base_first.push(bench_command(root, &ls_with(base, base_label), 1)?.runs.remove(0));
        }
        let _ = fs::remove_dir_all(&cache);
        first.push(bench_command(root, &ls("arbor ls --all, no catalog"), 1)?.runs.remove(0));
    }
    if let Some(base) = &o.baseline {
        rows.push(Measured { cmd: ls_with(base, base_label), runs: base_first });
    }
    rows.push(Measured { cmd: ls("arbor ls --all, no catalog"), runs: first });
    rows.push(bench_command(root, &ls("arbor ls --all, unchanged"), o.runs)?);

    // One session grows by 100 entries before each run (a different one each time).
    let mut grown = vec![];
    for run in 0..o.runs {
        let i = (run * 7919 + 13) % o.sessions;
        let path = store::session_path(&sessions, i, o.sessions, o.seed, o.sizes)?;
        let before = fs::read(&path)?;
        let after = store::session_bytes(i, o.sessions, o.seed, o.sizes, 100)?;
        if !after.starts_with(&before) {
            bail!("{}: the grown session does not start with the stored one", path.display());
        }
        fs::OpenOptions::new().append(true).open(&path)?.write_all(&after[before.len()..])?;
        grown.push(bench_command(root, &ls("arbor ls --all, one session grew by 100 entries"), 1)?.runs.remove(0));
        // Back as it was, and the catalog with it (not timed).
        fs::write(&path, &before)?;
        bench_command(root, &ls("(restore)"), 1)?;
    }
    rows.push(Measured { cmd: ls("arbor ls --all, one session grew by 100 entries"), runs: grown });

    let listing_mb = size_of(&cache)?.1 as f64 / 1e6;
    let searches = if o.search {
        let oldest_only = store::oldest_only_literal(o.sessions, o.seed, o.sizes)?;
        let setup = bench_search::Setup { root, arbor, sessions: &sessions, cache: &cache, runs: o.runs, oldest_only };
        bench_search::rows(&setup)?
    } else {
        vec![]
    };
    let catalog_bytes = bench_search::dir_bytes(&cache)?;

    let pi = if o.pi { pi_list_all(&store)? } else { None };
    report(o, files, bytes, listing_mb, &rows, pi.as_ref());
    if o.search {
        bench_search::report(&searches, bytes, catalog_bytes);
    }
    Ok(())
}

/// The store under `target/bench-data/`, generated if missing.
pub(crate) fn cached_store(target: &Path, o: &StoreOpts) -> Result<PathBuf> {
    let dir = target
        .join("bench-data")
        .join(format!("store-{}-seed{}-entries{}-{}-v{STORE_VERSION}", o.sessions, o.seed, o.sizes.min, o.sizes.max));
    let sessions = dir.join("sessions");
    if sessions.is_dir() {
        eprintln!("== using cached {}", dir.display());
        return Ok(dir);
    }
    fs::create_dir_all(&dir)?;
    eprintln!("== generating {} sessions into {}", o.sessions, sessions.display());
    let stats = store::write_store(&sessions, o.sessions, o.seed, o.sizes)?;
    eprintln!("   {} entries, {:.0} MB", stats.entries, stats.bytes as f64 / 1e6);
    Ok(dir)
}

/// Reads every file under `sessions` once (the rows then time a warm page
/// cache); its files and bytes.
pub(crate) fn warm(sessions: &Path) -> Result<(usize, u64)> {
    let (files, bytes) = size_of(sessions)?;
    eprintln!("== warming the page cache ({files} files, {:.0} MB)", bytes as f64 / 1e6);
    for f in &files_of(sessions)? {
        std::io::copy(&mut fs::File::open(f)?, &mut std::io::sink())?;
    }
    Ok((files, bytes))
}

fn files_of(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = vec![];
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// Files and bytes under a directory (0 when it does not exist).
fn size_of(dir: &Path) -> Result<(usize, u64)> {
    if !dir.exists() {
        return Ok((0, 0));
    }
    let files = files_of(dir)?;
    let mut bytes = 0;
    for f in &files {
        bytes += fs::metadata(f)?.len();
    }
    Ok((files.len(), bytes))
}

/// pi's `listAll()` on the store: its own time and the whole node process's,
/// the median of [`PI_RUNS`] runs (node's time varies by a third from one
/// run to the next: its collector and compiler).
#[derive(Debug)]
struct PiRun {
    list_all: Duration,
    process: Duration,
    sessions: u64,
    /// Every run's `listAll` time, in the order they ran.
    runs: Vec<Duration>,
}

/// Runs of pi's `listAll` per bench.
const PI_RUNS: usize = 3;

fn pi_list_all(store: &Path) -> Result<Option<PiRun>> {
    let Some(pi) = crate::pi::ensure_pi_or_skip(|why| eprintln!("(skipping pi's listAll: {why})"))? else {
        return Ok(None);
    };
    eprintln!("== pi's SessionManager.listAll() on the same store ({PI_RUNS} runs)");
    let mut runs = vec![];
    for _ in 0..PI_RUNS {
        let mut cmd: Command = crate::pi::node(&pi, "list-all.mjs", LIST_ALL)?;
        cmd.env("PI_CODING_AGENT_DIR", store);
        let start = Instant::now();
        let out = cmd.output().context("running node")?;
        let process = start.elapsed();
        if !out.status.success() {
            bail!("pi's listAll failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
        }
        let v: Value = serde_json::from_slice(&out.stdout).context("pi's listAll output")?;
        let ms = v.get("ms").and_then(Value::as_f64).unwrap_or(0.0);
        let sessions = v.get("sessions").and_then(Value::as_u64).unwrap_or(0);
        runs.push((Duration::from_secs_f64(ms / 1000.0), process, sessions));
    }
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| runs[i].0);
    let (list_all, process, sessions) = runs[order[order.len() / 2]];
    Ok(Some(PiRun { list_all, process, sessions, runs: runs.iter().map(|r| r.0).collect() }))
}

fn report(o: &StoreOpts, files: usize, bytes: u64, catalog_mb: f64, rows: &[Measured], pi: Option<&PiRun>) {
    println!();
    println!(
        "store: {} sessions ({}–{} entries each), {files} files, {:.0} MB; listing catalog {:.1} MB; {} runs per row",
        o.sessions,
        o.sizes.min,
        o.sizes.max,
        bytes as f64 / 1e6,
        catalog_mb,
        o.runs
    );
    println!();
    println!("| what | time (median) | / pi's listAll | runs (s) |");
    println!("|---|---:|---:|---|");
    let pi_s = pi.map(|p| p.list_all.as_secs_f64());
    for m in rows {
        let t = m.median().as_secs_f64();
        let ratio = pi_s.filter(|p| *p > 0.0).map_or("-".to_owned(), |p| format!("{:.3}x", t / p));
        let runs: Vec<String> = m.runs.iter().map(|r| format!("{:.3}", r.wall.as_secs_f64())).collect();
        println!("| {} | {:.3} s | {ratio} | {} |", m.cmd.label, t, runs.join(" "));
    }
    if let Some(p) = pi {
        let runs: Vec<String> = p.runs.iter().map(|r| format!("{:.3}", r.as_secs_f64())).collect();
        println!(
            "| pi SessionManager.listAll() ({} sessions; node process {:.3} s) | {:.3} s | 1.000x | {} |",
            p.sessions,
            p.process.as_secs_f64(),
            p.list_all.as_secs_f64(),
            runs.join(" ")
        );
    }
}
