//! pi's message shapes made from plain arguments ([`Message`]): a user
//! message, an assistant message, a tool's result, each the JSON pi stores
//! (docs/format.md, "AgentMessage roles"), ready for
//! `arbor_tree::Session::append_message`.

use serde_json::{json, Map, Value};

use crate::json::js_number;
use crate::vocab::Role;

/// The agent messages pi stores, made from plain arguments rather than
/// `json!` by hand: each constructor returns the message's JSON, its keys
/// in pi's order. A namespace: there is no value of this type (messages
/// stay opaque JSON, read through [`MessageView`](crate::MessageView)).
///
/// ```
/// use arbor_log::messages::{Assistant, ToolCallSpec};
/// use arbor_log::{Message, MessageView, Role};
/// use serde_json::json;
///
/// let question = Message::user("List the files.", 1);
/// assert_eq!(question, json!({"role": "user", "content": [{"type": "text", "text": "List the files."}], "timestamp": 1}));
///
/// let call = ToolCallSpec { id: "c1".into(), name: "bash".into(), arguments: json!({"command": "ls"}) };
/// let reply = Message::assistant(Assistant {
///     text: "Listing.".into(),
///     provider: "anthropic".into(),
///     model: "claude-sonnet-4-5".into(),
///     tool_calls: vec![call],
///     timestamp: 2,
///     ..Assistant::default()
/// })?;
/// assert_eq!(reply["stopReason"], "toolUse");
///
/// let result = Message::tool_result("c1", "bash", "README.md\n", 3);
/// assert_eq!(MessageView::new(&result).role(), Some(Role::ToolResult));
/// assert_eq!(result["isError"], false);
/// assert_eq!(Message::tool_error("c1", "bash", "no such file", 3)["isError"], true);
/// # Ok::<(), arbor_log::messages::InvalidMessage>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {}

/// A tool call an assistant message makes ([`Assistant::tool_calls`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallSpec {
    /// The call's id, which the tool result answers (`toolCallId`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments: a JSON object.
    pub arguments: Value,
}

/// What an assistant message says and who said it ([`Message::assistant`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Assistant {
    /// The reply's text (no text block when empty).
    pub text: String,
    /// The provider (`anthropic`, `openai`, …).
    pub provider: String,
    /// The model's id.
    pub model: String,
    /// pi's API name (`anthropic-messages`, `openai-completions`, …); left out when not given.
    pub api: Option<String>,
    /// The model's thinking, as a thinking block before the text.
    pub thinking: Option<String>,
    /// The tool calls, after the text.
    pub tool_calls: Vec<ToolCallSpec>,
    /// pi's `Usage` (`input`, `output`, `cacheRead`, `cacheWrite`,
    /// `totalTokens`, `cost`): what is missing is 0, `totalTokens` the sum
    /// of the four counts and `cost.total` the sum of the four costs.
    pub usage: Option<Value>,
    /// `stop`, `length`, `toolUse`, `error` or `aborted` (default: `toolUse`
    /// with tool calls, else `stop`).
    pub stop_reason: Option<String>,
    /// The error an `error` stop reports.
    pub error_message: Option<String>,
    /// Epoch milliseconds.
    pub timestamp: i64,
}

/// Why [`Message::assistant`] refused what it was given: a usage that is
/// not pi's shape, or tool-call arguments that are not an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct InvalidMessage {
    /// What is wrong, naming the field (`usage.input must be a number, not "ten"`).
    pub reason: String,
}

fn invalid(reason: String) -> InvalidMessage {
    InvalidMessage { reason }
}

/// One text block: `{"type": "text", "text": …}`.
fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

impl Message {
    /// A user message: the text as one text block, as pi's editor sends it,
    /// at `timestamp` (epoch milliseconds).
    pub fn user(text: &str, timestamp: i64) -> Value {
        json!({"role": Role::User.as_str(), "content": [text_block(text)], "timestamp": timestamp})
    }

