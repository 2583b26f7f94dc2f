//! pi's message shapes, made from plain arguments: what a binding's
//! `user_message`, `assistant_message` and `tool_result` return, ready for
//! `Session::append_message` (docs/format.md, "AgentMessage roles").

use serde_json::{json, Map, Value};

use arbor_log::json::js_number;
use arbor_log::{Clock, Role, SystemClock};

use super::Failure;

/// Now, in epoch milliseconds: a message's `timestamp` when none is given.
pub fn now_ms() -> i64 {
    SystemClock.now_ms()
}

/// One text block: `{"type": "text", "text": …}`.
fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A user message: the text as one text block, as pi's editor sends it.
pub fn user(text: &str, timestamp: i64) -> Value {
    json!({"role": Role::User.as_str(), "content": [text_block(text)], "timestamp": timestamp})
}

/// A tool call an assistant message makes.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The call's id, which the tool result answers (`toolCallId`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments: a JSON object.
    pub arguments: Value,
}

/// What an assistant message says and who said it.
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
    pub tool_calls: Vec<ToolCall>,
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

/// An assistant message in pi's shape: thinking, text and tool-call blocks,
/// the model, the usage and the stop reason.
pub fn assistant(a: Assistant) -> Result<Value, Failure> {
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
            return Err(Failure::Invalid(format!("tool call {}: its arguments must be a JSON object", c.id)));
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

/// A tool's result: the output as one text block.
pub fn tool_result(
    call_id: &str,
    tool_name: &str,
    text: &str,
    is_error: bool,
    details: Option<Value>,
    timestamp: i64,
) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), Role::ToolResult.as_str().into());
    m.insert("toolCallId".into(), call_id.into());
    m.insert("toolName".into(), tool_name.into());
    m.insert("content".into(), json!([text_block(text)]));
    if let Some(d) = details {
        m.insert("details".into(), d);
    }
    m.insert("isError".into(), is_error.into());
    m.insert("timestamp".into(), timestamp.into());
    Value::Object(m)
}

/// The four token counts of pi's `Usage`, in its order.
const COUNTS: [&str; 4] = ["input", "output", "cacheRead", "cacheWrite"];

/// pi's `Usage` from what the caller gave: every count and cost present
/// (0 when missing), `totalTokens` and `cost.total` summed when missing.
fn usage(given: Option<Value>) -> Result<Value, Failure> {
    let mut given = match given {
        None => Map::new(),
        Some(Value::Object(m)) => m,
        Some(other) => return Err(Failure::Invalid(format!("usage must be an object, not {other}"))),
    };
    let number = |m: &Map<String, Value>, key: &str, what: &str| match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(Failure::Invalid(format!("{what}{key} must be a number, not {other}"))),
    };
    let mut out = Map::new();
    let mut total = 0.0;
    for key in COUNTS {
        let n = number(&given, key, "usage.")?;
        total += n.unwrap_or(0.0);
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
        Some(other) => return Err(Failure::Invalid(format!("usage.cost must be an object, not {other}"))),
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
    use super::*;

    #[test]
    fn a_user_message_is_one_text_block() {
        assert_eq!(user("hi", 5), json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 5}));
    }

    #[test]
    fn an_assistant_message_has_pi_s_fields_and_a_whole_usage() {
        let call = ToolCall { id: "c1".into(), name: "bash".into(), arguments: json!({"command": "ls"}) };
        let m = assistant(Assistant {
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
        let bad = |usage: Value| assistant(Assistant { usage: Some(usage), ..Assistant::default() }).unwrap_err();
        assert_eq!(bad(json!({"input": "ten"})).message(), "usage.input must be a number, not \"ten\"");
        assert_eq!(bad(json!({"cost": {"total": []}})).message(), "usage.cost.total must be a number, not []");
        assert_eq!(bad(json!(3)).message(), "usage must be an object, not 3");
        let call = ToolCall { id: "c9".into(), name: "x".into(), arguments: json!([1]) };
        let e = assistant(Assistant { tool_calls: vec![call], ..Assistant::default() }).unwrap_err();
        assert_eq!(e.message(), "tool call c9: its arguments must be a JSON object");
    }

    #[test]
    fn a_tool_result_answers_its_call() {
        assert_eq!(
            tool_result("c1", "bash", "README.md\n", false, None, 9),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                   "content": [{"type": "text", "text": "README.md\n"}], "isError": false, "timestamp": 9})
        );
    }
}
