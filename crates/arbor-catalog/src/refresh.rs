//! The listing pass of a refresh: every file of the scope is `stat`ed, and
//! only new, grown or rewritten files are read (in parallel), for their
//! listing facts. The facts are written in short transactions, each update
//! applied only if no other process changed the row since it was read.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::Path;

use rusqlite::{params, Connection};

use arbor_log::reader::{parse_line, Parsed};

use crate::error::CatalogError;
use crate::lines::Lines;
use crate::stamp::{classify, Change, Known, Stat, Sums};
use crate::walk::{walk, Found};
use crate::work::{run_parallel, Caller};
use arbor_tree::sessions::Scope;
use arbor_tree::sessions::{Pass, Progress};
use arbor_tree::{ListingFacts, ListingKind};

/// A file's row as a refresh reads it.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub rowid: i64,
    pub known: Known,
    pub facts: ListingFacts,
    pub gen: i64,
}

/// What a refresh does with one file.
#[derive(Debug)]
enum Job {
    /// Read it from the start (a new file, or one rewritten: then its row).
    Read { found: Found, row: Option<Row> },
    /// Read on from where the last scan stopped.
    ReadOn { found: Found, row: Row },
}

impl Job {
    fn bytes(&self) -> u64 {
        match self {
            Job::Read { found, .. } => found.stat.size,
            Job::ReadOn { found, row } => found.stat.size.saturating_sub(row.known.scanned),
        }
    }
}

/// A file read for its facts.
#[derive(Debug)]
struct Read {
    found: Found,
    /// The row it updates (with the gen read), or none for a new file.
    row: Option<(i64, i64)>,
    /// True when the file was read from the start over an existing row: its entries go.
    reset: bool,
    /// Where reading started.
    from: u64,
    scanned: u64,
    sums: Sums,
    facts: ListingFacts,
}

/// What one listing pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RefreshStats {
    /// Files looked at (one `stat` each).
    pub files: usize,
    /// Files read from the start.
    pub read: usize,
    /// Files read on from their last scanned offset.
    pub read_on: usize,
    /// Bytes read.
    pub bytes: u64,
    /// Rows dropped for files that are gone.
    pub removed: usize,
    /// Updates skipped because another process changed the row first.
    pub conflicts: usize,
}

/// Brings the listing facts of the scope's files up to date.
pub(crate) fn refresh(
    conn: &mut Connection,
    root: &Path,
    scope: &Scope,
    threads: usize,
    progress: &dyn Progress,
    db_path: &Path,
) -> Result<RefreshStats, CatalogError> {
    let db = |e| CatalogError::Db { path: db_path.to_owned(), source: e };
    let mut rows = load_rows(conn, scope).map_err(db)?;
    let found = walk(root, scope)?;
    let mut stats = RefreshStats { files: found.len(), ..Default::default() };
    let mut jobs = vec![];
    let mut restamps = vec![];
    for f in found {
        let Some(row) = rows.remove(&f.rel) else {
            jobs.push(Job::Read { found: f, row: None });
            continue;
        };
        if f.stat == row.known.stat {
            continue;
        }
        let path = root.join(&f.rel);
        let change = match File::open(&path) {
            Ok(file) => classify(&row.known, &f.stat, &file).map_err(|e| CatalogError::io(&path, e))?,
            // Gone since the walk: the next refresh drops it.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(CatalogError::io(&path, e)),
        };
        match change {
            Change::Unchanged => {}
            Change::Restamp => restamps.push((row.rowid, row.gen, f.stat)),
            Change::Grown => jobs.push(Job::ReadOn { found: f, row }),
            Change::Rescan => jobs.push(Job::Read { found: f, row: Some(row) }),
        }
    }
    // Rows left over are files that are gone.
    let gone: Vec<(i64, i64)> = rows.values().map(|r| (r.rowid, r.gen)).collect();
    // Big files first, so the threads finish together.
    jobs.sort_by_key(|j| std::cmp::Reverse(j.bytes()));
    let total: u64 = jobs.iter().map(Job::bytes).sum();
    progress.begin(Pass::Listing, jobs.len() as u64, total);
    let mut writer = Writer::new(conn);
    writer.restamp(&restamps, &mut stats).map_err(db)?;
    writer.remove(&gone, &mut stats).map_err(db)?;
    let result = run_parallel(
        jobs,
        threads,
        Caller::Works,
        |job| read_job(root, job),
        |read: Option<Read>| {
            let Some(read) = read else { return Ok(()) };
            progress.advance(read.scanned.saturating_sub(read.from));
            match read.row {
                Some(_) if read.reset => stats.read += 1,
                Some(_) => stats.read_on += 1,
                None => stats.read += 1,
            }
            writer.apply(read, &mut stats).map_err(db)
        },
    );
    let flushed = writer.commit().map_err(db);
    progress.end();
    result?;
    flushed?;
    Ok(stats)
}

