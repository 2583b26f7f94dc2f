//! Manual compaction (pi's `/compact`, docs/architecture.md, "Compacting"), also what
//! auto-compaction runs: cut the path, summarize the older part (or take a
//! hook's compaction) and append a `compaction` entry, with the
//! `session_before_compact`, `session.compacting` and `session_compact`
//! hooks around it.

use std::sync::Arc;

use arbor_log::{Entry, EntryKind};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::abort::Op;
use crate::agent::{emit, AgentSession};
use crate::compaction::{prepare_compaction, prepare_compaction_pi, CompactionPreparation};
use crate::error::AgentError;
use crate::hooks::{BeforeCompactEvent, CompactEvent, CompactingEvent, HookBus, HookEvent, HookFailure, HookResponse};
use crate::options::CompactionAlgorithm;
use crate::summarizer::{CompactionSummaryRequest, Summarizer};

/// Options of [`AgentSession::compact`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactOptions {
    /// The user's focus for the summary.
    pub custom_instructions: Option<String>,
    /// Overrides `keepRecentTokens` for this compaction.
    pub keep_recent_tokens: Option<u64>,
}

/// What [`AgentSession::compact`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactResult {
    /// The summary.
    pub summary: String,
    /// The first entry kept.
    pub first_kept_entry_id: String,
    /// The context size before.
    pub tokens_before: u64,
    /// `{readFiles, modifiedFiles}` (or a hook's details).
    pub details: Option<Value>,
    /// The id of the `compaction` entry.
    pub entry_id: String,
    /// Whether a hook supplied the compaction.
    pub from_extension: bool,
    /// Hooks that failed along the way.
    pub hook_failures: Vec<HookFailure>,
}

impl AgentSession {
    /// Compacts the current path (pi's manual `/compact`, docs/architecture.md, "Compacting").
    ///
    /// Errors, in the order checked: `No model selected`, `No API key for
    /// <provider>`, `Already compacted`, `Nothing to compact (session too
    /// small)` (also when the cut keeps every message and there is no
    /// earlier summary to update, where pi would ask the model to summarize
    /// an empty conversation), `Compaction cancelled`
    /// (a hook or an abort), and the summarizer's `Summarization failed: …`.
    /// Nothing is written on error.
    pub async fn compact(&mut self, options: CompactOptions) -> Result<CompactResult, AgentError> {
        // Asking for a compaction gives automatic compaction its tries back.
        self.auto_compaction_failures = 0;
        let mut failures = vec![];
        self.run_compaction(options, &mut failures).await
    }

    /// The compaction shared by [`AgentSession::compact`] and auto-compaction;
    /// hook failures go to `failures` (and into the result on success).
    pub(crate) async fn run_compaction(
        &mut self,
        options: CompactOptions,
        failures: &mut Vec<HookFailure>,
    ) -> Result<CompactResult, AgentError> {
        self.check_failed()?;
        if self.model.is_none() {
            return Err(AgentError::NoModelSelected);
        }
        let summarizer = self.summarizer()?;
        let (preparation, branch_entries) = self.compaction_preparation(&options)?;
        let guard = self.abort.begin(Op::Compaction);
        let token = guard.token.clone();

        let event = HookEvent::BeforeCompact(BeforeCompactEvent {
            preparation: preparation.clone(),
            branch_entries,
            custom_instructions: options.custom_instructions.clone(),
        });
        let mut supplied = None;
        if let Some(HookResponse::BeforeCompact(r)) = emit(&self.opts.hooks, event, &token, failures).await {
            if r.cancel == Some(true) {
                return Err(AgentError::CompactionCancelled);
            }
            supplied = r.compaction;
        }
        if token.is_cancelled() {
            return Err(AgentError::CompactionCancelled);
        }
        let from_extension = supplied.is_some();
        let compacted = match supplied {
            Some(c) => Compacted {
                summary: c.summary,
                first_kept_entry_id: c.first_kept_entry_id,
                tokens_before: c.tokens_before,
                details: c.details,
            },
            None => {
                let session_id = self.session.session_id().to_owned();
                let summarizing = Summarizing { preparation: &preparation, options: &options, session_id };
                summarize(&self.opts.hooks, summarizer, summarizing, &token, failures).await?
            }
        };
        if token.is_cancelled() {
            return Err(AgentError::CompactionCancelled);
        }
        let Compacted { summary, first_kept_entry_id, tokens_before, details } = compacted;
        let entry_id = self.write(|s| {
            s.append_compaction(&summary, &first_kept_entry_id, tokens_before, details.clone(), Some(from_extension))
        })?;
        self.rebuild_context();
        if let Some(entry) = self.session.get_entry(&entry_id)?.cloned() {
            let event = HookEvent::Compact(CompactEvent { compaction_entry: entry, from_extension });
            emit(&self.opts.hooks, event, &token, failures).await;
        }
        drop(guard);
        Ok(CompactResult {
            summary,
            first_kept_entry_id,
            tokens_before,
            details,
            entry_id,
            from_extension,
            hook_failures: failures.clone(),
        })
    }

