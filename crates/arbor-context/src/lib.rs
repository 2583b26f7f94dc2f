//! What the model sees: the context of a session at its leaf (or at any entry).
//!
//! `arbor-context` owns the context of an `arbor-tree` session, built one
//! way: [`Context::of`] a session, optionally [`Context::at`] an entry, then
//! [`build`](Context::build) it as a value ([`SessionContext`]),
//! [`write_json`](Context::write_json) it as pi's JSON with the stored
//! messages copied from the file (what `arbor context --json` prints),
//! [`write_transcript`](Context::write_transcript) it as text for people or
//! walk its messages ([`for_each_message`](Context::for_each_message)).
//! Under it is pi's `buildSessionContext` ([`plan`]: the plan of a path's
//! context for the fast paths, and the reference builders over entries you
//! hold): the root-to-leaf path, the replay of the latest compaction, the
//! thinking level and model state (and oh-my-pi's per-role models,
//! injected rules and mode). It owns the mapping of agent messages to model
//! input ([`convert_to_llm`]; the messages the context makes up are in
//! [`messages`]), token estimation ([`estimate_tokens`],
//! [`estimate_context_tokens`], and [`current_context_tokens`] for people
//! after a compaction), the summarizer's text helpers ([`summary`]) and the
//! text people read ([`render`]: an entry in one line, a context's
//! transcript).
//!
//! ```
//! use arbor_context::render::{write_transcript, Form};
//! use arbor_context::Context;
//! use arbor_tree::{Session, SessionOptions};
//! use serde_json::json;
//!
//! let mut session = Session::in_memory("/work", SessionOptions::default());
//! session.append_message(json!({"role": "user", "content": "What is a session tree?", "timestamp": 1}))?;
//! session.append_message(json!({
//!     "role": "assistant", "content": [{"type": "text", "text": "A log whose entries point at their parents."}],
//!     "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop", "timestamp": 2,
//! }))?;
//!
//! // The context at the leaf, as a value.
//! let context = Context::of(&session).build()?;
//! assert_eq!(context.messages.len(), 2);
//! assert_eq!(context.model.as_ref().map(|m| m.model_id.as_str()), Some("claude-sonnet-4-5"));
//!
//! // The same context as pi's JSON, written straight from the session.
//! let mut out = Vec::new();
//! Context::of(&session).write_json(&mut out)?;
//! let parsed: serde_json::Value = serde_json::from_slice(&out)?;
//! assert_eq!(parsed, serde_json::to_value(&context)?);
//!
//! // And as text for people.
//! let mut text = Vec::new();
//! write_transcript(&mut text, &context, Form::AsStored)?;
//! assert!(String::from_utf8(text)?.starts_with("user: What is a session tree?\nassistant: A log whose"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! It does not know how files are stored or indexed (it asks an `arbor-tree`
//! [`arbor_tree::Session`] for a path's heads, entries and JSON text), models,
//! summarizers or async runtimes: it takes a session, entries or a path, and
//! returns values (or writes to any `io::Write`). Messages stay opaque JSON so
//! unknown fields pass through untouched.
//!
//! Promises:
//! - the outputs are pi v0.58.3's, value for value: [`SessionContext::to_json`]
//!   and [`convert_to_llm`] reproduce the reference's JSON exactly, including
//!   its quirks (the branch-summary suffix without a newline, `null` for an
//!   unparseable timestamp, absent keys where JavaScript has `undefined`);
//! - [`Context::write_json`] parses to exactly what serializing
//!   [`Context::build`] gives, reading only the path's entries;
//! - lengths, cuts and sorting follow JavaScript strings (UTF-16 code units);
//! - nothing panics on bad data, every walk is cycle-safe and linear in the path.

#![deny(missing_docs)]

mod builder;
mod context;
mod js;
mod json;
mod llm;
mod long;
mod parts;
mod reads;
pub mod render;
mod serialize;
mod session;
mod tokens;

pub use builder::Context;
pub use context::{ModelRef, SessionContext};
pub use llm::convert_to_llm;
pub use tokens::{
    calculate_context_tokens, current_context_tokens, estimate_context_tokens, estimate_tokens, ContextTokens,
    EstimateTally, TokenTally,
};

