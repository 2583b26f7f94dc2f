//! Search on the server with the engine files are searched with
//! ([`arbor_search`]): the same matcher over the same bytes, so a server and
//! a sessions root holding the same sessions give the same hits, in the same
//! order, with the same snippets.
//!
//! The sessions of the scope are taken newest first (pi's `modified`, ties
//! by path: the listing's order), and each is read as a file is, by byte
//! ranges ([`ServerFile`], fetched with the lines' offsets of migration 3):
//! candidate lines are found in the raw bytes and only those decoded, its
//! hits last line first. The search stops as soon as its first `limit` hits
//! are certain. Exact hits first; fuzzy ones when asked for, or when there
//! is no exact one (then from the newest sessions' first
//! [`FUZZY_FALLBACK_BYTES`]), as the local catalog does. Whether a hit is on
//! its session's active path, and the labels on its path, are read through
//! the session itself ([`mark_paths`]), before its hits are handed on.
//!
//! A session is read by the ranges its gram filters may hold the query in
//! (checked on the server, [`filters::of_scope`]) and the bytes no filter
//! covers yet, as the local catalog reads a file; what a search read without
//! a filter gets one, kept on the server when the role may insert
//! ([`filters`]). A session that cannot be read (one of an old version that
//! does not open, a planted row) is left out with a warning naming it
//! ([`Sessions::take_warnings`]), as a file that cannot be read is.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use postgres::types::Type;
use postgres::IsolationLevel;

use arbor_log::time::{format_iso_ms, parse_iso_ms};
use arbor_log::CURRENT_VERSION;
use arbor_search::grams::Filter;
use arbor_search::{scan_ranges, scan_values, EntryHit, Flow, Mode, Pattern, Range};
use arbor_tree::listing::SessionListInfo;
use arbor_tree::sessions::{Hit, Pass, PathLabel, Progress, SearchRequest, Sessions, SessionsError};
use arbor_tree::{OpenMode, Session, SessionOptions};

use crate::error::PgError;
use crate::filters::{self, Stored};
use crate::key::SessionKey;
use crate::list::scope_dir;
use crate::reader::ServerFile;
use crate::rows::{SessionRow, COLUMNS};
use crate::store::PgStore;

/// The bytes of the newest sessions read for fuzzy matches when a search
/// has no exact hit and fuzzy matches were not asked for (the local
/// catalog's bound, so both fall back alike).
pub(crate) const FUZZY_FALLBACK_BYTES: u64 = 256 << 20;

/// A session as a search reads it: as listed, its row, and the ranges to read.
struct Listed {
    info: SessionListInfo,
    row: SessionRow,
    ranges: Vec<Range>,
}

/// The sessions of a search in order, their filters by session, and whether this role may add filters.
type Order = (Vec<Listed>, HashMap<i64, Vec<Stored>>, bool);

/// A session's hits and the filters built while reading it.
type Found = (Vec<Hit>, Vec<(Range, Filter)>);

/// What a search keeps while it runs: may it add filters, still.
struct Run {
    build: std::cell::Cell<bool>,
}

impl PgStore {
    /// The sessions of directory `dir` (every directory with `None`), with
    /// their rows, in the order hits come in: newest first, ties by path;
    /// and the filters of each session that this build reads, checked for `need`.
    fn search_order(&self, dir: Option<&str>, need: &arbor_search::grams::Need) -> Result<Order, PgError> {
        let (mut out, stored, build) = self.read(|c| {
            let mut tx =
                c.build_transaction().isolation_level(IsolationLevel::RepeatableRead).read_only(true).start()?;
            let sql = format!(
                "SELECT dir, name, {COLUMNS} FROM arbor.sessions \
                 WHERE kind = 1 AND name LIKE '%.jsonl' AND ($1::text IS NULL OR dir = $1)"
            );
            let rows = tx.query_typed(&sql, &[(&dir, Type::TEXT)])?;
            let listed: Vec<Listed> = rows
                .iter()
                .filter_map(|r| {
                    let key = SessionKey { dir: r.get(0), name: r.get(1) };
                    let row = SessionRow::from_row(r, 2);
                    let info = row.facts.to_info(&key.path(), Some(row.changed_ms()), String::new())?;
                    Some(Listed { info, row, ranges: vec![] })
                })
                .collect();
            let stored = filters::of_scope(&mut tx, dir, need)?;
            tx.commit()?;
            // Asked outside the read-only transaction: may this role add filters?
            let build = filters::may_insert(c)?;
            Ok((listed, stored, build))
        })?;
        out.sort_by(|a, b| {
            let (x, y) = (parse_iso_ms(&a.info.modified), parse_iso_ms(&b.info.modified));
            y.cmp(&x).then_with(|| a.info.path.cmp(&b.info.path))
        });
        Ok((out, stored, build))
    }

