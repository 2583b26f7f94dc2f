//! Tree navigation (pi's `navigateTree`, docs/architecture.md, "Navigating"): move the leaf within
//! the file, optionally summarizing the branch left behind, with the
//! `session_before_tree` and `session_tree` hooks around it.

use std::sync::Arc;

use arbor_log::Entry;
use arbor_tree::Session;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::abort::Op;
use crate::agent::{emit, AgentSession};
use crate::branch::{collect_entries_for_branch_summary, BranchCollection};
use crate::convert::editor_text;
use crate::error::AgentError;
use crate::hooks::{EventName, HookBus, HookEvent, HookFailure, HookResponse, HookSummary, TreeEvent, TreePreparation};
use crate::summarizer::{BranchSummaryOutcome, BranchSummaryRequest, Summarizer};

/// Options of [`AgentSession::navigate_tree`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NavigateOptions {
    /// Summarize the abandoned branch.
    pub summarize: bool,
    /// Instructions for the summary (appended as "Additional focus", or replacing the prompt).
    pub custom_instructions: Option<String>,
    /// True: the instructions replace the prompt.
    pub replace_instructions: Option<bool>,
    /// A label for the new position (the summary, or the selected entry).
    pub label: Option<String>,
}

/// What [`AgentSession::navigate_tree`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct NavigateResult {
    /// The text of a selected user or custom message, to pre-fill the editor.
    pub editor_text: Option<String>,
    /// A hook cancelled, or the summary was aborted: nothing changed.
    pub cancelled: bool,
    /// The summary was aborted.
    pub aborted: bool,
    /// The `branch_summary` entry written.
    pub summary_entry: Option<Entry>,
    /// Whether a hook supplied the summary (only with a summary).
    pub from_extension: Option<bool>,
    /// The leaf after the move (a summary or label entry when one was written).
    pub new_leaf_id: Option<String>,
    /// The leaf before.
    pub old_leaf_id: Option<String>,
    /// Hooks that failed along the way.
    pub hook_failures: Vec<HookFailure>,
}

impl NavigateResult {
    fn unchanged(leaf: Option<String>, cancelled: bool, aborted: bool, hook_failures: Vec<HookFailure>) -> Self {
        NavigateResult {
            editor_text: None,
            cancelled,
            aborted,
            summary_entry: None,
            from_extension: None,
            new_leaf_id: leaf.clone(),
            old_leaf_id: leaf,
            hook_failures,
        }
    }
}

/// What the `session_before_tree` hooks left of the user's request.
struct Choices {
    custom_instructions: Option<String>,
    replace_instructions: Option<bool>,
    label: Option<String>,
    /// A summary a hook supplied (only when the user wants one).
    summary: Option<HookSummary>,
}

/// Emits `session_before_tree`; `None` when a hook cancels.
// A free function (not a method): no `&AgentSession` is held across the await.
async fn before_tree(
    hooks: &HookBus,
    preparation: TreePreparation,
    token: &CancellationToken,
    failures: &mut Vec<HookFailure>,
) -> Option<Choices> {
    let mut choices = Choices {
        custom_instructions: preparation.custom_instructions.clone(),
        replace_instructions: preparation.replace_instructions,
        label: preparation.label.clone(),
        summary: None,
    };
    let summarize = preparation.user_wants_summary;
    if let Some(HookResponse::BeforeTree(r)) = emit(hooks, HookEvent::BeforeTree(preparation), token, failures).await {
        if r.cancel == Some(true) {
            return None;
        }
        if summarize {
            choices.summary = r.summary;
        }
        if let Some(v) = r.custom_instructions {
            choices.custom_instructions = v;
        }
        if let Some(v) = r.replace_instructions {
            choices.replace_instructions = v;
        }
        if let Some(v) = r.label {
            choices.label = v;
        }
    }
    Some(choices)
}

/// Summarizes the branch left behind: the summary and its details (the files
/// read and modified), or `None` when it was aborted.
async fn summarize(
    summarizer: Arc<dyn Summarizer>,
    request: BranchSummaryRequest,
    token: &CancellationToken,
) -> Result<Option<(String, Option<Value>)>, AgentError> {
    Ok(match summarizer.summarize_branch(request, token.clone()).await? {
        BranchSummaryOutcome::Aborted => None,
        BranchSummaryOutcome::Summary { summary, read_files, modified_files } => {
            Some((summary, Some(json!({"readFiles": read_files, "modifiedFiles": modified_files}))))
        }
    })
}

