//! Integration tests of arbor-tree: the reference's outputs, ports of pi's
//! session-manager tests (spec 7.2–7.7), the write lifecycle, locking.

// Test helpers may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod crash;
mod index_first;
mod lifecycle;
mod lock;
mod model;
mod pi_ports;
mod reference;

use std::path::PathBuf;

use arbor_log::{CounterIds, FixedClock};
use arbor_tree::{MemoryStore, Session, SessionOptions};
use serde_json::{json, Value};

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Deterministic options: counter ids, a clock ticking 1 ms per read.
pub fn opts() -> SessionOptions {
    SessionOptions::default().with_ids(CounterIds::new()).with_clock(FixedClock::new(1_767_225_600_000, 1))
}

pub fn mem_opts() -> SessionOptions {
    opts().with_store(MemoryStore::new())
}

pub fn in_memory() -> Session {
    Session::in_memory("/proj", mem_opts())
}

pub fn user(text: &str) -> Value {
    json!({"role": "user", "content": text, "timestamp": 1})
}

pub fn assistant(text: &str) -> Value {
    json!({
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "test",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop",
        "timestamp": 2
    })
}

pub fn ids(entries: &[&arbor_log::Entry]) -> Vec<String> {
    entries.iter().map(|e| e.id.clone()).collect()
}
