//! The rest of issue 21's targets in `cargo xtask bench`, per session, beside
//! the yardsticks measured in the same run: pi's own package opening the
//! session and building its context (`SessionManager.open` +
//! `buildSessionContext`, on a copy, for sessions pi can hold), target 2
//! (no index: `context --json` and `tree --json` in ≤ 2× `wc -l`, and the
//! 100k session's `context --json` in ≤ 0.10× the python loop) and target 3
//! (the text tree streams: peak RSS ≤ 0.1× the file).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::measure::{secs, BenchCmd, Measured};

/// Row names of the file bench that the targets read.
/// Label of the python yardstick row.
pub(crate) const PYTHON: &str = "python3 json.loads";
pub(crate) const CONTEXT: &str = "arbor context --json (scan)";
pub(crate) const TREE: &str = "arbor tree --json (scan)";
pub(crate) const TREE_TEXT: &str = "arbor tree (text, index)";

/// pi's row: its process, opening a copy of the session and building the context at its leaf.
pub const PI: &str = "pi SessionManager.open + buildSessionContext";

/// Sessions up to this size get pi's row: pi reads a file whole into one
/// string, which node cannot make of the ~3 GB session (and the 449 MB one
/// takes minutes of its memory).
const PI_MAX_BYTES: u64 = 400_000_000;

/// pi's open and context, timed as a whole process (what its users wait for).
const PI_OPEN: &str = r#"
import { SessionManager, buildSessionContext } from "@mariozechner/pi-coding-agent";
import path from "node:path";
const file = process.argv[2];
const sm = SessionManager.open(file, path.dirname(file));
const ctx = buildSessionContext(sm.getEntries(), sm.getLeafId(), sm.byId);
if (!ctx || !Array.isArray(ctx.messages)) throw new Error("no context");
console.log(JSON.stringify({ entries: sm.getEntries().length, messages: ctx.messages.length }));
"#;

/// pi's row for `file`, run on a copy (pi rewrites files it migrates); `None`
/// when the session is too big for pi or node and npm are missing.
pub fn pi_row(file: &Path, bytes: u64, scratch: &Path) -> Result<Option<BenchCmd>> {
    if bytes > PI_MAX_BYTES {
        eprintln!("(no pi row for {}: {} MB is more than pi holds)", file.display(), bytes / 1_000_000);
        return Ok(None);
    }
    let Some(pi) = crate::pi::ensure_pi_or_skip(|why| eprintln!("(no pi row: {why})"))? else {
        return Ok(None);
    };
    let copy = copy_for_pi(file, scratch)?;
    let cmd = crate::pi::node(&pi, "bench-open.mjs", PI_OPEN)?;
    let mut argv = vec![cmd.get_program().to_owned()];
    argv.extend(cmd.get_args().map(ToOwned::to_owned));
    argv.push(copy.into_os_string());
    Ok(Some(BenchCmd::new(PI, argv).capturing()))
}

/// A copy of `file` in its own folder under `scratch` (made once per file and size).
fn copy_for_pi(file: &Path, scratch: &Path) -> Result<PathBuf> {
    let name = file.file_name().context("a session file has a name")?;
    let dir = scratch.join("pi-copies");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let copy = dir.join(name);
    let same = fs::metadata(&copy).ok().map(|m| m.len()) == fs::metadata(file).ok().map(|m| m.len());
    if !same {
        fs::copy(file, &copy).with_context(|| format!("copying {} for pi", file.display()))?;
    }
    Ok(copy)
}

/// Targets 2 and 3, and pi beside the scan, for one session's results.
/// `entries`: the generated session's entry count (`None` for `--file`).
/// Each target is judged on the session the issue sets it for (the 2.9 GB
/// one, the 100k one, a million entries); other sessions show the ratio only.
pub fn report(file_bytes: u64, entries: Option<usize>, results: &[Measured]) {
    let find = |label: &str| results.iter().find(|m| m.cmd.label == label);
    let time = |label: &str| find(label).map(|m| secs(m.median())).filter(|&t| t > 0.0);
    let file_mb = file_bytes as f64 / 1e6;
    let judged = |applies: bool, ok: bool| match (applies || entries.is_none(), ok) {
        (true, true) => "met",
        (true, false) => "not met",
        (false, _) => "set for another session",
    };
    let million = entries.is_some_and(|n| n >= 1_000_000);
    if let Some(wc) = time("wc -l") {
        for label in [CONTEXT, TREE] {
            if let Some(t) = time(label) {
                let r = t / wc;
                let verdict = judged(million && file_bytes >= 1_000_000_000, r <= 2.0);
                println!("target 2: {label} in <= 2x wc -l: {t:.3} s = {r:.2}x ({verdict})");
            }
        }
    }
    if let (Some(t), Some(py)) = (time(CONTEXT), time(PYTHON)) {
        let r = t / py;
        let verdict = judged(entries == Some(100_000), r <= 0.10);
        println!("target 2: {CONTEXT} in <= 0.10x the python loop: {r:.3}x ({verdict})");
    }
    if let Some(m) = find(TREE_TEXT) {
        let rss = crate::measure::kib_to_mb(m.peak_rss_kib());
        let r = rss / file_mb.max(f64::MIN_POSITIVE);
        let verdict = judged(million, r <= 0.1);
        println!("target 3: {TREE_TEXT} streams, peak RSS <= 0.1x the file: {rss:.0} MB = {r:.3}x ({verdict})");
    }
    if let (Some(pi), Some(t)) = (time(PI), time(CONTEXT)) {
        println!("pi: {PI} {pi:.3} s; {CONTEXT} {t:.3} s = {:.3}x pi's", t / pi);
    }
}
