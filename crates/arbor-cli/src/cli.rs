//! Argument parsing and the subcommands.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use clap::{Parser, Subcommand, ValueEnum};

use arbor_log::{CounterIds, Diagnostic, Entry};
use arbor_tree::{list_all_sessions, list_sessions, paths, Session, SessionOptions};

use arbor_context::render::{entry_text, normalize, ToolCalls};

use crate::render::{active_path, layout_tree};

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
        /// The session file (default: the most recent session of the current directory).
        file: Option<PathBuf>,
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
        /// The session file (default: the most recent session of the current directory, or a new one).
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

fn options(args_ids: IdMode, read_only: bool) -> SessionOptions {
    // The CLI never turns a missing or damaged file into a new session: a
    // writer refuses it with the same error a reader gives.
    // `ARBOR_NO_INDEX` (any value) neither reads nor writes the sidecar index `FILE.arbor-index`.
    let sidecar_index = std::env::var_os("ARBOR_NO_INDEX").is_none();
    let opts = SessionOptions { read_only, create_or_recover: false, sidecar_index, ..SessionOptions::default() };
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
    let s = Session::open(file, options(ids, true))?;
    print_diagnostics(file, s.diagnostics());
    Ok(s)
}

fn open_write(file: &Path, ids: IdMode) -> Result<Session> {
    let s = Session::open(file, options(ids, false))?;
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
                serde_json::to_writer(&mut *out, &s.header().to_value())?;
                out.write_all(b",\"entries\":")?;
                write_entries_json(out, s.entries_json().map(|(_, j)| j))?;
                out.write_all(b",\"leafId\":")?;
                serde_json::to_writer(&mut *out, &s.leaf_id())?;
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
                    calls.record(e);
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
            let idx = s.branch_indices(id.as_deref());
            if json {
                write_entries_json(out, idx.iter().filter_map(|&i| s.json_at(i)))?;
                out.write_all(b"\n")?;
            } else {
                let home = home();
                let mut calls = ToolCalls::new();
                for &i in &idx {
                    if let Some(e) = s.entry_at(i) {
                        calls.record(e);
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
            return crate::agent_cmds::fork_before(out, &file, &before, sessions_dir, &m, options(ids, true), json);
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
                options(ids, false),
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
                options(ids, false),
                json,
            );
        }
        Command::Fork { file, at, sessions_dir, json, .. } => {
            let at = at.context("--at or --before is required")?;
            let mut opts = options(ids, true);
            opts.session_dir = sessions_dir.clone();
            let mut s = Session::open(&file, opts)?;
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
                arbor_context::write_context_json(&s, out)?;
            } else {
                // Only the entries the context reads are decoded, without being kept,
                // and moved into the context: one copy of each message.
                let ctx = arbor_context::session_context(&s);
                if json {
                    serde_json::to_writer(&mut *out, &arbor_context::convert_to_llm(&ctx.messages))?;
                } else {
                    arbor_context::render::write_transcript(out, &ctx, llm)?;
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
            return crate::tui::run_fork(out, file, &model, &|read_only| options(ids, read_only));
        }
        Command::Tui { file, filter, model, .. } => {
            return crate::tui::run(out, file, filter, &model, &|read_only| options(ids, read_only));
        }
        Command::Chat { file, new, model, base_url, hooks, config } => {
            let target = match file {
                Some(path) => crate::chat::Target::File { path, new },
                None if new => crate::chat::Target::New,
                None => crate::chat::Target::Recent,
            };
            let flags = crate::chat::ModelFlags { model, base_url, hooks };
            return crate::chat::run(out, target, &flags, config, &|read_only| options(ids, read_only));
        }
        Command::Ls { cwd, all, sessions_dir, json } => {
            let root = sessions_dir.unwrap_or_else(paths::sessions_root);
            let store = arbor_tree::FileStore;
            let list = if all {
                list_all_sessions(&store, &root)?
            } else {
                let cwd = match cwd {
                    Some(c) => c,
                    None => std::env::current_dir().context("cannot read the current directory")?,
                };
                let cwd = cwd.to_string_lossy().into_owned();
                list_sessions(&store, &paths::session_dir_for(&root, &cwd))?
            };
            if json {
                serde_json::to_writer(&mut *out, &list)?;
                out.write_all(b"\n")?;
            } else if list.is_empty() {
                writeln!(out, "no sessions")?;
            } else {
                for i in &list {
                    let title = i.name.clone().unwrap_or_else(|| normalize(&i.first_message));
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
    let width = rows.iter().filter_map(|r| s.id_at(r.index)).map(|id| id.chars().count()).max().unwrap_or(8);
    let leaf = s.leaf_id().and_then(|id| s.index_of(id));
    let home = home();
    // Entries are decoded one at a time and not kept: only tool calls are
    // remembered (for the tool results that name them).
    let mut calls = ToolCalls::new();
    for i in 0..s.len() {
        if s.message_role_at(i) == Some("assistant") {
            if let Some(e) = s.decode_at(i) {
                calls.record(&e);
            }
        }
    }
    for row in rows {
        let Some(e) = s.decode_at(row.index) else { continue };
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
