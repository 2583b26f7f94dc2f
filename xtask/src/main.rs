//! `cargo xtask`: the workspace's automation, as plain Rust.
//!
//! Commands: `tidy` (layering, tokio and crate-hygiene checks over
//! `cargo metadata`), `gen-session` (deterministic synthetic pi v3 session
//! files), `bench` (end-to-end parse benchmark with yardsticks), `fuzz` (bounded
//! cargo-fuzz runs), `pi` (the reference implementation's npm package, installed
//! into a cache directory, and node scripts run against it), `ccusage` (the
//! usage yardstick, installed the same way), `py` (the Python package's wheel, built and tested in
//! venvs) and `ci` (runs `.ci/run`). It depends on no workspace crate, so it still builds and checks
//! while a library is broken.

mod bench;
mod bench_append;
mod bench_html;
mod bench_mcp;
mod bench_pg;
mod bench_pg_search;
mod bench_search;
mod bench_store;
mod bench_targets;
mod bench_tui;
mod bench_usage;
mod ccusage;
mod fuzz;
mod gen;
mod mcp_clients;
mod measure;
mod npm;
mod pi;
mod pi_diff;
mod py;
mod rusage;
mod semver;
mod store;
mod tidy;

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use serde_json::Value;

const HELP: &str = "\
usage: cargo xtask <command> [options]

