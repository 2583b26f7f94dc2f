//! How far long work is, told to the client: the first index of the
//! sessions built in the background when the server starts ([`Indexer`]),
//! and a call's own pass over many sessions ([`Reporter`]), both as MCP
//! progress notifications on the call's progress token.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::runtime::Handle;
use tokio::sync::watch;

use arbor_tree::sessions::{Pass, Progress, Scope, Sessions};

/// Where a call's progress goes: its client and progress token, when it gave one.
#[derive(Debug, Clone)]
pub struct Sink {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    runtime: Handle,
}

impl Sink {
    /// The progress sink of a call (none when the client asked for no progress).
    pub fn of(peer: &Peer<RoleServer>, token: Option<ProgressToken>) -> Option<Sink> {
        Some(Sink { peer: peer.clone(), token: token?, runtime: Handle::try_current().ok()? })
    }

    /// Tells the client how far the work is (from any thread; not waited for).
    pub fn tell(&self, done: u64, total: Option<u64>, message: String) {
        let mut p = ProgressNotificationParam::new(self.token.clone(), done as f64).with_message(message);
        if let Some(t) = total {
            p = p.with_total(t as f64);
        }
        let peer = self.peer.clone();
        self.runtime.spawn(async move {
            // A client gone away is no error of the work.
            let _ = peer.notify_progress(p).await;
        });
    }
}

/// A pass's progress forwarded to a call's client, at most every 100 ms.
#[derive(Debug, Default)]
pub struct Reporter {
    sink: Option<Sink>,
    state: Mutex<ReporterState>,
    done: AtomicU64,
}

#[derive(Debug, Default)]
struct ReporterState {
    what: &'static str,
    total: u64,
    last: Option<Instant>,
}

/// How often a pass tells its progress.
const EVERY: Duration = Duration::from_millis(100);

impl Reporter {
    /// Progress of a call to `sink` (none: nowhere).
    pub fn new(sink: Option<Sink>) -> Reporter {
        Reporter { sink, ..Reporter::default() }
    }

    fn tell(&self, force: bool) {
        let Some(sink) = &self.sink else { return };
        let Ok(mut st) = self.state.lock() else { return };
        if !force && st.last.is_some_and(|t| t.elapsed() < EVERY) {
            return;
        }
        st.last = Some(Instant::now());
        let done = self.done.load(Ordering::Relaxed);
        sink.tell(done, Some(st.total), format!("{}: {done} of {} sessions", st.what, st.total));
    }
}

fn pass_name(pass: Pass) -> &'static str {
    match pass {
        Pass::Listing => "reading sessions for the listing",
        Pass::Text => "indexing sessions for search",
    }
}

impl Progress for Reporter {
    fn begin(&self, pass: Pass, files: u64, _bytes: u64) {
        if let Ok(mut st) = self.state.lock() {
            st.what = pass_name(pass);
            st.total = files;
            st.last = None;
        }
        self.done.store(0, Ordering::Relaxed);
        self.tell(true);
    }

    fn advance(&self, _bytes: u64) {
        self.done.fetch_add(1, Ordering::Relaxed);
        self.tell(false);
    }

    fn end(&self) {
        self.tell(true);
    }
}

/// How far the first index is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexState {
    /// Sessions done of the running pass, and how many it has.
    pub done: u64,
    /// See [`IndexState::done`].
    pub total: u64,
    /// What the pass does.
    pub what: &'static str,
    /// True once the index is built (or failed: then searches bring it up to date themselves).
    pub finished: bool,
    /// Why it failed, if it did.
    pub failed: Option<String>,
}

/// The first index of every session, built on a thread of its own when the
/// server starts, so that tools answer while it is built; a search waits
/// for it, telling its client how far it is.
#[derive(Debug, Clone)]
pub struct Indexer {
    state: watch::Receiver<IndexState>,
}

/// Progress of the first index into the shared state.
struct IndexProgress {
    tx: watch::Sender<IndexState>,
}

impl Progress for IndexProgress {
    fn begin(&self, pass: Pass, files: u64, _bytes: u64) {
        self.tx.send_modify(|s| {
            s.what = pass_name(pass);
            s.total = files;
            s.done = 0;
        });
    }

    fn advance(&self, _bytes: u64) {
        self.tx.send_modify(|s| s.done += 1);
    }
}

impl Indexer {
    /// Starts building the index of `sessions` on a blocking thread of the
    /// current runtime.
    pub fn start(sessions: Arc<dyn Sessions>) -> Indexer {
        let (tx, rx) = watch::channel(IndexState { what: pass_name(Pass::Text), ..IndexState::default() });
        tokio::task::spawn_blocking(move || {
            let progress = IndexProgress { tx };
            let result = sessions.update_index(&Scope::All, &progress);
            progress.tx.send_modify(|s| {
                s.finished = true;
                s.failed = result.err().map(|e| e.to_string());
            });
        });
        Indexer { state: rx }
    }

    /// An index that is there already (nothing to build).
    pub fn ready() -> Indexer {
        let (_tx, rx) = watch::channel(IndexState { finished: true, ..IndexState::default() });
        Indexer { state: rx }
    }

    /// Waits until the first index is built, telling `sink` how far it is.
    pub async fn wait(&self, sink: Option<&Sink>) {
        let mut rx = self.state.clone();
        let mut last: Option<Instant> = None;
        loop {
            let s = rx.borrow_and_update().clone();
            if s.finished {
                return;
            }
            if let Some(sink) = sink {
                if last.is_none_or(|t| t.elapsed() >= EVERY) {
                    last = Some(Instant::now());
                    sink.tell(
                        s.done,
                        Some(s.total),
                        format!("{}: {} of {} sessions (first index)", s.what, s.done, s.total),
                    );
                }
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }
}
