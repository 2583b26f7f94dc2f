//! [`AgentSession`]: pi's `AgentSession` for the session tree — tree
//! navigation with branch summaries (spec 5.1), fork (5.7), manual compaction
//! (5.6.6), model restore (4.3) and the events around them (5.8).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arbor_context::{message_of_entry, plan_context, ContextPlan, PathHead, SessionContext};
use arbor_log::{Clock, Entry, EntryKind, Role, SystemClock};
use arbor_tree::{Position, Session, TreeError, LEAF_MARKER_TYPE};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::branch::collect_entries_for_branch_summary;
use crate::compaction::{prepare_compaction, prepare_compaction_pi, CompactionSettings};
use crate::convert::editor_text;
use crate::error::AgentError;
use crate::hooks::{
    BeforeCompactEvent, BeforeForkEvent, CompactEvent, CompactingEvent, EventName, ForkEvent, HookBus, HookEvent,
    HookFailure, HookResponse, HookSummary, TreeEvent, TreePreparation,
};
use crate::model::{client_for, ClientOptions, Credentials, ModelInfo, ProviderRegistry};
use crate::summarizer::{
    BranchSummaryOutcome, BranchSummaryRequest, CompactionSummaryRequest, LlmSummarizer, Summarizer,
    DEFAULT_BRANCH_RESERVE_TOKENS,
};

/// Emits `event` when someone listens; failures are added to `failures`.
// A free function over the bus (not a method) so that no `&AgentSession` is
// held across the await: the session is `Send` but not `Sync`.
pub(crate) async fn emit(
    hooks: &HookBus,
    event: HookEvent,
    cancel: &CancellationToken,
    failures: &mut Vec<HookFailure>,
) -> Option<HookResponse> {
    if !hooks.has_handlers(event.name()) {
        return None;
    }
    let emitted = hooks.emit(event, cancel).await;
    failures.extend(emitted.failures);
    emitted.response
}

/// The context at the session's leaf, decoding only the path entries it
/// reads (on all cores) and moving them into it: on a large session that is
/// what the answer costs, not the whole path. The same value as
/// `build_context_from_path(&session.get_branch(None))` (tested in
/// arbor-context's `positions` tests).
pub fn session_context(session: &Session) -> SessionContext {
    let (idx, plan) = plan_session_context(session);
    let wanted: Vec<Position> = plan.message_positions().map(|p| idx[p]).collect();
    let mut messages = session.decode_many(&wanted).into_iter();
    plan.into_context(|_| messages.next().flatten().and_then(message_of_entry))
}

/// The leaf's path (positions in file order) and the [`plan_context`] of its
/// context, whose positions index that path: the settings and made-up
/// messages are decoded (on all cores), each other message is left where it
/// is stored, for callers that copy it from there ([`session_context`] decodes it).
pub fn plan_session_context(session: &Session) -> (Vec<Position>, ContextPlan) {
    let idx = session.branch_positions(None);
    // Positions the session just gave: each has a head.
    let heads: Vec<PathHead> = idx
        .iter()
        .filter_map(|&p| {
            Some(PathHead {
                id: session.id_at(p)?,
                entry_type: session.entry_type_at(p)?.clone(),
                role: session.role_at(p).cloned(),
            })
        })
        .collect();
    let plan = plan_context(&heads, |ps| session.decode_many(&ps.iter().map(|&p| idx[p]).collect::<Vec<_>>()));
    (idx, plan)
}

/// Which compaction algorithm [`AgentSession::compact`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionAlgorithm {
    /// pi's, with the #2608 fix (the default): see [`prepare_compaction`].
    #[default]
    Arbor,
    /// pi v0.58.3's exactly, losing a previous compaction's kept entries: see [`prepare_compaction_pi`].
    Pi,
}

