//! Entry types (docs/format.md, "Entries" and "oh-my-pi additions") and their
//! two-stage decoding.
//!
//! Stage one reads the base fields every entry has (`type`, `id`, `parentId`,
//! `timestamp`); stage two decodes the body of a known type strictly. A known
//! type whose body does not decode is kept as [`EntryKind::Malformed`] with its
//! error; an unknown type is kept as [`EntryKind::Unknown`]. Nothing is dropped.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{Extra, MessageView};
use crate::vocab::{EntryType, Role};

/// One non-header record: the base fields and a typed body.
///
/// ```
/// use arbor_log::{Entry, EntryKind, EntryType, Role};
/// use serde_json::json;
///
/// let v = json!({"type": "message", "id": "a1", "parentId": null, "timestamp": "2026-01-01T00:00:01.000Z",
///                "message": {"role": "user", "content": "hi"}});
/// let entry = Entry::from_value(&v)?;
/// assert_eq!((entry.id.as_str(), entry.parent_id.as_deref()), ("a1", None));
/// assert_eq!((entry.entry_type(), entry.message_role()), (EntryType::Message, Some(Role::User)));
/// assert!(matches!(entry.kind, EntryKind::Message(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Unique within the file (last occurrence wins on duplicates).
    pub id: String,
    /// `None` marks a root.
    pub parent_id: Option<String>,
    /// ISO time of the append (`""` when the line has none).
    pub timestamp: String,
    /// The typed body.
    pub kind: EntryKind,
}

/// The body of an entry, by `type`.
///
/// ```
/// use arbor_log::{Entry, EntryKind};
/// use serde_json::json;
///
/// let v = json!({"type": "model_change", "id": "m1", "parentId": null, "timestamp": "2026-01-01T00:00:01.000Z",
///                "provider": "anthropic", "modelId": "claude-sonnet-4-5"});
/// match Entry::from_value(&v)?.kind {
///     EntryKind::ModelChange(m) => assert_eq!(m.model_id, Some(json!("claude-sonnet-4-5"))),
///     other => panic!("a model change, not {other:?}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    /// `message`: an agent message.
    Message(MessageEntry),
    /// `thinking_level_change`.
    ThinkingLevelChange(ThinkingLevelChange),
    /// `model_change`.
    ModelChange(ModelChange),
    /// `compaction`.
    Compaction(Compaction),
    /// `branch_summary`.
    BranchSummary(BranchSummary),
    /// `custom`: extension state.
    Custom(CustomEntry),
    /// `custom_message`: an extension message in the context.
    CustomMessage(CustomMessageEntry),
    /// `label`.
    Label(LabelEntry),
    /// `session_info`.
    SessionInfo(SessionInfo),
    /// omp: `ttsr_injection`.
    TtsrInjection(TtsrInjection),
    /// omp-S: `mode_change`.
    ModeChange(ModeChange),
    /// A type Arbor does not know: every field but the base ones, verbatim.
    Unknown {
        /// The type (always [`EntryType::Other`]).
        entry_type: EntryType,
        /// Every field but the base ones, in file order.
        fields: Extra,
    },
    /// A known type whose body did not decode: the fields, verbatim, and why.
    Malformed {
        /// The type (a known one).
        entry_type: EntryType,
        /// Every field but the base ones, in file order.
        fields: Extra,
        /// Why the body did not decode.
        error: String,
    },
}

impl EntryKind {
    /// The `type` this body is written with (`Other` for an unknown type).
    pub fn entry_type(&self) -> EntryType {
        match self {
            EntryKind::Message(_) => EntryType::Message,
            EntryKind::ThinkingLevelChange(_) => EntryType::ThinkingLevelChange,
            EntryKind::ModelChange(_) => EntryType::ModelChange,
            EntryKind::Compaction(_) => EntryType::Compaction,
            EntryKind::BranchSummary(_) => EntryType::BranchSummary,
            EntryKind::Custom(_) => EntryType::Custom,
            EntryKind::CustomMessage(_) => EntryType::CustomMessage,
            EntryKind::Label(_) => EntryType::Label,
            EntryKind::SessionInfo(_) => EntryType::SessionInfo,
            EntryKind::TtsrInjection(_) => EntryType::TtsrInjection,
            EntryKind::ModeChange(_) => EntryType::ModeChange,
            EntryKind::Unknown { entry_type, .. } | EntryKind::Malformed { entry_type, .. } => entry_type.clone(),
        }
    }
}

