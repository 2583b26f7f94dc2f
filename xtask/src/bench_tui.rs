//! `cargo xtask bench --tui`: the tree selector and the chat's first screen
//! at any size, with no terminal. `arbor tui FILE --bench` drives the
//! selector through its state machine, its loader and its view into a
//! 120×40 buffer and times what a user waits for (the first frame, the
//! reading that follows it between keystrokes, moves, folds, filter
//! switches, each keystroke of a search); `arbor chat FILE --bench` sets the
//! chat up over the session (no model call) and draws its first screen.
//! This runs both with the file's index and without, next to `wc -l` on the
//! same warm file, and prints a table for each with each step's target
//! (issue 21, target 4) beside it, then each target against the worst
//! measured value.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::measure::{bench_command, BenchCmd, Measured};

/// Runs the selector's and the chat's benches on `file` with the `arbor`
/// binary; `cache` is the index directory.
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
    let both = |command: &str| -> Result<Pair> {
        let cmd = |label: String| {
            BenchCmd::new(&label, [arbor.as_os_str(), command.as_ref(), f, "--bench".as_ref()]).capturing()
        };
        let indexed = bench_command(
            root,
            &cmd(format!("arbor {command} --bench (index)")).with_env("ARBOR_CACHE_DIR", &cache),
            1,
        )?;
        let scanned = bench_command(
            root,
            &cmd(format!("arbor {command} --bench (no index)")).with_env("ARBOR_NO_INDEX", "1"),
            1,
        )?;
        Pair::of(indexed, scanned)
    };
    let (selector, chat) = (both("tui")?, both("chat")?);
    println!();
    println!(
        "file: {} ({:.1} MB); wc -l: {:.3} s (median of 3)",
        file.display(),
        bytes as f64 / 1e6,
        wc.median().as_secs_f64()
    );
    let wc_ms = wc.median().as_secs_f64() * 1000.0;
    println!();
    selector.table(bytes, wc_ms);
    println!();
    println!("The chat's first screen (`arbor chat FILE --bench`):");
    println!();
    chat.table(bytes, wc_ms);
    println!();
    targets(&selector, &chat, bytes, wc_ms);
    println!();
    let runs = [
        ("with the index", &selector.indexed),
        ("without", &selector.scanned),
        ("chat, with the index", &chat.indexed),
        ("chat, without", &chat.scanned),
    ];
    for (label, m) in runs {
        if let Some(summary) = summary(&m.runs[0].stdout)? {
            println!("summary ({label}): {summary}");
        }
    }
    Ok(())
}

/// One `--bench` run with the index and one without, and their steps.
struct Pair {
    indexed: Measured,
    scanned: Measured,
    a: Vec<Step>,
    b: Vec<Step>,
}

impl Pair {
    fn of(indexed: Measured, scanned: Measured) -> Result<Pair> {
        let (a, b) = (steps(&indexed.runs[0].stdout)?, steps(&scanned.runs[0].stdout)?);
        Ok(Pair { indexed, scanned, a, b })
    }

    /// Peak RSS as a share of the file's `bytes`, with the index and without.
    fn rss_share(&self, bytes: u64) -> (f64, f64) {
        (rss(&self.indexed) / bytes as f64, rss(&self.scanned) / bytes as f64)
    }

    /// The first frame (from the start), with the index and without.
    fn first_frame(&self) -> (f64, f64) {
        let first = |v: &[Step]| v.iter().find(|s| s.step == FIRST).map_or(f64::NAN, |s| s.ms);
        (first(&self.a), first(&self.b))
    }

    /// Each step with its target, then the peak RSS.
    fn table(&self, bytes: u64, wc_ms: f64) {
        println!("| step | target (ms) | with the index (ms) | without (ms) |");
        println!("|---|---:|---:|---:|");
        for (x, y) in self.a.iter().zip(&self.b) {
            let target = match (x.kind.as_str(), x.step.as_str()) {
                (_, FIRST) => format!("≤ 1000 / ≤ {:.0}", 3.0 * wc_ms),
                (kind, _) => target_ms(kind).map(|t| format!("≤ {t:.0}")).unwrap_or_default(),
            };
            println!("| {} | {target} | {:.1} | {:.1} |", x.step, x.ms, y.ms);
        }
        let (ra, rb) = self.rss_share(bytes);
        println!(
            "| peak RSS (MB; × the file) | ≤ {:.0} (0.2×) | {:.0} ({ra:.2}×) | {:.0} ({rb:.2}×) |",
            0.2 * bytes as f64 / 1e6,
            rss(&self.indexed) / 1e6,
            rss(&self.scanned) / 1e6,
        );
    }
}

/// The step both benches end their first screen with.
const FIRST: &str = "first frame (from the start)";

fn rss(m: &Measured) -> f64 {
    m.peak_rss_kib() as f64 * 1024.0
}

/// Issue 21's target 4 against the worst measured value of each kind of step.
fn targets(selector: &Pair, chat: &Pair, bytes: u64, wc_ms: f64) {
    println!("Issue 21, target 4 (the worst of each kind of step):");
    println!();
    println!("| target | with the index | met? | without | met? |");
    println!("|---|---:|---|---:|---|");
    let verdict = |ms: f64, limit: f64| if ms <= limit { "yes" } else { "no" };
    let first_frame = |what: &str, p: &Pair| {
        let (fa, fb) = p.first_frame();
        println!(
            "| {what}: ≤ 1 s with the index, ≤ 3× `wc -l` ({:.0} ms) without | {fa:.0} ms | {} | {fb:.0} ms ({:.1}× `wc -l`) | {} |",
            3.0 * wc_ms,
            verdict(fa, 1000.0),
            fb / wc_ms,
            verdict(fb, 3.0 * wc_ms)
        );
    };
    let peak = |what: &str, p: &Pair| {
        let (ra, rb) = p.rss_share(bytes);
        println!("| {what}: ≤ 0.2× the file | {ra:.2}× | {} | {rb:.2}× | {} |", verdict(ra, 0.2), verdict(rb, 0.2));
    };
    first_frame("first frame", selector);
    for (kind, what) in
        [("move", "move"), ("fold", "fold / unfold"), ("filter", "filter switch"), ("search", "search keystroke")]
    {
        let limit = target_ms(kind).unwrap_or(f64::NAN);
        let worst = |v: &[Step]| v.iter().filter(|s| s.kind == kind).map(|s| s.ms).fold(0.0, f64::max);
        let (wa, wb) = (worst(&selector.a), worst(&selector.b));
        println!(
            "| {what}: ≤ {limit:.0} ms | {wa:.1} ms | {} | {wb:.1} ms | {} |",
            verdict(wa, limit),
            verdict(wb, limit)
        );
    }
    peak("peak RSS", selector);
    first_frame("chat's first frame", chat);
    peak("chat's peak RSS", chat);
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
        None => crate::measure::cached_session(
            target,
            crate::gen::GenOptions { entries, seed, shape: crate::gen::Shape::Realistic },
        ),
    }
}
