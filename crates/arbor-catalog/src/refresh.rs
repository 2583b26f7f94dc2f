//! The listing pass of a refresh: every file of the scope is `stat`ed, and
//! only new, grown or rewritten files are read (in parallel), for their
//! listing facts. The facts are written in short transactions, each update
//! applied only if no other process changed the row since it was read.
//!
//! A file that cannot be read (no permission, an I/O error) is left out of
//! the catalog with a warning naming it; the others are listed. Only a
//! bounded head of a file is read before it is known to be a session, and a
//! line longer than [`crate::lines::MAX_LINE`] is read past, not held.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::Path;

use rusqlite::{params, Connection};

use arbor_log::reader::{parse_line, Parsed};

use crate::error::CatalogError;
use crate::lines::Lines;
use crate::stamp::{classify, Change, Checksum, Known, Stat};
use crate::walk::{walk, Found};
use crate::work::run_parallel;
use arbor_tree::listing::{ListingFacts, ListingKind};
use arbor_tree::sessions::{Pass, Progress, Scope};

/// A file's row as a refresh reads it: what tells whether it changed (its
/// listing facts are read only for a file read on, [`load_facts`]).
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub rowid: i64,
    pub known: Known,
    pub kind: ListingKind,
    pub gen: i64,
}

/// What a refresh does with one file.
#[derive(Debug)]
enum Job {
    /// Read it from the start (a new file, or one rewritten: then its row).
    Read { found: Found, row: Option<Row> },
    /// Read on from where the last scan stopped (with the checksum of what it
    /// read, and the facts so far).
    ReadOn { found: Found, row: Row, sum: Checksum, facts: Box<ListingFacts> },
}

