//! The pure half of branch summaries (docs/architecture.md, "Summaries"): which entries a
//! navigation leaves behind, and what of them a summarizer reads.

use std::collections::HashSet;

use arbor_context::{estimate_tokens, extract_file_ops_from_message, FileOps};
use arbor_log::{Entry, EntryKind, Role};
use arbor_tree::{Session, TreeError};
use serde_json::Value;

use crate::convert::entry_message;

/// The entries a navigation abandons, and where the old and new paths meet.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchCollection<'a> {
    /// The abandoned entries, oldest first (the common ancestor excluded).
    pub entries: Vec<&'a Entry>,
    /// The deepest entry on both the old path and the target's path (`None` for disjoint roots).
    pub common_ancestor_id: Option<String>,
}

/// Collects what moving from `old_leaf_id` to `target_id` leaves behind (pi's
/// `collectEntriesForBranchSummary`, docs/architecture.md, "Summaries").
///
/// The walk goes from the old leaf up to (not including) the deepest common
/// ancestor of the two paths. It does not stop at compactions: they are
/// collected and their summaries become input. A target below the old leaf
/// gives nothing; a target on the old path gives the tail after it. Every
/// walk is cycle-safe.
pub fn collect_entries_for_branch_summary<'a>(
    session: &'a Session,
    old_leaf_id: Option<&str>,
    target_id: &str,
) -> Result<BranchCollection<'a>, TreeError> {
    let Some(old_leaf_id) = old_leaf_id else {
        return Ok(BranchCollection { entries: vec![], common_ancestor_id: None });
    };
    let old_path: HashSet<&str> = session.get_branch(Some(old_leaf_id))?.iter().map(|e| e.id.as_str()).collect();
    let target_path = session.get_branch(Some(target_id))?;
    let common_ancestor_id = target_path.iter().rev().find(|e| old_path.contains(e.id.as_str())).map(|e| e.id.clone());

    let mut entries = vec![];
    let mut seen = HashSet::new();
    let mut current = Some(old_leaf_id.to_owned());
    while let Some(id) = current {
        if Some(&id) == common_ancestor_id.as_ref() || !seen.insert(id.clone()) {
            break;
        }
        let Some(entry) = session.get_entry(&id)? else { break };
        entries.push(entry);
        current = entry.parent_id.clone();
    }
    entries.reverse();
    Ok(BranchCollection { entries, common_ancestor_id })
}

/// What a branch summarizer reads: the messages that fit the budget, the files
/// touched, and the token estimate of the messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BranchPreparation {
    /// Agent messages, oldest first.
    pub messages: Vec<Value>,
    /// Files read, written and edited (from tool calls and earlier branch summaries).
    pub file_ops: FileOps,
    /// The sum of [`estimate_tokens`] over `messages`.
    pub total_tokens: u64,
}

impl BranchPreparation {
    /// The preparation in the reference's JSON shape (`fileOps` sets as arrays, in insertion order).
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "messages": self.messages,
            "fileOps": file_ops_json(&self.file_ops),
            "totalTokens": self.total_tokens,
        })
    }
}

/// `{read, written, edited}` as arrays in insertion order.
pub(crate) fn file_ops_json(ops: &FileOps) -> Value {
    serde_json::json!({
        "read": ops.read.to_vec(),
        "written": ops.written.to_vec(),
        "edited": ops.edited.to_vec(),
    })
}

/// Adds the `readFiles` / `modifiedFiles` of a summary's `details` to `ops`
/// (modified files count as edited).
pub(crate) fn add_details_file_ops(details: Option<&Value>, ops: &mut FileOps) {
    let Some(details) = details else { return };
    let list = |k: &str| details.get(k).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for f in list("readFiles").iter().filter_map(Value::as_str) {
        ops.read.insert(f);
    }
    for f in list("modifiedFiles").iter().filter_map(Value::as_str) {
        ops.edited.insert(f);
    }
}

/// Prepares abandoned entries for a branch summary (pi's `prepareBranchEntries`, docs/architecture.md, "Summaries").
///
/// First the file lists of every earlier branch summary that was not made by
/// an extension; then, newest to oldest, each entry's message (tool results
/// skipped) until `token_budget` would be exceeded. A compaction or branch
/// summary that does not fit is still taken while less than 90% of the budget
/// is used. A budget of 0 or less means no limit.
pub fn prepare_branch_entries(entries: &[&Entry], token_budget: i64) -> BranchPreparation {
    let mut out = BranchPreparation::default();
    for entry in entries {
        if let EntryKind::BranchSummary(b) = &entry.kind {
            if !b.from_extension() {
                add_details_file_ops(b.details.as_ref(), &mut out.file_ops);
            }
        }
    }
    let mut newest_first = vec![];
    let mut total: i64 = 0;
    for entry in entries.iter().rev() {
        if entry.message_role() == Some(Role::ToolResult) {
            continue;
        }
        let Some(message) = entry_message(entry) else { continue };
        extract_file_ops_from_message(&message, &mut out.file_ops);
        let tokens = i64::try_from(estimate_tokens(&message)).unwrap_or(i64::MAX);
        if token_budget > 0 && total.saturating_add(tokens) > token_budget {
            let is_summary = matches!(entry.kind, EntryKind::Compaction(_) | EntryKind::BranchSummary(_));
            // 0.9 × budget, compared exactly: total < 0.9·budget ⇔ 10·total < 9·budget.
            if is_summary && (total as i128) * 10 < (token_budget as i128) * 9 {
                newest_first.push(message);
                total = total.saturating_add(tokens);
            }
            break;
        }
        newest_first.push(message);
        total = total.saturating_add(tokens);
    }
    newest_first.reverse();
    out.messages = newest_first;
    out.total_tokens = u64::try_from(total).unwrap_or(0);
    out
}
