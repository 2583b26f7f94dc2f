//! Search on the server: PostgreSQL's full-text search over `arbor.search`
//! (each entry's searchable text, written with the entry), so every machine
//! searches the same index and nothing is indexed locally.
//!
//! The text's `tsvector` is computed by the first search after a write, for
//! every entry written since (in batches, skipping rows another searcher is
//! indexing), so appends and pushes pay nothing for it, as the local catalog
//! indexes text on its first search.
//!
//! Words match as prefixes (`build` finds "builds"), every word and every
//! "quoted phrase" must match (the `simple` configuration: no stemming, no
//! stop words), and `re:PATTERN` is a case-insensitive PostgreSQL regular
//! expression over the text. Hits whose every word is whole come first
//! ([`Relevance::Exact`], then words found only as prefixes, as [`Relevance::Fuzzy`]), each newest first,
//! with a snippet around the first match; whether a hit is on its
//! session's active path, and the labels on its path, are read through the
//! session itself ([`mark_paths`]). Unlike the local catalog, the server
//! does not match words fuzzily.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use postgres::types::Type;

use arbor_log::{EntryType, Role};
use arbor_tree::sessions::{Hit, PathLabel, Query, Relevance, TokenKind};
use arbor_tree::{OpenMode, Session, SessionOptions};

use crate::error::PgError;
use crate::key::SessionKey;
use crate::store::PgStore;

/// What to look for, as the server's engine takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TextQuery {
    /// Words (matched as prefixes) and phrases that must all match.
    Words {
        /// Single words.
        words: Vec<String>,
        /// Quoted phrases: their words in order.
        phrases: Vec<String>,
    },
    /// A case-insensitive regular expression (PostgreSQL's syntax).
    Regex(String),
}

impl TextQuery {
    /// A query in pi's picker syntax as the server's engine takes it: the
    /// pattern of `re:PATTERN` as it is, else the words and the phrases.
    pub(crate) fn of(query: &Query, text: &str) -> TextQuery {
        match query {
            Query::Regex(_) => TextQuery::Regex(text.trim().trim_start_matches("re:").trim().to_owned()),
            Query::Tokens(tokens) => {
                let (phrases, words): (Vec<_>, Vec<_>) = tokens.iter().partition(|t| t.kind == TokenKind::Phrase);
                TextQuery::Words {
                    words: words.into_iter().map(|t| t.value.clone()).collect(),
                    phrases: phrases.into_iter().map(|t| t.value.clone()).collect(),
                }
            }
        }
    }
}

/// Marks the server puts around matches in a headline (never in text: they are control characters).
const START: char = '\u{2}';
const STOP: char = '\u{3}';

/// The snippet of a headline with its marks taken out, on one line.
fn unmark(headline: &str) -> (String, Vec<[usize; 2]>) {
    let mut out = String::with_capacity(headline.len());
    let mut marks = vec![];
    let mut open = None;
    let mut n = 0;
    let mut space = false;
    for c in headline.trim().chars() {
        match c {
            START => open = Some(n),
            STOP => {
                if let Some(s) = open.take() {
                    marks.push([s, n]);
                }
            }
            c if c.is_whitespace() => {
                if !space {
                    out.push(' ');
                    n += 1;
                }
                space = true;
            }
            c => {
                out.push(c);
                n += 1;
                space = false;
            }
        }
    }
    (out, marks)
}

/// How many characters of text a regex hit's snippet shows around its match.
const CONTEXT: usize = 60;

/// A snippet around the first match of `re` (case-insensitive) in `body`.
fn regex_snippet(body: &str, re: &str) -> (String, Vec<[usize; 2]>) {
    let (flat, _) = unmark(body);
    let Ok(re) = regex::RegexBuilder::new(re).case_insensitive(true).build() else {
        return (flat.chars().take(2 * CONTEXT).collect(), vec![]);
    };
    let Some(m) = re.find(&flat) else { return (flat.chars().take(2 * CONTEXT).collect(), vec![]) };
    let (start, end) = (flat[..m.start()].chars().count(), flat[..m.end()].chars().count());
    let from = start.saturating_sub(CONTEXT);
    let snippet: String = flat.chars().skip(from).take(end - from + CONTEXT).collect();
    (snippet, vec![[start - from, end - from]])
}

/// Rows indexed per statement by [`PgStore::index_pending`].
const INDEX_BATCH: i64 = 2000;

impl PgStore {
    /// Computes the `tsvector` of every entry written since the last search;
    /// how many were indexed.
    pub(crate) fn index_pending(&self) -> Result<u64, PgError> {
        let mut total = 0;
        loop {
            let n = self.read(|c| {
                Ok(c.execute_typed(
                    "UPDATE arbor.search x SET tsv = to_tsvector('simple', x.body) \
                     FROM (SELECT session, seq FROM arbor.search WHERE tsv IS NULL \
                           LIMIT $1 FOR UPDATE SKIP LOCKED) p \
                     WHERE x.session = p.session AND x.seq = p.seq",
                    &[(&INDEX_BATCH, Type::INT8)],
                )?)
            })?;
            total += n;
            if n == 0 {
                return Ok(total);
            }
        }
    }

