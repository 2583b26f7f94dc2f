//! Agent messages (spec 1.7): typed views over the opaque JSON that entries hold.
//!
//! A `message` entry keeps its message as a JSON value so that every field,
//! known or not, survives untouched. [`AgentMessage::from_value`] gives a typed
//! view of the fields Arbor reads; unknown roles and messages that do not fit
//! their role's shape come back as [`AgentMessage::Other`], never as an error.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Fields of a JSON object that Arbor does not know, kept in their order.
pub type Extra = Map<String, Value>;

/// Message content: a plain string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain string content.
    Text(String),
    /// Content blocks.
    Blocks(Vec<ContentBlock>),
}

impl Content {
    /// The text blocks (or the string) joined with `sep`; images and other blocks are ignored.
    pub fn text(&self, sep: &str) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Blocks(blocks) => {
                let parts: Vec<&str> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                parts.join(sep)
            }
        }
    }
}

/// One content block (pi-ai), with an escape hatch for blocks we do not know.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `{type:"text", text}`.
    Text { text: String, extra: Extra },
    /// `{type:"thinking", thinking}`.
    Thinking { thinking: String, extra: Extra },
    /// `{type:"image", data, mimeType}`.
    Image { data: String, mime_type: String, extra: Extra },
    /// `{type:"toolCall", id, name, arguments}`.
    ToolCall { id: String, name: String, arguments: Value, extra: Extra },
    /// Any other block, kept as is.
    Other(Map<String, Value>),
}

