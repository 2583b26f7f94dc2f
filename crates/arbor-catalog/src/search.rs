//! Search over the text of every entry on every branch, with
//! [`arbor_search`]'s engine: the session files are the text, the catalog
//! keeps only their gram filters ([`crate::filters`]).
//!
//! Hits come in one order, the order a server answers in too: sessions
//! newest first (pi's `modified`, ties by path under the root), and in a
//! session its entries last line first. Sessions are read in that order on
//! all cores and the search stops as soon as the first `limit` hits are
//! certain. For each session the search reads the ranges whose filters may
//! hold the query's literals, and what was written since its filters were
//! built; a range read whole without a filter gets one, stored when the
//! search ends (the first search of a store reads everything and builds
//! them all). Exact hits come first; fuzzy ones only when asked for, or
//! when there is no exact one (then from the newest sessions' first
//! [`FUZZY_FALLBACK_BYTES`]: a fuzzy match decodes every line).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use arbor_log::time::format_iso_ms;
use arbor_log::CURRENT_VERSION;
use arbor_search::{ordered, scan_ranges, scan_values, EntryHit, Flow, Mode, Pattern, Range, Scanned};
use arbor_tree::{OpenMode, Session, SessionOptions};

use arbor_tree::sessions::{Hit, PathLabel, Scope};

use arbor_tree::sessions::{Pass, Progress};

use crate::filters::{self, Column, Stored};

/// What to search and how many hits to return.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// The sessions searched.
    pub scope: Scope,
    /// The most hits returned.
    pub limit: usize,
    /// Fuzzy hits after the exact ones (without it, only when there is no exact hit).
    pub fuzzy: bool,
}

/// What a search needs of the catalog.
pub(crate) struct Ctx<'a> {
    pub conn: &'a mut Connection,
    pub root: &'a Path,
    /// The catalog file (`None` in memory: then no filter is kept).
    pub db: Option<&'a Path>,
    /// Where sessions' tree indexes are kept (the cache's `index/`), if anywhere.
    pub index_dir: Option<PathBuf>,
    pub threads: usize,
    pub warnings: &'a mut Vec<String>,
    /// Builds no filter when the ranges without one hold at least this many
    /// bytes (they are left to a builder, [`crate::build`]); `None`: always builds.
    pub defer_above: Option<u64>,
    /// Set when filters were left to a builder.
    pub deferred: bool,
}

/// A session as a search reads it.
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    pub rowid: i64,
    pub rel: String,
    id: String,
    cwd: String,
    name: Option<String>,
    pub version: u64,
    pub epoch: i64,
    /// The ranges to read.
    ranges: Vec<Range>,
}

/// The bytes of the newest sessions whose text is read for fuzzy matches
/// when a search has no exact hit and fuzzy matches were not asked for.
pub const FUZZY_FALLBACK_BYTES: u64 = 256 << 20;

/// A range read without a filter is given one when at least this long (or
/// when the session has none yet); shorter ones are just read.
pub(crate) const BUILD_MIN: u64 = 64 << 10;

/// Runs `pattern` over the scope's sessions (refreshed by the caller),
/// handing each session's hits to `on_hits` as soon as they are certain
/// (after every session read, with no hits too); it stops the search when
/// it says [`Flow::Stop`].
pub(crate) fn run(
    ctx: &mut Ctx,
    pattern: &Pattern,
    opts: &SearchOptions,
    progress: &dyn Progress,
    on_hits: &mut dyn FnMut(&[Hit]) -> Flow,
) -> Result<Vec<Hit>, rusqlite::Error> {
    let sessions = load(ctx.conn, &opts.scope)?;
    let plan = plan(ctx, pattern, &sessions)?;
    let stopped = std::cell::Cell::new(false);
    let mut watch = |h: &[Hit]| {
        let flow = on_hits(h);
        stopped.set(stopped.get() || flow == Flow::Stop);
        flow
    };
    let mut hits = scan(ctx, &plan, pattern, Mode::Exact, opts.limit, progress, &mut watch, &HashSet::new())?;
    if !stopped.get() && pattern.has_tokens() && hits.len() < opts.limit && (opts.fuzzy || hits.is_empty()) {
        let seen: HashSet<(String, String)> = hits.iter().map(|h| (h.session_id.clone(), h.entry_id.clone())).collect();
        // Fuzzy matches decode every line. Asked for, they cover the scope; as
        // the fallback of a search with no exact hit, the newest sessions only.
        let budget = if opts.fuzzy { u64::MAX } else { FUZZY_FALLBACK_BYTES };
        let mut spent = 0u64;
        let whole: Vec<Planned> = sessions
            .into_iter()
            .take_while(|(_, scanned)| {
                let first = spent == 0;
                spent = spent.saturating_add(*scanned);
                first || spent <= budget
            })
            .map(|(p, scanned)| whole(p, scanned))
            .collect();
        let more = scan(ctx, &whole, pattern, Mode::Fuzzy, opts.limit - hits.len(), progress, &mut watch, &seen)?;
        hits.extend(more);
    }
    Ok(hits)
}

