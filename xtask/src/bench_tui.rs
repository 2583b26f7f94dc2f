//! `cargo xtask bench --tui`: the tree selector at any size, with no
//! terminal. `arbor tui FILE --bench` drives the selector through its state
//! machine, its loader and its view into a 120×40 buffer and times what a
//! user waits for (the first frame, the reading that follows it between
//! keystrokes, moves, folds, filter switches, each keystroke of a search);
//! this runs it with the file's index and without, next to `wc -l` on the
//! same warm file, and prints one table.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::bench::{bench_command, BenchCmd};

/// Runs the selector bench on `file` with the `arbor` binary; `cache` is the index directory.
pub fn run(root: &Path, arbor: &Path, file: &Path, cache: &Path) -> Result<()> {
    let bytes = fs::metadata(file).with_context(|| format!("reading {}", file.display()))?.len();
    io::copy(&mut File::open(file)?, &mut io::sink())?;
    let f = file.as_os_str();
    let cache = cache.to_string_lossy();
    // Build the index first, so the indexed run reopens an unchanged file.
    let tree = BenchCmd::new("index", [arbor.as_os_str(), "tree".as_ref(), f, "--json".as_ref()])
        .with_env("ARBOR_CACHE_DIR", &cache);
    bench_command(root, &tree, 1)?;
    let wc = bench_command(root, &BenchCmd::new("wc -l", [OsString::from("wc"), "-l".into(), f.into()]), 3)?;
    let tui =
        |label: &str| BenchCmd::new(label, [arbor.as_os_str(), "tui".as_ref(), f, "--bench".as_ref()]).capturing();
    let indexed = bench_command(root, &tui("arbor tui --bench (index)").with_env("ARBOR_CACHE_DIR", &cache), 1)?;
    let scanned = bench_command(root, &tui("arbor tui --bench (no index)").with_env("ARBOR_NO_INDEX", "1"), 1)?;
    println!();
    println!(
        "file: {} ({:.1} MB); wc -l: {:.3} s (median of 3)",
        file.display(),
        bytes as f64 / 1e6,
        wc.median().as_secs_f64()
    );
    println!();
    println!("| step | with the index (ms) | without (ms) |");
    println!("|---|---:|---:|");
    let (a, b) = (steps(&indexed.runs[0].stdout)?, steps(&scanned.runs[0].stdout)?);
    for ((step, ms), (_, ms2)) in a.iter().zip(&b) {
        println!("| {step} | {ms:.1} | {ms2:.1} |");
    }
    let rss = |m: &crate::bench::Measured| m.peak_rss_kib() as f64 * 1024.0;
    println!(
        "| peak RSS (MB; × the file) | {:.0} ({:.2}×) | {:.0} ({:.2}×) |",
        rss(&indexed) / 1e6,
        rss(&indexed) / bytes as f64,
        rss(&scanned) / 1e6,
        rss(&scanned) / bytes as f64
    );
    println!();
    for (label, out) in [("with the index", &indexed.runs[0].stdout), ("without", &scanned.runs[0].stdout)] {
        if let Some(summary) = summary(out)? {
            println!("summary ({label}): {summary}");
        }
    }
    Ok(())
}

/// The `(step, ms)` lines of a `--bench` run, in order.
fn steps(out: &[u8]) -> Result<Vec<(String, f64)>> {
    let mut v = vec![];
    for line in String::from_utf8_lossy(out).lines() {
        let j: Value = serde_json::from_str(line).with_context(|| format!("--bench printed {line:?}"))?;
        if let (Some(step), Some(ms)) = (j["step"].as_str(), j["ms"].as_f64()) {
            v.push((step.to_owned(), ms));
        }
    }
    Ok(v)
}

/// The summary line of a `--bench` run.
fn summary(out: &[u8]) -> Result<Option<String>> {
    for line in String::from_utf8_lossy(out).lines() {
        let j: Value = serde_json::from_str(line)?;
        if j["summary"] == true {
            return Ok(Some(line.to_owned()));
        }
    }
    Ok(None)
}

/// The session `--tui` runs on: `--file`, else the generated realistic one of `entries`.
pub fn session(target: &Path, file: Option<&PathBuf>, entries: usize, seed: u64) -> Result<PathBuf> {
    match file {
        Some(f) => Ok(f.clone()),
        None => crate::bench::cached_session(
            target,
            crate::gen::GenOptions { entries, seed, shape: crate::gen::Shape::Realistic },
        ),
    }
}
