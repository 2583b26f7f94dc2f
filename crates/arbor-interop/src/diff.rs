//! `arbor diff FILE A B`: where two entries' paths part, and what each side
//! adds after that: messages, tool calls, the files those calls touched, and
//! the size and cost of each side's context.

use std::collections::BTreeMap;

use arbor_context::plan::{estimate_tally, plan_path};
use arbor_context::summary::FileOps;
use arbor_log::{Entry, EntryType, Role};
use arbor_tree::{Position, Session, TreeError};
use serde::Serialize;
use serde_json::Value;

use crate::files::{add_file_ops, file_lists};
use crate::InteropError;

/// Two entries compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diff {
    /// The last entry both paths share (`None`: they start at different roots).
    pub common_ancestor: Option<String>,
    /// What A adds after the ancestor, and B.
    pub a: Side,
    /// See [`Diff::a`].
    pub b: Side,
}

/// One side of a [`Diff`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    /// The entry.
    pub id: String,
    /// The entries after the ancestor, up to and including the entry.
    pub entries: Vec<String>,
    /// Messages among them, by role (summaries and extension messages included).
    pub messages: BTreeMap<String, usize>,
    /// The tool calls among them, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Files the calls only read.
    pub files_read: Vec<String>,
    /// Files the calls wrote or edited.
    pub files_modified: Vec<String>,
    /// The context at the entry.
    pub context: Totals,
    /// What the assistant replies among the added entries report.
    pub added: Usage,
    /// What every assistant reply on the path from the root reports.
    pub path: Usage,
}

/// A tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The assistant message holding it.
    pub entry: String,
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
}

/// The context a model sees at an entry.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Totals {
    /// Its messages.
    pub messages: usize,
    /// pi's estimate of its tokens (the last reply's usage plus the messages after it).
    pub tokens: u64,
}

/// Token and cost totals of assistant replies' usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Replies counted.
    pub replies: usize,
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Cache reads.
    pub cache_read: u64,
    /// Cache writes.
    pub cache_write: u64,
    /// The total cost.
    pub cost: f64,
}

/// Entries decoded at once (on all cores), then dropped.
const BATCH: usize = 4096;

/// Compares the paths to `a` and `b`, reading their entries a batch at a
/// time: what it holds is the two paths' positions (4 bytes an entry) and
/// the answer, not the entries.
pub fn diff(s: &Session, a: &str, b: &str) -> Result<Diff, InteropError> {
    let pa = positions_to(s, a)?;
    let pb = positions_to(s, b)?;
    let shared = pa.iter().zip(&pb).take_while(|(x, y)| x == y).count();
    // The replies both paths share, counted once.
    let mut common = Usage::default();
    for_each_entry(s, &pa[..shared], |e| common.add(e))?;
    Ok(Diff {
        common_ancestor: shared.checked_sub(1).and_then(|i| s.id_at(pa[i])).map(|id| id.to_string()),
        a: side(s, a, pa, shared, common)?,
        b: side(s, b, pb, shared, common)?,
    })
}

/// The path root → `id` as positions, or an error naming an unknown id.
fn positions_to(s: &Session, id: &str) -> Result<Vec<Position>, InteropError> {
    if s.position_of(id).is_none() {
        let path = s.session_file().unwrap_or(s.session_dir()).to_owned();
        return Err(InteropError::NoEntry { path, id: id.to_owned() });
    }
    Ok(s.branch_positions(Some(id)))
}

/// Calls `f` with each entry at `positions`, in order, decoded a batch at
/// a time. An entry on a line too long to hold is its preview (every long
/// string cut to its first few KB: ids, roles, tool calls and usage are
/// never cut), unless a tool call's arguments were cut (the files a call
/// reads and changes are read from them): then it is decoded whole.
fn for_each_entry(s: &Session, positions: &[Position], mut f: impl FnMut(&Entry)) -> Result<(), TreeError> {
    for batch in positions.chunks(BATCH) {
        for (&p, e) in batch.iter().zip(s.decode_previews(batch)?) {
            let e = if s.is_long_at(p) && cuts_arguments(s, p)? { s.decode_at(p)? } else { e };
            if let Some(e) = e {
                f(&e);
            }
        }
    }
    Ok(())
}

/// True when the long line of the entry at `p` has a string cut inside a
/// tool call's arguments (or one whose place is not known).
fn cuts_arguments(s: &Session, p: Position) -> Result<bool, TreeError> {
    let Some(line) = s.long_line_at(p)? else { return Ok(true) };
    Ok(line.texts().iter().any(|t| t.pointer.as_deref().is_none_or(|ptr| ptr.contains("/arguments"))))
}

fn side(s: &Session, id: &str, path: Vec<Position>, shared: usize, common: Usage) -> Result<Side, TreeError> {
    let mut messages: BTreeMap<String, usize> = BTreeMap::new();
    let mut tool_calls = Vec::new();
    let mut ops = FileOps::new();
    let mut entries = Vec::with_capacity(path.len() - shared);
    let (mut added, mut on_path) = (Usage::default(), common);
    for_each_entry(s, &path[shared..], |e| {
        entries.push(e.id.clone());
        added.add(e);
        on_path.add(e);
        let Some(m) = e.message() else {
            // The summaries and extension messages the context shows as messages.
            let role = match e.entry_type() {
                EntryType::Compaction => Some(Role::CompactionSummary),
                EntryType::BranchSummary => Some(Role::BranchSummary),
                EntryType::CustomMessage => Some(Role::Custom),
                _ => None,
            };
            if let Some(role) = role {
                *messages.entry(role.to_string()).or_default() += 1;
            }
            return;
        };
        let view = m.view();
        let role = view.role().map_or_else(|| EntryType::Message.to_string(), |r| r.to_string());
        *messages.entry(role).or_default() += 1;
        for call in view.tool_calls() {
            let text = |v: Option<&str>| v.unwrap_or("").to_owned();
            tool_calls.push(ToolCall { entry: e.id.clone(), id: text(call.id), name: text(call.name) });
        }
        add_file_ops(&m.message, &mut ops);
    })?;
    let (files_read, files_modified) = file_lists(&ops);
    // The context at the entry, a batch of messages at a time.
    let plan = plan_path(s, path)?;
    let tally = estimate_tally(s, &plan)?;
    Ok(Side {
        id: id.to_owned(),
        entries,
        messages,
        tool_calls,
        files_read,
        files_modified,
        context: Totals { messages: tally.count(), tokens: tally.tokens() },
        added,
        path: on_path,
    })
}

impl Usage {
    /// Counts `e` when it is an assistant reply that reports its usage.
    fn add(&mut self, e: &Entry) {
        let Some(m) = e.message().filter(|m| m.role() == Some(Role::Assistant)) else { return };
        let Some(x) = m.message.get("usage") else { return };
        let n = |k: &str| x.get(k).and_then(Value::as_u64).unwrap_or(0);
        self.replies += 1;
        self.input += n("input");
        self.output += n("output");
        self.cache_read += n("cacheRead");
        self.cache_write += n("cacheWrite");
        self.cost += x.get("cost").and_then(|c| c.get("total")).and_then(Value::as_f64).unwrap_or(0.0);
    }
}
