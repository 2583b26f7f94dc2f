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
//! session. It owns
//! the pure parts those flows rest on ([`collect_entries_for_branch_summary`],
//! [`prepare_branch_entries`], [`find_cut_point`], [`prepare_compaction`]), the
//! [`Summarizer`] trait with the built-in [`LlmSummarizer`], model clients over
//! real HTTP ([`ModelClient`]: OpenAI-compatible Chat Completions and
//! Anthropic Messages, streamed) and the hook bus ([`HookBus`]: typed events,
//! in-process handlers and external command hooks).
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
//!
//! ```no_run
//! use arbor_agent::{AgentOptions, AgentSession, CompactOptions, NavigateOptions, PromptOptions};
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

mod agent;
mod branch;
mod compaction;
mod convert;
mod error;
mod handle;
mod hooks;
mod model;
mod prompt;
mod prompts;
mod summarizer;

pub use agent::{
    plan_session_context, session_context, AbortHandle, AgentOptions, AgentSession, CompactOptions, CompactResult,
    CompactionAlgorithm, ForkResult, NavigateOptions, NavigateResult,
};
pub use branch::{collect_entries_for_branch_summary, prepare_branch_entries, BranchCollection, BranchPreparation};
pub use compaction::{
    find_cut_point, find_turn_start_index, prepare_compaction, prepare_compaction_pi, should_compact,
    CompactionPreparation, CompactionSettings, CutPoint,
};
pub use error::AgentError;
pub use handle::AgentHandle;
pub use hooks::{
    BeforeCompactEvent, BeforeCompactResult, BeforeForkEvent, BeforeForkResult, BeforeTreeResult, CommandHook,
    CommandHookConfig, CompactEvent, CompactingEvent, CompactingResult, Emitted, EventName, ForkEvent, Hook, HookBus,
    HookCompaction, HookConfig, HookConfigError, HookError, HookEvent, HookFailure, HookResponse, HookSummary,
    TreeEvent, TreePreparation, DEFAULT_HOOK_TIMEOUT,
};
pub use model::{
    aborted_message, client_for, default_key_env, AnthropicClient, Api, AssistantReply, ClientOptions,
    CompletionRequest, Credentials, ModelClient, ModelCost, ModelError, ModelInfo, OpenAiClient, ProviderConfig,
    ProviderRegistry, ReasoningEffort, StreamDelta, StreamSink, REQUEST_ABORTED,
};
pub use prompt::{
    is_context_overflow, AgentEvent, AutoCompactionOutcome, AutoCompactionReason, EventSink, PromptOptions,
    PromptResult, OVERFLOW_RECOVERY_FAILED, THINKING_LEVELS,
};
pub use prompts::{
    BRANCH_SUMMARY_PREAMBLE, BRANCH_SUMMARY_PROMPT, NO_CONTENT_TO_SUMMARIZE, NO_PRIOR_HISTORY, SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT, TURN_PREFIX_PROMPT, UPDATE_SUMMARIZATION_PROMPT,
};
pub use summarizer::{
    branch_summary_instructions, conversation_block, BranchSummaryOutcome, BranchSummaryRequest, CompactionSummary,
    CompactionSummaryRequest, LlmSummarizer, Summarizer, BRANCH_SUMMARY_MAX_TOKENS, DEFAULT_BRANCH_RESERVE_TOKENS,
    DEFAULT_CONTEXT_WINDOW,
};
