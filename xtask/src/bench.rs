//! `cargo xtask bench`: end-to-end timing of `arbor context`, `arbor tree` and
//! `arbor-log`'s `scan` example on generated sessions, next to yardsticks
//! (`wc -l`, `cat`, python's `json.loads` per line) measured in the same run on
//! the same warm file.
//!
//! Any command line can be a row ([`BenchCmd`] + [`bench_command`]), so new
//! rows are one more entry in [`rows`] or a `--cmd` on the command line.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::bench_targets::{CONTEXT, PYTHON, TREE, TREE_TEXT};
use crate::gen::{GenOptions, Shape};
use crate::measure::{bench_command, cached_session, kib_to_mb, secs, BenchCmd, Measured, MB};

/// The per-line parse loop of the python yardstick (blank lines skipped, as pi does).
const PYTHON_LOOP: &str = "
import json, sys
n = 0
with open(sys.argv[1], 'rb') as f:
    for line in f:
        if line.strip():
            json.loads(line)
            n += 1
print(n)
";

#[derive(Debug)]
struct Opts {
    entries: Option<usize>,
    quick: bool,
    shape: Shape,
    seed: u64,
    runs: usize,
    file: Option<PathBuf>,
    extra: Vec<String>,
    yardsticks: bool,
    /// The set: 10k and 100k realistic, 1M small (and 1M realistic with `huge`).
    all: bool,
    huge: bool,
    /// Also time the full-decode scan (`SessionLog::read` + `into_entries`).
    full_scan: bool,
    /// `--store N`: the listing and search bench on a store of N sessions.
    store: Option<usize>,
    /// `--store-entries MIN-MAX`: the sizes of the store's sessions.
    store_sizes: crate::store::Sizes,
    /// `--no-pi`: skip pi's listAll in the store bench.
    no_pi: bool,
    /// `--baseline ARBOR`: another `arbor` binary whose first listing the store bench times beside this one's.
    baseline: Option<PathBuf>,
    /// `--no-search`: the store bench times the listings only.
    no_search: bool,
    /// `--html N`: the render time of the exported HTML page of an N-entry session.
    html: Option<usize>,
    /// `--pg`: sessions on a PostgreSQL server beside files.
    pg: bool,
    /// `--pg-sessions N`: how many sessions `--pg` pushes.
    pg_sessions: usize,
    /// `--tui`: the tree selector's bench (`arbor tui FILE --bench`).
    tui: bool,
    /// `--usage [N]`: `arbor usage` on a store of N sessions next to ccusage (`bench_usage.rs`).
    usage: Option<usize>,
    /// `--mcp`: `arbor mcp` through the MCP Python SDK (`bench_mcp.rs`).
    mcp: bool,
    /// `--append`: only the append rows (`bench_append.rs`).
    append: bool,
}

