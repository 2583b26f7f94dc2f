//! The async agent session (work in progress).
//!
//! `arbor-agent` will own tree navigation with branch summaries, forking to a
//! new file, compaction, the summarizer over real model HTTP APIs and the hook
//! bus. It is the lowest crate that may use an async runtime.