/// The rows of the scope's files.
fn load_rows(conn: &Connection, scope: &Scope) -> rusqlite::Result<HashMap<String, Row>> {
    let cols = "rowid, rel, size, mtime_ns, ctime_ns, ino, dev, scanned, head_sum, tail_sum, kind, lines, id, cwd, \
                parent_session, created, version, name, message_count, first_message, newest_ms, gen";
    let (sql, arg) = match scope {
        Scope::All => (format!("SELECT {cols} FROM sessions"), None),
        Scope::Dir(d) => (format!("SELECT {cols} FROM sessions WHERE dir = ?1"), Some(d.as_str())),
    };
    let mut stmt = conn.prepare(&sql)?;
    let map = |r: &rusqlite::Row| -> rusqlite::Result<(String, Row)> {
        let stat = Stat {
            size: r.get::<_, i64>(2)? as u64,
            mtime_ns: r.get(3)?,
            ctime_ns: r.get(4)?,
            ino: r.get::<_, i64>(5)? as u64,
            dev: r.get::<_, i64>(6)? as u64,
        };
        let known =
            Known { stat, scanned: r.get::<_, i64>(7)? as u64, sums: Sums { head: r.get(8)?, tail: r.get(9)? } };
        let facts = ListingFacts {
            kind: ListingKind::from_code(r.get(10)?),
            lines: r.get::<_, i64>(11)? as u64,
            id: r.get(12)?,
            cwd: r.get(13)?,
            parent_session: r.get(14)?,
            created: r.get(15)?,
            version: r.get::<_, i64>(16)? as u64,
            name: r.get(17)?,
            message_count: r.get::<_, i64>(18)? as u64,
            first_message: r.get(19)?,
            newest_ms: r.get(20)?,
        };
        Ok((r.get(1)?, Row { rowid: r.get(0)?, known, facts, gen: r.get(21)? }))
    };
    let rows = match arg {
        None => stmt.query_map([], map)?.collect(),
        Some(d) => stmt.query_map([d], map)?.collect(),
    };
    rows
}

/// Reads a job's file; `None` when the file is gone.
fn read_job(root: &Path, job: Job) -> Result<Option<Read>, CatalogError> {
    let (found, row, from, facts) = match job {
        Job::Read { found, row } => (found, row, 0, ListingFacts::default()),
        Job::ReadOn { found, row } => {
            let (from, facts) = (row.known.scanned, row.facts.clone());
            (found, Some(row), from, facts)
        }
    };
    let path = root.join(&found.rel);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CatalogError::io(&path, e)),
    };
    let mut facts = facts;
    let scanned = read_facts(&file, from, found.stat.size, &mut facts).map_err(|e| CatalogError::io(&path, e))?;
    let sums = Sums::read(&file, scanned).map_err(|e| CatalogError::io(&path, e))?;
    let reset = from == 0 && row.is_some();
    Ok(Some(Read { found, row: row.map(|r| (r.rowid, r.gen)), reset, from, scanned, sums, facts }))
}

/// Feeds the complete lines of `[from, end)` to `facts`; returns where they end.
pub(crate) fn read_facts(file: &File, from: u64, end: u64, facts: &mut ListingFacts) -> io::Result<u64> {
    let mut lines = Lines::new(file, from, end);
    while let Some(line) = lines.next_line()? {
        facts.feed(line.bytes);
    }
    let (at, rest) = lines.rest();
    Ok(if complete_tail(rest) {
        facts.feed(rest);
        at + rest.len() as u64
    } else {
        at
    })
}

/// True when the bytes after the last `\n` are a whole JSON object: a line
/// written without its newline, read now (as every reader does). Anything
/// else there is a line still being written, left for the next refresh.
pub(crate) fn complete_tail(rest: &[u8]) -> bool {
    !rest.is_empty() && matches!(parse_line(rest).0, Parsed::Object(_))
}

/// Writes the pass's results in short transactions.
struct Writer<'c> {
    conn: &'c mut Connection,
    pending: usize,
    open: bool,
}