fn parse_opts(args: &[String]) -> Result<Opts> {
    let mut o = Opts {
        entries: None,
        quick: false,
        shape: Shape::Realistic,
        seed: 7,
        runs: 3,
        file: None,
        extra: Vec::new(),
        yardsticks: true,
        all: false,
        huge: false,
        full_scan: false,
        store: None,
        store_sizes: crate::store::Sizes::default(),
        usage: None,
        html: None,
        pg: false,
        pg_sessions: 1000,
        no_pi: false,
        baseline: None,
        no_search: false,
        tui: false,
        mcp: false,
        append: false,
    };
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value")).cloned();
        match a.as_str() {
            "--quick" => o.quick = true,
            "--small" => o.shape = Shape::Small,
            "--no-yardsticks" => o.yardsticks = false,
            "--all" => o.all = true,
            "--huge" => o.huge = true,
            "--full-scan" => o.full_scan = true,
            "--entries" => o.entries = Some(value("--entries")?.parse().context("--entries")?),
            "--seed" => o.seed = value("--seed")?.parse().context("--seed")?,
            "--runs" => o.runs = value("--runs")?.parse().context("--runs")?,
            "--file" => o.file = Some(PathBuf::from(value("--file")?)),
            "--cmd" => o.extra.push(value("--cmd")?),
            "--store" => o.store = Some(value("--store")?.parse().context("--store")?),
            "--html" => o.html = Some(value("--html")?.parse().context("--html")?),
            "--pg" => o.pg = true,
            "--tui" => o.tui = true,
            "--mcp" => o.mcp = true,
            "--append" => o.append = true,
            "--usage" => {
                // An optional number of sessions follows.
                let n = it.peek().and_then(|v| v.parse::<usize>().ok());
                if n.is_some() {
                    it.next();
                }
                o.usage = Some(n.unwrap_or(1000));
            }
            "--pg-sessions" => o.pg_sessions = value("--pg-sessions")?.parse().context("--pg-sessions")?,
            "--store-entries" => {
                o.store_sizes = crate::store::Sizes::parse(&value("--store-entries")?, "--store-entries")?
            }
            "--no-pi" => o.no_pi = true,
            "--baseline" => o.baseline = Some(PathBuf::from(value("--baseline")?)),
            "--no-search" => o.no_search = true,
            other => bail!("bench: unknown argument {other:?} (see `cargo xtask help`)"),
        }
    }
    if o.runs == 0 {
        bail!("--runs must be at least 1");
    }
    Ok(o)
}

/// Builds the release `arbor` binary and returns its path.
fn build_arbor(root: &Path, target: &Path) -> Result<PathBuf> {
    eprintln!("== building arbor (release)");
    let status = crate::cargo()
        .args(["build", "--release", "-p", "arbor-cli", "--bin", "arbor"])
        .current_dir(root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("building arbor (release) failed ({status})");
    }
    Ok(target.join("release").join(format!("arbor{}", std::env::consts::EXE_SUFFIX)))
}

