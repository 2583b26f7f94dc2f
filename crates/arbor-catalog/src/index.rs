//! The text pass of a refresh: the entries of every session whose listing
//! facts are ahead of its entries are read (in parallel, from where the last
//! pass stopped) and written to `entries`, `labels` and the full-text index.
//!
//! Current-version files are read line by line; a file that needs a
//! migration (v1, v2) is opened as a `Session` (its ids are made by the
//! migration) and indexed whole every time it changes.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;

use arbor_log::reader::{parse_line, Parsed};
use arbor_log::scan::{ParentField, RecordHead};
use arbor_log::searchable_text;
use arbor_log::{is_title_slot, Entry, EntryKind, EntryType, CURRENT_VERSION};
use arbor_tree::{OpenMode, Session, SessionOptions};

use crate::error::CatalogError;
use crate::lines::Lines;
use crate::work::{run_parallel, Caller};
use arbor_tree::sessions::{Pass, Progress, Scope};

/// One entry as the catalog keeps it.
#[derive(Debug, Clone)]
struct EntryRow {
    /// The line's offset and length (-1 and 0 for a migrated file).
    offset: i64,
    len: i64,
    /// The order in the file (the offset, or the index in a migrated file).
    pos: i64,
    id: String,
    parent: Option<String>,
    entry_type: String,
    role: Option<String>,
    ms: i64,
    text: String,
    /// A label entry's change: the target and the new label (`None` clears).
    label: Option<(String, Option<String>)>,
}

#[derive(Debug)]
struct Job {
    rowid: i64,
    gen: i64,
    rel: String,
    /// The session's `indexed` when planned, and where to read from (0 for a migrated file).
    indexed: u64,
    from: u64,
    to: u64,
    legacy: bool,
    created_ms: i64,
}

#[derive(Debug)]
struct Indexed {
    job: Job,
    entries: Vec<EntryRow>,
}

/// What one text pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IndexStats {
    /// Sessions whose entries were read.
    pub sessions: usize,
    /// Entries added.
    pub entries: usize,
    /// Bytes read.
    pub bytes: u64,
    /// Sessions skipped because another process changed them first.
    pub conflicts: usize,
}

/// Removes a session's entries, their text and its labels.
pub(crate) fn drop_entries(conn: &Connection, session: i64) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM entry_text WHERE rowid IN (SELECT rowid FROM entries WHERE session = ?1)", [session])?;
    conn.execute("DELETE FROM entries WHERE session = ?1", [session])?;
    conn.execute("DELETE FROM labels WHERE session = ?1", [session])?;
    Ok(())
}

/// Brings the entries of the scope's sessions up to their listing facts.
pub(crate) fn index(
    conn: &mut Connection,
    root: &Path,
    scope: &Scope,
    threads: usize,
    progress: &dyn Progress,
    db_path: &Path,
) -> Result<IndexStats, CatalogError> {
    let db = |e| CatalogError::Db { path: db_path.to_owned(), source: e };
    let mut jobs = plan(conn, scope).map_err(db)?;
    jobs.sort_by_key(|j| std::cmp::Reverse(j.to - j.from));
    let total: u64 = jobs.iter().map(|j| j.to - j.from).sum();
    progress.begin(Pass::Text, jobs.len() as u64, total);
    let fresh = !conn.query_row("SELECT EXISTS (SELECT 1 FROM entries)", [], |r| r.get::<_, bool>(0)).map_err(db)?;
    let mut stats = IndexStats::default();
    let mut writer = Writer { conn, keys: Keys { fresh, next: HashMap::new() }, open: false, pending: 0 };
    let result = run_parallel(
        jobs,
        threads,
        Caller::Consumes,
        |job| read_job(root, job),
        |done: Option<Indexed>| {
            let Some(done) = done else { return Ok(()) };
            progress.advance(done.job.to - done.job.from);
            stats.bytes += done.job.to - done.job.from;
            writer.apply(done, &mut stats).map_err(db)
        },
    );
    let flushed = writer.commit().map_err(db);
    progress.end();
    result?;
    flushed?;
    Ok(stats)
}

