//! The connection every read of a [`crate::PgStore`] shares, and reads
//! bounded in time on it ([`Conns::read_bounded`]): what the readers of a
//! session's bytes and index hold, so they need no store.

use std::fmt;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use postgres::Client;

use crate::blocking::blocking;
use crate::error::{PgError, SqlError};
use crate::server::Server;

/// A connection (the driver's client has no `Debug`).
pub(crate) struct Conn(pub(crate) Client);

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_closed() { "Conn(closed)" } else { "Conn" })
    }
}

/// A poisoned mutex only means another thread panicked while holding it; the connection is still usable or closed.
pub(crate) fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The server and the one connection its reads share (made again when
/// lost), and the connections of the fetches made ahead ([`Conns::read_apart`]).
#[derive(Debug)]
pub(crate) struct Conns {
    pub(crate) server: Server,
    pub(crate) shared: Mutex<Option<Conn>>,
    /// Connections of fetches made ahead, kept for the next ones.
    pub(crate) spare: Mutex<Vec<Conn>>,
}

/// Spare connections kept (one a fetch made ahead at once, for two readers).
const SPARE: usize = 4;

impl Conns {
    /// A read of the shared connection, bounded in time (as [`crate::PgStore`]'s unbounded `read`): `f` runs on a thread of its own with
    /// the shared connection, and a server that has not answered within the
    /// answer limit (its `statement_timeout` and a little more: frozen, or
    /// the network to it) gives an error at once; the connection is left
    /// to that thread (dropped whenever the server answers) and the next
    /// read connects again. A dropped connection is made again once, as
    /// for the unbounded read. For the reads a command waits on: the
    /// session's bytes and index, its row.
    pub(crate) fn read_bounded<T, F>(&self, f: F) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: FnMut(&mut Client) -> Result<T, SqlError> + Send + 'static,
    {
        let mut shared = guard(&self.shared);
        let mut f = f;
        for attempt in 0..2 {
            let conn = match shared.take() {
                Some(c) if !c.0.is_closed() => c,
                _ => Conn(self.server.connect()?),
            };
            let (conn, back, r) = self.answer_within(conn, f)?;
            f = back;
            match r {
                Ok(v) => {
                    *shared = Some(conn);
                    return Ok(v);
                }
                Err(e) if conn.0.is_closed() && attempt == 0 => {
                    drop(e);
                    blocking(move || drop(conn));
                }
                Err(e) => {
                    if !conn.0.is_closed() {
                        *shared = Some(conn);
                    }
                    return Err(self.server.classify(e, false));
                }
            }
        }
        unreachable!("the loop returns on its second pass")
    }

    /// Runs `f` on a connection apart from the shared one (a spare one, or
    /// a new one), for a fetch made ahead while the shared connection
    /// serves the reads of now. Not bounded in time: the caller waits for
    /// the answer within the answer limit, and a failure is only a fetch to
    /// make again (on the shared connection).
    pub(crate) fn read_apart<T>(&self, f: impl FnOnce(&mut Client) -> Result<T, SqlError>) -> Result<T, PgError> {
        let taken = guard(&self.spare).pop();
        let mut conn = match taken {
            Some(c) if !c.0.is_closed() => c,
            _ => Conn(self.server.connect()?),
        };
        let r = f(&mut conn.0).map_err(|e| self.server.classify(e, false));
        if !conn.0.is_closed() {
            let mut spare = guard(&self.spare);
            if spare.len() < SPARE {
                spare.push(conn);
            }
        }
        r
    }

    /// The error of a server that has not answered within `limit`.
    pub(crate) fn no_answer(&self, limit: Duration) -> PgError {
        PgError::Server {
            server: self.server.shown().to_owned(),
            reason: format!(
                "no answer within {} s (the server is frozen, or the network to it: the read was given up; \
                 the limit is the statement_timeout and as long again, at most 10 s more)",
                limit.as_secs_f64()
            ),
        }
    }

    /// Runs `f` on `conn` in a thread of its own, waiting at most the
    /// answer limit: the connection, `f` and its result, or the error of a
    /// server that did not answer in time.
    #[allow(clippy::type_complexity)]
    pub(crate) fn answer_within<T, F>(
        &self,
        mut conn: Conn,
        mut f: F,
    ) -> Result<(Conn, F, Result<T, SqlError>), PgError>
    where
        T: Send + 'static,
        F: FnMut(&mut Client) -> Result<T, SqlError> + Send + 'static,
    {
        let Some(limit) = self.server.answer_limit() else {
            let r = blocking(|| f(&mut conn.0));
            return Ok((conn, f, r));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let server = self.server.shown().to_owned();
        std::thread::Builder::new()
            .name("arbor-pg-read".into())
            .spawn(move || {
                let r = f(&mut conn.0);
                // Nobody waits any more (the answer came too late): the connection closes here.
                let _ = tx.send((conn, f, r));
            })
            .map_err(|e| PgError::Server { server: server.clone(), reason: e.to_string() })?;
        rx.recv_timeout(limit).map_err(|_| self.no_answer(limit))
    }
}

impl Drop for Conns {
    fn drop(&mut self) {
        // Closing a connection blocks on the driver's runtime: not on an async caller's thread.
        let spare = std::mem::take(self.spare.get_mut().unwrap_or_else(|p| p.into_inner()));
        if let Some(conn) = self.shared.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            blocking(move || drop((conn, spare)));
        } else if !spare.is_empty() {
            blocking(move || drop(spare));
        }
    }
}
