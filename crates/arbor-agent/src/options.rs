//! [`AgentOptions`]: how an [`crate::AgentSession`] finds and calls models,
//! runs hooks and compacts.

use std::sync::Arc;

use arbor_log::{Clock, SystemClock};

use crate::compaction::CompactionSettings;
use crate::hooks::HookBus;
use crate::model::{ClientOptions, Credentials, ModelInfo, ProviderRegistry};
use crate::summarizer::{Summarizer, DEFAULT_BRANCH_RESERVE_TOKENS};

/// Which compaction algorithm [`AgentSession::compact`](crate::AgentSession::compact) uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionAlgorithm {
    /// pi's, with the #2608 fix (the default): see [`prepare_compaction`](crate::compaction::prepare_compaction).
    #[default]
    Arbor,
    /// pi v0.58.3's exactly, losing a previous compaction's kept entries: see [`prepare_compaction_pi`](crate::compaction::prepare_compaction_pi).
    Pi,
}

/// How an [`AgentSession`](crate::AgentSession) finds and calls models, runs hooks and compacts.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The model to use; `None` restores it from the session (docs/architecture.md, "The agent session").
    pub model: Option<ModelInfo>,
    /// The model when none is given and the session's cannot be used (pi's
    /// `defaultProvider`/`defaultModel`): a session without a model, or whose
    /// model has an unknown provider or no key, takes it (when it has a key
    /// or is local), as pi falls back to its default model.
    pub fallback_model: Option<ModelInfo>,
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
            fallback_model: None,
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
    /// Falls back to `model` when the session's cannot be used.
    pub fn with_fallback_model(mut self, model: ModelInfo) -> Self {
        self.fallback_model = Some(model);
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
