//! Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`) as pi sessions.
//!
//! A rollout is linear: every line is a `{timestamp, type, payload}` record
//! and each entry is the child of the one before. The `response_item`s of one
//! model response (reasoning, the reply's text, tool calls) become one
//! assistant message, the tool outputs `toolResult` messages, user messages
//! user messages; the `token_count` event after a response gives it its
//! usage; `turn_context` gives the model and, when the effort changes, a
//! `thinking_level_change`; `compacted` becomes a `compaction`. Every record
//! with no pi equivalent (`session_meta`, `turn_context`, the events, other
//! items) is kept whole as `custom` (`codex.<type>`). See docs/cli.md.

use std::collections::HashMap;

use arbor_log::entries::{Compaction, ThinkingLevelChange};
use arbor_log::{EntryKind, EntryType, Role};
use serde_json::{json, Map, Value};

use super::build::{add_origin, message, message_mut, millis, origin, part_origin, usage, zero_usage, Builder, Parent};
use super::claude::session_uuid;
use super::lines::Record;
use super::Planned;

/// What the records before tell about the next one.
#[derive(Debug, Default)]
struct State {
    provider: String,
    model: String,
    effort: Option<String>,
    /// The assistant message the current model response is gathered into.
    open: Option<String>,
    /// The last assistant message not yet given a usage.
    unbilled: Option<String>,
    /// Tool names by call id.
    names: HashMap<String, String>,
    /// The context size the last token count reported.
    context_tokens: u64,
}

/// Plans the session of one rollout. `fallback_id` names it when there is no
/// `session_meta` (the file's stem).
pub(crate) fn plan(records: &[Record], fallback_id: &str) -> Vec<Planned> {
    let meta = records.iter().find(|r| r.kind() == "session_meta").and_then(|r| r.value.get("payload"));
    let str_in = |v: Option<&Value>, k: &str| v.and_then(|p| p.get(k)).and_then(Value::as_str).map(str::to_owned);
    let sid = str_in(meta, "id").unwrap_or_else(|| fallback_id.to_owned());
    let cwd = str_in(meta, "cwd")
        .or_else(|| {
            records.iter().find(|r| r.kind() == "turn_context").and_then(|r| str_in(r.value.get("payload"), "cwd"))
        })
        .unwrap_or_else(|| "/".to_owned());
    let first =
        str_in(meta, "timestamp").or_else(|| records.iter().find_map(|r| r.str("timestamp").map(str::to_owned)));
    let first_time = first
        .as_deref()
        .and_then(arbor_log::time::parse_iso_ms)
        .map(arbor_log::time::format_iso_ms)
        .unwrap_or_default();
    let seed = format!("codex:{sid}");
    let id = session_uuid(&seed);
    let mut b = Builder::new(seed, "codex", &first_time);
    let mut st =
        State { provider: str_in(meta, "model_provider").unwrap_or_else(|| "openai".to_owned()), ..State::default() };
    for r in records {
        add_record(&mut b, &mut st, r);
    }
    vec![Planned::new(id, first_time, cwd, sid, None, b)]
}

