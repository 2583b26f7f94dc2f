//! The schema and its versioned migrations (docs/postgres.md, "Schema").
//!
//! Everything lives in the `arbor` schema. `arbor.migrations` records each
//! migration applied (version, name, time). A connection that finds the
//! newest version recorded goes on at once; otherwise every missing
//! migration runs once, each in its own transaction that first takes a
//! transaction-level advisory lock, so processes starting together on a new
//! server wait for one another and none applies a migration twice. A server
//! whose schema is newer than this build is refused.

use postgres::Client;

use crate::error::SqlError;

/// One step of the schema.
#[derive(Debug)]
pub struct Migration {
    /// Its number: migrations run in this order, each once.
    pub version: i32,
    /// What it does.
    pub name: &'static str,
    /// Its SQL, run in one transaction.
    pub sql: &'static str,
}

/// Every migration, oldest first. A new one is appended here with the next
/// number and a file under `migrations/`; applied ones are never edited.
pub const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "sessions, lines and search", sql: include_str!("../migrations/0001_sessions.sql") },
    Migration {
        version: 2,
        name: "write tokens: appends retried without doubling",
        sql: include_str!("../migrations/0002_write_tokens.sql"),
    },
    Migration {
        version: 3,
        name: "lines found by their byte offset",
        sql: include_str!("../migrations/0003_lines_by_offset.sql"),
    },
    Migration {
        version: 4,
        name: "the session index on the server",
        sql: include_str!("../migrations/0004_index.sql"),
    },
    Migration {
        version: 5,
        name: "gram filters for search; the search table dropped",
        sql: include_str!("../migrations/0005_filters.sql"),
    },
    Migration {
        version: 6,
        name: "lines compressed with lz4 where the server has it",
        sql: include_str!("../migrations/0006_lines_lz4.sql"),
    },
];

/// The advisory lock key that serializes migrations ("arbormig" in ASCII).
const MIGRATION_LOCK: i64 = 0x6172_626f_726d_6967;

const SETUP: &str = "CREATE SCHEMA IF NOT EXISTS arbor;
CREATE TABLE IF NOT EXISTS arbor.migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);";

/// The newest version this build knows.
pub fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// The newest migration recorded on the server (`None` before the first).
fn applied(client: &mut Client) -> Result<Option<i32>, SqlError> {
    let exists: bool = client.query_one("SELECT to_regclass('arbor.migrations') IS NOT NULL", &[])?.get(0);
    if !exists {
        return Ok(None);
    }
    Ok(client.query_one("SELECT max(version) FROM arbor.migrations", &[])?.get(0))
}

/// Brings the schema up to date (see the module docs).
pub(crate) fn migrate(client: &mut Client) -> Result<(), SqlError> {
    let known = latest();
    let at = match applied(client)? {
        Some(v) if v == known => return Ok(()),
        Some(found) if found > known => return Err(SqlError::NewerSchema { found, known }),
        v => v.unwrap_or(0),
    };
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    if let Err(e) = tx.batch_execute(SETUP) {
        return Err(not_allowed(&e, at, known).unwrap_or(SqlError::Pg(e)));
    }
    tx.commit()?;
    for m in MIGRATIONS {
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        let done = tx.query_opt("SELECT 1 FROM arbor.migrations WHERE version = $1", &[&m.version])?.is_some();
        if !done {
            if let Err(e) = tx.batch_execute(m.sql) {
                return Err(not_allowed(&e, at.max(m.version - 1), known).unwrap_or(SqlError::Pg(e)));
            }
            tx.execute("INSERT INTO arbor.migrations (version, name) VALUES ($1, $2)", &[&m.version, &m.name])?;
        }
        tx.commit()?;
    }
    match applied(client)? {
        Some(found) if found > known => Err(SqlError::NewerSchema { found, known }),
        _ => Ok(()),
    }
}

/// A migration the role may not make (insufficient privilege), said in one
/// line: what the server is at, what this build needs, who can migrate it.
fn not_allowed(e: &postgres::Error, found: i32, known: i32) -> Option<SqlError> {
    if e.code() != Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) {
        return None;
    }
    Some(SqlError::Invariant(format!(
        "the Arbor schema there is at version {found} and this arbor needs version {known}, which this role may not \
         make ({}): run any arbor command once as a role that may create tables in the schema arbor (its owner), \
         then give this role its rights on the new tables (docs/postgres.md, \"Schema and its migrations\")",
        e.as_db_error().map_or_else(|| e.to_string(), |d| d.message().to_owned())
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order_from_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1, "{}", m.name);
            assert!(!m.sql.trim().is_empty());
        }
    }
}