/// How an [`AgentSession`] finds and calls models, runs hooks and compacts.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The model to use; `None` restores it from the session (spec 4.3).
    pub model: Option<ModelInfo>,
    /// Known providers, for restoring a model from a session.
    pub providers: ProviderRegistry,
    /// API keys.
    pub credentials: Credentials,
    /// Timeouts and retries of model calls.
    pub client_options: ClientOptions,
    /// A summarizer that replaces the built-in LLM one (no key is then required).
    pub summarizer: Option<Arc<dyn Summarizer>>,
    /// The hook handlers.
    pub hooks: HookBus,
    /// Compaction settings.
    pub compaction: CompactionSettings,
    /// The compaction algorithm.
    pub compaction_algorithm: CompactionAlgorithm,
    /// `branchSummary.reserveTokens`.
    pub branch_summary_reserve_tokens: u64,
    /// The clock of prompt timestamps.
    pub clock: Arc<dyn Clock>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            model: None,
            providers: ProviderRegistry::builtin(),
            credentials: Credentials::from_env(),
            client_options: ClientOptions::default(),
            summarizer: None,
            hooks: HookBus::new(),
            compaction: CompactionSettings::default(),
            compaction_algorithm: CompactionAlgorithm::Arbor,
            branch_summary_reserve_tokens: DEFAULT_BRANCH_RESERVE_TOKENS,
            clock: Arc::new(SystemClock),
        }
    }
}

impl AgentOptions {
    /// Uses `model` instead of the session's.
    pub fn with_model(mut self, model: ModelInfo) -> Self {
        self.model = Some(model);
        self
    }
    /// Replaces the hook bus.
    pub fn with_hooks(mut self, hooks: HookBus) -> Self {
        self.hooks = hooks;
        self
    }
    /// Replaces the credentials.
    pub fn with_credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = credentials;
        self
    }
    /// Replaces the provider registry.
    pub fn with_providers(mut self, providers: ProviderRegistry) -> Self {
        self.providers = providers;
        self
    }
    /// Replaces the summarizer.
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.summarizer = Some(summarizer);
        self
    }
    /// Replaces the client options.
    pub fn with_client_options(mut self, options: ClientOptions) -> Self {
        self.client_options = options;
        self
    }
    /// Replaces the clock.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }
}

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

/// What [`AgentSession::fork`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkResult {
    /// The selected user message's text, to pre-fill the editor.
    pub selected_text: String,
    /// A hook cancelled the fork.
    pub cancelled: bool,
    /// The new session file (persistent sessions; it may not exist until the first assistant message).
    pub path: Option<PathBuf>,
    /// Hooks that failed along the way.
    pub hook_failures: Vec<HookFailure>,
}

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

#[derive(Debug, Default)]
struct Running {
    branch_summary: Option<CancellationToken>,
    compaction: Option<CancellationToken>,
    prompt: Option<CancellationToken>,
}

/// Aborts a running summary, compaction or model reply from anywhere
/// (another task, a signal handler), and tells whether one runs (pi's
/// `isCompacting`, `isStreaming`).
#[derive(Debug, Clone, Default)]
pub struct AbortHandle {
    running: Arc<Mutex<Running>>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    BranchSummary,
    Compaction,
    Prompt,
}

