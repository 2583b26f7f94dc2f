//! `cargo xtask bench --pg`: sessions on a PostgreSQL server beside the
//! file backend, in one run, on a throwaway cluster this bench starts
//! (`.ci/pg-cluster`, in `target/bench-pg/`, fsync on) and stops.
//!
//! Rows:
//! - durable appends per second: arbor-tree's `append` example with an
//!   fdatasync after each append, and arbor-pg's `pg_append` with each append
//!   committed under `synchronous_commit = on`, both on a copy of a 10,000-entry
//!   session;
//! - open + `context --json` of an N-entry session (100,000 by default): the
//!   file and the same session on the server, each without and with the index
//!   cache (median of the runs);
//! - the read targets of issue #31 on the N-entry session, each with its
//!   index warm: `context --json` (and cold: no index cache, no local copy),
//!   `label`, `tree --json` read from the server whole (no local copy: the
//!   server's own speed, shown, not judged) and `tree --json` through the
//!   local copy its first run made (docs/postgres.md, "Local copies");
//! - push of M sessions (1,000 by default) to an empty database (median of
//!   runs, a fresh database each), the same push again (everything unchanged),
//!   `pull --all` into an empty folder, and `cp -r` of the same files as the
//!   yardstick.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::gen::{GenOptions, Shape};
use crate::measure::{bench_command, BenchCmd, Measured};
use crate::store::{self, Sizes};

/// What `--pg` was asked for.
#[derive(Debug, Clone)]
pub struct PgOpts {
    /// Entries of the session opened.
    pub entries: usize,
    /// Sessions pushed.
    pub sessions: usize,
    /// Their sizes.
    pub sizes: Sizes,
    pub seed: u64,
    pub runs: usize,
}

/// The sizes of the pushed sessions unless `--store-entries` says otherwise (~100 entries on average).
pub const PUSH_SIZES: Sizes = Sizes { min: 20, max: 400 };

/// Appends timed per backend.
const APPENDS: &str = "1000";

/// The throwaway cluster; stopped when dropped.
pub(crate) struct Cluster {
    dir: PathBuf,
    script: PathBuf,
    pub(crate) url: String,
}