/// `type: "message"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageEntry {
    /// The agent message, kept as opaque JSON (see [`MessageEntry::view`] for a borrowed view).
    pub message: Value,
    #[serde(flatten)]
    /// Fields Arbor does not know, in file order.
    pub extra: Extra,
}

impl MessageEntry {
    /// The message's `role`, when it is a string.
    pub fn role(&self) -> Option<Role> {
        self.view().role()
    }
    /// A borrowed view of the message: role, content blocks, text, tool calls.
    pub fn view(&self) -> MessageView<'_> {
        MessageView::new(&self.message)
    }
}

/// `type: "thinking_level_change"`. omp-S may write `null`. The level is kept
/// as written (absent: `None`), since pi's context carries it as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingLevelChange {
    /// The new level (`off`, `low`, `medium`, `high`, …; `null` in omp-S files),
    /// as written (absent: `None`): pi's context carries it as it is.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<Value>,
    #[serde(flatten)]
    /// Fields Arbor does not know, in file order.
    pub extra: Extra,
}

impl ThinkingLevelChange {
    /// The level when it is a string.
    pub fn level(&self) -> Option<&str> {
        self.thinking_level.as_ref().and_then(Value::as_str)
    }
}

/// A field as written: `None` when absent, `Some` when present (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// `type: "model_change"`: pi's `{provider, modelId}` or omp's `{model: "p/id", role?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelChange {
    /// pi: the provider, as written (absent: `None`): pi's context carries it as it is.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub provider: Option<Value>,
    /// pi: the model id, as written (absent: `None`).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub model_id: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// omp: `provider/model`.
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// omp: the model role this change is for (`default` when absent).
    pub role: Option<String>,
    #[serde(flatten)]
    /// Fields Arbor does not know, in file order.
    pub extra: Extra,
}

impl ModelChange {
    /// The model id to show: pi's `modelId` when it is a string, else omp's `model`.
    pub fn model_text(&self) -> Option<&str> {
        self.model_id.as_ref().and_then(Value::as_str).or(self.model.as_deref())
    }

    /// The `(provider, modelId)` this entry selects for the default role: pi's
    /// fields, or omp's `model` split on the first `/` when the role is default.
    pub fn default_model(&self) -> Option<(String, String)> {
        if self.provider.is_some() || self.model_id.is_some() {
            let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).unwrap_or_default().to_owned();
            return Some((text(&self.provider), text(&self.model_id)));
        }
        let model = self.model.as_deref()?;
        if !matches!(self.role.as_deref(), None | Some("default")) {
            return None;
        }
        let (p, m) = model.split_once('/').unwrap_or(("", model));
        Some((p.to_owned(), m.to_owned()))
    }
}

/// `type: "compaction"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compaction {
    /// The summary text.
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The first entry the context keeps after the summary.
    pub first_kept_entry_id: Option<String>,
    /// The context size before compacting, as written (absent: `None`; beyond `f64` it reads as `null`).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Extension data (pi: `{readFiles, modifiedFiles}`).
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// True when an extension wrote the summary (see also `from_extension`).
    pub from_hook: Option<bool>,
    #[serde(flatten)]
    /// Fields Arbor does not know, in file order.
    pub extra: Extra,
}

impl Compaction {
    /// pi's `fromHook` or omp's `fromExtension`.
    pub fn from_extension(&self) -> bool {
        self.from_hook == Some(true) || self.extra.get("fromExtension") == Some(&Value::Bool(true))
    }
}

/// `type: "branch_summary"`. `fromId` is the new position, or `"root"` (a pi quirk we keep).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummary {
    #[serde(default)]
    /// The entry the branch was left from (the new position), or `"root"`.
    pub from_id: String,
    /// The summary text.
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Extension data (pi: `{readFiles, modifiedFiles}`).
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// True when an extension wrote the summary (see also `from_extension`).
    pub from_hook: Option<bool>,
    #[serde(flatten)]
    /// Fields Arbor does not know, in file order.
    pub extra: Extra,
}

