//! `cargo xtask bench --usage [N]`: `arbor usage daily` on the generated
//! store of N sessions (default 1,000, about 1.5 GB; `cargo xtask
//! gen-store`'s), next to `ccusage pi daily --offline` (the yardstick,
//! installed through `cargo xtask ccusage`), in one run, with the issue's
//! targets beside them: the first report at most half ccusage's time, a
//! repeated one at most 100 ms.
//!
//! Rows, each the wall time of a whole process (median of the runs), with
//! the page cache warm: arbor's first report (no usage cache: it is deleted
//! before each run), arbor's report again with nothing changed, arbor's
//! report after one session grew by 100 entries (a different one each run),
//! and ccusage's report.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::bench_store::{cached_store, warm, StoreOpts};
use crate::measure::{bench_command, BenchCmd, Measured};
use crate::store;

/// The targets of issue 36.
const FIRST_RATIO: f64 = 0.5;
const REPEATED: Duration = Duration::from_millis(100);

pub fn run(root: &Path, arbor: &Path, target: &Path, o: &StoreOpts) -> Result<()> {
    let store_dir = cached_store(target, o)?;
    let sessions = store_dir.join("sessions");
    let (files, bytes) = warm(&sessions)?;
    let cache = store_dir.join("usage-cache");
    let daily = |label: &str| {
        BenchCmd::new(
            label,
            [
                arbor.as_os_str(),
                "usage".as_ref(),
                "daily".as_ref(),
                "--json".as_ref(),
                "--agent".as_ref(),
                "pi".as_ref(),
                "-z".as_ref(),
                "UTC".as_ref(),
                "--sessions-dir".as_ref(),
                sessions.as_os_str(),
            ],
        )
        .with_env("ARBOR_CACHE_DIR", &cache.to_string_lossy())
    };
    let mut rows: Vec<Measured> = vec![];
    let first_label = "arbor usage daily, first report (no usage cache)";
    let mut first = vec![];
    for _ in 0..o.runs {
        let _ = fs::remove_dir_all(&cache);
        first.push(bench_command(root, &daily(first_label), 1)?.runs.remove(0));
    }
    rows.push(Measured { cmd: daily(first_label), runs: first });
    rows.push(bench_command(root, &daily("arbor usage daily, repeated (nothing changed)"), o.runs)?);
    let grown_label = "arbor usage daily, one session grew by 100 entries";
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
        grown.push(bench_command(root, &daily(grown_label), 1)?.runs.remove(0));
        fs::write(&path, &before)?;
        bench_command(root, &daily("(restore)"), 1)?;
    }
    rows.push(Measured { cmd: daily(grown_label), runs: grown });

    let ccusage = crate::ccusage::ensure()?;
    let cc = BenchCmd::new(
        "ccusage pi daily --offline --json -z UTC",
        [
            ccusage.as_os_str(),
            "pi".as_ref(),
            "daily".as_ref(),
            "--offline".as_ref(),
            "--json".as_ref(),
            "-z".as_ref(),
            "UTC".as_ref(),
            "--pi-path".as_ref(),
            sessions.as_os_str(),
        ],
    );
    let cc = bench_command(root, &cc, o.runs)?;
    report(o, files, bytes, &rows, &cc);
    Ok(())
}

fn report(o: &StoreOpts, files: usize, bytes: u64, rows: &[Measured], cc: &Measured) {
    let cc_s = cc.median().as_secs_f64();
    println!();
    println!(
        "store: {} sessions ({}–{} entries each), {files} files, {:.0} MB; {} runs per row, page cache warm",
        o.sessions,
        o.sizes.min,
        o.sizes.max,
        bytes as f64 / 1e6,
        o.runs
    );
    println!();
    println!("| what | time (median) | / ccusage | target | runs (s) |");
    println!("|---|---:|---:|---|---|");
    for (k, m) in rows.iter().enumerate() {
        let t = m.median().as_secs_f64();
        let target = match k {
            0 => verdict(t <= FIRST_RATIO * cc_s, &format!("≤ {FIRST_RATIO}× ccusage")),
            1 => verdict(m.median() <= REPEATED, &format!("≤ {} ms", REPEATED.as_millis())),
            _ => String::new(),
        };
        let runs: Vec<String> = m.runs.iter().map(|r| format!("{:.3}", r.wall.as_secs_f64())).collect();
        println!("| {} | {t:.3} s | {:.3}x | {target} | {} |", m.cmd.label, t / cc_s, runs.join(" "));
    }
    let runs: Vec<String> = cc.runs.iter().map(|r| format!("{:.3}", r.wall.as_secs_f64())).collect();
    println!("| {} | {cc_s:.3} s | 1.000x | | {} |", cc.cmd.label, runs.join(" "));
}

fn verdict(met: bool, what: &str) -> String {
    format!("{what}: {}", if met { "met" } else { "MISSED" })
}
