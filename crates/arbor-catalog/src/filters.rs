//! The gram filters of the catalog's sessions ([`arbor_search::grams`]),
//! kept so that a search reads only the ranges that may hold its literals.
//!
//! A range of a session file that a search read whole gets a filter, its
//! *column*. Columns are written in immutable *segment* files beside the
//! catalog (`<catalog>.grams/seg-<id>`), transposed: per size class (the
//! filter's bits), one row per bit holding one bit per column, so a query
//! reads, per segment and class, only the rows of its grams (a few hundred
//! bytes each) whatever the number of sessions. The catalog's tables say
//! which column is which session's range (`columns`), for which `epoch` of
//! the session: a session read again from its start gets a new epoch and
//! its old columns are deleted, and segments that lost columns are
//! rewritten without them (so no trace of text that left a file stays).
//!
//! Files are created exclusively in a directory the catalog made, written
//! whole, then recorded; a segment not recorded (a crash) is removed by the
//! next rewrite.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

use arbor_log::scan::ReadAt;
use arbor_search::grams::{bucket, Filter, Need};

/// A filter of a range of a session, ready to be stored.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub session: i64,
    pub epoch: i64,
    pub start: u64,
    pub end: u64,
    pub filter: Filter,
}

/// Where a stored column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stored {
    pub seg: i64,
    pub col: i64,
    pub session: i64,
    pub start: u64,
    pub end: u64,
}

/// One size class of a segment: its columns `first..first + count` and its matrix's place in the file.
#[derive(Debug, Clone, Copy)]
struct Class {
    log: u8,
    first: i64,
    count: i64,
    offset: u64,
}

impl Class {
    fn row_bytes(&self) -> u64 {
        (self.count as u64).div_ceil(64) * 8
    }
}

/// The most bytes of matrices one segment holds; more columns make more
/// segments. A search writes a segment as soon as it has this many, so its
/// memory follows a segment, not the store.
pub(crate) const SEGMENT_BYTES: u64 = 32 << 20;
/// A segment smaller than this is small: searches that read little write
/// small ones (a session's new lines), and they are merged when there are many.
const SMALL_SEGMENT: u64 = 4 << 20;
/// Small segments beyond which a search merges them into one.
const MAX_SMALL: usize = 16;

/// The directory of a catalog's segments.
pub(crate) fn dir_of(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".grams");
    PathBuf::from(name)
}

/// Creates the segments directory (not through a link) and returns it.
fn ensure_dir(db: &Path) -> io::Result<PathBuf> {
    let dir = dir_of(db);
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(dir),
        Ok(_) => Err(io::Error::other(format!("{} is not a directory", dir.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir(&dir).or_else(|e| if e.kind() == io::ErrorKind::AlreadyExists { Ok(()) } else { Err(e) })?;
            Ok(dir)
        }
        Err(e) => Err(e),
    }
}

/// A new file, created exclusively (never through a link).
fn create_new(path: &Path) -> io::Result<File> {
    let mut o = fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW).mode(0o600);
    }
    o.open(path)
}

/// Writes `columns` as new segments and records them; columns of sessions
/// whose epoch changed meanwhile are dropped. Returns how many were stored.
pub(crate) fn store(conn: &mut Connection, db: &Path, columns: Vec<Column>) -> Result<usize, StoreError> {
    if columns.is_empty() {
        return Ok(0);
    }
    let dir = ensure_dir(db).map_err(StoreError::Io)?;
    let mut stored = 0;
    let mut batch = vec![];
    let mut bytes = 0u64;
    for c in columns {
        bytes += c.filter.words.len() as u64 * 8;
        batch.push(c);
        if bytes >= SEGMENT_BYTES {
            stored += write_segment(conn, &dir, std::mem::take(&mut batch))?;
            bytes = 0;
        }
    }
    stored += write_segment(conn, &dir, batch)?;
    Ok(stored)
}

/// Why storing filters failed.
#[derive(Debug)]
pub(crate) enum StoreError {
    Io(io::Error),
    Db(rusqlite::Error),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Db(e)
    }
}

/// Lays columns out by class: the classes with their columns' places, and the file's bytes.
fn layout(columns: &[Column]) -> (Vec<(Class, Vec<usize>)>, u64) {
    let mut by_log: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
    for (i, c) in columns.iter().enumerate() {
        by_log.entry(c.filter.log).or_default().push(i);
    }
    let (mut classes, mut offset, mut first) = (vec![], 0u64, 0i64);
    for (log, members) in by_log {
        let class = Class { log, first, count: members.len() as i64, offset };
        offset += class.row_bytes() << log;
        first += class.count;
        classes.push((class, members));
    }
    (classes, offset)
}