    /// An assistant message in pi's shape: thinking, text and tool-call
    /// blocks, the model, the whole usage and the stop reason.
    pub fn assistant(a: Assistant) -> Result<Value, InvalidMessage> {
        let mut content = Vec::new();
        if let Some(t) = a.thinking {
            content.push(json!({"type": "thinking", "thinking": t}));
        }
        if !a.text.is_empty() {
            content.push(text_block(&a.text));
        }
        let calls = !a.tool_calls.is_empty();
        for c in a.tool_calls {
            if !c.arguments.is_object() {
                return Err(invalid(format!("tool call {}: its arguments must be a JSON object", c.id)));
            }
            content.push(json!({"type": "toolCall", "id": c.id, "name": c.name, "arguments": c.arguments}));
        }
        let stop = a.stop_reason.unwrap_or_else(|| if calls { "toolUse" } else { "stop" }.to_owned());
        let mut m = Map::new();
        m.insert("role".into(), Role::Assistant.as_str().into());
        m.insert("content".into(), content.into());
        if let Some(api) = a.api {
            m.insert("api".into(), api.into());
        }
        m.insert("provider".into(), a.provider.into());
        m.insert("model".into(), a.model.into());
        m.insert("usage".into(), usage(a.usage)?);
        m.insert("stopReason".into(), stop.into());
        if let Some(e) = a.error_message {
            m.insert("errorMessage".into(), e.into());
        }
        m.insert("timestamp".into(), a.timestamp.into());
        Ok(Value::Object(m))
    }

    /// A tool's result answering call `call_id`: the output as one text block.
    pub fn tool_result(call_id: &str, tool_name: &str, text: &str, timestamp: i64) -> Value {
        tool_message(call_id, tool_name, text, false, timestamp)
    }

    /// A tool's result that reports a failure (`isError: true`): the error as one text block.
    pub fn tool_error(call_id: &str, tool_name: &str, text: &str, timestamp: i64) -> Value {
        tool_message(call_id, tool_name, text, true, timestamp)
    }

    /// `message` with pi's `details` (what a tool reports besides its text,
    /// such as a diff) added where pi writes them: before `isError` in a
    /// tool result, at the end otherwise. Anything but an object is returned as is.
    ///
    /// ```
    /// use arbor_log::Message;
    /// use serde_json::json;
    ///
    /// let m = Message::with_details(Message::tool_result("c1", "edit", "done", 4), json!({"diff": "+a"}));
    /// let keys: Vec<&str> = m.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    /// assert_eq!(keys, ["role", "toolCallId", "toolName", "content", "details", "isError", "timestamp"]);
    /// ```
    pub fn with_details(message: Value, details: Value) -> Value {
        let Value::Object(m) = message else { return message };
        let mut out = Map::new();
        let mut details = Some(details);
        for (k, v) in m {
            if k == "isError" {
                out.extend(details.take().map(|d| ("details".to_owned(), d)));
            }
            if k != "details" {
                out.insert(k, v);
            }
        }
        out.extend(details.map(|d| ("details".to_owned(), d)));
        Value::Object(out)
    }
}

/// A `toolResult` message.
fn tool_message(call_id: &str, tool_name: &str, text: &str, is_error: bool, timestamp: i64) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), Role::ToolResult.as_str().into());
    m.insert("toolCallId".into(), call_id.into());
    m.insert("toolName".into(), tool_name.into());
    m.insert("content".into(), json!([text_block(text)]));
    m.insert("isError".into(), is_error.into());
    m.insert("timestamp".into(), timestamp.into());
    Value::Object(m)
}

/// The four token counts of pi's `Usage`, in its order.
const COUNTS: [&str; 4] = ["input", "output", "cacheRead", "cacheWrite"];

/// A number field of `m`, `None` when missing or null.
fn number(m: &Map<String, Value>, key: &str, what: &str) -> Result<Option<f64>, InvalidMessage> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(invalid(format!("{what}{key} must be a number, not {other}"))),
    }
}

