//! `convertToLlm` (docs/architecture.md, "Building the context"): agent messages to the `user` / `assistant` /
//! `toolResult` messages a model sees.

use arbor_log::{MessageView, Role};
use serde_json::{Map, Value};

use crate::js;

/// The text before a compaction summary sent to the model.
pub const COMPACTION_SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// The text after a compaction summary sent to the model.
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// The text before a branch summary sent to the model.
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/// The text after a branch summary sent to the model. pi has no newline before
/// the closing tag here (unlike the compaction suffix); kept for prompt-cache parity.
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// Maps agent messages to model messages, each to zero or one.
///
/// `user`, `assistant` and `toolResult` pass through unchanged; `bashExecution`
/// (unless `excludeFromContext`), `custom`, `branchSummary` and
/// `compactionSummary` become `{role:"user", content, timestamp}` user
/// messages; every other role is dropped.
///
/// ```
/// use arbor_context::convert_to_llm;
/// use arbor_log::{MessageView, Role};
/// use serde_json::json;
///
/// let messages = [
///     json!({"role": "user", "content": "hi", "timestamp": 1}),
///     json!({"role": "branchSummary", "summary": "Tried another way.", "fromId": "a1", "timestamp": 2}),
///     json!({"role": "somethingElse"}),
/// ];
/// let for_the_model = convert_to_llm(&messages);
/// let roles: Vec<_> = for_the_model.iter().map(|m| MessageView::new(m).role()).collect();
/// assert_eq!(roles, [Some(Role::User), Some(Role::User)]);
/// assert!(MessageView::new(&for_the_model[1]).text("").contains("Tried another way."));
/// ```
pub fn convert_to_llm(messages: &[Value]) -> Vec<Value> {
    messages.iter().filter_map(convert_message).collect()
}

pub(crate) fn convert_message(m: &Value) -> Option<Value> {
    let content = match MessageView::new(m).role()? {
        Role::User | Role::Assistant | Role::ToolResult => return Some(m.clone()),
        Role::BashExecution if js::truthy(m.get("excludeFromContext")) => return None,
        Role::BashExecution => Some(text_content(bash_execution_to_text(m))),
        Role::Custom => match m.get("content") {
            Some(Value::String(s)) => Some(text_content(s.clone())),
            other => other.cloned(),
        },
        Role::BranchSummary => {
            let summary = js::to_js_string(m.get("summary"));
            Some(text_content(format!("{BRANCH_SUMMARY_PREFIX}{summary}{BRANCH_SUMMARY_SUFFIX}")))
        }
        Role::CompactionSummary => {
            let summary = js::to_js_string(m.get("summary"));
            Some(text_content(format!("{COMPACTION_SUMMARY_PREFIX}{summary}{COMPACTION_SUMMARY_SUFFIX}")))
        }
        Role::HookMessage | Role::Developer | Role::Other(_) => return None,
    };
    let mut out = Map::new();
    out.insert("role".into(), Role::User.as_str().into());
    // JavaScript drops `undefined` properties when serializing.
    if let Some(content) = content {
        out.insert("content".into(), content);
    }
    if let Some(ts) = m.get("timestamp") {
        out.insert("timestamp".into(), ts.clone());
    }
    Some(Value::Object(out))
}

fn text_content(text: String) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), "text".into());
    block.insert("text".into(), text.into());
    Value::Array(vec![Value::Object(block)])
}

/// The text a `bashExecution` message shows the model (pi's `bashExecutionToText`).
pub fn bash_execution_to_text(m: &Value) -> String {
    let mut text = format!("Ran `{}`\n", js::to_js_string(m.get("command")));
    let output = m.get("output");
    if js::truthy(output) {
        text.push_str(&format!("```\n{}\n```", js::to_js_string(output)));
    } else {
        text.push_str("(no output)");
    }
    if js::truthy(m.get("cancelled")) {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = m.get("exitCode").filter(|c| !c.is_null() && !is_zero(c)) {
        text.push_str(&format!("\n\nCommand exited with code {}", js::to_js_string(Some(code))));
    }
    let path = m.get("fullOutputPath");
    if js::truthy(m.get("truncated")) && js::truthy(path) {
        text.push_str(&format!("\n\n[Output truncated. Full output: {}]", js::to_js_string(path)));
    }
    text
}

/// `v === 0` in JavaScript (numbers only; `"0"` is not 0).
fn is_zero(v: &Value) -> bool {
    v.as_f64() == Some(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn produced_messages_have_role_content_timestamp_order() {
        let out = convert_to_llm(&[
            json!({"timestamp":5,"summary":"S","fromId":"x","role":"branchSummary"}),
            json!({"display":false,"content":"c","customType":"t","role":"custom","timestamp":6}),
        ]);
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            concat!(
                r#"[{"role":"user","content":[{"type":"text","text":"The following is a summary of a branch that this conversation came back from:\n\n<summary>\nS</summary>"}],"timestamp":5},"#,
                r#"{"role":"user","content":[{"type":"text","text":"c"}],"timestamp":6}]"#
            )
        );
    }

    #[test]
    fn missing_timestamp_stays_absent() {
        let out = convert_to_llm(&[json!({"role":"compactionSummary","summary":"S"})]);
        assert_eq!(out[0].get("timestamp"), None);
    }
}