/// Results per transaction: short enough that other processes wait little.
const BATCH: usize = 128;

impl<'c> Writer<'c> {
    fn new(conn: &'c mut Connection) -> Writer<'c> {
        Writer { conn, pending: 0, open: false }
    }

    fn begin(&mut self) -> rusqlite::Result<()> {
        if !self.open {
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            self.open = true;
        }
        Ok(())
    }

    fn tick(&mut self) -> rusqlite::Result<()> {
        self.pending += 1;
        if self.pending >= BATCH {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> rusqlite::Result<()> {
        if self.open {
            self.conn.execute_batch("COMMIT")?;
            self.open = false;
        }
        self.pending = 0;
        Ok(())
    }

    fn restamp(&mut self, rows: &[(i64, i64, Stat)], stats: &mut RefreshStats) -> rusqlite::Result<()> {
        for (rowid, gen, s) in rows {
            self.begin()?;
            let n = self.conn.execute(
                "UPDATE sessions SET size = ?1, mtime_ns = ?2, ctime_ns = ?3, ino = ?4, dev = ?5, gen = gen + 1 \
                 WHERE rowid = ?6 AND gen = ?7",
                params![s.size as i64, s.mtime_ns, s.ctime_ns, s.ino as i64, s.dev as i64, rowid, gen],
            )?;
            stats.conflicts += usize::from(n == 0);
            self.tick()?;
        }
        Ok(())
    }

    fn remove(&mut self, rows: &[(i64, i64)], stats: &mut RefreshStats) -> rusqlite::Result<()> {
        for (rowid, gen) in rows {
            self.begin()?;
            let n = self.conn.execute("DELETE FROM sessions WHERE rowid = ?1 AND gen = ?2", params![rowid, gen])?;
            if n == 0 {
                stats.conflicts += 1;
            } else {
                crate::index::drop_entries(self.conn, *rowid)?;
                stats.removed += 1;
            }
            self.tick()?;
        }
        Ok(())
    }

    fn apply(&mut self, r: Read, stats: &mut RefreshStats) -> rusqlite::Result<()> {
        self.begin()?;
        let (f, s) = (&r.facts, &r.found.stat);
        let modified = f.modified_ms(s.mtime_ms());
        let values = params![
            r.found.rel,
            r.found.dir,
            s.size as i64,
            s.mtime_ns,
            s.ctime_ns,
            s.ino as i64,
            s.dev as i64,
            r.scanned as i64,
            r.sums.head,
            r.sums.tail,
            f.kind.code(),
            f.lines as i64,
            f.id,
            f.cwd,
            f.parent_session,
            f.created,
            f.version as i64,
            f.name,
            f.message_count as i64,
            f.first_message,
            f.newest_ms,
            modified,
        ];
        let n = match r.row {
            // Prepared once per connection: a first scan inserts a row per file.
            None => self
                .conn
                .prepare_cached(
                    "INSERT INTO sessions (rel, dir, size, mtime_ns, ctime_ns, ino, dev, scanned, head_sum, tail_sum, \
                 kind, lines, id, cwd, parent_session, created, version, name, message_count, first_message, \
                 newest_ms, modified_ms, indexed, gen) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, \
                 ?21, ?22, 0, 0) ON CONFLICT (rel) DO NOTHING",
                )?
                .execute(values)?,
            Some((rowid, gen)) => {
                let n = self.conn.execute(
                    &format!(
                        "UPDATE sessions SET rel = ?1, dir = ?2, size = ?3, mtime_ns = ?4, ctime_ns = ?5, ino = ?6, \
                         dev = ?7, scanned = ?8, head_sum = ?9, tail_sum = ?10, kind = ?11, lines = ?12, id = ?13, \
                         cwd = ?14, parent_session = ?15, created = ?16, version = ?17, name = ?18, \
                         message_count = ?19, first_message = ?20, newest_ms = ?21, modified_ms = ?22, \
                         gen = gen + 1{} WHERE rowid = {rowid} AND gen = {gen}",
                        if r.reset { ", indexed = 0, max_key = NULL" } else { "" }
                    ),
                    values,
                )?;
                if n > 0 && r.reset {
                    crate::index::drop_entries(self.conn, rowid)?;
                }
                n
            }
        };
        stats.conflicts += usize::from(n == 0);
        stats.bytes += r.scanned.saturating_sub(r.from);
        self.tick()
    }
}
