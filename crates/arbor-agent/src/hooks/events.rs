//! The events and their results, with their JSON (pi's names and fields).

use arbor_log::Entry;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::compaction::CompactionPreparation;

/// The name of a session event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventName {
    /// `session_before_tree`: before a tree navigation (cancel, summary, overrides).
    SessionBeforeTree,
    /// `session_tree`: after a tree navigation.
    SessionTree,
    /// `session_before_fork` (omp: `session_before_branch`): before a fork (cancel, skip restore).
    SessionBeforeFork,
    /// `session_fork` (omp: `session_branch`): after a fork.
    SessionFork,
    /// `session_before_compact`: before a compaction (cancel, or supply it).
    SessionBeforeCompact,
    /// `session.compacting` (omp): while the built-in summarizer prepares (extra context, prompt).
    SessionCompacting,
    /// `session_compact`: after a compaction.
    SessionCompact,
}

impl EventName {
    /// Every event.
    pub const ALL: [EventName; 7] = [
        EventName::SessionBeforeTree,
        EventName::SessionTree,
        EventName::SessionBeforeFork,
        EventName::SessionFork,
        EventName::SessionBeforeCompact,
        EventName::SessionCompacting,
        EventName::SessionCompact,
    ];

    /// pi's name of the event.
    pub fn as_str(self) -> &'static str {
        match self {
            EventName::SessionBeforeTree => "session_before_tree",
            EventName::SessionTree => "session_tree",
            EventName::SessionBeforeFork => "session_before_fork",
            EventName::SessionFork => "session_fork",
            EventName::SessionBeforeCompact => "session_before_compact",
            EventName::SessionCompacting => "session.compacting",
            EventName::SessionCompact => "session_compact",
        }
    }

    /// Parses a name; oh-my-pi's `session_before_branch` / `session_branch`
    /// are accepted for the fork events.
    pub fn parse(name: &str) -> Option<EventName> {
        Some(match name {
            "session_before_tree" => EventName::SessionBeforeTree,
            "session_tree" => EventName::SessionTree,
            "session_before_fork" | "session_before_branch" => EventName::SessionBeforeFork,
            "session_fork" | "session_branch" => EventName::SessionFork,
            "session_before_compact" => EventName::SessionBeforeCompact,
            "session.compacting" => EventName::SessionCompacting,
            "session_compact" => EventName::SessionCompact,
            _ => return None,
        })
    }

    /// True for events whose results are ignored.
    pub fn is_notification(self) -> bool {
        matches!(self, EventName::SessionTree | EventName::SessionFork | EventName::SessionCompact)
    }
}

/// What a tree navigation is about to do (pi's `TreePreparation`).
#[derive(Debug, Clone, PartialEq)]
pub struct TreePreparation {
    /// The selected entry.
    pub target_id: String,
    /// The leaf before the move.
    pub old_leaf_id: Option<String>,
    /// The deepest entry shared by the old path and the target's path.
    pub common_ancestor_id: Option<String>,
    /// The abandoned entries, oldest first.
    pub entries_to_summarize: Vec<Entry>,
    /// True when the user asked for a summary.
    pub user_wants_summary: bool,
    /// The user's instructions for the summary.
    pub custom_instructions: Option<String>,
    /// True when the instructions replace the prompt.
    pub replace_instructions: Option<bool>,
    /// A label for the new position.
    pub label: Option<String>,
}

impl TreePreparation {
    /// pi's JSON (`undefined` fields absent).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("targetId".into(), self.target_id.clone().into());
        m.insert("oldLeafId".into(), opt_str(&self.old_leaf_id));
        m.insert("commonAncestorId".into(), opt_str(&self.common_ancestor_id));
        m.insert("entriesToSummarize".into(), entries_json(&self.entries_to_summarize));
        m.insert("userWantsSummary".into(), self.user_wants_summary.into());
        if let Some(c) = &self.custom_instructions {
            m.insert("customInstructions".into(), c.clone().into());
        }
        if let Some(r) = self.replace_instructions {
            m.insert("replaceInstructions".into(), r.into());
        }
        if let Some(l) = &self.label {
            m.insert("label".into(), l.clone().into());
        }
        Value::Object(m)
    }
}

