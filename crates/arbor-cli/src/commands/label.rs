//! `arbor label`: set or clear an entry's label.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use crate::shared::session::Globals;
use crate::shared::visible::{say, Visible};

/// Set the label of an entry, or clear it when LABEL is absent.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    /// The entry to label.
    id: String,
    /// The label (absent or empty: clear).
    label: Option<String>,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let out = &mut Visible::new(out);
    let Args { file, id, label } = args;
    // A bad id fails before anything is written; a file that is not a
    // session is refused by the open.
    let mut s = g.open_write(&file)?;
    let label = label.as_deref().map(str::trim).filter(|l| !l.is_empty());
    let new_id = s.append_label_change(&id, label).with_context(|| file.display().to_string())?;
    for n in s.notices() {
        say!("{n}");
    }
    match label {
        Some(l) => writeln!(out, "labelled {id} {l:?} (entry {new_id})")?,
        None => writeln!(out, "cleared the label of {id} (entry {new_id})")?,
    }
    Ok(ExitCode::SUCCESS)
}
