//! The error type of `arbor-agent`, with the reference's exact messages.

use arbor_tree::TreeError;

use crate::model::ModelError;

/// What can go wrong in an agent-session operation.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A thinking level that is not one of pi's.
    #[error("Invalid thinking level \"{0}\": use off, minimal, low, medium, high or xhigh")]
    InvalidThinkingLevel(String),
    /// `navigate_tree` with `summarize` and no active model (checked first).
    #[error("No model available for summarization")]
    NoModelForSummary,
    /// `compact` or `prompt` without an active model.
    #[error("No model selected")]
    NoModelSelected,
    /// The active model needs a key and there is none.
    #[error("No API key for {provider}")]
    NoApiKey {
        /// The provider.
        provider: String,
        /// The environment variable the key is read from.
        env_var: String,
    },
    /// A target id that is not in the session.
    #[error("Entry {0} not found")]
    EntryNotFound(String),
    /// `fork` of an entry that is not a user message.
    #[error("Invalid entry ID for forking")]
    InvalidForkEntry,
    /// `compact` when the path already ends with a compaction.
    #[error("Already compacted")]
    AlreadyCompacted,
    /// `compact` with nothing to cut.
    #[error("Nothing to compact (session too small)")]
    NothingToCompact,
    /// `compact` cancelled by a hook or by an abort.
    #[error("Compaction cancelled")]
    CompactionCancelled,
    /// The model reported an error while writing a branch summary (the message is the model's, as in pi).
    #[error("{0}")]
    BranchSummary(String),
    /// A compaction summary failed (`Summarization failed: …`, or `Turn prefix summarization failed: …`).
    #[error("{context}: {message}")]
    CompactionSummary {
        /// `Summarization failed` or `Turn prefix summarization failed`.
        context: &'static str,
        /// What the model or the transport said.
        message: String,
        /// The transport error, when there was one.
        model_error: Option<ModelError>,
    },
    /// A model call failed.
    #[error(transparent)]
    Model(ModelError),
    /// The tree refused or failed an operation.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// An earlier write failed; every later change is refused with that error.
    #[error("an earlier write failed, the session no longer accepts changes: {0}")]
    WriteFailed(String),
    /// The session task is gone (the handle outlived it).
    #[error("the agent session has shut down")]
    Closed,
}

impl From<ModelError> for AgentError {
    fn from(e: ModelError) -> Self {
        match e {
            ModelError::NoApiKey { provider, env_var } => AgentError::NoApiKey { provider, env_var },
            other => AgentError::Model(other),
        }
    }
}
