//! Summaries: the [`Summarizer`] trait, its requests and answers, and the
//! built-in [`LlmSummarizer`] with its prompts (docs/architecture.md, "Summaries", for branch
//! summaries, 5.6.5 for compaction).

use std::fmt;
use std::sync::Arc;

use arbor_context::convert_to_llm;
use arbor_context::summary::{compute_file_lists, format_file_operations, serialize_conversation};
use arbor_log::{Clock, Entry, Message};
use async_trait::async_trait;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::branch::prepare_branch_entries;
use crate::compaction::CompactionPreparation;
use crate::error::AgentError;
use crate::model::transform::is_replayable;
use crate::model::{CompletionRequest, ModelClient, ModelError, ReasoningEffort};
pub use crate::prompts::{
    BRANCH_SUMMARY_PREAMBLE, BRANCH_SUMMARY_PROMPT, NO_CONTENT_TO_SUMMARIZE, NO_PRIOR_HISTORY, SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT, TURN_PREFIX_PROMPT, UPDATE_SUMMARIZATION_PROMPT,
};

/// The context window assumed for a model that does not state one.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// The default `branchSummary.reserveTokens`.
pub const DEFAULT_BRANCH_RESERVE_TOKENS: u64 = 16_384;
/// The output budget of a branch summary.
pub const BRANCH_SUMMARY_MAX_TOKENS: u64 = 2048;

/// A request for a branch summary.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchSummaryRequest {
    /// The abandoned entries, oldest first.
    pub entries: Vec<Entry>,
    /// Extra instructions from the user or a hook.
    pub custom_instructions: Option<String>,
    /// When true (and there are custom instructions), they replace the prompt.
    pub replace_instructions: bool,
    /// Tokens kept free for the prompt and the answer.
    pub reserve_tokens: u64,
}

/// The result of a branch summary.
#[derive(Debug, Clone, PartialEq)]
pub enum BranchSummaryOutcome {
    /// The summary text (preamble and file lists included) and the file lists.
    Summary {
        /// The text stored in the `branch_summary` entry.
        summary: String,
        /// Files only read.
        read_files: Vec<String>,
        /// Files written or edited.
        modified_files: Vec<String>,
    },
    /// Cancelled: nothing may be written.
    Aborted,
}

/// A request for a compaction summary.
#[derive(Debug, Clone, Copy)]
pub struct CompactionSummaryRequest<'a> {
    /// What to summarize.
    pub preparation: &'a CompactionPreparation,
    /// The user's focus (`/compact <instructions>`).
    pub custom_instructions: Option<&'a str>,
    /// Extra context lines from `session.compacting` hooks.
    pub extra_context: &'a [String],
    /// A prompt from a `session.compacting` hook that replaces the built-in one.
    pub prompt: Option<&'a str>,
}

/// A compaction summary: the text stored in the entry and its `details`.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionSummary {
    /// The summary, file lists appended.
    pub summary: String,
    /// `{readFiles, modifiedFiles}`.
    pub details: Value,
}

/// Writes summaries. The built-in one is [`LlmSummarizer`]; tests and
/// embedders may supply their own.
#[async_trait]
pub trait Summarizer: Send + Sync + fmt::Debug {
    /// Summarizes abandoned branch entries. Cancelling `cancel` gives
    /// [`BranchSummaryOutcome::Aborted`].
    async fn summarize_branch(
        &self,
        request: BranchSummaryRequest,
        cancel: CancellationToken,
    ) -> Result<BranchSummaryOutcome, AgentError>;

    /// Summarizes a compaction. Cancelling `cancel` gives [`AgentError::CompactionCancelled`].
    async fn summarize_compaction(
        &self,
        request: CompactionSummaryRequest<'_>,
        cancel: CancellationToken,
    ) -> Result<CompactionSummary, AgentError>;
}

