//! arbor-pg against a real PostgreSQL server (`ARBOR_TEST_PG`; each test
//! makes a database of its own). Without a server every test skips with one
//! line, unless `ARBOR_TEST_PG_REQUIRED` is set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod child;
mod connect;
mod copies;
mod failure;
mod follow;
mod index;
mod list;
mod lock;
mod schema;
mod search;
mod session;
mod sessions;
mod sync;

use std::path::PathBuf;

use arbor_pg::{PgStore, SessionKey};
use arbor_test_support::pg::TestDb;
use arbor_tree::SessionOptions;
use serde_json::{json, Value};

pub fn user(text: &str) -> Value {
    json!({"role": "user", "content": text, "timestamp": 1})
}

pub fn assistant(text: &str) -> Value {
    arbor_test_support::assistant_reply(text, "test", 1, 1, 2)
}

/// A fresh database and a store on it, or `None` when the test is skipped.
pub fn store(test: &str) -> Option<(TestDb, PgStore)> {
    let db = TestDb::new(test)?;
    let store = PgStore::connect(&db.url).unwrap();
    Some((db, store))
}

/// Deterministic options on `store`, new sessions under the store's root.
pub fn pg_opts(store: &PgStore) -> SessionOptions {
    SessionOptions { sessions_root: Some(PathBuf::from(arbor_pg::ROOT)), ..arbor_test_support::deterministic_options() }
        .with_store(store.clone())
}

/// The bytes of the session at `path` on the server.
pub fn server_bytes(store: &PgStore, path: &std::path::Path) -> Vec<u8> {
    store.read_session(&SessionKey::of_path(path)).unwrap().expect("the session is on the server")
}