/// The matrix of one class: row `b` holds bit `j` when column `j` has bit `b`.
fn matrix(class: &Class, members: &[usize], columns: &[Column]) -> Vec<u64> {
    let words = class.row_bytes() as usize / 8;
    let mut m = vec![0u64; words << class.log];
    for (j, &i) in members.iter().enumerate() {
        for (w, &bits) in columns[i].filter.words.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let b = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                m[b * words + j / 64] |= 1 << (j % 64);
            }
        }
    }
    m
}

fn write_segment(conn: &mut Connection, dir: &Path, columns: Vec<Column>) -> Result<usize, StoreError> {
    if columns.is_empty() {
        return Ok(0);
    }
    let (classes, total) = layout(&columns);
    let name = format!("seg-{}-{:016x}", std::process::id(), rand_u64());
    let path = dir.join(&name);
    let write = || -> io::Result<()> {
        let mut f = io::BufWriter::new(create_new(&path)?);
        for (class, members) in &classes {
            for w in matrix(class, members, &columns) {
                f.write_all(&w.to_le_bytes())?;
            }
        }
        f.flush()
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&path);
        return Err(StoreError::Io(e));
    }
    let recorded = (|| -> rusqlite::Result<usize> {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO segments (file, columns, bytes) VALUES (?1, ?2, ?3)",
            params![name, columns.len() as i64, total as i64],
        )?;
        let seg = tx.last_insert_rowid();
        for (class, members) in &classes {
            tx.execute(
                "INSERT INTO classes (seg, log, first, count, offset) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![seg, class.log, class.first, class.count, class.offset as i64],
            )?;
            for (j, &i) in members.iter().enumerate() {
                let c = &columns[i];
                // Only columns of the session's current reading of the file.
                tx.execute(
                    "INSERT INTO columns (seg, col, session, epoch, start, end) \
                     SELECT ?1, ?2, ?3, ?4, ?5, ?6 FROM sessions WHERE rowid = ?3 AND epoch = ?4 AND scanned >= ?6",
                    params![seg, class.first + j as i64, c.session, c.epoch, c.start as i64, c.end as i64],
                )?;
            }
        }
        let kept: i64 = tx.query_row("SELECT count(*) FROM columns WHERE seg = ?1", [seg], |r| r.get(0))?;
        tx.commit()?;
        Ok(kept as usize)
    })();
    match recorded {
        Ok(n) => Ok(n),
        Err(e) => {
            let _ = fs::remove_file(&path);
            Err(StoreError::Db(e))
        }
    }
}

/// A random-enough number for a file name (another process may write one at the same time).
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish()
}

/// The live columns of the given sessions, by session, sorted by start.
pub(crate) fn columns_of(conn: &Connection, sessions: &[(i64, i64)]) -> rusqlite::Result<HashMap<i64, Vec<Stored>>> {
    let mut out: HashMap<i64, Vec<Stored>> = HashMap::new();
    let epochs: HashMap<i64, i64> = sessions.iter().copied().collect();
    let mut stmt = conn.prepare_cached("SELECT seg, col, session, epoch, start, end FROM columns")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            Stored {
                seg: r.get(0)?,
                col: r.get(1)?,
                session: r.get(2)?,
                start: r.get::<_, i64>(4)? as u64,
                end: r.get::<_, i64>(5)? as u64,
            },
            r.get::<_, i64>(3)?,
        ))
    })?;
    for row in rows {
        let (s, epoch) = row?;
        if epochs.get(&s.session) == Some(&epoch) {
            out.entry(s.session).or_default().push(s);
        }
    }
    for v in out.values_mut() {
        v.sort_by_key(|s| (s.start, s.end));
    }
    Ok(out)
}

