//! The catalog's SQLite database: where it lives, its schema, and opening it
//! so that a missing, outdated or damaged file becomes a fresh catalog.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OptionalExtension};

/// Bump whenever the schema or the meaning of a stored column changes: an
/// older catalog is then dropped and rebuilt.
pub(crate) const SCHEMA_VERSION: i64 = 1;

/// How long a refresh waits for another process's write transaction.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
-- One row per file under the root: its stamp, how far it was read, its listing facts.
CREATE TABLE sessions (
    rowid INTEGER PRIMARY KEY,
    rel TEXT NOT NULL UNIQUE,      -- the path under the root, '/'-separated: DIR/FILE.jsonl
    dir TEXT NOT NULL,             -- DIR
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL, dev INTEGER NOT NULL,
    scanned INTEGER NOT NULL,      -- end of the last complete line read for the facts
    head_sum INTEGER NOT NULL, tail_sum INTEGER NOT NULL,
    kind INTEGER NOT NULL,         -- 0 nothing read yet, 1 a session, 2 not a session
    lines INTEGER NOT NULL,
    id TEXT NOT NULL, cwd TEXT NOT NULL, parent_session TEXT, created TEXT NOT NULL, version INTEGER NOT NULL,
    name TEXT, message_count INTEGER NOT NULL, first_message TEXT, newest_ms INTEGER,
    modified_ms INTEGER NOT NULL,
    indexed INTEGER NOT NULL,      -- end of the last line whose entry is in `entries` (<= scanned)
    max_key INTEGER,               -- the largest entry key of the session
    gen INTEGER NOT NULL           -- bumped by every change: a writer that read an older gen skips its update
);
CREATE INDEX sessions_dir ON sessions(dir, modified_ms);
-- Every entry of every indexed session. The key (rowid) orders entries by time:
-- its time in ms shifted left 16 bits, plus a counter for entries of the same ms.
CREATE TABLE entries (
    rowid INTEGER PRIMARY KEY,
    session INTEGER NOT NULL,
    offset INTEGER NOT NULL,       -- the line's byte offset, -1 for a migrated (v1/v2) file
    len INTEGER NOT NULL,
    pos INTEGER NOT NULL,          -- the order in the file: the offset, or the entry's index in a migrated file
    entry_id TEXT NOT NULL,
    parent_id TEXT,
    type TEXT NOT NULL,
    role TEXT
);
CREATE INDEX entries_session ON entries(session, entry_id);
-- The resolved labels of each session.
CREATE TABLE labels (
    session INTEGER NOT NULL, target TEXT NOT NULL, label TEXT NOT NULL,
    PRIMARY KEY (session, target)
) WITHOUT ROWID;
-- The text of every entry, full-text indexed; the text itself stays in the session files.
CREATE VIRTUAL TABLE entry_text USING fts5(
    text, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE entry_vocab USING fts5vocab(entry_text, 'row');
";

/// The catalog file of a sessions root: `<cache>/catalog/<hash of the root>.sqlite`.
pub(crate) fn catalog_path(cache: &Path, root: &Path) -> PathBuf {
    let key = crate::stamp::fnv1a(root.as_os_str().as_encoded_bytes());
    cache.join("catalog").join(format!("{key:016x}.sqlite"))
}

/// True for errors that mean the file is not a usable catalog: a damaged
/// database, or tables and values that are not what this schema wrote.
pub(crate) fn is_damage(e: &rusqlite::Error) -> bool {
    match e {
        rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::InvalidColumnIndex(_)
        | rusqlite::Error::InvalidColumnName(_) => true,
        rusqlite::Error::SqliteFailure(f, msg) => {
            matches!(f.code, ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
                || msg.as_deref().is_some_and(|m| {
                    m.starts_with("no such table")
                        || m.starts_with("no such column")
                        || m.contains("has no column named")
                })
        }
        _ => false,
    }
}

/// True for errors that mean another process held the database too long.
pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// Settings every connection gets.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "cache_size", -32_000)?;
    Ok(())
}

/// Opens (or creates) the catalog at `path` for `root`, in WAL mode, with
/// the current schema. A catalog of another schema version or of another
/// root is emptied and set up again; damage is an error the caller mends.
pub(crate) fn open(path: &Path, root: &str) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    configure(&conn)?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    debug_assert!(mode.eq_ignore_ascii_case("wal") || mode.eq_ignore_ascii_case("memory"));
    prepare(&conn, root)?;
    Ok(conn)
}

/// A catalog in memory, for when none can be kept on disk.
pub(crate) fn open_in_memory(root: &str) -> rusqlite::Result<Connection> {
    let conn = Connection::open_in_memory()?;
    configure(&conn)?;
    prepare(&conn, root)?;
    Ok(conn)
}

/// Makes sure the schema is the current one and belongs to `root`.
fn prepare(conn: &Connection, root: &str) -> rusqlite::Result<()> {
    if current(conn, root)? {
        return Ok(());
    }
    // Another process may be setting it up at the same moment: decide under the write lock.
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| {
        if current(conn, root)? {
            return Ok(());
        }
        drop_all(conn)?;
        conn.execute_batch(SCHEMA)?;
        conn.execute("INSERT INTO meta (key, value) VALUES ('root', ?1)", [root])?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// True when the catalog has the current schema and is `root`'s.
fn current(conn: &Connection, root: &str) -> rusqlite::Result<bool> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version != SCHEMA_VERSION {
        return Ok(false);
    }
    let stored: Option<String> =
        match conn.query_row("SELECT value FROM meta WHERE key = 'root'", [], |r| r.get(0)).optional() {
            Ok(v) => v,
            Err(e) if is_busy(&e) => return Err(e),
            // A catalog without its meta table is not one this schema wrote.
            Err(_) => None,
        };
    Ok(stored.as_deref() == Some(root))
}

/// Drops every table of an outdated catalog.
fn drop_all(conn: &Connection) -> rusqlite::Result<()> {
    let mut names: Vec<(String, String)> = conn
        .prepare("SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    // Virtual tables first: they own shadow tables that go with them.
    names.sort_by_key(|(ty, name)| (ty != "table", !name.starts_with("entry_"), name.clone()));
    for (ty, name) in names {
        if ty != "table" {
            continue;
        }
        let exists: bool = conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [&name],
            |r| r.get(0),
        )?;
        if exists {
            conn.execute_batch(&format!("DROP TABLE \"{}\"", name.replace('"', "\"\"")))?;
        }
    }
    conn.pragma_update(None, "user_version", 0)
}

/// Removes a damaged catalog's files (the database, its WAL and shared memory).
pub(crate) fn remove_files(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}
