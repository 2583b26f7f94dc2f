//! The pure half of compaction (docs/architecture.md, "Compacting"): where to cut a path, and
//! what to summarize and keep.
//!
//! [`prepare_compaction`] is Arbor's algorithm, with the pi #2608 fix (the
//! entries the previous compaction kept stay part of the sequence that is
//! cut and summarized). [`prepare_compaction_pi`] reproduces pi v0.58.3,
//! which loses those entries on a second compaction; it exists to check the
//! shared parts against the reference outputs.

use arbor_context::summary::{extract_file_ops_from_message, FileOps};
use arbor_context::{estimate_context_tokens, estimate_tokens};
use arbor_log::{Entry, EntryKind, Role};
use serde_json::Value;

use crate::branch::{add_details_file_ops, file_ops_json};
use crate::convert::entry_message;

/// Compaction settings (pi's `compaction.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSettings {
    /// Automatic compaction on (checked by [`crate::AgentSession::prompt`]; also in the hook payload).
    pub enabled: bool,
    /// Tokens left for the prompt and the summary (default 16384).
    pub reserve_tokens: u64,
    /// Tokens of recent messages kept verbatim (default 20000).
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings { enabled: true, reserve_tokens: 16384, keep_recent_tokens: 20000 }
    }
}

impl CompactionSettings {
    /// The settings as pi's JSON object.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "enabled": self.enabled,
            "reserveTokens": self.reserve_tokens,
            "keepRecentTokens": self.keep_recent_tokens,
        })
    }
}

/// pi's `shouldCompact`: compaction is enabled and the context is larger than
/// the window minus the reserve.
pub fn should_compact(context_tokens: u64, context_window: u64, settings: &CompactionSettings) -> bool {
    settings.enabled && context_tokens > context_window.saturating_sub(settings.reserve_tokens)
}

/// Where a path is cut (pi's `CutPointResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    /// The index of the first entry kept verbatim.
    pub first_kept_entry_index: usize,
    /// When the cut falls inside a turn: the index of the entry that starts it.
    pub turn_start_index: Option<usize>,
    /// True when the cut is not at a user message and a turn start was found.
    pub is_split_turn: bool,
}

/// True for entries a cut may start at: messages other than tool results,
/// `branch_summary` and `custom_message`.
fn is_valid_cut_point(entry: &Entry) -> bool {
    match &entry.kind {
        EntryKind::Message(m) => matches!(
            m.role(),
            Some(
                Role::User
                    | Role::Assistant
                    | Role::BashExecution
                    | Role::Custom
                    | Role::BranchSummary
                    | Role::CompactionSummary
            )
        ),
        EntryKind::BranchSummary(_) | EntryKind::CustomMessage(_) => true,
        EntryKind::ThinkingLevelChange(_)
        | EntryKind::ModelChange(_)
        | EntryKind::Compaction(_)
        | EntryKind::Custom(_)
        | EntryKind::Label(_)
        | EntryKind::SessionInfo(_)
        | EntryKind::TtsrInjection(_)
        | EntryKind::ModeChange(_)
        | EntryKind::Unknown { .. }
        | EntryKind::Malformed { .. } => false,
    }
}

/// The index of the entry that starts the turn holding `index`: scanning back
/// from `index` (inclusive) to `start`, the first `branch_summary`,
/// `custom_message`, or user / `bashExecution` message.
pub fn find_turn_start_index(entries: &[&Entry], index: usize, start: usize) -> Option<usize> {
    (start..=index).rev().find(|&i| match &entries[i].kind {
        EntryKind::BranchSummary(_) | EntryKind::CustomMessage(_) => true,
        EntryKind::Message(m) => matches!(m.role(), Some(Role::User | Role::BashExecution)),
        _ => false,
    })
}

/// Finds where to cut `entries[start..end]` so that about `keep_recent_tokens`
/// of recent messages stay (pi's `findCutPoint`, docs/architecture.md, "Compacting").
///
/// Walking back from the newest entry, only `message` entries are counted; at
/// the first point where the total reaches the budget, the cut is the first
/// valid cut point at or after it (never a tool result). Settings, labels and
/// other non-message entries just before the cut are pulled into the kept part.
/// When the budget is never reached, everything from the first cut point is kept.
pub fn find_cut_point(entries: &[&Entry], start: usize, end: usize, keep_recent_tokens: u64) -> CutPoint {
    let end = end.min(entries.len());
    let cut_points: Vec<usize> = (start..end).filter(|&i| is_valid_cut_point(entries[i])).collect();
    let Some(&first) = cut_points.first() else {
        return CutPoint { first_kept_entry_index: start, turn_start_index: None, is_split_turn: false };
    };
    let mut cut = first;
    let mut total: u64 = 0;
    for i in (start..end).rev() {
        let Some(m) = entries[i].message() else { continue };
        total = total.saturating_add(estimate_tokens(&m.message));
        if total >= keep_recent_tokens {
            if let Some(&c) = cut_points.iter().find(|&&c| c >= i) {
                cut = c;
            }
            break;
        }
    }
    while cut > start {
        let prev = entries[cut - 1];
        if matches!(prev.kind, EntryKind::Message(_) | EntryKind::Compaction(_)) {
            break;
        }
        cut -= 1;
    }
    let is_user = entries[cut].message_role() == Some(Role::User);
    let turn_start_index = if is_user { None } else { find_turn_start_index(entries, cut, start) };
    CutPoint { first_kept_entry_index: cut, turn_start_index, is_split_turn: !is_user && turn_start_index.is_some() }
}