/// The columns (by segment and column number) whose filters may hold what `need` needs.
pub(crate) fn candidates(conn: &Connection, db: &Path, need: &Need) -> Result<Vec<(i64, i64)>, StoreError> {
    let dir = dir_of(db);
    let mut out = vec![];
    let segs: Vec<(i64, String)> = {
        let mut stmt = conn.prepare_cached("SELECT id, file FROM segments")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (seg, file) in segs {
        let classes = classes_of(conn, seg)?;
        let f = match File::open(dir.join(&file)) {
            Ok(f) => f,
            // Removed by a merge since the list was read: its columns are in another segment now.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(StoreError::Io(e)),
        };
        for class in classes {
            let words = class.row_bytes() as usize / 8;
            let mut all = vec![u64::MAX; words];
            if class.count % 64 != 0 {
                all[words - 1] = (1u64 << (class.count % 64)) - 1;
            }
            let mut failed = None;
            let mut rows = |g: u32| -> Vec<u64> {
                let r = bucket(g, class.log) as u64;
                let mut buf = vec![0u8; words * 8];
                if let Err(e) = read_exact(&f, &mut buf, class.offset + r * class.row_bytes()) {
                    failed = Some(e);
                }
                buf.chunks_exact(8)
                    .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                    .collect()
            };
            let hits = need.eval_rows(&mut rows, &all);
            if let Some(e) = failed {
                return Err(StoreError::Io(e));
            }
            for (w, &bits) in hits.iter().enumerate() {
                let mut bits = bits;
                while bits != 0 {
                    let j = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    out.push((seg, class.first + j as i64));
                }
            }
        }
    }
    Ok(out)
}

fn classes_of(conn: &Connection, seg: i64) -> rusqlite::Result<Vec<Class>> {
    let mut stmt = conn.prepare_cached("SELECT log, first, count, offset FROM classes WHERE seg = ?1 ORDER BY log")?;
    let rows = stmt.query_map([seg], |r| {
        Ok(Class { log: r.get(0)?, first: r.get(1)?, count: r.get(2)?, offset: r.get::<_, i64>(3)? as u64 })
    })?;
    rows.collect()
}

fn read_exact(f: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut n = 0;
    while n < buf.len() {
        match ReadAt::read_at(f, &mut buf[n..], offset + n as u64) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "segment file too short")),
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Rewrites the segments that lost columns (and merges them when there are
/// many): the filters of text that left a session do not stay on disk.
/// Removes segment files no row names.
pub(crate) fn tidy(conn: &mut Connection, db: &Path) -> Result<(), StoreError> {
    let dir = dir_of(db);
    if !dir.is_dir() {
        return Ok(());
    }
    let segs: Vec<(i64, String, i64, i64, i64)> = {
        let mut stmt = conn.prepare(
            "SELECT s.id, s.file, s.columns, (SELECT count(*) FROM columns c WHERE c.seg = s.id), s.bytes \
             FROM segments s",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    // Segments that lost columns are rewritten without them; small ones merged when many.
    let mut which: Vec<(i64, String)> = segs.iter().filter(|s| s.3 < s.2).map(|s| (s.0, s.1.clone())).collect();
    let small: Vec<(i64, String)> = segs
        .iter()
        .filter(|s| (s.4 as u64) < SMALL_SEGMENT && !which.iter().any(|w| w.0 == s.0))
        .map(|s| (s.0, s.1.clone()))
        .collect();
    if small.len() > MAX_SMALL {
        which.extend(small);
    }
    if !which.is_empty() {
        rewrite(conn, &dir, &which)?;
    }
    remove_strays(conn, &dir)?;
    Ok(())
}

/// Rewrites segments as new ones holding only their live columns.
fn rewrite(conn: &mut Connection, dir: &Path, segs: &[(i64, String)]) -> Result<(), StoreError> {
    let mut columns = vec![];
    for (seg, file) in segs {
        let f = match File::open(dir.join(file)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(StoreError::Io(e)),
        };
        let live: Vec<(i64, i64, i64, i64, i64)> = {
            let mut stmt = conn.prepare("SELECT col, session, epoch, start, end FROM columns WHERE seg = ?1")?;
            let rows = stmt.query_map([seg], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let classes = classes_of(conn, *seg)?;
        for (col, session, epoch, start, end) in live {
            let Some(class) = classes.iter().find(|c| col >= c.first && col < c.first + c.count) else { continue };
            let filter = read_column(&f, class, (col - class.first) as usize).map_err(StoreError::Io)?;
            columns.push(Column { session, epoch, start: start as u64, end: end as u64, filter });
        }
    }
    // Two processes that read a session at once leave its column twice: keep one.
    let mut seen = std::collections::HashSet::new();
    columns.retain(|c| seen.insert((c.session, c.epoch, c.start, c.end)));
    // The new segments first, then the old ones go: a search in between sees a column twice, never none.
    let ids: Vec<i64> = segs.iter().map(|s| s.0).collect();
    write_segment_replacing(conn, dir, columns, &ids)?;
    for (_, file) in segs {
        let _ = fs::remove_file(dir.join(file));
    }
    Ok(())
}

/// Writes `columns` as one new segment and deletes the segments `old` in the same transaction.
fn write_segment_replacing(
    conn: &mut Connection,
    dir: &Path,
    columns: Vec<Column>,
    old: &[i64],
) -> Result<(), StoreError> {
    let delete = |conn: &Connection| -> rusqlite::Result<()> {
        for seg in old {
            conn.execute("DELETE FROM columns WHERE seg = ?1", [seg])?;
            conn.execute("DELETE FROM classes WHERE seg = ?1", [seg])?;
            conn.execute("DELETE FROM segments WHERE id = ?1", [seg])?;
        }
        Ok(())
    };
    if columns.is_empty() {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        delete(&tx)?;
        tx.commit()?;
        return Ok(());
    }
    // Written as a new segment; then, in one transaction, the old ones are deleted
    // (if another process merged them first, its merge stands and this one is dropped).
    let before: i64 = conn.query_row("SELECT coalesce(max(id), 0) FROM segments", [], |r| r.get(0))?;
    write_segment(conn, dir, columns)?;
    let new: Option<i64> =
        conn.query_row("SELECT max(id) FROM segments WHERE id > ?1", [before], |r| r.get(0)).optional()?.flatten();
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let still: i64 = tx.query_row(
        &format!(
            "SELECT count(*) FROM segments WHERE id IN ({})",
            old.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
        ),
        [],
        |r| r.get(0),
    )?;
    if still as usize != old.len() {
        if let Some(new) = new {
            tx.execute("DELETE FROM columns WHERE seg = ?1", [new])?;
            tx.execute("DELETE FROM classes WHERE seg = ?1", [new])?;
            tx.execute("DELETE FROM segments WHERE id = ?1", [new])?;
        }
    } else {
        delete(&tx)?;
    }
    tx.commit()?;
    Ok(())
}

/// Reads column `j` of a class back into a filter.
fn read_column(f: &File, class: &Class, j: usize) -> io::Result<Filter> {
    let rows = 1usize << class.log;
    let row_bytes = class.row_bytes() as usize;
    let mut words = vec![0u64; (rows / 64).max(1)];
    // Row by row, a block of rows per read.
    let block = (1 << 20) / row_bytes.max(1);
    let block = block.max(1);
    let mut buf = vec![0u8; block * row_bytes];
    let mut r = 0;
    while r < rows {
        let n = block.min(rows - r);
        read_exact(f, &mut buf[..n * row_bytes], class.offset + (r * row_bytes) as u64)?;
        for k in 0..n {
            let byte = buf[k * row_bytes + j / 8];
            if byte >> (j % 8) & 1 == 1 {
                let b = r + k;
                words[b / 64] |= 1 << (b % 64);
            }
        }
        r += n;
    }
    Ok(Filter { log: class.log, words })
}

/// Removes files in the segments directory that no segment row names (left by a crash).
fn remove_strays(conn: &Connection, dir: &Path) -> Result<(), StoreError> {
    let names: std::collections::HashSet<String> = {
        let mut stmt = conn.prepare("SELECT file FROM segments")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let Ok(rd) = fs::read_dir(dir) else { return Ok(()) };
    let now = std::time::SystemTime::now();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("seg-") || names.contains(&name) {
            continue;
        }
        // A file another process is writing right now is young: leave it.
        let old = e.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| now.duration_since(t).ok());
        if old.is_some_and(|d| d.as_secs() > 600) {
            let _ = fs::remove_file(e.path());
        }
    }
    Ok(())
}

/// Bytes of every segment file (the size of the derived data).
pub(crate) fn bytes(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row("SELECT coalesce(sum(bytes), 0) FROM segments", [], |r| r.get::<_, i64>(0)).map(|n| n as u64)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use arbor_search::grams::Builder;

    fn filter(text: &str) -> Filter {
        let mut b = Builder::new(text.len() as u64);
        b.add(text.as_bytes());
        b.finish()
    }

    #[test]
    fn matrices_transpose_columns_and_read_back() {
        let columns: Vec<Column> = ["alpha beta", "gamma delta", &"x".repeat(50_000), "beta max"]
            .iter()
            .enumerate()
            .map(|(i, t)| Column { session: i as i64, epoch: 0, start: 0, end: t.len() as u64, filter: filter(t) })
            .collect();
        let (classes, total) = layout(&columns);
        assert_eq!(classes.len(), 2);
        let mut file = vec![];
        for (class, members) in &classes {
            for w in matrix(class, members, &columns) {
                file.extend_from_slice(&w.to_le_bytes());
            }
        }
        assert_eq!(file.len() as u64, total);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        fs::write(&path, &file).unwrap();
        let f = File::open(&path).unwrap();
        for (class, members) in &classes {
            for (j, &i) in members.iter().enumerate() {
                assert_eq!(read_column(&f, class, j).unwrap(), columns[i].filter);
            }
        }
    }
}
