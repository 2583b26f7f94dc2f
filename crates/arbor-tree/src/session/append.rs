//! Every append (docs/architecture.md, "Appending"): a new entry is a child
//! of the leaf, becomes the leaf, and reaches the file at once (or with the
//! first assistant message of a new session).

use serde_json::Value;

use arbor_log::entries::{
    BranchSummary, Compaction, CustomEntry, CustomMessageEntry, LabelEntry, MessageEntry, ModelChange, SessionInfo,
    ThinkingLevelChange,
};
use arbor_log::{Entry, EntryKind};

use super::slot::entry_json;
use super::Session;
use crate::error::TreeError;

impl Session {
    /// Appends an entry with `kind` as a child of the leaf; returns its id.
    pub(super) fn append(&mut self, kind: EntryKind) -> Result<String, TreeError> {
        self.check_writable()?;
        let id = self.next_entry_id(&|s| self.has_id(s));
        let entry = Entry { id: id.clone(), parent_id: self.state.leaf.clone(), timestamp: self.now_iso(), kind };
        let json = entry_json(&entry);
        self.push_slot(entry, json, 0, false);
        self.state.leaf_moved = false;
        if let Err(e) = self.persist() {
            self.failed = Some(e.to_string());
            return Err(e);
        }
        Ok(id)
    }

    /// Appends a `message` entry (any role).
    pub fn append_message(&mut self, message: Value) -> Result<String, TreeError> {
        self.append(EntryKind::Message(MessageEntry { message, extra: Default::default() }))
    }

    /// Appends a `thinking_level_change`.
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String, TreeError> {
        self.append(EntryKind::ThinkingLevelChange(ThinkingLevelChange {
            thinking_level: Some(level.into()),
            extra: Default::default(),
        }))
    }

    /// Appends a `model_change` in pi's shape.
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String, TreeError> {
        self.append(EntryKind::ModelChange(ModelChange {
            provider: Some(provider.into()),
            model_id: Some(model_id.into()),
            model: None,
            role: None,
            extra: Default::default(),
        }))
    }

    /// Appends a `compaction`.
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: &str,
        tokens_before: u64,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String, TreeError> {
        self.append(EntryKind::Compaction(Compaction {
            summary: summary.to_owned(),
            first_kept_entry_id: Some(first_kept_entry_id.to_owned()),
            tokens_before: Some(tokens_before.into()),
            details,
            from_hook,
            extra: Default::default(),
        }))
    }

    /// Appends a `custom` entry (extension state).
    pub fn append_custom_entry(&mut self, custom_type: &str, data: Option<Value>) -> Result<String, TreeError> {
        self.append(EntryKind::Custom(CustomEntry {
            custom_type: custom_type.to_owned(),
            data,
            extra: Default::default(),
        }))
    }

    /// Appends a `custom_message` entry (part of the context).
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: &str,
        content: Value,
        display: bool,
        details: Option<Value>,
    ) -> Result<String, TreeError> {
        self.append(EntryKind::CustomMessage(CustomMessageEntry {
            custom_type: custom_type.to_owned(),
            content: Some(content),
            display: Some(display.into()),
            details,
            extra: Default::default(),
        }))
    }

    /// Appends a `session_info` with the trimmed name.
    pub fn append_session_info(&mut self, name: &str) -> Result<String, TreeError> {
        self.append(EntryKind::SessionInfo(SessionInfo {
            name: Some(name.trim().to_owned()),
            extra: Default::default(),
        }))
    }

    /// Sets (or, with `None` or `""`, clears) the label of `target_id` by appending a `label` entry.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String, TreeError> {
        if !self.has_id(target_id) {
            return Err(TreeError::NotFound(target_id.to_owned()));
        }
        let label = label.filter(|l| !l.is_empty()).map(|l| serde_json::Value::String(l.to_owned()));
        self.append(EntryKind::Label(LabelEntry { target_id: target_id.to_owned(), label, extra: Default::default() }))
    }

    /// Moves the leaf to `from` (or before the first entry) and appends a
    /// `branch_summary` there (`fromId`: `from`, or pi's `"root"`).
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String, TreeError> {
        if let Some(id) = from {
            if !self.has_id(id) {
                return Err(TreeError::NotFound(id.to_owned()));
            }
        }
        self.check_writable()?;
        self.state.leaf = from.map(str::to_owned);
        self.append(EntryKind::BranchSummary(BranchSummary {
            from_id: from.unwrap_or("root").to_owned(),
            summary: summary.to_owned(),
            details,
            from_hook,
            extra: Default::default(),
        }))
    }
}