fn plan(conn: &Connection, scope: &Scope) -> rusqlite::Result<Vec<Job>> {
    let mut sql = "SELECT rowid, gen, rel, indexed, scanned, version, created FROM sessions \
                   WHERE kind = 1 AND indexed < scanned"
        .to_owned();
    if matches!(scope, Scope::Dir(_)) {
        sql.push_str(" AND dir = ?1");
    }
    let mut stmt = conn.prepare(&sql)?;
    let map = |r: &rusqlite::Row| -> rusqlite::Result<Job> {
        let indexed = r.get::<_, i64>(3)? as u64;
        let legacy = (r.get::<_, i64>(5)? as u64) < CURRENT_VERSION;
        Ok(Job {
            rowid: r.get(0)?,
            gen: r.get(1)?,
            rel: r.get(2)?,
            indexed,
            from: if legacy { 0 } else { indexed },
            to: r.get::<_, i64>(4)? as u64,
            legacy,
            created_ms: arbor_log::parse_iso_ms(&r.get::<_, String>(6)?).unwrap_or(0),
        })
    };
    let jobs = match scope {
        Scope::All => stmt.query_map([], map)?.collect(),
        Scope::Dir(d) => stmt.query_map([d], map)?.collect(),
    };
    jobs
}

fn read_job(root: &Path, job: Job) -> Result<Option<Indexed>, CatalogError> {
    let path = root.join(&job.rel);
    let entries = if job.legacy { read_legacy(&path)? } else { read_lines(&path, &job)? };
    Ok(entries.map(|entries| Indexed { job, entries }))
}

/// The entries of `[job.from, job.to)` of a current-version file; `None` when it is gone.
fn read_lines(path: &Path, job: &Job) -> Result<Option<Vec<EntryRow>>, CatalogError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CatalogError::io(path, e)),
    };
    let mut out = vec![];
    let mut lines = Lines::new(&file, job.from, job.to);
    // From the start, the header (and a title slot before it) is not an entry.
    let mut before_header = job.from == 0;
    let mut number = 0u64;
    let mut last_ms = job.created_ms;
    let mut take = |offset: u64, bytes: &[u8]| {
        number += 1;
        let Parsed::Object(v) = parse_line(bytes).0 else { return };
        if before_header {
            before_header = number == 1 && is_title_slot(&v);
            return;
        }
        if let Some(row) = entry_row(v, (offset as i64, bytes.len() as i64, offset as i64), &mut last_ms) {
            out.push(row);
        }
    };
    let io = |e| CatalogError::io(path, e);
    while let Some(line) = lines.next_line().map_err(io)? {
        take(line.offset, line.bytes);
    }
    // The facts pass read a final line without its newline only when it was whole.
    let (at, rest) = lines.rest();
    if !rest.is_empty() && at + rest.len() as u64 <= job.to {
        take(at, rest);
    }
    Ok(Some(out))
}

/// An entry row from a parsed line, or `None` for a record that is not an entry.
fn entry_row(v: Value, (offset, len, pos): (i64, i64, i64), last_ms: &mut i64) -> Option<EntryRow> {
    let head = RecordHead::from_value(&v);
    if head.not_an_entry().is_some() || head.entry_type.as_ref().is_some_and(|t| t.as_str() == "session") {
        return None;
    }
    let ms = head.ts_ms.unwrap_or(*last_ms);
    *last_ms = ms;
    let text = searchable_text(&v);
    let label = (head.entry_type == Some(EntryType::Label)).then(|| label_change(v)).flatten();
    Some(EntryRow {
        offset,
        len,
        pos,
        id: head.id?.into(),
        parent: match head.parent {
            ParentField::Id(p) => Some(p.into()),
            _ => None,
        },
        entry_type: head.entry_type?.to_string(),
        role: head.role.map(|r| r.to_string()),
        ms,
        text,
        label,
    })
}

/// A label entry's change, read as the tree reads it (a malformed one changes nothing).
fn label_change(v: Value) -> Option<(String, Option<String>)> {
    match Entry::from_owned(v).ok()?.kind {
        EntryKind::Label(l) => {
            let text = l.text();
            Some((l.target_id, text))
        }
        _ => None,
    }
}

/// Every entry of a file that needs a migration, with the ids the migration gives.
fn read_legacy(path: &Path) -> Result<Option<Vec<EntryRow>>, CatalogError> {
    let opts = SessionOptions { index_dir: None, ..SessionOptions::default() };
    let s = match Session::open(path, OpenMode::ReadOnly, opts) {
        Ok(s) => s,
        Err(arbor_tree::TreeError::Missing(_)) => return Ok(None),
        Err(e) => return Err(CatalogError::io(path, io::Error::other(e))),
    };
    let mut last_ms = arbor_log::parse_iso_ms(&s.header().timestamp).unwrap_or(0);
    let mut out = vec![];
    for p in s.positions() {
        let Some(Ok(v)) = s.with_json_at(p, arbor_log::json::parse) else { continue };
        if let Some(row) = entry_row(v, (-1, 0, p.get() as i64), &mut last_ms) {
            out.push(row);
        }
    }
    Ok(Some(out))
}

