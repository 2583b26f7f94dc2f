//! What the model sees: the context of a session at its leaf.
//!
//! `arbor-context` owns the context of an `arbor-tree` session at its leaf
//! ([`session_context`], a value; [`write_context_json`], pi's JSON with the
//! stored messages copied from the file, what `arbor context --json` prints)
//! and pi's `buildSessionContext` under it ([`build_session_context`],
//! [`build_context_from_path`], [`walk_to_root`], and [`plan_context`] for
//! callers that decode entries on demand): the root-to-leaf path, the replay
//! of the latest compaction, the thinking level and model state (and
//! oh-my-pi's per-role models, injected rules and mode). It owns the mapping
//! of agent messages to model input ([`convert_to_llm`]), token estimation
//! ([`estimate_tokens`], [`estimate_context_tokens`], and
//! [`current_context_tokens`] for people after a compaction), the summarizer's text
//! helpers ([`serialize_conversation`], [`FileOps`] and friends) and the text
//! people read ([`render`]: an entry in one line, a context's transcript).
//!
//! ```
//! use arbor_context::render::write_transcript;
//! use arbor_context::{session_context, write_context_json};
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
//! let context = session_context(&session)?;
//! assert_eq!(context.messages.len(), 2);
//! assert_eq!(context.model.as_ref().map(|m| m.model_id.as_str()), Some("claude-sonnet-4-5"));
//!
//! // The same context as pi's JSON, written straight from the session.
//! let mut out = Vec::new();
//! write_context_json(&session, &mut out)?;
//! let parsed: serde_json::Value = serde_json::from_slice(&out)?;
//! assert_eq!(parsed, serde_json::to_value(&context)?);
//!
//! // And as text for people.
//! let mut text = Vec::new();
//! write_transcript(&mut text, &context, false)?;
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
//! - [`write_context_json`] parses to exactly what serializing
//!   [`session_context`] gives, reading only the path's entries;
//! - lengths, cuts and sorting follow JavaScript strings (UTF-16 code units);
//! - nothing panics on bad data, every walk is cycle-safe and linear in the path.

#![deny(missing_docs)]

mod context;
mod js;
mod json;
mod llm;
mod parts;
mod reads;
pub mod render;
mod serialize;
mod session;
mod tokens;

pub use context::{
    branch_summary_message, build_context_from_entries, build_context_from_path, build_session_context,
    compaction_summary_message, custom_message, message_of_entry, plan_context, plan_kinds_context, plan_path_context,
    timestamp_ms, walk_to_root, ContextPlan, ContextStep, Leaf, ModelRef, PathHead, PathKind, SessionContext,
};
pub use json::{write_context_json, write_plan_json, write_plan_llm_json};
pub use llm::{
    bash_execution_to_text, convert_to_llm, BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
};
pub use serialize::{
    compute_file_lists, extract_file_ops_from_message, format_file_operations, serialize_conversation, FileOps,
    PathSet, TOOL_RESULT_MAX_CHARS,
};
pub use session::{
    context_of_plan, for_each_plan_message, plan_branch_context, plan_session_context, session_context, Checked,
    SessionPlan,
};
pub use tokens::{
    calculate_context_tokens, current_context_tokens, estimate_context_tokens, estimate_tokens, ContextTokens,
    EstimateTally, TokenTally,
};
