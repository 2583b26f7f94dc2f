//! The search rows of `cargo xtask bench --store N`: `arbor search` on the
//! store beside ripgrep (`rg`) on the same files, in one run, and the
//! issue's targets checked against them.
//!
//! Every arbor row is paired with the `rg` command that finds the same
//! thing (`rg -F -l` for a literal, `rg -i -l` for a regex: `re:` is
//! case-insensitive), timed right after it, run for run, so both see the
//! same page cache and the same load. Rows:
//!
//! - the first search of a store (the catalog is deleted and the listing
//!   rebuilt, untimed, before each run): a common word (the first hits are
//!   in the newest sessions: it stops early), then a literal only the oldest
//!   session holds (a topic word of its own, else its id: every file is read
//!   and the search filters built);
//! - searches again (the filters in place): the same literal, a word of a
//!   few sessions, the common word, a phrase, and a `re:` pattern;
//! - the catalog's size (listing and filters) beside the store's.

use std::ffi::OsString;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use crate::measure::{bench_command, BenchCmd, Measured};
use crate::store;

/// A common word (in nearly every session) and a phrase.
const COMMON: &str = "session";
const PHRASE: &str = "root leaf";

/// One arbor row and its ripgrep yardstick.
#[derive(Debug)]
pub struct Pair {
    pub arbor: Measured,
    pub rg: Option<Measured>,
    pub target: Target,
}

/// What a row must meet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// At most this many times ripgrep's time.
    TimesRg(f64),
    /// At most this many seconds.
    Seconds(f64),
}

/// How to run `arbor` and where the store is.
pub struct Setup<'a> {
    pub root: &'a Path,
    pub arbor: &'a Path,
    pub sessions: &'a Path,
    pub cache: &'a Path,
    pub runs: usize,
    /// A literal only the store's oldest session holds.
    pub oldest_only: String,
}

impl Setup<'_> {
    fn search(&self, label: &str, query: &str) -> BenchCmd {
        let argv: Vec<OsString> = vec![
            self.arbor.into(),
            "search".into(),
            "--all".into(),
            "--sessions-dir".into(),
            self.sessions.into(),
            "--limit".into(),
            "20".into(),
            query.into(),
        ];
        BenchCmd::new(label, argv).with_env("ARBOR_CACHE_DIR", &self.cache.to_string_lossy())
    }

    fn ls(&self) -> BenchCmd {
        let argv: Vec<OsString> =
            vec![self.arbor.into(), "ls".into(), "--all".into(), "--sessions-dir".into(), self.sessions.into()];
        BenchCmd::new("(listing)", argv).with_env("ARBOR_CACHE_DIR", &self.cache.to_string_lossy())
    }

    /// `rg` over the store: `-F -l` for a literal, `-i -l` for a regex.
    fn rg(&self, label: &str, pattern: &str, literal: bool) -> BenchCmd {
        let mut argv: Vec<OsString> = vec!["rg".into(), "-l".into(), "--no-messages".into()];
        argv.push(if literal { "-F" } else { "-i" }.into());
        argv.extend(["-e".into(), pattern.into(), self.sessions.into()]);
        // No match is exit 1: still a measurement.
        BenchCmd::new(label, argv).exiting_up_to(1).capturing()
    }
}

/// Runs `arbor` then `rg`, run for run; `before` runs (untimed) before each arbor run.
fn paired(
    s: &Setup,
    arbor: BenchCmd,
    rg: BenchCmd,
    before: Option<&dyn Fn() -> Result<()>>,
) -> Result<(Measured, Measured)> {
    let (mut a, mut r) = (vec![], vec![]);
    for _ in 0..s.runs {
        if let Some(f) = before {
            f()?;
        }
        a.push(bench_command(s.root, &arbor, 1)?.runs.remove(0));
        r.push(bench_command(s.root, &rg, 1)?.runs.remove(0));
    }
    Ok((Measured { cmd: arbor, runs: a }, Measured { cmd: rg, runs: r }))
}