/// Entry keys: the entry's time in ms shifted left 16 bits, plus a counter,
/// so that the key order is the time order.
struct Keys {
    /// True when the catalog had no entries when the pass began: no key is taken yet.
    fresh: bool,
    /// The next free counter of each ms seen in this pass.
    next: HashMap<i64, i64>,
}

const KEY_BITS: u32 = 16;
const MAX_MS: i64 = (1 << (62 - KEY_BITS)) - 1;

impl Keys {
    fn take(&mut self, conn: &Connection, ms: i64) -> rusqlite::Result<i64> {
        let mut ms = ms.clamp(0, MAX_MS);
        loop {
            let base = ms << KEY_BITS;
            let next = match self.next.get(&ms) {
                Some(&n) => n,
                None if self.fresh => 0,
                None => conn
                    .query_row(
                        "SELECT max(rowid) FROM entries WHERE rowid BETWEEN ?1 AND ?2",
                        params![base, base + (1 << KEY_BITS) - 1],
                        |r| r.get::<_, Option<i64>>(0),
                    )?
                    .map_or(0, |k| k - base + 1),
            };
            if next < 1 << KEY_BITS {
                self.next.insert(ms, next + 1);
                return Ok(base + next);
            }
            self.next.insert(ms, next);
            ms = (ms + 1).min(MAX_MS);
        }
    }
}

struct Writer<'c> {
    conn: &'c mut Connection,
    keys: Keys,
    open: bool,
    pending: usize,
}

/// Entries per transaction.
const BATCH_ENTRIES: usize = 20_000;

impl Writer<'_> {
    fn commit(&mut self) -> rusqlite::Result<()> {
        if self.open {
            self.conn.execute_batch("COMMIT")?;
            self.open = false;
        }
        self.pending = 0;
        Ok(())
    }

    fn apply(&mut self, done: Indexed, stats: &mut IndexStats) -> rusqlite::Result<()> {
        if !self.open {
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            self.open = true;
        }
        let job = &done.job;
        let now: Option<(i64, i64)> = self
            .conn
            .query_row("SELECT gen, indexed FROM sessions WHERE rowid = ?1", [job.rowid], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        if now != Some((job.gen, job.indexed as i64)) {
            stats.conflicts += 1;
            return Ok(());
        }
        let whole = job.from == 0;
        if whole && job.indexed > 0 {
            drop_entries(self.conn, job.rowid)?;
        }
        // The later of two lines with one id wins: within the batch, and over rows already there.
        let mut last_of: HashMap<&str, usize> = HashMap::with_capacity(done.entries.len());
        for (i, e) in done.entries.iter().enumerate() {
            last_of.insert(&e.id, i);
        }
        let (conn, keys) = (&*self.conn, &mut self.keys);
        let mut insert = conn.prepare_cached(
            "INSERT INTO entries (rowid, session, offset, len, pos, entry_id, parent_id, type, role) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        let mut insert_text = conn.prepare_cached("INSERT INTO entry_text (rowid, text) VALUES (?1, ?2)")?;
        let mut max_key = None;
        for (i, e) in done.entries.iter().enumerate() {
            if let Some((target, label)) = &e.label {
                match label {
                    Some(l) => conn.execute(
                        "INSERT OR REPLACE INTO labels (session, target, label) VALUES (?1, ?2, ?3)",
                        params![job.rowid, target, l],
                    )?,
                    None => conn
                        .execute("DELETE FROM labels WHERE session = ?1 AND target = ?2", params![job.rowid, target])?,
                };
            }
            if last_of.get(e.id.as_str()) != Some(&i) {
                continue;
            }
            if !whole {
                conn.execute(
                    "DELETE FROM entry_text WHERE rowid IN \
                     (SELECT rowid FROM entries WHERE session = ?1 AND entry_id = ?2)",
                    params![job.rowid, e.id],
                )?;
                conn.execute("DELETE FROM entries WHERE session = ?1 AND entry_id = ?2", params![job.rowid, e.id])?;
            }
            let key = keys.take(conn, e.ms)?;
            max_key = max_key.max(Some(key));
            insert.execute(params![key, job.rowid, e.offset, e.len, e.pos, e.id, e.parent, e.entry_type, e.role])?;
            if !e.text.is_empty() {
                insert_text.execute(params![key, e.text])?;
            }
            stats.entries += 1;
        }
        conn.execute(
            "UPDATE sessions SET indexed = ?1, max_key = max(coalesce(max_key, 0), coalesce(?2, 0)), gen = gen + 1 \
             WHERE rowid = ?3",
            params![job.to as i64, max_key, job.rowid],
        )?;
        stats.sessions += 1;
        drop((insert, insert_text));
        self.pending += done.entries.len().max(1);
        if self.pending >= BATCH_ENTRIES {
            self.commit()?;
        }
        Ok(())
    }
}
