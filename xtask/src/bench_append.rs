//! The append rows of `cargo xtask bench` (issue #21, target 5): one CLI
//! append (`arbor label ID x`, which opens the session for writing, checks
//! the id, and appends one line under the write lock) to a copy of each
//! session, beside the same append to a small session.
//!
//! Each copy's first append finds no index (a new file) and builds it: that
//! is the "first append" column. The next `runs` appends go through the
//! index, each one line more after it (the tail read from the file): wall
//! time, CPU time (user + system) and peak RSS, and their ratios to the
//! small session's. The copies are removed afterwards.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::gen::{GenOptions, Shape};
use crate::measure::{bench_command, cached_session, BenchCmd, Measured};

/// The small session's size: a long chat, well over the size that gets an index.
const SMALL: usize = 1_000;

/// One session's append measurements.
struct Appended {
    name: String,
    entries: Option<usize>,
    bytes: u64,
    first: Measured,
    indexed: Measured,
}

/// Runs the append rows on `sessions` (and the small session first) and prints the table.
pub fn run(
    root: &Path,
    arbor: &Path,
    target: &Path,
    sessions: &[(PathBuf, Option<usize>)],
    seed: u64,
    runs: usize,
) -> Result<()> {
    let small = cached_session(target, GenOptions { entries: SMALL, seed, shape: Shape::Realistic })?;
    let cache = target.join("bench-cache-append");
    let _ = fs::remove_dir_all(&cache);
    let mut all = vec![];
    for (file, entries) in std::iter::once(&(small, Some(SMALL))).chain(sessions) {
        all.push(measure(root, arbor, &cache, file, *entries, runs)?);
    }
    report(&all);
    Ok(())
}

fn measure(
    root: &Path,
    arbor: &Path,
    cache: &Path,
    file: &Path,
    entries: Option<usize>,
    runs: usize,
) -> Result<Appended> {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let copy = file.with_file_name(format!("append-copy-{name}"));
    eprintln!("== copying {} for the append rows", file.display());
    fs::copy(file, &copy).with_context(|| format!("copying {} to {}", file.display(), copy.display()))?;
    let bytes = fs::metadata(&copy)?.len();
    let id = first_entry_id(&copy)?;
    let label = |what: &str| {
        BenchCmd::new(
            &format!("arbor label ({what})"),
            [arbor.as_os_str(), "label".as_ref(), copy.as_os_str(), id.as_ref(), "x".as_ref()],
        )
        .with_env("ARBOR_CACHE_DIR", &cache.to_string_lossy())
    };
    let first = bench_command(root, &label("first append: builds the index"), 1);
    let indexed = first.and_then(|f| Ok((f, bench_command(root, &label("through the index"), runs)?)));
    let _ = fs::remove_file(&copy);
    let (first, indexed) = indexed?;
    Ok(Appended { name, entries, bytes, first, indexed })
}

/// The id of the session's first entry (the line after the header).
fn first_entry_id(file: &Path) -> Result<String> {
    use std::io::BufRead;
    let f = std::io::BufReader::new(fs::File::open(file)?);
    let line = f.lines().nth(1).context("no entry after the header")??;
    let v: Value = serde_json::from_str(&line)?;
    v.get("id").and_then(Value::as_str).map(str::to_owned).context("the first entry has no id")
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn median(mut t: Vec<Duration>) -> Duration {
    t.sort();
    match t.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => t[n / 2],
        n => (t[n / 2 - 1] + t[n / 2]) / 2,
    }
}

fn report(all: &[Appended]) {
    println!();
    println!("One append (`arbor label ID x`) to a copy of each session; medians of the appends through the index.");
    println!();
    println!(
        "| session | entries | file MB | first append s (builds the index) | its peak RSS MB | \
         append s | CPU s | peak RSS MB | time / small | CPU / small | RSS / small |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let stats = |a: &Appended| {
        let wall = secs(a.indexed.median());
        let cpu = secs(median(a.indexed.runs.iter().map(|r| r.cpu).collect()));
        let rss = a.indexed.peak_rss_kib() as f64 * 1024.0 / 1e6;
        (wall, cpu, rss)
    };
    let Some(base) = all.first().map(stats) else { return };
    for a in all {
        let (wall, cpu, rss) = stats(a);
        let ratio = |x: f64, b: f64| if b > 0.0 { format!("{:.2}x", x / b) } else { "-".to_owned() };
        println!(
            "| {} | {} | {:.1} | {:.3} | {:.1} | {:.4} | {:.4} | {:.1} | {} | {} | {} |",
            a.name,
            a.entries.map_or("-".to_owned(), |n| n.to_string()),
            a.bytes as f64 / 1e6,
            secs(a.first.median()),
            a.first.peak_rss_kib() as f64 * 1024.0 / 1e6,
            wall,
            cpu,
            rss,
            ratio(wall, base.0),
            ratio(cpu, base.1),
            ratio(rss, base.2),
        );
    }
}
