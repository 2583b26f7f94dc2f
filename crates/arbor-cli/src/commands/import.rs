//! `arbor import claude|codex|opencode PATH…`: other agents' transcripts as pi sessions.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use arbor_interop::{Format, ImportOptions, ImportReport, Outcome};
use arbor_tree::paths;

use crate::shared::session::Globals;
use crate::shared::visible::{for_people, say};

/// Import Claude Code transcripts, Codex CLI rollouts or OpenCode sessions as pi sessions.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The transcripts' format.
    #[arg(value_enum)]
    format: FormatArg,
    /// The transcripts (a Claude Code session brings its subagents' transcripts along; for
    /// OpenCode, a session's file or the storage folder: every session in it).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// The sessions root (default: $ARBOR_SESSIONS_DIR, else $PI_CODING_AGENT_DIR/sessions, else
    /// ~/.pi/agent/sessions); each session goes to its cwd's directory below it.
    #[arg(long, value_name = "DIR")]
    sessions_dir: Option<PathBuf>,
    /// Print one report per transcript as a JSON list: what was mapped, what kept as custom.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum FormatArg {
    /// Claude Code (~/.claude/projects/<cwd>/<session>.jsonl).
    Claude,
    /// Codex CLI (~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl).
    Codex,
    /// OpenCode (~/.local/share/opencode/storage, or one session's storage/session/<project>/<id>.json).
    Opencode,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    g.local_only("import", "import to files, then push them (arbor push)")?;
    let format = match args.format {
        FormatArg::Claude => Format::Claude,
        FormatArg::Codex => Format::Codex,
        FormatArg::Opencode => Format::OpenCode,
    };
    let opts = ImportOptions { sessions_root: args.sessions_dir.unwrap_or_else(paths::sessions_root) };
    let results = arbor_interop::import_transcripts(format, &args.paths, &opts);
    let mut failed = false;
    let mut json = Vec::new();
    for (source, result) in results {
        match result {
            Ok(report) => {
                for s in &report.skipped {
                    match &s.file {
                        Some(file) => say!("{}: {}, file skipped", file.display(), s.reason),
                        None => say!("{}:{}: {}, line skipped", source.display(), s.line, s.reason),
                    }
                }
                if args.json {
                    json.push(serde_json::to_value(&report)?);
                } else {
                    write_report(out, &report)?;
                }
            }
            Err(e) => {
                failed = true;
                say!("arbor: {e}");
                json.push(serde_json::json!({"source": source, "error": e.to_string()}));
            }
        }
    }
    if args.json {
        serde_json::to_writer(&mut *out, &json)?;
        out.write_all(b"\n")?;
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn write_report(out: &mut dyn Write, r: &ImportReport) -> Result<()> {
    for s in &r.sessions {
        let what = match s.outcome {
            Outcome::Created => "created",
            Outcome::Unchanged => "unchanged",
            Outcome::Extended => "extended",
            Outcome::Replaced => "replaced",
        };
        let side = if s.parent_session.is_some() { " (sidechain)" } else { "" };
        writeln!(
            out,
            "{}: {what} {}{side}: {} entries, {} kept as custom{}",
            r.source.display(),
            s.path.display(),
            s.entries,
            s.custom,
            match s.outcome {
                Outcome::Extended => format!(", {} appended", s.written),
                _ => String::new(),
            }
        )?;
        if let Some(b) = &s.backup {
            writeln!(out, "  the earlier import is kept as {}", b.display())?;
        }
    }
    if r.partial_tail {
        writeln!(
            out,
            "{}: the last line is unfinished (still being written): imported up to the line before",
            r.source.display()
        )?;
    }
    Ok(())
}
