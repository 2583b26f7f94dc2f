//! [`AgentSession::prompt`]: pi's `AgentSession.prompt` without tools (one
//! user message, one streamed reply), with the automatic compaction around it
//! (docs/architecture.md, "Compacting"), and the settings entries of docs/architecture.md, "The agent session" (`setModel`,
//! `setThinkingLevel`, a new session's first entries).

use std::fmt;
use std::sync::Arc;

use arbor_context::{calculate_context_tokens, convert_to_llm, estimate_context_tokens, timestamp_ms, TokenTally};
use arbor_log::{EntryKind, MessageView, Role};
use serde_json::Value;

use crate::abort::Op;
use crate::agent::AgentSession;
use crate::compact::{CompactOptions, CompactResult};
use crate::compaction::should_compact;
use crate::convert::user_text_message;
use crate::error::AgentError;
use crate::hooks::HookFailure;
use crate::model::transform::request_messages;
use crate::model::{
    client_for, AssistantReply, CompletionRequest, ModelClient, ModelInfo, ReasoningEffort, StreamDelta, StreamSink,
};
use crate::summarizer::DEFAULT_CONTEXT_WINDOW;

/// pi's thinking levels, in order.
pub const THINKING_LEVELS: [&str; 6] = ["off", "minimal", "low", "medium", "high", "xhigh"];

/// The `errorMessage` of `auto_compaction_end` when a context overflow comes
/// back after one compact-and-retry (pi's exact text).
pub const OVERFLOW_RECOVERY_FAILED: &str = "Context overflow recovery failed after one compact-and-retry attempt. \
     Try reducing context or switching to a larger-context model.";

/// After this many automatic compactions fail in a row, automatic compaction
/// stops (a model that keeps failing would otherwise be asked again on every
/// later prompt); a compaction that succeeds, or a manual one
/// ([`AgentSession::compact`]), starts the count again.
pub const AUTO_COMPACTION_MAX_FAILURES: u32 = 3;

/// Why auto-compaction ran (pi's `reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoCompactionReason {
    /// The context passed `contextWindow − reserveTokens`.
    Threshold,
    /// The model refused the request as too long for its context.
    Overflow,
}

impl AutoCompactionReason {
    /// pi's name: `"threshold"` or `"overflow"`.
    pub fn as_str(self) -> &'static str {
        match self {
            AutoCompactionReason::Threshold => "threshold",
            AutoCompactionReason::Overflow => "overflow",
        }
    }
}

/// Events of a prompt, for a UI.
#[derive(Debug, Clone)]
pub enum AgentEvent {
    /// The user message was appended (its entry id).
    UserMessage {
        /// The `message` entry's id.
        entry_id: String,
    },
    /// A delta of the streaming reply.
    Delta(StreamDelta),
    /// The assistant message was appended (its entry id and the message JSON).
    AssistantMessage {
        /// The `message` entry's id.
        entry_id: String,
        /// The assistant message as recorded.
        message: Value,
    },
    /// pi's `auto_compaction_start`.
    AutoCompactionStart {
        /// Why it runs.
        reason: AutoCompactionReason,
    },
    /// pi's `auto_compaction_end`.
    AutoCompactionEnd {
        /// The compaction written, if any.
        result: Option<CompactResult>,
        /// Aborted (by [`crate::AbortHandle`] or a hook's cancel).
        aborted: bool,
        /// The model call is retried after it (overflow recovery).
        will_retry: bool,
        /// Why it failed (`Auto-compaction failed: …`, `Context overflow recovery failed: …`).
        error_message: Option<String>,
    },
    /// Automatic compaction failed this many times in a row and is off
    /// until a compaction succeeds or `/compact` is asked for (sent once).
    AutoCompactionStopped {
        /// The failures in a row ([`AUTO_COMPACTION_MAX_FAILURES`]).
        failures: u32,
    },
    /// A model call is about to be retried (sent by a UI's
    /// [`crate::RetryObserver`], see [`crate::AgentSession::set_retry_observer`]).
    Retry(crate::model::RetryNotice),
}

/// Receives the events of a prompt.
pub type EventSink = Arc<dyn Fn(AgentEvent) + Send + Sync>;

/// Options of [`AgentSession::prompt`].
#[derive(Clone, Default)]
pub struct PromptOptions {
    /// Where events go (none: no events).
    pub events: Option<EventSink>,
    /// The system prompt sent with the request.
    pub system_prompt: Option<String>,
    /// The most tokens the reply may have (the client's default otherwise).
    pub max_tokens: Option<u64>,
}

