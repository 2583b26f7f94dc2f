//! OpenCode's storage (`~/.local/share/opencode/storage`) as pi sessions.
//!
//! OpenCode keeps one JSON file per session (`session/<project>/<id>.json`:
//! `id`, `directory`, `parentID` for a child session, `time.created`), per
//! message (`message/<session>/<id>.json`: `role`, `time.created`; an
//! assistant's `modelID`, `providerID`, `tokens`, `cost`, `finish`,
//! `error`, `summary`) and per part of a message (`part/<message>/<id>.json`,
//! by `type`). Ids sort in the order they were made, so a session is the
//! chain of its messages in id order. A user message's `text` and image
//! `file` parts become its content; an assistant message's `text`,
//! `reasoning` and `tool` parts become text, thinking and tool call blocks,
//! each finished tool call a `toolResult` message after it, and its tokens
//! and cost pi's usage; a summary message (`summary: true`) is followed by
//! a `compaction`. Every other part (`step-start`, `step-finish`,
//! `snapshot`, `patch`, `agent`, `subtask`, `retry`, `compaction`, other
//! files) is kept whole as `custom` (`opencode.<type>`), and each entry
//! names the file it came from. A child session's `parentSession` is its
//! parent's session. See docs/cli.md, "arbor import".

use std::io::Read;
use std::path::{Path, PathBuf};

use arbor_log::entries::{Compaction, CustomEntry};
use arbor_log::{EntryKind, EntryType, Role};
use arbor_tree::sessions::check_component;
use serde_json::{json, Map, Value};

use super::build::{message, millis, usage, Builder, Parent};
use super::claude::session_uuid;
use super::lines::{Records, SkippedLine};
use super::Planned;
use crate::InteropError;

/// The largest file read: a bigger one is reported and skipped.
const MAX_FILE: u64 = 64 << 20;

/// OpenCode's folders under its storage folder.
const SESSIONS: &str = "session";
const MESSAGES: &str = "message";
const PARTS: &str = "part";

/// One JSON file of the storage, read.
#[derive(Debug)]
struct Doc {
    /// Relative to the storage folder (`message/ses_…/msg_….json`).
    rel: String,
    value: Value,
}

impl Doc {
    fn str(&self, key: &str) -> Option<&str> {
        self.value.get(key).and_then(Value::as_str)
    }
    fn kind(&self) -> &str {
        self.str("type").unwrap_or("")
    }
    fn created(&self) -> Option<i64> {
        self.value.get("time").and_then(|t| t.get("created")).and_then(Value::as_i64)
    }
}

/// The session files an import of `path` reads: the session info file
/// itself, or every session info file under a storage folder, a parent
/// session before its children (by creation time, then id).
pub(crate) fn session_files(path: &Path) -> Vec<PathBuf> {
    if !path.is_dir() {
        return vec![path.to_owned()];
    }
    let mut files: Vec<(i64, PathBuf)> = Vec::new();
    for project in sorted(&path.join(SESSIONS)) {
        for file in sorted(&project).into_iter().filter(|f| f.extension().is_some_and(|x| x == "json")) {
            let created = read_json(&file).ok().and_then(|v| v.get("time")?.get("created")?.as_i64());
            files.push((created.unwrap_or(i64::MAX), file));
        }
    }
    files.sort();
    if files.is_empty() {
        // Nothing to import: the folder itself is reported as no session.
        return vec![path.to_owned()];
    }
    files.into_iter().map(|(_, f)| f).collect()
}

/// A folder's entries, sorted (none when it cannot be read).
fn sorted(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(r) => r.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

/// A JSON file, at most [`MAX_FILE`] bytes, never through anything but a regular file.
fn read_json(path: &Path) -> Result<Value, String> {
    let file = arbor_log::files::open_read(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!("larger than {} MiB", MAX_FILE >> 20));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!("malformed JSON: {e}")),
    }
}

/// The storage folder of a session info file (`STORAGE/session/<project>/<id>.json`).
fn storage_of(info: &Path) -> Option<&Path> {
    info.parent()?.parent()?.parent()
}

