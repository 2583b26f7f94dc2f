//! `arbor serve`: every session of a store in a browser. The session list
//! (newest first, by working directory, name or first prompt), search
//! across sessions ([`Sessions::search`], as `arbor search`), each session's
//! page (the page of `arbor export --format html`, made per request and
//! streamed), usage (`/usage`: daily cost and tokens as bar charts, by model,
//! by project and by place in the trees, from `arbor-usage`; `/api/usage`:
//! the report's JSON, as `arbor usage --json`), and live updates: an open page shows what is appended to its
//! session (server-sent events from [`Sessions::follow`]; on a PostgreSQL
//! server, its notifications), the list shows new sessions.
//!
//! `arbor-serve` owns the HTTP surface: routes, the guard in front of them
//! (the `Host` of every request, a token off loopback, writes only by a
//! same-origin `POST` and only when allowed) and the list's page and script.
//! It does not know which backend holds the sessions (it is handed an
//! `Arc<dyn Sessions>`), how a session's page is drawn (`arbor-interop`),
//! nor command lines: `arbor serve` parses, builds the backend and calls
//! [`Server::bind`] and [`Server::run`].
//!
//! Promises:
//! - bound to a loopback address, it answers requests whose `Host` is that
//!   address (or `localhost`) and no other (a page elsewhere that reaches it
//!   through its own DNS name is refused); on any other address every request
//!   needs the token made at [`Server::bind`] (in a header, or in the cookie
//!   the first URL sets), compared in constant time;
//! - nothing is written unless [`Writes::Allowed`]; then a label or a
//!   session name is written through the session's write lock (a second
//!   writer is refused with the holder's pid) and only by a same-origin
//!   `POST` of JSON;
//! - a session is served only when the backend lists it (a name from a URL
//!   never becomes a path by itself); pages are streamed and request bodies
//!   bounded, so memory follows the export's batches, not the session.
//!
//! ```no_run
//! # async fn example(sessions: std::sync::Arc<dyn arbor_tree::sessions::Sessions>) -> Result<(), arbor_serve::ServeError> {
//! use arbor_serve::{ServeOptions, Server};
//!
//! let options = ServeOptions::new("127.0.0.1:0".parse().unwrap(), sessions.session_options());
//! let server = Server::bind(sessions, options).await?;
//! eprintln!("open {}", server.url());
//! server.run(async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```
//!
//! [`Sessions::search`]: arbor_tree::sessions::Sessions::search
//! [`Sessions::follow`]: arbor_tree::sessions::Sessions::follow

#![deny(missing_docs)]

mod error;
mod guard;
mod list;
mod live;
mod page;
mod server;
mod state;
mod usage;
mod write;

pub use error::ServeError;
pub use guard::Writes;
pub use server::Server;
pub use state::ServeOptions;
