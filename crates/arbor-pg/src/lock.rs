//! One writer per session across machines: a session-level advisory lock
//! keyed by the session's name ([`SessionKey::lock_key`]), held by the
//! writer on a connection of its own, so it goes when the process dies or the
//! connection drops. A refused writer learns who holds it from `pg_locks`
//! joined with `pg_stat_activity`: the holder's `application_name` says its
//! pid and host. Readers take no lock.

use postgres::types::Type;
use postgres::GenericClient;

use arbor_tree::LockHolder;

use crate::key::SessionKey;
use crate::server::parse_application_name;

/// Takes the advisory lock of `key` on this connection; false when another
/// connection holds it.
pub(crate) fn try_lock(c: &mut impl GenericClient, key: &SessionKey) -> Result<bool, postgres::Error> {
    Ok(c.query_typed_one("SELECT pg_try_advisory_lock($1)", &[(&key.lock_key(), Type::INT8)])?.get(0))
}

/// Takes the lock of `key` until the end of the current transaction (for a
/// write made without holding the session's lock: a push, a new session).
pub(crate) fn try_lock_xact(c: &mut impl GenericClient, key: &SessionKey) -> Result<bool, postgres::Error> {
    Ok(c.query_typed_one("SELECT pg_try_advisory_xact_lock($1)", &[(&key.lock_key(), Type::INT8)])?.get(0))
}

/// Releases the lock of `key` held by this connection.
pub(crate) fn unlock(c: &mut impl GenericClient, key: &SessionKey) -> Result<(), postgres::Error> {
    c.query_typed_one("SELECT pg_advisory_unlock($1)", &[(&key.lock_key(), Type::INT8)])?;
    Ok(())
}

/// Who holds the lock of `key`, when someone does.
pub(crate) fn holder(c: &mut impl GenericClient, key: &SessionKey) -> Result<Option<LockHolder>, postgres::Error> {
    let k = key.lock_key() as u64;
    let (high, low) = ((k >> 32) as i64, (k & 0xffff_ffff) as i64);
    let row = c.query_typed_opt(
        "SELECT a.application_name, a.pid, host(a.client_addr) \
         FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
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