impl fmt::Debug for PromptOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptOptions")
            .field("events", &self.events.is_some())
            .field("system_prompt", &self.system_prompt)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

/// What auto-compaction did during a prompt (the fields of pi's `auto_compaction_end`).
#[derive(Debug, Clone)]
pub struct AutoCompactionOutcome {
    /// Why it ran.
    pub reason: AutoCompactionReason,
    /// The compaction written, if any.
    pub result: Option<CompactResult>,
    /// Aborted (by [`crate::AbortHandle`] or a hook's cancel).
    pub aborted: bool,
    /// The model call was retried after it.
    pub will_retry: bool,
    /// Why it failed.
    pub error_message: Option<String>,
}

/// What [`AgentSession::prompt`] did.
#[derive(Debug, Clone)]
pub struct PromptResult {
    /// The user message's entry id.
    pub user_entry_id: String,
    /// The final assistant message's entry id.
    pub assistant_entry_id: String,
    /// The final recorded reply (after an overflow retry: the retried one).
    pub reply: AssistantReply,
    /// What auto-compaction did, if it ran (the last run when it ran twice).
    pub auto_compaction: Option<AutoCompactionOutcome>,
    /// Hooks that failed along the way.
    pub hook_failures: Vec<HookFailure>,
}

/// True when a provider's error message says the request is too long for
/// the model's context (pi-ai's `isContextOverflow` patterns, and HTTP 413).
pub fn is_context_overflow(error_message: &str) -> bool {
    const PHRASES: [&str; 20] = [
        "context length",
        "context_length_exceeded",
        "context_length",
        "maximum context",
        "too many tokens",
        "prompt is too long",
        "exceeds the context window",
        "context window exceeds",
        "input is too long",
        "exceeds the available context",
        "greater than the context length",
        "reduce the length of the messages",
        "maximum prompt length",
        "token limit exceeded",
        "exceeded model token limit",
        "request_too_large",
        "request too large",
        "exceeds the maximum number of tokens",
        "input token count",
        "http 413",
    ];
    let lower = error_message.to_lowercase();
    PHRASES.iter().any(|p| lower.contains(p))
}

/// The reasoning a thinking level asks for.
fn reasoning_for(level: &str) -> Option<ReasoningEffort> {
    match level {
        "minimal" | "low" => Some(ReasoningEffort::Low),
        "medium" => Some(ReasoningEffort::Medium),
        "high" | "xhigh" => Some(ReasoningEffort::High),
        _ => None,
    }
}

fn check_level(level: &str) -> Result<(), AgentError> {
    if THINKING_LEVELS.contains(&level) {
        Ok(())
    } else {
        Err(AgentError::InvalidThinkingLevel(level.to_owned()))
    }
}

/// The state of one prompt: its event sink and what auto-compaction did.
struct Run {
    events: Option<EventSink>,
    outcome: Option<AutoCompactionOutcome>,
    failures: Vec<HookFailure>,
    overflow_attempted: bool,
}

impl Run {
    fn emit(&self, event: AgentEvent) {
        if let Some(sink) = &self.events {
            sink(event);
        }
    }

    fn end(&mut self, outcome: AutoCompactionOutcome) {
        self.emit(AgentEvent::AutoCompactionEnd {
            result: outcome.result.clone(),
            aborted: outcome.aborted,
            will_retry: outcome.will_retry,
            error_message: outcome.error_message.clone(),
        });
        self.outcome = Some(outcome);
    }
}

fn is_assistant(m: &Value) -> bool {
    MessageView::new(m).role() == Some(Role::Assistant)
}

/// True for an assistant message whose usage reports no tokens at all (a
/// server that sends no usage, or zeros): no measure of the context.
fn has_empty_usage(m: &Value) -> bool {
    is_assistant(m) && m.get("usage").is_some_and(|u| calculate_context_tokens(u) == 0)
}

/// The size of a context as it is now (`arbor_context::current_context_tokens`),
/// except that a usage of zero tokens is not taken as a measure: the
/// messages are estimated from their text instead (characters / 4), so a
/// server that reports no usage still gets automatic compaction.
pub fn context_estimate(messages: &[Value]) -> u64 {
    let mut tally = TokenTally::default();
    for m in messages {
        if has_empty_usage(m) {
            let mut counted = m.clone();
            if let Some(o) = counted.as_object_mut() {
                o.remove("usage");
            }
            tally.add(&counted);
        } else {
            tally.add(m);
        }
    }
    tally.tokens().tokens
}

