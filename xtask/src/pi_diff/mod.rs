//! `cargo xtask pi-diff`: the differential test against the reference.
//!
//! Generates session files ([`gen`]), runs Arbor's `dump`, `tree`, `path`,
//! `context --json`, `context --llm --json` (at the leaf and at other
//! entries) and `fork --at` on each, then hands the files and Arbor's answers
//! to one node process (`pi_diff.mjs`) that asks pi's own `SessionManager`,
//! `buildSessionContext`, `convertToLlm` and `createBranchedSession` the same
//! questions on copies of the same bytes and compares the answers as parsed
//! JSON. Where Arbor departs from pi on purpose (docs/format.md's decisions
//! table) the script knows the decision by name, checks that Arbor's answer
//! is exactly pi's with that decision applied, and counts it apart.

mod gen;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::pi::{ensure_pi_or_skip, node};

const SCRIPT: &str = include_str!("pi_diff.mjs");

const USAGE: &str =
    "usage: cargo xtask pi-diff [--files N] [--seed S] [--only INDEX] [--file PATH…] [--arbor BIN] [--keep]";

#[derive(Debug)]
struct Opts {
    /// Generated files; with `--file` and no `--files`, none.
    files: u64,
    seed: u64,
    only: Option<u64>,
    given: Vec<PathBuf>,
    arbor: Option<PathBuf>,
    keep: bool,
}

fn parse(args: &[String]) -> Result<Opts> {
    let mut o = Opts { files: 500, seed: random_seed(), only: None, given: vec![], arbor: None, keep: false };
    let mut files_asked = false;
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value\n{USAGE}"));
        match a.as_str() {
            "--files" => {
                o.files = value()?.parse().context("--files takes a number")?;
                files_asked = true;
            }
            "--seed" => o.seed = value()?.parse().context("--seed takes a number")?,
            "--only" => o.only = Some(value()?.parse().context("--only takes a number")?),
            "--file" => {
                o.given.push(PathBuf::from(value()?));
                while let Some(more) = it.next_if(|p| !p.starts_with("--")) {
                    o.given.push(PathBuf::from(more));
                }
            }
            "--arbor" => o.arbor = Some(PathBuf::from(value()?)),
            "--keep" => o.keep = true,
            other => bail!("pi-diff: unknown option {other:?}\n{USAGE}"),
        }
    }
    if !o.given.is_empty() && !files_asked && o.only.is_none() {
        o.files = 0;
    }
    Ok(o)
}

fn random_seed() -> u64 {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    gen::Rng::new(t ^ u64::from(std::process::id())).next() % 1_000_000_000
}

/// One question asked of both implementations about one file.
#[derive(Debug, Clone)]
struct Run {
    cmd: &'static str,
    /// The entry asked about: its id as JSON text, or its position (v1 files, whose ids are made on load).
    at: At,
}

#[derive(Debug, Clone)]
enum At {
    Leaf,
    Id(String),
    Pos(usize),
}

/// A file to compare and the questions to ask about it.
#[derive(Debug)]
struct Case {
    name: String,
    path: PathBuf,
    version: u8,
    features: Vec<&'static str>,
    runs: Vec<Run>,
}

/// `cargo xtask pi-diff …`
pub fn cli(root: &Path, args: &[String]) -> Result<()> {
    let o = parse(args)?;
    let Some(pi) = ensure_pi_or_skip(|why| println!("pi-diff: skipped: {why}"))? else {
        return Ok(());
    };
    let arbor = match &o.arbor {
        Some(bin) => bin.clone(),
        None => build_arbor(root)?,
    };
    let work = root.join("target").join("pi-diff").join(format!("seed-{}", o.seed));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join("forks")).with_context(|| format!("creating {}", work.display()))?;
    let started = Instant::now();
    let mut cases = generate(&work, &o)?;
    cases.extend(given(&arbor, &work, &o.given)?);
    let results = run_arbor(&arbor, &work, &cases)?;
    let arbor_secs = started.elapsed().as_secs_f64();
    let job = job_json(&cases, &results);
    let job_path = work.join("job.json");
    std::fs::write(&job_path, serde_json::to_vec(&job)?)?;
    let summary_path = work.join("summary.json");
    let status =
        node(&pi, "pi_diff.mjs", SCRIPT)?.arg(&job_path).arg(&summary_path).status().context("running node")?;
    if !status.success() {
        bail!("pi_diff.mjs failed ({status})");
    }
    let summary: Value = serde_json::from_slice(&std::fs::read(&summary_path)?)?;
    let disagreements = summary["disagreements"].as_u64().unwrap_or(u64::MAX);
    println!(
        "pi-diff: seed {}: {} files, {} comparisons: {} agree, {} documented ({}), {} pi failures, {} disagree ({:.1} s, {:.1} s of it Arbor)",
        o.seed,
        cases.len(),
        summary["comparisons"],
        summary["agree"],
        summary["documented"],
        summary["byDecision"],
        summary["piFailures"],
        disagreements,
        started.elapsed().as_secs_f64(),
        arbor_secs
    );
    if disagreements > 0 {
        println!(
            "pi-diff: files kept in {} (reproduce: cargo xtask pi-diff --seed {} --only INDEX)",
            work.display(),
            o.seed
        );
        bail!("{disagreements} disagreements with pi outside the documented decisions");
    }
    if !o.keep {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(())
}

