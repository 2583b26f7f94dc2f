//! `arbor push PATH… --to URL`: session files to a PostgreSQL server,
//! idempotent and resumable (docs/postgres.md, "Moving sessions").

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use serde_json::json;

use crate::shared::backend::{self, Live, Pushed};
use crate::shared::output::{error_line, transfer, write_json_line};
use crate::shared::session::Globals;
use crate::shared::visible::{for_people, say};

/// Copy session files to a PostgreSQL server: new ones whole, grown ones extended, the same ones
/// skipped, and any whose copy on the server differs refused (nothing lost either way).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Session files, or folders: every `.jsonl` file below them (a sessions root keeps pi's layout).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// The server (default: --store, else $ARBOR_STORE).
    #[arg(long, value_name = "URL")]
    to: Option<String>,
    /// Push a file that a local writer (`arbor chat`) holds: its lines written so far (without it, refused).
    #[arg(long)]
    allow_live: bool,
    /// Print one `{"file", "session", "outcome", "lines"}` (or `"error"`) per file as a JSON list
    /// (`"heldBack"`: the bytes of a last line not yet complete, not sent).
    #[arg(long)]
    json: bool,
}

/// The `.jsonl` files `paths` name: files as given, folders walked (sorted).
fn session_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = vec![];
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot read the folder", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "jsonl") {
            out.push(p);
        }
    }
    Ok(())
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let store = backend::server(args.to.as_deref(), g.store.as_deref(), "push")?;
    let files = session_files(&args.paths)?;
    let mut failed = 0;
    let mut report = vec![];
    let live = if args.allow_live { Live::Allow } else { Live::Refuse };
    for f in &files {
        match store.push_with(f, live) {
            Ok(Pushed { key, transfer: t, held_back }) => {
                let (outcome, text, lines) = transfer(t);
                if args.json {
                    let mut r = json!({"file": f, "session": key.path(), "outcome": outcome, "lines": lines});
                    if let Some(n) = held_back {
                        r["heldBack"] = json!(n);
                    }
                    report.push(r);
                } else {
                    let held = held_back
                        .map(|n| format!("; its last line ({n} bytes) is not complete yet: not sent"))
                        .unwrap_or_default();
                    writeln!(out, "{}: {text} as {}{held}", f.display(), key.path().display())?;
                }
            }
            Err(e) => {
                failed += 1;
                let e = error_line(&e.into());
                say!("arbor: {e}");
                report.push(json!({"file": f, "error": e}));
            }
        }
    }
    if args.json {
        write_json_line(out, &report)?;
    }
    if failed > 0 {
        say!("arbor: {failed} of {} sessions not pushed", files.len());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
