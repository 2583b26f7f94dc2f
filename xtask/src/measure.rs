//! Timing one command line, run for run ([`BenchCmd`], [`bench_command`]):
//! wall time and peak memory of each run, the median; and the generated
//! sessions every bench shares ([`cached_session`]).

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::gen::{self, GenOptions, GEN_VERSION};
use crate::rusage::{run_measured, Run};

/// A megabyte, as the tables print sizes.
pub(crate) const MB: f64 = 1_000_000.0;

/// One row of the table: a command line to run `runs` times.
#[derive(Debug, Clone)]
pub struct BenchCmd {
    pub label: String,
    pub argv: Vec<OsString>,
    /// Capture stdout (for commands that report numbers); otherwise it goes to /dev/null.
    pub capture_stdout: bool,
    /// Extra environment variables for the command.
    pub env: Vec<(String, String)>,
    /// The highest exit code that still counts as success (`arbor check` exits 1 or 2 on findings).
    pub max_exit: i32,
}

impl BenchCmd {
    pub fn new<I, S>(label: &str, argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        BenchCmd {
            label: label.to_owned(),
            argv: argv.into_iter().map(Into::into).collect(),
            capture_stdout: false,
            env: Vec::new(),
            max_exit: 0,
        }
    }

    pub fn exiting_up_to(mut self, code: i32) -> Self {
        self.max_exit = code;
        self
    }

    pub fn capturing(mut self) -> Self {
        self.capture_stdout = true;
        self
    }

    pub fn with_env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }
}

/// All runs of one command.
#[derive(Debug)]
pub struct Measured {
    pub cmd: BenchCmd,
    pub runs: Vec<Run>,
}

impl Measured {
    pub fn median(&self) -> Duration {
        let mut t: Vec<Duration> = self.runs.iter().map(|r| r.wall).collect();
        t.sort();
        median(&t)
    }

    pub fn peak_rss_kib(&self) -> u64 {
        self.runs.iter().map(|r| r.max_rss_kib).max().unwrap_or(0)
    }

    pub(crate) fn last_stdout(&self) -> &[u8] {
        self.runs.last().map_or(&[][..], |r| &r.stdout)
    }
}

fn median(sorted: &[Duration]) -> Duration {
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

/// Runs `cmd` `runs` times from `dir`, failing if any run fails.
pub fn bench_command(dir: &Path, cmd: &BenchCmd, runs: usize) -> Result<Measured> {
    let Some((program, args)) = cmd.argv.split_first() else { bail!("{}: empty command line", cmd.label) };
    let mut out = Vec::with_capacity(runs);
    for i in 0..runs {
        let mut c = Command::new(program);
        c.args(args).current_dir(dir).envs(cmd.env.iter().map(|(k, v)| (k, v)));
        let run = run_measured(&mut c, cmd.capture_stdout).with_context(|| format!("running {}", cmd.label))?;
        if !run.status.code().is_some_and(|c| (0..=cmd.max_exit).contains(&c)) {
            bail!("{} failed ({})", cmd.label, run.status);
        }
        eprintln!(
            "  {} run {}/{}: {:.3} s, {:.1} MB peak",
            cmd.label,
            i + 1,
            runs,
            secs(run.wall),
            kib_to_mb(run.max_rss_kib)
        );
        out.push(run);
    }
    Ok(Measured { cmd: cmd.clone(), runs: out })
}

pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

pub(crate) fn kib_to_mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / MB
}

/// The generated session for `opts` under `target/bench-data/`, generating it if missing.
pub fn cached_session(target: &Path, opts: GenOptions) -> Result<PathBuf> {
    let dir = target.join("bench-data");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path =
        dir.join(format!("session-{}-{}-seed{}-gen{GEN_VERSION}.jsonl", opts.shape.name(), opts.entries, opts.seed));
    if path.is_file() {
        eprintln!("== using cached {}", path.display());
    } else {
        eprintln!("== generating {} ({} entries, {} shape)", path.display(), opts.entries, opts.shape.name());
        gen::write_file(&path, opts)?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        let d = |ms| Duration::from_millis(ms);
        assert_eq!(median(&[d(1), d(5), d(9)]), d(5));
        assert_eq!(median(&[d(1), d(3)]), d(2));
        assert_eq!(median(&[]), Duration::ZERO);
    }
}