/// True when `rg` is on the PATH.
fn have_rg() -> bool {
    std::process::Command::new("rg").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// The search rows (see the module docs).
pub fn rows(s: &Setup) -> Result<Vec<Pair>> {
    if !have_rg() {
        anyhow::bail!("the search rows need ripgrep (`rg`) on the PATH: apt-get install ripgrep");
    }
    let rare = s.oldest_only.clone();
    let rare2 = store::topic_word(41);
    let regex = format!("{}[a-z]{}", &rare2[..2], &rare2[3..]);
    let fresh = || -> Result<()> {
        let _ = fs::remove_dir_all(s.cache);
        bench_command(s.root, &s.ls(), 1).map(|_| ())
    };
    let mut out = vec![];
    let first = |word: &str, what: &str| -> Result<Pair> {
        let (arbor, rg) = paired(
            s,
            s.search(&format!("arbor search {word} (first search: {what})"), word),
            s.rg(&format!("rg -F -l {word}"), word, true),
            Some(&fresh),
        )?;
        Ok(Pair { arbor, rg: Some(rg), target: Target::TimesRg(2.0) })
    };
    out.push(first(COMMON, "a common word, no filters")?);
    // The last of these runs leaves every filter built.
    out.push(first(&rare, "a literal of the oldest session only: reads every file, builds the filters")?);
    let again = |label: String, query: &str, rg: BenchCmd, target: Target| -> Result<Pair> {
        let (arbor, rg) = paired(s, s.search(&label, query), rg, None)?;
        Ok(Pair { arbor, rg: Some(rg), target })
    };
    out.push(again(
        format!("arbor search {rare} (again)"),
        &rare,
        s.rg(&format!("rg -F -l {rare}"), &rare, true),
        Target::Seconds(0.1),
    )?);
    out.push(again(
        format!("arbor search {rare2} (again: a word of a few sessions)"),
        &rare2,
        s.rg(&format!("rg -F -l {rare2}"), &rare2, true),
        Target::Seconds(0.1),
    )?);
    out.push(again(
        format!("arbor search {COMMON} (again)"),
        COMMON,
        s.rg(&format!("rg -F -l {COMMON}"), COMMON, true),
        Target::Seconds(0.1),
    )?);
    let phrase = format!("\"{PHRASE}\"");
    out.push(again(
        format!("arbor search {phrase} (again)"),
        &phrase,
        s.rg(&format!("rg -F -l '{PHRASE}'"), PHRASE, true),
        Target::Seconds(0.1),
    )?);
    out.push(again(
        format!("arbor search re:{regex}"),
        &format!("re:{regex}"),
        s.rg(&format!("rg -i -l '{regex}'"), &regex, false),
        Target::TimesRg(2.0),
    )?);
    Ok(out)
}

/// Prints the rows beside ripgrep, then the targets.
pub fn report(pairs: &[Pair], store_bytes: u64, catalog_bytes: u64) {
    println!();
    println!("| what | arbor (median) | rg (median) | arbor / rg | target | met? | arbor runs (s) | rg runs (s) |");
    println!("|---|---:|---:|---:|---|---|---|---|");
    let runs =
        |m: &Measured| m.runs.iter().map(|r| format!("{:.3}", r.wall.as_secs_f64())).collect::<Vec<_>>().join(" ");
    for p in pairs {
        let a = p.arbor.median().as_secs_f64();
        let r = p.rg.as_ref().map(|m| m.median().as_secs_f64());
        let ratio = r.filter(|r| *r > 0.0).map(|r| a / r);
        let (target, met) = match p.target {
            Target::TimesRg(x) => (format!("≤ {x}× rg"), ratio.map(|q| q <= x)),
            Target::Seconds(x) => (format!("≤ {:.0} ms", x * 1000.0), Some(a <= x)),
        };
        println!(
            "| {} | {:.3} s | {} | {} | {target} | {} | {} | {} |",
            p.arbor.cmd.label,
            a,
            r.map_or("-".to_owned(), |r| format!("{r:.3} s")),
            ratio.map_or("-".to_owned(), |q| format!("{q:.2}×")),
            met.map_or("-", |m| if m { "yes" } else { "no" }),
            runs(&p.arbor),
            p.rg.as_ref().map_or("-".to_owned(), runs),
        );
    }
    let share = catalog_bytes as f64 / store_bytes.max(1) as f64;
    println!(
        "| derived data: the catalog (listing and search filters) | {:.1} MB | store {:.0} MB | {:.1}% | ≤ 10% | {} | | |",
        catalog_bytes as f64 / 1e6,
        store_bytes as f64 / 1e6,
        share * 100.0,
        if share <= 0.10 { "yes" } else { "no" }
    );
}

/// Bytes of the files under `dir` (0 when it does not exist).
pub fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let rd = match fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", d.display())),
        };
        for e in rd {
            let e = e?;
            let t = e.file_type()?;
            if t.is_dir() {
                stack.push(e.path());
            } else {
                total += e.metadata()?.len();
            }
        }
    }
    Ok(total)
}
