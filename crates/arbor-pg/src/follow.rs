//! Following a session while others write it: a connection of its own
//! LISTENs on the session's channel (`arbor_session_<id>`), which every
//! write notifies at commit, then reads the lines after the last one it
//! delivered. A follower only ever sees whole lines: each write is one
//! transaction. A connection that drops is made again on the next wait,
//! which catches up from where it stopped. A session whose row goes away is
//! reported once ([`Followed::Gone`]) and looked for once a second after;
//! one that comes back is delivered whole.

use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;

use arbor_tree::sessions::{Follow, FollowFrom, Followed, SessionsError};

use crate::blocking::blocking;
use crate::error::PgError;
use crate::error::SqlError;
use crate::key::SessionKey;
use crate::rows::{read_lines, SessionRow};
use crate::store::PgStore;
use crate::write::channel;

/// How often a follower that nothing notified reads its session's row.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// A follower of one session (see the module docs).
pub struct Follower {
    store: PgStore,
    key: SessionKey,
    conn: Option<Client>,
    id: i64,
    generation: i64,
    /// The next line to deliver.
    next_seq: i64,
    /// The session's row was gone at the last look.
    gone: bool,
    /// When the row was last read.
    looked: Instant,
    /// The server could not be reached at the last wait.
    reconnecting: bool,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower").field("key", &self.key).field("next_seq", &self.next_seq).finish()
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        // Closing the connection blocks on the driver's runtime: not on an async caller's thread.
        if let Some(conn) = self.conn.take() {
            blocking(move || drop(conn));
        }
    }
}

impl PgStore {
    /// Starts following session `key`: returns the follower and the session
    /// as it is now (every line, or none from the end).
    pub(crate) fn follow_key(&self, key: &SessionKey, from: FollowFrom) -> Result<(Follower, Vec<u8>), PgError> {
        let Some(row) = self.row(key)? else {
            return Err(PgError::NoSession { server: self.server().shown().to_owned(), name: key.to_string() });
        };
        let mut f = Follower {
            store: self.clone(),
            key: key.clone(),
            conn: None,
            id: row.id,
            generation: row.generation,
            next_seq: match from {
                FollowFrom::Start => 0,
                FollowFrom::End => row.line_count,
                FollowFrom::Last(n) => self.read(|c| Ok(last_records(c, row.id, n)?))?,
            },
            gone: false,
            reconnecting: false,
            looked: Instant::now(),
        };
        f.listen()?;
        // Read after LISTEN: a write committed in between is both read now and notified, never lost.
        let now = match f.catch_up()? {
            Followed::Lines(b) | Followed::Replaced(b) => b,
            Followed::Gone | Followed::Idle | Followed::Reconnecting(_) => vec![],
        };
        Ok((f, now))
    }
}

impl Follower {
    /// The session followed.
    pub fn key(&self) -> &SessionKey {
        &self.key
    }

    /// Waits up to `timeout` for new lines. A server that cannot be reached
    /// is [`Followed::Reconnecting`] (after waiting out the timeout, at most
    /// a second): the next wait tries again and catches up.
    pub fn wait(&mut self, timeout: Duration) -> Result<Followed, PgError> {
        let started = Instant::now();
        let got = if self.reconnecting {
            blocking(|| {
                self.listen()?;
                self.catch_up()
            })
        } else {
            blocking(|| self.wait_here(timeout))
        };
        match got {
            Err(PgError::Connect { reason, .. }) => {
                self.reconnecting = true;
                self.conn = None;
                std::thread::sleep(timeout.min(LOOK_EVERY).saturating_sub(started.elapsed()));
                Ok(Followed::Reconnecting(reason))
            }
            other => {
                if other.is_ok() {
                    self.reconnecting = false;
                }
                other
            }
        }
    }