impl BranchSummary {
    /// pi's `fromHook` or omp's `fromExtension`.
    pub fn from_extension(&self) -> bool {
        self.from_hook == Some(true) || self.extra.get("fromExtension") == Some(&Value::Bool(true))
    }
}

/// `type: "custom"`: extension state, never part of the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomEntry {
    /// The extension's name for this kind of state.
    pub custom_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The state.
    pub data: Option<Value>,
    #[serde(flatten)]
    /// Fields Arbor does not know, in file order.
    pub extra: Extra,
}

/// `type: "custom_message"`: an extension message that is part of the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessageEntry {
    /// The extension's name for this kind of message.
    pub custom_type: String,
    /// The message content (a string or content blocks), as written (absent:
    /// `None`), like `display` and `details`: the context message carries them
    /// as they are, absent ones left out.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// Whether a UI shows the message.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub display: Option<Value>,
    /// Extension data, not sent to the model.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(flatten)]
    /// Fields Arbor does not know, in file order.
    pub extra: Extra,
}

/// `type: "label"`. A `label` JavaScript finds true (a non-empty string, and
/// as in pi any other true value: `42`, `true`, `{}`) sets the target's label;
/// anything else (absent, `""`, `0`, `false`, `null`) clears it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelEntry {
    /// The entry labelled.
    pub target_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The label as written: a value JavaScript finds true sets it, anything else clears it.
    pub label: Option<Value>,
    #[serde(flatten)]
    /// Fields Arbor does not know, in file order.
    pub extra: Extra,
}

impl LabelEntry {
    /// The label this entry sets, or `None` when it clears one.
    pub fn set_to(&self) -> Option<&Value> {
        self.label.as_ref().filter(|v| crate::json::truthy(Some(v)))
    }

    /// The label as text: a string as it is, another value as its JSON.
    pub fn text(&self) -> Option<String> {
        self.set_to().map(crate::json::text)
    }
}

/// `type: "session_info"` (pi): the session's display name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The display name.
    pub name: Option<String>,
    #[serde(flatten)]
    /// Fields Arbor does not know, in file order.
    pub extra: Extra,
}

/// omp `type: "ttsr_injection"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TtsrInjection {
    #[serde(default)]
    /// The rules injected into the context.
    pub injected_rules: Vec<String>,
    #[serde(flatten)]
    /// Fields Arbor does not know, in file order.
    pub extra: Extra,
}

/// omp-S `type: "mode_change"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeChange {
    /// The mode.
    pub mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The mode's data.
    pub data: Option<Value>,
    #[serde(flatten)]
    /// Fields Arbor does not know, in file order.
    pub extra: Extra,
}

/// Why a record is not an entry at all (it is still kept verbatim by the log).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAnEntry {
    #[error("not a JSON object")]
    /// The record is not a JSON object.
    NotObject,
    #[error("no string \"type\"")]
    /// It has no string `type`.
    NoType,
    #[error("no string \"id\"")]
    /// It has no string `id`.
    NoId,
}

const BASE_KEYS: [&str; 4] = ["type", "id", "parentId", "timestamp"];

fn body<T: DeserializeOwned>(fields: &Extra) -> Result<T, String> {
    T::deserialize(Value::Object(fields.clone())).map_err(|e| e.to_string())
}

