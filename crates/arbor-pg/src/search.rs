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
//! The server keeps no search index of its own: every search reads the
//! scope's sessions until it has its hits (a word in the newest sessions
//! costs those sessions; a word in none costs the scope). The gram filters
//! the local catalog keeps are not kept on the server yet.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use postgres::types::Type;

use arbor_log::time::{format_iso_ms, parse_iso_ms};
use arbor_log::CURRENT_VERSION;
use arbor_search::{scan_ranges, scan_values, EntryHit, Flow, Mode, Pattern, Range};
use arbor_tree::listing::SessionListInfo;
use arbor_tree::sessions::{Hit, Pass, PathLabel, Progress, SearchRequest, Sessions, SessionsError};
use arbor_tree::{OpenMode, Session, SessionOptions};

use crate::error::PgError;
use crate::key::SessionKey;
use crate::list::scope_dir;
use crate::reader::ServerFile;
use crate::rows::{SessionRow, COLUMNS};
use crate::store::PgStore;

/// The bytes of the newest sessions read for fuzzy matches when a search
/// has no exact hit and fuzzy matches were not asked for (the local
/// catalog's bound, so both fall back alike).
pub(crate) const FUZZY_FALLBACK_BYTES: u64 = 256 << 20;

/// A session as a search reads it: as listed, and its row.
struct Listed {
    info: SessionListInfo,
    row: SessionRow,
}

