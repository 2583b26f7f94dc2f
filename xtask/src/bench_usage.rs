//! `cargo xtask bench --usage [N]`: `arbor usage daily` on the generated
//! store of N sessions (default 1,000, about 1.5 GB; `cargo xtask
//! gen-store`'s), next to `ccusage pi daily --offline` (the yardstick,
//! installed through `cargo xtask ccusage`), in one run, with the issue's
//! targets beside them: the first report at most half ccusage's time, a
//! repeated one at most 100 ms.
//!
//! Rows, each a whole process (median of the runs), with the page cache
//! warm: arbor's first report (no usage cache: it is deleted before each
//! run), arbor's report again with nothing changed, arbor's report after
//! one session grew by 100 entries (a different one each run), and
//! ccusage's report. Each row gives the wall time and the CPU time (user +
//! system, from `wait4`): on the shared development machine the load
//! stretches the wall time, so a target is judged by both, and the load
//! average before and after the rows is printed with them.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::bench_store::{cached_store, warm, StoreOpts};
use crate::measure::{bench_command, kib_to_mb, BenchCmd, Measured};
use crate::store;

/// The targets of issue 36.
const FIRST_RATIO: f64 = 0.5;
const REPEATED: Duration = Duration::from_millis(100);
/// Runs of the repeated report at least.
const REPEATED_RUNS: usize = 11;

pub fn run(root: &Path, arbor: &Path, target: &Path, o: &StoreOpts) -> Result<()> {
    let store_dir = cached_store(target, o)?;
    let sessions = store_dir.join("sessions");
    let (files, bytes) = warm(&sessions)?;
    let load_before = load_average();
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
    // Cheap, and the row the load sways most: more runs.
    rows.push(bench_command(root, &daily("arbor usage daily, repeated (nothing changed)"), o.runs.max(REPEATED_RUNS))?);
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
    report(o, files, bytes, &rows, &cc, (load_before, load_average()));
    Ok(())
}

fn report(o: &StoreOpts, files: usize, bytes: u64, rows: &[Measured], cc: &Measured, load: (String, String)) {
    let cc_wall = cc.median().as_secs_f64();
    let cc_cpu = cpu_median(cc).as_secs_f64();
    println!();
    println!(
        "store: {} sessions ({}–{} entries each), {files} files, {:.0} MB; {} runs per row ({} of the repeated report), page cache warm",
        o.sessions,
        o.sizes.min,
        o.sizes.max,
        bytes as f64 / 1e6,
        o.runs,
        o.runs.max(REPEATED_RUNS)
    );
    println!("load average (1, 5, 15 min): {} before, {} after", load.0, load.1);
    println!("wall: the process's elapsed time; CPU: its user + system time (what load does not inflate)");
    println!();
    println!("| what | wall (median) | CPU (median) | / ccusage (wall, CPU) | target | peak MB | runs: wall/CPU (s) |");
    println!("|---|---:|---:|---:|---|---:|---|");
    let mut all: Vec<&Measured> = rows.iter().collect();
    all.push(cc);
    for (k, m) in all.iter().enumerate() {
        let (wall, cpu) = (m.median(), cpu_median(m));
        let target = match k {
            // Arbor reads on every core, ccusage on one: only their wall times compare.
            0 => format!("≤ {FIRST_RATIO}× ccusage (wall): {}", word(wall.as_secs_f64() <= FIRST_RATIO * cc_wall)),
            1 => verdict(wall <= REPEATED, cpu <= REPEATED, &format!("≤ {} ms", REPEATED.as_millis())),
            _ => String::new(),
        };
        let runs: Vec<String> =
            m.runs.iter().map(|r| format!("{:.3}/{:.3}", r.wall.as_secs_f64(), r.cpu.as_secs_f64())).collect();
        println!(
            "| {} | {} | {} | {:.3}x, {:.3}x | {target} | {:.0} | {} |",
            m.cmd.label,
            shown(wall),
            shown(cpu),
            wall.as_secs_f64() / cc_wall,
            cpu.as_secs_f64() / cc_cpu,
            kib_to_mb(m.peak_rss_kib()),
            runs.join(" ")
        );
    }
}

/// Milliseconds under a second, seconds above.
fn shown(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{:.0} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.3} s", d.as_secs_f64())
    }
}

fn cpu_median(m: &Measured) -> Duration {
    let mut t: Vec<Duration> = m.runs.iter().map(|r| r.cpu).collect();
    t.sort();
    match t.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => t[n / 2],
        n => (t[n / 2 - 1] + t[n / 2]) / 2,
    }
}

/// The 1, 5 and 15 minute load averages (Linux), or `?`.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".to_owned())
}

/// Met or missed by wall time and by CPU time: a shared machine's load
/// lengthens the wall time, not the CPU time.
fn verdict(wall: bool, cpu: bool, what: &str) -> String {
    format!("{what}: wall {}, CPU {}", word(wall), word(cpu))
}

fn word(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}