fn take_str(m: &mut Map<String, Value>, k: &str) -> Option<String> {
    match m.get(k) {
        Some(Value::String(_)) => match m.shift_remove(k) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

impl ContentBlock {
    fn from_map(map: Map<String, Value>) -> ContentBlock {
        let ty = map.get("type").and_then(Value::as_str).unwrap_or("").to_owned();
        let mut m = map.clone();
        m.shift_remove("type");
        let typed = match ty.as_str() {
            "text" => take_str(&mut m, "text").map(|text| ContentBlock::Text { text, extra: std::mem::take(&mut m) }),
            "thinking" => take_str(&mut m, "thinking")
                .map(|thinking| ContentBlock::Thinking { thinking, extra: std::mem::take(&mut m) }),
            "image" => match (take_str(&mut m, "data"), take_str(&mut m, "mimeType")) {
                (Some(data), Some(mime_type)) => {
                    Some(ContentBlock::Image { data, mime_type, extra: std::mem::take(&mut m) })
                }
                _ => None,
            },
            "toolCall" => match (take_str(&mut m, "id"), take_str(&mut m, "name")) {
                (Some(id), Some(name)) => {
                    let arguments = m.shift_remove("arguments").unwrap_or(Value::Object(Map::new()));
                    Some(ContentBlock::ToolCall { id, name, arguments, extra: std::mem::take(&mut m) })
                }
                _ => None,
            },
            _ => None,
        };
        typed.unwrap_or(ContentBlock::Other(map))
    }

    fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        let (ty, extra): (&str, &Extra) = match self {
            ContentBlock::Text { text, extra } => {
                m.insert("type".into(), "text".into());
                m.insert("text".into(), text.clone().into());
                ("", extra)
            }
            ContentBlock::Thinking { thinking, extra } => {
                m.insert("type".into(), "thinking".into());
                m.insert("thinking".into(), thinking.clone().into());
                ("", extra)
            }
            ContentBlock::Image { data, mime_type, extra } => {
                m.insert("type".into(), "image".into());
                m.insert("data".into(), data.clone().into());
                m.insert("mimeType".into(), mime_type.clone().into());
                ("", extra)
            }
            ContentBlock::ToolCall { id, name, arguments, extra } => {
                m.insert("type".into(), "toolCall".into());
                m.insert("id".into(), id.clone().into());
                m.insert("name".into(), name.clone().into());
                m.insert("arguments".into(), arguments.clone());
                ("", extra)
            }
            ContentBlock::Other(map) => return map.clone(),
        };
        debug_assert!(ty.is_empty());
        for (k, v) in extra {
            m.insert(k.clone(), v.clone());
        }
        m
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        Ok(ContentBlock::from_map(map))
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

/// Token usage of an assistant message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(default)]
    pub input: f64,
    #[serde(default)]
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<f64>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Usage {
    /// `totalTokens`, or the sum of the four components when it is missing or zero
    /// (the reference's `calculateContextTokens`).
    pub fn context_tokens(&self) -> f64 {
        match self.total_tokens {
            Some(t) if t != 0.0 => t,
            _ => self.input + self.output + self.cache_read + self.cache_write,
        }
    }
}

/// `role: "user"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    pub content: Content,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role: "assistant"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role: "toolResult"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    #[serde(default)]
    pub tool_call_id: String,
    #[serde(default)]
    pub tool_name: String,
    pub content: Content,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role: "bashExecution"` (a `!` command run by the user).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub output: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub cancelled: bool,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role: "custom"` (and the legacy `hookMessage`): an extension message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomRoleMessage {
    #[serde(default)]
    pub custom_type: String,
    pub content: Content,
    #[serde(default)]
    pub display: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A typed view of an agent message, by role.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentMessage {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    BashExecution(BashExecutionMessage),
    /// `custom`, or the legacy `hookMessage` (see [`AgentMessage::role`] on the raw value).
    Custom(CustomRoleMessage),
    /// `branchSummary` (memory only in pi).
    BranchSummary {
        summary: String,
        from_id: String,
    },
    /// `compactionSummary` (memory only in pi).
    CompactionSummary {
        summary: String,
        tokens_before: f64,
    },
    /// Any other role (omp's `fileMention`, `developer`, …) or a message that does not fit its role.
    Other {
        role: Option<String>,
    },
}

impl AgentMessage {
    /// Decodes the typed view of `value`; never fails.
    pub fn from_value(value: &Value) -> AgentMessage {
        let role = value.get("role").and_then(Value::as_str);
        let decoded = match role {
            Some("user") => UserMessage::deserialize(value).ok().map(AgentMessage::User),
            Some("assistant") => AssistantMessage::deserialize(value).ok().map(AgentMessage::Assistant),
            Some("toolResult") => ToolResultMessage::deserialize(value).ok().map(AgentMessage::ToolResult),
            Some("bashExecution") => BashExecutionMessage::deserialize(value).ok().map(AgentMessage::BashExecution),
            Some("custom") | Some("hookMessage") => {
                CustomRoleMessage::deserialize(value).ok().map(AgentMessage::Custom)
            }
            Some("branchSummary") => Some(AgentMessage::BranchSummary {
                summary: str_field(value, "summary"),
                from_id: str_field(value, "fromId"),
            }),
            Some("compactionSummary") => Some(AgentMessage::CompactionSummary {
                summary: str_field(value, "summary"),
                tokens_before: value.get("tokensBefore").and_then(Value::as_f64).unwrap_or(0.0),
            }),
            _ => None,
        };
        decoded.unwrap_or(AgentMessage::Other { role: role.map(str::to_owned) })
    }
}

fn str_field(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// The `role` of a raw message value, if it has a string one.
pub fn message_role(value: &Value) -> Option<&str> {
    value.get("role").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_keep_unknown_fields_and_types() {
        let v = json!([{"type":"text","text":"hi","textSignature":"s"},{"type":"weird","x":1},{"type":"toolCall","id":"t","name":"read","arguments":{"path":"a"}}]);
        let c: Content = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&c).unwrap(), v);
        assert_eq!(c.text(""), "hi");
    }

    #[test]
    fn roles_decode_and_unknown_roles_do_not_fail() {
        let u = json!({"role":"user","content":"hello","timestamp":1});
        assert!(matches!(AgentMessage::from_value(&u), AgentMessage::User(_)));
        let f = json!({"role":"fileMention","files":[]});
        assert_eq!(AgentMessage::from_value(&f), AgentMessage::Other { role: Some("fileMention".into()) });
        let broken = json!({"role":"assistant","content":"not blocks"});
        assert!(matches!(AgentMessage::from_value(&broken), AgentMessage::Other { .. }));
    }

    #[test]
    fn usage_falls_back_to_components() {
        let u: Usage = serde_json::from_value(json!({"input":1,"output":2,"cacheRead":3,"cacheWrite":4})).unwrap();
        assert_eq!(u.context_tokens(), 10.0);
    }
}
