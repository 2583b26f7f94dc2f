//! [`Server`]: the listener, the routes and the state every request shares.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use arbor_tree::sessions::Sessions;
use arbor_usage::Cache;

use crate::error::ServeError;
use crate::guard::Guard;
use crate::state::{ServeOptions, Shared, State};

/// Request bodies larger than this are refused (a label or a name is small).
pub(crate) const BODY_MAX: usize = 16 * 1024;
/// Sessions followed at once (one thread each); more are refused (503).
const FOLLOWERS_MAX: usize = 64;

/// A bound server: [`Server::url`] to open, [`Server::run`] to answer.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    state: Shared,
    addr: SocketAddr,
}

impl Server {
    /// Listens on `options.addr`; off loopback, makes the token.
    pub async fn bind(sessions: Arc<dyn Sessions>, options: ServeOptions) -> Result<Server, ServeError> {
        let listener =
            TcpListener::bind(options.addr).await.map_err(|source| ServeError::Bind { addr: options.addr, source })?;
        let addr = listener.local_addr()?;
        let guard = Arc::new(Guard::new(addr, options.writes)?);
        let (changes, _) = watch::channel(0);
        let followers = Arc::new(Semaphore::new(FOLLOWERS_MAX));
        let usage = Mutex::new(Cache::in_memory());
        let state = Arc::new(State { sessions, options, guard, changes, followers, usage });
        Ok(Server { listener, state, addr })
    }

    /// The address listened on (the port chosen when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// True when requests need the token (the address is not a loopback one).
    pub fn needs_token(&self) -> bool {
        self.state.guard.token().is_some()
    }

    /// The URL to open: the session list, with the token when one is
    /// needed (show it once: it is the key to every session).
    pub fn url(&self) -> String {
        let base = self.state.guard.base_url();
        match self.state.guard.token() {
            Some(t) => format!("{base}/?token={t}"),
            None => format!("{base}/"),
        }
    }

    /// Answers requests until `shutdown` completes (open event streams are
    /// then dropped, not waited for).
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<(), ServeError> {
        let app = routes(self.state.clone());
        let watcher = tokio::spawn(crate::list::watch_listing(self.state.clone()));
        let served = axum::serve(self.listener, app);
        let result = tokio::select! {
            r = served => r.map_err(ServeError::Io),
            () = shutdown => Ok(()),
        };
        watcher.abort();
        result
    }
}

/// Every route, behind the guard. The views are the list (`/`, with search),
/// usage (`/usage`, with the report's JSON at `/api/usage`; its link is in
/// the list's header) and each session's page (`/s/DIR/FILE`).
fn routes(state: Shared) -> Router {
    Router::new()
        .route("/", get(crate::list::index))
        .route("/api/sessions", get(crate::list::sessions))
        .route("/api/search", get(crate::list::search))
        .route("/api/events", get(crate::list::events))
        .route("/usage", get(crate::usage::page))
        .route("/api/usage", get(crate::usage::json))
        .route("/s/{dir}/{file}", get(crate::page::page))
        .route("/s/{dir}/{file}/events", get(crate::live::events))
        .route("/s/{dir}/{file}/label", post(crate::write::label))
        .route("/s/{dir}/{file}/name", post(crate::write::name))
        .layer(DefaultBodyLimit::max(BODY_MAX))
        .layer(axum::middleware::from_fn_with_state(state.guard.clone(), crate::guard::check))
        .with_state(state)
}