fn whole(mut p: Planned, scanned: u64) -> Planned {
    p.ranges = vec![Range { start: 0, end: scanned, build: false }];
    p
}

/// The scope's sessions, newest first (ties by path), each with how far it was read.
pub(crate) fn load(conn: &Connection, scope: &Scope) -> rusqlite::Result<Vec<(Planned, u64)>> {
    let mut sql = "SELECT rowid, rel, id, cwd, name, version, epoch, scanned, modified_ms FROM sessions WHERE kind = 1"
        .to_owned();
    if matches!(scope, Scope::Dir(_)) {
        sql.push_str(" AND dir = ?1");
    }
    let mut stmt = conn.prepare(&sql)?;
    let map = |r: &rusqlite::Row| -> rusqlite::Result<(i64, Planned, u64)> {
        Ok((
            r.get(8)?,
            Planned {
                rowid: r.get(0)?,
                rel: r.get(1)?,
                id: r.get(2)?,
                cwd: r.get(3)?,
                name: r.get(4)?,
                version: r.get::<_, i64>(5)? as u64,
                epoch: r.get(6)?,
                ranges: vec![],
            },
            r.get::<_, i64>(7)? as u64,
        ))
    };
    let rows: rusqlite::Result<Vec<(i64, Planned, u64)>> = match scope {
        Scope::All => stmt.query_map([], map)?.collect(),
        Scope::Dir(d) => stmt.query_map([d], map)?.collect(),
    };
    // Sorted here: the table read in its order is cheaper than an index's lookups.
    let mut rows = rows?;
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.rel.cmp(&b.1.rel)));
    Ok(rows.into_iter().map(|(_, p, scanned)| (p, scanned)).collect())
}

/// The ranges each session must be read in: those whose filters may hold
/// the query, and what no filter covers yet.
fn plan(ctx: &mut Ctx, pattern: &Pattern, sessions: &[(Planned, u64)]) -> rusqlite::Result<Vec<Planned>> {
    let need = pattern.need();
    let keys: Vec<(i64, i64)> = sessions.iter().map(|(p, _)| (p.rowid, p.epoch)).collect();
    let (live, candidates) = match ctx.db {
        Some(db) => {
            let live = filters::columns_of(ctx.conn, &keys)?;
            let candidates: Option<HashSet<(i64, i64)>> = if need.selects() && !live.is_empty() {
                match filters::candidates(ctx.conn, db, &need) {
                    Ok(c) => Some(c.into_iter().collect()),
                    Err(filters::StoreError::Db(e)) => return Err(e),
                    Err(filters::StoreError::Io(e)) => {
                        ctx.warnings.push(format!("cannot read the search filters ({e}); every session is read"));
                        None
                    }
                }
            } else {
                None
            };
            (live, candidates)
        }
        None => (HashMap::new(), None),
    };
    let mut out = vec![];
    for (p, scanned) in sessions {
        if p.version < CURRENT_VERSION {
            // Read whole through the migration: no filters.
            out.push(whole(p.clone(), *scanned));
            continue;
        }
        let columns = live.get(&p.rowid).map(Vec::as_slice).unwrap_or_default();
        let named = pattern.in_session(&p.id).names_session();
        let (mut ranges, covered) =
            covered_ranges(columns, |s| named || candidates.as_ref().is_none_or(|c| c.contains(&(s.seg, s.col))));
        if covered < *scanned {
            let tail = scanned - covered;
            let build = ctx.db.is_some() && (covered == 0 || tail >= BUILD_MIN);
            push_range(&mut ranges, Range { start: covered, end: *scanned, build });
        }
        // Only the sessions read are copied: most are ruled out by their filters.
        if !ranges.is_empty() {
            out.push(Planned { ranges, ..p.clone() });
        }
    }
    let unfiltered: u64 = out.iter().flat_map(|p| &p.ranges).filter(|r| r.build).map(|r| r.end - r.start).sum();
    if ctx.defer_above.is_some_and(|above| unfiltered >= above) {
        // A plain scan answers; a builder makes the filters afterwards.
        for r in out.iter_mut().flat_map(|p| &mut p.ranges) {
            r.build = false;
        }
        ctx.deferred = true;
    }
    Ok(out)
}

