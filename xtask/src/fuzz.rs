//! `cargo xtask fuzz`: cargo-fuzz runs of every target in `fuzz/`, bounded
//! by time or by executions, on a working corpus made of the kept corpus
//! (`fuzz/corpus/<target>/`, committed) and seeds from `fixtures/`, with a
//! dictionary per target; reports executions, coverage and crashes, and with
//! `--minimize` merges what the run found into the kept corpus.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// A fuzz target: its name, its dictionary and where its seeds come from.
struct Target {
    name: &'static str,
    dict: &'static str,
    seeds: Seeds,
}

/// Where a target's seed inputs come from.
#[derive(Clone, Copy)]
enum Seeds {
    /// Every `.jsonl` file under `fixtures/`.
    SessionFixtures,
    /// The files in a folder of `fuzz/seeds/`.
    Folder(&'static str),
}

const TARGETS: &[Target] = &[
    Target { name: "line_decoder", dict: "pi.dict", seeds: Seeds::SessionFixtures },
    Target { name: "migrations", dict: "pi.dict", seeds: Seeds::SessionFixtures },
    Target { name: "tree_context", dict: "pi.dict", seeds: Seeds::SessionFixtures },
    Target { name: "hook_response", dict: "hooks.dict", seeds: Seeds::Folder("hooks") },
    Target { name: "sse_openai", dict: "sse.dict", seeds: Seeds::Folder("sse_openai") },
    Target { name: "sse_anthropic", dict: "sse.dict", seeds: Seeds::Folder("sse_anthropic") },
];

/// Seeds and kept inputs larger than this are left out (the kept corpus stays small).
const MAX_INPUT: u64 = 64 * 1024;
/// The longest input libFuzzer makes (longer seeds are cut): many small
/// sessions a second find more than a few large ones.
const MAX_LEN: u64 = 4 * 1024;

struct Outcome {
    target: String,
    execs: u64,
    secs: f64,
    cov: u64,
    features: u64,
    corpus: usize,
    crashed: bool,
    peak_rss_mb: u64,
}

struct Options {
    seconds: Option<u64>,
    runs: Option<u64>,
    only: Option<String>,
    minimize: bool,
    asan: bool,
    /// Targets run at the same time (libFuzzer uses one core each).
    parallel: usize,
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

/// Copies the files of `from` (recursively, those `keep` accepts, up to
/// [`MAX_INPUT`] bytes) into `to`, named by their path; returns how many.
fn copy_inputs(from: &Path, to: &Path, keep: &dyn Fn(&Path) -> bool) -> Result<usize> {
    let mut n = 0;
    let mut stack = vec![from.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if keep(&p) && fs::metadata(&p)?.len() <= MAX_INPUT {
                let name = p.strip_prefix(from)?.to_string_lossy().replace('/', "__");
                fs::copy(&p, to.join(name))?;
                n += 1;
            }
        }
    }
    Ok(n)
}

/// Makes the working corpus of `t`: the kept corpus and the seeds.
fn working_corpus(root: &Path, t: &Target) -> Result<(PathBuf, usize)> {
    let dir = root.join("target/fuzz-corpus").join(t.name);
    fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
    let mut n = copy_inputs(&root.join("fuzz/corpus").join(t.name), &dir, &|_| true)?;
    n += match t.seeds {
        Seeds::SessionFixtures => {
            copy_inputs(&root.join("fixtures"), &dir, &|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))?
        }
        Seeds::Folder(name) => copy_inputs(&root.join("fuzz/seeds").join(name), &dir, &|_| true)?,
    };
    Ok((dir, n))
}

fn stat(stderr: &str, key: &str) -> u64 {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("stat::{key}:")))
        .filter_map(|v| v.trim().parse().ok())
        .next_back()
        .unwrap_or(0)
}

/// The last value libFuzzer printed for `key` in its status lines (`cov: 123`).
fn status_value(stderr: &str, key: &str) -> u64 {
    stderr
        .lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| {
            let rest = &l[l.find(&format!(" {key}: "))? + key.len() + 3..];
            rest.split_whitespace().next()?.parse().ok()
        })
        .next_back()
        .unwrap_or(0)
}

