//! Integration tests of arbor-agent: the flows of docs/architecture.md ("Navigating", "Compacting", "Forking before a user message")
//! against a mock model server, the model clients, the hook bus, event
//! snapshots, and agreement with the reference outputs in `fixtures/pi`.

// Test helpers may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod compaction;
mod fork;
mod hooks;
mod mock;
mod model;
mod navigate;
mod prompt;
mod reference;
mod snapshots;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_agent::{
    AgentOptions, AgentSession, Api, ClientOptions, Credentials, EventName, HookBus, HookEvent, HookResponse, ModelInfo,
};
use arbor_log::FixedClock;
use arbor_tree::{MemoryStore, Session, SessionOptions};
use serde_json::{json, Value};

use mock::MockServer;

/// A generous bound on waits that would otherwise hang a broken test (not a timing assertion).
pub const SAFETY: Duration = Duration::from_secs(30);

/// Fails the test instead of hanging when `f` never finishes.
pub async fn bounded<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(SAFETY, f).await.expect("the test hung")
}

/// Deterministic session options: counter ids, a clock ticking 1 ms per read, no index cache.
pub fn session_opts() -> SessionOptions {
    arbor_test_support::deterministic_options()
}

/// An in-memory session.
pub fn mem_session() -> Session {
    Session::in_memory("/work/project", session_opts())
}

/// A persistent session in a memory store (files that never touch the disk).
pub fn store_session(store: &MemoryStore) -> Session {
    let opts = SessionOptions { session_dir: Some("/sessions".into()), ..session_opts().with_store(store.clone()) };
    Session::create("/work/project", opts).unwrap()
}

pub fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})
}

pub fn assistant(text: &str) -> Value {
    arbor_test_support::assistant_reply(text, "claude-test", 10, 5, 2)
}

/// Client options that retry fast.
pub fn fast_client() -> ClientOptions {
    ClientOptions {
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        clock: Arc::new(FixedClock::new(1_767_225_700_000, 1)),
        ..ClientOptions::default()
    }
}

/// The mock server as an Anthropic model (keyless: it is local).
pub fn anthropic_model(mock: &MockServer) -> ModelInfo {
    ModelInfo::new("anthropic", "claude-test", Api::AnthropicMessages, &mock.base())
}

/// The mock server as a Chat Completions model.
pub fn openai_model(mock: &MockServer) -> ModelInfo {
    ModelInfo::new("openai-compat", "gpt-test", Api::OpenAiCompletions, &mock.base_v1())
}

/// Agent options for tests: no environment keys, fast retries, a fixed clock.
pub fn agent_opts() -> AgentOptions {
    AgentOptions::default()
        .with_credentials(Credentials::none())
        .with_client_options(fast_client())
        .with_clock(FixedClock::new(1_767_225_800_000, 1))
}

/// An agent over `session` talking to `mock` (Anthropic API).
pub fn agent(session: Session, mock: &MockServer, hooks: HookBus) -> AgentSession {
    AgentSession::new(session, agent_opts().with_model(anthropic_model(mock)).with_hooks(hooks))
}

/// A hook bus that records every event (as JSON) into `log`, answering nothing.
pub fn recorder(log: &Arc<Mutex<Vec<Value>>>) -> HookBus {
    let mut bus = HookBus::new();
    add_recorder(&mut bus, log);
    bus
}

pub fn add_recorder(bus: &mut HookBus, log: &Arc<Mutex<Vec<Value>>>) {
    for event in EventName::ALL {
        let log = log.clone();
        bus.on(event, "recorder", move |e: Arc<HookEvent>, _| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(e.to_json());
                Ok::<Option<HookResponse>, arbor_agent::HookError>(None)
            }
        });
    }
}

/// The `type`s of recorded events.
pub fn types(log: &Arc<Mutex<Vec<Value>>>) -> Vec<String> {
    log.lock().unwrap().iter().map(|e| e["type"].as_str().unwrap().to_owned()).collect()
}

/// Appends user/assistant pairs; returns their ids in order.
pub fn conversation(session: &mut Session, turns: &[(&str, &str)]) -> Vec<String> {
    let mut ids = vec![];
    for (u, a) in turns {
        ids.push(session.append_message(user(u)).unwrap());
        ids.push(session.append_message(assistant(a)).unwrap());
    }
    ids
}

/// The number of entries of a type.
pub fn count_type(session: &Session, ty: &str) -> usize {
    session.entries().map(Result::unwrap).filter(|e| e.entry_type().as_str() == ty).count()
}

/// A path (`/bin/sh` script body) written to a temp dir, made executable.
pub fn script(dir: &tempfile::TempDir, name: &str, body: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}