/// The ranges of the chain of columns from offset 0 that `keep` keeps, and where the chain ends.
pub(crate) fn covered_ranges(columns: &[Stored], keep: impl Fn(&Stored) -> bool) -> (Vec<Range>, u64) {
    let mut ranges = vec![];
    let mut covered = 0;
    for s in columns {
        if s.start > covered {
            break;
        }
        if s.end <= covered {
            continue;
        }
        if keep(s) {
            push_range(&mut ranges, Range { start: covered.max(s.start), end: s.end, build: false });
        }
        covered = s.end;
    }
    (ranges, covered)
}

/// Appends a range, joined to the one before when they touch and neither builds.
fn push_range(ranges: &mut Vec<Range>, r: Range) {
    if let Some(last) = ranges.last_mut() {
        if last.end == r.start && !last.build && !r.build {
            last.end = r.end;
            return;
        }
    }
    ranges.push(r);
}

/// What reading one session gave.
struct Read {
    hits: Vec<Hit>,
    columns: Vec<Column>,
    bytes: u64,
    warning: Option<String>,
}

/// Reads the planned sessions in order on all cores until `limit` hits are certain.
#[allow(clippy::too_many_arguments)]
fn scan(
    ctx: &mut Ctx,
    plan: &[Planned],
    pattern: &Pattern,
    mode: Mode,
    limit: usize,
    progress: &dyn Progress,
    on_hits: &mut dyn FnMut(&[Hit]) -> Flow,
    skip: &HashSet<(String, String)>,
) -> rusqlite::Result<Vec<Hit>> {
    let total: u64 = plan.iter().flat_map(|p| &p.ranges).map(|r| r.end - r.start).sum();
    progress.begin(Pass::Text, plan.len() as u64, total);
    let (root, index_dir) = (ctx.root, ctx.index_dir.clone());
    let mut hits = vec![];
    let columns = std::cell::RefCell::new(vec![]);
    let mut warnings = vec![];
    ordered(
        plan.len(),
        ctx.threads,
        |i| read_session(root, index_dir.as_deref(), &plan[i], pattern, mode, limit, skip),
        |_, r| {
            progress.advance(r.bytes);
            warnings.extend(r.warning);
            columns.borrow_mut().extend(r.columns);
            let room = limit.saturating_sub(hits.len());
            let mine: Vec<Hit> = r.hits.into_iter().take(room).collect();
            let flow = on_hits(&mine);
            hits.extend(mine);
            if hits.len() >= limit {
                Flow::Stop
            } else {
                flow
            }
        },
        |_, r| columns.borrow_mut().extend(r.columns),
    );
    let columns = columns.into_inner();
    progress.end();
    ctx.warnings.extend(warnings);
    if let Some(db) = ctx.db {
        if let Err(e) = filters::store(ctx.conn, db, columns).and_then(|_| filters::tidy(ctx.conn, db)) {
            match e {
                filters::StoreError::Db(e) => return Err(e),
                filters::StoreError::Io(e) => ctx.warnings.push(format!("cannot keep the search filters ({e})")),
            }
        }
    }
    Ok(hits)
}

