//! An append whose connection dropped before its commit was acknowledged:
//! reconnect, take the session's lock again, and look the append's write
//! token up (migration 2). Found, the append was committed and only its
//! acknowledgement was lost: the writer goes on. Absent, nothing was
//! written: the append is made again under the same token, so that it is
//! never made twice. When the server cannot be reached again, or another
//! writer took the session meanwhile, the error says what is known.

use std::time::{Duration, Instant};

use arbor_tree::LockHolder;

use crate::blocking::blocking;
use crate::conns::Conn;
use crate::error::PgError;
use crate::error::SqlError;
use crate::key::SessionKey;
use crate::lock;
use crate::rows::SessionRow;
use crate::server::{application_name, parse_application_name};
use crate::store::PgStore;
use crate::write;

use postgres::Transaction;

/// How long a writer keeps trying to reach the server again after a drop.
const PATIENCE: Duration = Duration::from_secs(15);

impl PgStore {
    /// Finishes the append of `new` after `row` under `token` whose
    /// connection dropped (`reason`): the session's row after it, or why not.
    pub(crate) fn recover_append(
        &self,
        key: &SessionKey,
        row: &SessionRow,
        new: &[&[u8]],
        token: &str,
        reason: String,
    ) -> Result<Option<SessionRow>, PgError> {
        blocking(|| self.recover_here(key, row, new, token, reason))
    }

    fn recover_here(
        &self,
        key: &SessionKey,
        row: &SessionRow,
        new: &[&[u8]],
        token: &str,
        reason: String,
    ) -> Result<Option<SessionRow>, PgError> {
        let lost = |outcome: String| PgError::LostWrite {
            server: self.server().shown().to_owned(),
            reason: reason.clone(),
            outcome,
        };
        let (client, relocked) = self.reconnect_writer(key).map_err(|e| {
            lost(format!(
                "the server could not be reached again to tell whether it was committed ({e}): \
                 look at the session's last entries (arbor tail) before running the command again"
            ))
        })?;
        let t = token.to_owned();
        let (client, _, landed) =
            self.conns().answer_within(client, move |c| Ok(write::find_token(c, &t)?)).map_err(|e| {
                lost(format!(
                    "the server did not tell whether it was committed ({e}): look at the session's last \
                     entries (arbor tail) before running the command again"
                ))
            })?;
        let landed = landed.map_err(|e| self.server().classify(e, false))?.is_some();
        match relocked {
            Ok(()) => self.replace_writer(key, client),
            Err(_) => {
                self.drop_writer(key);
                blocking(move || drop(client));
            }
        }
        match (landed, relocked) {
            (true, _) => self.row(key),
            (false, Ok(())) => {
                let (r, lines, t) = (row.clone(), new.iter().map(|l| l.to_vec()).collect::<Vec<_>>(), token.to_owned());
                self.write_bounded(key, move |tx| {
                    let lines: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
                    write::append(tx, &r, &lines, &t)
                })
            }
            (false, Err(holder)) => Err(lost(format!(
                "it was not committed (checked after reconnecting) and the session is now held by {}: \
                 nothing was written; run the command again once it is free",
                holder.map_or_else(|| "another writer".to_owned(), |h: LockHolder| h.to_string())
            ))),
        }
    }

    /// A new connection after the writer's of `key` dropped, within
    /// [`PATIENCE`], and the session's lock taken on it again (or who holds
    /// it now). This process's old connection may hold the lock until the
    /// server notices it is gone: that holder is waited for. Each statement
    /// waits at most the answer limit.
    fn reconnect_writer(&self, key: &SessionKey) -> Result<(Conn, Result<(), Option<LockHolder>>), PgError> {
        let deadline = Instant::now() + PATIENCE;
        let mut client = Conn(loop {
            match self.new_connection() {
                Ok(c) => break c,
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(250)),
                Err(e) => return Err(e),
            }
        });
        let me = parse_application_name(&application_name());
        let relocked = loop {
            let k = key.clone();
            let (back, _, taken) =
                self.conns().answer_within(client, move |c| Ok(lock::take(c, &k, lock::Scope::Session)?))?;
            client = back;
            match taken.map_err(|e| self.server().classify(e, false))? {
                Ok(()) => break Ok(()),
                Err(Some(h))
                    if Some((h.pid, h.host.clone().unwrap_or_default())) == me && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(holder) => break Err(holder),
            }
        };
        Ok((client, relocked))
    }

    /// Runs the writer's transaction `f` on `key`, bounded in time
    /// ([`PgStore::write_bounded_for`], `allowances` answer limits); when the
    /// connection drops under it, reconnects, takes the lock again and runs
    /// it once more. Only for writes that leave the same session when made
    /// twice (making sure a session exists and ends cleanly, replacing it whole).
    pub(crate) fn write_bounded_again_if_lost<T, F>(
        &self,
        key: &SessionKey,
        allowances: u32,
        f: F,
    ) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: Fn(&mut Transaction<'_>) -> Result<T, SqlError> + Send + Sync + 'static,
    {
        let f = std::sync::Arc::new(f);
        let write = || {
            let f = f.clone();
            self.write_bounded_for(key, allowances, move |tx| f(tx))
        };
        match write() {
            Err(PgError::LostDuringWrite { .. }) if self.is_writer(key) => {
                let (client, relocked) = blocking(|| self.reconnect_writer(key))?;
                match relocked {
                    Ok(()) => self.replace_writer(key, client),
                    Err(_) => {
                        blocking(move || drop(client));
                        self.drop_writer(key);
                    }
                }
                write()
            }
            other => other,
        }
    }
}