/// What a compaction summarizes and keeps (pi's `CompactionPreparation`).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPreparation {
    /// The id of the first entry kept verbatim.
    pub first_kept_entry_id: String,
    /// The history to summarize, as agent messages.
    pub messages_to_summarize: Vec<Value>,
    /// When the cut splits a turn: the turn's messages before the cut.
    pub turn_prefix_messages: Vec<Value>,
    /// True when the cut splits a turn.
    pub is_split_turn: bool,
    /// The estimated size of the context before compaction.
    pub tokens_before: u64,
    /// The summary of the previous compaction on the path, for an update.
    pub previous_summary: Option<String>,
    /// Files read, written and edited (previous compaction's lists plus tool calls).
    pub file_ops: FileOps,
    /// The settings used.
    pub settings: CompactionSettings,
}

impl CompactionPreparation {
    /// The preparation in pi's JSON shape; the file sets become arrays in insertion order.
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::json!({
            "firstKeptEntryId": self.first_kept_entry_id,
            "messagesToSummarize": self.messages_to_summarize,
            "turnPrefixMessages": self.turn_prefix_messages,
            "isSplitTurn": self.is_split_turn,
            "tokensBefore": self.tokens_before,
        });
        if let (Some(s), Value::Object(map)) = (&self.previous_summary, &mut v) {
            map.insert("previousSummary".into(), s.clone().into());
        }
        if let Value::Object(map) = &mut v {
            map.insert("fileOps".into(), file_ops_json(&self.file_ops));
            map.insert("settings".into(), self.settings.to_json());
        }
        v
    }
}

/// Prepares a compaction of `path` (root first, normally `get_branch()` of the
/// leaf) with Arbor's algorithm: pi's (docs/architecture.md, "Compacting") plus the #2608 fix.
///
/// The sequence that is cut and summarized is the entries the previous
/// compaction kept (from its `firstKeptEntryId` up to it, compactions left
/// out) followed by the entries after it, so a second compaction summarizes
/// or keeps them instead of dropping them. `tokensBefore` estimates the
/// context as it is rebuilt: the previous summary, the kept entries and the
/// rest. The previous summary stays separate (an update of it is asked for).
///
/// `None` when the path ends with a compaction or has nothing to cut.
pub fn prepare_compaction(path: &[&Entry], settings: &CompactionSettings) -> Option<CompactionPreparation> {
    prepare(path, settings, true)
}

/// pi v0.58.3's `prepareCompaction`, bug included: only the entries after the
/// previous compaction are cut and summarized, so the entries it kept are
/// lost by a second compaction (pi #2608). For comparison with the reference.
pub fn prepare_compaction_pi(path: &[&Entry], settings: &CompactionSettings) -> Option<CompactionPreparation> {
    prepare(path, settings, false)
}

fn prepare(path: &[&Entry], settings: &CompactionSettings, keep_previous: bool) -> Option<CompactionPreparation> {
    if path.last().is_some_and(|e| matches!(e.kind, EntryKind::Compaction(_))) {
        return None;
    }
    let prev = path.iter().rposition(|e| matches!(e.kind, EntryKind::Compaction(_)));
    let prev_compaction = prev.and_then(|p| match &path[p].kind {
        EntryKind::Compaction(c) => Some(c),
        _ => None,
    });
    let after_prev = prev.map_or(0, |p| p + 1);

    let (seq, start, usage_messages): (Vec<&Entry>, usize, Vec<Value>) = if keep_previous {
        let kept_from = match (prev, prev_compaction) {
            (Some(p), Some(c)) => {
                c.first_kept_entry_id.as_deref().and_then(|id| path[..p].iter().position(|e| e.id == id)).unwrap_or(p)
            }
            _ => 0,
        };
        let kept = path[kept_from..prev.unwrap_or(0)].iter().filter(|e| !matches!(e.kind, EntryKind::Compaction(_)));
        let seq: Vec<&Entry> = kept.chain(path[after_prev..].iter()).copied().collect();
        let mut usage: Vec<Value> = prev.and_then(|p| entry_message(path[p])).into_iter().collect();
        usage.extend(seq.iter().filter_map(|e| entry_message(e)));
        (seq, 0, usage)
    } else {
        let usage = path[prev.unwrap_or(0)..].iter().filter_map(|e| entry_message(e)).collect();
        (path.to_vec(), after_prev, usage)
    };
    let tokens_before = estimate_context_tokens(&usage_messages).tokens;

    let cut = find_cut_point(&seq, start, seq.len(), settings.keep_recent_tokens);
    let first_kept = seq.get(cut.first_kept_entry_index)?;
    let history_end = match (cut.is_split_turn, cut.turn_start_index) {
        (true, Some(t)) => t,
        _ => cut.first_kept_entry_index,
    };
    let messages_to_summarize: Vec<Value> =
        seq[start..history_end.max(start)].iter().filter_map(|e| entry_message(e)).collect();
    let turn_prefix_messages: Vec<Value> = match (cut.is_split_turn, cut.turn_start_index) {
        (true, Some(t)) => seq[t..cut.first_kept_entry_index].iter().filter_map(|e| entry_message(e)).collect(),
        _ => vec![],
    };

    let mut file_ops = FileOps::new();
    if let Some(c) = prev_compaction {
        if !c.from_extension() {
            add_details_file_ops(c.details.as_ref(), &mut file_ops);
        }
    }
    for m in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        extract_file_ops_from_message(m, &mut file_ops);
    }

    Some(CompactionPreparation {
        first_kept_entry_id: first_kept.id.clone(),
        messages_to_summarize,
        turn_prefix_messages,
        is_split_turn: cut.is_split_turn,
        tokens_before,
        previous_summary: prev_compaction.map(|c| c.summary.clone()),
        file_ops,
        settings: *settings,
    })
}