impl Job {
    fn bytes(&self) -> u64 {
        match self {
            Job::Read { found, .. } => found.stat.size,
            Job::ReadOn { found, row, .. } => found.stat.size.saturating_sub(row.known.scanned),
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
    sum: i64,
    facts: ListingFacts,
}

/// What reading a job's file gave.
#[derive(Debug)]
enum Outcome {
    Read(Box<Read>),
    /// Gone since the walk: the next refresh drops it.
    Gone,
    /// It cannot be read: left out, with a warning; its row (if any) goes.
    Unreadable {
        row: Option<(i64, i64)>,
        warning: String,
    },
}

/// Bytes of a file read before it must have shown a session header (a
/// header line is a few hundred bytes; omp-S's title slot before it, too).
const HEAD_LIMIT: u64 = 1 << 20;

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
    /// Files read again from their start (rewritten, replaced or shrunk).
    pub reset: usize,
}

/// Brings the listing facts of the scope's files up to date.
pub(crate) fn refresh(
    conn: &mut Connection,
    root: &Path,
    scope: &Scope,
    threads: usize,
    progress: &dyn Progress,
    db_path: &Path,
    warnings: &mut Vec<String>,
) -> Result<RefreshStats, CatalogError> {
    let db = |e| CatalogError::Db { path: db_path.to_owned(), source: e };
    let mut rows = load_rows(conn, scope).map_err(db)?;
    let found = walk(root, scope, warnings)?;
    let mut stats = RefreshStats { files: found.len(), ..Default::default() };
    let Sorted { mut jobs, restamps, gone } = sort(root, found, &mut rows, warnings);
    load_facts(conn, &mut jobs).map_err(db)?;
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
        |job| Ok(read_job(root, job)),
        |outcome: Outcome| {
            let read = match outcome {
                Outcome::Read(read) => *read,
                Outcome::Gone => return Ok(()),
                Outcome::Unreadable { row, warning } => {
                    warnings.push(warning);
                    return match row {
                        Some(r) => writer.remove(&[r], &mut stats).map_err(db),
                        None => Ok(()),
                    };
                }
            };
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

/// What a refresh does with each file found.
struct Sorted {
    jobs: Vec<Job>,
    /// Rows whose stat changed but not their bytes.
    restamps: Vec<(i64, i64, Stat)>,
    /// Rows of files that are gone or cannot be read.
    gone: Vec<(i64, i64)>,
}

/// Decides, for each file found, whether to read it, restamp its row or
/// leave it; rows left in `rows` are files that are gone.
fn sort(root: &Path, found: Vec<Found>, rows: &mut HashMap<String, Row>, warnings: &mut Vec<String>) -> Sorted {
    let mut jobs = vec![];
    let mut restamps = vec![];
    let mut unreadable = vec![];
    for f in found {
        let Some(row) = rows.remove(&f.rel) else {
            jobs.push(Job::Read { found: f, row: None });
            continue;
        };
        if f.stat == row.known.stat {
            continue;
        }
        let path = root.join(&f.rel);
        let change = match File::open(&path).and_then(|file| classify(&row.known, &f.stat, &file)) {
            Ok(c) => c,
            // Gone since the walk: the next refresh drops it.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                warnings.push(unreadable_warning(&path, &e));
                unreadable.push((row.rowid, row.gen));
                continue;
            }
        };
        match change {
            Change::Unchanged => {}
            Change::Restamp => restamps.push((row.rowid, row.gen, f.stat)),
            // A file that is not a session is not read past its head.
            Change::Grown(_) if row.kind == ListingKind::NotSession => restamps.push((row.rowid, row.gen, f.stat)),
            Change::Grown(sum) => jobs.push(Job::ReadOn { found: f, row, sum, facts: Box::default() }),
            Change::Rescan => jobs.push(Job::Read { found: f, row: Some(row) }),
        }
    }
    // Rows left over are files that are gone; unreadable ones go too.
    let mut gone: Vec<(i64, i64)> = rows.values().map(|r| (r.rowid, r.gen)).collect();
    gone.extend(unreadable);
    Sorted { jobs, restamps, gone }
}

/// The rows of the scope's files (what tells whether each changed).
fn load_rows(conn: &Connection, scope: &Scope) -> rusqlite::Result<HashMap<String, Row>> {
    let cols = "rowid, rel, size, mtime_ns, ctime_ns, ino, dev, scanned, sum, kind, gen";
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
        let known = Known { stat, scanned: r.get::<_, i64>(7)? as u64, sum: r.get(8)? };
        let kind = ListingKind::from_code(r.get(9)?);
        Ok((r.get(1)?, Row { rowid: r.get(0)?, known, kind, gen: r.get(10)? }))
    };
    let rows = match arg {
        None => stmt.query_map([], map)?.collect(),
        Some(d) => stmt.query_map([d], map)?.collect(),
    };
    rows
}

/// The listing facts of the rows of the files read on.
fn load_facts(conn: &Connection, jobs: &mut [Job]) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT kind, lines, id, cwd, parent_session, created, version, name, message_count, first_message, \
         newest_ms FROM sessions WHERE rowid = ?1",
    )?;
    for job in jobs {
        let Job::ReadOn { row, facts, .. } = job else { continue };
        **facts = stmt.query_row([row.rowid], |r| {
            Ok(ListingFacts {
                kind: ListingKind::from_code(r.get(0)?),
                lines: r.get::<_, i64>(1)? as u64,
                id: r.get(2)?,
                cwd: r.get(3)?,
                parent_session: r.get(4)?,
                created: r.get(5)?,
                version: r.get::<_, i64>(6)? as u64,
                name: r.get(7)?,
                message_count: r.get::<_, i64>(8)? as u64,
                first_message: r.get(9)?,
                newest_ms: r.get(10)?,
            })
        })?;
    }
    Ok(())
}

/// The warning for a file that cannot be read.
fn unreadable_warning(path: &Path, e: &io::Error) -> String {
    format!("cannot read {} ({e}); it is left out", path.display())
}

/// Reads a job's file for its facts.
fn read_job(root: &Path, job: Job) -> Outcome {
    let (found, row, from, facts, sum) = match job {
        Job::Read { found, row } => (found, row, 0, ListingFacts::default(), Checksum::default()),
        Job::ReadOn { found, row, sum, facts } => {
            let from = row.known.scanned;
            (found, Some(row), from, *facts, sum)
        }
    };
    let path = root.join(&found.rel);
    let key = row.as_ref().map(|r| (r.rowid, r.gen));
    let fail = |e: io::Error| match e.kind() {
        io::ErrorKind::NotFound => Outcome::Gone,
        _ => Outcome::Unreadable { row: key, warning: unreadable_warning(&path, &e) },
    };
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    let mut facts = facts;
    let (scanned, sum) = match read_facts(&file, from, found.stat.size, &mut facts, sum) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let reset = from == 0 && row.is_some();
    let row = row.map(|r| (r.rowid, r.gen));
    Outcome::Read(Box::new(Read { found, row, reset, from, scanned, sum: sum.value(), facts }))
}

