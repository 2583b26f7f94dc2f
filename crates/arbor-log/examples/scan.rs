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
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let light = args.first().is_some_and(|a| a == "--light");
    if light {
        args.remove(0);
    }
    let path = args.first().ok_or("usage: scan [--light] FILE")?;
    let bytes = fs::metadata(path)?.len();
    if light {
        return light_scan(path, bytes);
    }

    let start = Instant::now();
    let log = SessionLog::read(File::open(path)?)?;
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

/// `--light`: the parallel light scan that `Session::open` uses (heads only,
/// message bodies left on disk).
fn light_scan(path: &std::ffi::OsStr, bytes: u64) -> Result<(), Box<dyn Error>> {
    let start = Instant::now();
    let file = File::open(path)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let lines = arbor_log::scan::scan_source(&file, bytes, threads, true)?;
    let entries = lines.iter().filter(|l| matches!(l.kind, arbor_log::scan::ScanKind::Object(_))).count();
    let diagnostics =
        lines.iter().filter(|l| l.note.is_some() || matches!(l.kind, arbor_log::scan::ScanKind::Skipped(_))).count();
    let secs = start.elapsed().as_secs_f64();
    let out = serde_json::json!({
        "bytes": bytes,
        "lines": lines.len(),
        "entries": black_box(entries).saturating_sub(1),
        "diagnostics": diagnostics,
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