impl Cluster {
    pub(crate) fn start(root: &Path, dir: &Path) -> Result<Cluster> {
        let script = root.join(".ci/pg-cluster");
        let _ = fs::remove_dir_all(dir);
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let out = Command::new(&script).arg("start").arg(dir).output().context("running .ci/pg-cluster")?;
        if !out.status.success() {
            bail!("starting the cluster failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let url = String::from_utf8(out.stdout)?.trim().to_owned();
        Ok(Cluster { dir: dir.to_owned(), script, url })
    }

    /// A new, empty database; its URL.
    pub(crate) fn database(&self, name: &str) -> Result<String> {
        let status = Command::new("psql")
            .args([
                self.url.as_str(),
                "-q",
                "-c",
                &format!("DROP DATABASE IF EXISTS {name}"),
                "-c",
                &format!("CREATE DATABASE {name}"),
            ])
            .status()
            .context("running psql (PostgreSQL's client) to create a database")?;
        if !status.success() {
            bail!("psql could not create the database {name}");
        }
        let (base, _) = self.url.rsplit_once('/').context("the cluster's URL has no database")?;
        Ok(format!("{base}/{name}"))
    }

    pub(crate) fn server_version(&self) -> String {
        Command::new("psql")
            .args([self.url.as_str(), "-Atc", "SHOW server_version"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(&self.script).arg("stop").arg(&self.dir).output();
    }
}

fn build(root: &Path) -> Result<()> {
    eprintln!("== building arbor and the append examples (release)");
    let status = crate::cargo()
        .args(["build", "--release", "-p", "arbor-cli", "--bin", "arbor", "-p", "arbor-tree", "--example", "append"])
        .args(["-p", "arbor-pg", "--example", "pg_append"])
        .current_dir(root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("building failed ({status})");
    }
    Ok(())
}

pub fn run(root: &Path, target: &Path, o: &PgOpts) -> Result<()> {
    build(root)?;
    let release = target.join("release");
    let exe = |name: &str| release.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let (arbor, append, pg_append) =
        (exe("arbor"), release.join("examples/append"), release.join("examples/pg_append"));
    let work = target.join("bench-pg");
    let cluster = Cluster::start(root, &work.join("cluster"))?;
    eprintln!("== PostgreSQL {} at {}", cluster.server_version(), cluster.url);

    let small =
        crate::measure::cached_session(target, GenOptions { entries: 10_000, seed: o.seed, shape: Shape::Realistic })?;
    let appends = durable_appends(&cluster, &append, &pg_append, &small)?;
    let big = crate::measure::cached_session(
        target,
        GenOptions { entries: o.entries, seed: o.seed, shape: Shape::Realistic },
    )?;
    let open = open_and_context(root, &cluster, &arbor, &big, &work, o.runs)?;
    let reads = reads(root, &cluster, &arbor, &big, &work, o.runs)?;
    let push = push_and_pull(root, &cluster, &arbor, &work, o)?;

    println!();
    println!(
        "PostgreSQL {} (throwaway cluster, unix socket, fsync on) beside files, one run",
        cluster.server_version()
    );
    println!();
    println!("| what | file | server |");
    println!("|---|---:|---:|");
    println!("| durable appends/s (1,000; fdatasync / synchronous commit) | {:.0} | {:.0} |", appends.0, appends.1);
    let mb = fs::metadata(&big).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    for (label, file, server) in &open {
        println!(
            "| open + context --json, {} entries ({mb:.0} MB), {label} | {:.3} s | {:.3} s |",
            o.entries,
            file.median().as_secs_f64(),
            server.median().as_secs_f64()
        );
    }
    println!();
    println!("| {} entries ({mb:.0} MB), index warm | file | server | target (server) | met |", o.entries);
    println!("|---|---:|---:|---|:-:|");
    for r in &reads {
        let (f, s) = (&r.file, &r.server);
        let (ft, st) = (f.median().as_secs_f64(), s.median().as_secs_f64());
        let (fm, sm) = (crate::measure::kib_to_mb(f.peak_rss_kib()), crate::measure::kib_to_mb(s.peak_rss_kib()));
        let limit = r.time_limit(ft);
        let met = match limit.is_nan() {
            true => "–",
            false if st <= limit && r.rss_limit.is_none_or(|l| sm <= l) => "yes",
            false => "no",
        };
        println!("| {} | {ft:.3} s, {fm:.0} MB | {st:.3} s, {sm:.0} MB | {} | {met} |", r.what, r.target);
    }
    println!();
    println!("| {} sessions ({:.0} MB, {} entries) | time |", o.sessions, push.mb, push.entries);
    println!("|---|---:|");
    for (label, d) in &push.rows {
        println!("| {label} | {:.3} s |", d.as_secs_f64());
    }
    Ok(())
}

/// Appends per second to a file (fdatasync) and on the server (synchronous commit).
fn durable_appends(cluster: &Cluster, append: &Path, pg_append: &Path, file: &Path) -> Result<(f64, f64)> {
    eprintln!("== durable appends");
    let url = cluster.database("bench_appends")?;
    let rate = |c: &mut Command| -> Result<f64> {
        let out = c.output().context("running an append example")?;
        if !out.status.success() {
            bail!("append example failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let v: Value = serde_json::from_slice(&out.stdout).context("append example output")?;
        Ok(v.get("appends_per_sec").and_then(Value::as_f64).unwrap_or(0.0))
    };
    let on_file = rate(Command::new(append).arg(file).arg(APPENDS).arg("--fsync"))?;
    let on_server = rate(Command::new(pg_append).arg(&url).arg(file).arg(APPENDS).arg("--fsync"))?;
    eprintln!("  file {on_file:.0}/s, server {on_server:.0}/s");
    Ok((on_file, on_server))
}

/// `context --json` of `file` and of the same session on the server, by scan and by index.
fn open_and_context(
    root: &Path,
    cluster: &Cluster,
    arbor: &Path,
    file: &Path,
    work: &Path,
    runs: usize,
) -> Result<Vec<(&'static str, Measured, Measured)>> {
    eprintln!("== open + context --json of {}", file.display());
    let url = cluster.database("bench_open")?;
    let pushed = Command::new(arbor).arg("push").arg(file).arg("--to").arg(&url).output()?;
    if !pushed.status.success() {
        bail!("arbor push failed: {}", String::from_utf8_lossy(&pushed.stderr));
    }
    let name = format!(
        "/{}/{}",
        file.parent().and_then(Path::file_name).unwrap_or_default().to_string_lossy(),
        file.file_name().unwrap_or_default().to_string_lossy()
    );
    let cache = work.join("cache");
    let cache = cache.to_string_lossy();
    let on_file =
        |label| BenchCmd::new(label, [arbor.as_os_str(), "context".as_ref(), file.as_os_str(), "--json".as_ref()]);
    let on_server = |label| {
        BenchCmd::new(
            label,
            [
                arbor.as_os_str(),
                "--store".as_ref(),
                url.as_ref(),
                "context".as_ref(),
                OsString::from(&name).as_os_str(),
                "--json".as_ref(),
            ],
        )
    };
    let mut out = vec![];
    for (label, indexed) in [("scan", false), ("index", true)] {
        let (f, s) = if indexed {
            (
                on_file("file, index").with_env("ARBOR_CACHE_DIR", &cache),
                on_server("server, index").with_env("ARBOR_CACHE_DIR", &cache),
            )
        } else {
            (
                on_file("file, scan").with_env("ARBOR_NO_INDEX", "1"),
                on_server("server, scan").with_env("ARBOR_NO_INDEX", "1"),
            )
        };
        if indexed {
            // The indexed rows measure reopening an unchanged session: build its index first.
            bench_command(root, &f, 1)?;
            bench_command(root, &s, 1)?;
        }
        out.push((label, bench_command(root, &f, runs)?, bench_command(root, &s, runs)?));
    }
    Ok(out)
}

/// One read (or one small write) measured on the file and on the server.
struct Read {
    what: &'static str,
    target: &'static str,
    /// The server's time limit from the file's time (s).
    time_limit: fn(f64) -> f64,
    /// The server's peak memory limit (MB).
    rss_limit: Option<f64>,
    file: Measured,
    server: Measured,
}

impl Read {
    fn time_limit(&self, file: f64) -> f64 {
        (self.time_limit)(file)
    }
}

/// A read's name, its target in words, its time and memory limits, and its arguments.
type ReadRow<'a> = (&'static str, &'static str, fn(f64) -> f64, Option<f64>, &'a [&'a str]);

/// The row of a first open on a machine: no index in the cache.
const COLD: &str = "context --json, no index cache";
/// The row of `tree --json` read from the server whole each time, without
/// a local copy: shown beside the target, not held to it.
const NO_COPY: &str = "tree --json, no local copy";

/// The id of the last entry of `file` (what `label` labels).
fn last_id(file: &Path) -> Result<String> {
    use std::io::{Read as _, Seek, SeekFrom};
    let mut f = fs::File::open(file)?;
    let len = f.metadata()?.len();
    let tail = len.min(1 << 20);
    f.seek(SeekFrom::Start(len - tail))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    let last = buf.trim_ascii_end().rsplit(|&b| b == b'\n').next().unwrap_or_default();
    let v: Value = serde_json::from_slice(last).context("the session's last line")?;
    Ok(v.get("id").and_then(Value::as_str).context("the last line has no id")?.to_owned())
}

/// `context --json`, `label` and `tree --json` of the N-entry session, the
/// file and the same session on the server, each with its index in the
/// cache (built by a first run): the issue's read targets.
fn reads(root: &Path, cluster: &Cluster, arbor: &Path, big: &Path, work: &Path, runs: usize) -> Result<Vec<Read>> {
    eprintln!("== reads of {}", big.display());
    let dir = work.join("reads/--bench-reads--");
    fs::create_dir_all(&dir)?;
    let file = dir.join(big.file_name().context("the session has no name")?);
    fs::copy(big, &file).context("copying the session")?;
    let url = cluster.database("bench_reads")?;
    let pushed = Command::new(arbor).arg("push").arg(&file).arg("--to").arg(&url).output()?;
    if !pushed.status.success() {
        bail!("arbor push failed: {}", String::from_utf8_lossy(&pushed.stderr));
    }
    let name = format!("/--bench-reads--/{}", file.file_name().unwrap_or_default().to_string_lossy());
    let id = last_id(&file)?;
    let cache = work.join("reads-cache").to_string_lossy().into_owned();
    let cmd = |label: &str, store: bool, args: &[&str]| {
        let mut argv: Vec<OsString> = vec![arbor.into()];
        if store {
            argv.extend(["--store".into(), OsString::from(&url)]);
        }
        let session: OsString = if store { name.clone().into() } else { file.clone().into() };
        argv.push(args[0].into());
        argv.push(session);
        argv.extend(args[1..].iter().map(OsString::from));
        BenchCmd::new(label, argv).with_env("ARBOR_CACHE_DIR", &cache)
    };
    let label_args = ["label", id.as_str(), "bench"];
    let rows: [ReadRow; 5] = [
        ("context --json", "≤ 3× file + 50 ms, ≤ 50 MB", |f| 3.0 * f + 0.05, Some(50.0), &["context", "--json"]),
        (COLD, "≤ 3× file + 50 ms, ≤ 50 MB", |f| 3.0 * f + 0.05, Some(50.0), &["context", "--json"]),
        ("label (one append)", "≤ 100 ms, ≤ 50 MB", |_| 0.1, Some(50.0), &label_args),
        (NO_COPY, "none: the server's own speed", |_| f64::NAN, None, &["tree", "--json"]),
        ("tree --json", "≤ 2× file", |f| 2.0 * f, None, &["tree", "--json"]),
    ];
    // What a run before left: the context rows read from the server, and the last row's copy is made by its first run.
    let copies = work.join("reads-cache/copies");
    if copies.exists() {
        fs::remove_dir_all(&copies).context("removing the local copies of an earlier run")?;
    }
    let mut out = vec![];
    for (what, target, time_limit, rss_limit, args) in rows {
        let (mut f, mut s) = (cmd(&format!("file {what}"), false, args), cmd(&format!("server {what}"), true, args));
        if what == COLD {
            // No index in the cache: a file is scanned, a session on the server read through the index it
            // keeps (and no local copy of it).
            (f, s) = (f.with_env("ARBOR_NO_INDEX", "1"), s.with_env("ARBOR_NO_INDEX", "1"));
            s = s.with_env("ARBOR_STORE_COPIES_MB", "0");
        }
        if what == NO_COPY {
            s = s.with_env("ARBOR_STORE_COPIES_MB", "0");
        }
        // The index made (and, after a write, extended) by a first run.
        bench_command(root, &f, 1)?;
        bench_command(root, &s, 1)?;
        out.push(Read {
            what,
            target,
            time_limit,
            rss_limit,
            file: bench_command(root, &f, runs)?,
            server: bench_command(root, &s, runs)?,
        });
    }
    Ok(out)
}

/// What the push rows measured.
struct PushRows {
    mb: f64,
    entries: usize,
    rows: Vec<(String, Duration)>,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Times one run of a command that must succeed.
fn timed(c: &mut Command) -> Result<Duration> {
    let start = Instant::now();
    let out = c.output().context("running a bench command")?;
    if !out.status.success() {
        bail!("{c:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(start.elapsed())
}

/// Push of a generated store to empty databases, again, pull --all, and `cp -r`.
fn push_and_pull(root: &Path, cluster: &Cluster, arbor: &Path, work: &Path, o: &PgOpts) -> Result<PushRows> {
    let sessions = root
        .join("target")
        .join(format!("bench-data/pg-store-{}-{}-{}-seed{}", o.sessions, o.sizes.min, o.sizes.max, o.seed));
    let sessions = if sessions.is_dir() {
        sessions
    } else {
        eprintln!("== generating {} sessions in {}", o.sessions, sessions.display());
        store::write_store(&sessions, o.sessions, o.seed, o.sizes)?;
        sessions
    };
    let stats = dir_stats(&sessions)?;
    eprintln!("== push of {} sessions ({:.0} MB)", stats.0, stats.1 as f64 / 1e6);
    let runs = o.runs.max(1);
    let (mut push, mut pull, mut copy) = (vec![], vec![], vec![]);
    let mut last_url = String::new();
    for i in 0..runs {
        let url = cluster.database(&format!("bench_push_{i}"))?;
        push.push(timed(Command::new(arbor).arg("push").arg(&sessions).arg("--to").arg(&url))?);
        let into = work.join(format!("pulled-{i}"));
        let _ = fs::remove_dir_all(&into);
        pull.push(timed(Command::new(arbor).args(["--store", &url, "pull", "--all", "--to"]).arg(&into))?);
        let copied = work.join(format!("copied-{i}"));
        let _ = fs::remove_dir_all(&copied);
        copy.push(timed(Command::new("cp").arg("-r").arg(&sessions).arg(&copied))?);
        eprintln!("  run {}/{runs}: push {:?}, pull {:?}, cp {:?}", i + 1, push[i], pull[i], copy[i]);
        last_url = url;
    }
    let again: Vec<Duration> = (0..runs)
        .map(|_| timed(Command::new(arbor).arg("push").arg(&sessions).arg("--to").arg(&last_url)))
        .collect::<Result<_>>()?;
    let entries = stats.2;
    Ok(PushRows {
        mb: stats.1 as f64 / 1e6,
        entries,
        rows: vec![
            ("arbor push (to an empty database)".into(), median(push)),
            ("arbor push again (every session unchanged)".into(), median(again)),
            ("arbor pull --all (into an empty folder)".into(), median(pull)),
            ("cp -r of the same files (yardstick)".into(), median(copy)),
        ],
    })
}

/// Files, bytes and lines under `dir`.
fn dir_stats(dir: &Path) -> Result<(usize, u64, usize)> {
    let mut stack = vec![dir.to_owned()];
    let (mut files, mut bytes, mut lines) = (0, 0, 0);
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).with_context(|| d.display().to_string())? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let b = fs::read(&p)?;
                files += 1;
                bytes += b.len() as u64;
                lines += b.iter().filter(|&&c| c == b'\n').count().saturating_sub(1);
            }
        }
    }
    Ok((files, bytes, lines))
}