/// `session_tree`: where the navigation ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeEvent {
    /// The final leaf (a summary or label entry when one was written).
    pub new_leaf_id: Option<String>,
    /// The leaf before.
    pub old_leaf_id: Option<String>,
    /// The `branch_summary` entry written, if any.
    pub summary_entry: Option<Entry>,
    /// Whether a hook supplied the summary (only with a summary).
    pub from_extension: Option<bool>,
}

/// `session_before_fork`: the user message to fork before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeforeForkEvent {
    /// The selected user message.
    pub entry_id: String,
}

/// `session_fork`: the session file that was left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkEvent {
    /// The previous file (`None` in memory).
    pub previous_session_file: Option<String>,
}

/// `session_before_compact`.
#[derive(Debug, Clone, PartialEq)]
pub struct BeforeCompactEvent {
    /// What the compaction would summarize and keep.
    pub preparation: CompactionPreparation,
    /// The path being compacted, root first.
    pub branch_entries: Vec<Entry>,
    /// The user's focus.
    pub custom_instructions: Option<String>,
}

/// `session.compacting` (omp): the built-in summarizer is about to run.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactingEvent {
    /// The session id.
    pub session_id: String,
    /// The messages to be summarized.
    pub messages: Vec<Value>,
}

/// `session_compact`: the compaction entry written.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactEvent {
    /// The new `compaction` entry.
    pub compaction_entry: Entry,
    /// Whether a hook supplied it.
    pub from_extension: bool,
}

/// One session event with its payload.
#[derive(Debug, Clone, PartialEq)]
pub enum HookEvent {
    /// `session_before_tree`.
    BeforeTree(TreePreparation),
    /// `session_tree`.
    Tree(TreeEvent),
    /// `session_before_fork`.
    BeforeFork(BeforeForkEvent),
    /// `session_fork`.
    Fork(ForkEvent),
    /// `session_before_compact`.
    BeforeCompact(BeforeCompactEvent),
    /// `session.compacting`.
    Compacting(CompactingEvent),
    /// `session_compact`.
    Compact(CompactEvent),
}

fn opt_str(v: &Option<String>) -> Value {
    v.clone().map_or(Value::Null, Value::String)
}

fn entries_json(entries: &[Entry]) -> Value {
    Value::Array(entries.iter().map(Entry::to_value).collect())
}

impl HookEvent {
    /// The event's name.
    pub fn name(&self) -> EventName {
        match self {
            HookEvent::BeforeTree(_) => EventName::SessionBeforeTree,
            HookEvent::Tree(_) => EventName::SessionTree,
            HookEvent::BeforeFork(_) => EventName::SessionBeforeFork,
            HookEvent::Fork(_) => EventName::SessionFork,
            HookEvent::BeforeCompact(_) => EventName::SessionBeforeCompact,
            HookEvent::Compacting(_) => EventName::SessionCompacting,
            HookEvent::Compact(_) => EventName::SessionCompact,
        }
    }

    /// The event as pi's JSON with `type` set to pi's name (the abort signal is not part of it).
    pub fn to_json(&self) -> Value {
        self.to_json_as(self.name().as_str())
    }

