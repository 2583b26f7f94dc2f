//! How results are printed: errors on one line, entries one per line, JSON
//! lists of stored entries (the tree: [`super::tree_text`]).

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use arbor_context::render::{entry_text, ToolCalls};
use arbor_log::Entry;

/// The error and its causes on one line, without repeating a cause whose text
/// an outer message already includes.
pub fn error_line(e: &anyhow::Error) -> String {
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

/// An `arbor-interop` error about the session `file`, naming the file as the user gave it.
pub fn interop_error(file: &Path, e: arbor_interop::InteropError) -> anyhow::Error {
    match e {
        arbor_interop::InteropError::NoEntry { id, .. } => anyhow::anyhow!("{}: Entry {id} not found", file.display()),
        e => e.into(),
    }
}

/// What a push or pull did: its word (`created`, `extended`, `unchanged`),
/// a phrase for people, and the number of lines written.
pub fn transfer(t: arbor_pg::Transfer) -> (&'static str, String, u64) {
    match t {
        arbor_pg::Transfer::Created { lines } => ("created", format!("created ({lines} lines)"), lines),
        arbor_pg::Transfer::Extended { lines } => ("extended", format!("extended by {lines} lines"), lines),
        arbor_pg::Transfer::Unchanged => ("unchanged", "unchanged".to_owned(), 0),
    }
}

/// The home directory, which entry lines shorten to `~`.
pub fn home() -> Option<String> {
    std::env::home_dir().map(|h| h.to_string_lossy().into_owned())
}

/// `ID PARENT TYPE TEXT`: an entry as `arbor dump` and `arbor path` print it.
pub fn entry_line(e: &Entry, calls: &ToolCalls, home: Option<&str>) -> String {
    format!("{} {} {} {}", e.id, e.parent_id.as_deref().unwrap_or("-"), e.entry_type(), entry_text(e, calls, home))
}

/// Writes a JSON list of JSON texts (stored entries, copied as they are).
pub fn write_json_list(out: &mut dyn Write, items: impl Iterator<Item = impl AsRef<str>>) -> Result<()> {
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

/// Writes a JSON value as `JSON.stringify` writes it, and a newline.
pub fn write_json_line(out: &mut dyn Write, value: &impl serde::Serialize) -> Result<()> {
    arbor_log::json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")?;
    Ok(())
}