fn cargo_fuzz(root: &Path, opts: &Options) -> Command {
    cargo_fuzz_command(root, opts, "run")
}

/// `cargo fuzz SUB` in `fuzz/` with the sanitizer of `opts` (stable Rust: `RUSTC_BOOTSTRAP`).
fn cargo_fuzz_command(root: &Path, opts: &Options, sub: &str) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root.join("fuzz")).env("RUSTC_BOOTSTRAP", "1");
    cmd.args(["fuzz", sub, "--sanitizer", if opts.asan { "address" } else { "none" }]);
    cmd
}

fn run_one(root: &Path, t: &Target, opts: &Options) -> Result<Outcome> {
    let (corpus, inputs) = working_corpus(root, t)?;
    // Executions, time or both (whichever comes first); 60 s when neither is given.
    let mut bounds = vec![];
    if let Some(runs) = opts.runs {
        bounds.push(format!("-runs={runs}"));
    }
    if opts.seconds.is_some() || opts.runs.is_none() {
        bounds.push(format!("-max_total_time={}", opts.seconds.unwrap_or(60)));
    }
    let bound = bounds.join(" ");
    let log = root.join("target/fuzz-logs").join(format!("{}.log", t.name));
    fs::create_dir_all(log.parent().context("the log has a folder")?)?;
    println!("== {}: {inputs} inputs (kept corpus and seeds), {bound}; progress in {}", t.name, log.display());
    let start = Instant::now();
    let mut child = cargo_fuzz(root, opts)
        .arg(t.name)
        .arg(&corpus)
        .arg("--")
        .args(&bounds)
        .args([
            &format!("-dict={}", root.join("fuzz").join(t.dict).display()),
            "-rss_limit_mb=2048",
            "-timeout=10",
            &format!("-max_len={MAX_LEN}"),
            "-print_final_stats=1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run cargo fuzz for {}", t.name))?;
    // libFuzzer's status lines go to the log as they come (a long run can be watched).
    let mut stderr = String::new();
    let mut file = fs::File::create(&log).with_context(|| log.display().to_string())?;
    if let Some(pipe) = child.stderr.take() {
        for line in BufReader::new(pipe).lines() {
            let line = line?;
            writeln!(file, "{line}")?;
            stderr.push_str(&line);
            stderr.push('\n');
        }
    }
    let status = child.wait()?;
    let secs = start.elapsed().as_secs_f64();
    let crashed = !status.success();
    if crashed {
        let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
        eprintln!("{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
    }
    let mut outcome = Outcome {
        target: t.name.to_owned(),
        execs: stat(&stderr, "number_of_executed_units"),
        secs,
        cov: status_value(&stderr, "cov"),
        features: status_value(&stderr, "ft"),
        corpus: fs::read_dir(&corpus).map(Iterator::count).unwrap_or(0),
        crashed,
        peak_rss_mb: stat(&stderr, "peak_rss_mb"),
    };
    if opts.minimize && !crashed {
        outcome.corpus = minimize(root, t, &corpus, opts)?;
    }
    Ok(outcome)
}

/// Inputs of the kept corpus named `regression-…`: each a crash once found
/// and fixed, kept whatever the merge says (docs/reliability.md names them).
const REGRESSION: &str = "regression-";

/// Replaces the kept corpus of `t` with the smallest set of the working
/// corpus's inputs that covers every edge all of them cover (libFuzzer's
/// merge), and the [`REGRESSION`] inputs it held.
fn minimize(root: &Path, t: &Target, working: &Path, opts: &Options) -> Result<usize> {
    let kept = root.join("fuzz/corpus").join(t.name);
    let fresh = root.join("target/fuzz-merged").join(t.name);
    let _ = fs::remove_dir_all(&fresh);
    fs::create_dir_all(&fresh)?;
    let is_regression = |p: &Path| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(REGRESSION));
    copy_inputs(&kept, &fresh, &is_regression)?;
    let status = cargo_fuzz(root, opts)
        .arg(t.name)
        .arg(&fresh)
        .arg(working)
        // Edges without hit counts: the kept corpus covers every edge the
        // working corpus covers in a few hundred inputs, not thousands.
        .args(["--", "-merge=1", "-use_counters=0", &format!("-max_len={MAX_LEN}")])
        .stderr(std::process::Stdio::null())
        .status()?;
    if !status.success() {
        bail!("merging the corpus of {} failed", t.name);
    }
    let _ = fs::remove_dir_all(&kept);
    fs::create_dir_all(&kept)?;
    let n = copy_inputs(&fresh, &kept, &|_| true)?;
    println!("   kept corpus of {}: {n} inputs in {}", t.name, kept.display());
    Ok(n)
}

