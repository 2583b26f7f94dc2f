//! [`AbortHandle`]: what runs now (a summary, a compaction, a reply) and how
//! to abort it from outside; the guard that clears it however a flow ends.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

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

    /// Aborts a streaming reply of [`AgentSession::prompt`](crate::AgentSession::prompt) (pi's `abort`);
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

    /// True while a model reply of [`AgentSession::prompt`](crate::AgentSession::prompt) streams (pi's `isStreaming`).
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
