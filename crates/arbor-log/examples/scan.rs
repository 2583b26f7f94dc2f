//! Reads a session file with the streaming reader, decodes its entries, and
//! prints one JSON line of counts, time and peak memory.
//!
//! `cargo xtask bench` runs this (release build) and reads that line:
//!
//! ```text
//! cargo run --release -p arbor-log --example scan -- FILE
//! {"bytes":..,"lines":..,"entries":..,"diagnostics":..,"secs":..,"mb_per_s":..,"peak_rss_kb":..}
//! ```
//!
//! `secs` covers `SessionLog::read` plus `into_entries` (not process
//! start or exit); `mb_per_s` is bytes / 10^6 / secs; `peak_rss_kb` is the
//! process's `VmHWM` from `/proc/self/status` in KiB, 0 where there is none.

use std::error::Error;
use std::fs::{self, File};
use std::hint::black_box;
use std::time::Instant;

use arbor_log::SessionLog;

fn main() -> Result<(), Box<dyn Error>> {
    let path = std::env::args_os().nth(1).ok_or("usage: scan FILE")?;
    let bytes = fs::metadata(&path)?.len();

    let start = Instant::now();
    let log = SessionLog::read(File::open(&path)?)?;
    let (line_diagnostics, lines) = (log.diagnostics().len(), log.lines().len());
    let (entries, entry_diagnostics) = log.into_entries();
    let secs = start.elapsed().as_secs_f64();

    let out = serde_json::json!({
        "bytes": bytes,
        "lines": lines,
        "entries": black_box(&entries).len(),
        "diagnostics": line_diagnostics + entry_diagnostics.len(),
        "secs": secs,
        "mb_per_s": if secs > 0.0 { bytes as f64 / 1e6 / secs } else { 0.0 },
        "peak_rss_kb": peak_rss_kb(),
    });
    println!("{out}");
    Ok(())
}

/// The process's peak resident set size (`VmHWM`) in KiB, or 0 where unavailable.
fn peak_rss_kb() -> u64 {
    let Ok(status) = fs::read_to_string("/proc/self/status") else { return 0 };
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
