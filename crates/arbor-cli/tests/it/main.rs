//! End-to-end tests of the `arbor` binary: reference agreement, snapshots of
//! the readable outputs, errors as one line, no panics on any input.

// Test helpers may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent;
mod background;
mod catalog;
mod catalog_reliability;
mod chat;
mod chat_commands;
mod chat_keys;
mod chat_models;
mod chat_pi;
mod chat_terminal;
mod commands;
mod compat;
mod config_files;
mod context_json;
mod deep_tree;
mod escapes;
mod follow;
mod hook_signals;
mod interop;
mod mcp;
mod model_server;
mod pi_cli;
mod pi_config;
mod read_only_dir;
mod reference;
mod reliability;
mod search_server;
mod serve;
mod server;
mod server_connect;
mod server_copies;
mod server_frozen;
mod server_safety;
mod server_unlock;
mod term;
mod tui;
mod usage;
mod usage_ccusage;

use std::path::Path;
use std::process::{Command, Output};

pub use arbor_test_support::{big_stack, fixtures};

/// Runs `arbor` with deterministic ids, from the fixtures directory, with
/// this test process's own cache directory (so catalogs never reach the real one).
pub fn arbor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .env("ARBOR_IDS", "counter")
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache_dir())
        .env_remove("ARBOR_SESSIONS_DIR")
        .env_remove("PI_CODING_AGENT_DIR")
        .current_dir(fixtures())
        .output()
        .unwrap()
}

/// A cache directory for this test process, removed with it.
pub fn cache_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// The path of a fixture relative to the fixtures directory, for stable snapshots.
pub fn rel(p: &Path) -> String {
    p.strip_prefix(fixtures().canonicalize().unwrap()).unwrap_or(p).to_string_lossy().into_owned()
}

pub fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    let mut de = serde_json::Deserializer::from_slice(&o.stdout);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).unwrap()
}
