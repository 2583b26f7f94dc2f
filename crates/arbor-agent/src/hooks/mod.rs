//! The hook bus: a closed set of typed session events (pi's names and
//! payloads, docs/hooks.md), handlers that may cancel or override, and the
//! runner's rules.
//!
//! Handlers run in registration order. For a `session_before_*` event (and
//! `session.compacting`) each non-empty result replaces the one before, so the
//! last wins; a result that cancels returns at once and later handlers do not
//! run. A failing (or panicking) handler is reported as a [`HookFailure`] and
//! the flow goes on as if it had returned nothing. Notifications
//! (`session_tree`, `session_fork`, `session_compact`) ignore results.

mod command;
mod events;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use command::{
    kill_running_hooks, CommandHook, CommandHookConfig, HookConfig, HookConfigError, DEFAULT_HOOK_TIMEOUT,
};
pub use events::{
    BeforeCompactEvent, BeforeCompactResult, BeforeForkEvent, BeforeForkResult, BeforeTreeResult, CompactEvent,
    CompactingEvent, CompactingResult, EventName, ForkEvent, HookCompaction, HookEvent, HookResponse, HookSummary,
    TreeEvent, TreePreparation,
};

/// What a handler may fail with.
pub type HookError = Box<dyn std::error::Error + Send + Sync>;

/// A handler of session events.
#[async_trait]
pub trait Hook: Send + Sync + fmt::Debug {
    /// A name for failure reports (an extension name, a command line).
    fn name(&self) -> String;

    /// Handles one event. `Ok(None)` means "no opinion"; a response of the
    /// wrong kind for the event is reported as a failure. `cancel` is the
    /// operation's abort signal.
    async fn handle(&self, event: Arc<HookEvent>, cancel: CancellationToken)
        -> Result<Option<HookResponse>, HookError>;
}

/// A handler that failed, returned an unusable result, or panicked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookFailure {
    /// The handler's name.
    pub hook: String,
    /// The event it was handling.
    pub event: String,
    /// What went wrong.
    pub error: String,
}

impl fmt::Display for HookFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hook {} failed on {}: {}", self.hook, self.event, self.error)
    }
}

/// The outcome of one emit.
#[derive(Debug, Clone, Default)]
pub struct Emitted {
    /// The winning result (`None` for notifications and when nobody answered).
    pub response: Option<HookResponse>,
    /// Handlers that failed, in order.
    pub failures: Vec<HookFailure>,
}

/// A closure as a [`Hook`].
struct FnHook<F> {
    name: String,
    f: F,
}

impl<F> fmt::Debug for FnHook<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnHook").field("name", &self.name).finish()
    }
}

#[async_trait]
impl<F, Fut> Hook for FnHook<F>
where
    F: Fn(Arc<HookEvent>, CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Option<HookResponse>, HookError>> + Send + 'static,
{
    fn name(&self) -> String {
        self.name.clone()
    }

    async fn handle(
        &self,
        event: Arc<HookEvent>,
        cancel: CancellationToken,
    ) -> Result<Option<HookResponse>, HookError> {
        (self.f)(event, cancel).await
    }
}

/// Aborts a spawned handler if the emit is dropped half way.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The registered handlers, in order.
#[derive(Debug, Clone, Default)]
pub struct HookBus {
    hooks: Vec<(EventName, Arc<dyn Hook>)>,
    failures: Option<broadcast::Sender<HookFailure>>,
}

impl HookBus {
    /// A bus without handlers.
    pub fn new() -> HookBus {
        HookBus::default()
    }

    /// Adds a handler for `event` after the existing ones.
    pub fn register(&mut self, event: EventName, hook: Arc<dyn Hook>) {
        self.hooks.push((event, hook));
    }

    /// Adds an in-process async handler for `event`.
    pub fn on<F, Fut>(&mut self, event: EventName, name: &str, f: F)
    where
        F: Fn(Arc<HookEvent>, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<HookResponse>, HookError>> + Send + 'static,
    {
        self.register(event, Arc::new(FnHook { name: name.to_owned(), f }));
    }

    /// True when some handler listens to `event`.
    pub fn has_handlers(&self, event: EventName) -> bool {
        self.hooks.iter().any(|(e, _)| *e == event)
    }

    /// The number of handlers.
    pub fn len(&self) -> usize {
        self.hooks.len()
    }

    /// True without handlers.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// A channel that receives every handler failure from now on (the
    /// runner's error channel); failures are also returned by each emit.
    pub fn subscribe_failures(&mut self) -> broadcast::Receiver<HookFailure> {
        self.failures.get_or_insert_with(|| broadcast::channel(256).0).subscribe()
    }

    /// Runs the handlers of `event` (see the module docs for the rules).
    pub async fn emit(&self, event: HookEvent, cancel: &CancellationToken) -> Emitted {
        let name = event.name();
        let event = Arc::new(event);
        let mut out = Emitted::default();
        for (_, hook) in self.hooks.iter().filter(|(e, _)| *e == name) {
            // Each handler runs as its own task so that a panic is contained and reported.
            let mut task = {
                let (hook, event, cancel) = (hook.clone(), event.clone(), cancel.clone());
                AbortOnDrop(tokio::spawn(async move { hook.handle(event, cancel).await }))
            };
            let result = match (&mut task.0).await {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(join) if join.is_panic() => Err(format!("panicked: {}", panic_message(join.into_panic()))),
                Err(join) => Err(join.to_string()),
            };
            let fail = |error: String| HookFailure { hook: hook.name(), event: name.as_str().to_owned(), error };
            match result {
                Err(error) => self.report(fail(error), &mut out),
                Ok(None) => {}
                Ok(Some(_)) if name.is_notification() => {}
                Ok(Some(r)) if r.event() != name => self.report(
                    fail(format!("returned a result for {} to {}", r.event().as_str(), name.as_str())),
                    &mut out,
                ),
                Ok(Some(r)) => {
                    let cancel_now = r.is_cancel();
                    out.response = Some(r);
                    if cancel_now {
                        return out;
                    }
                }
            }
        }
        out
    }

    fn report(&self, failure: HookFailure, out: &mut Emitted) {
        if let Some(tx) = &self.failures {
            // No receiver is fine: failures are also returned.
            let _ = tx.send(failure.clone());
        }
        out.failures.push(failure);
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic".to_owned()
    }
}
