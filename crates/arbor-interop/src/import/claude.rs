//! Claude Code transcripts (`~/.claude/projects/<cwd>/<session>.jsonl`) as pi sessions.
//!
//! Records are a tree through `uuid`/`parentUuid`; a rewind leaves a branch.
//! `user` and `assistant` records become messages (an assistant reply that
//! Claude Code wrote as one record per content block becomes one message
//! again; a user record's `tool_result` blocks become `toolResult` messages),
//! a `compact_boundary` and the summary that follows it become a `compaction`,
//! a `summary` of a known leaf becomes a label, and every other record is kept
//! whole as `custom` (`claude.<type>`). Sidechain records (subagents) go to
//! sessions of their own. See docs/cli.md, "arbor import", for the whole mapping.

use std::collections::HashMap;

use arbor_log::entries::{Compaction, LabelEntry};
use arbor_log::ids::{IdGenerator, SeededIds};
use arbor_log::{EntryKind, EntryType, MessageView, Role};
use serde_json::{json, Map, Value};

use super::build::{add_origin, message, message_mut, millis, origin, part_origin, usage, Builder, Parent};
use super::lines::Record;
use super::Planned;

/// Plans the sessions of one transcript: the main one (when it has main
/// records) and one per sidechain. `fallback_id` names the session when no
/// record carries a `sessionId` (the file's stem).
pub(crate) fn plan(records: &[Record], fallback_id: &str) -> Vec<Planned> {
    let session_id = records.iter().find_map(|r| r.str("sessionId")).unwrap_or(fallback_id).to_owned();
    let names = tool_names(records);
    let (main, sides) = split_sidechains(records);
    let main_id = session_uuid(&format!("claude:{session_id}"));
    let mut out = Vec::new();
    if !main.is_empty() {
        out.push(build(&main, format!("claude:{session_id}"), &session_id, None, &names));
    }
    for (agent, group) in sides {
        let seed = format!("claude:{session_id}:agent:{agent}");
        out.push(build(&group, seed, &session_id, Some(main_id.clone()), &names));
    }
    out
}

/// A UUID-shaped session id derived from a seed.
pub(crate) fn session_uuid(seed: &str) -> String {
    SeededIds::from_text(seed).session_id()
}

/// `tool_use` ids to tool names, over the whole file.
fn tool_names(records: &[Record]) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for r in records {
        for b in blocks(r.value.get("message").and_then(|m| m.get("content"))) {
            if let (Some("tool_use"), Some(id), Some(name)) = (str_of(b, "type"), str_of(b, "id"), str_of(b, "name")) {
                names.insert(id.to_owned(), name.to_owned());
            }
        }
    }
    names
}

/// The main records, and the sidechain records grouped by agent (`agentId`,
/// else the sidechain root they descend from), in order of first appearance.
fn split_sidechains(records: &[Record]) -> (Vec<&Record>, Vec<(String, Vec<&Record>)>) {
    let mut main = Vec::new();
    let mut sides: Vec<(String, Vec<&Record>)> = Vec::new();
    let mut group_of_uuid: HashMap<&str, String> = HashMap::new();
    let mut slot: HashMap<String, usize> = HashMap::new();
    for r in records {
        if r.value.get("isSidechain") != Some(&Value::Bool(true)) {
            main.push(r);
            continue;
        }
        let key = match r.str("agentId") {
            Some(agent) => agent.to_owned(),
            None => r
                .str("parentUuid")
                .and_then(|p| group_of_uuid.get(p).cloned())
                .unwrap_or_else(|| r.str("uuid").map_or_else(|| r.content_key(), str::to_owned)),
        };
        if let Some(u) = r.str("uuid") {
            group_of_uuid.insert(u, key.clone());
        }
        let i = *slot.entry(key.clone()).or_insert_with(|| {
            sides.push((key.clone(), Vec::new()));
            sides.len() - 1
        });
        sides[i].1.push(r);
    }
    (main, sides)
}

fn build(
    records: &[&Record],
    seed: String,
    source_session: &str,
    parent_session: Option<String>,
    names: &HashMap<String, String>,
) -> Planned {
    let first_time = records.iter().find_map(|r| r.str("timestamp").and_then(arbor_log::time::parse_iso_ms));
    let first_time = first_time.map(arbor_log::time::format_iso_ms).unwrap_or_default();
    let cwd = records.iter().find_map(|r| r.str("cwd")).unwrap_or("/").to_owned();
    let id = session_uuid(&seed);
    let mut b = Builder::new(seed, "claude", &first_time);
    for r in records {
        add_record(&mut b, r, names);
    }
    Planned::new(id, first_time, cwd, source_session.to_owned(), parent_session, b)
}