/// Builds the `arbor` binary (dev profile: what the tests build) and returns its path.
fn build_arbor(root: &Path) -> Result<PathBuf> {
    let status = crate::cargo()
        .args(["build", "--quiet", "-p", "arbor-cli", "--bin", "arbor"])
        .current_dir(root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build -p arbor-cli failed ({status})");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    Ok(target.join("debug").join(format!("arbor{}", std::env::consts::EXE_SUFFIX)))
}

/// Writes the generated files and plans their runs.
fn generate(work: &Path, o: &Opts) -> Result<Vec<Case>> {
    let indices: Vec<u64> = match o.only {
        Some(i) => vec![i],
        None => (0..o.files).collect(),
    };
    let mut cases = vec![];
    for i in indices {
        let g = gen::generate(o.seed, i);
        let name = format!("f{i:05}");
        let path = work.join(format!("{name}.jsonl"));
        std::fs::write(&path, &g.bytes).with_context(|| format!("writing {}", path.display()))?;
        let mut rng = gen::Rng::new(o.seed ^ i.wrapping_mul(31));
        let runs = plan(&mut rng, &g);
        cases.push(Case { name, path, version: g.version, features: g.features, runs });
    }
    Ok(cases)
}

/// Copies files given on the command line and asks about every entry (as Arbor's dump lists them).
fn given(arbor: &Path, work: &Path, files: &[PathBuf]) -> Result<Vec<Case>> {
    let mut cases = vec![];
    for (i, f) in files.iter().enumerate() {
        let name = format!("g{i:03}");
        let path = work.join(format!("{name}.jsonl"));
        std::fs::copy(f, &path).with_context(|| format!("copying {}", f.display()))?;
        let mut runs: Vec<Run> =
            ["dump", "tree", "path", "context", "llm"].iter().map(|c| Run { cmd: c, at: At::Leaf }).collect();
        let dump = arbor_cmd(arbor, work, &["dump", &path.to_string_lossy(), "--json"])?;
        for pos in 0..dump_ids(&dump.out).len() {
            for cmd in ["path", "context", "llm", "fork"] {
                runs.push(Run { cmd, at: At::Pos(pos) });
            }
        }
        cases.push(Case { name, path, version: 0, features: vec!["given"], runs });
    }
    Ok(cases)
}

/// The questions for one generated file: every command at the leaf, and at a
/// few other entries (user messages among them, where forks matter most).
fn plan(rng: &mut gen::Rng, g: &gen::Generated) -> Vec<Run> {
    let mut runs: Vec<Run> =
        ["dump", "tree", "path", "context", "llm"].iter().map(|c| Run { cmd: c, at: At::Leaf }).collect();
    // Ids a command line can carry: no lone surrogate escapes, no characters Arbor keeps as their UTF-16 halves.
    let usable = |id: &&String| !id.contains("\\ud") && !id.contains("\\uD") && !id.chars().any(|c| c >= '\u{10F800}');
    let ids: Vec<&String> = g.ids.iter().filter(usable).collect();
    let users: Vec<&String> = g.user_ids.iter().filter(usable).collect();
    let mut targets: Vec<At> = vec![];
    if g.version == 1 {
        for _ in 0..3.min(g.entries) {
            targets.push(At::Pos(rng.below(g.entries)));
        }
        if g.entries > 0 {
            targets.push(At::Pos(g.entries - 1));
        }
    } else {
        for _ in 0..3.min(ids.len()) {
            targets.push(At::Id(ids[rng.below(ids.len())].clone()));
        }
        for _ in 0..2.min(users.len()) {
            targets.push(At::Id(users[rng.below(users.len())].clone()));
        }
        if let Some(last) = ids.last() {
            targets.push(At::Id((*last).clone()));
        }
    }
    for at in targets {
        for cmd in ["path", "context", "llm", "fork"] {
            runs.push(Run { cmd, at: at.clone() });
        }
    }
    runs
}

/// What Arbor answered to one run.
#[derive(Debug, Default, Clone)]
struct Answer {
    code: i32,
    out: String,
    err: String,
    /// The id the run was asked with (a position resolved through Arbor's dump).
    id: Option<String>,
}

/// Runs every question through the `arbor` binary, files in parallel.
fn run_arbor(arbor: &Path, work: &Path, cases: &[Case]) -> Result<Vec<Vec<Answer>>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Vec<Answer>>>>> = Mutex::new((0..cases.len()).map(|_| None).collect());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 16);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let r = run_case(arbor, work, case);
                if let Ok(mut all) = results.lock() {
                    all[i] = Some(r);
                }
            });
        }
    });
    let all = results.into_inner().map_err(|_| anyhow::anyhow!("a worker panicked"))?;
    all.into_iter().map(|r| r.unwrap_or_else(|| bail!("a file was not run"))).collect()
}

