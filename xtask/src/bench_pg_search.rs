//! `cargo xtask bench --store N --pg`: `arbor search` on a PostgreSQL server
//! (`--store`) beside the same search on the files and ripgrep, in one run,
//! on the generated store of N sessions (the `--store` bench's), pushed to a
//! throwaway cluster (`.ci/pg-cluster`, in `target/bench-pg-search/`) that
//! the bench starts and stops.
//!
//! Rows, each run for run (server, files, `rg`), so all see the same load:
//!
//! - the push of the store (once; every write keeps its gram filters);
//! - searches with the filters in place, on the server and on the files
//!   (their catalog and filters built by an untimed first search): a common
//!   word, a literal only the oldest session holds, a word of a few
//!   sessions, a phrase and a `re:` pattern;
//! - on the server, the literal of the oldest session when the sessions have
//!   no filters (as sessions pushed before migration 5: `arbor.filters`
//!   emptied before each run): the whole store is read from the server, and
//!   its filters are built and kept;
//! - the size of `arbor.filters` beside the sessions' bytes.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::bench_pg::Cluster;
use crate::bench_store::{self, StoreOpts};
use crate::measure::{bench_command, BenchCmd, Measured};
use crate::store;

/// A common word (in nearly every session) and a phrase: the `--store` bench's.
const COMMON: &str = "session";
const PHRASE: &str = "root leaf";

/// One search timed on the server, on the files, and with `rg`.
struct Row {
    what: String,
    server: Measured,
    files: Option<Measured>,
    rg: Option<Measured>,
}

/// How the commands are made.
struct Setup<'a> {
    root: &'a Path,
    arbor: &'a Path,
    sessions: &'a Path,
    cache: &'a Path,
    url: &'a str,
    runs: usize,
}

impl Setup<'_> {
    fn server(&self, query: &str) -> BenchCmd {
        let argv: Vec<OsString> = vec![
            self.arbor.into(),
            "--store".into(),
            self.url.into(),
            "search".into(),
            "--all".into(),
            "--limit".into(),
            "20".into(),
            "--".into(),
            query.into(),
        ];
        BenchCmd::new(&format!("server: arbor --store URL search {query}"), argv)
            .with_env("ARBOR_CACHE_DIR", &self.cache.to_string_lossy())
    }

    fn files(&self, query: &str) -> BenchCmd {
        let argv: Vec<OsString> = vec![
            self.arbor.into(),
            "search".into(),
            "--all".into(),
            "--sessions-dir".into(),
            self.sessions.into(),
            "--limit".into(),
            "20".into(),
            "--".into(),
            query.into(),
        ];
        BenchCmd::new(&format!("files: arbor search {query}"), argv)
            .with_env("ARBOR_CACHE_DIR", &self.cache.to_string_lossy())
    }

    /// `rg -F -l` for a literal, `rg -i -l` for a regex (`re:` is case-insensitive).
    fn rg(&self, pattern: &str, literal: bool) -> BenchCmd {
        let mut argv: Vec<OsString> = vec!["rg".into(), "-l".into(), "--no-messages".into()];
        argv.push(if literal { "-F" } else { "-i" }.into());
        argv.extend(["-e".into(), pattern.into(), self.sessions.into()]);
        BenchCmd::new(&format!("rg -l {pattern}"), argv).exiting_up_to(1).capturing()
    }

    /// The three commands run for run (`before` untimed before each server run).
    fn row(
        &self,
        what: String,
        server: BenchCmd,
        files: Option<BenchCmd>,
        rg: Option<BenchCmd>,
        runs: usize,
        before: Option<&dyn Fn() -> Result<()>>,
    ) -> Result<Row> {
        let (mut s, mut f, mut r) = (vec![], vec![], vec![]);
        for _ in 0..runs {
            if let Some(before) = before {
                before()?;
            }
            s.push(bench_command(self.root, &server, 1)?.runs.remove(0));
            if let Some(c) = &files {
                f.push(bench_command(self.root, c, 1)?.runs.remove(0));
            }
            if let Some(c) = &rg {
                r.push(bench_command(self.root, c, 1)?.runs.remove(0));
            }
        }
        Ok(Row {
            what,
            server: Measured { cmd: server, runs: s },
            files: files.map(|cmd| Measured { cmd, runs: f }),
            rg: rg.map(|cmd| Measured { cmd, runs: r }),
        })
    }
}

