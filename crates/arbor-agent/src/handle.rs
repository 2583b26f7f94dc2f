//! [`AgentHandle`]: an [`AgentSession`] owned by one task, reached over a
//! bounded channel (STYLE 12).

use tokio::sync::{mpsc, oneshot};

use crate::abort::AbortHandle;
use crate::agent::AgentSession;
use crate::compact::{CompactOptions, CompactResult};
use crate::error::AgentError;
use crate::fork::ForkResult;
use crate::navigate::{NavigateOptions, NavigateResult};
use crate::prompt::{PromptOptions, PromptResult};

/// How many requests may wait for the session task.
const QUEUE: usize = 32;

type Reply<T> = oneshot::Sender<Result<T, AgentError>>;

enum Request {
    Navigate(String, NavigateOptions, Reply<NavigateResult>),
    Fork(String, Reply<ForkResult>),
    Compact(CompactOptions, Reply<CompactResult>),
    Prompt(String, PromptOptions, Reply<PromptResult>),
    Inspect(Box<dyn FnOnce(&AgentSession) + Send>),
    Shutdown(oneshot::Sender<AgentSession>),
}

/// A cloneable handle to an [`AgentSession`] running in its own task.
///
/// Requests run one after another in the order they arrive. A write failure
/// is remembered by the session, so every later request reports it. Dropping
/// every handle ends the task; [`AgentHandle::shutdown`] gives the session back.
#[derive(Debug, Clone)]
pub struct AgentHandle {
    tx: mpsc::Sender<Request>,
    abort: AbortHandle,
}

impl AgentSession {
    /// Moves the session into a new task (needs a Tokio runtime) and returns its handle.
    pub fn spawn(self) -> AgentHandle {
        let (tx, mut rx) = mpsc::channel::<Request>(QUEUE);
        let abort = self.abort_handle();
        let mut agent = self;
        tokio::spawn(async move {
            while let Some(request) = rx.recv().await {
                // A caller that went away is not an error: the operation still ran.
                match request {
                    Request::Navigate(target, opts, reply) => {
                        let _ = reply.send(agent.navigate_tree(&target, opts).await);
                    }
                    Request::Fork(entry, reply) => {
                        let _ = reply.send(agent.fork(&entry).await);
                    }
                    Request::Compact(opts, reply) => {
                        let _ = reply.send(agent.compact(opts).await);
                    }
                    Request::Prompt(text, opts, reply) => {
                        let _ = reply.send(agent.prompt(&text, opts).await);
                    }
                    Request::Inspect(f) => f(&agent),
                    Request::Shutdown(reply) => {
                        let _ = reply.send(agent);
                        return;
                    }
                }
            }
        });
        AgentHandle { tx, abort }
    }
}

impl AgentHandle {
    async fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Request) -> Result<T, AgentError> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(make(reply)).await.map_err(|_| AgentError::Closed)?;
        rx.await.map_err(|_| AgentError::Closed)?
    }

    /// [`AgentSession::navigate_tree`].
    pub async fn navigate_tree(&self, target_id: &str, options: NavigateOptions) -> Result<NavigateResult, AgentError> {
        let target = target_id.to_owned();
        self.call(|r| Request::Navigate(target, options, r)).await
    }

    /// [`AgentSession::fork`].
    pub async fn fork(&self, entry_id: &str) -> Result<ForkResult, AgentError> {
        let entry = entry_id.to_owned();
        self.call(|r| Request::Fork(entry, r)).await
    }

    /// [`AgentSession::compact`].
    pub async fn compact(&self, options: CompactOptions) -> Result<CompactResult, AgentError> {
        self.call(|r| Request::Compact(options, r)).await
    }

    /// [`AgentSession::prompt`].
    pub async fn prompt(&self, text: &str, options: PromptOptions) -> Result<PromptResult, AgentError> {
        let text = text.to_owned();
        self.call(|r| Request::Prompt(text, options, r)).await
    }

    /// Runs `f` on the session between operations and returns its result.
    pub async fn inspect<R: Send + 'static>(
        &self,
        f: impl FnOnce(&AgentSession) -> R + Send + 'static,
    ) -> Result<R, AgentError> {
        let (reply, rx) = oneshot::channel();
        let job = Box::new(move |agent: &AgentSession| {
            let _ = reply.send(f(agent));
        });
        self.tx.send(Request::Inspect(job)).await.map_err(|_| AgentError::Closed)?;
        rx.await.map_err(|_| AgentError::Closed)
    }

    /// Aborts a running summary, compaction or reply; works while the task is busy.
    pub fn abort_handle(&self) -> AbortHandle {
        self.abort.clone()
    }

    /// True while a summary or compaction runs.
    pub fn is_compacting(&self) -> bool {
        self.abort.is_compacting()
    }

    /// Stops the task after the queued requests and returns the session.
    pub async fn shutdown(self) -> Result<AgentSession, AgentError> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Request::Shutdown(reply)).await.map_err(|_| AgentError::Closed)?;
        rx.await.map_err(|_| AgentError::Closed)
    }
}