impl AbortHandle {
    fn with<R>(&self, f: impl FnOnce(&mut Running) -> R) -> R {
        f(&mut self.running.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Aborts a running branch summary (pi's `abortBranchSummary`).
    pub fn abort_branch_summary(&self) {
        self.with(|r| r.branch_summary.as_ref().map(CancellationToken::cancel));
    }

    /// Aborts a running compaction (pi's `abortCompaction`).
    pub fn abort_compaction(&self) {
        self.with(|r| r.compaction.as_ref().map(CancellationToken::cancel));
    }

    /// Aborts a streaming reply of [`AgentSession::prompt`] (pi's `abort`);
    /// the reply is recorded as aborted.
    pub fn abort_prompt(&self) {
        self.with(|r| r.prompt.as_ref().map(CancellationToken::cancel));
    }

    /// Aborts whatever runs.
    pub fn abort(&self) {
        self.abort_branch_summary();
        self.abort_compaction();
        self.abort_prompt();
    }

    /// True while a model reply of [`AgentSession::prompt`] streams (pi's `isStreaming`).
    pub fn is_streaming(&self) -> bool {
        self.with(|r| r.prompt.is_some())
    }

    /// True while a navigation (from its `session_before_tree` on) or a compaction runs.
    pub fn is_compacting(&self) -> bool {
        self.with(|r| r.branch_summary.is_some() || r.compaction.is_some())
    }

    pub(crate) fn begin(&self, op: Op) -> OpGuard {
        let token = CancellationToken::new();
        self.with(|r| match op {
            Op::BranchSummary => r.branch_summary = Some(token.clone()),
            Op::Compaction => r.compaction = Some(token.clone()),
            Op::Prompt => r.prompt = Some(token.clone()),
        });
        OpGuard { handle: self.clone(), op, token }
    }
}

/// Clears the running operation however the flow ends (pi leaves it set on a
/// hook cancel; the decisions table fixes that).
pub(crate) struct OpGuard {
    handle: AbortHandle,
    op: Op,
    pub(crate) token: CancellationToken,
}

impl Drop for OpGuard {
    fn drop(&mut self) {
        let op = self.op;
        self.handle.with(|r| match op {
            Op::BranchSummary => r.branch_summary = None,
            Op::Compaction => r.compaction = None,
            Op::Prompt => r.prompt = None,
        });
    }
}

/// The agent session: owns a [`Session`] and runs the flows that change it.
///
/// Operations take `&mut self`, so one runs at a time; [`AgentSession::spawn`]
/// moves the session into a task behind a cloneable [`crate::AgentHandle`].
/// An [`AbortHandle`] reaches a running summary from outside.
#[derive(Debug)]
pub struct AgentSession {
    pub(crate) session: Session,
    pub(crate) opts: AgentOptions,
    pub(crate) model: Option<ModelInfo>,
    pub(crate) context: SessionContext,
    pub(crate) abort: AbortHandle,
    failed: Option<String>,
    notices: Vec<String>,
}

impl AgentSession {
    /// Wraps `session`, restores the model (spec 4.3) and builds the context.
    ///
    /// The model is `options.model`, or else the last `model_change` or
    /// assistant message on the current path, if its provider is known and
    /// has a key (or is local); otherwise a notice says why it was not restored.
    pub fn new(session: Session, options: AgentOptions) -> AgentSession {
        let mut agent = AgentSession {
            session,
            model: options.model.clone(),
            opts: options,
            context: SessionContext::empty(),
            abort: AbortHandle::default(),
            failed: None,
            notices: vec![],
        };
        agent.rebuild_context();
        if agent.model.is_none() {
            agent.model = agent.restore_model();
        }
        agent
    }

    fn restore_model(&mut self) -> Option<ModelInfo> {
        if self.context.messages.is_empty() {
            return None;
        }
        let r = self.context.model.clone()?;
        let name = format!("{}/{}", r.provider, r.model_id);
        let Some(model) = self.opts.providers.resolve(&r.provider, &r.model_id) else {
            self.notices.push(format!("Could not restore model {name}: unknown provider {}", r.provider));
            return None;
        };
        if self.opts.credentials.require(&model).is_err() {
            self.notices.push(format!("Could not restore model {name}: no API key (set {})", model.key_env));
            return None;
        }
        Some(model)
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Gives the session back.
    pub fn into_session(self) -> Session {
        self.session
    }

    /// The agent context of the current leaf (rebuilt after every change).
    pub fn context(&self) -> &SessionContext {
        &self.context
    }

    /// The agent messages of the current leaf.
    pub fn messages(&self) -> &[Value] {
        &self.context.messages
    }

    /// The active model.
    pub fn model(&self) -> Option<&ModelInfo> {
        self.model.as_ref()
    }

    /// Replaces the active model (nothing is written).
    pub fn set_model(&mut self, model: Option<ModelInfo>) {
        self.model = model;
    }

    /// Things a user should hear about (a model that could not be restored).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The hook bus.
    pub fn hooks_mut(&mut self) -> &mut HookBus {
        &mut self.opts.hooks
    }

    /// A handle that aborts running summaries and compactions.
    pub fn abort_handle(&self) -> AbortHandle {
        self.abort.clone()
    }

    /// True while a summary or compaction runs.
    pub fn is_compacting(&self) -> bool {
        self.abort.is_compacting()
    }

    /// The write failure that stopped this session, if any.
    pub fn write_failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    pub(crate) fn check_failed(&self) -> Result<(), AgentError> {
        match &self.failed {
            Some(e) => Err(AgentError::WriteFailed(e.clone())),
            None => Ok(()),
        }
    }

    /// Runs a session write; an I/O failure is remembered and refuses every later change.
    pub(crate) fn write<T>(&mut self, f: impl FnOnce(&mut Session) -> Result<T, TreeError>) -> Result<T, AgentError> {
        f(&mut self.session).map_err(|e| {
            if matches!(e, TreeError::Log(_) | TreeError::Poisoned(_)) {
                self.failed.get_or_insert_with(|| e.to_string());
            }
            AgentError::Tree(e)
        })
    }

    /// The leaf as the user sees it: a hidden leaf marker (left by an earlier
    /// navigation) stands for its parent, so it is never "abandoned" or summarized.
    pub fn logical_leaf_id(&self) -> Option<String> {
        let leaf = self.session.leaf_entry()?;
        match &leaf.kind {
            EntryKind::Custom(c) if c.custom_type == LEAF_MARKER_TYPE => leaf.parent_id.clone(),
            _ => Some(leaf.id.clone()),
        }
    }

    pub(crate) fn rebuild_context(&mut self) {
        self.context = session_context(&self.session);
    }

    /// The summarizer: the injected one, or an LLM one for the active model
    /// (which needs a key unless its server is local).
    fn summarizer(&self) -> Result<Arc<dyn Summarizer>, AgentError> {
        if let Some(s) = &self.opts.summarizer {
            return Ok(s.clone());
        }
        let model = self.model.clone().ok_or(AgentError::NoModelSelected)?;
        let key = self.opts.credentials.require(&model)?;
        let client = client_for(model, key, self.opts.client_options.clone())?;
        Ok(Arc::new(LlmSummarizer::new(client, self.opts.clock.clone())))
    }

    /// Moves to `target_id` in the same file, optionally summarizing the
    /// branch left behind (pi's `navigateTree`, spec 5.1).
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
        let old_leaf_id = self.logical_leaf_id();
        if old_leaf_id.as_deref() == Some(target_id) {
            return Ok(NavigateResult::unchanged(old_leaf_id, false, false, vec![]));
        }
        if options.summarize && self.model.is_none() {
            return Err(AgentError::NoModelForSummary);
        }
        let target = self
            .session
            .get_entry(target_id)
            .cloned()
            .ok_or_else(|| AgentError::EntryNotFound(target_id.to_owned()))?;
        let collected = collect_entries_for_branch_summary(&self.session, old_leaf_id.as_deref(), target_id);
        let entries: Vec<Entry> = collected.entries.into_iter().cloned().collect();
        let common_ancestor_id = collected.common_ancestor_id;

        let mut custom_instructions = options.custom_instructions.clone();
        let mut replace_instructions = options.replace_instructions;
        let mut label = options.label.clone();
        let guard = self.abort.begin(Op::BranchSummary);
        let token = guard.token.clone();
        let mut failures = vec![];

        let preparation = TreePreparation {
            target_id: target_id.to_owned(),
            old_leaf_id: old_leaf_id.clone(),
            common_ancestor_id,
            entries_to_summarize: entries.clone(),
            user_wants_summary: options.summarize,
            custom_instructions: custom_instructions.clone(),
            replace_instructions,
            label: label.clone(),
        };
        let mut hook_summary: Option<HookSummary> = None;
        if let Some(HookResponse::BeforeTree(r)) =
            emit(&self.opts.hooks, HookEvent::BeforeTree(preparation), &token, &mut failures).await
        {
            if r.cancel == Some(true) {
                return Ok(NavigateResult::unchanged(old_leaf_id, true, false, failures));
            }
            if options.summarize {
                hook_summary = r.summary;
            }
            if let Some(v) = r.custom_instructions {
                custom_instructions = v;
            }
            if let Some(v) = r.replace_instructions {
                replace_instructions = v;
            }
            if let Some(v) = r.label {
                label = v;
            }
        }
        if token.is_cancelled() {
            return Ok(NavigateResult::unchanged(old_leaf_id, true, true, failures));
        }

        let mut summary_text: Option<String> = None;
        let mut summary_details: Option<Value> = None;
        let from_extension = hook_summary.is_some();
        if let Some(s) = hook_summary {
            summary_text = Some(s.summary);
            summary_details = s.details;
        } else if options.summarize && !entries.is_empty() {
            let summarizer = self.summarizer()?;
            let request = BranchSummaryRequest {
                entries,
                custom_instructions,
                replace_instructions: replace_instructions.unwrap_or(false),
                reserve_tokens: self.opts.branch_summary_reserve_tokens,
            };
            match summarizer.summarize_branch(request, token.clone()).await? {
                BranchSummaryOutcome::Aborted => {
                    return Ok(NavigateResult::unchanged(old_leaf_id, true, true, failures));
                }
                BranchSummaryOutcome::Summary { summary, read_files, modified_files } => {
                    summary_text = Some(summary);
                    summary_details = Some(json!({"readFiles": read_files, "modifiedFiles": modified_files}));
                }
            }
        }
        if token.is_cancelled() {
            return Ok(NavigateResult::unchanged(old_leaf_id, true, true, failures));
        }

        let editor_text = editor_text(&target);
        let new_leaf = if editor_text.is_some() { target.parent_id.clone() } else { Some(target_id.to_owned()) };
        let label = label.filter(|l| !l.is_empty());
        let summary_text = summary_text.filter(|s| !s.is_empty());
        let mut summary_entry = None;
        if let Some(text) = &summary_text {
            let id = self.write(|s| {
                s.branch_with_summary(new_leaf.as_deref(), text, summary_details.clone(), Some(from_extension))
            })?;
            summary_entry = self.session.get_entry(&id).cloned();
            if let Some(l) = &label {
                self.write(|s| s.append_label_change(&id, Some(l)))?;
            }
        } else {
            match &new_leaf {
                None => self.session.reset_leaf(),
                Some(id) => self.write(|s| s.branch(id))?,
            }
            if let Some(l) = &label {
                self.write(|s| s.append_label_change(target_id, Some(l)))?;
            }
        }
        let new_leaf_id = self.session.leaf_id().map(str::to_owned);
        if summary_text.is_none() {
            self.write(Session::persist_leaf)?;
        }
        self.rebuild_context();
        let from_extension = summary_text.as_ref().map(|_| from_extension);
        let event = TreeEvent {
            new_leaf_id: new_leaf_id.clone(),
            old_leaf_id: old_leaf_id.clone(),
            summary_entry: summary_entry.clone(),
            from_extension,
        };
        emit(&self.opts.hooks, HookEvent::Tree(event), &token, &mut failures).await;
        drop(guard);
        Ok(NavigateResult {
            editor_text,
            cancelled: false,
            aborted: false,
            summary_entry,
            from_extension,
            new_leaf_id,
            old_leaf_id,
            hook_failures: failures,
        })
    }

    /// Forks before a user message into a new session (pi's `fork`, the
    /// /branch flow of spec 5.7).
    ///
    /// A root message starts an empty session whose header names the old
    /// file as parent; any other gets the path up to the message's parent
    /// ([`Session::create_branched_session`]). In-memory sessions return no path.
    pub async fn fork(&mut self, entry_id: &str) -> Result<ForkResult, AgentError> {
        self.check_failed()?;
        let entry = self
            .session
            .get_entry(entry_id)
            .filter(|e| e.message_role() == Some(Role::User))
            .cloned()
            .ok_or(AgentError::InvalidForkEntry)?;
        let selected_text = editor_text(&entry).unwrap_or_default();
        let token = CancellationToken::new();
        let mut failures = vec![];
        let mut skip_restore = false;
        let event = HookEvent::BeforeFork(BeforeForkEvent { entry_id: entry_id.to_owned() });
        if let Some(HookResponse::BeforeFork(r)) = emit(&self.opts.hooks, event, &token, &mut failures).await {
            if r.cancel == Some(true) {
                return Ok(ForkResult { selected_text, cancelled: true, path: None, hook_failures: failures });
            }
            skip_restore = r.skip_conversation_restore == Some(true);
        }
        let previous_session_file = self.session.session_file().map(|p| p.to_string_lossy().into_owned());
        let path = match &entry.parent_id {
            None => {
                let parent = if self.session.is_persistent() { previous_session_file.clone() } else { None };
                self.session.new_session(None, parent)
            }
            Some(parent) => self.write(|s| s.create_branched_session(parent))?,
        };
        if !skip_restore {
            self.rebuild_context();
        }
        emit(&self.opts.hooks, HookEvent::Fork(ForkEvent { previous_session_file }), &token, &mut failures).await;
        Ok(ForkResult { selected_text, cancelled: false, path, hook_failures: failures })
    }

    /// Compacts the current path (pi's manual `/compact`, spec 5.6.6).
    ///
    /// Errors, in the order checked: `No model selected`, `No API key for
    /// <provider>`, `Already compacted`, `Nothing to compact (session too
    /// small)`, `Compaction cancelled` (a hook or an abort), and the
    /// summarizer's `Summarization failed: …`. Nothing is written on error.
    pub async fn compact(&mut self, options: CompactOptions) -> Result<CompactResult, AgentError> {
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
        let mut settings = self.opts.compaction;
        if let Some(keep) = options.keep_recent_tokens {
            settings.keep_recent_tokens = keep;
        }
        let path = self.session.get_branch(None);
        let preparation = match self.opts.compaction_algorithm {
            CompactionAlgorithm::Arbor => prepare_compaction(&path, &settings),
            CompactionAlgorithm::Pi => prepare_compaction_pi(&path, &settings),
        };
        let Some(preparation) = preparation else {
            let compacted = path.last().is_some_and(|e| matches!(e.kind, EntryKind::Compaction(_)));
            return Err(if compacted { AgentError::AlreadyCompacted } else { AgentError::NothingToCompact });
        };
        let branch_entries: Vec<Entry> = path.iter().map(|e| (*e).clone()).collect();
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
        let (summary, first_kept_entry_id, tokens_before, details) = match supplied {
            Some(c) => (c.summary, c.first_kept_entry_id, c.tokens_before, c.details),
            None => {
                let mut extra_context = vec![];
                let mut prompt = None;
                let event = HookEvent::Compacting(CompactingEvent {
                    session_id: self.session.session_id().to_owned(),
                    messages: preparation.messages_to_summarize.clone(),
                });
                if let Some(HookResponse::Compacting(r)) = emit(&self.opts.hooks, event, &token, failures).await {
                    extra_context = r.context.unwrap_or_default();
                    prompt = r.prompt;
                }
                let request = CompactionSummaryRequest {
                    preparation: &preparation,
                    custom_instructions: options.custom_instructions.as_deref(),
                    extra_context: &extra_context,
                    prompt: prompt.as_deref(),
                };
                let s = summarizer.summarize_compaction(request, token.clone()).await?;
                (s.summary, preparation.first_kept_entry_id.clone(), preparation.tokens_before, Some(s.details))
            }
        };
        if token.is_cancelled() {
            return Err(AgentError::CompactionCancelled);
        }
        let entry_id = self.write(|s| {
            s.append_compaction(&summary, &first_kept_entry_id, tokens_before, details.clone(), Some(from_extension))
        })?;
        self.rebuild_context();
        if let Some(entry) = self.session.get_entry(&entry_id).cloned() {
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

    /// Appends a message (any role) at the leaf and updates the context, as
    /// the agent loop does on `message_end`.
    pub fn append_message(&mut self, message: Value) -> Result<String, AgentError> {
        self.check_failed()?;
        let id = self.write(|s| s.append_message(message))?;
        self.rebuild_context();
        Ok(id)
    }

    /// Labels `target_id`, or clears its label (`None`); returns the `label` entry's id.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String, AgentError> {
        self.check_failed()?;
        let id = self.write(|s| s.append_label_change(target_id, label))?;
        self.rebuild_context();
        Ok(id)
    }

    /// Names the session (a `session_info` entry); returns the entry's id.
    pub fn append_session_info(&mut self, name: &str) -> Result<String, AgentError> {
        self.check_failed()?;
        let id = self.write(|s| s.append_session_info(name))?;
        self.rebuild_context();
        Ok(id)
    }

    /// True when some hook listens to `event`.
    pub fn has_hook(&self, event: EventName) -> bool {
        self.opts.hooks.has_handlers(event)
    }
}
