//! `arbor completions SHELL`: the shell completion script (clap_complete).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;

use crate::shared::session::Globals;

/// The shells a completion script is written for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Shell {
    /// Bash: `source <(arbor completions bash)`, or save it under `~/.local/share/bash-completion/completions/arbor`.
    Bash,
    /// Zsh: save it as `_arbor` in a folder of `$fpath`.
    Zsh,
    /// Fish: save it as `~/.config/fish/completions/arbor.fish`.
    Fish,
}

/// Print the completion script for a shell (bash, zsh or fish) on stdout.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell.
    #[arg(value_enum)]
    shell: Shell,
}

pub fn run(args: Args, _g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut super::Cli::command(), "arbor", &mut buf);
    out.write_all(&buf)?;
    Ok(ExitCode::SUCCESS)
}
