//! `arbor`: the command-line face of Arbor's session trees.
//!
//! A thin shell over the library crates: it parses arguments, opens sessions
//! through `arbor-tree`, prints, and maps errors to one line on stderr and a
//! non-zero exit. A closed pipe (`arbor tree … | head`) is not an error.
//! Two commands are interactive: `arbor tui` (the tree selector, [`tui`]) and
//! `arbor chat` (a conversation with a model over `arbor-agent`, [`chat`]).

mod agent_cmds;
mod catalog_cmds;
mod chat;
mod cli;
mod picker;
mod commands {
    pub mod diff;
    pub mod export;
    pub mod import;
    pub mod search;
}
mod render;
mod transcript;
mod tui;

use std::io::{self, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = <cli::Args as clap::Parser>::parse();
    let mut out = io::BufWriter::with_capacity(1 << 16, raw_stdout());
    let result = cli::run(args, &mut out).and_then(|code| {
        out.flush()?;
        Ok(code)
    });
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = out.flush();
            eprintln!("arbor: {}", one_line(&e));
            ExitCode::from(1)
        }
    }
}

/// Standard output without Rust's line buffering, which looks for a newline
/// in every byte written (a tenth of `arbor tree --json` on a 3 GB file):
/// output is block-buffered by the caller and flushed before exit. Only `main`'s
/// writer uses standard output, so nothing can interleave with it.
fn raw_stdout() -> Box<dyn Write> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = io::stdout().as_fd().try_clone_to_owned() {
            return Box::new(std::fs::File::from(fd));
        }
    }
    Box::new(io::stdout())
}

/// The error and its causes on one line, without repeating a cause whose text
/// an outer message already includes.
pub(crate) fn one_line(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if msg.ends_with(&text) || msg.contains(&format!("{text}:")) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&text);
    }
    msg.replace('\n', " ")
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
}

/// Every `.jsonl` file under the repository's `fixtures/`, for unit tests that sweep them all.
#[cfg(test)]
fn fixture_logs() -> Vec<std::path::PathBuf> {
    arbor_test_support::jsonl_under(&arbor_test_support::fixtures())
}
