//! Other agents in, pictures out: Claude Code and Codex CLI transcripts
//! imported as pi sessions, sessions exported as Markdown, as one
//! self-contained HTML page of the whole tree (a sidebar tree beside the
//! transcript of one path, [`HtmlOptions`]; a program that serves the page
//! adds its script with [`Served`] and grows the page as the session grows
//! with [`LiveEntries`]), or as clean JSONL, and the diff of two branches of
//! a session.
//!
//! `arbor-interop` owns the mappings between pi's format and the others'
//! ([`import_transcripts`], [`Format`]), the exporters ([`export_markdown`],
//! [`export_html`], [`export_jsonl`]) and [`diff`]. It reads sessions through
//! `arbor-tree` and rebuilds contexts through `arbor-context`.
//!
//! It does not know terminals, command lines, models or async runtimes: the
//! CLI parses, calls and prints. It never prints.
//!
//! Promises:
//! - importing the same transcript twice gives the same session, with the
//!   same ids, byte for byte; a grown transcript extends its session;
//! - a bad line in a transcript is reported with its number and skipped,
//!   never fatal; an unfinished last line is left for a later import;
//! - every source record is kept: mapped to a pi entry that names its source
//!   line, or whole in a `custom` entry (`claude.<type>`, `codex.<type>`);
//! - a session file that was continued after its import is never overwritten;
//! - no text from a session runs as script in the HTML page (Markdown is
//!   rendered and cleaned when the page is written; the page's policy lets
//!   only its own script run), and the Markdown and HTML exports read a
//!   session a batch of entries at a time, keeping none of them.
//!
//! Import Claude Code's transcripts of one project into a sessions root,
//! then export each session made as Markdown:
//!
//! ```no_run
//! use std::path::PathBuf;
//!
//! use arbor_interop::{export_markdown, import_transcripts, Format, ImportOptions};
//! use arbor_tree::{OpenMode, Session, SessionOptions};
//!
//! let opts = ImportOptions { sessions_root: PathBuf::from("/tmp/sessions") };
//! let transcripts = [PathBuf::from("/home/me/.claude/projects/-home-me-app")];
//! for (source, report) in import_transcripts(Format::Claude, &transcripts, &opts) {
//!     let report = report?;
//!     for skipped in &report.skipped {
//!         eprintln!("{}:{}: skipped: {}", source.display(), skipped.line, skipped.reason);
//!     }
//!     for made in &report.sessions {
//!         let session = Session::open(&made.path, OpenMode::ReadOnly, SessionOptions::default())?;
//!         export_markdown(&session, None, &mut std::io::stdout().lock())?;
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

mod diff;
mod error;
mod export;
mod files;
mod import;
pub mod tree;

pub use diff::{diff, Diff, Side};
pub use error::InteropError;
pub use export::{escape_html, export_html, export_jsonl, export_markdown, HtmlOptions, LiveEntries, Scope, Served};
pub use import::{
    import_transcripts, read_transcript, sources, Format, ImportOptions, ImportReport, InPlace, Outcome, SessionReport,
    SkippedLine, Transcript, SOURCE_KEY,
};
