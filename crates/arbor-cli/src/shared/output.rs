//! How results are printed: errors on one line, entries one per line, JSON
//! lists of stored entries (the tree: `arbor_interop::tree`).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use anyhow::Result;
use compact_str::CompactString;

use arbor_context::render::{entry_text, CallText, ToolCalls};
use arbor_interop::tree::CallsAt;
use arbor_log::Entry;
use arbor_tree::{Position, Session};

use crate::shared::backend::Transfer;

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
pub fn transfer(t: Transfer) -> (&'static str, String, u64) {
    match t {
        Transfer::Created { lines } => ("created", format!("created ({lines} lines)"), lines),
        Transfer::Extended { lines } => ("extended", format!("extended by {lines} lines"), lines),
        Transfer::Unchanged => ("unchanged", "unchanged".to_owned(), 0),
    }
}

/// The home directory, which entry lines shorten to `~`.
pub fn home() -> Option<String> {
    std::env::home_dir().map(|h| h.to_string_lossy().into_owned())
}

/// `ID PARENT TYPE TEXT`: an entry as `arbor dump` and `arbor path` print it.
pub fn entry_line(e: &Entry, calls: &dyn CallText, home: Option<&str>) -> String {
    format!("{} {} {} {}", e.id, e.parent_id.as_deref().unwrap_or("-"), e.entry_type(), entry_text(e, calls, home))
}

/// Entries read (decoded or copied) and held at once by the writers below.
const BATCH: usize = 2048;

/// Writes a JSON list of the stored entries at `positions`, copied as they
/// are a batch at a time (read on all cores), never all held at once; an
/// entry on a long line is copied from the file a block at a time
/// ([`Session::write_json_at`]), never held.
pub fn write_entries_json(out: &mut dyn Write, s: &Session, positions: &[Position]) -> Result<()> {
    out.write_all(b"[")?;
    let mut first = true;
    for batch in positions.chunks(BATCH) {
        let short: Vec<Position> = batch.iter().copied().filter(|&p| !s.is_long_at(p)).collect();
        let mut texts = s.map_json_many(&short, |_, j| j.to_owned())?.into_iter();
        for &p in batch {
            let long = s.is_long_at(p);
            let text = if long { None } else { texts.next().flatten() };
            if !long && text.is_none() {
                continue;
            }
            if !std::mem::take(&mut first) {
                out.write_all(b",")?;
            }
            match text {
                Some(j) => out.write_all(j.as_bytes())?,
                None => s.write_json_at(p, out)?,
            }
        }
    }
    out.write_all(b"]")?;
    Ok(())
}

/// Writes an [`entry_line`] for each entry at `positions`, decoded a batch
/// at a time (on all cores) without being kept in the session. A tool
/// result's row names its call ([`CallsAt`]): where each call seen so far
/// was made is all that is kept of it.
pub fn write_entry_lines(out: &mut dyn Write, s: &Session, positions: &[Position]) -> Result<()> {
    let home = home();
    let mut made_at: HashMap<CompactString, Position> = HashMap::new();
    for batch in positions.chunks(BATCH) {
        let entries = s.decode_many(batch)?;
        let decoded: HashMap<Position, &Entry> =
            batch.iter().zip(&entries).filter_map(|(&p, e)| Some((p, e.as_ref()?))).collect();
        for (&p, e) in batch.iter().zip(&entries) {
            let Some(e) = e else { continue };
            made_at.extend(ToolCalls::ids_of(e).map(|id| (CompactString::from(id), p)));
            let calls = CallsAt { session: s, made_at: &made_at, batch: &decoded };
            writeln!(out, "{}", entry_line(e, &calls, home.as_deref()))?;
        }
    }
    Ok(())
}

/// Writes a JSON value as `JSON.stringify` writes it, and a newline.
pub fn write_json_line(out: &mut dyn Write, value: &impl serde::Serialize) -> Result<()> {
    arbor_log::json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")?;
    Ok(())
}
