//! `arbor unlock SESSION [--force]`: break the write lock of a session on
//! the server when its writer is stuck (frozen, or on a machine that
//! vanished): shows who holds it, since how long its connection has been
//! idle, and ends that connection after asking (docs/postgres.md).

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::shared::backend;
use crate::shared::session::Globals;
use crate::shared::visible::say;

/// Break the write lock of a session on the server (--store): show its writer (pid, host, idle
/// time) and end that writer's connection, after asking (or with --force). The writer loses the
/// session; nothing it wrote is lost.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session on the server: DIR/FILE, a file name, or a session id (or a unique prefix of one).
    #[arg(allow_hyphen_values = true, value_name = "SESSION")]
    session: String,
    /// Do not ask (needed without a terminal).
    #[arg(long)]
    force: bool,
}

/// `3h 12m`, `4m 05s`, `12s`.
fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s:02}s"),
        (h, m, _) => format!("{h}h {m:02}m"),
    }
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let store = backend::server(None, g.store.as_deref(), "unlock")?;
    let key = store.session_key(&args.session)?;
    let shown = key.path().display().to_string();
    let Some(w) = store.writer(&key)? else {
        writeln!(out, "{shown}: no writer holds it")?;
        return Ok(ExitCode::SUCCESS);
    };
    let idle = match w.idle {
        Some(d) => format!("its connection idle for {}", duration(d)),
        None => "its connection busy with a statement right now".to_owned(),
    };
    let role = w.role.as_deref().map(|r| format!(", role {r}")).unwrap_or_default();
    writeln!(out, "{shown}: held by {} ({idle}; server process {}{role})", w.holder, w.backend)?;
    out.flush()?;
    if !args.force {
        if !std::io::stdin().is_terminal() {
            bail!("{shown}: not ending the writer without a terminal to ask on: give --force");
        }
        eprint!("End that writer's connection? It loses the session; what it wrote stays. [y/N] ");
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            say!("arbor: {shown}: left as it is");
            return Ok(ExitCode::from(1));
        }
    }
    if store.end_writer(&key, w.backend)? {
        writeln!(out, "{shown}: unlocked (the writer's connection was ended)")?;
    } else {
        writeln!(out, "{shown}: the writer had already let go")?;
    }
    Ok(ExitCode::SUCCESS)
}