pub fn cli(root: &Path, args: &[String]) -> Result<()> {
    let opts = parse_opts(args)?;
    let meta = crate::cargo_metadata(root, true)?;
    let target = meta
        .get("target_directory")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .context("cargo metadata has no target_directory")?;

    if let (Some(sessions), true) = (opts.store, opts.pg) {
        let arbor = build_arbor(root, &target)?;
        let o = crate::bench_store::StoreOpts {
            sessions,
            seed: opts.seed,
            runs: opts.runs,
            sizes: opts.store_sizes,
            pi: false,
            baseline: None,
            search: true,
        };
        return crate::bench_pg_search::run(root, &arbor, &target, &o);
    }
    if opts.pg {
        let sizes =
            if args.iter().any(|a| a == "--store-entries") { opts.store_sizes } else { crate::bench_pg::PUSH_SIZES };
        let o = crate::bench_pg::PgOpts {
            entries: opts.entries.unwrap_or(if opts.quick { 10_000 } else { 100_000 }),
            sessions: opts.pg_sessions,
            sizes,
            seed: opts.seed,
            runs: opts.runs,
        };
        return crate::bench_pg::run(root, &target, &o);
    }
    if opts.tui {
        let arbor = build_arbor(root, &target)?;
        let entries = opts.entries.unwrap_or(if opts.huge { 1_000_000 } else { 100_000 });
        let file = crate::bench_tui::session(&target, opts.file.as_ref(), entries, opts.seed)?;
        return crate::bench_tui::run(root, &arbor, &file, &target.join("bench-cache"));
    }
    if opts.mcp {
        let arbor = build_arbor(root, &target)?;
        return crate::bench_mcp::run(&arbor, &target, opts.seed, opts.runs);
    }
    if opts.append {
        let arbor = build_arbor(root, &target)?;
        let mut sessions = vec![];
        for entries in std::iter::once(100_000).chain(opts.huge.then_some(1_000_000)) {
            let gen_opts = GenOptions { entries, seed: opts.seed, shape: Shape::Realistic };
            sessions.push((cached_session(&target, gen_opts)?, Some(entries)));
        }
        return crate::bench_append::run(root, &arbor, &target, &sessions, opts.seed, opts.runs);
    }
    if let Some(entries) = opts.html {
        let arbor = build_arbor(root, &target)?;
        return crate::bench_html::run(root, &arbor, &target, entries, opts.seed, opts.runs.max(1));
    }
    if let Some(sessions) = opts.usage {
        let arbor = build_arbor(root, &target)?;
        let o = crate::bench_store::StoreOpts {
            sessions,
            seed: opts.seed,
            runs: opts.runs,
            sizes: opts.store_sizes,
            pi: false,
            baseline: None,
            search: false,
        };
        return crate::bench_usage::run(root, &arbor, &target, &o);
    }
    if let Some(sessions) = opts.store {
        let arbor = build_arbor(root, &target)?;
        let o = crate::bench_store::StoreOpts {
            sessions,
            seed: opts.seed,
            runs: opts.runs,
            sizes: opts.store_sizes,
            pi: !opts.no_pi,
            baseline: opts.baseline.clone(),
            search: !opts.no_search,
        };
        return crate::bench_store::run(root, &arbor, &target, &o);
    }
    eprintln!("== building the scan example and arbor (release)");
    let status = crate::cargo()
        .args([
            "build",
            "--release",
            "-p",
            "arbor-log",
            "-p",
            "arbor-tree",
            "-p",
            "arbor-cli",
            "--example",
            "scan",
            "--example",
            "append",
            "--bin",
            "arbor",
        ])
        .current_dir(root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("building the scan example and arbor (release) failed ({status})");
    }
    let release = target.join("release");
    let bins = Bins {
        scan: release.join("examples").join(format!("scan{}", std::env::consts::EXE_SUFFIX)),
        append: release.join("examples").join(format!("append{}", std::env::consts::EXE_SUFFIX)),
        arbor: release.join(format!("arbor{}", std::env::consts::EXE_SUFFIX)),
        cache: target.join("bench-cache"),
    };

    let sessions: Vec<(PathBuf, Option<usize>)> = match &opts.file {
        Some(f) => vec![(f.clone(), None)],
        None if opts.all || opts.huge => {
            let mut set = vec![];
            if opts.all {
                set.push((Shape::Realistic, 10_000));
                set.push((Shape::Realistic, 100_000));
                set.push((Shape::Small, 1_000_000));
            }
            if opts.huge {
                set.push((Shape::Realistic, 1_000_000));
            }
            let mut out = vec![];
            for (shape, entries) in set {
                let gen_opts = GenOptions { entries, seed: opts.seed, shape };
                out.push((cached_session(&target, gen_opts)?, Some(entries)));
            }
            out
        }
        None => {
            let entries = opts.entries.unwrap_or(match (opts.shape, opts.quick) {
                (Shape::Realistic, false) => 100_000,
                (Shape::Realistic, true) => 10_000,
                (Shape::Small, false) => 1_000_000,
                (Shape::Small, true) => 100_000,
            });
            let gen_opts = GenOptions { entries, seed: opts.seed, shape: opts.shape };
            vec![(cached_session(&target, gen_opts)?, Some(entries))]
        }
    };

    let mut summary = Vec::new();
    for (file, generated) in sessions.clone() {
        let file_bytes = fs::metadata(&file).with_context(|| format!("reading {}", file.display()))?.len();
        // Warm the page cache so that every row (and every run) reads from memory.
        io::copy(&mut File::open(&file)?, &mut io::sink())?;
        // The indexed rows measure reopening an unchanged file: build its index first.
        let status = Command::new(&bins.arbor)
            .args([OsString::from("tree"), file.clone().into(), "--json".into()])
            .env("ARBOR_CACHE_DIR", &bins.cache)
            .stdout(std::process::Stdio::null())
            .status()
            .context("running arbor tree to build the index")?;
        if !status.success() {
            bail!("arbor tree {} failed ({status})", file.display());
        }
        let commands = rows(&bins, &file, file_bytes, &opts)?;
        eprintln!("== {} runs of {} command(s) on {}", opts.runs, commands.len(), file.display());
        // Round by round, every row once per round: on a shared machine a
        // change of load then reaches every row alike.
        let mut results: Vec<Measured> = commands.iter().map(|c| Measured { cmd: c.clone(), runs: vec![] }).collect();
        for _ in 0..opts.runs {
            for m in &mut results {
                let run = bench_command(root, &m.cmd, 1)?;
                m.runs.extend(run.runs);
            }
        }
        report(&file, file_bytes, generated, &opts, &results);
        report_targets(file_bytes, &results);
        crate::bench_targets::report(file_bytes, generated, &results);
        if file_bytes <= APPEND_MAX_BYTES {
            appends(root, &bins, &file)?;
        }
        summary.push((file, file_bytes, results));
    }
    if summary.len() > 1 {
        report_summary(&summary);
    }
    if opts.all || opts.huge {
        crate::bench_append::run(root, &bins.arbor, &target, &sessions, opts.seed, opts.runs)?;
    }
    // Target 4: the tree selector on the million-entry session.
    if opts.huge && opts.file.is_none() {
        let gen_opts = GenOptions { entries: 1_000_000, seed: opts.seed, shape: Shape::Realistic };
        crate::bench_tui::run(root, &bins.arbor, &cached_session(&target, gen_opts)?, &bins.cache)?;
    }
    Ok(())
}