/// `psql URL -Atc SQL`'s answer.
fn psql(url: &str, sql: &str) -> Result<String> {
    let out = Command::new("psql").args([url, "-Atc", sql]).output().context("running psql")?;
    if !out.status.success() {
        bail!("psql failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

pub fn run(root: &Path, arbor: &Path, target: &Path, o: &StoreOpts) -> Result<()> {
    let dir = bench_store::cached_store(target, o)?;
    let sessions = dir.join("sessions");
    let (files, bytes) = bench_store::warm(&sessions)?;
    let work = target.join("bench-pg-search");
    let cache = work.join("cache");
    let _ = std::fs::remove_dir_all(&cache);
    let cluster = Cluster::start(root, &work.join("cluster"))?;
    eprintln!("== PostgreSQL {} at {}", cluster.server_version(), cluster.url);
    let url = cluster.database("bench_search")?;
    eprintln!("== pushing {files} sessions ({:.0} MB)", bytes as f64 / 1e6);
    let start = Instant::now();
    let pushed = Command::new(arbor).arg("push").arg(&sessions).arg("--to").arg(&url).output()?;
    if !pushed.status.success() {
        bail!("arbor push failed: {}", String::from_utf8_lossy(&pushed.stderr));
    }
    let push = start.elapsed();
    let s = Setup { root, arbor, sessions: &sessions, cache: &cache, url: &url, runs: o.runs };
    let rare = store::oldest_only_literal(o.sessions, o.seed, o.sizes)?;
    let rare2 = store::topic_word(41);
    let regex = format!("{}[a-z]{}", &rare2[..2], &rare2[3..]);
    // The files' catalog and filters, built once (untimed), as the server's were by the push.
    eprintln!("== building the files' catalog and filters");
    bench_command(root, &s.files(&rare), 1)?;
    let phrase = format!("\"{PHRASE}\"");
    let queries: [(&str, String, String, bool); 5] = [
        ("a common word", COMMON.to_owned(), COMMON.to_owned(), true),
        ("a literal of the oldest session only", rare.clone(), rare.clone(), true),
        ("a word of a few sessions", rare2.clone(), rare2, true),
        ("a phrase", phrase, PHRASE.to_owned(), true),
        ("a pattern", format!("re:{regex}"), regex, false),
    ];
    let mut rows = vec![];
    for (what, query, pattern, literal) in &queries {
        eprintln!("== {what}: {query}");
        let what = format!("{what} (`{query}`), filters in place");
        rows.push(s.row(what, s.server(query), Some(s.files(query)), Some(s.rg(pattern, *literal)), s.runs, None)?);
    }
    eprintln!("== without filters on the server");
    let empty = || psql(&url, "TRUNCATE arbor.filters").map(drop);
    let what =
        format!("the oldest session's literal (`{rare}`), no filters on the server: reads the store, builds them");
    rows.push(s.row(what, s.server(&rare), None, Some(s.rg(&rare, true)), 1, Some(&empty))?);
    let filters: u64 = psql(&url, "SELECT pg_total_relation_size('arbor.filters')")?.parse().unwrap_or(0);
    let lines: u64 = psql(&url, "SELECT pg_total_relation_size('arbor.lines')")?.parse().unwrap_or(0);
    report(o, files, bytes, push.as_secs_f64(), &rows, filters, lines);
    Ok(())
}

fn report(o: &StoreOpts, files: usize, bytes: u64, push: f64, rows: &[Row], filters: u64, lines: u64) {
    println!();
    println!(
        "Search on the server beside the files and rg: {files} sessions ({:.0} MB; --store {} --store-entries {}-{}), one run",
        bytes as f64 / 1e6,
        o.sessions,
        o.sizes.min,
        o.sizes.max
    );
    println!();
    println!("arbor push of the store (filters kept by the writes): {push:.1} s");
    println!();
    println!(
        "| search | server (median) | files (median) | rg (median) | server / files | server / rg | server runs (s) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---|");
    let med = |m: &Measured| m.median().as_secs_f64();
    let ratio = |a: f64, b: Option<f64>| b.filter(|b| *b > 0.0).map_or("-".to_owned(), |b| format!("{:.2}×", a / b));
    for r in rows {
        let (sv, f, g) = (med(&r.server), r.files.as_ref().map(med), r.rg.as_ref().map(med));
        let runs = r.server.runs.iter().map(|x| format!("{:.3}", x.wall.as_secs_f64())).collect::<Vec<_>>().join(" ");
        println!(
            "| {} | {sv:.3} s | {} | {} | {} | {} | {runs} |",
            r.what,
            f.map_or("-".to_owned(), |f| format!("{f:.3} s")),
            g.map_or("-".to_owned(), |g| format!("{g:.3} s")),
            ratio(sv, f),
            ratio(sv, g),
        );
    }
    println!(
        "| derived data on the server: `arbor.filters` | {:.1} MB | | | {:.1}% of `arbor.lines` ({:.0} MB) | | |",
        filters as f64 / 1e6,
        filters as f64 * 100.0 / lines.max(1) as f64,
        lines as f64 / 1e6
    );
}