impl PgStore {
    /// The sessions of directory `dir` (every directory with `None`), with
    /// their rows, in the order hits come in: newest first, ties by path.
    fn search_order(&self, dir: Option<&str>) -> Result<Vec<Listed>, PgError> {
        let mut out: Vec<Listed> = self.read(|c| {
            let sql = format!(
                "SELECT dir, name, {COLUMNS} FROM arbor.sessions \
                 WHERE kind = 1 AND name LIKE '%.jsonl' AND ($1::text IS NULL OR dir = $1)"
            );
            let rows = c.query_typed(&sql, &[(&dir, Type::TEXT)])?;
            Ok(rows
                .iter()
                .filter_map(|r| {
                    let key = SessionKey { dir: r.get(0), name: r.get(1) };
                    let row = SessionRow::from_row(r, 2);
                    let info = row.facts.to_info(&key.path(), Some(row.changed_ms()), String::new())?;
                    Some(Listed { info, row })
                })
                .collect())
        })?;
        out.sort_by(|a, b| {
            let (x, y) = (parse_iso_ms(&a.info.modified), parse_iso_ms(&b.info.modified));
            y.cmp(&x).then_with(|| a.info.path.cmp(&b.info.path))
        });
        Ok(out)
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
        let sessions = self.search_order(scope_dir(&request.scope)).map_err(SessionsError::backend)?;
        let limit = request.limit;
        let stopped = std::cell::Cell::new(false);
        let mut watch = |h: &[Hit]| {
            let flow = on_hits(h);
            stopped.set(stopped.get() || flow == Flow::Stop);
            flow
        };
        let all: Vec<&Listed> = sessions.iter().collect();
        let mut hits = self.scan(&all, &pattern, Mode::Exact, limit, progress, &mut watch, &HashSet::new())?;
        if !stopped.get() && pattern.has_tokens() && hits.len() < limit && (request.fuzzy || hits.is_empty()) {
            let seen: HashSet<(String, String)> =
                hits.iter().map(|h| (h.session_id.clone(), h.entry_id.clone())).collect();
            let budget = if request.fuzzy { u64::MAX } else { FUZZY_FALLBACK_BYTES };
            let mut spent = 0u64;
            let newest: Vec<&Listed> = sessions
                .iter()
                .take_while(|s| {
                    let first = spent == 0;
                    spent = spent.saturating_add(u64::try_from(s.row.byte_size).unwrap_or_default());
                    first || spent <= budget
                })
                .collect();
            let more = self.scan(&newest, &pattern, Mode::Fuzzy, limit - hits.len(), progress, &mut watch, &seen)?;
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
        pattern: &Pattern,
        mode: Mode,
        limit: usize,
        progress: &dyn Progress,
        on_hits: &mut dyn FnMut(&[Hit]) -> Flow,
        skip: &HashSet<(String, String)>,
    ) -> Result<Vec<Hit>, SessionsError> {
        let total: u64 = sessions.iter().map(|s| u64::try_from(s.row.byte_size).unwrap_or_default()).sum();
        progress.begin(Pass::Text, sessions.len() as u64, total);
        let mut hits = vec![];
        for s in sessions {
            if hits.len() >= limit {
                break;
            }
            let found = self.search_session(s, pattern, mode, limit - hits.len(), skip)?;
            progress.advance(u64::try_from(s.row.byte_size).unwrap_or_default());
            let flow = on_hits(&found);
            hits.extend(found);
            if flow == Flow::Stop {
                break;
            }
        }
        progress.end();
        Ok(hits)
    }

    /// One session's hits, last line first, at most `limit` (those in `skip` left out).
    fn search_session(
        &self,
        s: &Listed,
        pattern: &Pattern,
        mode: Mode,
        limit: usize,
        skip: &HashSet<(String, String)>,
    ) -> Result<Vec<Hit>, SessionsError> {
        let in_session = pattern.in_session(&s.info.id);
        // Hits already found exactly are not found again fuzzily: ask for enough.
        let want = limit + skip.len().min(limit);
        let opts = Sessions::session_options(self);
        let found: Vec<EntryHit> = if s.row.facts.version < CURRENT_VERSION {
            // An older version is searched as the entries its migration makes (ids included), as a file is.
            let session = Session::open(&s.info.path, OpenMode::ReadOnly, opts.clone()).map_err(SessionsError::Tree)?;
            let values = session.positions().filter_map(|pos| {
                let v = session.with_json_at(pos, arbor_log::json::parse)?.ok()?;
                Some((usize::from(pos) as u64, v))
            });
            scan_values(values, &in_session, mode, want)
        } else {
            let file = ServerFile::new(self.clone(), &s.row);
            let whole = Range { start: 0, end: u64::try_from(s.row.byte_size).unwrap_or_default(), build: false };
            scan_ranges(&file, &[whole], &in_session, mode, want)
                .map_err(|e| SessionsError::backend(ReadError { path: s.info.path.clone(), source: e }))?
                .hits
        };
        let mut hits: Vec<Hit> = found
            .into_iter()
            .filter(|h| !skip.contains(&(s.info.id.clone(), h.entry_id.clone())))
            .take(limit)
            .map(|h| to_hit(h, &s.info))
            .collect();
        mark_paths(&mut hits, &opts);
        Ok(hits)
    }
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
/// not open leaves its hits unmarked.
pub(crate) fn mark_paths(hits: &mut [Hit], opts: &SessionOptions) {
    let mut sessions: HashMap<PathBuf, Option<(Session, HashSet<String>)>> = HashMap::new();
    for hit in hits {
        let opened = sessions.entry(hit.path.clone()).or_insert_with(|| {
            let s = Session::open(&hit.path, OpenMode::ReadOnly, opts.clone()).ok()?;
            let active = s.get_branch(None).iter().map(|e| e.id.to_string()).collect();
            Some((s, active))
        });
        let Some((s, active)) = opened else { continue };
        if s.get_entry(&hit.entry_id).is_none() {
            continue;
        }
        hit.on_active_path = active.contains(&hit.entry_id);
        hit.labels = s
            .get_branch(Some(&hit.entry_id))
            .iter()
            .filter_map(|e| {
                s.label(&e.id)
                    .map(|l| l.text.as_str())
                    .map(|l| PathLabel { entry_id: e.id.to_string(), label: l.to_owned() })
            })
            .collect();
    }
}