    fn wait_here(&mut self, timeout: Duration) -> Result<Followed, PgError> {
        if self.gone {
            // No row, no notifications: look again every LOOK_EVERY.
            let until = Instant::now() + timeout;
            loop {
                let next = self.looked + LOOK_EVERY;
                if next > until {
                    std::thread::sleep(until.saturating_duration_since(Instant::now()));
                    return Ok(Followed::Idle);
                }
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                let got = self.catch_up()?;
                if got != Followed::Idle {
                    return Ok(got);
                }
            }
        }
        if self.conn.as_ref().is_none_or(Client::is_closed) {
            self.listen()?;
            return self.catch_up();
        }
        let notified = {
            let Some(conn) = self.conn.as_mut() else { return Ok(Followed::Idle) };
            let mut n = conn.notifications();
            let first = n.timeout_iter(timeout).next();
            if matches!(first, Ok(Some(_))) {
                // Several writes may have been notified: one read serves them all.
                while let Ok(Some(_)) = n.iter().next() {}
            }
            first
        };
        match notified {
            Ok(Some(_)) => self.catch_up(),
            Ok(None) if self.conn.as_ref().is_some_and(Client::is_closed) => {
                self.listen()?;
                self.catch_up()
            }
            // Nothing notified: a look at the row now and then (a removed session notifies nothing).
            Ok(None) if self.looked.elapsed() >= LOOK_EVERY => self.catch_up(),
            Ok(None) => Ok(Followed::Idle),
            Err(_) => {
                self.conn = None;
                self.listen()?;
                self.catch_up()
            }
        }
    }

    /// A connection listening on the session's channel.
    fn listen(&mut self) -> Result<(), PgError> {
        blocking(|| {
            let mut conn = self.store.new_connection()?;
            conn.batch_execute(&format!("LISTEN {}", channel(self.id)))
                .map_err(|e| self.store.server().classify(SqlError::Pg(e), false))?;
            if let Some(old) = self.conn.replace(conn) {
                drop(old);
            }
            Ok(())
        })
    }

    /// The lines after the last delivered, or the whole session when it was replaced.
    fn catch_up(&mut self) -> Result<Followed, PgError> {
        self.looked = Instant::now();
        let (id, key, generation, next) = (self.id, self.key.clone(), self.generation, self.next_seq);
        let r = self.store.read(|c| {
            let Some(row) = SessionRow::find(c, &key)? else { return Ok(None) };
            if row.id != id || row.generation != generation {
                let all = read_lines(c, row.id, 0)?;
                return Ok(Some((row, true, all)));
            }
            if row.line_count <= next {
                return Ok(Some((row, false, (vec![], 0))));
            }
            let new = read_lines(c, id, next)?;
            Ok(Some((row, false, new)))
        })?;
        let Some((row, replaced, (bytes, count))) = r else {
            // Said once; looked for again once a second.
            return Ok(if std::mem::replace(&mut self.gone, true) { Followed::Idle } else { Followed::Gone });
        };
        let replaced = replaced || std::mem::take(&mut self.gone);
        if replaced {
            if row.id != self.id {
                self.id = row.id;
                self.listen()?;
            }
            self.generation = row.generation;
            self.next_seq = count;
            return Ok(Followed::Replaced(bytes));
        }
        // The lines read, not the row's count: a write may have committed between the two reads.
        self.next_seq += count;
        Ok(if bytes.is_empty() { Followed::Idle } else { Followed::Lines(bytes) })
    }
}

/// The first line of session `id` among those holding its last `n`
/// records (blank lines aside); 0 when it has fewer.
fn last_records(c: &mut Client, id: i64, n: usize) -> Result<i64, postgres::Error> {
    if n == 0 {
        let row = c.query_one("SELECT coalesce(max(seq) + 1, 0) FROM arbor.lines WHERE session = $1", &[&id])?;
        return Ok(row.get(0));
    }
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    let row = c.query_one(
        "SELECT CASE WHEN count(*) < $2 THEN 0 ELSE min(seq) END FROM ( \
             SELECT seq FROM arbor.lines WHERE session = $1 \
                AND bytes <> '\\x0a'::bytea AND bytes <> '\\x0d0a'::bytea \
              ORDER BY seq DESC LIMIT $2) AS last",
        &[&id, &n],
    )?;
    Ok(row.get(0))
}

impl Follow for Follower {
    fn wait(&mut self, timeout: Duration) -> Result<Followed, SessionsError> {
        Follower::wait(self, timeout).map_err(SessionsError::backend)
    }
}
