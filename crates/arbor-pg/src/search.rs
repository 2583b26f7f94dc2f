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
//! covers yet, as the local catalog reads a file. The ranges of the sessions
//! read next are fetched several sessions a statement ([`Ahead`]: a first
//! statement of [`AHEAD_FIRST`] bytes, each next one twice as many, up to
//! [`AHEAD_MAX`]), not a round trip a range; what a search read without
//! a filter gets one, kept on the server when the role may insert
//! ([`filters`]). A session that cannot be read (one of an old version that
//! does not open, a planted row) is left out with a warning naming it
//! ([`Sessions::take_warnings`]), as a file that cannot be read is.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use postgres::types::Type;
use postgres::{Client, IsolationLevel};

use arbor_log::scan::ReadAt;
use arbor_log::time::{format_iso_ms, parse_iso_ms};
use arbor_log::CURRENT_VERSION;
use arbor_search::grams::Filter;
use arbor_search::{scan_ranges, scan_values, EntryHit, Flow, Mode, Pattern, Range};
use arbor_tree::listing::SessionListInfo;
use arbor_tree::sessions::{Hit, Pass, PathLabel, Progress, SearchRequest, Sessions, SessionsError};
use arbor_tree::{OpenMode, Session, SessionOptions};

use crate::error::{PgError, SqlError};
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
        let total: u64 = sessions.iter().map(|s| planned_bytes(s)).sum();
        progress.begin(Pass::Text, sessions.len() as u64, total);
        let mut hits = vec![];
        let mut ahead = Ahead::default();
        for (k, s) in sessions.iter().enumerate() {
            if hits.len() >= limit {
                break;
            }
            if ahead.next <= k {
                self.fetch_ahead(sessions, k, &mut ahead)?;
            }
            let held = ahead.held.remove(&k);
            let found = match self.search_session(s, held, pattern, mode, limit - hits.len(), skip) {
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
            progress.advance(planned_bytes(s));
            let flow = on_hits(&found);
            hits.extend(found);
            if flow == Flow::Stop {
                break;
            }
        }
        progress.end();
        Ok(hits)
    }

    /// Fetches the planned ranges of the sessions from `from` on, several
    /// sessions in one statement (at most the batch's bytes; a session of
    /// an older version, or one larger than [`AHEAD_MAX`], is left to its
    /// own reads), into `ahead`.
    fn fetch_ahead(&self, sessions: &[&Listed], from: usize, ahead: &mut Ahead) -> Result<(), SessionsError> {
        let budget = ahead.budget.clamp(AHEAD_FIRST, AHEAD_MAX);
        ahead.budget = budget.saturating_mul(2);
        let (mut batch, mut bytes, mut k) = (vec![], 0u64, from);
        while let Some(s) = sessions.get(k) {
            let n = planned_bytes(s);
            if !batch.is_empty() && bytes + n > budget {
                break;
            }
            k += 1;
            if s.row.facts.version < CURRENT_VERSION || n > AHEAD_MAX {
                continue;
            }
            batch.push(k - 1);
            bytes += n;
        }
        ahead.next = k;
        let mut asked = Asked::default();
        for &i in &batch {
            for r in &sessions[i].ranges {
                asked.push(i, &sessions[i].row, r);
            }
        }
        if asked.owners.is_empty() {
            return Ok(());
        }
        let (ids, gens, starts, ends) =
            (asked.ids.clone(), asked.gens.clone(), asked.starts.clone(), asked.ends.clone());
        let rows = self
            .conns()
            .read_bounded(move |c| fetch_ranges(c, &ids, &gens, &starts, &ends))
            .map_err(SessionsError::backend)?;
        ahead.hold(asked, rows);
        Ok(())
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
        held: Option<Vec<(u64, Vec<u8>)>>,
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
            let src: &dyn ReadAt = &Held { file: &file, parts: held.unwrap_or_default() };
            // Ranges not fetched ahead: fetched a few MiB a statement, not a block at a time.
            src.will_read(&s.ranges.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>());
            let scanned = scan_ranges(src, &s.ranges, &in_session, mode, want)
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

/// The bytes of a session's planned ranges.
fn planned_bytes(s: &Listed) -> u64 {
    s.ranges.iter().map(|r| r.end - r.start).sum()
}

/// The bytes the first statement of a search fetches ahead: a common word
/// is answered by the newest session or two, so the first batch is small.
const AHEAD_FIRST: u64 = 1 << 20;
/// The most bytes one statement fetches ahead (and a search holds so).
const AHEAD_MAX: u64 = 8 << 20;

/// The planned ranges of the sessions read next, fetched ahead.
#[derive(Debug, Default)]
struct Ahead {
    /// By the session's place in the search's order: its ranges' starts and bytes.
    held: HashMap<usize, Vec<(u64, Vec<u8>)>>,
    /// The place of the first session not fetched ahead (nor passed over).
    next: usize,
    /// The most bytes the next statement fetches.
    budget: u64,
}

/// The ranges one statement asks for, as the columns it sends.
#[derive(Debug, Default)]
struct Asked {
    owners: Vec<usize>,
    ids: Vec<i64>,
    gens: Vec<i64>,
    starts: Vec<i64>,
    ends: Vec<i64>,
}

impl Asked {
    fn push(&mut self, owner: usize, row: &SessionRow, r: &Range) {
        self.owners.push(owner);
        self.ids.push(row.id);
        self.gens.push(row.generation);
        self.starts.push(r.start as i64);
        self.ends.push(r.end as i64);
    }
}

impl Ahead {
    /// Holds the bytes fetched for `asked` (`rows`: each a range's number,
    /// from 1, and a piece of it, in order). A session with a range that did
    /// not come whole (replaced since it was listed) is not held: its own
    /// reads tell what happened.
    fn hold(&mut self, asked: Asked, rows: Vec<(i64, Vec<u8>)>) {
        let mut pieces: Vec<Vec<u8>> = vec![vec![]; asked.owners.len()];
        for (i, bytes) in rows {
            if let Some(p) = usize::try_from(i - 1).ok().and_then(|i| pieces.get_mut(i)) {
                p.extend_from_slice(&bytes);
            }
        }
        let mut short = HashSet::new();
        for (j, bytes) in pieces.into_iter().enumerate() {
            let owner = asked.owners[j];
            if bytes.len() as i64 != asked.ends[j] - asked.starts[j] {
                short.insert(owner);
            }
            self.held.entry(owner).or_default().push((asked.starts[j] as u64, bytes));
        }
        for owner in short {
            self.held.remove(&owner);
        }
    }
}

/// Ranges `[starts[i], ends[i])` of sessions `ids[i]` at generations
/// `gens[i]`, in one statement: each range's number (from 1) and the slices
/// of its lines, in order (none for a session not at that generation any more).
fn fetch_ranges(
    c: &mut Client,
    ids: &[i64],
    gens: &[i64],
    starts: &[i64],
    ends: &[i64],
) -> Result<Vec<(i64, Vec<u8>)>, SqlError> {
    let rows = c.query_typed(
        "SELECT r.i, CASE WHEN l.off >= r.s AND l.off + length(l.bytes) <= r.e THEN l.bytes \
                     ELSE substring(l.bytes FROM (greatest(l.off, r.s) - l.off + 1)::int \
                                    FOR (least(l.off + length(l.bytes), r.e) - greatest(l.off, r.s))::int) END \
           FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[]) WITH ORDINALITY AS r(id, g, s, e, i) \
           JOIN arbor.sessions ss ON ss.id = r.id AND ss.generation = r.g \
           CROSS JOIN LATERAL (SELECT off, bytes FROM arbor.lines \
               WHERE session = r.id AND off < r.e \
                 AND off >= coalesce((SELECT max(off) FROM arbor.lines WHERE session = r.id AND off <= r.s), 0)) l \
          ORDER BY r.i, l.off",
        &[(&ids, Type::INT8_ARRAY), (&gens, Type::INT8_ARRAY), (&starts, Type::INT8_ARRAY), (&ends, Type::INT8_ARRAY)],
    )?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// A session's bytes on the server, with the ranges fetched ahead held:
/// a read inside one is answered from it, any other from the server.
#[derive(Debug)]
struct Held<'a> {
    file: &'a ServerFile,
    parts: Vec<(u64, Vec<u8>)>,
}

impl ReadAt for Held<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let end = offset + buf.len() as u64;
        let part = self.parts.iter().find(|(s, b)| *s <= offset && end <= s + b.len() as u64);
        match part {
            Some((s, b)) => {
                let at = (offset - s) as usize;
                buf.copy_from_slice(&b[at..at + buf.len()]);
                Ok(buf.len())
            }
            None => self.file.read_at(buf, offset),
        }
    }

    fn len(&self) -> std::io::Result<u64> {
        self.file.len()
    }

    fn remote(&self) -> bool {
        true
    }

    fn will_read(&self, spans: &[(u64, u64)]) {
        // What is held is not fetched again.
        let missing: Vec<(u64, u64)> = spans
            .iter()
            .copied()
            .filter(|&(s, e)| !self.parts.iter().any(|(ps, b)| *ps <= s && e <= ps + b.len() as u64))
            .collect();
        self.file.will_read(&missing);
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
