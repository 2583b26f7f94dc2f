//! `arbor export FILE --format md|html|jsonl`: a session as Markdown, one HTML page, or clean JSONL.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use arbor_interop::Scope;

use crate::shared::output::interop_error;
use crate::shared::session::Globals;

/// Export a session: the path as Markdown, the whole tree as one HTML page, or clean JSONL.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    /// md: the path as Markdown; html: the whole tree as one self-contained page; jsonl: a clean copy.
    #[arg(long, value_enum)]
    format: ExportFormat,
    /// The path to this entry (default: the leaf); md and jsonl.
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    leaf: Option<String>,
    /// Every entry of the tree (jsonl; html always shows the whole tree).
    #[arg(long)]
    all: bool,
    /// Write to this file (atomically) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ExportFormat {
    Md,
    Html,
    Jsonl,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    if args.all && matches!(args.format, ExportFormat::Md) {
        anyhow::bail!("--all: Markdown holds one path (use --leaf ID, or --format html for the whole tree)");
    }
    let s = g.open_read(&args.file)?;
    let mut buf = Vec::new();
    let target: &mut dyn Write = if args.output.is_some() { &mut buf } else { out };
    let written = match args.format {
        ExportFormat::Md => arbor_interop::export_markdown(&s, args.leaf.as_deref(), target),
        ExportFormat::Html => arbor_interop::export_html(&s, target),
        ExportFormat::Jsonl => {
            let scope = if args.all { Scope::All } else { Scope::Path(args.leaf.as_deref()) };
            arbor_interop::export_jsonl(&s, scope, target)
        }
    };
    written.map_err(|e| interop_error(&args.file, e))?;
    if let Some(path) = &args.output {
        arbor_log::atomic_write(path, |w| w.write_all(&buf)).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