/// Files up to this size also get the append measurement (it copies the file first).
const APPEND_MAX_BYTES: u64 = 1_000_000_000;

/// Appends to an open session (the `append` example on a copy of `file`):
/// 10,000 buffered appends, then 1,000 with an fdatasync after each.
fn appends(root: &Path, bins: &Bins, file: &Path) -> Result<()> {
    for (n, fsync) in [("10000", false), ("1000", true)] {
        let mut c = Command::new(&bins.append);
        c.arg(file).arg(n).current_dir(root);
        if fsync {
            c.arg("--fsync");
        }
        let out = c.output().context("running the append example")?;
        if !out.status.success() {
            bail!("append example failed ({})", out.status);
        }
        let v: Value = serde_json::from_slice(&out.stdout).context("append example output")?;
        let num = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        println!(
            "appends to the open session ({} entries): {} {} in {:.3} s = {:.0} appends/s (open took {:.3} s)",
            num("entries_before"),
            n,
            if fsync { "appends, fdatasync after each," } else { "appends, buffered," },
            num("append_secs"),
            num("appends_per_sec"),
            num("open_secs"),
        );
    }
    Ok(())
}

/// The release binaries the built-in rows run.
#[derive(Debug)]
struct Bins {
    scan: PathBuf,
    arbor: PathBuf,
    append: PathBuf,
    /// The `ARBOR_CACHE_DIR` of the indexed rows (under `target/`, not the user's cache).
    cache: PathBuf,
}

/// Labels of the built-in arbor rows.
const SCAN: &str = "arbor-log scan (light)";
const FULL_SCAN: &str = "arbor-log scan (full decode)";
const CONTEXT_INDEXED: &str = "arbor context --json (index)";
const TREE_INDEXED: &str = "arbor tree --json (index)";
const CONTEXT_TEXT: &str = "arbor context (text, index)";
const CHECK: &str = "arbor check";
const REPAIR: &str = "arbor repair (dry run)";