/// The instructions of a branch summary: the custom text alone when it
/// replaces the prompt, the prompt plus `\n\nAdditional focus: <custom>`, or
/// the prompt.
pub fn branch_summary_instructions(custom: Option<&str>, replace: bool) -> String {
    match custom.filter(|c| !c.is_empty()) {
        Some(c) if replace => c.to_owned(),
        Some(c) => format!("{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {c}"),
        None => BRANCH_SUMMARY_PROMPT.to_owned(),
    }
}

/// `<conversation>\n{text}\n</conversation>\n\n` — how every summary prompt
/// starts. Aborted and failed replies are left out, as from every request
/// (pi's summaries keep their text; Arbor does not, see docs/format.md).
pub fn conversation_block(messages: &[Value]) -> String {
    let kept: Vec<Value> = messages.iter().filter(|m| is_replayable(m)).cloned().collect();
    format!("<conversation>\n{}\n</conversation>\n\n", serialize_conversation(&convert_to_llm(&kept)))
}

/// A summarizer that asks a model.
#[derive(Debug, Clone)]
pub struct LlmSummarizer {
    client: Arc<dyn ModelClient>,
    clock: Arc<dyn Clock>,
}

impl LlmSummarizer {
    /// A summarizer over `client`; `clock` stamps the prompt messages.
    pub fn new(client: Arc<dyn ModelClient>, clock: Arc<dyn Clock>) -> LlmSummarizer {
        LlmSummarizer { client, clock }
    }

    fn request(&self, prompt: String, max_tokens: u64, reasoning: bool) -> CompletionRequest {
        CompletionRequest {
            system_prompt: Some(SUMMARIZATION_SYSTEM_PROMPT.to_owned()),
            messages: vec![Message::user(&prompt, self.clock.now_ms())],
            max_tokens: Some(max_tokens),
            reasoning: (reasoning && self.client.model().reasoning).then_some(ReasoningEffort::High),
        }
    }

    /// One compaction call; an error reply or transport failure becomes `"<context>: <message>"`.
    async fn compaction_call(
        &self,
        prompt: String,
        max_tokens: u64,
        reasoning: bool,
        context: &'static str,
        cancel: CancellationToken,
    ) -> Result<String, AgentError> {
        let request = self.request(prompt, max_tokens, reasoning);
        match self.client.complete(&request, cancel).await {
            Err(e) if e.is_cancelled() => Err(AgentError::CompactionCancelled),
            Err(e) => Err(AgentError::CompactionSummary { context, message: e.to_string(), model_error: Some(e) }),
            Ok(reply) if reply.stop_reason() == "aborted" => Err(AgentError::CompactionCancelled),
            Ok(reply) if reply.stop_reason() == "error" => Err(AgentError::CompactionSummary {
                context,
                message: reply.error_message().unwrap_or("Unknown error").to_owned(),
                model_error: None,
            }),
            Ok(reply) => Ok(reply.text("\n")),
        }
    }

    async fn history_summary(
        &self,
        request: &CompactionSummaryRequest<'_>,
        cancel: CancellationToken,
    ) -> Result<String, AgentError> {
        let prep = request.preparation;
        let max_tokens = prep.settings.reserve_tokens * 8 / 10;
        let base = match (request.prompt, &prep.previous_summary) {
            (Some(p), _) => p,
            (None, Some(_)) => UPDATE_SUMMARIZATION_PROMPT,
            (None, None) => SUMMARIZATION_PROMPT,
        };
        let mut instructions = base.to_owned();
        if let Some(custom) = request.custom_instructions.filter(|c| !c.is_empty()) {
            instructions.push_str("\n\nAdditional focus: ");
            instructions.push_str(custom);
        }
        let mut prompt = conversation_block(&prep.messages_to_summarize);
        if let Some(prev) = &prep.previous_summary {
            prompt.push_str(&format!("<previous-summary>\n{prev}\n</previous-summary>\n\n"));
        }
        if !request.extra_context.is_empty() {
            prompt.push_str(&format!(
                "<additional-context>\n{}\n</additional-context>\n\n",
                request.extra_context.join("\n")
            ));
        }
        prompt.push_str(&instructions);
        self.compaction_call(prompt, max_tokens, true, "Summarization failed", cancel).await
    }
}

