//! [`AgentSession`]: pi's `AgentSession` for the session tree — it owns one
//! [`Session`], the context of its leaf, the active model and an
//! [`AbortHandle`]; the flows live beside it (`navigate.rs`, `fork.rs`,
//! `compact.rs`, `prompt.rs`), model restore (4.3) here.

use std::sync::{Arc, OnceLock};

use arbor_context::{plan_session_context, session_context, SessionContext};
use arbor_log::EntryKind;
use arbor_tree::{Session, TreeError, LEAF_MARKER_TYPE};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::abort::AbortHandle;
use crate::error::AgentError;
use crate::hooks::{EventName, HookBus, HookEvent, HookFailure, HookResponse};
use crate::model::{client_for, ModelInfo};
use crate::options::AgentOptions;
use crate::summarizer::{LlmSummarizer, Summarizer};

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
    /// The context of the leaf, built when first asked for after each change:
    /// a move, a label or a name need not decode every message of the path.
    context: OnceLock<SessionContext>,
    pub(crate) abort: AbortHandle,
    /// Automatic compactions that failed in a row (see `prompt.rs`).
    pub(crate) auto_compaction_failures: u32,
    failed: Option<String>,
    notices: Vec<String>,
}

impl AgentSession {
    /// Wraps `session`, restores the model (docs/architecture.md, "The agent session") and builds the context.
    ///
    /// The model is `options.model`, or else the last `model_change` or
    /// assistant message on the current path, if its provider is known and
    /// has a key (or is local); otherwise a notice says why it was not
    /// restored. A session whose model is not restored (or that has none)
    /// takes `options.fallback_model` when that one has a key (or is local),
    /// with a notice when it replaces the session's.
    pub fn new(session: Session, options: AgentOptions) -> AgentSession {
        let mut agent = AgentSession {
            session,
            model: options.model.clone(),
            opts: options,
            context: OnceLock::new(),
            abort: AbortHandle::default(),
            auto_compaction_failures: 0,
            failed: None,
            notices: vec![],
        };
        if agent.model.is_none() {
            agent.model = agent.restore_model().or_else(|| agent.fallback());
        }
        agent
    }

    /// Why `model` cannot be called now (no key for a server that needs one).
    fn unusable(&self, model: &ModelInfo) -> Option<String> {
        self.opts
            .credentials
            .require(model)
            .err()
            .map(|_| format!("no API key for {} (set {})", model.base_url, model.key_env))
    }

    fn restore_model(&mut self) -> Option<ModelInfo> {
        // The context's plan names its model without decoding its messages.
        // A file changed under the session restores no model here; the
        // context, built next, fails with the change.
        let plan = plan_session_context(&self.session).ok()?.plan;
        if plan.steps.is_empty() {
            return None;
        }
        let r = plan.settings.model?;
        let name = format!("{}/{}", r.provider, r.model_id);
        let Some(model) = self.opts.providers.resolve(&r.provider, &r.model_id) else {
            let why = self
                .opts
                .providers
                .unsupported(&r.provider, &r.model_id)
                .unwrap_or_else(|| format!("unknown provider {}", r.provider));
            self.notices.push(format!("Could not restore model {name}: {why}"));
            return None;
        };
        if let Some(why) = self.unusable(&model) {
            self.notices.push(format!("Could not restore model {name}: {why}"));
            return None;
        }
        Some(model)
    }

    /// The fallback model, when it can be called; a notice says when it
    /// replaces a model the session named.
    fn fallback(&mut self) -> Option<ModelInfo> {
        let model = self.opts.fallback_model.clone()?;
        let name = format!("{}/{}", model.provider, model.id);
        if let Some(why) = self.unusable(&model) {
            self.notices.push(format!("The default model {name} cannot be used either: {why}"));
            return None;
        }
        if !self.notices.is_empty() {
            self.notices.push(format!("Using the default model {name} instead"));
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

    /// Releases the session's file for writing (its lock and append handle;
    /// see [`Session::stop_writing`]), so that the file can be opened again
    /// for writing (to take in what another writer appended) or left.
    pub fn stop_writing(&mut self) {
        self.session.stop_writing();
    }

    /// Continues in `session` instead (pi's session switch: `/new`,
    /// `/resume`, a file read again): the context is rebuilt, a remembered
    /// write failure and the automatic-compaction failures are forgotten,
    /// and the model is restored from it when `restore_model` (else the
    /// active one stays). Returns the session left.
    pub fn switch_session(&mut self, session: Session, restore_model: bool) -> Session {
        let old = std::mem::replace(&mut self.session, session);
        self.failed = None;
        self.auto_compaction_failures = 0;
        self.notices.clear();
        self.rebuild_context();
        if restore_model {
            if let Some(m) = self.restore_model() {
                self.model = Some(m);
            }
        }
        old
    }

    /// The agent context of the current leaf (rebuilt after every change).
    /// An `Err` when the session's file changed under it
    /// ([`arbor_tree::TreeError::Changed`]).
    pub fn context(&self) -> Result<&SessionContext, AgentError> {
        if let Some(c) = self.context.get() {
            return Ok(c);
        }
        let built = session_context(&self.session)?;
        Ok(self.context.get_or_init(|| built))
    }

    /// The agent messages of the current leaf.
    pub fn messages(&self) -> Result<&[Value], AgentError> {
        Ok(&self.context()?.messages)
    }

    /// The active model.
    pub fn model(&self) -> Option<&ModelInfo> {
        self.model.as_ref()
    }

    /// Replaces the active model (nothing is written).
    pub fn set_model(&mut self, model: Option<ModelInfo>) {
        self.model = model;
    }

    /// Tells `observer` of every retry of a model call from now on (the
    /// reply, summaries, compactions); `None` stops telling.
    pub fn set_retry_observer(&mut self, observer: Option<crate::model::RetryObserver>) {
        self.opts.client_options.on_retry = observer;
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
    pub fn logical_leaf_id(&self) -> Result<Option<String>, AgentError> {
        let Some(leaf) = self.session.leaf_entry()? else { return Ok(None) };
        Ok(match &leaf.kind {
            EntryKind::Custom(c) if c.custom_type == LEAF_MARKER_TYPE => leaf.parent_id.clone(),
            _ => Some(leaf.id.clone()),
        })
    }

    /// Forgets the context after a change; the next [`AgentSession::context`] builds it again.
    pub(crate) fn rebuild_context(&mut self) {
        self.context = OnceLock::new();
    }

    /// The summarizer: the injected one, or an LLM one for the active model
    /// (which needs a key unless its server is local).
    pub(crate) fn summarizer(&self) -> Result<Arc<dyn Summarizer>, AgentError> {
        if let Some(s) = &self.opts.summarizer {
            return Ok(s.clone());
        }
        let model = self.model.clone().ok_or(AgentError::NoModelSelected)?;
        let key = self.opts.credentials.require(&model)?;
        let client = client_for(model, key, self.opts.client_options.clone())?;
        Ok(Arc::new(LlmSummarizer::new(client, self.opts.clock.clone())))
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
