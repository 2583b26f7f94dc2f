//! `cargo xtask bench --tui`: the tree selector at any size, with no
//! terminal. `arbor tui FILE --bench` drives the selector through its state
//! machine, its loader and its view into a 120×40 buffer and times what a
//! user waits for (the first frame, the reading that follows it between
//! keystrokes, moves, folds, filter switches, each keystroke of a search);
//! this runs it with the file's index and without, next to `wc -l` on the
//! same warm file, and prints one table with each step's target (issue 21,
//! target 4) beside it, then each target against the worst measured value.

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
    let wc_ms = wc.median().as_secs_f64() * 1000.0;
    println!("| step | target (ms) | with the index (ms) | without (ms) |");
    println!("|---|---:|---:|---:|");
    let (a, b) = (steps(&indexed.runs[0].stdout)?, steps(&scanned.runs[0].stdout)?);
    for (x, y) in a.iter().zip(&b) {
        let target = match (x.kind.as_str(), x.step.as_str()) {
            (_, "first frame (from the start)") => format!("≤ 1000 / ≤ {:.0}", 3.0 * wc_ms),
            (kind, _) => target_ms(kind).map(|t| format!("≤ {t:.0}")).unwrap_or_default(),
        };
        println!("| {} | {target} | {:.1} | {:.1} |", x.step, x.ms, y.ms);
    }
    let rss = |m: &crate::bench::Measured| m.peak_rss_kib() as f64 * 1024.0;
    println!(
        "| peak RSS (MB; × the file) | ≤ {:.0} (0.2×) | {:.0} ({:.2}×) | {:.0} ({:.2}×) |",
        0.2 * bytes as f64 / 1e6,
        rss(&indexed) / 1e6,
        rss(&indexed) / bytes as f64,
        rss(&scanned) / 1e6,
        rss(&scanned) / bytes as f64
    );
    println!();
    println!("Issue 21, target 4 (the worst of each kind of step):");
    println!();
    println!("| target | with the index | met? | without | met? |");
    println!("|---|---:|---|---:|---|");
    let first = |v: &[Step]| v.iter().find(|s| s.step == "first frame (from the start)").map_or(f64::NAN, |s| s.ms);
    let verdict = |ms: f64, limit: f64| if ms <= limit { "yes" } else { "no" };
    let (fa, fb) = (first(&a), first(&b));
    println!(
        "| first frame: ≤ 1 s with the index, ≤ 3× `wc -l` ({:.0} ms) without | {fa:.0} ms | {} | {fb:.0} ms ({:.1}× `wc -l`) | {} |",
        3.0 * wc_ms,
        verdict(fa, 1000.0),
        fb / wc_ms,
        verdict(fb, 3.0 * wc_ms)
    );
    for (kind, what) in
        [("move", "move"), ("fold", "fold / unfold"), ("filter", "filter switch"), ("search", "search keystroke")]
    {
        let limit = target_ms(kind).unwrap_or(f64::NAN);
        let worst = |v: &[Step]| v.iter().filter(|s| s.kind == kind).map(|s| s.ms).fold(0.0, f64::max);
        let (wa, wb) = (worst(&a), worst(&b));
        println!(
            "| {what}: ≤ {limit:.0} ms | {wa:.1} ms | {} | {wb:.1} ms | {} |",
            verdict(wa, limit),
            verdict(wb, limit)
        );
    }
    let (ra, rb) = (rss(&indexed) / bytes as f64, rss(&scanned) / bytes as f64);
    println!("| peak RSS: ≤ 0.2× the file | {ra:.2}× | {} | {rb:.2}× | {} |", verdict(ra, 0.2), verdict(rb, 0.2));
    println!();
    for (label, out) in [("with the index", &indexed.runs[0].stdout), ("without", &scanned.runs[0].stdout)] {
        if let Some(summary) = summary(out)? {
            println!("summary ({label}): {summary}");
        }
    }
    Ok(())
}

/// One timed step of a `--bench` run.
struct Step {
    step: String,
    /// `move`, `fold`, `filter`, `search`, or empty (no target of its own).
    kind: String,
    ms: f64,
}

/// The target of a kind of input (issue 21, target 4): a frame (16 ms) for
/// moves, folds and filter switches, 50 ms for a search keystroke.
fn target_ms(kind: &str) -> Option<f64> {
    match kind {
        "move" | "fold" | "filter" => Some(16.0),
        "search" => Some(50.0),
        _ => None,
    }
}

/// The steps of a `--bench` run, in order.
fn steps(out: &[u8]) -> Result<Vec<Step>> {
    let mut v = vec![];
    for line in String::from_utf8_lossy(out).lines() {
        let j: Value = serde_json::from_str(line).with_context(|| format!("--bench printed {line:?}"))?;
        if let (Some(step), Some(ms)) = (j["step"].as_str(), j["ms"].as_f64()) {
            let kind = j["kind"].as_str().unwrap_or_default().to_owned();
            v.push(Step { step: step.to_owned(), kind, ms });
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