commands:
  tidy                              check the crate chain, tokio-freedom of the lower crates,
                                    `[lints] workspace = true`, `//!` crate docs, and that the
                                    CLI's command modules import no other command module
  gen-session OUT ENTRIES [SEED]    write a synthetic pi v3 session (deterministic per seed)
      --small                       ~450-byte entries with a deep active path (use with ~1000000)
  gen-store ROOT SESSIONS [SEED]    write a store of synthetic sessions in pi's layout (50 to 2,000
                                    entries each, ~1.5 MB on average; deterministic per seed)
      --entries MIN-MAX             entries per session instead (log-uniformly between the two)
  bench [options]                   release-build arbor and `arbor-log`'s `scan` example and time
                                    `arbor context/tree --json` and the light scan on a generated
                                    session, next to wc/cat/python yardsticks
      --all                         the issue's set: 10k and 100k realistic, 1M small
      --huge                        add 1M realistic entries (~3 GB on disk, generated once)
      --full-scan                   also time the full-decode scan (SessionLog::read)
      --quick                       10k entries instead of 100k (100k instead of 1M with --small)
      --entries N                   number of entries to generate
      --small                       use the small-entry, deep-path shape
      --html N                      arbor export --format html beside pi --export (time, page size) on
                                    the demo and generated 10k and N-entry sessions, and the time
                                    headless Chromium takes to draw the first view of each page
      --seed S                      generator seed (default 7)
      --runs R                      runs per command (default 3; the median is reported)
      --file PATH                   bench an existing file instead of a generated one
      --cmd 'LABEL=PROGRAM ARG…'    add a row; `{file}` in an argument is replaced by the file
      --no-yardsticks               skip wc, cat and python
      --store N                     instead: list and search a generated store of N sessions with
                                    arbor ls/search (the catalog), next to pi's SessionManager.listAll()
      --store-entries MIN-MAX       entries per store session (default 50-2000)
      --no-pi                       skip pi's listAll in the store bench
      --baseline ARBOR              the store bench also times ARBOR's first listing, run for run
      --no-search                   the store bench times the listings only
      --pg                          instead: sessions on a PostgreSQL server beside files, on a
                                    throwaway cluster (.ci/pg-cluster): durable appends/s, open +
                                    context --json of a --entries session (default 100k), push of
                                    --pg-sessions N sessions (default 1000; --store-entries sizes,
                                    default 20-400), push again, pull --all, next to cp -r
                                    With --store N: instead, arbor search on the server (the store
                                    pushed to a throwaway cluster) beside the files and rg
      --tui                         instead: the tree selector through its state machine and view, no
                                    terminal (first frame, reading, move, fold, filter switch, each
                                    search keystroke), and the chat's first screen (no model), with
                                    and without the index, next to wc -l, on --file or a generated
                                    realistic session (100k; 1M with --huge)
      --usage [N]                   instead: arbor usage daily on a generated store of N sessions (default
                                    1000, ~1.5 GB): the first report, again unchanged, after one session
                                    grew; next to ccusage pi daily --offline, with issue 36's targets
      --mcp                         instead: `arbor mcp` through the MCP Python SDK: read_context
                                    (budget 20,000) on a 100k session, search_sessions on a 1,000-
                                    session store, cold then --runs warm calls (median)
      --append                      instead: only the append rows (one `arbor label` to a copy of a
                                    1k, the 100k and, with --huge, the 1M session: the first append,
                                    then appends through the index; time, CPU, peak RSS, ratios to the
                                    1k); --all and --huge print them too
  ci                                run .ci/run (what CI runs)
  pi [SCRIPT.mjs [ARGS…]]           install pi's npm package (the reference, 0.73.1) into the cache
                                    (ARBOR_PI_DIR, else ~/.cache/arbor-dev/pi-0.73.1) and print where;
                                    with a script, run it under node with the package importable
  ccusage [ARGS…]                   install ccusage's npm package (the usage yardstick, 20.0.24) into the
                                    cache (ARBOR_CCUSAGE_DIR, else ~/.cache/arbor-dev/ccusage-20.0.24) and
                                    print its command; with arguments, run it with them
  mcp-clients                       install the MCP clients the tests of `arbor mcp` drive into the
                                    cache: PyPI's mcp 1.26.0 in a venv (ARBOR_PY_MCP_DIR, else
                                    ~/.cache/arbor-dev/py-mcp-1.26.0) and the npm MCP inspector 0.17.2;
                                    print the venv's python and the inspector's cli.js, one a line
  pi-diff [options]                 the differential test: generate session files and compare Arbor's
                                    dump/tree/path/context/--llm/fork --at with pi's own answers
      --files N                     how many files (default 500)
      --seed S                      the generator's seed (default: a new one, printed)
      --only INDEX                  only file INDEX of the seed's run (to reproduce one file)
      --file PATH…                  also compare these files, at every entry (alone, without
                                    --files, only these)
      --arbor BIN                   the arbor binary (default: cargo build -p arbor-cli, dev profile)
      --keep                        keep the files under target/pi-diff/ even when all agree
  py build                          build the Python package's wheel (crates/arbor-py; maturin, pinned,
                                    installed on first use into ~/.cache/arbor-dev/py-build-*) into
                                    ~/.cache/arbor-dev/py/<checkout>/wheel/ and print its path
  py test [--arbor BIN]             the wheel in a fresh venv (in the cache) that sees pinned pytest and
                                    pandas: pytest over crates/arbor-py/tests against BIN (default: the
                                    dev build of arbor), then the example over 1,000 generated sessions
  semver [--baseline REV]           cargo semver-checks (0.51.0, installed on first use into the cache)
                                    over every crate published to crates.io, against REV, else the last
                                    vX.Y.Z tag, else (a report that never fails) the merge base with main
  fuzz [options]                    run each cargo-fuzz target in fuzz/ (installs cargo-fuzz) on its
                                    kept corpus (fuzz/corpus/) plus seeds, with its dictionary
      --seconds N                   for N seconds each (default 60)
      --runs N                      for N executions each instead
      --target T                    only target T
      --minimize                    replace the kept corpus with the merged, minimized one
      --asan                        build with AddressSanitizer (default: no sanitizer)
