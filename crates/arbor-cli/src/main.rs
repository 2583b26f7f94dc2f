//! `arbor`: the command-line face of Arbor's session trees.
//!
//! A thin shell over the library crates: it parses arguments, opens sessions
//! through `arbor-tree`, calls the libraries, prints, and maps errors to one
//! line on stderr and a non-zero exit. A closed pipe (`arbor tree … | head`)
//! is not an error.
//!
//! - [`commands`]: one module per subcommand (its arguments and `run`) and
//!   the dispatcher;
//! - [`ui`]: the interactive front ends, `arbor tui` (the tree selector),
//!   `arbor chat` (a conversation with a model over `arbor-agent`) and the
//!   session picker both open without a file;
//! - [`shared`]: what both use (global flags, opening sessions, the agent
//!   flows, the catalog, printing).
//!
//! Commands never import each other, and the front ends import no command:
//! the imports run `main → commands → ui → shared`.

// The doc comments of the commands are clap's `--help` text, where `<cwd>`
// is a placeholder, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

mod commands;
mod shared;
mod ui;

use std::io::{self, Write};
use std::process::ExitCode;

use crate::shared::output::error_line;
use crate::shared::visible::say;

fn main() -> ExitCode {
    // pi's folder names start with `--`: in a list of names they are names, not flags.
    let argv =
        shared::names::names_apart(&<commands::Cli as clap::CommandFactory>::command(), std::env::args_os().collect());
    let cli = <commands::Cli as clap::Parser>::parse_from(argv);
    let mut out = io::BufWriter::with_capacity(1 << 16, raw_stdout());
    let result = commands::run(cli, &mut out).and_then(|code| {
        out.flush()?;
        Ok(code)
    });
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = out.flush();
            say!("arbor: {}", error_line(&e));
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

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
}

/// Every `.jsonl` file under the repository's `fixtures/`, for unit tests that sweep them all.
#[cfg(test)]
fn fixture_logs() -> Vec<std::path::PathBuf> {
    arbor_test_support::jsonl_under(&arbor_test_support::fixtures())
}
