//! One writer per session across machines: a session-level advisory lock
//! keyed by the session's name ([`SessionKey::lock_key`]), held by the
//! writer on a connection of its own, so it goes when the process dies or the
//! connection drops. A refused writer learns who holds it from `pg_locks`
//! joined with `pg_stat_activity`: the holder's `application_name` says its
//! pid and host. Readers take no lock.

use std::time::{Duration, Instant};

use postgres::types::Type;
use postgres::GenericClient;

use arbor_tree::LockHolder;

use crate::key::SessionKey;
use crate::server::parse_application_name;

/// How long a refused writer keeps asking who holds the lock while the
/// holder keeps vanishing before it can be named.
const HOLDER_PATIENCE: Duration = Duration::from_secs(2);

/// The lock of a session, for a session's writer or for one transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Held by the connection until released (a writer).
    Session,
    /// Held until the current transaction ends (a push, a write without the writer's lock).
    Transaction,
}

/// Takes the lock of `key`, or says who holds it. A holder that lets go
/// between the refusal and the lookup is not left unnamed: the lock is tried
/// again at once (it is free now), so a refusal always names its holder
/// (unless the lock keeps changing hands for two seconds).
pub(crate) fn take(
    c: &mut impl GenericClient,
    key: &SessionKey,
    scope: Scope,
) -> Result<Result<(), Option<LockHolder>>, postgres::Error> {
    let deadline = Instant::now() + HOLDER_PATIENCE;
    loop {
        let got = match scope {
            Scope::Session => try_lock(c, key)?,
            Scope::Transaction => try_lock_xact(c, key)?,
        };
        if got {
            return Ok(Ok(()));
        }
        let who = holder(c, key)?;
        if who.is_some() || Instant::now() >= deadline {
            return Ok(Err(who));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Takes the advisory lock of `key` on this connection; false when another
/// connection holds it.
fn try_lock(c: &mut impl GenericClient, key: &SessionKey) -> Result<bool, postgres::Error> {
    Ok(c.query_typed_one("SELECT pg_try_advisory_lock($1)", &[(&key.lock_key(), Type::INT8)])?.get(0))
}

/// Takes the lock of `key` until the end of the current transaction (for a
/// write made without holding the session's lock: a push, a new session).
fn try_lock_xact(c: &mut impl GenericClient, key: &SessionKey) -> Result<bool, postgres::Error> {
    Ok(c.query_typed_one("SELECT pg_try_advisory_xact_lock($1)", &[(&key.lock_key(), Type::INT8)])?.get(0))
}

/// Releases the lock of `key` held by this connection.
pub(crate) fn unlock(c: &mut impl GenericClient, key: &SessionKey) -> Result<(), postgres::Error> {
    c.query_typed_one("SELECT pg_advisory_unlock($1)", &[(&key.lock_key(), Type::INT8)])?;
    Ok(())
}

/// Who holds the lock of `key`, when someone does.
pub(crate) fn holder(c: &mut impl GenericClient, key: &SessionKey) -> Result<Option<LockHolder>, postgres::Error> {
    let (high, low) = halves(key);
    let row = c.query_typed_opt(
        "SELECT a.application_name, l.pid, host(a.client_addr) \
         FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
           AND l.classid::int8 = $1 AND l.objid::int8 = $2 \
         LIMIT 1",
        &[(&high, Type::INT8), (&low, Type::INT8)],
    )?;
    Ok(row.map(|r| {
        let app: Option<String> = r.get(0);
        match app.as_deref().and_then(parse_application_name) {
            Some((pid, host)) => LockHolder { pid, host: Some(host) },
            // Not one of ours (someone took the key by hand): the server process and the client's address.
            None => {
                let backend: i32 = r.get(1);
                let addr: Option<String> = r.get(2);
                LockHolder {
                    pid: u32::try_from(backend).unwrap_or_default(),
                    host: Some(format!(
                        "the server (a backend of {})",
                        addr.unwrap_or_else(|| "a local client".into())
                    )),
                }
            }
        }
    }))
}

/// Who holds a session's write lock, as `arbor unlock` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    /// The holder (pid and host of an Arbor process; else the server's backend).
    pub holder: LockHolder,
    /// The server's process of the holder's connection (what ending it ends).
    pub backend: i32,
    /// The role it connected as.
    pub role: Option<String>,
    /// How long its connection has waited for its client (idle, or idle in a
    /// transaction); `None` while a statement of it runs.
    pub idle: Option<Duration>,
}

/// The writer holding the lock of `key`, if any.
pub(crate) fn writer(c: &mut impl GenericClient, key: &SessionKey) -> Result<Option<Writer>, postgres::Error> {
    let Some(holder) = holder(c, key)? else { return Ok(None) };
    let (high, low) = halves(key);
    let row = c.query_typed_opt(
        "SELECT l.pid, a.usename::text, \
                CASE WHEN a.state LIKE 'idle%' THEN extract(epoch FROM clock_timestamp() - a.state_change)::float8 END \
         FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
           AND l.classid::int8 = $1 AND l.objid::int8 = $2 \
         LIMIT 1",
        &[(&high, Type::INT8), (&low, Type::INT8)],
    )?;
    Ok(row.map(|r| {
        let idle: Option<f64> = r.get(2);
        Writer { holder, backend: r.get(0), role: r.get(1), idle: idle.map(|s| Duration::from_secs_f64(s.max(0.0))) }
    }))
}

/// Ends the connection of server process `backend` if it still holds the
/// lock of `key` (never a writer that took it since): true when it was ended.
pub(crate) fn end_writer(c: &mut impl GenericClient, key: &SessionKey, backend: i32) -> Result<bool, postgres::Error> {
    let (high, low) = halves(key);
    let row = c.query_typed_opt(
        "SELECT pg_terminate_backend(l.pid) \
         FROM pg_locks l \
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.pid = $3 \
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
           AND l.classid::int8 = $1 AND l.objid::int8 = $2",
        &[(&high, Type::INT8), (&low, Type::INT8), (&backend, Type::INT4)],
    )?;
    if !row.is_some_and(|r| r.get(0)) {
        return Ok(false);
    }
    // Signalled: wait (a little) until its lock is gone with it.
    let deadline = Instant::now() + HOLDER_PATIENCE;
    while Instant::now() < deadline && writer(c, key)?.is_some_and(|w| w.backend == backend) {
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(true)
}

/// The two 32-bit halves of `key`'s lock key, as `pg_locks` shows them.
fn halves(key: &SessionKey) -> (i64, i64) {
    let k = key.lock_key() as u64;
    ((k >> 32) as i64, (k & 0xffff_ffff) as i64)
}
