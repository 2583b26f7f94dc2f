//! The message constructors: dicts in pi's shapes, for `Session.append_message`.

use pyo3::prelude::*;

use super::{from_value, to_value, Raise};
use arbor_log::messages::{Assistant, ToolCallSpec};
use arbor_log::{Clock, Message, SystemClock};

use crate::values::Failure;

/// Now, in epoch milliseconds: a message's `timestamp` when none is given.
fn now_ms() -> i64 {
    SystemClock.now_ms()
}

/// A user message: `{"role": "user", "content": [{"type": "text", "text":
/// text}], "timestamp": ms}` (`timestamp` in epoch milliseconds, default now).
#[pyfunction]
#[pyo3(signature = (text, *, timestamp = None))]
pub fn user_message<'py>(py: Python<'py>, text: &str, timestamp: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
    from_value(py, &Message::user(text, timestamp.unwrap_or_else(now_ms)))
}

/// An assistant message in pi's shape: a thinking block (`thinking`), the
/// text, then tool calls (`tool_calls`: dicts with `id`, `name` and
/// `arguments`); `usage` in pi's shape (`input`, `output`, `cacheRead`,
/// `cacheWrite`, `totalTokens`, `cost`; missing counts are 0, missing totals
/// summed); `stop_reason` defaults to `toolUse` with tool calls, else `stop`.
#[pyfunction]
#[pyo3(signature = (
    text = "", *, provider, model, api = None, thinking = None, tool_calls = None, usage = None,
    stop_reason = None, error_message = None, timestamp = None,
))]
#[allow(clippy::too_many_arguments)]
pub fn assistant_message<'py>(
    py: Python<'py>,
    text: &str,
    provider: String,
    model: String,
    api: Option<String>,
    thinking: Option<String>,
    tool_calls: Option<Bound<'py, PyAny>>,
    usage: Option<Bound<'py, PyAny>>,
    stop_reason: Option<String>,
    error_message: Option<String>,
    timestamp: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let tool_calls = match tool_calls {
        Some(calls) => calls_of(py, &calls)?,
        None => Vec::new(),
    };
    let usage = usage.map(|u| to_value(py, "usage", &u)).transpose()?;
    let message = Message::assistant(Assistant {
        text: text.to_owned(),
        provider,
        model,
        api,
        thinking,
        tool_calls,
        usage,
        stop_reason,
        error_message,
        timestamp: timestamp.unwrap_or_else(now_ms),
    })
    .map_err(|e| Failure::Invalid(e.reason))
    .raise(py)?;
    from_value(py, &message)
}

/// Tool calls from a list of dicts with `id`, `name` and `arguments`.
fn calls_of(py: Python<'_>, calls: &Bound<'_, PyAny>) -> PyResult<Vec<ToolCallSpec>> {
    let serde_json::Value::Array(items) = to_value(py, "tool_calls", calls)? else {
        return Err(Failure::Invalid("tool_calls must be a list of dicts".into())).raise(py);
    };
    items
        .into_iter()
        .enumerate()
        .map(|(k, item)| {
            let field = |key: &str| match item.get(key) {
                Some(serde_json::Value::String(s)) => Ok(s.clone()),
                _ => Err(Failure::Invalid(format!("tool_calls[{k}] needs a string {key:?}"))),
            };
            let call = ToolCallSpec {
                id: field("id").raise(py)?,
                name: field("name").raise(py)?,
                arguments: item.get("arguments").cloned().unwrap_or_else(|| serde_json::json!({})),
            };
            Ok(call)
        })
        .collect()
}

/// A tool's result for the call `call_id` of tool `tool_name`: the output as
/// one text block, `is_error` when the tool failed, `details` any value the
/// tool keeps beside its output.
#[pyfunction]
#[pyo3(signature = (call_id, tool_name, text, *, is_error = false, details = None, timestamp = None))]
pub fn tool_result<'py>(
    py: Python<'py>,
    call_id: &str,
    tool_name: &str,
    text: &str,
    is_error: bool,
    details: Option<Bound<'py, PyAny>>,
    timestamp: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let details = details.filter(|d| !d.is_none()).map(|d| to_value(py, "details", &d)).transpose()?;
    let ts = timestamp.unwrap_or_else(now_ms);
    let message = if is_error {
        Message::tool_error(call_id, tool_name, text, ts)
    } else {
        Message::tool_result(call_id, tool_name, text, ts)
    };
    let message = match details {
        Some(d) => Message::with_details(message, d),
        None => message,
    };
    from_value(py, &message)
}