impl Entry {
    /// Decodes an entry from a JSON value (stage one: base fields; stage two: body).
    pub fn from_value(v: &Value) -> Result<Entry, NotAnEntry> {
        let obj = v.as_object().ok_or(NotAnEntry::NotObject)?;
        let entry_type = obj.get("type").and_then(Value::as_str).ok_or(NotAnEntry::NoType)?;
        let id = obj.get("id").and_then(Value::as_str).ok_or(NotAnEntry::NoId)?;
        // A `parentId` that is not a string resolves to no entry: a root, as pi reads it.
        let parent_id = match obj.get("parentId") {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        let timestamp = obj.get("timestamp").and_then(Value::as_str).unwrap_or("").to_owned();
        let non_base = || obj.iter().filter(|(k, _)| !BASE_KEYS.contains(&k.as_str()));
        if let ("message", Some(message)) = (entry_type, obj.get("message")) {
            // Messages are most of a file's bytes: decode them by hand, copying
            // the message once, instead of through serde's buffered `flatten`.
            let kind = EntryKind::Message(MessageEntry {
                message: message.clone(),
                extra: non_base().filter(|(k, _)| *k != "message").map(|(k, v)| (k.clone(), v.clone())).collect(),
            });
            return Ok(Entry { id: id.to_owned(), parent_id, timestamp, kind });
        }
        let fields: Extra = non_base().map(|(k, v)| (k.clone(), v.clone())).collect();
        let entry_type = EntryType::parse(entry_type);
        let decoded = match entry_type {
            // Decoded above; a message without `message` is malformed.
            EntryType::Message => Err("missing field `message`".to_owned()),
            EntryType::ThinkingLevelChange => body(&fields).map(EntryKind::ThinkingLevelChange),
            EntryType::ModelChange => body(&fields).map(EntryKind::ModelChange),
            EntryType::Compaction => body(&fields).map(EntryKind::Compaction),
            EntryType::BranchSummary => body(&fields).map(EntryKind::BranchSummary),
            EntryType::Custom => body(&fields).map(EntryKind::Custom),
            EntryType::CustomMessage => body(&fields).map(EntryKind::CustomMessage),
            EntryType::Label => body(&fields).map(EntryKind::Label),
            EntryType::SessionInfo => body(&fields).map(EntryKind::SessionInfo),
            EntryType::TtsrInjection => body(&fields).map(EntryKind::TtsrInjection),
            EntryType::ModeChange => body(&fields).map(EntryKind::ModeChange),
            EntryType::Other(_) => {
                return Ok(Entry {
                    id: id.to_owned(),
                    parent_id,
                    timestamp,
                    kind: EntryKind::Unknown { entry_type, fields },
                })
            }
        };
        let kind = decoded.unwrap_or_else(|error| EntryKind::Malformed { entry_type, fields, error });
        Ok(Entry { id: id.to_owned(), parent_id, timestamp, kind })
    }

    /// Like [`Entry::from_value`], but takes the value, so a message is moved, not copied.
    pub fn from_owned(mut v: Value) -> Result<Entry, NotAnEntry> {
        let is_message = v.get("type").and_then(Value::as_str) == Some("message");
        let message = match v.as_object_mut() {
            Some(obj) if is_message && obj.contains_key("message") => obj.insert("message".into(), Value::Null),
            _ => None,
        };
        let mut entry = Entry::from_value(&v)?;
        if let (Some(m), EntryKind::Message(body)) = (message, &mut entry.kind) {
            body.message = m;
        }
        Ok(entry)
    }

    /// The entry's `type`.
    pub fn entry_type(&self) -> EntryType {
        self.kind.entry_type()
    }

    /// The message of a `message` entry.
    pub fn message(&self) -> Option<&MessageEntry> {
        match &self.kind {
            EntryKind::Message(m) => Some(m),
            _ => None,
        }
    }

    /// The role of a `message` entry's message.
    pub fn message_role(&self) -> Option<Role> {
        self.message().and_then(MessageEntry::role)
    }

    /// The entry as a JSON object in pi's key order (base fields first; for
    /// `custom` and `custom_message` the body's known fields come first, as pi writes them).
    pub fn to_value(&self) -> Value {
        let (known, extra_len) = match &self.kind {
            EntryKind::Message(b) => (ser(b), b.extra.len()),
            EntryKind::ThinkingLevelChange(b) => (ser(b), b.extra.len()),
            EntryKind::ModelChange(b) => (ser(b), b.extra.len()),
            EntryKind::Compaction(b) => (ser(b), b.extra.len()),
            EntryKind::BranchSummary(b) => (ser(b), b.extra.len()),
            EntryKind::Custom(b) => (ser(b), b.extra.len()),
            EntryKind::CustomMessage(b) => (ser(b), b.extra.len()),
            EntryKind::Label(b) => (ser(b), b.extra.len()),
            EntryKind::SessionInfo(b) => (ser(b), b.extra.len()),
            EntryKind::TtsrInjection(b) => (ser(b), b.extra.len()),
            EntryKind::ModeChange(b) => (ser(b), b.extra.len()),
            EntryKind::Unknown { fields, .. } | EntryKind::Malformed { fields, .. } => (fields.clone(), fields.len()),
        };
        let body_first = matches!(self.kind, EntryKind::Custom(_) | EntryKind::CustomMessage(_));
        let n_known = known.len().saturating_sub(extra_len);
        let mut out = Map::new();
        out.insert("type".into(), Value::String(self.entry_type().as_str().to_owned()));
        let mut rest = known.into_iter();
        if body_first {
            for (k, v) in rest.by_ref().take(n_known) {
                out.insert(k, v);
            }
        }
        out.insert("id".into(), Value::String(self.id.clone()));
        out.insert("parentId".into(), self.parent_id.clone().map_or(Value::Null, Value::String));
        out.insert("timestamp".into(), Value::String(self.timestamp.clone()));
        for (k, v) in rest {
            out.insert(k, v);
        }
        Value::Object(out)
    }
}

fn ser<T: Serialize>(b: &T) -> Extra {
    match serde_json::to_value(b) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round(line: &str) -> String {
        let v: Value = serde_json::from_str(line).unwrap();
        serde_json::to_string(&Entry::from_value(&v).unwrap().to_value()).unwrap()
    }

    #[test]
    fn pi_lines_reserialize_in_pi_order() {
        for line in [
            r#"{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-03-01T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"Hello"}],"timestamp":1772359201000}}"#,
            r#"{"type":"model_change","id":"d4e5f6a7","parentId":null,"timestamp":"2026-03-01T10:00:00.010Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}"#,
            r#"{"type":"custom","customType":"my_data","data":{"foo":"bar"},"id":"1","parentId":"0","timestamp":"t"}"#,
            r#"{"type":"custom_message","customType":"x","content":"hi","display":true,"details":{"a":1},"id":"1","parentId":"0","timestamp":"t","zzz":1}"#,
            r#"{"type":"label","id":"j0k1l2m4","parentId":"j0k1l2m3","timestamp":"2026-03-01T10:31:00.000Z","targetId":"a1b2c3d4"}"#,
            r#"{"type":"compaction","id":"c","parentId":"b","timestamp":"t","summary":"s","firstKeptEntryId":"a","tokensBefore":1000,"details":{"readFiles":[]},"fromHook":false}"#,
            r#"{"type":"branch_summary","id":"d4e5f6a7","parentId":"9a8b7c6d","timestamp":"t","fromId":"9a8b7c6d","summary":"x","details":{"readFiles":[],"modifiedFiles":[]},"fromHook":false}"#,
            r#"{"type":"future_thing","id":"1","parentId":null,"timestamp":"t","payload":[1,2]}"#,
        ] {
            assert_eq!(round(line), line);
        }
    }

    #[test]
    fn two_stage_decoding() {
        let unknown = Entry::from_value(&json!({"type":"zzz","id":"1","parentId":null,"x":1})).unwrap();
        assert!(matches!(unknown.kind, EntryKind::Unknown { .. }));
        let bad = Entry::from_value(&json!({"type":"label","id":"1","parentId":null})).unwrap();
        match bad.kind {
            EntryKind::Malformed { entry_type, error, .. } => {
                assert_eq!(entry_type, EntryType::Label);
                assert!(error.contains("targetId"), "{error}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(Entry::from_value(&json!(42)), Err(NotAnEntry::NotObject));
        assert_eq!(Entry::from_value(&json!({"type":"message"})), Err(NotAnEntry::NoId));
    }

    #[test]
    fn omp_model_change_shapes() {
        let e = Entry::from_value(
            &json!({"type":"model_change","id":"1","parentId":null,"model":"openai/gpt-5/mini","role":"default"}),
        )
        .unwrap();
        let EntryKind::ModelChange(m) = e.kind else { panic!() };
        assert_eq!(m.default_model(), Some(("openai".into(), "gpt-5/mini".into())));
        let smol = ModelChange {
            provider: None,
            model_id: None,
            model: Some("a/b".into()),
            role: Some("smol".into()),
            extra: Map::new(),
        };
        assert_eq!(smol.default_model(), None);
    }
}