/// The rows of the table for `file` (`bytes` long), arbor's first. Add new built-in rows here.
fn rows(bins: &Bins, file: &Path, bytes: u64, opts: &Opts) -> Result<Vec<BenchCmd>> {
    let (scan, arbor, f) = (bins.scan.as_os_str(), bins.arbor.as_os_str(), file.as_os_str());
    let cache = bins.cache.to_string_lossy();
    let mut rows = vec![
        BenchCmd::new(CONTEXT, [arbor, "context".as_ref(), f, "--json".as_ref()]).with_env("ARBOR_NO_INDEX", "1"),
        BenchCmd::new(TREE, [arbor, "tree".as_ref(), f, "--json".as_ref()]).with_env("ARBOR_NO_INDEX", "1"),
        BenchCmd::new(CONTEXT_INDEXED, [arbor, "context".as_ref(), f, "--json".as_ref()])
            .with_env("ARBOR_CACHE_DIR", &cache),
        BenchCmd::new(TREE_INDEXED, [arbor, "tree".as_ref(), f, "--json".as_ref()]).with_env("ARBOR_CACHE_DIR", &cache),
        BenchCmd::new(TREE_TEXT, [arbor, "tree".as_ref(), f]).with_env("ARBOR_CACHE_DIR", &cache),
        BenchCmd::new(CONTEXT_TEXT, [arbor, "context".as_ref(), f]).with_env("ARBOR_CACHE_DIR", &cache),
        BenchCmd::new(SCAN, [scan, "--light".as_ref(), f]).capturing(),
    ];
    if opts.full_scan {
        rows.push(BenchCmd::new(FULL_SCAN, [scan, f]).capturing());
    }
    // One streaming pass each, a few integers per entry: every size gets them.
    rows.push(BenchCmd::new(CHECK, [arbor, "check".as_ref(), f]).with_env("ARBOR_CACHE_DIR", &cache).exiting_up_to(2));
    rows.push(BenchCmd::new(REPAIR, [arbor, "repair".as_ref(), f]));
    for spec in &opts.extra {
        let (label, line) = spec.split_once('=').with_context(|| format!("--cmd {spec:?}: expected LABEL=COMMAND"))?;
        let argv: Vec<OsString> = line
            .split_whitespace()
            .map(|w| {
                if w == "{file}" {
                    file.as_os_str().to_owned()
                } else {
                    w.replace("{file}", &file.to_string_lossy()).into()
                }
            })
            .collect();
        if argv.is_empty() {
            bail!("--cmd {spec:?}: empty command");
        }
        rows.push(BenchCmd {
            label: label.trim().to_owned(),
            argv,
            capture_stdout: false,
            env: Vec::new(),
            max_exit: 0,
        });
    }
    if opts.yardsticks {
        rows.push(BenchCmd::new("wc -l", [OsString::from("wc"), "-l".into(), file.into()]));
        rows.push(BenchCmd::new("cat > /dev/null", [OsString::from("cat"), file.into()]));
        if have_python() {
            rows.push(
                BenchCmd::new(PYTHON, [OsString::from("python3"), "-c".into(), PYTHON_LOOP.into(), file.into()])
                    .capturing(),
            );
        } else {
            eprintln!("(python3 not found: no python yardstick)");
        }
        let scratch = bins.cache.parent().unwrap_or(Path::new("."));
        rows.extend(crate::bench_targets::pi_row(file, bytes, scratch)?);
    }
    Ok(rows)
}