fn ms(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

impl AgentSession {
    /// Sends `text` as a user message and records the streamed reply (pi's
    /// `AgentSession.prompt` without tools).
    ///
    /// Checked before anything is written: an earlier write failure, `No
    /// model selected`, `No API key for <provider>` (a local server needs
    /// none). Then, as pi does:
    /// 1. the pre-prompt compaction check on the last assistant message
    ///    (aborted ones included, docs/architecture.md, "Compacting");
    /// 2. the user message `{role, content:[{type:"text", text}], timestamp}` is appended;
    /// 3. the reply streams (context: `convert_to_llm` of the rebuilt
    ///    messages; reasoning from the path's thinking level; deltas go to
    ///    [`PromptOptions::events`]) and is appended whatever its end —
    ///    aborted ([`crate::AbortHandle::abort`]) and failed replies too;
    /// 4. the post-reply check: a context overflow error compacts and calls
    ///    the model once more (a second overflow ends with
    ///    [`OVERFLOW_RECOVERY_FAILED`]); a context past the threshold compacts.
    ///
    /// Auto-compaction runs [`AgentSession::compact`]'s flow (same hooks) and
    /// never fails the prompt: its failure is an `error_message`.
    pub async fn prompt(&mut self, text: &str, options: PromptOptions) -> Result<PromptResult, AgentError> {
        self.check_failed()?;
        let model = self.model.clone().ok_or(AgentError::NoModelSelected)?;
        let key = self.opts.credentials.require(&model)?;
        let client = client_for(model, key, self.opts.client_options.clone())?;
        let mut run =
            Run { events: options.events.clone(), outcome: None, failures: vec![], overflow_attempted: false };

        let last_assistant = self.context()?.messages.iter().rev().find(|m| is_assistant(m)).cloned();
        if let Some(last) = last_assistant {
            self.check_compaction(&last, false, false, &mut run).await?;
            run.overflow_attempted = false;
        }

        let user = user_text_message(text.to_owned(), self.opts.clock.now_ms());
        let user_entry_id = self.append_message(user)?;
        run.emit(AgentEvent::UserMessage { entry_id: user_entry_id.clone() });

        let (mut reply, mut assistant_entry_id) = self.call_model(client.as_ref(), &options, &run).await?;
        while self.check_compaction(reply.json(), true, true, &mut run).await? {
            (reply, assistant_entry_id) = self.call_model(client.as_ref(), &options, &run).await?;
        }
        Ok(PromptResult {
            user_entry_id,
            assistant_entry_id,
            reply,
            auto_compaction: run.outcome,
            hook_failures: run.failures,
        })
    }

    /// One model call over the current context; the reply is appended.
    async fn call_model(
        &mut self,
        client: &dyn ModelClient,
        options: &PromptOptions,
        run: &Run,
    ) -> Result<(AssistantReply, String), AgentError> {
        // Aborted and failed replies stay in the file but are not sent (pi-ai's
        // transformMessages; the clients apply it too, for any request).
        let request = CompletionRequest {
            system_prompt: options.system_prompt.clone(),
            messages: request_messages(&convert_to_llm(&self.context()?.messages)),
            max_tokens: options.max_tokens,
            reasoning: reasoning_for(self.thinking_level()?),
        };
        let sink: Option<StreamSink> = options.events.clone().map(|events| {
            let sink: StreamSink = Arc::new(move |d: StreamDelta| events(AgentEvent::Delta(d)));
            sink
        });
        let guard = self.abort.begin(Op::Prompt);
        let reply = client.stream(&request, guard.token.clone(), sink).await;
        drop(guard);
        let message = reply.json().clone();
        let entry_id = self.append_message(message.clone())?;
        run.emit(AgentEvent::AssistantMessage { entry_id: entry_id.clone(), message });
        Ok((reply, entry_id))
    }

    /// The time of the latest compaction on the path, in ms.
    fn latest_compaction_ms(&self) -> Result<Option<f64>, AgentError> {
        let path = self.session.get_branch(None)?;
        let entry = path.iter().rev().find(|e| matches!(e.kind, EntryKind::Compaction(_)));
        Ok(entry.and_then(|e| timestamp_ms(&e.timestamp).as_f64()))
    }

    /// pi's `_checkCompaction(message, skipAborted)` (docs/architecture.md, "Compacting"); true when
    /// the model call is to be retried (`retry` allows it).
    async fn check_compaction(
        &mut self,
        message: &Value,
        skip_aborted: bool,
        retry: bool,
        run: &mut Run,
    ) -> Result<bool, AgentError> {
        let settings = self.opts.compaction;
        if !settings.enabled || self.auto_compaction_stopped() {
            return Ok(false);
        }
        let stop = message["stopReason"].as_str().unwrap_or("");
        if skip_aborted && stop == "aborted" {
            return Ok(false);
        }
        let compacted_at = self.latest_compaction_ms()?;
        if let (Some(c), Some(t)) = (compacted_at, ms(message.get("timestamp"))) {
            if t <= c {
                return Ok(false);
            }
        }
        let same_model =
            self.model.as_ref().is_some_and(|m| message["provider"] == m.provider.as_str() && message["model"] == m.id);
        let overflow = stop == "error" && message["errorMessage"].as_str().is_some_and(is_context_overflow);
        if same_model && overflow {
            if run.overflow_attempted {
                run.end(AutoCompactionOutcome {
                    reason: AutoCompactionReason::Overflow,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some(OVERFLOW_RECOVERY_FAILED.to_owned()),
                });
                return Ok(false);
            }
            run.overflow_attempted = true;
            return Ok(self.auto_compact(AutoCompactionReason::Overflow, retry, run).await);
        }
        let tokens = if stop == "error" {
            let messages = &self.context()?.messages;
            let estimate = estimate_context_tokens(messages);
            let Some(i) = estimate.last_usage_index else { return Ok(false) };
            if let (Some(c), Some(t)) = (compacted_at, ms(messages[i].get("timestamp"))) {
                if t <= c {
                    return Ok(false);
                }
            }
            estimate.tokens
        } else {
            match calculate_context_tokens(&message["usage"]) {
                // No usage (or zeros): the context's size from its text.
                0 => context_estimate(&self.context()?.messages),
                n => n,
            }
        };
        if should_compact(tokens, self.context_window(), &settings) {
            self.auto_compact(AutoCompactionReason::Threshold, false, run).await;
        }
        Ok(false)
    }

    /// pi's `_runAutoCompaction(reason, willRetry)`: [`AgentSession::compact`]'s
    /// flow reported through events. True when it compacted and `will_retry`.
    async fn auto_compact(&mut self, reason: AutoCompactionReason, will_retry: bool, run: &mut Run) -> bool {
        run.emit(AgentEvent::AutoCompactionStart { reason });
        let mut failures = vec![];
        let result = self.run_compaction(CompactOptions::default(), &mut failures).await;
        run.failures.extend(failures);
        let mut outcome =
            AutoCompactionOutcome { reason, result: None, aborted: false, will_retry: false, error_message: None };
        match result {
            Ok(r) => {
                outcome.result = Some(r);
                outcome.will_retry = will_retry;
                self.auto_compaction_failures = 0;
            }
            // pi v0.58.3 ends without a result when there is no model, no key or nothing to compact.
            Err(
                AgentError::NothingToCompact
                | AgentError::AlreadyCompacted
                | AgentError::NoModelSelected
                | AgentError::NoApiKey { .. },
            ) => {}
            Err(AgentError::CompactionCancelled) => outcome.aborted = true,
            Err(e) => {
                let prefix = match reason {
                    AutoCompactionReason::Overflow => "Context overflow recovery failed",
                    AutoCompactionReason::Threshold => "Auto-compaction failed",
                };
                outcome.error_message = Some(format!("{prefix}: {e}"));
                self.auto_compaction_failures += 1;
            }
        }
        let retry = outcome.will_retry;
        let failed = outcome.error_message.is_some();
        run.end(outcome);
        // Said once: at the failure that reaches the limit (later prompts do not try).
        if failed && self.auto_compaction_failures == AUTO_COMPACTION_MAX_FAILURES {
            run.emit(AgentEvent::AutoCompactionStopped { failures: self.auto_compaction_failures });
        }
        retry
    }

    /// True once [`AUTO_COMPACTION_MAX_FAILURES`] automatic compactions
    /// failed in a row: the prompt no longer compacts on its own.
    pub fn auto_compaction_stopped(&self) -> bool {
        self.auto_compaction_failures >= AUTO_COMPACTION_MAX_FAILURES
    }

    /// pi's `setModel`: makes `model` active and appends
    /// `model_change(provider, id)`. Returns the entry id.
    pub fn set_model_recorded(&mut self, model: ModelInfo) -> Result<String, AgentError> {
        self.check_failed()?;
        let id = self.write(|s| s.append_model_change(&model.provider, &model.id))?;
        self.model = Some(model);
        self.rebuild_context();
        Ok(id)
    }

    /// pi's `setThinkingLevel`: appends `thinking_level_change` only when the
    /// level changes (then returns its id). Levels: [`THINKING_LEVELS`].
    pub fn set_thinking_level(&mut self, level: &str) -> Result<Option<String>, AgentError> {
        check_level(level)?;
        self.check_failed()?;
        if self.thinking_level()? == level {
            return Ok(None);
        }
        let id = self.write(|s| s.append_thinking_level_change(level))?;
        self.rebuild_context();
        Ok(Some(id))
    }

    /// The thinking level of the current path (`"off"` when none is recorded).
    pub fn thinking_level(&self) -> Result<&str, AgentError> {
        Ok(&self.context()?.thinking_level)
    }

    /// pi's first entries of a new session: `model_change` (when a model is
    /// active), then `thinking_level_change(thinking_level)`. Call it on a
    /// brand-new session.
    pub fn record_session_start(&mut self, thinking_level: &str) -> Result<(), AgentError> {
        check_level(thinking_level)?;
        self.check_failed()?;
        if let Some(m) = self.model.clone() {
            self.write(|s| s.append_model_change(&m.provider, &m.id))?;
        }
        self.write(|s| s.append_thinking_level_change(thinking_level))?;
        self.rebuild_context();
        Ok(())
    }

    /// The size of the current context for people ([`context_estimate`]):
    /// pi's `estimateContextTokens` (docs/architecture.md, "Compacting"), the last usage of an
    /// assistant message that is neither aborted nor an error plus estimates
    /// of the messages after it, except that a usage from before the latest
    /// compaction, or one of zero tokens, is not used (the messages are
    /// estimated instead).
    pub fn context_tokens(&self) -> Result<u64, AgentError> {
        Ok(context_estimate(&self.context()?.messages))
    }

    /// The context window of the active model (128000 when unknown).
    pub fn context_window(&self) -> u64 {
        self.model.as_ref().and_then(|m| m.context_window).filter(|w| *w > 0).unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_messages_are_recognized() {
        for m in [
            "anthropic: HTTP 400: prompt is too long: 210000 tokens > 200000 maximum (the request was refused)",
            "openai: HTTP 400: This model's maximum context length is 8192 tokens. However, you requested 9000",
            "x: HTTP 400: {\"code\":\"context_length_exceeded\"}",
            "x: HTTP 400: Your input exceeds the context window of this model",
            "x: HTTP 413: Request Entity Too Large (the request is too large)",
            "llama: HTTP 400: the request exceeds the available context size",
            "x: HTTP 400: Too many tokens in the request",
        ] {
            assert!(is_context_overflow(m), "{m}");
        }
        for m in [
            "anthropic: HTTP 500: internal error",
            "openai: HTTP 429: rate limited",
            "x: HTTP 401: invalid api key",
            "Request was aborted.",
            "",
        ] {
            assert!(!is_context_overflow(m), "{m}");
        }
    }

    #[test]
    fn thinking_levels_map_to_reasoning() {
        assert_eq!(reasoning_for("off"), None);
        assert_eq!(reasoning_for("minimal"), Some(ReasoningEffort::Low));
        assert_eq!(reasoning_for("low"), Some(ReasoningEffort::Low));
        assert_eq!(reasoning_for("medium"), Some(ReasoningEffort::Medium));
        assert_eq!(reasoning_for("high"), Some(ReasoningEffort::High));
        assert_eq!(reasoning_for("xhigh"), Some(ReasoningEffort::High));
        assert!(check_level("max").is_err());
        assert_eq!(
            AgentError::InvalidThinkingLevel("max".into()).to_string(),
            "Invalid thinking level \"max\": use off, minimal, low, medium, high or xhigh"
        );
    }
}
