//! An OpenCode storage folder written the way OpenCode writes it (one JSON
//! file per session, message and part: `session/<project>/<id>.json`,
//! `message/<session>/<id>.json`, `part/<message>/<id>.json`; the shapes of
//! OpenCode's `Session.Info`, `MessageV2.User`/`Assistant` and its parts),
//! for the importer's and the usage reader's tests.

use std::path::Path;

use serde_json::{json, Value};

/// 2026-03-01T10:00:00.000Z.
pub const T0: i64 = 1_772_359_200_000;

fn put(storage: &Path, rel: &str, v: &Value) {
    let path = storage.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

fn part(storage: &Path, session: &str, message: &str, id: &str, body: Value) {
    let mut v = json!({"id": id, "sessionID": session, "messageID": message});
    v.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
    put(storage, &format!("part/{message}/{id}.json"), &v);
}

fn user(storage: &Path, session: &str, id: &str, at: i64) {
    let v = json!({
        "id": id, "sessionID": session, "role": "user", "time": {"created": T0 + at},
        "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"},
    });
    put(storage, &format!("message/{session}/{id}.json"), &v);
}

#[allow(clippy::too_many_arguments)]
fn assistant(
    storage: &Path,
    session: &str,
    id: &str,
    parent: &str,
    at: i64,
    model: (&str, &str),
    cost: f64,
    tokens: [u64; 5],
) -> Value {
    let [input, output, reasoning, read, write] = tokens;
    let v = json!({
        "id": id, "sessionID": session, "role": "assistant",
        "time": {"created": T0 + at, "completed": T0 + at + 900},
        "parentID": parent, "modelID": model.1, "providerID": model.0, "mode": "build", "agent": "build",
        "path": {"cwd": "/work/app", "root": "/work/app"}, "cost": cost,
        "tokens": {"input": input, "output": output, "reasoning": reasoning, "cache": {"read": read, "write": write}},
        "finish": "stop",
    });
    put(storage, &format!("message/{session}/{id}.json"), &v);
    v
}

fn set(storage: &Path, session: &str, id: &str, mut v: Value, key: &str, value: Value) {
    v.as_object_mut().unwrap().insert(key.into(), value);
    put(storage, &format!("message/{session}/{id}.json"), &v);
}

/// Writes a storage folder with two sessions of `/work/app`: `ses_A` (a
/// user message with a text and an image part; an assistant reply with
/// reasoning, text and a finished tool call, $0.0123; a reply with a failed
/// tool call and no cost (OpenCode writes 0); a compaction request and its
/// summary reply; a part of a type OpenCode may add later; a message file
/// that is not JSON) and its child session `ses_B` (`parentID: ses_A`: a
/// subagent, one exchange with gpt-5, $0.002). Returns the path of `ses_A`'s
/// info file and of the bad message file.
pub fn write_storage(storage: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    parent_session(storage);
    let bad = storage.join("message/ses_A/msg_06.json");
    std::fs::write(&bad, "{\"id\": \"msg_06\", \"role\": ").unwrap();

    child_session(storage);
    (storage.join("session/proj1/ses_A.json"), bad)
}

fn parent_session(storage: &Path) {
    let a = "ses_A";
    put(
        storage,
        "session/proj1/ses_A.json",
        &json!({
            "id": a, "slug": "brave-otter", "version": "1.0.0", "projectID": "proj1", "directory": "/work/app",
            "title": "Fix the parser", "time": {"created": T0, "updated": T0 + 60_000},
        }),
    );
    user(storage, a, "msg_01", 100);
    part(storage, a, "msg_01", "prt_01", json!({"type": "text", "text": "Fix the parser bug"}));
    part(
        storage,
        a,
        "msg_01",
        "prt_02",
        json!({"type": "file", "mime": "image/png", "filename": "shot.png", "url": "data:image/png;base64,iVBORw0KGgo="}),
    );
    let m2 = assistant(
        storage,
        a,
        "msg_02",
        "msg_01",
        1_000,
        ("anthropic", "claude-sonnet-4-5"),
        0.0123,
        [1200, 300, 50, 4000, 800],
    );
    set(storage, a, "msg_02", m2, "finish", json!("tool-calls"));
    part(storage, a, "msg_02", "prt_03", json!({"type": "step-start", "snapshot": "4b825dc6"}));
    part(
        storage,
        a,
        "msg_02",
        "prt_04",
        json!({"type": "reasoning", "text": "The tokenizer drops the last byte.", "time": {"start": T0 + 1_100, "end": T0 + 1_200}}),
    );
    part(storage, a, "msg_02", "prt_05", json!({"type": "text", "text": "Let me read the parser."}));
    part(
        storage,
        a,
        "msg_02",
        "prt_06",
        json!({"type": "tool", "callID": "toolu_1", "tool": "read", "state": {
        "status": "completed", "input": {"filePath": "/work/app/parser.rs"}, "output": "fn parse() {}", "title": "parser.rs",
        "metadata": {}, "time": {"start": T0 + 1_300, "end": T0 + 1_400}}}),
    );
    part(
        storage,
        a,
        "msg_02",
        "prt_07",
        json!({"type": "step-finish", "reason": "tool-calls", "cost": 0.0123,
        "tokens": {"input": 1200, "output": 300, "reasoning": 50, "cache": {"read": 4000, "write": 800}}}),
    );
    later_replies(storage);
}

fn later_replies(storage: &Path) {
    let a = "ses_A";
    let m3 = assistant(
        storage,
        a,
        "msg_03",
        "msg_01",
        2_000,
        ("anthropic", "claude-sonnet-4-5"),
        0.0,
        [500, 100, 0, 5200, 0],
    );
    set(storage, a, "msg_03", m3, "finish", json!("tool-calls"));
    part(
        storage,
        a,
        "msg_03",
        "prt_08",
        json!({"type": "tool", "callID": "toolu_2", "tool": "bash", "state": {
        "status": "error", "input": {"command": "cargo test"}, "error": "exit status 101",
        "time": {"start": T0 + 2_100, "end": T0 + 2_200}}}),
    );
    part(storage, a, "msg_03", "prt_09", json!({"type": "future-part", "payload": {"x": 1}}));
    user(storage, a, "msg_04", 3_000);
    part(storage, a, "msg_04", "prt_10", json!({"type": "compaction", "auto": true}));
    let m5 = assistant(
        storage,
        a,
        "msg_05",
        "msg_04",
        4_000,
        ("anthropic", "claude-sonnet-4-5"),
        0.004,
        [9000, 700, 0, 0, 0],
    );
    set(storage, a, "msg_05", m5, "summary", json!(true));
    part(
        storage,
        a,
        "msg_05",
        "prt_11",
        json!({"type": "text", "text": "Summary: the parser drops the last byte; fix in progress."}),
    );
}

fn child_session(storage: &Path) {
    let a = "ses_A";
    let b = "ses_B";
    put(
        storage,
        "session/proj1/ses_B.json",
        &json!({
            "id": b, "version": "1.0.0", "projectID": "proj1", "directory": "/work/app", "parentID": a,
            "title": "Find the tokenizer (@explore subagent)", "time": {"created": T0 + 1_500, "updated": T0 + 9_000},
        }),
    );
    user(storage, b, "msg_10", 1_600);
    part(storage, b, "msg_10", "prt_20", json!({"type": "text", "text": "Where is the tokenizer?"}));
    assistant(storage, b, "msg_11", "msg_10", 1_700, ("openai", "gpt-5"), 0.002, [800, 120, 40, 0, 0]);
    part(storage, b, "msg_11", "prt_21", json!({"type": "text", "text": "In src/lex.rs."}));
}
