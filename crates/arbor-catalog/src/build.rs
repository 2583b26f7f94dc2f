//! Building the gram filters a search would build as it reads
//! ([`crate::filters`]), for every range of every session that has none:
//! what `arbor cache build` (and [`crate::Catalog::build_filters`]) runs,
//! usually in a detached process after a first search answered from a plain
//! scan. The filters are the same a search builds (one per MiB of whole
//! lines); a search running at the same time stays correct (a range with
//! two filters is read once, a session rewritten meanwhile loses them).

use std::fs::File;
use std::io;
use std::path::Path;

use rusqlite::Connection;

use arbor_log::scan::ReadAt;
use arbor_log::CURRENT_VERSION;
use arbor_search::grams::{Builder, Filter};
use arbor_search::COLUMN_BYTES;
use arbor_tree::sessions::{Pass, Progress, Scope};

use crate::error::CatalogError;
use crate::filters::{self, Column, SEGMENT_BYTES};
use crate::search::{covered_ranges, load, BUILD_MIN};

/// What [`crate::Catalog::build_filters`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Sessions that had a range without a filter.
    pub sessions: usize,
    /// The bytes read to build them.
    pub bytes: u64,
    /// The filters built and kept.
    pub filters: usize,
}

/// The bytes read at a time.
const CHUNK: usize = 256 << 10;

/// A session's range without a filter.
struct Job {
    session: i64,
    epoch: i64,
    rel: String,
    start: u64,
    end: u64,
}

/// Builds and stores the filters of every range of every session that a
/// search would give one and that has none (the catalog refreshed by the caller).
pub(crate) fn run(
    conn: &mut Connection,
    root: &Path,
    db: &Path,
    threads: usize,
    progress: &dyn Progress,
    warnings: &mut Vec<String>,
) -> Result<BuildStats, CatalogError> {
    let db_err = |source| CatalogError::Db { path: db.to_owned(), source };
    let sessions = load(conn, &Scope::All).map_err(db_err)?;
    let keys: Vec<(i64, i64)> = sessions.iter().map(|(p, _)| (p.rowid, p.epoch)).collect();
    let live = filters::columns_of(conn, &keys).map_err(db_err)?;
    let mut jobs = vec![];
    for (p, scanned) in sessions {
        if p.version < CURRENT_VERSION {
            continue; // read whole through the migration by every search: no filters
        }
        let columns = live.get(&p.rowid).map(Vec::as_slice).unwrap_or_default();
        let (_, covered) = covered_ranges(columns, |_| true);
        if covered < scanned && (covered == 0 || scanned - covered >= BUILD_MIN) {
            jobs.push(Job { session: p.rowid, epoch: p.epoch, rel: p.rel, start: covered, end: scanned });
        }
    }
    let total: u64 = jobs.iter().map(|j| j.end - j.start).sum();
    progress.begin(Pass::Text, jobs.len() as u64, total);
    let mut stats = BuildStats { sessions: jobs.len(), ..BuildStats::default() };
    let (mut batch, mut batch_bytes) = (vec![], 0u64);
    // The catalog's directory removed meanwhile (`arbor cache clear`): the
    // filters cannot be kept; the next search builds what it reads.
    let mut lost: Option<io::Error> = None;
    let result = crate::work::run_parallel(
        jobs,
        threads,
        |job| Ok(build_job(root, &job)),
        |(columns, bytes, warning): (Vec<Column>, u64, Option<String>)| {
            progress.advance(bytes);
            stats.bytes += bytes;
            warnings.extend(warning);
            batch_bytes += columns.iter().map(|c| c.filter.words.len() as u64 * 8).sum::<u64>();
            batch.extend(columns);
            // Kept as a segment's worth comes: memory follows a segment, not the store.
            if batch_bytes >= SEGMENT_BYTES {
                stats.filters += keep(conn, db, std::mem::take(&mut batch), &mut lost)?;
                batch_bytes = 0;
            }
            Ok(())
        },
    );
    progress.end();
    result?;
    stats.filters += keep(conn, db, batch, &mut lost)?;
    if let Some(e) = lost {
        warnings.push(format!("cannot keep the search filters in {} ({e})", filters::dir_of(db).display()));
        return Ok(stats);
    }
    filters::tidy(conn, db).map_err(|e| match e {
        filters::StoreError::Db(source) => db_err(source),
        filters::StoreError::Io(e) => CatalogError::io(filters::dir_of(db), e),
    })?;
    Ok(stats)
}

/// Stores a batch of filters; when they cannot be written (`lost` is set),
/// this batch and the later ones are dropped.
fn keep(
    conn: &mut Connection,
    db: &Path,
    batch: Vec<Column>,
    lost: &mut Option<io::Error>,
) -> Result<usize, CatalogError> {
    if lost.is_some() {
        return Ok(0);
    }
    match filters::store(conn, db, batch) {
        Ok(n) => Ok(n),
        Err(filters::StoreError::Db(source)) => Err(CatalogError::Db { path: db.to_owned(), source }),
        Err(filters::StoreError::Io(e)) => {
            *lost = Some(e);
            Ok(0)
        }
    }
}