    /// [`Sessions::search_each`](arbor_tree::sessions::Sessions::search_each) on the server.
    pub(crate) fn search_engine(
        &self,
        request: &SearchRequest,
        progress: &dyn Progress,
        on_hits: &mut dyn FnMut(&[Hit]) -> Flow,
    ) -> Result<Vec<Hit>, SessionsError> {
        let query_error = |e: arbor_search::PatternError| SessionsError::Query(e.to_string());
        arbor_search::check_size(&request.query).map_err(query_error)?;
        let parsed = arbor_search::parse_query(&request.query).map_err(SessionsError::Query)?;
        let Some(pattern) = Pattern::new(&parsed).map_err(query_error)? else { return Ok(vec![]) };
        let (mut sessions, stored, build) =
            self.search_order(scope_dir(&request.scope), &pattern.need()).map_err(SessionsError::backend)?;
        for s in &mut sessions {
            let size = u64::try_from(s.row.byte_size).unwrap_or_default();
            s.ranges = if s.row.facts.version < CURRENT_VERSION {
                // Read whole through its migration: no filters.
                vec![Range { start: 0, end: size, build: false }]
            } else {
                let mut mine = stored.get(&s.row.id).cloned().unwrap_or_default();
                if pattern.in_session(&s.info.id).names_session() {
                    // Every entry of a session its id names matches.
                    mine.iter_mut().for_each(|f| f.may = true);
                }
                filters::plan(size, &mine, build)
            };
        }
        let run = Run { build: std::cell::Cell::new(build) };
        let limit = request.limit;
        let stopped = std::cell::Cell::new(false);
        let mut watch = |h: &[Hit]| {
            let flow = on_hits(h);
            stopped.set(stopped.get() || flow == Flow::Stop);
            flow
        };
        let planned: Vec<&Listed> = sessions.iter().filter(|s| !s.ranges.is_empty()).collect();
        let mut hits =
            self.scan(&planned, &run, &pattern, Mode::Exact, limit, progress, &mut watch, &HashSet::new())?;
        if !stopped.get() && pattern.has_tokens() && hits.len() < limit && (request.fuzzy || hits.is_empty()) {
            let seen: HashSet<(String, String)> =
                hits.iter().map(|h| (h.session_id.clone(), h.entry_id.clone())).collect();
            let budget = if request.fuzzy { u64::MAX } else { FUZZY_FALLBACK_BYTES };
            let mut spent = 0u64;
            let newest: Vec<Listed> = sessions
                .iter()
                .take_while(|s| {
                    let first = spent == 0;
                    spent = spent.saturating_add(u64::try_from(s.row.byte_size).unwrap_or_default());
                    first || spent <= budget
                })
                .map(|s| {
                    let end = u64::try_from(s.row.byte_size).unwrap_or_default();
                    Listed {
                        info: s.info.clone(),
                        row: s.row.clone(),
                        ranges: vec![Range { start: 0, end, build: false }],
                    }
                })
                .collect();
            let newest: Vec<&Listed> = newest.iter().collect();
            let room = limit - hits.len();
            let more = self.scan(&newest, &run, &pattern, Mode::Fuzzy, room, progress, &mut watch, &seen)?;
            hits.extend(more);
        }
        Ok(hits)
    }