/// Reads the files of a folder (`message/<session>/` or `part/<message>/`)
/// in id order; the bad ones reported in `skipped`.
fn docs(storage: &Path, dir: &[&str], skipped: &mut Vec<SkippedLine>) -> Vec<Doc> {
    let folder = dir.iter().fold(storage.to_owned(), |p, d| p.join(d));
    let mut out = Vec::new();
    for file in sorted(&folder).into_iter().filter(|f| f.extension().is_some_and(|x| x == "json")) {
        let rel = file.strip_prefix(storage).unwrap_or(&file).to_string_lossy().into_owned();
        match read_json(&file) {
            Ok(value) => out.push(Doc { rel, value }),
            Err(reason) => skipped.push(SkippedLine { line: 0, file: Some(file), reason }),
        }
    }
    out.sort_by(|a, b| a.str("id").unwrap_or("").cmp(b.str("id").unwrap_or("")).then_with(|| a.rel.cmp(&b.rel)));
    out
}

/// Plans the session of the info file `path`: its messages and their parts.
pub(crate) fn plan(path: &Path) -> Result<(Records, Vec<Planned>), InteropError> {
    let info = read_json(path).map_err(|reason| InteropError::NotATranscript {
        path: path.to_owned(),
        format: "opencode",
        reason,
    })?;
    let Some(id) = info.get("id").and_then(Value::as_str).map(str::to_owned) else {
        return Err(InteropError::NotATranscript {
            path: path.to_owned(),
            format: "opencode",
            reason: "a session file without an `id`".into(),
        });
    };
    if let Err(e) = check_component(&id) {
        // The id names the session's message folder: never a path of its own.
        return Err(InteropError::NotATranscript { path: path.to_owned(), format: "opencode", reason: e.to_string() });
    }
    let storage = storage_of(path).unwrap_or(Path::new("."));
    let mut records = Records::default();
    let messages = docs(storage, &[MESSAGES, &id], &mut records.skipped);
    let created = info.get("time").and_then(|t| t.get("created")).and_then(Value::as_i64);
    let first_time = created.or_else(|| messages.iter().find_map(Doc::created)).map(arbor_log::time::format_iso_ms);
    let first_time = first_time.unwrap_or_default();
    let cwd = info.get("directory").and_then(Value::as_str).unwrap_or("/").to_owned();
    let parent = info.get("parentID").and_then(Value::as_str).map(|p| session_uuid(&format!("opencode:{p}")));
    let seed = format!("opencode:{id}");
    let mut b = Builder::new(seed.clone(), "opencode", &first_time);
    let rel = path.strip_prefix(storage).unwrap_or(path).to_string_lossy().into_owned();
    push_custom(&mut b, &Doc { rel, value: info.clone() }, "session", &format!("session {id}"));
    for m in &messages {
        let mid = m.str("id").unwrap_or("").to_owned();
        let parts = match check_component(&mid) {
            Ok(()) => docs(storage, &[PARTS, &mid], &mut records.skipped),
            Err(e) => {
                // Its parts cannot be found by a name that is no plain name.
                let reason = format!("its parts are not read: {e}");
                records.skipped.push(SkippedLine { line: 0, file: Some(storage.join(&m.rel)), reason });
                Vec::new()
            }
        };
        match m.str("role") {
            Some("user") => user(&mut b, m, &parts),
            Some("assistant") => assistant(&mut b, m, &parts),
            _ => push_custom(&mut b, m, &format!("message {}", m.str("role").unwrap_or("?")), &mid),
        }
    }
    let planned = Planned::new(session_uuid(&seed), first_time, cwd, id, parent, b);
    Ok((records, vec![planned]))
}

/// The origin of an entry: the file it came from and the record without what the entry holds.
fn origin(d: &Doc, kept: Value) -> Value {
    json!([{ "file": d.rel, "record": kept }])
}