fn have_python() -> bool {
    Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn report(file: &Path, file_bytes: u64, generated: Option<usize>, opts: &Opts, results: &[Measured]) {
    let size_mb = file_bytes as f64 / MB;
    println!();
    println!(
        "file: {} ({:.1} MB{})",
        file.display(),
        size_mb,
        generated.map(|n| format!(", {n} entries")).unwrap_or_default()
    );
    println!("runs per command: {} (time is the median wall time of the process)", opts.runs);
    println!();
    println!("| command | file MB | entries | time (median) | MB/s | peak RSS MB | RSS / file | runs (s) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---|");
    let mut scan_json: Option<Value> = None;
    for m in results {
        let t = secs(m.median());
        let rss_mb = kib_to_mb(m.peak_rss_kib());
        let entries = match m.cmd.label.as_str() {
            SCAN | FULL_SCAN => {
                let v: Option<Value> = serde_json::from_slice(m.last_stdout()).ok();
                let n = v.as_ref().and_then(|v| v.get("entries")).and_then(Value::as_u64);
                scan_json = v;
                n.map_or("?".to_owned(), |n| n.to_string())
            }
            _ => "-".to_owned(),
        };
        let all: Vec<String> = m.runs.iter().map(|r| format!("{:.3}", secs(r.wall))).collect();
        println!(
            "| {} | {:.1} | {} | {:.3} s | {:.0} | {:.1} | {:.2} | {} |",
            m.cmd.label,
            size_mb,
            entries,
            t,
            if t > 0.0 { size_mb / t } else { 0.0 },
            rss_mb,
            if file_bytes > 0 { rss_mb / size_mb } else { 0.0 },
            all.join(" ")
        );
    }
    println!();
    if let Some(v) = &scan_json {
        let num = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        println!(
            "arbor-log scan in process (the last scan row, without process start and exit): {:.3} s, {:.0} MB/s, \
             VmHWM {:.1} MB; {} lines, {} entries, {} diagnostics",
            num("secs"),
            num("mb_per_s"),
            num("peak_rss_kb") * 1024.0 / MB,
            num("lines"),
            num("entries"),
            num("diagnostics"),
        );
    }
    let find = |label: &str| results.iter().find(|m| m.cmd.label == label);
    for label in [CONTEXT, TREE, CONTEXT_INDEXED, TREE_INDEXED, CHECK, REPAIR, SCAN, FULL_SCAN] {
        let Some(arbor) = find(label) else { continue };
        let mut parts = vec![];
        for other in [PYTHON, "wc -l", "cat > /dev/null"] {
            if let Some(o) = find(other) {
                let (a, b) = (secs(arbor.median()), secs(o.median()));
                if a > 0.0 && b > 0.0 {
                    parts.push(format!("{:.2}x {other}", a / b));
                }
            }
        }
        let rss = kib_to_mb(arbor.peak_rss_kib());
        println!(
            "{label}: {}; peak RSS {:.0} MB = {:.2}x the file",
            parts.join(", "),
            rss,
            rss / (file_bytes as f64 / MB).max(f64::MIN_POSITIVE)
        );
    }
}

/// The targets of the third performance round (issue 21) for one session,
/// measured in this run: reopening with the index and printing the context
/// in 50 ms; `check` and `repair` (dry run) in 3x `wc -l` and 0.2x the file's size of memory.
fn report_targets(file_bytes: u64, results: &[Measured]) {
    let find = |label: &str| results.iter().find(|m| m.cmd.label == label);
    let wc = find("wc -l").map(|m| secs(m.median()));
    let file_mb = file_bytes as f64 / MB;
    println!();
    for (label, how) in TARGET_1_ROWS {
        let Some(m) = find(label) else { continue };
        let t = secs(m.median());
        let met = if t <= TARGET_1_SECS { "met" } else { "not met" };
        println!(
            "target: reopen with the index and print the context ({how}) in <= 50 ms: {:.0} ms, peak RSS {:.0} MB ({met})",
            t * 1000.0,
            kib_to_mb(m.peak_rss_kib())
        );
    }
    for label in [CHECK, REPAIR] {
        let Some(m) = find(label) else { continue };
        let (t, rss) = (secs(m.median()), kib_to_mb(m.peak_rss_kib()));
        // Without the yardsticks (`--no-yardsticks`) there is no `wc -l` to divide by.
        let ratio = wc.filter(|&w| w > 0.0).map(|w| t / w);
        let (speed, met) = match ratio {
            Some(r) => (format!("{r:.2}x wc -l"), if r <= 3.0 && rss <= 0.2 * file_mb { "met" } else { "not met" }),
            None => ("no wc -l measured".to_owned(), "not judged"),
        };
        println!(
            "target: {label} in <= 3x wc -l and <= 0.2x the file of memory: {t:.3} s = {speed}, \
             {rss:.0} MB = {:.2}x the file ({met})",
            rss / file_mb.max(f64::MIN_POSITIVE)
        );
    }
}

/// Target 1 of issue 21: reopening an unchanged session with its index and
/// printing its context, whatever its size or the depth of its path.
const TARGET_1_SECS: f64 = 0.050;

/// The rows target 1 holds to the time above: the context as JSON and as text.
const TARGET_1_ROWS: [(&str, &str); 2] = [(CONTEXT_INDEXED, "--json"), (CONTEXT_TEXT, "text")];

/// One line per session: the ratios the performance issue sets targets for;
/// then target 1 on every session side by side (the 1M small-entry session's
/// active path is nearly all of its million entries, the realistic one's 167k).
fn report_summary(all: &[(PathBuf, u64, Vec<Measured>)]) {
    report_summary_table(all);
    let mut met = true;
    let parts: Vec<String> = all
        .iter()
        .flat_map(|(file, _, results)| {
            let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            TARGET_1_ROWS.iter().filter_map(move |(label, how)| {
                let m = results.iter().find(|m| m.cmd.label == *label)?;
                Some((format!("{name} {how}"), secs(m.median()), kib_to_mb(m.peak_rss_kib())))
            })
        })
        .map(|(name, t, mb)| {
            met &= t <= TARGET_1_SECS;
            format!("{name} {:.0} ms ({mb:.0} MB)", t * 1000.0)
        })
        .collect();
    if !parts.is_empty() {
        let met = if met { "met" } else { "not met" };
        println!("\ntarget 1, reopen with the index and print the context in <= 50 ms: {} ({met})", parts.join(", "));
    }
}

fn report_summary_table(all: &[(PathBuf, u64, Vec<Measured>)]) {
    println!();
    println!(
        "| session | file MB | context s | context / python | context / wc -l | context RSS / file | \
         tree s | tree / wc -l | tree RSS MB | context, indexed s | tree, indexed s | python s | wc -l s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (file, bytes, results) in all {
        let find = |label: &str| results.iter().find(|m| m.cmd.label == label);
        let t = |label: &str| find(label).map(|m| secs(m.median()));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
            _ => "-".to_owned(),
        };
        let size_mb = *bytes as f64 / MB;
        let rss = |label: &str| find(label).map(|m| kib_to_mb(m.peak_rss_kib()));
        let opt = |v: Option<f64>, digits: usize| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
        println!(
            "| {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            size_mb,
            opt(t(CONTEXT), 3),
            ratio(t(CONTEXT), t(PYTHON)),
            ratio(t(CONTEXT), t("wc -l")),
            rss(CONTEXT).map_or("-".to_owned(), |r| format!("{:.2}", r / size_mb)),
            opt(t(TREE), 3),
            ratio(t(TREE), t("wc -l")),
            opt(rss(TREE), 0),
            opt(t(CONTEXT_INDEXED), 3),
            opt(t(TREE_INDEXED), 3),
            opt(t(PYTHON), 3),
            opt(t("wc -l"), 3),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options() {
        // Without the yardsticks: pi's row would install pi's package and copy /d/s.jsonl, which is not there.
        let args: Vec<String> = ["--quick", "--no-yardsticks", "--runs", "5", "--cmd", "tree=arbor tree {file} --json"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let o = parse_opts(&args).unwrap();
        assert!(o.quick);
        assert_eq!(o.runs, 5);
        let bins = Bins { scan: "scan".into(), arbor: "arbor".into(), append: "append".into(), cache: "cache".into() };
        let rows = rows(&bins, Path::new("/d/s.jsonl"), 0, &o).unwrap();
        assert_eq!(rows[0].label, CONTEXT);
        assert_eq!(rows[0].argv, ["arbor", "context", "/d/s.jsonl", "--json"].map(OsString::from));
        let extra = rows.iter().find(|r| r.label == "tree").unwrap();
        assert_eq!(extra.argv, ["arbor", "tree", "/d/s.jsonl", "--json"].map(OsString::from));
        assert!(parse_opts(&["--bogus".to_owned()]).is_err());
        assert!(parse_opts(&["--runs".to_owned()]).is_err());
    }

    #[test]
    fn bench_command_measures_and_fails_loudly() {
        let ok = BenchCmd::new("true", ["sh", "-c", "echo 1"]).capturing();
        let m = bench_command(Path::new("."), &ok, 2).unwrap();
        assert_eq!(m.runs.len(), 2);
        assert_eq!(m.last_stdout(), b"1\n");
        let bad = BenchCmd::new("false", ["sh", "-c", "exit 1"]);
        assert!(bench_command(Path::new("."), &bad, 1).is_err());
    }
}