#[async_trait]
impl Summarizer for LlmSummarizer {
    async fn summarize_branch(
        &self,
        request: BranchSummaryRequest,
        cancel: CancellationToken,
    ) -> Result<BranchSummaryOutcome, AgentError> {
        let window = self.client.model().context_window.filter(|w| *w > 0).unwrap_or(DEFAULT_CONTEXT_WINDOW);
        let budget = i64::try_from(window).unwrap_or(i64::MAX) - i64::try_from(request.reserve_tokens).unwrap_or(0);
        let refs: Vec<&Entry> = request.entries.iter().collect();
        let prep = prepare_branch_entries(&refs, budget);
        // Nothing but cut-off replies is nothing to summarize either (they are left out).
        if !prep.messages.iter().any(is_replayable) {
            return Ok(BranchSummaryOutcome::Summary {
                summary: NO_CONTENT_TO_SUMMARIZE.to_owned(),
                read_files: vec![],
                modified_files: vec![],
            });
        }
        let instructions =
            branch_summary_instructions(request.custom_instructions.as_deref(), request.replace_instructions);
        let prompt = format!("{}{instructions}", conversation_block(&prep.messages));
        let llm_request = self.request(prompt, BRANCH_SUMMARY_MAX_TOKENS, false);
        let reply = match self.client.complete(&llm_request, cancel.clone()).await {
            Err(e) if e.is_cancelled() => return Ok(BranchSummaryOutcome::Aborted),
            Err(ModelError::NoApiKey { provider, env_var }) => return Err(AgentError::NoApiKey { provider, env_var }),
            Err(e) => return Err(AgentError::Model(e)),
            Ok(r) => r,
        };
        match reply.stop_reason() {
            "aborted" => return Ok(BranchSummaryOutcome::Aborted),
            "error" => {
                return Err(AgentError::BranchSummary(
                    reply.error_message().filter(|m| !m.is_empty()).unwrap_or("Summarization failed").to_owned(),
                ))
            }
            _ => {}
        }
        if cancel.is_cancelled() {
            return Ok(BranchSummaryOutcome::Aborted);
        }
        let (read_files, modified_files) = compute_file_lists(&prep.file_ops);
        let summary = format!(
            "{BRANCH_SUMMARY_PREAMBLE}{}{}",
            reply.text("\n"),
            format_file_operations(&read_files, &modified_files)
        );
        Ok(BranchSummaryOutcome::Summary { summary, read_files, modified_files })
    }

    async fn summarize_compaction(
        &self,
        request: CompactionSummaryRequest<'_>,
        cancel: CancellationToken,
    ) -> Result<CompactionSummary, AgentError> {
        let prep = request.preparation;
        let mut summary = if prep.is_split_turn && !prep.turn_prefix_messages.is_empty() {
            let history = async {
                if prep.messages_to_summarize.is_empty() {
                    Ok(NO_PRIOR_HISTORY.to_owned())
                } else {
                    self.history_summary(&request, cancel.clone()).await
                }
            };
            let prefix_prompt = format!("{}{TURN_PREFIX_PROMPT}", conversation_block(&prep.turn_prefix_messages));
            let prefix = self.compaction_call(
                prefix_prompt,
                prep.settings.reserve_tokens / 2,
                false,
                "Turn prefix summarization failed",
                cancel.clone(),
            );
            let (history, prefix) = tokio::join!(history, prefix);
            format!("{}\n\n---\n\n**Turn Context (split turn):**\n\n{}", history?, prefix?)
        } else {
            self.history_summary(&request, cancel.clone()).await?
        };
        if cancel.is_cancelled() {
            return Err(AgentError::CompactionCancelled);
        }
        let (read_files, modified_files) = compute_file_lists(&prep.file_ops);
        summary.push_str(&format_file_operations(&read_files, &modified_files));
        Ok(CompactionSummary { summary, details: json!({"readFiles": read_files, "modifiedFiles": modified_files}) })
    }
}