fn add_record(b: &mut Builder, r: &Record, names: &HashMap<String, String>) {
    let uuid = r.str("uuid");
    let key = uuid.map_or_else(|| r.content_key(), str::to_owned);
    let parent = if uuid.is_some() { Parent::Source(r.str("parentUuid")) } else { Parent::Chain };
    let has_message = r.value.get("message").is_some_and(Value::is_object);
    match r.kind() {
        "user" if has_message => user(b, r, &key, parent, names),
        "assistant" if has_message => assistant(b, r, &key, parent),
        "system" if r.str("subtype") == Some("compact_boundary") => boundary(b, r, &key),
        "summary" => summary(b, r, &key),
        _ => {
            b.push_custom(r, &key, parent);
        }
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn blocks(content: Option<&Value>) -> &[Value] {
    content.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The record without what its entry holds: `message.content`, and the
/// listed top-level keys.
fn kept(r: &Record, moved: &[&str]) -> Value {
    let mut v = r.value.clone();
    if let Some(m) = v.get_mut("message").and_then(Value::as_object_mut) {
        m.remove("content");
    }
    if let Some(o) = v.as_object_mut() {
        for k in moved {
            o.remove(*k);
        }
    }
    v
}

/// A block with some keys renamed and the rest kept as they are.
fn renamed(b: &Value, new_type: &str, renames: &[(&str, &str)]) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), Value::String(new_type.to_owned()));
    for (from, to) in renames {
        if let Some(v) = b.get(*from) {
            out.insert((*to).to_owned(), v.clone());
        }
    }
    if let Some(o) = b.as_object() {
        for (k, v) in o {
            if k != "type" && !renames.iter().any(|(from, _)| from == k) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// A user-side block in pi's form: base64 images become `{type: "image", data, mimeType}`.
fn user_block(b: &Value) -> Value {
    let source = b.get("source");
    if str_of(b, "type") == Some("image") && source.and_then(|s| str_of(s, "type")) == Some("base64") {
        let s = source.unwrap_or(&Value::Null);
        let mut out = json!({"type": "image", "data": s.get("data"), "mimeType": s.get("media_type")});
        if let (Some(o), Some(src)) = (out.as_object_mut(), b.as_object()) {
            o.extend(src.iter().filter(|(k, _)| *k != "type" && *k != "source").map(|(k, v)| (k.clone(), v.clone())));
        }
        return out;
    }
    b.clone()
}

/// An assistant block in pi's form: `thinking` (with `thinkingSignature`),
/// `redacted_thinking` (redacted thinking, its data as the signature) and
/// `tool_use` (a `toolCall`); text and anything else as it is.
fn assistant_block(b: &Value) -> Value {
    match str_of(b, "type") {
        Some("thinking") => renamed(b, "thinking", &[("thinking", "thinking"), ("signature", "thinkingSignature")]),
        Some("redacted_thinking") => {
            let mut v = renamed(b, "thinking", &[("data", "thinkingSignature")]);
            if let Some(o) = v.as_object_mut() {
                o.insert("thinking".into(), Value::String(String::new()));
                o.insert("redacted".into(), Value::Bool(true));
            }
            v
        }
        Some("tool_use") => renamed(b, "toolCall", &[("id", "id"), ("name", "name"), ("input", "arguments")]),
        _ => b.clone(),
    }
}

/// A tool result's content as pi's list of blocks.
fn result_content(c: Option<&Value>) -> Value {
    match c {
        Some(Value::String(s)) => json!([{"type": "text", "text": s}]),
        Some(Value::Array(list)) => Value::Array(list.iter().map(user_block).collect()),
        None | Some(Value::Null) => json!([]),
        Some(other) => json!([{"type": "text", "text": other.to_string()}]),
    }
}

fn user(b: &mut Builder, r: &Record, key: &str, parent: Parent, names: &HashMap<String, String>) {
    if r.value.get("isCompactSummary") == Some(&Value::Bool(true)) && merge_compact_summary(b, r) {
        return;
    }
    let time = b.time_of(r);
    let ms = millis(&time);
    let content = r.value.get("message").and_then(|m| m.get("content"));
    let Some(Value::Array(list)) = content else {
        let m = json!({"role": Role::User, "content": content.cloned().unwrap_or(Value::String(String::new())), "timestamp": ms});
        b.count("user", &format!("message {}", Role::User));
        b.push(key, parent, time, message(m), json!([origin(r, kept(r, &[]))]));
        return;
    };
    let (results, rest): (Vec<&Value>, Vec<&Value>) =
        list.iter().partition(|x| str_of(x, "type") == Some("tool_result"));
    let mut details = r.value.get("toolUseResult").cloned();
    let moved: &[&str] = if details.is_some() && !results.is_empty() { &["toolUseResult"] } else { &[] };
    let mut made: Vec<Value> = Vec::new();
    for res in &results {
        let call = str_of(res, "tool_use_id").unwrap_or("");
        let mut m = json!({
            "role": Role::ToolResult,
            "toolCallId": call,
            "toolName": names.get(call).map_or("", String::as_str),
            "content": result_content(res.get("content")),
        });
        if let (Some(o), Some(d)) = (m.as_object_mut(), details.take()) {
            o.insert("details".into(), d);
        }
        if let Some(o) = m.as_object_mut() {
            o.insert("isError".into(), Value::Bool(res.get("is_error") == Some(&Value::Bool(true))));
            o.insert("timestamp".into(), ms.clone());
        }
        made.push(m);
    }
    if !rest.is_empty() || results.is_empty() {
        let content: Vec<Value> = rest.iter().map(|x| user_block(x)).collect();
        made.push(json!({"role": Role::User, "content": content, "timestamp": ms}));
    }
    let mut last = String::new();
    for (part, m) in made.into_iter().enumerate() {
        let role = MessageView::new(&m).role().unwrap_or(Role::User);
        b.count("user", &format!("message {role}"));
        let (k, src, at) = if part == 0 {
            (key.to_owned(), json!([origin(r, kept(r, moved))]), parent)
        } else {
            (format!("{key}#{part}"), json!([part_origin(r, part)]), Parent::Entry(&last))
        };
        last = b.push(&k, at, time.clone(), message(m), src);
    }
    b.alias(key, &last);
}

/// Folds a compact summary into the compaction its boundary made. False when
/// its parent is not such a compaction (it is then imported as a user message).
fn merge_compact_summary(b: &mut Builder, r: &Record) -> bool {
    let Some(pid) = r.str("parentUuid").and_then(|p| b.id_of(p)).map(str::to_owned) else { return false };
    let text = arbor_log_text(r.value.get("message").and_then(|m| m.get("content")));
    let Some(e) = b.entry_mut(&pid) else { return false };
    let EntryKind::Compaction(c) = &mut e.kind else { return false };
    c.summary = text;
    add_origin(e, origin(r, kept(r, &[])));
    if let Some(u) = r.str("uuid") {
        b.alias(u, &pid);
    }
    b.count("user", "compaction summary");
    true
}

/// A content value's text: a string, or its text blocks joined with newlines.
fn arbor_log_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(list)) => {
            list.iter().filter_map(|x| x.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

fn stop_reason(claude: Option<&str>, content: &[Value]) -> &'static str {
    match claude {
        Some("tool_use") => "toolUse",
        Some("max_tokens") | Some("model_context_window_exceeded") => "length",
        _ if content.iter().any(|x| str_of(x, "type") == Some("toolCall")) => "toolUse",
        _ => "stop",
    }
}

fn claude_usage(r: &Record) -> Value {
    let u = r.value.get("message").and_then(|m| m.get("usage"));
    let n = |k: &str| u.and_then(|u| u.get(k)).and_then(Value::as_u64).unwrap_or(0);
    let cost = r.value.get("costUSD").and_then(Value::as_f64).unwrap_or(0.0);
    usage(n("input_tokens"), n("output_tokens"), n("cache_read_input_tokens"), n("cache_creation_input_tokens"), cost)
}

fn assistant(b: &mut Builder, r: &Record, key: &str, parent: Parent) {
    let msg = &r.value["message"];
    let content: Vec<Value> = match msg.get("content") {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        c => blocks(c).iter().map(assistant_block).collect(),
    };
    let response = str_of(msg, "id");
    let time = b.time_of(r);
    if let (Some(response), Some(pid)) = (response, r.str("parentUuid").and_then(|p| b.id_of(p)).map(str::to_owned)) {
        if merge_assistant(b, r, &pid, response, &content) {
            return;
        }
    }
    let error = r.value.get("isApiErrorMessage") == Some(&Value::Bool(true));
    let mut m = json!({
        "role": Role::Assistant,
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": msg.get("model").cloned().unwrap_or(Value::String(String::new())),
        "usage": claude_usage(r),
        "stopReason": if error { "error" } else { stop_reason(str_of(msg, "stop_reason"), &content) },
        "timestamp": millis(&time),
    });
    if let Some(o) = m.as_object_mut() {
        if let Some(id) = response {
            o.insert("responseId".into(), Value::String(id.to_owned()));
        }
        if error {
            o.insert("errorMessage".into(), Value::String(arbor_log_text(msg.get("content"))));
        }
    }
    b.count("assistant", &format!("message {}", Role::Assistant));
    b.push(key, parent, time, message(m), json!([origin(r, kept(r, &[]))]));
}

/// Appends the blocks of a record that continues the reply of entry `pid`
/// (same response id, nothing hangs below it yet). False when it does not.
fn merge_assistant(b: &mut Builder, r: &Record, pid: &str, response: &str, content: &[Value]) -> bool {
    if b.has_message_child(pid) {
        return false;
    }
    let Some(e) = b.entry_mut(pid) else { return false };
    let Some(m) = message_mut(e) else { return false };
    let role = m.get("role").and_then(Value::as_str).map(Role::parse);
    if role != Some(Role::Assistant) || m.get("responseId").and_then(Value::as_str) != Some(response) {
        return false;
    }
    if let Some(Value::Array(list)) = m.get_mut("content") {
        list.extend(content.iter().cloned());
    }
    let all: Vec<Value> = m.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
    let claude_stop = r.value.get("message").and_then(|x| str_of(x, "stop_reason"));
    if m.get("stopReason") != Some(&json!("error")) {
        m.insert("stopReason".into(), Value::String(stop_reason(claude_stop, &all).to_owned()));
    }
    if r.value.get("message").and_then(|x| x.get("usage")).is_some() {
        m.insert("usage".into(), claude_usage(r));
    }
    add_origin(e, origin(r, kept(r, &[])));
    if let Some(u) = r.str("uuid") {
        b.alias(u, pid);
    }
    b.count("assistant", "merged into the reply before");
    true
}

/// A `compact_boundary` as a `compaction` that keeps nothing before it
/// (`firstKeptEntryId` is its own id), below the record it logically follows.
/// Its summary is the `content` until the compact summary record arrives.
fn boundary(b: &mut Builder, r: &Record, key: &str) {
    let parent = Parent::Source(r.str("logicalParentUuid").or_else(|| r.str("parentUuid")));
    let tokens = r.value.get("compactMetadata").and_then(|m| m.get("preTokens")).and_then(Value::as_u64);
    let time = b.time_of(r);
    let kind = EntryKind::Compaction(Compaction {
        summary: r.str("content").unwrap_or("").to_owned(),
        first_kept_entry_id: None,
        tokens_before: Some(Value::from(tokens.unwrap_or(0))),
        details: None,
        from_hook: None,
        extra: Map::new(),
    });
    b.count(&r.label(), EntryType::Compaction.as_str());
    let id = b.push(key, parent, time, kind, json!([origin(r, r.value.clone())]));
    if let Some(EntryKind::Compaction(c)) = b.entry_mut(&id).map(|e| &mut e.kind) {
        c.first_kept_entry_id = Some(id.clone());
    }
}

/// A `summary` of a leaf seen before becomes that entry's label; any other is kept as `custom`.
fn summary(b: &mut Builder, r: &Record, key: &str) {
    let target = r.str("leafUuid").and_then(|l| b.id_of(l)).map(str::to_owned);
    match (target, r.str("summary")) {
        (Some(target_id), Some(text)) => {
            let kind = EntryKind::Label(LabelEntry { target_id, label: Some(text.into()), extra: Map::new() });
            let time = b.time_of(r);
            b.count("summary", EntryType::Label.as_str());
            b.push(key, Parent::Chain, time, kind, json!([origin(r, kept(r, &["summary"]))]));
        }
        _ => {
            b.push_custom(r, key, Parent::Chain);
        }
    }
}