/// Keeps a document whole in a `custom` entry (`opencode.<what>`).
fn push_custom(b: &mut Builder, d: &Doc, what: &str, key: &str) {
    let kind = if d.kind().is_empty() { what.split(' ').next().unwrap_or(what) } else { d.kind() };
    let custom_type = format!("opencode.{kind}");
    b.count(what, &format!("custom {custom_type}"));
    let time = time_of(b, d);
    let entry = EntryKind::Custom(CustomEntry { custom_type, data: Some(d.value.clone()), extra: Map::new() });
    b.push(key, Parent::Chain, time, entry, json!([{ "file": d.rel }]));
}

/// A document's time as pi writes it, or the time of the entry before.
fn time_of(b: &mut Builder, d: &Doc) -> String {
    let ms = d.created().or_else(|| d.value.get("time").and_then(|t| t.get("start")).and_then(Value::as_i64));
    b.time_at(ms)
}

/// The message without its parts' worth: kept in the entry's origin.
fn kept(m: &Doc, moved: &[&str]) -> Value {
    let mut v = m.value.clone();
    if let Some(o) = v.as_object_mut() {
        for k in moved {
            o.remove(*k);
        }
    }
    v
}

fn user(b: &mut Builder, m: &Doc, parts: &[Doc]) {
    let mut content = Vec::new();
    let mut rest = Vec::new();
    for p in parts {
        match (p.kind(), p.str("mime"), p.str("url").and_then(data_url)) {
            ("text", _, _) => content.push(json!({"type": "text", "text": p.str("text").unwrap_or("")})),
            ("file", Some(mime), Some(data)) if mime.starts_with("image/") => {
                content.push(json!({"type": "image", "data": data, "mimeType": mime}));
            }
            _ => rest.push(p),
        }
    }
    let key = m.str("id").unwrap_or("").to_owned();
    if content.is_empty() && !rest.is_empty() {
        // Only parts pi has no words for (a compaction request, a subtask):
        // no empty prompt in the context; the message is kept whole.
        push_custom(b, m, "message user", &key);
    } else {
        let time = time_of(b, m);
        let msg = json!({"role": Role::User, "content": content, "timestamp": millis(&time)});
        b.count("message user", &format!("message {}", Role::User));
        b.push(&key, Parent::Chain, time, message(msg), origin(m, m.value.clone()));
    }
    for p in rest {
        push_custom(b, p, &format!("part {}", p.kind()), p.str("id").unwrap_or(""));
    }
}

/// `data:<mime>;base64,<data>`'s data.
fn data_url(url: &str) -> Option<&str> {
    let (head, data) = url.strip_prefix("data:")?.split_once(',')?;
    head.ends_with(";base64").then_some(data)
}

