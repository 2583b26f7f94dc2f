//! Sessions on a shared PostgreSQL server: many machines, one tree, one
//! writer per session.
//!
//! [`PgStore`] is both of arbor-tree's seams on a server. As a
//! [`arbor_tree::Store`], every operation of a [`arbor_tree::Session`] (open,
//! append, branch, label, navigate, fork, compact, check) works unchanged on
//! a session stored there: pass it with
//! [`arbor_tree::SessionOptions::with_store`] (or take
//! [`arbor_tree::sessions::Sessions::session_options`]) and name sessions by
//! their directory and file name, as on disk ([`SessionKey`]). As
//! [`arbor_tree::sessions::Sessions`], it lists the server's sessions from
//! the facts each write keeps, searches them with `arbor-search`'s engine
//! (as files are searched: the same hits in the same order), finds the session a name means (every match counted), and
//! follows a session through LISTEN/NOTIFY.
//!
//! ```no_run
//! use arbor_pg::PgStore;
//! use arbor_tree::sessions::{FollowFrom, ListRequest, NoProgress, Scope, Sessions};
//! use arbor_tree::{OpenMode, Session};
//!
//! let store = PgStore::connect("postgres://arbor@db.example/arbor")?;
//! for info in store.listing(&ListRequest::new(Scope::All), &NoProgress)? {
//!     println!("{} {}", info.modified, info.path.display());
//! }
//! let path = store.resolve("0b5f2c")?; // a session id prefix
//! let session = Session::open(&path, OpenMode::ReadOnly, store.session_options())?;
//! println!("{} entries", session.len());
//! let (_follower, _whole) = store.follow(&path, FollowFrom::End)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A session is one row of `arbor.sessions` and one row of `arbor.lines`
//! per physical line, holding the line's bytes exactly, so a session pulled
//! back to a file is byte for byte the file that was pushed. The schema is
//! versioned ([`MIGRATIONS`]). A writer holds an advisory lock on its own
//! connection: a second writer on any machine is refused with the holder's
//! pid and host, and the lock goes with the writer's process or connection.
//! Readers take no lock. Every write is one transaction: a session holds a
//! whole append or none of it, whatever happens to the connection.
//!
//! Connections are made as libpq makes them ([`Server::with_env`]): URLs
//! and `key=value` strings, TLS with rustls for every `sslmode`, and, when
//! the caller hands in [`PgEnv`], libpq's environment, service file and
//! password file. No message of this crate ever holds a password.
//!
//! Reads fetch only the entries a command needs, through the index the
//! server keeps beside the lines. A caller that names a directory
//! ([`PgStore::keep_local_copies`], [`LocalCopies`]) also keeps local
//! copies of the large sessions it reads whole, so that the next read of
//! the same session comes from there; without one, nothing is written
//! anywhere.
//!
//! This crate uses the `postgres` driver (which runs a tokio runtime inside);
//! the crates below it stay free of any async runtime. It never prints.
//! How a team runs it: docs/postgres.md.

#![deny(missing_docs)]

/// The programs of `docs/library.md`, compiled (and, but for the one that
/// needs a server, run) as doctests: this crate sees every crate they use
/// (arbor-context, arbor-catalog and arbor-usage as dev-dependencies).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
pub struct LibraryDoc;

mod blocking;
mod conninfo;
mod conns;
mod copies;
mod dest;
mod error;
mod filters;
mod follow;
mod index;
mod key;
mod lines;
mod list;
mod lock;
mod mask;
mod reader;
mod recover;
mod rows;
mod schema;
mod search;
mod server;
mod sessions;
mod settings;
mod store;
mod sync;
mod tls;
mod write;

pub use conninfo::PgEnv;
pub use copies::LocalCopies;
pub use error::PgError;
pub use follow::Follower;
pub use key::{SessionKey, ROOT};
pub use lock::Writer;
pub use schema::{latest as latest_schema, Migration, MIGRATIONS};
pub use server::Server;
pub use store::PgStore;
pub use sync::{Live, Pushed, Transfer};
