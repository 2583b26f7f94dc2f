//! The binding layer's translation: Arbor's sessions and answers as plain
//! values a binding hands to its language (JSON text, strings, numbers) and
//! [`Failure`]s. Nothing here knows Python: the Python glue (`crate::py`)
//! turns the JSON text into dicts with Python's own `json` module, and a
//! Node binding (napi-rs) would `JSON.parse` the same text.
//!
//! The JSON is the `arbor` command's `--json` output, written by the same
//! library functions (pi's shapes: `getTree()`, `getBranch()`,
//! `buildSessionContext()`, `convertToLlm()`, `SessionInfo`, the search
//! hits), so a binding answers exactly what the command prints, including
//! what only JavaScript reads: lone surrogates come out as `\udXXX`
//! escapes, and a number beyond `f64` as JavaScript reads it.

mod failure;
pub mod messages;
mod tree;

use std::path::{Path, PathBuf};

use arbor_catalog::{CatalogOptions, FileSessions};
use arbor_context::{plan_branch_context, write_plan_json, write_plan_llm_json, SessionPlan};
use arbor_tree::sessions::{ListRequest, NoProgress, Scope, SearchRequest, Sessions};
use arbor_tree::{OpenMode, Position, Session, SessionOptions};
use serde_json::Value;

pub use failure::Failure;
pub use tree::tree_flat_json;

/// How a binding opens a session: the words its callers write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `"read"`: no lock, nothing written anywhere.
    Read,
    /// `"write"`: an existing session, under its write lock.
    Write,
    /// `"create"`: like `"write"`, and a new session where no file is yet
    /// (written with its first assistant message, as pi does).
    Create,
}

impl Mode {
    /// The mode a word names.
    pub fn parse(word: &str) -> Result<Mode, Failure> {
        match word {
            "read" => Ok(Mode::Read),
            "write" => Ok(Mode::Write),
            "create" => Ok(Mode::Create),
            other => {
                Err(Failure::Invalid(format!("open mode must be \"read\", \"write\" or \"create\", not {other:?}")))
            }
        }
    }

    fn open_mode(self) -> OpenMode {
        match self {
            Mode::Read => OpenMode::ReadOnly,
            Mode::Write => OpenMode::Write,
            Mode::Create => OpenMode::WriteOrCreate,
        }
    }
}

/// Opens the session at `path`. Options are the library's defaults unless
/// given (a backend's, [`Sessions::session_options`]): no index cache, no
/// environment read, nothing written beyond what `mode` allows.
pub fn open(path: &Path, mode: Mode, opts: SessionOptions) -> Result<Session, Failure> {
    Session::open(path, mode.open_mode(), opts).map_err(|e| Failure::of_tree(e, Some(path)))
}

/// The fields of an entry the tree model decided (a `parentId` that is not
/// a string is no parent, a missing timestamp is empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The entry's id.
    pub id: String,
    /// The id of its parent; `None` for a root.
    pub parent_id: Option<String>,
    /// Its `type`.
    pub entry_type: String,
    /// Its ISO timestamp (empty when the line has none).
    pub timestamp: String,
}

/// Entries as a binding returns them: the heads, and a JSON list of the
/// entries as stored (after migration), one per head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    /// Each entry's head, in order.
    pub heads: Vec<Head>,
    /// `[entry, …]`: what `arbor path --json` prints for the same entries.
    pub json: String,
}

/// Entries decoded and copied at once (on all cores), and held meanwhile.
const BATCH: usize = 2048;

/// The entries at `positions`, in order.
pub fn rows(s: &Session, positions: &[Position]) -> Result<Rows, Failure> {
    let mut heads = Vec::with_capacity(positions.len());
    let mut json = String::from("[");
    for batch in positions.chunks(BATCH) {
        let texts = s.map_json_many(batch, |_, j| j.to_owned()).map_err(changed(s))?;
        for (entry, text) in s.decode_many(batch).map_err(changed(s))?.into_iter().zip(texts) {
            let (Some(e), Some(text)) = (entry, text) else { continue };
            if !heads.is_empty() {
                json.push(',');
            }
            json.push_str(&text);
            heads.push(Head {
                entry_type: e.entry_type().as_str().to_owned(),
                id: e.id,
                parent_id: e.parent_id,
                timestamp: e.timestamp,
            });
        }
    }
    json.push(']');
    Ok(Rows { heads, json })
}

/// A read that found the session's file changed under it, as a failure naming the file.
pub fn changed(s: &Session) -> impl Fn(arbor_tree::TreeError) -> Failure + '_ {
    |e| Failure::of_tree(e, s.session_file())
}

/// The position of the entry `id` names; an unknown id names the file.
pub fn position(s: &Session, id: &str) -> Result<Position, Failure> {
    s.position_of(id).ok_or_else(|| not_found(s, id))
}

fn not_found(s: &Session, id: &str) -> Failure {
    Failure::of_tree(arbor_tree::TreeError::NotFound(id.to_owned()), s.session_file())
}

/// The path from the root to `to` (default: the leaf), as positions.
pub fn path(s: &Session, to: Option<&str>) -> Result<Vec<Position>, Failure> {
    if let Some(id) = to {
        position(s, id)?;
    }
    Ok(s.branch_positions(to))
}

/// The children of `id`, in file order.
pub fn children(s: &Session, id: &str) -> Result<Vec<Position>, Failure> {
    position(s, id)?;
    Ok(s.get_children(id).map_err(changed(s))?.iter().filter_map(|e| s.position_of(&e.id)).collect())
}

/// pi's `getTree()`: what `arbor tree --json` prints (nested as deep as
/// the longest path; [`tree_flat_json`] is the same tree one level deep).
pub fn tree_json(s: &Session) -> Result<String, Failure> {
    let mut out = Vec::new();
    s.get_tree().write_json(&mut out).map_err(|e| io_failure(s, &e))?;
    text(out)
}