fn run_case(arbor: &Path, work: &Path, case: &Case) -> Result<Vec<Answer>> {
    let file = case.path.to_string_lossy().into_owned();
    let mut ids: Option<Vec<Option<String>>> = None;
    let mut answers = vec![];
    for (k, run) in case.runs.iter().enumerate() {
        let id = match &run.at {
            At::Leaf => None,
            At::Id(text) => Some(serde_json::from_str::<String>(text).context("an id of the generator")?),
            At::Pos(p) => {
                if ids.is_none() {
                    let out = arbor_cmd(arbor, work, &["dump", &file, "--json"])?;
                    ids = Some(dump_ids(&out.out));
                }
                match ids.as_ref().and_then(|v| v.get(*p).cloned()).flatten() {
                    Some(id) => Some(id),
                    None => {
                        answers.push(Answer { code: -1, ..Answer::default() });
                        continue;
                    }
                }
            }
        };
        let dir = work.join("forks").join(format!("{}-{k}", case.name));
        let dir_s = dir.to_string_lossy().into_owned();
        let mut args: Vec<&str> = match run.cmd {
            "dump" => vec!["dump", &file, "--json"],
            "tree" => vec!["tree", &file, "--json"],
            "path" => vec!["path", &file],
            "context" => vec!["context", &file, "--json"],
            "llm" => vec!["context", &file, "--llm", "--json"],
            _ => vec!["fork", &file, "--sessions-dir", &dir_s, "--json"],
        };
        match (run.cmd, id.as_deref()) {
            ("path", Some(id)) => args.extend([id, "--json"]),
            ("path", None) => args.push("--json"),
            ("context" | "llm", Some(id)) => args.extend(["--leaf", id]),
            ("fork", Some(id)) => args.extend(["--at", id]),
            ("fork", None) => continue,
            _ => {}
        }
        let mut a = arbor_cmd(arbor, work, &args)?;
        a.id = id;
        answers.push(a);
    }
    Ok(answers)
}

fn arbor_cmd(arbor: &Path, work: &Path, args: &[&str]) -> Result<Answer> {
    let out = Command::new(arbor)
        .args(args)
        .env("ARBOR_NO_INDEX", "1")
        .env("ARBOR_CACHE_DIR", work.join("cache"))
        .env("HOME", work)
        .current_dir(work)
        .output()
        .with_context(|| format!("running {}", arbor.display()))?;
    // The error is the last line; diagnostics come before it.
    let err = String::from_utf8_lossy(&out.stderr);
    let err: String = err.chars().skip(err.chars().count().saturating_sub(2000)).collect();
    Ok(Answer {
        code: out.status.code().unwrap_or(-2),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err,
        id: None,
    })
}

/// The entry ids of `arbor dump --json`, in order (`None` for an id that is not a plain string).
fn dump_ids(text: &str) -> Vec<Option<String>> {
    #[derive(serde::Deserialize)]
    struct Dump {
        entries: Vec<IdOnly>,
    }
    #[derive(serde::Deserialize)]
    struct IdOnly {
        id: Option<serde_json::Value>,
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    match serde::Deserialize::deserialize(&mut de) {
        Ok(Dump { entries }) => entries.into_iter().map(|e| e.id.and_then(|v| v.as_str().map(str::to_owned))).collect(),
        Err(_) => vec![],
    }
}

/// The job for the node script: files, runs and Arbor's answers (the answers as text, parsed by JavaScript).
fn job_json(cases: &[Case], results: &[Vec<Answer>]) -> Value {
    let files: Vec<Value> = cases
        .iter()
        .zip(results)
        .map(|(c, answers)| {
            let runs: Vec<Value> = c
                .runs
                .iter()
                .filter(|r| !(r.cmd == "fork" && matches!(r.at, At::Leaf)))
                .zip(answers)
                .map(|(r, a)| {
                    let (at_id, at_pos) = match &r.at {
                        At::Leaf => (Value::Null, Value::Null),
                        At::Id(text) => (json!(text), Value::Null),
                        At::Pos(p) => (Value::Null, json!(p)),
                    };
                    json!({"cmd": r.cmd, "atId": at_id, "atPos": at_pos, "arborId": a.id,
                           "code": a.code, "out": a.out, "err": a.err})
                })
                .collect();
            json!({"name": c.name, "path": c.path, "version": c.version, "features": c.features, "runs": runs})
        })
        .collect();
    json!({ "files": files })
}
