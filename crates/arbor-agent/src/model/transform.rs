//! What of a conversation goes into a request (pi-ai's `transformMessages`,
//! second pass): an assistant message that was aborted or failed is left out,
//! and a tool call left without a result gets a stand-in result.
//!
//! The session keeps every message as it was recorded, and `convert_to_llm`
//! keeps them too; only the request built from them leaves out what pi
//! leaves out, so the model never sees a cut-off reply as a finished one.

use arbor_log::{MessageView, Role};
use serde_json::{json, Value};

/// The text of the stand-in result of a tool call that has none (pi's).
pub const NO_RESULT_PROVIDED: &str = "No result provided";

/// True for a message a request carries: anything but an assistant message
/// whose `stopReason` is `aborted` or `error`.
pub fn is_replayable(message: &Value) -> bool {
    let role = MessageView::new(message).role();
    let stop = message.get("stopReason").and_then(Value::as_str);
    !(role == Some(Role::Assistant) && matches!(stop, Some("aborted" | "error")))
}

/// The messages of a request, as pi-ai sends them: aborted and failed
/// assistant messages are left out, and each tool call without a result
/// before the next assistant or user message (or the end) gets an error
/// result saying [`NO_RESULT_PROVIDED`].
pub fn request_messages(messages: &[Value]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    let mut pending: Vec<(String, String)> = vec![];
    let mut answered: Vec<String> = vec![];
    let settle = |out: &mut Vec<Value>, pending: &mut Vec<(String, String)>, answered: &mut Vec<String>| {
        for (id, name) in pending.drain(..) {
            if !answered.contains(&id) {
                out.push(json!({
                    "role": Role::ToolResult.as_str(),
                    "toolCallId": id,
                    "toolName": name,
                    "content": [{"type": "text", "text": NO_RESULT_PROVIDED}],
                    "isError": true,
                }));
            }
        }
        answered.clear();
    };
    for m in messages {
        match MessageView::new(m).role() {
            Some(Role::Assistant) => {
                settle(&mut out, &mut pending, &mut answered);
                if !is_replayable(m) {
                    continue;
                }
                let calls = m
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"));
                pending = calls
                    .map(|b| {
                        let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                        (s("id"), s("name"))
                    })
                    .collect();
                out.push(m.clone());
            }
            Some(Role::ToolResult) => {
                answered.push(m.get("toolCallId").and_then(Value::as_str).unwrap_or("").to_owned());
                out.push(m.clone());
            }
            Some(Role::User) => {
                settle(&mut out, &mut pending, &mut answered);
                out.push(m.clone());
            }
            _ => out.push(m.clone()),
        }
    }
    settle(&mut out, &mut pending, &mut answered);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(ms: &[Value]) -> Vec<String> {
        ms.iter()
            .map(|m| {
                let role = m["role"].as_str().unwrap_or("?");
                let text = m["content"][0]["text"].as_str().unwrap_or("");
                format!("{role}:{text}")
            })
            .collect()
    }

    #[test]
    fn aborted_and_failed_replies_are_left_out() {
        let user = |t: &str| json!({"role": "user", "content": [{"type": "text", "text": t}]});
        let reply = |t: &str, stop: &str| json!({"role": "assistant", "content": [{"type": "text", "text": t}], "stopReason": stop});
        let ms = [
            user("a"),
            reply("cut off", "aborted"),
            user("b"),
            reply("", "error"),
            user("c"),
            reply("done", "stop"),
            reply("long", "length"),
        ];
        assert_eq!(roles(&request_messages(&ms)), ["user:a", "user:b", "user:c", "assistant:done", "assistant:long"]);
        assert!(!is_replayable(&ms[1]) && !is_replayable(&ms[3]) && is_replayable(&ms[5]));
        // Other roles with a stopReason-like field are not assistant replies.
        assert!(is_replayable(&json!({"role": "user", "stopReason": "aborted"})));
    }

    #[test]
    fn tool_calls_without_results_get_one() {
        let call = |id: &str| {
            json!({"role": "assistant", "stopReason": "toolUse",
                "content": [{"type": "toolCall", "id": id, "name": "read", "arguments": {}}]})
        };
        let result = |id: &str| json!({"role": "toolResult", "toolCallId": id, "toolName": "read", "content": [{"type": "text", "text": "ok"}]});
        let ms = [
            call("c1"),
            result("c1"),
            call("c2"),
            json!({"role": "user", "content": "next"}),
            call("c3"),
            // A failed reply's calls are dropped with it, and never answered.
            json!({"role": "assistant", "stopReason": "error", "content": [{"type": "toolCall", "id": "c4", "name": "x"}]}),
        ];
        let out = request_messages(&ms);
        assert_eq!(
            roles(&out),
            [
                "assistant:",
                "toolResult:ok",
                "assistant:",
                "toolResult:No result provided",
                "user:",
                "assistant:",
                "toolResult:No result provided"
            ]
        );
        assert_eq!(out[3]["toolCallId"], "c2");
        assert_eq!(out[3]["isError"], true);
        assert_eq!(out[6]["toolCallId"], "c3");
    }
}
