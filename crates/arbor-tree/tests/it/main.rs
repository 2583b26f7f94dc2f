//! Integration tests of arbor-tree: the reference's outputs, ports of pi's
//! session-manager tests, the write lifecycle, locking.

// Test helpers may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod append_index;
mod changed_behind;
mod crash;
mod defaults;
mod index_first;
mod lifecycle;
mod lock;
mod model;
mod pi_ports;
mod reference;
mod stale_index;
mod stored_index;

use arbor_tree::{MemoryStore, Session, SessionOptions};
use serde_json::{json, Value};

pub use arbor_test_support::fixtures;

/// Deterministic options: counter ids, a clock ticking 1 ms per read, no index cache.
pub fn opts() -> SessionOptions {
    arbor_test_support::deterministic_options()
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
    arbor_test_support::assistant_reply(text, "test", 1, 1, 2)
}

pub fn ids(entries: &[&arbor_log::Entry]) -> Vec<String> {
    entries.iter().map(|e| e.id.clone()).collect()
}
