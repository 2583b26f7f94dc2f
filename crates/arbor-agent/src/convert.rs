//! Entries as the agent messages that summaries and compaction read (pi's
//! `getMessageFromEntry` and the `create*Message` helpers).

use arbor_context::messages::{branch_summary_message, compaction_summary_message, custom_message};
use arbor_log::messages::content_text;
use arbor_log::{Entry, EntryKind, MessageView, Role};
use serde_json::Value;

/// The message an entry stands for in compaction (docs/architecture.md, "Compacting"):
/// `message` → its message (tool results included), `custom_message` → a
/// `custom` message, `branch_summary` → `branchSummary`, `compaction` →
/// `compactionSummary`; every other entry → none. The message shapes are
/// arbor-context's, so summaries and contexts see the same messages.
pub(crate) fn entry_message(entry: &Entry) -> Option<Value> {
    match &entry.kind {
        EntryKind::Message(m) => Some(m.message.clone()),
        EntryKind::CustomMessage(c) => Some(custom_message(c, &entry.timestamp)),
        EntryKind::BranchSummary(b) => Some(branch_summary_message(b, &entry.timestamp)),
        EntryKind::Compaction(c) => Some(compaction_summary_message(c, &entry.timestamp)),
        _ => None,
    }
}

/// The text a user message or `custom_message` pre-fills the editor with:
/// string content, or the text blocks joined with `""`.
pub(crate) fn editor_text(entry: &Entry) -> Option<String> {
    match &entry.kind {
        EntryKind::Message(m) if m.role() == Some(Role::User) => Some(m.view().text("")),
        EntryKind::CustomMessage(c) => Some(content_text(c.content.as_ref(), "")),
        _ => None,
    }
}

/// The text blocks of an assistant message joined with `sep`.
pub(crate) fn assistant_text(message: &Value, sep: &str) -> String {
    MessageView::new(message).text(sep)
}