    /// Reads `sessions` in order until `limit` hits are certain, handing
    /// each session's hits on as it is done.
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        sessions: &[&Listed],
        run: &Run,
        pattern: &Pattern,
        mode: Mode,
        limit: usize,
        progress: &dyn Progress,
        on_hits: &mut dyn FnMut(&[Hit]) -> Flow,
        skip: &HashSet<(String, String)>,
    ) -> Result<Vec<Hit>, SessionsError> {
        let planned = |s: &Listed| s.ranges.iter().map(|r| r.end - r.start).sum::<u64>();
        let total: u64 = sessions.iter().map(|s| planned(s)).sum();
        progress.begin(Pass::Text, sessions.len() as u64, total);
        let mut hits = vec![];
        for s in sessions {
            if hits.len() >= limit {
                break;
            }
            let found = match self.search_session(s, pattern, mode, limit - hits.len(), skip) {
                Ok((found, built)) => {
                    self.keep_filters(run, s, &built);
                    found
                }
                Err(e) if !server_trouble(&e) => {
                    self.warn(format!("cannot read {} on the server ({e}); it is left out", s.info.path.display()));
                    vec![]
                }
                Err(e) => return Err(e),
            };
            progress.advance(planned(s));
            let flow = on_hits(&found);
            hits.extend(found);
            if flow == Flow::Stop {
                break;
            }
        }
        progress.end();
        Ok(hits)
    }

    /// Keeps the filters a search built of session `s`, while the role may.
    fn keep_filters(&self, run: &Run, s: &Listed, built: &[(Range, Filter)]) {
        if built.is_empty() || !run.build.get() {
            return;
        }
        let (id, generation) = (s.row.id, s.row.generation);
        if self.read(|c| filters::keep(c, id, generation, built)).is_err() {
            // A role or server that takes no writes after all: the next search reads the bytes again.
            run.build.set(false);
        }
    }

    /// One session's hits, last line first, at most `limit` (those in
    /// `skip` left out), and the filters built on the way.
    fn search_session(
        &self,
        s: &Listed,
        pattern: &Pattern,
        mode: Mode,
        limit: usize,
        skip: &HashSet<(String, String)>,
    ) -> Result<Found, SessionsError> {
        let in_session = pattern.in_session(&s.info.id);
        // Hits already found exactly are not found again fuzzily: ask for enough.
        let want = limit + skip.len().min(limit);
        let opts = Sessions::session_options(self);
        let (found, built): (Vec<EntryHit>, _) = if s.row.facts.version < CURRENT_VERSION {
            // An older version is searched as the entries its migration makes (ids included), as a file is.
            let session = Session::open(&s.info.path, OpenMode::ReadOnly, opts.clone()).map_err(SessionsError::Tree)?;
            // A migrated session is read whole (no line is read again later): no read fails.
            let values = session.positions().filter_map(|pos| {
                let v = session.with_json_at(pos, arbor_log::json::parse).ok()??.ok()?;
                Some((usize::from(pos) as u64, v))
            });
            (scan_values(values, &in_session, mode, want), vec![])
        } else {
            let file = ServerFile::new(self.conns(), &s.row);
            let scanned = scan_ranges(&file, &s.ranges, &in_session, mode, want)
                .map_err(|e| SessionsError::backend(ReadError { path: s.info.path.clone(), source: e }))?;
            (scanned.hits, scanned.filters)
        };
        let mut hits: Vec<Hit> = found
            .into_iter()
            .filter(|h| !skip.contains(&(s.info.id.clone(), h.entry_id.clone())))
            .take(limit)
            .map(|h| to_hit(h, &s.info))
            .collect();
        mark_paths(&mut hits, &opts);
        Ok((hits, built))
    }
}

/// True when an error is the server's (unreachable, a statement refused),
/// not the session's: the search stops instead of leaving sessions out.
fn server_trouble(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut at = Some(e);
    while let Some(e) = at {
        if let Some(pg) = e.downcast_ref::<PgError>() {
            return matches!(
                pg,
                PgError::Connect { .. }
                    | PgError::Server { .. }
                    | PgError::LostDuringWrite { .. }
                    | PgError::LostWrite { .. }
            );
        }
        if let Some(inner) = e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            if server_trouble(inner) {
                return true;
            }
        }
        at = e.source();
    }
    false
}

/// A session that could not be read while it was searched.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {} on the server: {source}", path.display())]
struct ReadError {
    path: PathBuf,
    source: std::io::Error,
}

/// A hit as every backend shows it (marks and labels left for [`mark_paths`]).
fn to_hit(h: EntryHit, info: &SessionListInfo) -> Hit {
    Hit {
        path: info.path.clone(),
        session_id: info.id.clone(),
        session_name: info.name.clone(),
        cwd: info.cwd.clone(),
        entry_id: h.entry_id,
        entry_type: h.entry_type,
        role: h.role,
        timestamp: h.ts_ms.map(format_iso_ms).unwrap_or_default(),
        snippet: h.snippet,
        marks: h.marks,
        on_active_path: false,
        labels: vec![],
        relevance: h.relevance,
    }
}

/// Fills in each hit's active-path mark and the labels on its path, from
/// its session opened with `opts` (once per session). A session that does
/// not open (or whose labels cannot be read: it changed meanwhile) leaves
/// its hits unmarked.
pub(crate) fn mark_paths(hits: &mut [Hit], opts: &SessionOptions) {
    let mut sessions: HashMap<PathBuf, Option<(Session, HashSet<String>)>> = HashMap::new();
    for hit in hits {
        let opened = sessions.entry(hit.path.clone()).or_insert_with(|| {
            let s = Session::open(&hit.path, OpenMode::ReadOnly, opts.clone()).ok()?;
            let active = s.branch_positions(None).into_iter().filter_map(|p| Some(s.id_at(p)?.to_string())).collect();
            Some((s, active))
        });
        let Some((s, active)) = opened else { continue };
        if s.position_of(&hit.entry_id).is_none() {
            continue;
        }
        let path_labels = || -> Result<Vec<PathLabel>, arbor_tree::TreeError> {
            let mut labels = vec![];
            for p in s.branch_positions(Some(&hit.entry_id)) {
                let Some(id) = s.id_at(p).map(|i| i.to_string()) else { continue };
                if let Some(l) = s.label(&id).map(|l| l.map(|l| l.text.as_str()))? {
                    labels.push(PathLabel { entry_id: id, label: l.to_owned() });
                }
            }
            Ok(labels)
        };
        let Ok(labels) = path_labels() else { continue };
        hit.on_active_path = active.contains(&hit.entry_id);
        hit.labels = labels;
    }
}