pub mod plan {
    //! The plan of a context, for the fast paths: a path's context planned
    //! from its heads (types and roles) and the few entries its settings
    //! need ([`plan_heads`], [`plan_kinds`], [`plan_kinds_at`], and
    //! [`plan_path`] over a session), then built ([`build`]), written
    //! ([`write_json`], [`write_llm_json`], [`write_transcript`]) or walked
    //! ([`for_each_message`]) from the plan, each stored message read once.
    //! A caller that checks the lines a plan reads before writing
    //! (`arbor context`) keeps the plan between the two.
    //!
    //! Here too are pi's reference builders over entries the caller holds:
    //! [`build_from_entries`] (pi's `buildSessionContext(entries, leafId)`),
    //! [`build_from_path`] and [`build_from_owned_path`] (a root-first path),
    //! and [`walk_to_root`].
    //!
    //! ```
    //! use arbor_context::{plan, Context};
    //! use arbor_tree::{Session, SessionOptions};
    //! use serde_json::json;
    //!
    //! let mut session = Session::in_memory("/work", SessionOptions::default());
    //! session.append_message(json!({"role": "user", "content": "hi", "timestamp": 1}))?;
    //! let p = plan::plan_path(&session, session.branch_positions(None))?;
    //! let mut json = Vec::new();
    //! plan::write_json(&mut json, &session, &p)?;
    //! assert_eq!(serde_json::from_slice::<serde_json::Value>(&json)?, plan::build(&session, p)?.to_json());
    //! // pi's reference, over the entries themselves.
    //! let entries: Vec<_> = session.entries().map(|e| e.cloned()).collect::<Result<_, _>>()?;
    //! assert_eq!(plan::build_from_entries(&entries, plan::Leaf::Default), Context::of(&session).build()?);
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```

    pub use crate::context::{
        build_from_entries, build_from_owned_path, build_from_path, plan_heads, plan_kinds, plan_kinds_at,
        walk_to_root, ContextPlan, ContextStep, Leaf, PathHead,
    };
    pub use crate::json::{write_json, write_llm_json};
    pub use crate::long::estimate_tally;
    pub use crate::reads::PathKind;
    pub use crate::render::transcript::write_plan_transcript as write_transcript;
    pub use crate::session::{build, for_each_message, plan_path, Checked, SessionPlan};
}

pub mod messages {
    //! The messages a context makes up from entries that are not messages
    //! (custom messages, branch and compaction summaries), the message of a
    //! decoded entry, and the texts the mapping for the model
    //! ([`convert_to_llm`](crate::convert_to_llm)) wraps them in.
    //!
    //! ```
    //! use arbor_context::messages::timestamp_ms;
    //!
    //! assert_eq!(timestamp_ms("2026-01-01T00:00:01.000Z"), serde_json::json!(1767225601000_i64));
    //! assert_eq!(timestamp_ms("not a time"), serde_json::Value::Null);
    //! ```

    pub use crate::context::{
        branch_summary_message, compaction_summary_message, custom_message, message_of_entry, timestamp_ms,
    };
    pub use crate::llm::{
        bash_execution_to_text, BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX,
        COMPACTION_SUMMARY_SUFFIX,
    };
}

pub mod summary {
    //! The summarizer's text helpers: a conversation serialized for a
    //! summary prompt ([`serialize_conversation`]) and the files its tool
    //! calls read and changed ([`FileOps`], [`compute_file_lists`],
    //! [`format_file_operations`]).
    //!
    //! ```
    //! use arbor_context::summary::{compute_file_lists, extract_file_ops_from_message, FileOps};
    //! use serde_json::json;
    //!
    //! let call = json!({"role": "assistant", "content": [
    //!     {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/lib.rs"}},
    //! ]});
    //! let mut ops = FileOps::default();
    //! extract_file_ops_from_message(&call, &mut ops);
    //! let (read, modified) = compute_file_lists(&ops);
    //! assert_eq!((read, modified), (vec!["src/lib.rs".to_owned()], vec![]));
    //! ```

    pub use crate::serialize::{
        compute_file_lists, extract_file_ops_from_message, format_file_operations, serialize_conversation, FileOps,
        PathSet, TOOL_RESULT_MAX_CHARS,
    };
}