    /// The preparation of a compaction of the current path, and the path's
    /// entries; an error when there is nothing to compact.
    fn compaction_preparation(
        &self,
        options: &CompactOptions,
    ) -> Result<(CompactionPreparation, Vec<Entry>), AgentError> {
        let mut settings = self.opts.compaction;
        if let Some(keep) = options.keep_recent_tokens {
            settings.keep_recent_tokens = keep;
        }
        let path = self.session.get_branch(None)?;
        let preparation = match self.opts.compaction_algorithm {
            CompactionAlgorithm::Arbor => prepare_compaction(&path, &settings),
            CompactionAlgorithm::Pi => prepare_compaction_pi(&path, &settings),
        };
        let Some(preparation) = preparation else {
            let compacted = path.last().is_some_and(|e| matches!(e.kind, EntryKind::Compaction(_)));
            return Err(if compacted { AgentError::AlreadyCompacted } else { AgentError::NothingToCompact });
        };
        // Nothing to summarize and no earlier summary to update: pi would send
        // an empty conversation to the model here; Arbor sends nothing.
        if preparation.messages_to_summarize.is_empty()
            && preparation.turn_prefix_messages.is_empty()
            && preparation.previous_summary.is_none()
        {
            return Err(AgentError::NothingToCompact);
        }
        Ok((preparation, path.iter().map(|e| (*e).clone()).collect()))
    }
}

/// What a compaction writes: the summary, where the kept part starts, the
/// size before and the details.
struct Compacted {
    summary: String,
    first_kept_entry_id: String,
    tokens_before: u64,
    details: Option<Value>,
}

/// What the summarizer needs to write a compaction's summary.
struct Summarizing<'a> {
    preparation: &'a CompactionPreparation,
    options: &'a CompactOptions,
    session_id: String,
}

/// Emits `session.compacting` (extra context or a replacement prompt) and
/// summarizes the prepared messages.
// A free function (not a method): no `&AgentSession` is held across the await.
async fn summarize(
    hooks: &HookBus,
    summarizer: Arc<dyn Summarizer>,
    s: Summarizing<'_>,
    token: &CancellationToken,
    failures: &mut Vec<HookFailure>,
) -> Result<Compacted, AgentError> {
    let mut extra_context = vec![];
    let mut prompt = None;
    let event = HookEvent::Compacting(CompactingEvent {
        session_id: s.session_id,
        messages: s.preparation.messages_to_summarize.clone(),
    });
    if let Some(HookResponse::Compacting(r)) = emit(hooks, event, token, failures).await {
        extra_context = r.context.unwrap_or_default();
        prompt = r.prompt;
    }
    let request = CompactionSummaryRequest {
        preparation: s.preparation,
        custom_instructions: s.options.custom_instructions.as_deref(),
        extra_context: &extra_context,
        prompt: prompt.as_deref(),
    };
    let summary = summarizer.summarize_compaction(request, token.clone()).await?;
    Ok(Compacted {
        summary: summary.summary,
        first_kept_entry_id: s.preparation.first_kept_entry_id.clone(),
        tokens_before: s.preparation.tokens_before,
        details: Some(summary.details),
    })
}
