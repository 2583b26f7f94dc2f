//! What every request shares ([`State`]), and how to serve ([`ServeOptions`]).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::{watch, Semaphore};

use arbor_interop::HtmlOptions;
use arbor_tree::sessions::Sessions;
use arbor_tree::SessionOptions;
use arbor_usage::Cache;

use crate::guard::{Guard, Writes};

/// How to serve.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// Where to listen (port 0: any free port). Any address but a loopback
    /// one needs the token.
    pub addr: SocketAddr,
    /// Whether pages may write.
    pub writes: Writes,
    /// How sessions are opened (the backend's store and root; the caller's
    /// index cache and ids).
    pub session_options: SessionOptions,
    /// How pages are drawn (paths shown, outputs cut).
    pub html: HtmlOptions,
}

impl ServeOptions {
    /// Read-only, on `addr`, opening sessions with `session_options`, pages as
    /// [`HtmlOptions::default`] draws them.
    pub fn new(addr: SocketAddr, session_options: SessionOptions) -> ServeOptions {
        ServeOptions { addr, writes: Writes::Refused, session_options, html: HtmlOptions::default() }
    }

    /// With `writes`.
    pub fn writes(mut self, writes: Writes) -> ServeOptions {
        self.writes = writes;
        self
    }
}

/// What every request shares.
#[derive(Debug)]
pub(crate) struct State {
    pub sessions: Arc<dyn Sessions>,
    pub options: ServeOptions,
    pub guard: Arc<Guard>,
    /// Bumped when the listing changes (while someone watches it).
    pub changes: watch::Sender<u64>,
    /// Permits for sessions followed at once.
    pub followers: Arc<Semaphore>,
    /// The usage view's sessions as last read, by file stamp.
    pub usage: Mutex<Cache>,
}

pub(crate) type Shared = Arc<State>;
