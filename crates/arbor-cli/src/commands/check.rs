//! `arbor check`: everything wrong or suspicious in session files.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use arbor_tree::check::{check_session, summary_by_code, Finding, Severity};
use arbor_tree::SessionOptions;

use crate::shared::output::write_json_line;
use crate::shared::session::Globals;
use crate::shared::visible::for_people;

/// Report everything wrong or suspicious in session files (exit 0 clean, 1 warnings, 2 errors).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print the findings as JSON: `[{"file", "findings": [{"line", "severity", "code", "message"}]}]`.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let mut worst = None;
    let mut reports = vec![];
    for file in &args.files {
        // The session the argument names, read through the backend's store; a
        // v1 file shows the ids every read of it shows (seeded from its id).
        let checked = g.session(file).and_then(|p| {
            let opts = SessionOptions { seeded_migration_ids: true, ..g.options()? };
            Ok(check_session(&p, opts)?)
        });
        let findings = checked.unwrap_or_else(|e| {
            // An unreadable file is an error finding; the other files are still checked.
            vec![Finding::new(0, Severity::Error, "unreadable", format!("{e:#}"))]
        });
        worst = worst.max(findings.iter().map(|f| f.severity).max());
        if args.json {
            reports.push(serde_json::json!({ "file": file, "findings": findings }));
        } else if findings.is_empty() {
            writeln!(out, "{}: ok", file.display())?;
        } else {
            for f in &findings {
                writeln!(out, "{}:{f}", file.display())?;
            }
            writeln!(out, "{}: {}", file.display(), summary_line(&findings))?;
        }
    }
    if args.json {
        write_json_line(out, &reports)?;
    }
    Ok(match worst {
        None => ExitCode::SUCCESS,
        Some(Severity::Warning) => ExitCode::from(1),
        Some(Severity::Error) => ExitCode::from(2),
    })
}

/// `2 errors, 1 warning: duplicate-id 2, orphan 1`: how many findings of each severity and code.
fn summary_line(findings: &[Finding]) -> String {
    let count = |sev: Severity| findings.iter().filter(|f| f.severity == sev).count();
    let plural = |n: usize, what: &str| if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") };
    let mut parts = vec![];
    for (sev, what) in [(Severity::Error, "error"), (Severity::Warning, "warning")] {
        let n = count(sev);
        if n > 0 {
            parts.push(plural(n, what));
        }
    }
    let kinds: Vec<String> = summary_by_code(findings).iter().map(|(_, code, n)| format!("{code} {n}")).collect();
    format!("{}: {}", parts.join(", "), kinds.join(", "))
}
