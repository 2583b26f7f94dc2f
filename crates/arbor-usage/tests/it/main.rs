//! Integration tests of arbor-usage: the tree's view on hand-made trees
//! whose numbers are known, forks counted once, the cache that reads only
//! what changed, and other agents' transcripts read in place.

// Test helpers may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agents;
mod cache;
mod tree;

use std::path::{Path, PathBuf};

use arbor_tree::{OpenMode, Session, SessionOptions};
use serde_json::{json, Value};

/// 2026-03-01T10:00:00.000Z.
pub const T0: i64 = 1_772_359_200_000;

/// A session file written line by line: `(id, parent, body)` entries, one
/// minute apart from `T0`.
pub fn write_session(
    dir: &Path,
    id: &str,
    parent_session: Option<&str>,
    entries: &[(&str, Option<&str>, Value)],
) -> PathBuf {
    let iso = arbor_log::time::format_iso_ms;
    let mut header = json!({"type": "session", "version": 3, "id": id, "timestamp": iso(T0), "cwd": "/work/app"});
    if let Some(p) = parent_session {
        header["parentSession"] = json!(p);
        header["timestamp"] = json!(iso(T0 + 3_600_000));
    }
    let mut text = header.to_string() + "\n";
    for (k, (eid, parent, body)) in entries.iter().enumerate() {
        let mut v = json!({"id": eid, "parentId": parent, "timestamp": iso(T0 + 60_000 * k as i64)});
        v.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
        text.push_str(&v.to_string());
        text.push('\n');
    }
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join(format!("2026-03-01T10-00-00-000Z_{id}.jsonl"));
    std::fs::write(&file, text).unwrap();
    file
}

pub fn user() -> Value {
    json!({"type": "message", "message": {"role": "user", "content": "go", "timestamp": T0}})
}

/// A reply of `model` with `input` tokens and, when given, a recorded cost.
pub fn reply(model: &str, input: u64, cost: Option<f64>) -> Value {
    let mut usage = json!({"input": input, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": input});
    if let Some(c) = cost {
        usage["cost"] = json!({"input": c, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": c});
    }
    json!({"type": "message", "message": {"role": "assistant", "content": [], "api": "anthropic-messages",
        "provider": "anthropic", "model": model, "usage": usage, "stopReason": "stop", "timestamp": T0}})
}

pub fn open(path: &Path) -> Session {
    Session::open(path, OpenMode::ReadOnly, SessionOptions::default()).unwrap()
}