fn payload(r: &Record) -> &Value {
    r.value.get("payload").unwrap_or(&Value::Null)
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The record without the payload keys its entry holds.
fn kept(r: &Record, moved: &[&str]) -> Value {
    let mut v = r.value.clone();
    if let Some(p) = v.get_mut("payload").and_then(Value::as_object_mut) {
        for k in moved {
            p.remove(*k);
        }
    }
    v
}

fn add_record(b: &mut Builder, st: &mut State, r: &Record) {
    let key = r.content_key();
    let p = payload(r);
    let sub = str_of(p, "type").unwrap_or("");
    match r.kind() {
        "response_item" => response_item(b, st, r, &key, sub),
        "event_msg" if sub == "token_count" => {
            b.push_custom(r, &key, Parent::Chain);
            token_count(b, st, p);
        }
        "turn_context" => {
            st.open = None;
            b.push_custom(r, &key, Parent::Chain);
            turn_context(b, st, r, &key);
        }
        "compacted" => {
            st.open = None;
            compacted(b, st, r, &key);
        }
        _ => {
            b.push_custom(r, &key, Parent::Chain);
        }
    }
}

fn response_item(b: &mut Builder, st: &mut State, r: &Record, key: &str, sub: &str) {
    let p = payload(r);
    let what = r.label();
    match sub {
        "message" => match str_of(p, "role") {
            Some("assistant") => {
                let content = blocks(p.get("content")).iter().map(content_item).collect();
                gather(b, st, r, key, &what, content, &["content"]);
            }
            Some("user") => {
                st.open = None;
                let content: Vec<Value> = blocks(p.get("content")).iter().map(content_item).collect();
                let time = b.time_of(r);
                let m = json!({"role": Role::User, "content": content, "timestamp": millis(&time)});
                b.count(&what, &format!("message {}", Role::User));
                b.push(key, Parent::Chain, time, message(m), json!([origin(r, kept(r, &["content"]))]));
            }
            _ => {
                b.push_custom(r, key, Parent::Chain);
            }
        },
        "reasoning" => {
            let mut texts: Vec<&str> = blocks(p.get("summary")).iter().filter_map(|s| str_of(s, "text")).collect();
            texts.extend(blocks(p.get("content")).iter().filter_map(|s| str_of(s, "text")));
            // pi's OpenAI Responses provider keeps the whole reasoning item as the signature.
            let block = json!({"type": "thinking", "thinking": texts.join("\n\n"), "thinkingSignature": p.to_string()});
            gather(b, st, r, key, &what, vec![block], &["summary", "content", "encrypted_content"]);
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            let call = str_of(p, "call_id").or_else(|| str_of(p, "id")).unwrap_or("").to_owned();
            let name = str_of(p, "name").unwrap_or("local_shell").to_owned();
            let (arguments, moved): (Value, &[&str]) = match sub {
                "function_call" => (call_arguments(p.get("arguments")), &["arguments"]),
                "custom_tool_call" => (json!({"input": p.get("input")}), &["input"]),
                _ => (p.get("action").cloned().unwrap_or(Value::Null), &["action"]),
            };
            st.names.insert(call.clone(), name.clone());
            let block = json!({"type": "toolCall", "id": call, "name": name, "arguments": arguments});
            gather(b, st, r, key, &what, vec![block], moved);
        }
        "function_call_output" | "custom_tool_call_output" => {
            st.open = None;
            let call = str_of(p, "call_id").unwrap_or("");
            let (content, failed) = call_output(p.get("output"));
            let time = b.time_of(r);
            let m = json!({
                "role": Role::ToolResult,
                "toolCallId": call,
                "toolName": st.names.get(call).map_or("", String::as_str),
                "content": content,
                "isError": failed,
                "timestamp": millis(&time),
            });
            b.count(&what, &format!("message {}", Role::ToolResult));
            b.push(key, Parent::Chain, time, message(m), json!([origin(r, kept(r, &["output"]))]));
        }
        _ => {
            b.push_custom(r, key, Parent::Chain);
        }
    }
}

fn blocks(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// A Responses API content item in pi's form: text items become text blocks,
/// `data:` image URLs image blocks; anything else is kept as it is.
fn content_item(item: &Value) -> Value {
    match str_of(item, "type") {
        Some("input_text") | Some("output_text") => json!({"type": "text", "text": item.get("text")}),
        Some("input_image") => match str_of(item, "image_url").and_then(data_url) {
            Some((mime, data)) => json!({"type": "image", "data": data, "mimeType": mime}),
            None => item.clone(),
        },
        _ => item.clone(),
    }
}

/// `data:<mime>;base64,<data>` split into its MIME type and data.
fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (head, data) = rest.split_once(',')?;
    Some((head.strip_suffix(";base64")?, data))
}

/// A function call's `arguments` (JSON text) as an object; text that is not
/// an object is kept as `{"arguments": text}`.
fn call_arguments(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(obj @ Value::Object(_)) => obj,
            _ => json!({"arguments": s}),
        },
        Some(other) => other.clone(),
        None => json!({}),
    }
}

/// A tool output as pi's content blocks, and whether it failed.
fn call_output(v: Option<&Value>) -> (Value, bool) {
    match v {
        Some(Value::String(s)) => (json!([{"type": "text", "text": s}]), false),
        Some(Value::Array(items)) => (Value::Array(items.iter().map(content_item).collect()), false),
        Some(Value::Object(o)) => {
            let text = o.get("content").and_then(Value::as_str).unwrap_or("");
            (json!([{"type": "text", "text": text}]), o.get("success") == Some(&Value::Bool(false)))
        }
        _ => (json!([]), false),
    }
}