    /// The event as JSON with `type` set to `type_name` (an alias a hook was registered under).
    pub fn to_json_as(&self, type_name: &str) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), type_name.into());
        match self {
            HookEvent::BeforeTree(p) => {
                m.insert("preparation".into(), p.to_json());
            }
            HookEvent::Tree(t) => {
                m.insert("newLeafId".into(), opt_str(&t.new_leaf_id));
                m.insert("oldLeafId".into(), opt_str(&t.old_leaf_id));
                if let Some(e) = &t.summary_entry {
                    m.insert("summaryEntry".into(), e.to_value());
                }
                if let Some(f) = t.from_extension {
                    m.insert("fromExtension".into(), f.into());
                }
            }
            HookEvent::BeforeFork(f) => {
                m.insert("entryId".into(), f.entry_id.clone().into());
            }
            HookEvent::Fork(f) => {
                if let Some(p) = &f.previous_session_file {
                    m.insert("previousSessionFile".into(), p.clone().into());
                }
            }
            HookEvent::BeforeCompact(c) => {
                m.insert("preparation".into(), c.preparation.to_json());
                m.insert("branchEntries".into(), entries_json(&c.branch_entries));
                if let Some(ci) = &c.custom_instructions {
                    m.insert("customInstructions".into(), ci.clone().into());
                }
            }
            HookEvent::Compacting(c) => {
                m.insert("sessionId".into(), c.session_id.clone().into());
                m.insert("messages".into(), Value::Array(c.messages.clone()));
            }
            HookEvent::Compact(c) => {
                m.insert("compactionEntry".into(), c.compaction_entry.to_value());
                m.insert("fromExtension".into(), c.from_extension.into());
            }
        }
        Value::Object(m)
    }
}

/// Absent → `None`; `null` → `Some(None)`; a value → `Some(Some(v))`
/// (JavaScript's `undefined` versus `null`).
fn explicit<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A summary supplied by a hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSummary {
    /// The summary text.
    pub summary: String,
    /// Stored as the entry's `details`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// The result of `session_before_tree`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BeforeTreeResult {
    /// `true` cancels the navigation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    /// A summary to use instead of the built-in summarizer (only if the user asked for one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<HookSummary>,
    /// Overrides the instructions when present (`null` clears them).
    #[serde(default, deserialize_with = "explicit", skip_serializing_if = "Option::is_none")]
    pub custom_instructions: Option<Option<String>>,
    /// Overrides `replaceInstructions` when present.
    #[serde(default, deserialize_with = "explicit", skip_serializing_if = "Option::is_none")]
    pub replace_instructions: Option<Option<bool>>,
    /// Overrides the label when present.
    #[serde(default, deserialize_with = "explicit", skip_serializing_if = "Option::is_none")]
    pub label: Option<Option<String>>,
}

/// The result of `session_before_fork`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BeforeForkResult {
    /// `true` cancels the fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    /// `true` forks without rebuilding the agent's messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_conversation_restore: Option<bool>,
}

/// A compaction supplied by a hook, stored as is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HookCompaction {
    /// The summary text.
    pub summary: String,
    /// The first entry kept.
    pub first_kept_entry_id: String,
    /// The context size before.
    pub tokens_before: u64,
    /// Stored as the entry's `details`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// The result of `session_before_compact`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BeforeCompactResult {
    /// `true` cancels (`Compaction cancelled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    /// A compaction to write instead of summarizing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<HookCompaction>,
}

/// The result of `session.compacting` (omp).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompactingResult {
    /// Lines of extra context given to the summarizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Vec<String>>,
    /// A prompt that replaces the built-in summarization prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// oh-my-pi extension state; accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_data: Option<Value>,
}

/// A handler's answer to a `session_before_*` or `session.compacting` event.
#[derive(Debug, Clone, PartialEq)]
pub enum HookResponse {
    /// For `session_before_tree`.
    BeforeTree(BeforeTreeResult),
    /// For `session_before_fork`.
    BeforeFork(BeforeForkResult),
    /// For `session_before_compact`.
    BeforeCompact(BeforeCompactResult),
    /// For `session.compacting`.
    Compacting(CompactingResult),
}

impl HookResponse {
    /// The event this answers.
    pub fn event(&self) -> EventName {
        match self {
            HookResponse::BeforeTree(_) => EventName::SessionBeforeTree,
            HookResponse::BeforeFork(_) => EventName::SessionBeforeFork,
            HookResponse::BeforeCompact(_) => EventName::SessionBeforeCompact,
            HookResponse::Compacting(_) => EventName::SessionCompacting,
        }
    }