/// pi's `Usage` from what the caller gave: every count and cost present
/// (0 when missing), `totalTokens` and `cost.total` summed when missing.
fn usage(given: Option<Value>) -> Result<Value, InvalidMessage> {
    let mut given = match given {
        None => Map::new(),
        Some(Value::Object(m)) => m,
        Some(other) => return Err(invalid(format!("usage must be an object, not {other}"))),
    };
    let mut out = Map::new();
    let mut total = 0.0;
    for key in COUNTS {
        total += number(&given, key, "usage.")?.unwrap_or(0.0);
        out.insert(key.into(), given.remove(key).filter(|v| !v.is_null()).unwrap_or_else(|| 0.into()));
    }
    let total_tokens = match number(&given, "totalTokens", "usage.")? {
        Some(_) => given.remove("totalTokens").unwrap_or_else(|| 0.into()),
        None => js_number(total),
    };
    out.insert("totalTokens".into(), total_tokens);
    let mut cost = match given.remove("cost") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(c)) => c,
        Some(other) => return Err(invalid(format!("usage.cost must be an object, not {other}"))),
    };
    let mut out_cost = Map::new();
    let mut sum = 0.0;
    for key in COUNTS {
        sum += number(&cost, key, "usage.cost.")?.unwrap_or(0.0);
        out_cost.insert(key.into(), cost.remove(key).filter(|v| !v.is_null()).unwrap_or_else(|| 0.into()));
    }
    let total_cost = match number(&cost, "total", "usage.cost.")? {
        Some(_) => cost.remove("total").unwrap_or_else(|| 0.into()),
        None => js_number(sum),
    };
    out_cost.insert("total".into(), total_cost);
    // Fields pi does not know are kept, after its own.
    out_cost.extend(cost);
    out.insert("cost".into(), Value::Object(out_cost));
    out.extend(given);
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_user_message_is_one_text_block() {
        assert_eq!(
            Message::user("hi", 5),
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 5})
        );
    }

    #[test]
    fn an_assistant_message_has_pi_s_fields_and_a_whole_usage() {
        let call = ToolCallSpec { id: "c1".into(), name: "bash".into(), arguments: json!({"command": "ls"}) };
        let m = Message::assistant(Assistant {
            text: "Listing.".into(),
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
            api: Some("anthropic-messages".into()),
            tool_calls: vec![call],
            usage: Some(json!({"input": 10, "output": 5, "cost": {"input": 0.5, "output": 0.25}})),
            timestamp: 7,
            ..Assistant::default()
        })
        .unwrap();
        assert_eq!(
            m,
            json!({
                "role": "assistant",
                "content": [{"type": "text", "text": "Listing."},
                            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}],
                "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                          "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75}},
                "stopReason": "toolUse", "timestamp": 7,
            })
        );
        // The keys keep pi's order.
        let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp"]);
    }

    #[test]
    fn bad_usage_and_arguments_are_refused_by_name() {
        let bad = |usage: Value| {
            Message::assistant(Assistant { usage: Some(usage), ..Assistant::default() }).unwrap_err().to_string()
        };
        assert_eq!(bad(json!({"input": "ten"})), "usage.input must be a number, not \"ten\"");
        assert_eq!(bad(json!({"cost": {"total": []}})), "usage.cost.total must be a number, not []");
        assert_eq!(bad(json!(3)), "usage must be an object, not 3");
        let call = ToolCallSpec { id: "c9".into(), name: "x".into(), arguments: json!([1]) };
        let e = Message::assistant(Assistant { tool_calls: vec![call], ..Assistant::default() }).unwrap_err();
        assert_eq!(e.to_string(), "tool call c9: its arguments must be a JSON object");
    }

    #[test]
    fn a_tool_result_answers_its_call() {
        assert_eq!(
            Message::tool_result("c1", "bash", "README.md\n", 9),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                   "content": [{"type": "text", "text": "README.md\n"}], "isError": false, "timestamp": 9})
        );
        let failed = Message::with_details(Message::tool_error("c2", "bash", "exit 1", 9), json!({"code": 1}));
        assert_eq!(
            failed,
            json!({"role": "toolResult", "toolCallId": "c2", "toolName": "bash",
                   "content": [{"type": "text", "text": "exit 1"}], "details": {"code": 1}, "isError": true, "timestamp": 9})
        );
        let keys: Vec<&str> = failed.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["role", "toolCallId", "toolName", "content", "details", "isError", "timestamp"]);
    }
}