/// The plan of the context at `at` (default: the leaf), the leaf left where it is.
fn plan_at(s: &Session, at: Option<&str>) -> Result<SessionPlan, Failure> {
    let path = path(s, at)?;
    plan_branch_context(s, path).map_err(changed(s))
}

/// pi's `buildSessionContext()` at `at` (default: the leaf): what `arbor
/// context --json [--leaf ID]` prints.
pub fn context_json(s: &Session, at: Option<&str>) -> Result<String, Failure> {
    let plan = plan_at(s, at)?;
    let mut out = Vec::new();
    write_plan_json(s, &plan, &mut out).map_err(|e| io_failure(s, &e))?;
    text(out)
}

/// pi's `convertToLlm()` of that context: what `arbor context --llm --json` prints.
pub fn llm_json(s: &Session, at: Option<&str>) -> Result<String, Failure> {
    let plan = plan_at(s, at)?;
    let mut out = Vec::new();
    write_plan_llm_json(s, &plan, &mut out).map_err(|e| io_failure(s, &e))?;
    text(out)
}

/// The session's header as JSON.
pub fn header_json(s: &Session) -> Result<String, Failure> {
    match s.header_text() {
        Some(t) => Ok(t.to_owned()),
        None => json_text(s.header()),
    }
}

/// Every resolved label (target id, label text), in the order the targets got theirs.
pub fn labels(s: &Session) -> Result<Vec<(String, String)>, Failure> {
    Ok(s.labels().map_err(changed(s))?.map(|(id, l)| (id.to_owned(), l.to_owned())).collect())
}

/// Appends a message (a JSON object, read as JavaScript reads it) after the
/// leaf; the new entry's id.
pub fn append_message(s: &mut Session, message: &str) -> Result<String, Failure> {
    let value = arbor_log::json::parse(message).map_err(|e| Failure::Invalid(format!("a message: {e}")))?;
    if !value.is_object() {
        return Err(Failure::Invalid("a message must be an object with a role".into()));
    }
    if value.get("role").is_none_or(|r| !r.is_string()) {
        return Err(Failure::Invalid("a message must have a string role (user, assistant, toolResult, …)".into()));
    }
    s.append_message(value).map_err(|e| tree_failure(s, e))
}

/// Sets (or with `None` clears) the label of entry `id`; the label entry's id.
pub fn set_label(s: &mut Session, id: &str, label: Option<&str>) -> Result<String, Failure> {
    let label = label.map(str::trim).filter(|l| !l.is_empty());
    s.append_label_change(id, label).map_err(|e| tree_failure(s, e))
}

fn tree_failure(s: &Session, e: arbor_tree::TreeError) -> Failure {
    Failure::of_tree(e, s.session_file())
}

fn io_failure(s: &Session, e: &std::io::Error) -> Failure {
    let file = s.session_file().map(|f| format!("{}: ", f.display())).unwrap_or_default();
    Failure::Other(format!("{file}{e}"))
}

fn text(bytes: Vec<u8>) -> Result<String, Failure> {
    String::from_utf8(bytes).map_err(|e| Failure::Other(format!("JSON that is not UTF-8: {e}")))
}

/// A value as `JSON.stringify` writes it.
pub fn json_text(value: &impl serde::Serialize) -> Result<String, Failure> {
    arbor_log::json::to_string(value).map_err(|e| Failure::Other(e.to_string()))
}

/// A JSON text a binding was given (read as JavaScript reads it).
pub fn parse(what: &str, text: &str) -> Result<Value, Failure> {
    arbor_log::json::parse(text).map_err(|e| Failure::Invalid(format!("{what}: {e}")))
}

/// The sessions under a sessions root in pi's layout, answered by a catalog
/// kept in memory, or in `cache_dir` when one is named.
pub fn file_sessions(root: &Path, cache_dir: Option<PathBuf>) -> FileSessions {
    let sessions = FileSessions::new(root);
    match cache_dir {
        Some(dir) => sessions.with_catalog(CatalogOptions::default().with_cache_dir(Some(dir))),
        None => sessions,
    }
}

/// The sessions of working directory `cwd`, or of all.
fn scope(cwd: Option<&str>) -> Scope {
    cwd.map_or(Scope::All, Scope::cwd)
}

/// pi's `SessionInfo` of every session of `cwd` (default: all), newest
/// first, with every message's text: what `arbor ls --json` prints.
pub fn listing_json(sessions: &dyn Sessions, cwd: Option<&str>) -> Result<String, Failure> {
    let list =
        sessions.listing(&ListRequest::new(scope(cwd)).with_text(), &NoProgress).map_err(Failure::of_sessions)?;
    json_text(&list)
}

/// The best `limit` hits of `query` (pi's picker syntax) in the sessions of
/// `cwd` (default: all): what `arbor search --json` prints.
pub fn search_json(sessions: &dyn Sessions, query: &str, cwd: Option<&str>, limit: usize) -> Result<String, Failure> {
    if query.trim().is_empty() {
        return Err(Failure::Query("the query is empty".into()));
    }
    let request = SearchRequest::new(query, scope(cwd)).limit(limit);
    let hits = sessions.search(&request, &NoProgress).map_err(Failure::of_sessions)?;
    json_text(&hits)
}

/// The session a name means: a path, `DIR/FILE`, a file name, a session id
/// or a unique prefix of one.
pub fn resolve(sessions: &dyn Sessions, name: &str) -> Result<PathBuf, Failure> {
    sessions.resolve(name).map_err(Failure::of_sessions)
}

#[cfg(test)]
mod tests;
