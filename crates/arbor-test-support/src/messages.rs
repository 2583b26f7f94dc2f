//! Agent messages as pi writes them, for tests that build sessions.

use serde_json::{json, Value};

/// pi's assistant message with one text block, as an Anthropic model
/// replies: `model`, a usage of `input` and `output` tokens (no cache, no
/// cost), stop reason `stop`, and the message `timestamp` (epoch ms).
pub fn assistant_reply(text: &str, model: &str, input: u64, output: u64, timestamp: i64) -> Value {
    json!({
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": model,
        "usage": {"input": input, "output": output, "cacheRead": 0, "cacheWrite": 0, "totalTokens": input + output,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop",
        "timestamp": timestamp
    })
}
