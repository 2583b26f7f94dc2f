//! Argument parsing and the subcommands.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use clap::{Parser, Subcommand, ValueEnum};

use arbor_context::ContextStep;
use arbor_log::{CounterIds, Diagnostic, Entry, Role};
use arbor_tree::{paths, OpenMode, Position, Session, SessionOptions};

use crate::render::{active_path, entry_text, layout_tree, record_tool_calls, ToolCalls};

/// Session trees for coding agents, compatible with pi's session files.
#[derive(Debug, Parser)]
#[command(name = "arbor", version, about, long_about = None)]
pub struct Args {
    /// How new ids are made (`counter` is deterministic, for tests).
    #[arg(long, global = true, hide = true, value_enum, default_value = "random", env = "ARBOR_IDS")]
    ids: IdMode,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum IdMode {
    Random,
    Counter,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the header and every entry (after migration), one line each.
    Dump {
        /// The session file.
        file: PathBuf,
        /// Print `{"header", "entries", "leafId"}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the session tree: branches, the active path, labels and the leaf.
    Tree {
        /// The session file.
        file: PathBuf,
        /// Print pi's `getTree()` JSON.
        #[arg(long)]
        json: bool,
        /// Show the tree as if the leaf were at this entry.
        #[arg(long, value_name = "ID")]
        leaf: Option<String>,
    },
    /// Print the path from the root to an entry (default: the leaf).
    Path {
        /// The session file.
        file: PathBuf,
        /// The entry the path ends at.
        id: Option<String>,
        /// Print the entries as a JSON list.
        #[arg(long)]
        json: bool,
    },
    /// Set the label of an entry, or clear it when LABEL is absent.
    Label {
        /// The session file.
        file: PathBuf,
        /// The entry to label.
        id: String,
        /// The label (absent or empty: clear).
        label: Option<String>,
    },
    /// Copy the path to an entry into a new session file (--at: pi's createBranchedSession;
    /// --before: the /branch flow, up to the parent of a user message).
    Fork {
        /// The session file.
        file: PathBuf,
        /// The entry the new session ends at.
        #[arg(long, value_name = "ID", required_unless_present = "before", conflicts_with = "before")]
        at: Option<String>,
        /// A user message: the new session ends at its parent, and its text is printed for the editor.
        #[arg(long, value_name = "USER_MESSAGE_ID")]
        before: Option<String>,
        /// A hooks file for the fork events (with --before); see docs/hooks.md.
        #[arg(long, value_name = "FILE", env = "ARBOR_HOOKS", requires = "before")]
        hooks: Option<PathBuf>,
        /// Directory for the new file (default: beside the original).
        #[arg(long, value_name = "DIR")]
        sessions_dir: Option<PathBuf>,
        /// Print `{"path": …}`.
        #[arg(long)]
        json: bool,
    },
    /// Print the context the model sees at the leaf (pi's buildSessionContext).
    Context {
        /// The session file.
        file: PathBuf,
        /// Build the context as if the leaf were at this entry.
        #[arg(long, value_name = "ID")]
        leaf: Option<String>,
        /// Print the messages after the mapping for the model (pi's convertToLlm).
        #[arg(long)]
        llm: bool,
        /// Print JSON: the SessionContext object, or with --llm the message list.
        #[arg(long)]
        json: bool,
    },
    /// Move the leaf to TARGET (pi's /tree), optionally summarizing the branch left behind.
    Navigate {
        /// The session file.
        file: PathBuf,
        /// The entry to go to (a user message: the leaf goes to its parent and its text is printed).
        target: String,
        /// Summarize the abandoned branch with the model.
        #[arg(long)]
        summarize: bool,
        /// Extra instructions for the summary ("Additional focus: …").
        #[arg(long, value_name = "TEXT")]
        instructions: Option<String>,
        /// Use --instructions instead of the built-in summary prompt.
        #[arg(long, requires = "instructions")]
        replace_instructions: bool,
        /// Label the selected entry (with --summarize: the summary entry).
        #[arg(long, value_name = "TEXT")]
        label: Option<String>,
        #[command(flatten)]
        model: crate::agent_cmds::ModelArgs,
        /// Print `{"newLeafId", "oldLeafId", "summaryEntryId", "editorText", "cancelled", "aborted"}`.
        #[arg(long)]
        json: bool,
    },
    /// Summarize the older part of the active path into a compaction entry.
    Compact {
        /// The session file.
        file: PathBuf,
        /// Keep at least this many tokens of recent messages verbatim (default 20000).
        #[arg(long, value_name = "N")]
        keep_recent_tokens: Option<u64>,
        /// Extra instructions for the summary.
        #[arg(long, value_name = "TEXT")]
        instructions: Option<String>,
        #[command(flatten)]
        model: crate::agent_cmds::ModelArgs,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Report everything wrong or suspicious in session files (exit 0 clean, 1 warnings, 2 errors).
    Check {
        /// The session files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the findings as JSON: `[{"file", "findings": [{"line", "severity", "code", "message"}]}]`.
        #[arg(long)]
        json: bool,
    },
    /// Write a clean copy of a damaged session file (dry run unless --write).
    Repair {
        /// The session file.
        file: PathBuf,
        /// Apply: keep the original as FILE.backup-<ms>, move rejected lines to FILE.rejected-<ms>.
        #[arg(long)]
        write: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Browse the session tree interactively: filter, search, fold, label, and navigate (pi's /tree).
    Tui {
        /// The session file (default: pick one in the session picker).
        file: Option<PathBuf>,
        /// Open the selector with this entry selected.
        #[arg(long, value_name = "ID", conflicts_with = "fork")]
        at: Option<String>,
        /// The filter the list opens with (pi's `treeFilterMode` setting).
        #[arg(long, value_enum, default_value = "default")]
        filter: crate::tui::FilterMode,
        /// Pick a user message instead and branch from it (pi's /branch): the new session file is
        /// written and its path and the message text are printed, like `fork --before`.
        #[arg(long)]
        fork: bool,
        #[command(flatten)]
        model: crate::agent_cmds::ModelArgs,
    },
    /// Talk to a model in a branching session: prompts, /tree, /branch, /label, /compact, … (see docs/cli.md).
    Chat {
        /// The session file (default: pick one in the session picker; without a terminal, the most
        /// recent session of the current directory, or a new one).
        file: Option<PathBuf>,
        /// Start a new session (at FILE when given, else in the sessions directory of the current directory).
        #[arg(long)]
        new: bool,
        /// The model as PROVIDER/MODEL (default: the settings', else the last one used in the session).
        #[arg(long, value_name = "PROVIDER/MODEL")]
        model: Option<String>,
        /// The provider's base URL (for example an OpenAI-compatible server on localhost).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// A hooks file (TOML or JSON) mapping events to commands; see docs/hooks.md.
        #[arg(long, value_name = "FILE", env = "ARBOR_HOOKS")]
        hooks: Option<PathBuf>,
        /// The settings file (default: $ARBOR_CONFIG, else ~/.config/arbor/config.toml when it exists).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Search the text of every entry on every branch of the sessions (tokens, "phrases", re:REGEX).
    Search(crate::commands::search::Args),
    /// Import Claude Code transcripts or Codex CLI rollouts as pi sessions.
    Import(crate::commands::import::Args),
    /// Export a session: the path as Markdown, the whole tree as one HTML page, or clean JSONL.
    Export(crate::commands::export::Args),
    /// Compare two entries: their common ancestor and what each side adds.
    Diff(crate::commands::diff::Args),
    /// List sessions, newest first.
    Ls {
        /// List the sessions of this working directory (default: the current one).
        #[arg(long, value_name = "DIR", conflicts_with = "all")]
        cwd: Option<PathBuf>,
        /// List the sessions of every working directory.
        #[arg(long)]
        all: bool,
        /// The sessions root (default: $ARBOR_SESSIONS_DIR, else $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions).
        #[arg(long, value_name = "DIR")]
        sessions_dir: Option<PathBuf>,
        /// Print pi's SessionInfo objects as a JSON list.
        #[arg(long)]
        json: bool,
    },
}

/// The options every command opens sessions with (the index cache as the
/// library places it: `$ARBOR_CACHE_DIR`, …, none under `ARBOR_NO_INDEX`).
/// What may happen to the file is each command's `OpenMode`: the CLI never
/// turns a missing or damaged file into a new session.
fn options(args_ids: IdMode) -> SessionOptions {
    let opts = SessionOptions::default();
    match args_ids {
        IdMode::Random => opts,
        IdMode::Counter => opts.with_ids(CounterIds::new()),
    }
}

/// Prints the diagnostics of a file to stderr as `FILE:LINE: reason`.
pub(crate) fn print_diagnostics(file: &Path, diags: &[Diagnostic]) {
    let name = file.display().to_string();
    for d in diags {
        eprintln!("{}", d.with_file(&name));
    }
}

fn open_read(file: &Path, ids: IdMode) -> Result<Session> {
    let s = Session::open(file, OpenMode::ReadOnly, options(ids))?;
    print_diagnostics(file, s.diagnostics());
    Ok(s)
}

/// An `arbor-interop` error about the session `file`, naming the file as the user gave it.
pub(crate) fn interop_error(file: &Path, e: arbor_interop::InteropError) -> anyhow::Error {
    match e {
        arbor_interop::InteropError::NoEntry { id, .. } => anyhow::anyhow!("{}: Entry {id} not found", file.display()),
        e => e.into(),
    }
}

/// Opens a session read-only (as `arbor tree` does), its diagnostics on stderr.
pub(crate) fn open_read_only(file: &Path) -> Result<Session> {
    open_read(file, IdMode::Random)
}

fn open_write(file: &Path, ids: IdMode) -> Result<Session> {
    let s = Session::open(file, OpenMode::Write, options(ids))?;
    print_diagnostics(file, s.diagnostics());
    Ok(s)
}

fn write_entries_json(out: &mut dyn Write, items: impl Iterator<Item = impl AsRef<str>>) -> Result<()> {
    out.write_all(b"[")?;
    for (i, j) in items.enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(j.as_ref().as_bytes())?;
    }
    out.write_all(b"]")?;
    Ok(())
}

fn entry_line(e: &Entry, calls: &ToolCalls, home: Option<&str>) -> String {
    format!("{} {} {} {}", e.id, e.parent_id.as_deref().unwrap_or("-"), e.entry_type(), entry_text(e, calls, home))
}

/// Writes the context at the session's leaf as pi's `SessionContext` JSON:
/// what `serde_json::to_writer(&arbor_agent::session_context(s))` writes, up
/// to the text of numbers and strings (the parsed JSON is the same).
///
/// The messages of `message` entries are copied from the entries' JSON text
/// as stored instead of being decoded and encoded again ([`stored_message`];
/// an entry it is not sure of is decoded). A batch of steps at a time, the
/// lines are read and their messages cut out on all cores
/// (`Session::map_json_many`), so only one batch's messages are held at once.
fn write_context_json(out: &mut dyn Write, s: &Session) -> Result<()> {
    const BATCH: usize = 2048;
    let (idx, plan) = arbor_agent::plan_session_context(s);
    out.write_all(b"{\"messages\":[")?;
    let mut first = true;
    for batch in plan.steps.chunks(BATCH) {
        let stored: Vec<Position> = batch
            .iter()
            .filter_map(|step| match step {
                ContextStep::Message(p) => Some(idx[*p]),
                ContextStep::Made(_) => None,
            })
            .collect();
        let ids: Vec<&str> = stored.iter().map(|&i| s.id_at(i).unwrap_or_default()).collect();
        // The message's text as stored, or `None` when the entry must be decoded.
        let copies = s.map_json_many(&stored, |k, line| stored_message(line, ids[k]).map(|m| m.as_bytes().to_vec()));
        let mut copies = stored.iter().zip(copies);
        for step in batch {
            let text = match step {
                ContextStep::Made(m) => Some(arbor_log::json::to_vec(m)?),
                ContextStep::Message(_) => match copies.next() {
                    Some((_, Some(Some(copy)))) => Some(copy),
                    Some((&index, _)) => s
                        .decode_at(index)
                        .and_then(arbor_context::message_of_entry)
                        .map(|m| arbor_log::json::to_vec(&m))
                        .transpose()?,
                    None => None,
                },
            };
            if let Some(text) = text {
                if !std::mem::take(&mut first) {
                    out.write_all(b",")?;
                }
                out.write_all(&text)?;
            }
        }
    }
    out.write_all(b"]")?;
    if let Some(level) = &plan.settings.thinking_level_value {
        out.write_all(b",\"thinkingLevel\":")?;
        arbor_log::json::to_writer(&mut *out, level)?;
    }
    out.write_all(b",\"model\":")?;
    arbor_log::json::to_writer(&mut *out, &plan.settings.model_value)?;
    out.write_all(b"}")?;
    Ok(())
}

/// The text of the `message` of a `message` entry's JSON `line`, as stored,
/// when it parses to the very message that decoding the entry gives; `None`
/// when that is not sure, and the caller decodes the entry instead:
/// - the line is not an object with exactly one `type` (`"message"`), one
///   `id` (the session's: the file may have changed since it was opened) and
///   one `message` key: a decoded entry keeps the last of duplicate keys (a
///   derived struct refuses them), and one without a message is malformed
///   and gives none;
/// - the message may hold serde_json's raw-value marker key
///   (`$serde_json::private::RawValue`), which a decoded `Value` replaces by
///   the JSON its string holds: the text names it, or escapes a letter of it.
///
/// Everything else a `Value` does to a message leaves its parsed JSON as it
/// is: duplicate keys inside it (every parser keeps the last), escapes,
/// whitespace and the spelling of numbers.
fn stored_message<'a>(line: &'a str, id: &str) -> Option<&'a str> {
    #[derive(serde::Deserialize)]
    struct Stored<'a> {
        #[serde(rename = "type", borrow)]
        entry_type: std::borrow::Cow<'a, str>,
        #[serde(borrow)]
        id: std::borrow::Cow<'a, str>,
        #[serde(borrow)]
        message: &'a serde_json::value::RawValue,
    }
    let e: Stored = serde_json::from_str(line).ok()?;
    let m = e.message.get();
    (e.entry_type == "message" && e.id == id && !may_name_raw_value_marker(m)).then_some(m)
}

/// True when JSON text may hold the key `$serde_json::private::RawValue`:
/// it has `RawValue`, or a `\u` escape of one of its letters (`\u005x`,
/// `\u006x`, `\u007x`; an escape of any other character of the key leaves
/// `RawValue` in the text).
fn may_name_raw_value_marker(text: &str) -> bool {
    // `contains` searches short needles with SIMD: a few passes cost less than one walk over every `\u`.
    text.contains("RawValue")
        || text.contains("\\u00") && ["\\u005", "\\u006", "\\u007"].iter().any(|n| text.contains(n))
}

/// Leaves a large read-only value to the end of the process instead of
/// freeing it piece by piece: the answer is written, and a session of a
/// million entries takes longer to free than to answer from. Only for values
/// that own no file handle needing a flush (a read-only session's writer is never opened).
fn exit_without_freeing<T>(value: T) {
    std::mem::forget(value);
}

pub(crate) fn home() -> Option<String> {
    std::env::home_dir().map(|h| h.to_string_lossy().into_owned())
}

/// Runs one command, writing its output to `out`.
pub fn run(args: Args, out: &mut dyn Write) -> Result<ExitCode> {
    let ids = args.ids;
    match args.command {
        Command::Dump { file, json } => {
            let s = open_read(&file, ids)?;
            if json {
                out.write_all(b"{\"header\":")?;
                arbor_log::json::to_writer(&mut *out, &s.header().to_value())?;
                out.write_all(b",\"entries\":")?;
                write_entries_json(out, s.entries_json().map(|(_, j)| j))?;
                out.write_all(b",\"leafId\":")?;
                arbor_log::json::to_writer(&mut *out, &s.leaf_id())?;
                out.write_all(b"}\n")?;
            } else {
                let h = s.header();
                writeln!(
                    out,
                    "session {} v{} {} cwd={}",
                    h.id,
                    h.version(),
                    h.timestamp,
                    h.cwd.as_deref().unwrap_or("")
                )?;
                let home = home();
                let mut calls = ToolCalls::new();
                for e in s.entries() {
                    record_tool_calls(e, &mut calls);
                    writeln!(out, "{}", entry_line(e, &calls, home.as_deref()))?;
                }
                writeln!(out, "leaf {}", s.leaf_id().unwrap_or("(none)"))?;
            }
        }
        Command::Tree { file, json, leaf } => {
            let mut s = open_read(&file, ids)?;
            if let Some(id) = &leaf {
                s.branch(id).with_context(|| file.display().to_string())?;
            }
            let tree = s.get_tree();
            if json {
                tree.write_json(out)?;
                out.write_all(b"\n")?;
            } else {
                print_tree(&s, out)?;
            }
            exit_without_freeing(s);
        }
        Command::Path { file, id, json } => {
            let s = open_read(&file, ids)?;
            if let Some(id) = &id {
                if s.get_entry(id).is_none() {
                    bail!("{}: Entry {id} not found", file.display());
                }
            }
            let idx = s.branch_positions(id.as_deref());
            if json {
                write_entries_json(out, idx.iter().filter_map(|&i| s.json_at(i)))?;
                out.write_all(b"\n")?;
            } else {
                let home = home();
                let mut calls = ToolCalls::new();
                for &i in &idx {
                    if let Some(e) = s.entry_at(i) {
                        record_tool_calls(e, &mut calls);
                        writeln!(out, "{}", entry_line(e, &calls, home.as_deref()))?;
                    }
                }
            }
        }
        Command::Label { file, id, label } => {
            // A bad id fails before anything is written; a file that is not a
            // session is refused by the open.
            let mut s = open_write(&file, ids)?;
            let label = label.as_deref().map(str::trim).filter(|l| !l.is_empty());
            let new_id = s.append_label_change(&id, label).with_context(|| file.display().to_string())?;
            for n in s.notices() {
                eprintln!("{n}");
            }
            match label {
                Some(l) => writeln!(out, "labelled {id} {l:?} (entry {new_id})")?,
                None => writeln!(out, "cleared the label of {id} (entry {new_id})")?,
            }
        }
        Command::Fork { file, before: Some(before), sessions_dir, json, hooks, .. } => {
            let m = crate::agent_cmds::ModelArgs { model: None, base_url: None, hooks, diagnostics_shown: false };
            return crate::agent_cmds::fork_before(out, &file, &before, sessions_dir, &m, options(ids), json);
        }
        Command::Navigate { file, target, summarize, instructions, replace_instructions, label, model, json } => {
            return crate::agent_cmds::navigate(
                out,
                &file,
                &target,
                summarize,
                instructions,
                replace_instructions,
                label,
                &model,
                options(ids),
                json,
                None,
            );
        }
        Command::Compact { file, keep_recent_tokens, instructions, model, json } => {
            return crate::agent_cmds::compact(
                out,
                &file,
                keep_recent_tokens,
                instructions,
                &model,
                options(ids),
                json,
            );
        }
        Command::Fork { file, at, sessions_dir, json, .. } => {
            let at = at.context("--at or --before is required")?;
            let opts = SessionOptions { session_dir: sessions_dir.clone(), ..options(ids) };
            let mut s = Session::open(&file, OpenMode::ReadOnly, opts)?;
            print_diagnostics(&file, s.diagnostics());
            if let Some(dir) = &sessions_dir {
                std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
            }
            let path = s.create_branched_session(&at).with_context(|| file.display().to_string())?;
            s.materialize()?;
            let path = path.context("a file session always forks into a file")?;
            if json {
                serde_json::to_writer(&mut *out, &serde_json::json!({ "path": path }))?;
                out.write_all(b"\n")?;
            } else {
                writeln!(out, "{}", path.display())?;
            }
        }
        Command::Context { file, leaf, llm, json } => {
            let mut s = open_read(&file, ids)?;
            if let Some(id) = &leaf {
                s.branch(id).with_context(|| file.display().to_string())?;
            }
            if json && !llm {
                // Messages are copied from the file, a batch at a time: never all in memory.
                write_context_json(out, &s)?;
            } else {
                // Only the entries the context reads are decoded, without being kept,
                // and moved into the context: one copy of each message.
                let ctx = arbor_agent::session_context(&s);
                if json {
                    arbor_log::json::to_writer(&mut *out, &arbor_context::convert_to_llm(&ctx.messages))?;
                } else {
                    crate::transcript::write_transcript(out, &ctx, llm)?;
                }
                exit_without_freeing(ctx);
            }
            if json {
                out.write_all(b"\n")?;
            }
            exit_without_freeing(s);
        }
        Command::Check { files, json } => {
            let mut worst = None;
            let mut reports = vec![];
            for file in &files {
                let findings = match arbor_tree::check_file(file) {
                    Ok(f) => f,
                    Err(e) => {
                        // An unreadable file is an error finding; the other files are still checked.
                        let message = e.to_string();
                        vec![arbor_tree::Finding {
                            line: 0,
                            severity: arbor_tree::Severity::Error,
                            code: "unreadable",
                            message,
                        }]
                    }
                };
                worst = worst.max(findings.iter().map(|f| f.severity).max());
                if json {
                    reports.push(serde_json::json!({ "file": file, "findings": findings }));
                } else if findings.is_empty() {
                    writeln!(out, "{}: ok", file.display())?;
                } else {
                    for f in &findings {
                        writeln!(out, "{}:{f}", file.display())?;
                    }
                }
            }
            if json {
                serde_json::to_writer(&mut *out, &reports)?;
                out.write_all(b"\n")?;
            }
            return Ok(match worst {
                None => ExitCode::SUCCESS,
                Some(arbor_tree::Severity::Warning) => ExitCode::from(1),
                Some(arbor_tree::Severity::Error) => ExitCode::from(2),
            });
        }
        Command::Repair { file, write, json } => {
            let report = arbor_tree::repair_file(&file, write)?;
            if json {
                serde_json::to_writer(&mut *out, &report)?;
                out.write_all(b"\n")?;
            } else if report.clean {
                writeln!(out, "{}: nothing to repair", file.display())?;
            } else {
                for a in &report.actions {
                    writeln!(out, "{}:{a}", file.display())?;
                }
                let verb = if write { "kept" } else { "would keep" };
                writeln!(out, "{verb} {} lines, moved {} to the side file", report.kept, report.rejected)?;
                match (&report.backup, &report.rejected_file) {
                    (Some(b), r) => {
                        writeln!(out, "original kept as {}", b.display())?;
                        if let Some(r) = r {
                            writeln!(out, "rejected lines in {}", r.display())?;
                        }
                    }
                    (None, _) => writeln!(out, "dry run: nothing written (use --write to apply)")?,
                }
            }
        }
        Command::Tui { file, fork: true, model, .. } => {
            return crate::tui::run_fork(out, file, &model, &|| options(ids));
        }
        Command::Tui { file, at, filter, model, .. } => {
            return crate::tui::run(out, file, at, filter, &model, &|| options(ids));
        }
        Command::Chat { file, new, model, base_url, hooks, config } => {
            let target = match file {
                Some(path) => crate::chat::Target::File { path, new },
                None if new => crate::chat::Target::New,
                None if crate::picker::available() => {
                    let cwd = std::env::current_dir().context("cannot read the current directory")?;
                    match crate::picker::pick(&paths::sessions_root(), &cwd.to_string_lossy())? {
                        crate::picker::Picked::Session { path, .. } => crate::chat::Target::File { path, new: false },
                        crate::picker::Picked::Left => return Ok(ExitCode::SUCCESS),
                        // No session anywhere yet: start one, as before.
                        crate::picker::Picked::NoSessions => crate::chat::Target::Recent,
                    }
                }
                None => crate::chat::Target::Recent,
            };
            let flags = crate::chat::ModelFlags { model, base_url, hooks };
            return crate::chat::run(out, target, &flags, config, &|| options(ids));
        }
        Command::Search(args) => return crate::commands::search::run(args, out),
        Command::Import(args) => return crate::commands::import::run(args, out),
        Command::Export(args) => return crate::commands::export::run(args, out),
        Command::Diff(args) => return crate::commands::diff::run(args, out),
        Command::Ls { cwd, all, sessions_dir, json } => {
            let root = sessions_dir.unwrap_or_else(paths::sessions_root);
            let scope = if all {
                arbor_catalog::Scope::All
            } else {
                let cwd = match cwd {
                    Some(c) => c,
                    None => std::env::current_dir().context("cannot read the current directory")?,
                };
                arbor_catalog::Scope::cwd(&cwd.to_string_lossy())
            };
            let list = crate::catalog_cmds::list(&root, &scope, json)?;
            if json {
                serde_json::to_writer(&mut *out, &list)?;
                out.write_all(b"\n")?;
            } else if list.is_empty() {
                writeln!(out, "no sessions")?;
            } else {
                for i in &list {
                    let title = i.name.clone().unwrap_or_else(|| crate::render::normalize(&i.first_message));
                    let title: String = title.chars().take(60).collect();
                    writeln!(out, "{}  {:>5} msgs  {}  {}", i.modified, i.message_count, title, i.path.display())?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn print_tree(s: &Session, out: &mut dyn Write) -> Result<()> {
    let tree = s.get_tree();
    if tree.is_empty() {
        writeln!(out, "(no entries)")?;
        return Ok(());
    }
    let active = active_path(s);
    let rows = layout_tree(&tree, &active);
    let width =
        rows.iter().filter_map(|r| s.id_at(Position::new(r.index))).map(|id| id.chars().count()).max().unwrap_or(8);
    let leaf = s.leaf_id().and_then(|id| s.position_of(id)).map(Position::get);
    let home = home();
    // Entries are decoded one at a time and not kept: only tool calls are
    // remembered (for the tool results that name them).
    let mut calls = ToolCalls::new();
    for i in s.positions() {
        if s.role_at(i) == Some(&Role::Assistant) {
            if let Some(e) = s.decode_at(i) {
                record_tool_calls(&e, &mut calls);
            }
        }
    }
    for row in rows {
        let Some(e) = s.decode_at(Position::new(row.index)) else { continue };
        let e = &e;
        let marker = if row.active { "• " } else { "" };
        let label = s.get_label(&e.id).map(|l| format!("[{l}] ")).unwrap_or_default();
        let leaf_mark = if Some(row.index) == leaf { "  ◀ leaf" } else { "" };
        writeln!(
            out,
            "{:<width$}  {}{}{}{}{}",
            e.id,
            row.prefix,
            marker,
            label,
            entry_text(e, &calls, home.as_deref()),
            leaf_mark
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod context_json_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::{json, Value};

    /// `context --json` of the session's leaf, parsed.
    fn written(s: &Session) -> Value {
        let mut out = Vec::new();
        write_context_json(&mut out, s).unwrap();
        // As JavaScript reads it: the output writes lone surrogates as their escapes.
        let text = String::from_utf8(out).unwrap();
        arbor_log::json::parse(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// Checks, at a spread of leaves, that the written context parses to the
    /// decoded one; returns how many leaves were checked.
    fn check_file(path: &Path) -> usize {
        let mut checked = 0;
        for index_first in [true, false] {
            let opts = SessionOptions { index_first, index_dir: None, ..Default::default() };
            let Ok(mut s) = Session::open(path, OpenMode::ReadOnly, opts) else { return 0 };
            let leaves: Vec<Option<String>> = std::iter::once(None)
                .chain(s.positions().step_by((s.len() / 40).max(1)).map(|i| s.id_at(i).map(str::to_owned)))
                .collect();
            for leaf in leaves {
                if let Some(id) = &leaf {
                    s.branch(id).unwrap();
                }
                // Read back from its text, as the output is: a value nested past serde_json's
                // limit is kept as its JSON text at a depth counted from the document's root.
                let want = arbor_log::json::to_string(&arbor_agent::session_context(&s)).unwrap();
                let want = arbor_log::json::parse(&want).unwrap();
                assert_eq!(written(&s), want, "{} at {leaf:?}", path.display());
                checked += 1;
            }
        }
        checked
    }

    #[test]
    fn context_json_parses_to_the_session_context_for_every_fixture() {
        let files = crate::fixture_logs();
        let checked: usize = files.iter().map(|f| check_file(f)).sum();
        assert!(files.len() > 40 && checked > 500, "{} files, {checked} leaves", files.len());
    }

    /// A session file: a header and `lines` (one entry each, as given).
    fn session_file(lines: &[String]) -> tempfile::NamedTempFile {
        let mut f = tempfile::Builder::new().suffix(".jsonl").tempfile().unwrap();
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
        writeln!(f, "{header}").unwrap();
        for l in lines {
            f.write_all(l.as_bytes()).unwrap();
            f.write_all(b"\n").unwrap();
        }
        f
    }

    /// An entry line with id `n` whose parent is `n - 1`, and `body` after the base fields.
    fn line(n: usize, body: &str) -> String {
        let parent = if n == 0 { "null".to_owned() } else { format!("\"e{}\"", n - 1) };
        format!(r#"{{"type":"message","id":"e{n}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z",{body}}}"#)
    }

    #[test]
    fn messages_the_copy_cannot_be_sure_of_are_decoded() {
        let bodies = [
            // Duplicate `message` keys: the decoded entry keeps the last.
            r#""message":{"role":"user","content":"first"},"message":{"role":"user","content":"second"}"#,
            r#""message":{"role":"user","content":"a"},"mess\u0061ge":{"role":"user","content":"b"}"#,
            // Malformed: no message; a message that is not an object.
            r#""msg":{"role":"user","content":"x"}"#,
            r#""message":null"#,
            r#""message":"just text""#,
            r#""message":[1,2.50,1e2]"#,
            // serde_json's raw-value marker: a Value holds the JSON of its string.
            r#""message":{"role":"user","content":{"$serde_json::private::RawValue":"[1, 2]"}}"#,
            r#""message":{"role":"user","content":[{"$serde_json::private::\u0052awValue":"{\"a\":1}"}]}"#,
            r#""message":{"role":"user","content":"the word RawValue"}"#,
            // Parsed the same, spelled differently: duplicate keys inside, escapes, numbers, spaces.
            r#""message":{"role":"user","content":"a","content":"b","x":{"k":1,"k":2}}"#,
            r#""message" : { "role" : "user" , "content" : "caf\u00e9 \/ \ud83d\ude00 \u001b[0m" , "timestamp" : 1.50 }"#,
            r#""message":{"role":"user","content":"n","nums":[1.0,-0,1E2,18446744073709551616,12345678901234567890123,0.1,5e-324]}"#,
            // Duplicate base keys: the last `type`/`id` count.
            r#""message":{"role":"user","content":"dup type"},"type":"message""#,
            r#""message":{"role":"assistant","provider":"p","model":"m","content":[]},"extra":{"k":[1,{"a":null}]}"#,
        ];
        let mut lines: Vec<String> = bodies.iter().enumerate().map(|(n, b)| line(n, b)).collect();
        let n = lines.len();
        lines.push(format!(
            r#"{{"type":"custom_message","customType":"x","content":"c","display":true,"id":"e{n}","parentId":"e{}","timestamp":"2025-01-01T00:00:00.000Z"}}"#,
            n - 1
        ));
        let f = session_file(&lines);
        assert!(check_file(f.path()) > 10);
        // The cases above are really there: the marker became its string's JSON.
        let s = Session::open(f.path(), OpenMode::ReadOnly, SessionOptions { index_dir: None, ..Default::default() })
            .unwrap();
        let ctx = written(&s);
        let messages = ctx["messages"].as_array().unwrap();
        assert!(messages.contains(&json!({"role": "user", "content": "second"})), "{ctx}");
        assert!(messages.contains(&json!({"role": "user", "content": [1, 2]})), "{ctx}");
        assert!(messages.contains(&json!("just text")) && messages.contains(&Value::Null), "{ctx}");
        assert_eq!(messages.len(), lines.len() - 1, "{ctx}");
    }

    #[test]
    fn the_marker_check_finds_every_spelling_of_raw_value() {
        for text in [r#"{"RawValue":1}"#, r#"{"\u0052aw":1}"#, r#""\u0061""#, r#""\u006C""#, r#""\u0077""#] {
            assert!(may_name_raw_value_marker(text), "{text}");
        }
        for text in [r#"{"raw value":"caf\u00e9 \u001b[0m \u0024 \u0041"}"#, "", r#""\\u00""#] {
            assert!(!may_name_raw_value_marker(text), "{text}");
        }
    }

    #[test]
    fn invalid_utf8_is_copied_as_it_is_decoded() {
        let mut f = session_file(&[]);
        let text = line(0, r#""message":{"role":"user","content":"bad @ byte"}"#);
        f.write_all(&text.bytes().map(|b| if b == b'@' { 0xff } else { b }).collect::<Vec<u8>>()).unwrap();
        f.write_all(b"\n").unwrap();
        assert!(check_file(f.path()) > 0);
        let s = Session::open(f.path(), OpenMode::ReadOnly, SessionOptions { index_dir: None, ..Default::default() })
            .unwrap();
        assert_eq!(written(&s)["messages"][0]["content"], "bad \u{fffd} byte");
    }

    #[test]
    fn a_session_of_many_batches_is_written_whole_and_in_order() {
        // More than 256 messages per thread, with made-up messages and a compaction among them.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        let total = 256 * threads * 2 + 77;
        let ts = r#""timestamp":"2025-01-01T00:00:00.000Z""#;
        let lines: Vec<String> = (0..total)
            .map(|n| {
                let parent = if n == 0 { "null".to_owned() } else { format!("\"e{}\"", n - 1) };
                let base = format!(r#""id":"e{n}","parentId":{parent},{ts}"#);
                match n % 97 {
                    13 => format!(r#"{{"type":"custom_message","customType":"x","content":"c{n}","display":true,{base}}}"#),
                    29 => format!(r#"{{"type":"branch_summary",{base},"fromId":"e0","summary":"s{n}"}}"#),
                    41 if n > total / 2 && n < total / 2 + 97 => {
                        format!(r#"{{"type":"compaction",{base},"summary":"S","firstKeptEntryId":"e{}","tokensBefore":9}}"#, n - 300)
                    }
                    _ => format!(r#"{{"type":"message",{base},"message":{{"role":"user","content":"m{n} \"q\" \u00e9\n","timestamp":{n}}}}}"#),
                }
            })
            .collect();
        let f = session_file(&lines);
        let s = Session::open(f.path(), OpenMode::ReadOnly, SessionOptions { index_dir: None, ..Default::default() })
            .unwrap();
        let ctx = written(&s);
        assert_eq!(ctx, serde_json::to_value(arbor_agent::session_context(&s)).unwrap());
        let n = ctx["messages"].as_array().unwrap().len();
        assert!(n > 256 * threads, "{n} messages");
    }
}
