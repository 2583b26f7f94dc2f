//! The async agent session: what changes a session tree on a user's behalf,
//! and the model calls and hooks around it.
//!
//! `arbor-agent` owns pi's `AgentSession` flows over an `arbor-tree`
//! [`arbor_tree::Session`]: prompting a model and recording its streamed
//! reply, with automatic compaction around it ([`AgentSession::prompt`]),
//! tree navigation with branch summaries ([`AgentSession::navigate_tree`]),
//! forking before a user message into a new session ([`AgentSession::fork`]),
//! manual compaction ([`AgentSession::compact`]), the model and thinking-level
//! entries ([`AgentSession::set_model_recorded`],
//! [`AgentSession::set_thinking_level`]) and restoring the model from a
//! session.
//!
//! The root holds what a tool author starts from: the session and its
//! handles ([`AgentSession`], [`AgentHandle`], [`AbortHandle`]), its options
//! ([`AgentOptions`]), the options and results of the flows it runs
//! directly ([`CompactOptions`], [`NavigateOptions`], [`ForkResult`], …) and
//! [`AgentError`]. The rest sits in modules, each item in one place:
//! [`prompt`] (a prompt's options, events and result, auto-compaction and
//! overflow), [`model`] (the clients and [`model::ModelClient`], the
//! provider registry and credentials, costs, reasoning effort, the abort
//! marker), [`hooks`] (the hook bus, each event's payload and answer),
//! [`compaction`] and [`branch`] (the pure halves the flows rest on: where
//! to cut, what a move abandons), [`summarizer`] (the
//! [`summarizer::Summarizer`] trait's requests, [`summarizer::LlmSummarizer`]
//! and its prompts) and [`config_file`] (how a configuration file is read:
//! regular files only, with a size cap).
//!
//! ```no_run
//! use arbor_agent::prompt::PromptOptions;
//! use arbor_agent::{AgentOptions, AgentSession, CompactOptions, NavigateOptions};
//! use arbor_tree::{OpenMode, Session, SessionOptions};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let session = Session::open("session.jsonl".as_ref(), OpenMode::Write, SessionOptions::default())?;
//! // The model is restored from the session; keys come from the environment.
//! let mut agent = AgentSession::new(session, AgentOptions::default());
//! let answered = agent.prompt("What changed?", PromptOptions::default()).await?;
//! println!("{} ({})", answered.reply.text(""), answered.reply.stop_reason());
//! let moved = agent.navigate_tree("a1b2c3d4", NavigateOptions { summarize: true, ..Default::default() }).await?;
//! println!("editor: {:?}", moved.editor_text);
//! let compacted = agent.compact(CompactOptions::default()).await?;
//! println!("kept from {}", compacted.first_kept_entry_id);
//! # Ok(())
//! # }
//! ```
//!
//! It does not know the file format or the tree's storage (`arbor-log`,
//! `arbor-tree`), how a context is rebuilt (`arbor-context`), terminals or
//! command lines (`arbor-cli`). It never prints.
//!
//! Promises:
//! - the flows follow pi v0.58.3 step by step, with its error strings, except
//!   where the decisions table says otherwise (the #2608 compaction fix, a
//!   navigation made durable by a leaf marker, the abort state always cleared);
//! - an aborted summary or a cancelled compaction writes nothing; an aborted
//!   or failed reply is recorded as pi records it (`stopReason` `aborted` or
//!   `error`, partial content kept); an abort drops the HTTP request at once;
//! - a failing, panicking or malformed hook is reported, never silently ignored,
//!   and never stops the flow;
//! - a write failure is remembered and refuses every later change;
//! - time and ids come from the session's injected clock and id generator.

#![deny(missing_docs)]

mod abort;
mod agent;
pub mod branch;
mod compact;
pub mod compaction;
pub mod config_file;
mod convert;
mod error;
mod fork;
mod handle;
pub mod hooks;
pub mod model;
mod navigate;
mod options;
pub mod prompt;
mod prompts;
pub mod summarizer;

pub use abort::AbortHandle;
pub use agent::{AgentSession, ModelOnSwitch};
pub use compact::{CompactOptions, CompactResult};
pub use error::AgentError;
pub use fork::ForkResult;
pub use handle::AgentHandle;
pub use navigate::{NavigateOptions, NavigateResult};
pub use options::{AgentOptions, CompactionAlgorithm};
