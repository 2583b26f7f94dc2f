//! `arbor diff FILE A B`: where two entries' paths part, and what each side
//! adds after that: messages, tool calls, the files those calls touched, and
//! the size and cost of each side's context.

use std::collections::BTreeMap;

use arbor_context::{build_context_from_path, estimate_context_tokens, FileOps};
use arbor_log::{Entry, EntryType, Role};
use arbor_tree::Session;
use serde::Serialize;
use serde_json::Value;

use crate::export::path_to;
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

/// Compares the paths to `a` and `b`.
pub fn diff(s: &Session, a: &str, b: &str) -> Result<Diff, InteropError> {
    let pa = path_to(s, Some(a))?;
    let pb = path_to(s, Some(b))?;
    let shared = pa.iter().zip(&pb).take_while(|(x, y)| x.id == y.id).count();
    Ok(Diff {
        common_ancestor: shared.checked_sub(1).map(|i| pa[i].id.clone()),
        a: side(a, &pa, shared),
        b: side(b, &pb, shared),
    })
}

fn side(id: &str, path: &[&Entry], shared: usize) -> Side {
    let added = &path[shared..];
    let mut messages: BTreeMap<String, usize> = BTreeMap::new();
    let mut tool_calls = Vec::new();
    let mut ops = FileOps::new();
    for e in added {
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
            continue;
        };
        let view = m.view();
        let role = view.role().map_or_else(|| EntryType::Message.to_string(), |r| r.to_string());
        *messages.entry(role).or_default() += 1;
        for call in view.tool_calls() {
            let text = |v: Option<&str>| v.unwrap_or("").to_owned();
            tool_calls.push(ToolCall { entry: e.id.clone(), id: text(call.id), name: text(call.name) });
        }
        add_file_ops(&m.message, &mut ops);
    }
    let (files_read, files_modified) = file_lists(&ops);
    let context = build_context_from_path(path);
    Side {
        id: id.to_owned(),
        entries: added.iter().map(|e| e.id.clone()).collect(),
        messages,
        tool_calls,
        files_read,
        files_modified,
        context: Totals { messages: context.messages.len(), tokens: estimate_context_tokens(&context.messages).tokens },
        added: usage(added),
        path: usage(path),
    }
}

fn usage(entries: &[&Entry]) -> Usage {
    let mut u = Usage::default();
    for e in entries {
        let Some(m) = e.message().filter(|m| m.role() == Some(Role::Assistant)) else { continue };
        let Some(x) = m.message.get("usage") else { continue };
        let n = |k: &str| x.get(k).and_then(Value::as_u64).unwrap_or(0);
        u.replies += 1;
        u.input += n("input");
        u.output += n("output");
        u.cache_read += n("cacheRead");
        u.cache_write += n("cacheWrite");
        u.cost += x.get("cost").and_then(|c| c.get("total")).and_then(Value::as_f64).unwrap_or(0.0);
    }
    u
}