    /// True when the response cancels the operation.
    pub fn is_cancel(&self) -> bool {
        let cancel = match self {
            HookResponse::BeforeTree(r) => r.cancel,
            HookResponse::BeforeFork(r) => r.cancel,
            HookResponse::BeforeCompact(r) => r.cancel,
            HookResponse::Compacting(_) => None,
        };
        cancel == Some(true)
    }

    /// Decodes what a command hook printed on stdout in answer to `event`
    /// (docs/hooks.md, "Running a command"): nothing but whitespace, or
    /// anything for a notification, is no answer; otherwise it must be one
    /// JSON value, decoded by [`HookResponse::from_json`]. The error says
    /// what is wrong, with the end of the output.
    pub fn from_stdout(event: EventName, stdout: &[u8]) -> Result<Option<HookResponse>, String> {
        if event.is_notification() || stdout.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let value: Value =
            serde_json::from_slice(stdout).map_err(|e| format!("stdout is not JSON ({e}): {}", tail(stdout)))?;
        HookResponse::from_json(event, value).map_err(|e| format!("stdout is not a {} result: {e}", event.as_str()))
    }

    /// Decodes a JSON answer to `event`: `null` is no answer; a notification
    /// takes no answer; anything that is not the event's result shape is an error.
    pub fn from_json(event: EventName, value: Value) -> Result<Option<HookResponse>, String> {
        if value.is_null() || event.is_notification() {
            return Ok(None);
        }
        let r = match event {
            EventName::SessionBeforeTree => serde_json::from_value(value).map(HookResponse::BeforeTree),
            EventName::SessionBeforeFork => serde_json::from_value(value).map(HookResponse::BeforeFork),
            EventName::SessionBeforeCompact => serde_json::from_value(value).map(HookResponse::BeforeCompact),
            EventName::SessionCompacting => serde_json::from_value(value).map(HookResponse::Compacting),
            EventName::SessionTree | EventName::SessionFork | EventName::SessionCompact => return Ok(None),
        };
        r.map(Some).map_err(|e| e.to_string())
    }
}

/// The end of a command's output for a message: trimmed, its last 500 characters.
pub(crate) fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    let chars: Vec<char> = text.chars().collect();
    if chars.len() > 500 {
        format!("…{}", chars[chars.len() - 500..].iter().collect::<String>())
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aliases_and_names() {
        for e in EventName::ALL {
            assert_eq!(EventName::parse(e.as_str()), Some(e));
        }
        assert_eq!(EventName::parse("session_before_branch"), Some(EventName::SessionBeforeFork));
        assert_eq!(EventName::parse("session_branch"), Some(EventName::SessionFork));
        assert_eq!(EventName::parse("session_before_switch"), None);
    }

    #[test]
    fn overrides_tell_null_from_absent() {
        let r =
            HookResponse::from_json(EventName::SessionBeforeTree, json!({"label": null, "customInstructions": "x"}))
                .unwrap()
                .unwrap();
        let HookResponse::BeforeTree(r) = r else { panic!() };
        assert_eq!(r.label, Some(None));
        assert_eq!(r.custom_instructions, Some(Some("x".into())));
        assert_eq!(r.replace_instructions, None);
    }

    #[test]
    fn bad_shapes_are_errors() {
        assert!(HookResponse::from_json(EventName::SessionBeforeTree, json!({"cancle": true})).is_err());
        assert!(
            HookResponse::from_json(EventName::SessionBeforeCompact, json!({"compaction": {"summary": 1}})).is_err()
        );
        assert_eq!(HookResponse::from_json(EventName::SessionTree, json!({"anything": 1})), Ok(None));
        assert_eq!(HookResponse::from_json(EventName::SessionBeforeFork, Value::Null), Ok(None));
    }
}
