//! `arbor pull SESSION… --to DIR`: sessions from a PostgreSQL server into
//! files, in pi's layout, idempotent and resumable (docs/postgres.md,
//! "Moving sessions").

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use serde_json::json;

use arbor_tree::paths;

use crate::shared::backend::{self, Live};
use crate::shared::output::{error_line, transfer, write_json_line};
use crate::shared::session::Globals;
use crate::shared::visible::{for_people, say};

/// Copy sessions from a PostgreSQL server into files (DIR/<cwd folder>/<file>, pi's layout): new ones
/// whole, grown ones extended, the same ones skipped, and any whose local copy differs refused.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sessions on the server: DIR/FILE, a file name, or a session id (or a unique prefix of one).
    #[arg(value_name = "SESSION", required_unless_present = "all", conflicts_with = "all")]
    sessions: Vec<String>,
    /// Pull every session on the server.
    #[arg(long)]
    all: bool,
    /// The sessions root to pull into (default: $ARBOR_SESSIONS_DIR, else ~/.pi/agent/sessions).
    #[arg(long, value_name = "DIR")]
    to: Option<PathBuf>,
    /// The server (default: --store, else $ARBOR_STORE).
    #[arg(long, value_name = "URL")]
    from: Option<String>,
    /// Pull a session that a writer holds on the server: what is committed now (without it, refused).
    #[arg(long)]
    allow_live: bool,
    /// Print one `{"session", "file", "outcome", "lines"}` (or `"error"`) per session as a JSON list.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let store = backend::server(args.from.as_deref(), g.store.as_deref(), "pull")?;
    let root = args.to.clone().unwrap_or_else(paths::sessions_root);
    let keys = if args.all {
        store.keys(None)?
    } else {
        args.sessions.iter().map(|s| store.session_key(s).with_context(|| s.clone())).collect::<Result<Vec<_>>>()?
    };
    let mut failed = 0;
    let mut report = vec![];
    let live = if args.allow_live { Live::Allow } else { Live::Refuse };
    for key in &keys {
        match store.pull_with(key, &root, live) {
            Ok((file, t)) => {
                let (outcome, text, lines) = transfer(t);
                if args.json {
                    report.push(json!({"session": key.path(), "file": file, "outcome": outcome, "lines": lines}));
                } else {
                    writeln!(out, "{}: {text} as {}", key.path().display(), file.display())?;
                }
            }
            Err(e) => {
                failed += 1;
                let e = error_line(&e.into());
                say!("arbor: {e}");
                report.push(json!({"session": key.path(), "error": e}));
            }
        }
    }
    if args.json {
        write_json_line(out, &report)?;
    }
    if failed > 0 {
        say!("arbor: {failed} of {} sessions not pulled", keys.len());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