/// Feeds the complete lines of `[from, end)` to `facts`, carrying on `sum`
/// (the checksum of the bytes before `from`); returns where they end and
/// the checksum of the bytes before that. Until a header is found only the
/// file's first [`HEAD_LIMIT`] bytes are read: a file without one there is
/// not a session, whatever its size.
pub(crate) fn read_facts(
    file: &File,
    from: u64,
    end: u64,
    facts: &mut ListingFacts,
    sum: Checksum,
) -> io::Result<(u64, Checksum)> {
    let (mut at, mut sum) = (from, sum);
    if facts.kind == ListingKind::Pending {
        let head_end = end.min(HEAD_LIMIT.max(from));
        (at, sum) = read_lines(file, at, head_end, facts, sum, head_end == end)?;
        if facts.kind == ListingKind::Pending && head_end < end {
            // No header where a session has one: not a session, and not read further.
            facts.kind = ListingKind::NotSession;
            return Ok((at, sum));
        }
    }
    if facts.kind == ListingKind::Session && at < end {
        (at, sum) = read_lines(file, at, end, facts, sum, true)?;
    }
    Ok((at, sum))
}

/// Feeds the complete lines of `[from, end)` to `facts`; with `last`, a final
/// line without its newline too when it is whole JSON.
fn read_lines(
    file: &File,
    from: u64,
    end: u64,
    facts: &mut ListingFacts,
    sum: Checksum,
    last: bool,
) -> io::Result<(u64, Checksum)> {
    let mut lines = Lines::with_sum(file, from, end, sum);
    while let Some(line) = lines.next_line()? {
        if line.long {
            // Too long to hold: not read for the listing (docs/cli.md, "The catalog").
            facts.lines += 1;
            if facts.kind == ListingKind::Pending {
                facts.kind = ListingKind::NotSession;
            }
            continue;
        }
        facts.feed(line.bytes);
    }
    let (at, rest) = lines.rest();
    let mut sum = lines.sum();
    Ok(if last && complete_tail(rest) {
        facts.feed(rest);
        sum.update(rest);
        (at + rest.len() as u64, sum)
    } else {
        (at, sum)
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
                self.conn.execute("DELETE FROM columns WHERE session = ?1", [rowid])?;
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
            r.sum,
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
                    "INSERT INTO sessions (rel, dir, size, mtime_ns, ctime_ns, ino, dev, scanned, sum, \
                 kind, lines, id, cwd, parent_session, created, version, name, message_count, first_message, \
                 newest_ms, modified_ms, epoch, gen) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, \
                 ?21, 0, 0) ON CONFLICT (rel) DO NOTHING",
                )?
                .execute(values)?,
            Some((rowid, gen)) => {
                let n = self.conn.execute(
                    &format!(
                        "UPDATE sessions SET rel = ?1, dir = ?2, size = ?3, mtime_ns = ?4, ctime_ns = ?5, ino = ?6, \
                         dev = ?7, scanned = ?8, sum = ?9, kind = ?10, lines = ?11, id = ?12, \
                         cwd = ?13, parent_session = ?14, created = ?15, version = ?16, name = ?17, \
                         message_count = ?18, first_message = ?19, newest_ms = ?20, modified_ms = ?21, \
                         gen = gen + 1{} WHERE rowid = {rowid} AND gen = {gen}",
                        if r.reset { ", epoch = epoch + 1" } else { "" }
                    ),
                    values,
                )?;
                if n > 0 && r.reset {
                    self.conn.execute("DELETE FROM columns WHERE session = ?1", [rowid])?;
                    stats.reset += 1;
                }
                n
            }
        };
        stats.conflicts += usize::from(n == 0);
        stats.bytes += r.scanned.saturating_sub(r.from);
        self.tick()
    }
}
