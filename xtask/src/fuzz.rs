//! `cargo xtask fuzz`: a bounded cargo-fuzz run of every target in `fuzz/`,
//! with a corpus seeded from `fixtures/`, reporting executions, time and crashes.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

const TARGETS: [&str; 3] = ["line_decoder", "migrations", "tree_context"];

struct Outcome {
    target: String,
    execs: u64,
    secs: f64,
    crashed: bool,
    peak_rss_mb: u64,
}

fn ensure_cargo_fuzz() -> Result<()> {
    let ok = Command::new("cargo").args(["fuzz", "--version"]).output().is_ok_and(|o| o.status.success());
    if ok {
        return Ok(());
    }
    println!("installing cargo-fuzz (cargo install cargo-fuzz --locked)");
    let status = Command::new("cargo").args(["install", "cargo-fuzz", "--locked"]).status()?;
    if !status.success() {
        bail!("could not install cargo-fuzz");
    }
    Ok(())
}

/// Copies the session fixtures (up to 256 KiB each) into a corpus directory.
fn seed_corpus(root: &Path, dir: &Path) -> Result<usize> {
    fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    let mut n = 0;
    let mut stack = vec![root.join("fixtures")];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).with_context(|| d.display().to_string())? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().and_then(|e| e.to_str()) == Some("jsonl") && fs::metadata(&p)?.len() <= 256 * 1024 {
                let name = p.strip_prefix(root)?.to_string_lossy().replace('/', "__");
                fs::copy(&p, dir.join(name))?;
                n += 1;
            }
        }
    }
    Ok(n)
}

fn stat(stderr: &str, key: &str) -> u64 {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("stat::{key}:")))
        .filter_map(|v| v.trim().parse().ok())
        .next_back()
        .unwrap_or(0)
}

fn run_one(root: &Path, target: &str, seconds: u64) -> Result<Outcome> {
    let corpus: PathBuf = root.join("target/fuzz-corpus").join(target);
    let seeds = seed_corpus(root, &corpus)?;
    println!("== {target}: {seeds} seed files, {seconds} s");
    let start = Instant::now();
    let out = Command::new("cargo")
        .current_dir(root.join("fuzz"))
        .env("RUSTC_BOOTSTRAP", "1")
        .args(["fuzz", "run", target])
        .arg(&corpus)
        .args([
            "--",
            &format!("-max_total_time={seconds}"),
            "-rss_limit_mb=2048",
            "-timeout=10",
            "-max_len=65536",
            "-print_final_stats=1",
        ])
        .output()
        .with_context(|| format!("cannot run cargo fuzz for {target}"))?;
    let secs = start.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let crashed = !out.status.success();
    if crashed {
        let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
        eprintln!("{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
    }
    Ok(Outcome {
        target: target.to_owned(),
        execs: stat(&stderr, "number_of_executed_units"),
        secs,
        crashed,
        peak_rss_mb: stat(&stderr, "peak_rss_mb"),
    })
}

/// `cargo xtask fuzz [--seconds N] [--target NAME]`.
pub fn cli(root: &Path, args: &[String]) -> Result<()> {
    let mut seconds = 60;
    let mut only: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => seconds = it.next().context("--seconds needs a number")?.parse()?,
            "--target" => only = Some(it.next().context("--target needs a name")?.clone()),
            other => bail!("unknown fuzz option {other:?}"),
        }
    }
    ensure_cargo_fuzz()?;
    let mut outcomes = vec![];
    for t in TARGETS.iter().filter(|t| only.as_deref().is_none_or(|o| o == **t)) {
        outcomes.push(run_one(root, t, seconds)?);
    }
    println!("\n| target | execs | time (s) | execs/s | peak RSS MB | crashes |");
    println!("|---|---:|---:|---:|---:|---:|");
    for o in &outcomes {
        println!(
            "| {} | {} | {:.0} | {:.0} | {} | {} |",
            o.target,
            o.execs,
            o.secs,
            o.execs as f64 / o.secs.max(1e-9),
            o.peak_rss_mb,
            u8::from(o.crashed)
        );
    }
    if outcomes.iter().any(|o| o.crashed) {
        bail!("a fuzz target crashed: the input is in fuzz/artifacts/<target>/; add it to fixtures/ once fixed");
    }
    Ok(())
}
