//! The catalog's SQLite database: where it lives, its schema, and opening it
//! so that a missing, outdated or damaged file becomes a fresh catalog.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension};

/// Bump whenever the schema or the meaning of a stored column changes: an
/// older catalog is then dropped and rebuilt.
pub(crate) const SCHEMA_VERSION: i64 = 2;

/// The `application_id` of Arbor's catalogs ("ARBR"): a database without it
/// (or an older catalog's tables) is not written to.
pub(crate) const APPLICATION_ID: i64 = 0x4152_4252;

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
    sum INTEGER NOT NULL,          -- a checksum of the bytes before `scanned`
    kind INTEGER NOT NULL,         -- 0 nothing read yet, 1 a session, 2 not a session
    lines INTEGER NOT NULL,
    id TEXT NOT NULL, cwd TEXT NOT NULL, parent_session TEXT, created TEXT NOT NULL, version INTEGER NOT NULL,
    name TEXT, message_count INTEGER NOT NULL, first_message TEXT, newest_ms INTEGER,
    modified_ms INTEGER NOT NULL,
    epoch INTEGER NOT NULL,        -- bumped when the file is read again from its start: its filters go
    gen INTEGER NOT NULL           -- bumped by every change: a writer that read an older gen skips its update
);
CREATE INDEX sessions_dir ON sessions(dir, modified_ms);
-- The gram filters (filters.rs): segment files, their size classes, and which
-- column of which segment is which range of which session.
CREATE TABLE segments (id INTEGER PRIMARY KEY, file TEXT NOT NULL UNIQUE, columns INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE TABLE classes (
    seg INTEGER NOT NULL, log INTEGER NOT NULL, first INTEGER NOT NULL, count INTEGER NOT NULL, offset INTEGER NOT NULL,
    PRIMARY KEY (seg, log)
) WITHOUT ROWID;
CREATE TABLE columns (
    seg INTEGER NOT NULL, col INTEGER NOT NULL, session INTEGER NOT NULL, epoch INTEGER NOT NULL,
    start INTEGER NOT NULL, end INTEGER NOT NULL,
    PRIMARY KEY (seg, col)
) WITHOUT ROWID;
CREATE INDEX columns_session ON columns(session, start);
";

/// The catalog file of a sessions root: `<cache>/catalog/<hash of the root>.sqlite`.
pub(crate) fn catalog_path(cache: &Path, root: &Path) -> PathBuf {
    let key = crate::stamp::fnv1a(root.as_os_str().as_encoded_bytes());
    cache.join("catalog").join(format!("{key:016x}.sqlite"))
}

/// True for errors that mean the file is not a usable catalog: a damaged
/// database, or tables and values that are not what this schema wrote.
pub(crate) fn is_damage(e: &rusqlite::Error) -> bool {
    let foreign = |m: &str| {
        m.starts_with("no such table") || m.starts_with("no such column") || m.contains("has no column named")
    };
    match e {
        // A statement that does not prepare against these tables.
        rusqlite::Error::SqlInputError { msg, .. } => foreign(msg),
        rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::InvalidColumnIndex(_)
        | rusqlite::Error::InvalidColumnName(_) => true,
        rusqlite::Error::SqliteFailure(f, msg) => {
            matches!(f.code, ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
                || msg.as_deref().is_some_and(foreign)
        }
        _ => false,
    }
}

/// True for errors that mean another process held the database too long.
pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// True for errors that mean the catalog cannot be written here (a file
/// left read-only, or owned by another user).
pub(crate) fn is_readonly(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied))
}

/// Settings every connection gets.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "cache_size", -32_000)?;
    // Pages read through a map of the file, not a read and a copy each: a
    // search reads every row of the sessions table (a stat per file to compare),
    // which was a fifth of a search again at 10,000 sessions. Address space, not memory.
    conn.pragma_update(None, "mmap_size", 256i64 << 20)?;
    // Text that leaves a session file (a redacted secret) leaves the catalog's pages too.
    conn.pragma_update(None, "secure_delete", true)?;
    Ok(())
}

/// Why a catalog file is not used.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// Damaged, or not a database: removed and built again.
    Damaged(rusqlite::Error),
    /// Not kept there (a link, someone else's database, no write access): kept in memory.
    Refused(String),
}

impl From<rusqlite::Error> for OpenError {
    fn from(e: rusqlite::Error) -> Self {
        if is_damage(&e) {
            OpenError::Damaged(e)
        } else {
            OpenError::Refused(e.to_string())
        }
    }
}

/// Opens (or creates) the catalog at `path` for `root`, in WAL mode, with
/// the current schema. The file is opened without following a link, and
/// written only when it is Arbor's (its `application_id`, or an older
/// catalog's tables): a catalog of another schema version or of another root
/// is emptied and set up again; anything else is refused.
pub(crate) fn open(path: &Path, root: &str) -> Result<Connection, OpenError> {
    for p in [Some(path), path.parent()].into_iter().flatten() {
        if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(OpenError::Refused(format!("{} is a symbolic link", p.display())));
        }
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags)?;
    if conn.is_readonly(rusqlite::MAIN_DB)? {
        return Err(OpenError::Refused("it cannot be written".to_owned()));
    }
    configure(&conn)?;
    if !is_ours(&conn)? {
        return Err(OpenError::Refused("it is not Arbor's catalog".to_owned()));
    }
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(OpenError::Refused(format!("its journal cannot be set up ({mode})")));
    }
    prepare(&conn, root)?;
    Ok(conn)
}

/// True when the database is empty or Arbor's: its `application_id`, or an
/// older catalog (schema 1 had none: its `meta` table holds the root).
fn is_ours(conn: &Connection) -> rusqlite::Result<bool> {
    let app: i64 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    if app == APPLICATION_ID {
        return Ok(true);
    }
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    if tables == 0 {
        return Ok(app == 0);
    }
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let old = conn
        .query_row("SELECT value FROM meta WHERE key = 'root'", [], |r| r.get::<_, String>(0))
        .optional()
        .unwrap_or(None);
    Ok(app == 0 && version == 1 && old.is_some())
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
        conn.pragma_update(None, "application_id", APPLICATION_ID)?;
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

/// Removes a damaged catalog's files (the database, its WAL and shared
/// memory, its filters); a link is removed, never followed.
pub(crate) fn remove_files(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
    let grams = crate::filters::dir_of(path);
    if std::fs::symlink_metadata(&grams).is_ok_and(|m| m.is_dir()) {
        let _ = std::fs::remove_dir_all(grams);
    } else {
        let _ = std::fs::remove_file(grams);
    }
}
