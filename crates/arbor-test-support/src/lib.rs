//! Test helpers shared by the workspace's test crates, so that no test crate
//! copies another's or includes its files with `#[path]`.
//!
//! What it owns: where the fixtures are ([`fixtures`], [`jsonl_under`]), the
//! oracle's recorded outputs ([`oracle`]), deterministic session options
//! ([`deterministic_options`]), pi's messages ([`assistant_reply`]),
//! generated sessions ([`write_big_session`], and [`recall`]'s in many scripts), an OpenCode storage folder
//! ([`opencode::write_storage`]), snapshots of a directory ([`DirSnapshot`]),
//! a small deterministic generator ([`Rng`]) and headless Chromium over
//! WebDriver ([`browser`]). What it promises: nothing outside tests. It is a
//! dev-dependency only; `cargo xtask tidy` refuses it as a normal dependency
//! of any crate.
//!
//! Helpers panic with a message naming the file at fault: in a test, a
//! failure is the test failing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod browser;
mod files;
mod messages;
pub mod opencode;
pub mod oracle;
pub mod pg;
pub mod recall;
mod rng;

use arbor_log::ids::CounterIds;
use arbor_log::FixedClock;
use arbor_tree::SessionOptions;

pub use files::{edit_in_place, fixtures, forged_index, jsonl_under, write_big_session, DirSnapshot};
pub use messages::assistant_reply;
pub use rng::Rng;

/// The time every deterministic clock starts at: 2026-01-01T00:00:00.000Z.
pub const START_MS: i64 = 1_767_225_600_000;

/// Session options whose ids and times repeat from run to run: counter ids
/// (`00000001`, …) and a clock that starts at [`START_MS`] and ticks 1 ms
/// per reading. No index cache (`index_dir` is `None`), so tests never
/// write to the user's cache directory.
pub fn deterministic_options() -> SessionOptions {
    SessionOptions { index_dir: None, ..SessionOptions::default() }
        .with_ids(CounterIds::new())
        .with_clock(FixedClock::new(START_MS, 1))
}

/// Runs `f` on a thread with a 512 MiB stack (for walks over the oracle's
/// deeply nested JSON), failing the test when it panics.
pub fn big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(512 << 20).spawn(f).unwrap().join().unwrap();
}