/// Reads one job's range and builds its filters; a file gone is skipped, one
/// that cannot be read is skipped with a warning.
fn build_job(root: &Path, job: &Job) -> (Vec<Column>, u64, Option<String>) {
    let path = crate::walk::path_under(root, &job.rel);
    let built = File::open(&path).and_then(|f| filters_of(&f, job.start, job.end));
    match built {
        Ok(found) => {
            let bytes = found.last().map_or(0, |(_, end, _)| end - job.start);
            let columns = found
                .into_iter()
                .map(|(start, end, filter)| Column { session: job.session, epoch: job.epoch, start, end, filter })
                .collect();
            (columns, bytes, None)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => (vec![], 0, None),
        Err(e) => (vec![], 0, Some(format!("cannot read {} ({e}); its search filters are not built", path.display()))),
    }
}

/// The filters of `start..end` of `src`, one per [`COLUMN_BYTES`] cut at a
/// line end, as a search reading the range builds them: `(start, end, filter)`.
fn filters_of(src: &dyn ReadAt, start: u64, end: u64) -> io::Result<Vec<(u64, u64, Filter)>> {
    let size = |from: u64| (end - from).min(COLUMN_BYTES + CHUNK as u64);
    let mut out = vec![];
    let mut buf = vec![0u8; CHUNK];
    let (mut at, mut column_start) = (start, start);
    let mut builder = Builder::new(size(start));
    // The last two bytes of the read before: grams across two reads inside one line.
    let mut carry: Vec<u8> = Vec::with_capacity(4);
    while at < end {
        let want = usize::try_from(end - at).unwrap_or(CHUNK).min(CHUNK);
        let n = match src.read_at(&mut buf[..want], at) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        carry.extend_from_slice(&chunk[..n.min(2)]);
        builder.add(&carry);
        at += n as u64;
        let cut = (at - column_start >= COLUMN_BYTES && at < end).then(|| memchr::memrchr(b'\n', chunk)).flatten();
        match cut {
            Some(nl) => {
                builder.add(&chunk[..=nl]);
                let cut_at = at - (n - nl - 1) as u64;
                let done = std::mem::replace(&mut builder, Builder::new(size(cut_at)));
                out.push((column_start, cut_at, done.finish()));
                column_start = cut_at;
                builder.add(&chunk[nl + 1..]);
            }
            None => builder.add(chunk),
        }
        carry.clear();
        carry.extend_from_slice(&chunk[n.saturating_sub(2)..]);
    }
    if at > column_start {
        out.push((column_start, at, builder.finish()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Whether `filter` may hold the literal `word`.
    fn may_hold(filter: &Filter, word: &str) -> bool {
        let q = arbor_search::parse_query(word).unwrap();
        let p = arbor_search::Pattern::new(&q).unwrap().unwrap();
        p.need().eval(&|g| filter.has(g))
    }

    #[test]
    fn filters_are_cut_at_line_ends_and_hold_every_word() {
        // Lines of 100 bytes: words across the 256 KiB reads too.
        let mut text = vec![];
        for i in 0..40_000u32 {
            let line = format!("{{\"n\":{i:08},\"t\":\"word{:07} zebra\"}}", i * 7);
            text.extend_from_slice(format!("{line:<99}").as_bytes());
            text.push(b'\n');
        }
        let cols = filters_of(&text, 0, text.len() as u64).unwrap();
        assert!(cols.len() >= 3, "{}", cols.len());
        let mut expect = 0;
        for (start, end, _) in &cols {
            assert_eq!(*start, expect);
            assert_eq!(text[*end as usize - 1], b'\n', "cut at a line end");
            expect = *end;
        }
        assert_eq!(expect, text.len() as u64);
        // Every 37th line, and those across the first reads' ends (256 KiB: line 2,621 and on).
        for i in (0..40_000u64).step_by(37).chain([2621, 5242, 7864, 10485]) {
            let (_, _, filter) = cols.iter().find(|(s, e, _)| (*s..*e).contains(&(i * 100))).unwrap();
            assert!(may_hold(filter, &format!("word{:07}", i * 7)), "line {i}");
        }
        assert!(!may_hold(&cols[0].2, "qqqxxjj"));
        // A word across two reads of one long line.
        let mut long = vec![b'x'; CHUNK - 2];
        long.extend_from_slice(b"zqjwvk");
        long.extend_from_slice(&[b'x'; 1000]);
        long.push(b'\n');
        let cols = filters_of(&long, 0, long.len() as u64).unwrap();
        assert!(may_hold(&cols[0].2, "zqjwvk"));
        assert_eq!(filters_of(&text, 100, 100).unwrap().len(), 0);
    }
}