/// Reads one session's planned ranges (a migrated file whole) and makes its hits.
fn read_session(
    root: &Path,
    index_dir: Option<&Path>,
    p: &Planned,
    pattern: &Pattern,
    mode: Mode,
    limit: usize,
    skip: &HashSet<(String, String)>,
) -> Read {
    let path = crate::walk::path_under(root, &p.rel);
    let bytes = p.ranges.iter().map(|r| r.end - r.start).sum();
    let fail = |e: io::Error| Read {
        hits: vec![],
        columns: vec![],
        bytes,
        warning: (e.kind() != io::ErrorKind::NotFound)
            .then(|| format!("cannot read {} ({e}); it is left out", path.display())),
    };
    let in_session = pattern.in_session(&p.id);
    // Hits already found exactly are not found again fuzzily: ask for enough.
    let want = limit + skip.len().min(limit);
    let (found, session) = if p.version < CURRENT_VERSION {
        let s = match open_session(&path, index_dir) {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        // A migrated file is read whole (no line is read again later): no read fails.
        let values = s.positions().filter_map(|pos| {
            let v = s.with_json_at(pos, arbor_log::json::parse).ok()??.ok()?;
            Some((usize::from(pos) as u64, v))
        });
        let hits = scan_values(values, &in_session, mode, want);
        (Scanned { hits, ..Scanned::default() }, Some(s))
    } else {
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) => return fail(e),
        };
        match scan_ranges(&file, &p.ranges, &in_session, mode, want) {
            Ok(s) => (s, None),
            Err(e) => return fail(e),
        }
    };
    let columns = found
        .filters
        .into_iter()
        .map(|(r, filter)| Column { session: p.rowid, epoch: p.epoch, start: r.start, end: r.end, filter })
        .collect();
    let fresh: Vec<EntryHit> =
        found.hits.into_iter().filter(|h| !skip.contains(&(p.id.clone(), h.entry_id.clone()))).take(limit).collect();
    let hits = if fresh.is_empty() {
        vec![]
    } else {
        let session = session.or_else(|| open_session(&path, index_dir).ok());
        let hits: Result<Vec<Hit>, arbor_tree::TreeError> =
            fresh.into_iter().map(|h| to_hit(h, p, &path, session.as_ref())).collect();
        match hits {
            Ok(hits) => hits,
            // The file changed under the search: its hits are left out, with a warning.
            Err(e) => return fail(io::Error::other(e)),
        }
    };
    Read { hits, columns, bytes, warning: None }
}

fn open_session(path: &Path, index_dir: Option<&Path>) -> io::Result<Session> {
    let opts = SessionOptions { index_dir: index_dir.map(Path::to_owned), ..SessionOptions::default() };
    Session::open(path, OpenMode::ReadOnly, opts).map_err(|e| match e {
        arbor_tree::TreeError::Missing(_) => io::Error::from(io::ErrorKind::NotFound),
        e => io::Error::other(e),
    })
}

/// A hit as the catalog shows it: with its session, and its place in the session's tree.
fn to_hit(h: EntryHit, p: &Planned, path: &Path, session: Option<&Session>) -> Result<Hit, arbor_tree::TreeError> {
    let (on_active_path, labels) = match session {
        Some(s) => place(s, &h.entry_id)?,
        None => (false, vec![]),
    };
    Ok(Hit {
        path: path.to_owned(),
        session_id: p.id.clone(),
        session_name: p.name.clone(),
        cwd: p.cwd.clone(),
        entry_id: h.entry_id,
        entry_type: h.entry_type,
        role: h.role,
        timestamp: h.ts_ms.map(format_iso_ms).unwrap_or_default(),
        snippet: h.snippet,
        marks: h.marks,
        on_active_path,
        labels,
        relevance: h.relevance,
    })
}

/// Whether an entry is on its session's active path, and the labels on its path (root first).
fn place(s: &Session, id: &str) -> Result<(bool, Vec<PathLabel>), arbor_tree::TreeError> {
    let Some(pos) = s.position_of(id) else { return Ok((false, vec![])) };
    let active = s.branch_positions(None).contains(&pos);
    let mut labels = vec![];
    for p in s.branch_positions(Some(id)) {
        let Some(id) = s.id_at(p).map(|i| i.to_string()) else { continue };
        if let Some(label) = s.label(&id).map(|l| l.map(|l| l.text.as_str()))? {
            labels.push(PathLabel { entry_id: id, label: label.to_owned() });
        }
    }
    Ok((active, labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(start: u64, end: u64, col: i64) -> Stored {
        Stored { seg: 1, col, session: 1, start, end }
    }

    #[test]
    fn the_chain_of_columns_from_the_start_is_covered() {
        let cols = [stored(0, 10, 0), stored(10, 20, 1), stored(20, 30, 2), stored(40, 50, 3)];
        let (ranges, covered) = covered_ranges(&cols, |s| s.col != 1);
        assert_eq!(covered, 30, "a gap ends the chain");
        assert_eq!(ranges, [Range { start: 0, end: 10, build: false }, Range { start: 20, end: 30, build: false }]);
        let (ranges, _) = covered_ranges(&cols, |_| true);
        assert_eq!(ranges, [Range { start: 0, end: 30, build: false }], "touching ranges are one read");
        assert_eq!(covered_ranges(&[stored(5, 10, 0)], |_| true), (vec![], 0));
    }
}
