//! The subcommands: one module per command, each with its clap `Args` and a
//! `run`, and the dispatcher ([`run`]), one line per command.
//!
//! Every command module has the same shape:
//!
//! ```ignore
//! /// <what the command does: clap's help for it>
//! #[derive(Debug, clap::Args)]
//! pub struct Args { /* its own flags and arguments */ }
//!
//! pub fn run(args: Args, globals: &Globals, out: &mut dyn Write) -> anyhow::Result<ExitCode>
//! ```
//!
//! `globals` ([`Globals`], from `crate::shared::session`) holds the flags
//! every command takes (today `--ids`) and opens sessions with them; `out`
//! is standard output, block-buffered and flushed by `main` (diagnostics and
//! notices go to stderr); the exit code is the command's (a closed pipe and
//! errors are handled in `main`). Adding a command: a module here, a variant
//! of [`Command`] and its dispatch line. A command module never imports
//! another: what two commands share lives in `crate::shared` (checked by
//! `cargo xtask tidy`).

mod cache;
mod chat;
mod check;
mod compact;
mod completions;
mod context;
mod diff;
mod dump;
mod export;
mod fork;
mod import;
mod label;
mod ls;
mod mcp;
mod navigate;
mod path;
mod pull;
mod push;
mod repair;
mod resume;
mod search;
mod serve;
mod tail;
mod tree;
mod tui;
mod unlock;
mod usage;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::shared::session::Globals;

/// Session trees for coding agents, compatible with pi's session files.
/// Without a command: resume the most recent session of the current directory in `arbor chat`.
#[derive(Debug, Parser)]
#[command(name = "arbor", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    globals: Globals,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    Dump(dump::Args),
    Tree(tree::Args),
    Path(path::Args),
    Label(label::Args),
    Fork(fork::Args),
    Context(context::Args),
    Navigate(navigate::Args),
    Compact(compact::Args),
    Check(check::Args),
    Repair(repair::Args),
    Tui(tui::Args),
    Chat(chat::Args),
    Search(search::Args),
    Import(import::Args),
    Export(export::Args),
    Diff(diff::Args),
    Ls(ls::Args),
    Mcp(mcp::Args),
    Tail(tail::Args),
    Serve(serve::Args),
    Push(push::Args),
    Pull(pull::Args),
    Cache(cache::Args),
    Unlock(unlock::Args),
    Usage(usage::Args),
    Completions(completions::Args),
}

/// Runs one command, writing its output to `out`. Without a command: the
/// most recent session of the current directory in the chat.
pub fn run(cli: Cli, out: &mut dyn Write) -> Result<ExitCode> {
    let g = &cli.globals;
    let Some(command) = cli.command else { return resume::run(g, out) };
    match command {
        Command::Dump(args) => dump::run(args, g, out),
        Command::Tree(args) => tree::run(args, g, out),
        Command::Path(args) => path::run(args, g, out),
        Command::Label(args) => label::run(args, g, out),
        Command::Fork(args) => fork::run(args, g, out),
        Command::Context(args) => context::run(args, g, out),
        Command::Navigate(args) => navigate::run(args, g, out),
        Command::Compact(args) => compact::run(args, g, out),
        Command::Check(args) => check::run(args, g, out),
        Command::Repair(args) => repair::run(args, g, out),
        Command::Tui(args) => tui::run(args, g, out),
        Command::Chat(args) => chat::run(args, g, out),
        Command::Search(args) => search::run(args, g, out),
        Command::Import(args) => import::run(args, g, out),
        Command::Export(args) => export::run(args, g, out),
        Command::Diff(args) => diff::run(args, g, out),
        Command::Ls(args) => ls::run(args, g, out),
        Command::Mcp(args) => mcp::run(args, g, out),
        Command::Tail(args) => tail::run(args, g, out),
        Command::Serve(args) => serve::run(args, g, out),
        Command::Push(args) => push::run(args, g, out),
        Command::Pull(args) => pull::run(args, g, out),
        Command::Cache(args) => cache::run(args, g, out),
        Command::Unlock(args) => unlock::run(args, g, out),
        Command::Usage(args) => usage::run(args, g, out),
        Command::Completions(args) => completions::run(args, g, out),
    }
}