fn parse(args: &[String]) -> Result<Options> {
    let mut o = Options { seconds: None, runs: None, only: None, minimize: false, asan: false, parallel: 1 };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => o.seconds = Some(it.next().context("--seconds needs a number")?.parse()?),
            "--runs" => o.runs = Some(it.next().context("--runs needs a number")?.parse()?),
            "--target" => o.only = Some(it.next().context("--target needs a name")?.clone()),
            "--minimize" => o.minimize = true,
            "--asan" => o.asan = true,
            "--parallel" => o.parallel = it.next().context("--parallel needs a number")?.parse::<usize>()?.max(1),
            other => bail!("unknown fuzz option {other:?}"),
        }
    }
    if let Some(only) = &o.only {
        if !TARGETS.iter().any(|t| t.name == only) {
            let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
            bail!("no fuzz target {only:?} (targets: {})", names.join(", "));
        }
    }
    Ok(o)
}

/// `cargo xtask fuzz [--seconds N] [--runs N] [--target NAME] [--parallel N] [--minimize] [--asan]`.
pub fn cli(root: &Path, args: &[String]) -> Result<()> {
    let opts = parse(args)?;
    ensure_cargo_fuzz()?;
    let targets: Vec<&Target> = TARGETS.iter().filter(|t| opts.only.as_deref().is_none_or(|o| o == t.name)).collect();
    // Built once up front, so that targets run side by side do not wait on each other's build.
    let status = cargo_fuzz_command(root, &opts, "build").status().context("cannot run cargo fuzz build")?;
    if !status.success() {
        bail!("cargo fuzz build failed");
    }
    let mut outcomes = vec![];
    for group in targets.chunks(opts.parallel) {
        let results: Vec<Result<Outcome>> = std::thread::scope(|s| {
            let handles: Vec<_> = group.iter().map(|t| s.spawn(|| run_one(root, t, &opts))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a fuzz run panicked"))))
                .collect()
        });
        for r in results {
            outcomes.push(r?);
        }
    }
    println!(
        "\n| target | executions | time (s) | exec/s | coverage (edges) | features | corpus | peak RSS MB | crashes |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for o in &outcomes {
        println!(
            "| {} | {} | {:.0} | {:.0} | {} | {} | {} | {} | {} |",
            o.target,
            o.execs,
            o.secs,
            o.execs as f64 / o.secs.max(1e-9),
            o.cov,
            o.features,
            o.corpus,
            o.peak_rss_mb,
            u8::from(o.crashed)
        );
    }
    if outcomes.iter().any(|o| o.crashed) {
        bail!("a fuzz target crashed: the input is in fuzz/artifacts/<target>/; add it to fixtures/ once fixed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libfuzzer_status_lines() {
        let err = "INFO: seed\n#2\tINITED cov: 10 ft: 12 corp: 1/1b\n#1000\tDONE   cov: 321 ft: 654 corp: 9/2Kb exec/s: 5\nstat::number_of_executed_units: 1000\n";
        assert_eq!(status_value(err, "cov"), 321);
        assert_eq!(status_value(err, "ft"), 654);
        assert_eq!(stat(err, "number_of_executed_units"), 1000);
    }
}
