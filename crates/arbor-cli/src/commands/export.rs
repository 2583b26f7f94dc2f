//! `arbor export FILE [--format md|html|jsonl] [-o OUT]`: a session as
//! Markdown, one HTML page, or clean JSONL.

use std::io::{BufRead, IsTerminal, Read as _, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};

use arbor_interop::{HtmlOptions, InteropError, Scope};

use crate::shared::output::interop_error;
use crate::shared::session::Globals;
use crate::shared::visible::{say, Visible};

/// Export a session: the path as Markdown, the whole tree as one HTML page, or clean JSONL.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    /// md: the path as Markdown; html: the whole tree as one self-contained page; jsonl: a clean copy.
    /// Default: from OUT's extension (.md, .html, .jsonl).
    #[arg(long, value_enum)]
    format: Option<ExportFormat>,
    /// The path to this entry (default: the leaf); md and jsonl.
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    leaf: Option<String>,
    /// Every entry of the tree (jsonl; html always shows the whole tree).
    #[arg(long)]
    all: bool,
    /// Write to this file (atomically) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
    /// Write OUT even when it is the session itself or another session file.
    #[arg(long)]
    force: bool,
    /// html: show the session's working directory and file path (left out by default).
    #[arg(long)]
    paths: bool,
    /// html: cut tool outputs longer than this many bytes to their head (the page says so).
    #[arg(long, value_name = "BYTES", default_value_t = HtmlOptions::default().max_output)]
    max_output: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ExportFormat {
    Md,
    Html,
    Jsonl,
}

impl ExportFormat {
    fn name(self) -> &'static str {
        match self {
            ExportFormat::Md => "Markdown",
            ExportFormat::Html => "HTML",
            ExportFormat::Jsonl => "JSONL",
        }
    }
}

/// The format an output file's extension names.
fn format_of(out: &Path) -> Option<ExportFormat> {
    match out.extension()?.to_str()?.to_ascii_lowercase().as_str() {
        "md" | "markdown" => Some(ExportFormat::Md),
        "html" | "htm" => Some(ExportFormat::Html),
        "jsonl" => Some(ExportFormat::Jsonl),
        _ => None,
    }
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let format = match (args.format, &args.output) {
        (Some(f), _) => f,
        (None, Some(o)) => format_of(o).with_context(|| {
            format!("{}: cannot tell the format from the extension: give --format md|html|jsonl", o.display())
        })?,
        (None, None) => bail!("--format md|html|jsonl is needed when writing to standard output"),
    };
    if args.all && format == ExportFormat::Md {
        bail!("--all: Markdown holds one path (use --leaf ID, or --format html for the whole tree)");
    }
    if let Some(o) = &args.output {
        check_output(&args.file, o, args.force)?;
    }
    let s = g.open_read(&args.file)?;
    let html = HtmlOptions { paths: args.paths, max_output: args.max_output, ..HtmlOptions::default() };
    let export = |w: &mut dyn Write| -> Result<(), InteropError> {
        match format {
            ExportFormat::Md => arbor_interop::export_markdown(&s, args.leaf.as_deref(), w),
            ExportFormat::Html => arbor_interop::export_html(&s, &html, w),
            ExportFormat::Jsonl => {
                let scope = if args.all { Scope::All } else { Scope::Path(args.leaf.as_deref()) };
                arbor_interop::export_jsonl(&s, scope, w)
            }
        }
    };
    let Some(path) = &args.output else {
        // Markdown is text for people: on a terminal, no escape sequence from the session gets through.
        if format == ExportFormat::Md && std::io::stdout().is_terminal() {
            let mut shown = Visible::new(out);
            export(&mut shown).map_err(|e| interop_error(&args.file, e))?;
            shown.flush()?;
        } else {
            export(out).map_err(|e| interop_error(&args.file, e))?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let mut failed = None;
    let written = arbor_log::writer::atomic_write(path, |w| {
        export(w).map_err(|e| {
            let text = e.to_string();
            failed = Some(e);
            std::io::Error::other(text)
        })
    });
    if let Some(e) = failed {
        return Err(interop_error(&args.file, e));
    }
    written.with_context(|| format!("writing {}", path.display()))?;
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    say!("arbor: wrote {} ({}, {})", path.display(), format.name(), human(size));
    Ok(ExitCode::SUCCESS)
}

/// Refuses an output whose folder is missing, that is the session being
/// exported, or that holds a session (unless `force`): an export never
/// replaces a session by accident.
fn check_output(input: &Path, out: &Path, force: bool) -> Result<()> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!("{}: the folder {} does not exist", out.display(), dir.display());
    }
    if force {
        return Ok(());
    }
    let same = match (std::fs::metadata(input), std::fs::metadata(out)) {
        (Ok(a), Ok(b)) => {
            use std::os::unix::fs::MetadataExt;
            a.dev() == b.dev() && a.ino() == b.ino()
        }
        _ => false,
    };
    if same {
        bail!("{}: is the session being exported; nothing written (write elsewhere, or --force)", out.display());
    }
    if holds_session(out) {
        bail!("{}: holds a session; nothing written (write elsewhere, or --force to replace it)", out.display());
    }
    Ok(())
}

/// True when `path` is a regular file whose first line is a session header.
fn holds_session(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else { return false };
    if !meta.is_file() {
        return false;
    }
    let Ok(file) = std::fs::File::open(path) else { return false };
    let mut head = Vec::new();
    // A bounded read: the header line of a session is short.
    if std::io::BufReader::new(file).take(64 * 1024).read_until(b'\n', &mut head).is_err() {
        return false;
    }
    let head = String::from_utf8_lossy(&head);
    let head = head.trim_start_matches('\u{feff}');
    serde_json::from_str::<serde_json::Value>(head.trim())
        .is_ok_and(|v| v.get("type").and_then(|t| t.as_str()) == Some("session"))
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}