";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("tidy") => tidy::run(&workspace_root()?),
        Some("gen-session") => gen::cli(rest),
        Some("gen-store") => gen_store(rest),
        Some("bench") => bench::cli(&workspace_root()?, rest),
        Some("ci") => ci(&workspace_root()?),
        Some("fuzz") => fuzz::cli(&workspace_root()?, rest),
        Some("pi") => pi_cmd(rest),
        Some("ccusage") => ccusage::cli(rest),
        Some("mcp-clients") => mcp_clients::cli(),
        Some("pi-diff") => pi_diff::cli(&workspace_root()?, rest),
        Some("py") => py::cli(&workspace_root()?, rest),
        Some("semver") => semver::cli(&workspace_root()?, rest),
        Some("help" | "-h" | "--help") | None => {
            print!("{HELP}");
            Ok(())
        }
        Some(other) => bail!("unknown command {other:?}\n\n{HELP}"),
    }
}

/// The workspace root: xtask lives one level below it.
fn workspace_root() -> Result<PathBuf> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().context("xtask has no parent directory")?;
    Ok(root.to_path_buf())
}

/// The `cargo` that runs us (cargo sets `CARGO` for `cargo run`), or the one on PATH.
fn cargo() -> Command {
    Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Runs `cargo metadata --format-version 1` in `root` and parses its output.
fn cargo_metadata(root: &Path, no_deps: bool) -> Result<Value> {
    let mut cmd = cargo();
    cmd.args(["metadata", "--format-version", "1"]).current_dir(root);
    if no_deps {
        cmd.arg("--no-deps");
    }
    let out = cmd.output().context("running cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    }
    serde_json::from_slice(&out.stdout).context("parsing cargo metadata output")
}

/// `cargo xtask pi [SCRIPT [ARGS…]]`: install the reference and print where, or run a script against it.
fn pi_cmd(args: &[String]) -> Result<()> {
    let dir = pi::ensure_pi()?;
    let Some((script, rest)) = args.split_first() else {
        println!("{}", dir.display());
        return Ok(());
    };
    let text = std::fs::read_to_string(script).with_context(|| format!("reading {script}"))?;
    let name = Path::new(script).file_name().context("script has no file name")?.to_string_lossy();
    let status = pi::node(&dir, &name, &text)?.args(rest).status().context("running node")?;
    if !status.success() {
        bail!("{script} failed ({status})");
    }
    Ok(())
}

/// `cargo xtask gen-store ROOT SESSIONS [SEED] [--entries MIN-MAX]`
fn gen_store(args: &[String]) -> Result<()> {
    let mut sizes = store::Sizes::default();
    let mut args = args.to_vec();
    if let Some(k) = args.iter().position(|a| a == "--entries") {
        let value = args.get(k + 1).context("--entries needs MIN-MAX")?;
        sizes = store::Sizes::parse(value, "--entries")?;
        args.drain(k..k + 2);
    }
    let [root, sessions, rest @ ..] = args.as_slice() else {
        bail!("usage: cargo xtask gen-store ROOT SESSIONS [SEED] [--entries MIN-MAX]")
    };
    let sessions: usize = sessions.parse().with_context(|| format!("SESSIONS must be a number, got {sessions:?}"))?;
    let seed: u64 = match rest {
        [] => 7,
        [s] => s.parse().with_context(|| format!("SEED must be a number, got {s:?}"))?,
        _ => bail!("gen-store: too many arguments"),
    };
    let root = Path::new(root);
    if root.exists() {
        bail!("{} exists already", root.display());
    }
    let stats = store::write_store(root, sessions, seed, sizes)?;
    eprintln!(
        "wrote {}: {} sessions, {} entries, {} bytes",
        root.display(),
        stats.sessions,
        stats.entries,
        stats.bytes
    );
    Ok(())
}

fn ci(root: &Path) -> Result<()> {
    let status = Command::new("bash").arg(".ci/run").current_dir(root).status().context("running bash .ci/run")?;
    if !status.success() {
        bail!(".ci/run failed ({status})");
    }
    Ok(())
}