    /// The entries of the sessions of directory `dir` (every directory with
    /// `None`) that match `query`, exact ones first, each newest first, at
    /// most `limit`; their text indexed first when `refresh`. Active-path
    /// marks and labels are left for [`mark_paths`].
    pub(crate) fn search_text(
        &self,
        query: &TextQuery,
        dir: Option<&str>,
        limit: usize,
        refresh: bool,
    ) -> Result<Vec<Hit>, PgError> {
        if refresh && matches!(query, TextQuery::Words { .. }) {
            self.index_pending()?;
        }
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let opts = format!("StartSel={START}, StopSel={STOP}, MaxWords=24, MinWords=10, MaxFragments=1");
        let (filter, pattern, words, phrases): (&str, Option<&str>, Vec<String>, Vec<String>) = match query {
            TextQuery::Words { words, phrases } => ("x.tsv @@ q.q", None, words.clone(), phrases.clone()),
            TextQuery::Regex(re) => ("x.body ~* $3", Some(re.as_str()), vec![], vec![]),
        };
        // `q` matches the words as prefixes, `e` as whole words (both with the phrases).
        let sql = format!(
            "WITH w AS (SELECT l.lexeme FROM unnest(to_tsvector('simple', array_to_string($1::text[], ' '))) l), \
                  p AS (SELECT string_agg('(' || p.q::text || ')', ' & ') AS q \
                    FROM (SELECT phraseto_tsquery('simple', t) AS q FROM unnest($2::text[]) t) p \
                    WHERE p.q::text <> ''), \
                  q AS (SELECT \
                    nullif(concat_ws(' & ', (SELECT string_agg(quote_literal(lexeme) || ':*', ' & ') FROM w), \
                                     (SELECT q FROM p)), '')::tsquery AS q, \
                    nullif(concat_ws(' & ', (SELECT string_agg(quote_literal(lexeme), ' & ') FROM w), \
                                     (SELECT q FROM p)), '')::tsquery AS e) \
             SELECT s.dir, s.name, s.session_id, s.title, s.cwd, x.entry_id, x.entry_type, x.role, x.ts, \
                    CASE WHEN q.q IS NULL THEN x.body ELSE ts_headline('simple', x.body, q.q, $5) END, \
                    coalesce(q.e IS NULL OR x.tsv @@ q.e, true) AS exact \
             FROM arbor.search x JOIN arbor.sessions s ON s.id = x.session, q \
             WHERE {filter} AND ($4::text IS NULL OR s.dir = $4) AND s.name LIKE '%.jsonl' \
             ORDER BY exact DESC, x.ts DESC, s.id, x.seq LIMIT $6"
        );
        let rows = self.read(|c| {
            Ok(c.query_typed(
                &sql,
                &[
                    (&words, Type::TEXT_ARRAY),
                    (&phrases, Type::TEXT_ARRAY),
                    (&pattern, Type::TEXT),
                    (&dir, Type::TEXT),
                    (&opts, Type::TEXT),
                    (&limit, Type::INT8),
                ],
            )?)
        })?;
        Ok(rows
            .iter()
            .map(|r| {
                let text: String = r.get(9);
                let (snippet, marks) = match query {
                    TextQuery::Regex(re) => regex_snippet(&text, re),
                    TextQuery::Words { .. } => unmark(&text),
                };
                Hit {
                    path: SessionKey { dir: r.get(0), name: r.get(1) }.path(),
                    session_id: r.get(2),
                    session_name: r.get(3),
                    cwd: r.get(4),
                    entry_id: r.get(5),
                    entry_type: EntryType::parse(r.get(6)),
                    role: r.get::<_, Option<&str>>(7).map(Role::parse),
                    timestamp: r.get(8),
                    snippet,
                    marks,
                    on_active_path: false,
                    labels: vec![],
                    relevance: if r.get(10) { Relevance::Exact } else { Relevance::Fuzzy },
                }
            })
            .collect())
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
            .filter_map(|e| s.get_label(&e.id).map(|l| PathLabel { entry_id: e.id.to_string(), label: l.to_owned() }))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headlines_become_one_line_snippets_with_marks() {
        let (s, m) = unmark("  the \u{2}build\u{3} failed\n\non  \u{2}café\u{3} ");
        assert_eq!(s, "the build failed on café");
        assert_eq!(m, [[4, 9], [20, 24]]);
    }

    #[test]
    fn regex_snippets_center_on_the_match() {
        let body = format!("{}needle{}", "a".repeat(100), "b".repeat(100));
        let (s, m) = regex_snippet(&body, "NEED");
        assert_eq!(&s.chars().skip(m[0][0]).take(4).collect::<String>(), "need");
        assert_eq!(s.chars().count(), CONTEXT + 4 + CONTEXT);
        let (s, m) = regex_snippet("short text", "(unclosed");
        assert_eq!((s.as_str(), m.len()), ("short text", 0));
    }
}