/// Adds the blocks of an item of the model's response to the assistant
/// message the response gathers into, making it first when there is none.
fn gather(b: &mut Builder, st: &mut State, r: &Record, key: &str, what: &str, content: Vec<Value>, moved: &[&str]) {
    if let Some(id) = st.open.clone() {
        if let Some(e) = b.entry_mut(&id) {
            if let Some(m) = message_mut(e) {
                if let Some(Value::Array(list)) = m.get_mut("content") {
                    list.extend(content);
                }
                let calls = m.get("content").and_then(Value::as_array).is_some_and(|l| l.iter().any(is_call));
                m.insert("stopReason".into(), json!(if calls { "toolUse" } else { "stop" }));
            }
            add_origin(e, origin(r, kept(r, moved)));
            b.count(what, "merged into the reply before");
            return;
        }
    }
    let time = b.time_of(r);
    let calls = content.iter().any(is_call);
    let m = json!({
        "role": Role::Assistant,
        "content": content,
        "api": "openai-responses",
        "provider": st.provider,
        "model": st.model,
        "usage": zero_usage(),
        "stopReason": if calls { "toolUse" } else { "stop" },
        "timestamp": millis(&time),
    });
    b.count(what, &format!("message {}", Role::Assistant));
    let id = b.push(key, Parent::Chain, time, message(m), json!([origin(r, kept(r, moved))]));
    st.open = Some(id.clone());
    st.unbilled = Some(id);
}

fn is_call(block: &Value) -> bool {
    str_of(block, "type") == Some("toolCall")
}

/// A token count ends the model response before it and gives it its usage.
fn token_count(b: &mut Builder, st: &mut State, p: &Value) {
    st.open = None;
    let Some(last) = p.get("info").and_then(|i| i.get("last_token_usage")) else { return };
    let n = |k: &str| last.get(k).and_then(Value::as_u64).unwrap_or(0);
    let cached = n("cached_input_tokens");
    st.context_tokens = n("total_tokens");
    let Some(id) = st.unbilled.take() else { return };
    if let Some(m) = b.entry_mut(&id).and_then(message_mut) {
        m.insert("usage".into(), usage(n("input_tokens").saturating_sub(cached), n("output_tokens"), cached, 0, 0.0));
    }
}

/// A turn context sets the model of the replies after it; a new effort is a thinking level change.
fn turn_context(b: &mut Builder, st: &mut State, r: &Record, key: &str) {
    let p = payload(r);
    if let Some(model) = str_of(p, "model") {
        st.model = model.to_owned();
    }
    let Some(effort) = str_of(p, "effort") else { return };
    if st.effort.as_deref() == Some(effort) {
        return;
    }
    st.effort = Some(effort.to_owned());
    let level = if effort == "none" { "off" } else { effort };
    let kind =
        EntryKind::ThinkingLevelChange(ThinkingLevelChange { thinking_level: Some(level.into()), extra: Map::new() });
    let time = b.time_of(r);
    b.count("turn_context", EntryType::ThinkingLevelChange.as_str());
    b.push(&format!("{key}#1"), Parent::Chain, time, kind, json!([part_origin(r, 1)]));
}

/// `compacted` as a `compaction` that keeps nothing before it; Codex's
/// replacement history stays in the entry's source.
fn compacted(b: &mut Builder, st: &mut State, r: &Record, key: &str) {
    let p = payload(r);
    let time = b.time_of(r);
    let kind = EntryKind::Compaction(Compaction {
        summary: str_of(p, "message").unwrap_or("").to_owned(),
        first_kept_entry_id: None,
        tokens_before: Some(Value::from(st.context_tokens)),
        details: None,
        from_hook: None,
        extra: Map::new(),
    });
    b.count("compacted", EntryType::Compaction.as_str());
    let id = b.push(key, Parent::Chain, time, kind, json!([origin(r, kept(r, &["message"]))]));
    if let Some(EntryKind::Compaction(c)) = b.entry_mut(&id).map(|e| &mut e.kind) {
        c.first_kept_entry_id = Some(id.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_urls_and_arguments() {
        assert_eq!(data_url("data:image/png;base64,AAAA"), Some(("image/png", "AAAA")));
        assert_eq!(data_url("https://x/y.png"), None);
        assert_eq!(call_arguments(Some(&json!("{\"command\":[\"ls\"]}"))), json!({"command":["ls"]}));
        assert_eq!(call_arguments(Some(&json!("not json"))), json!({"arguments":"not json"}));
        assert!(call_output(Some(&json!({"content":"boom","success":false}))).1);
    }
}