impl AgentSession {
    /// Moves to `target_id` in the same file, optionally summarizing the
    /// branch left behind (pi's `navigateTree`, docs/architecture.md, "Navigating").
    ///
    /// Selecting a user or custom message moves the leaf to its parent and
    /// returns its text for the editor; anything else becomes the leaf. A
    /// summary is attached at the new position. A move without a summary is
    /// made durable with a hidden leaf marker ([`Session::persist_leaf`]).
    ///
    /// Errors: `No model available for summarization` (summary wanted, no
    /// model; checked first), `Entry <id> not found`, `No API key for
    /// <provider>`, the model's error. An abort during the summary returns
    /// `cancelled` and `aborted` with nothing written.
    pub async fn navigate_tree(
        &mut self,
        target_id: &str,
        options: NavigateOptions,
    ) -> Result<NavigateResult, AgentError> {
        self.check_failed()?;
        let old_leaf_id = self.logical_leaf_id()?;
        if old_leaf_id.as_deref() == Some(target_id) {
            return Ok(NavigateResult::unchanged(old_leaf_id, false, false, vec![]));
        }
        if options.summarize && self.model.is_none() {
            return Err(AgentError::NoModelForSummary);
        }
        let target = self
            .session
            .get_entry(target_id)?
            .cloned()
            .ok_or_else(|| AgentError::EntryNotFound(target_id.to_owned()))?;
        let preparation = self.tree_preparation(&target, old_leaf_id.clone(), &options)?;
        let entries = preparation.entries_to_summarize.clone();
        let guard = self.abort.begin(Op::BranchSummary);
        let token = guard.token.clone();
        let mut failures = vec![];
        let Some(mut choices) = before_tree(&self.opts.hooks, preparation, &token, &mut failures).await else {
            return Ok(NavigateResult::unchanged(old_leaf_id, true, false, failures));
        };
        if token.is_cancelled() {
            return Ok(NavigateResult::unchanged(old_leaf_id, true, true, failures));
        }

        let from_extension = choices.summary.is_some();
        let summary = match choices.summary.take() {
            Some(s) => Some((s.summary, s.details)),
            None if options.summarize && !entries.is_empty() => {
                let request = BranchSummaryRequest {
                    entries,
                    custom_instructions: choices.custom_instructions.take(),
                    replace_instructions: choices.replace_instructions.unwrap_or(false),
                    reserve_tokens: self.opts.branch_summary_reserve_tokens,
                };
                let summarized = summarize(self.summarizer()?, request, &token).await?;
                let Some(summary) = summarized else {
                    return Ok(NavigateResult::unchanged(old_leaf_id, true, true, failures));
                };
                Some(summary)
            }
            None => None,
        };
        if token.is_cancelled() {
            return Ok(NavigateResult::unchanged(old_leaf_id, true, true, failures));
        }

        let summary = summary.filter(|(text, _)| !text.is_empty());
        let label = choices.label.as_deref().filter(|l| !l.is_empty());
        let from_extension = summary.as_ref().map(|_| from_extension);
        let (new_leaf_id, summary_entry) = self.move_to(&target, summary, label, from_extension.unwrap_or(false))?;
        self.rebuild_context();
        let event = TreeEvent {
            new_leaf_id: new_leaf_id.clone(),
            old_leaf_id: old_leaf_id.clone(),
            summary_entry: summary_entry.clone(),
            from_extension,
        };
        emit(&self.opts.hooks, HookEvent::Tree(event), &token, &mut failures).await;
        drop(guard);
        Ok(NavigateResult {
            editor_text: editor_text(&target),
            cancelled: false,
            aborted: false,
            summary_entry,
            from_extension,
            new_leaf_id,
            old_leaf_id,
            hook_failures: failures,
        })
    }

    /// What `session_before_tree` hooks are shown of a move from `old_leaf_id` to `target`.
    fn tree_preparation(
        &self,
        target: &Entry,
        old_leaf_id: Option<String>,
        options: &NavigateOptions,
    ) -> Result<TreePreparation, AgentError> {
        // Only a summary or a `session_before_tree` hook reads what the move
        // leaves behind: without either, a move anywhere in a million-entry
        // session decodes no entry of the two paths.
        let wanted = options.summarize || self.opts.hooks.has_handlers(EventName::SessionBeforeTree);
        let collected = match wanted {
            true => collect_entries_for_branch_summary(&self.session, old_leaf_id.as_deref(), &target.id)?,
            false => BranchCollection { entries: vec![], common_ancestor_id: None },
        };
        Ok(TreePreparation {
            target_id: target.id.clone(),
            old_leaf_id,
            common_ancestor_id: collected.common_ancestor_id,
            entries_to_summarize: collected.entries.into_iter().cloned().collect(),
            user_wants_summary: options.summarize,
            custom_instructions: options.custom_instructions.clone(),
            replace_instructions: options.replace_instructions,
            label: options.label.clone(),
        })
    }

    /// Moves the leaf for a navigation to `target` and writes what it leaves:
    /// the summary entry (labelled) at the new position, or the label and a
    /// leaf marker. Returns the new leaf (before any marker) and the summary entry.
    fn move_to(
        &mut self,
        target: &Entry,
        summary: Option<(String, Option<Value>)>,
        label: Option<&str>,
        from_extension: bool,
    ) -> Result<(Option<String>, Option<Entry>), AgentError> {
        let new_leaf = if editor_text(target).is_some() { target.parent_id.clone() } else { Some(target.id.clone()) };
        let Some((text, details)) = summary else {
            match &new_leaf {
                None => self.session.reset_leaf(),
                Some(id) => self.write(|s| s.branch(id))?,
            }
            if let Some(l) = label {
                self.write(|s| s.append_label_change(&target.id, Some(l)))?;
            }
            let new_leaf_id = self.session.leaf_id().map(str::to_owned);
            self.write(Session::persist_leaf)?;
            return Ok((new_leaf_id, None));
        };
        let id = self.write(|s| s.branch_with_summary(new_leaf.as_deref(), &text, details, Some(from_extension)))?;
        let summary_entry = self.session.get_entry(&id)?.cloned();
        if let Some(l) = label {
            self.write(|s| s.append_label_change(&id, Some(l)))?;
        }
        Ok((self.session.leaf_id().map(str::to_owned), summary_entry))
    }
}