fn assistant(b: &mut Builder, m: &Doc, parts: &[Doc]) {
    let mut content = Vec::new();
    let mut calls = Vec::new();
    let mut rest = Vec::new();
    for p in parts {
        match p.kind() {
            "text" => content.push(json!({"type": "text", "text": p.str("text").unwrap_or("")})),
            "reasoning" => content.push(json!({"type": "thinking", "thinking": p.str("text").unwrap_or("")})),
            "tool" => {
                let input = p.value.get("state").and_then(|s| s.get("input")).cloned().unwrap_or(json!({}));
                let (id, name) = (p.str("callID").unwrap_or(""), p.str("tool").unwrap_or(""));
                content.push(json!({"type": "toolCall", "id": id, "name": name, "arguments": input}));
                calls.push(p);
            }
            _ => rest.push(p),
        }
    }
    let v = &m.value;
    let n = |path: &[&str]| path.iter().try_fold(v, |x, k| x.get(*k)).and_then(Value::as_u64).unwrap_or(0);
    let output = n(&["tokens", "output"]).saturating_add(n(&["tokens", "reasoning"]));
    let cost = v.get("cost").and_then(Value::as_f64).unwrap_or(0.0);
    let usage =
        usage(n(&["tokens", "input"]), output, n(&["tokens", "cache", "read"]), n(&["tokens", "cache", "write"]), cost);
    let error = v.get("error");
    let stop = match (error, v.get("finish").and_then(Value::as_str)) {
        (Some(_), _) => "error",
        (_, Some("length")) => "length",
        _ if !calls.is_empty() => "toolUse",
        _ => "stop",
    };
    let time = time_of(b, m);
    let mut msg = json!({
        "role": Role::Assistant, "content": content, "api": "opencode",
        "provider": v.get("providerID").cloned().unwrap_or(json!("")),
        "model": v.get("modelID").cloned().unwrap_or(json!("")),
        "usage": usage, "stopReason": stop, "timestamp": millis(&time),
    });
    if let (Some(o), Some(e)) = (msg.as_object_mut(), error) {
        let text = e.get("data").and_then(|d| d.get("message")).and_then(Value::as_str);
        let text = text.or_else(|| e.get("name").and_then(Value::as_str)).unwrap_or("error");
        o.insert("errorMessage".into(), json!(text));
    }
    b.count("message assistant", &format!("message {}", Role::Assistant));
    let key = m.str("id").unwrap_or("").to_owned();
    let own = b.push(&key, Parent::Chain, time.clone(), message(msg), origin(m, kept(m, &[])));
    for p in calls {
        tool_result(b, p);
    }
    for p in rest {
        push_custom(b, p, &format!("part {}", p.kind()), p.str("id").unwrap_or(""));
    }
    if v.get("summary") == Some(&Value::Bool(true)) {
        summary(b, m, parts, &own, time);
    }
}

/// A finished tool call's output (or error) as a `toolResult` message.
fn tool_result(b: &mut Builder, p: &Doc) {
    let state = p.value.get("state").unwrap_or(&Value::Null);
    let status = state.get("status").and_then(Value::as_str).unwrap_or("");
    let (text, failed) = match status {
        "completed" => (state.get("output").and_then(Value::as_str).unwrap_or(""), false),
        "error" => (state.get("error").and_then(Value::as_str).unwrap_or(""), true),
        // A call that never finished has no result.
        _ => return,
    };
    let end = state.get("time").and_then(|t| t.get("end")).and_then(Value::as_i64);
    let time = b.time_at(end);
    let msg = json!({
        "role": Role::ToolResult,
        "toolCallId": p.str("callID").unwrap_or(""),
        "toolName": p.str("tool").unwrap_or(""),
        "content": [{"type": "text", "text": text}],
        "isError": failed,
        "timestamp": millis(&time),
    });
    b.count("part tool", &format!("message {}", Role::ToolResult));
    let key = format!("{}#result", p.str("id").unwrap_or(""));
    b.push(&key, Parent::Chain, time, message(msg), origin(p, p.value.clone()));
}

/// A summary message is followed by a compaction that keeps nothing before it.
fn summary(b: &mut Builder, m: &Doc, parts: &[Doc], own: &str, time: String) {
    let text: Vec<&str> = parts.iter().filter(|p| p.kind() == "text").filter_map(|p| p.str("text")).collect();
    let v = &m.value;
    let n = |k: &str| v.get("tokens").and_then(|t| t.get(k)).and_then(Value::as_u64).unwrap_or(0);
    let kind = EntryKind::Compaction(Compaction {
        summary: text.join("\n"),
        first_kept_entry_id: None,
        tokens_before: Some(Value::from(n("input"))),
        details: None,
        from_hook: None,
        extra: Map::new(),
    });
    b.count("message assistant", EntryType::Compaction.as_str());
    let key = format!("{own}#compaction");
    let id = b.push(&key, Parent::Chain, time, kind, json!([{ "file": m.rel, "part": 1 }]));
    if let Some(EntryKind::Compaction(c)) = b.entry_mut(&id).map(|e| &mut e.kind) {
        c.first_kept_entry_id = Some(id.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_data_urls() {
        assert_eq!(data_url("data:image/png;base64,AAAA"), Some("AAAA"));
        assert_eq!(data_url("file:///x.png"), None);
    }
}
