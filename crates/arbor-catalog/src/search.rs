//! Search over the text of every entry on every branch.
//!
//! A query is read as pi's picker reads it ([`arbor_tree::sessions::parse_query`]); an entry is a
//! hit when every token matches its text:
//!
//! - a token matches a word of the text: the word itself (`exact`), a word it
//!   begins (`prefix`), or a word that holds its characters in order and
//!   starts with its first one, as pi's fuzzy match scores them (`fuzzy`,
//!   the closest [`FUZZY_TERMS`] words of the catalog); a token of several
//!   words (`main.rs`) matches them next to each other; case and accents
//!   do not matter;
//! - a `"phrase"` is found in the text as it is, up to case and runs of
//!   whitespace (pi's rule), starting at a word;
//! - `re:REGEX` is matched against the text (case-insensitive).
//!
//! Hits are ranked by relevance (every token exact, then some only as a
//! prefix, then some only fuzzily), then by recency (the entry's time). The
//! full-text index finds the candidates in that order, so a search reads only
//! the entries it returns (and the phrases it must check); a regex, or a query
//! with no word in it, reads the sessions newest first and stops as soon as
//! no older session can change the answer.

use rusqlite::{params, Connection};
use serde_json::Value;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fs::File;

use arbor_log::reader::{parse_line, Parsed};
use arbor_log::scan::read_exact_at;
use arbor_log::{format_iso_ms, searchable_text, EntryType, Role};
use arbor_tree::{OpenMode, Session, SessionOptions};

use crate::catalog::Catalog;
use crate::lines::Lines;
use arbor_tree::sessions::{fuzzy_match, Hit, PathLabel, Query, Relevance, Scope, Token, TokenKind};

/// How many of the catalog's words a fuzzy token may stand for.
pub const FUZZY_TERMS: usize = 64;

/// What to search and how many hits to return.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// The sessions searched.
    pub scope: Scope,
    /// The most hits returned.
    pub limit: usize,
}

/// One token prepared for the index.
#[derive(Debug)]
struct Prepared {
    token: Token,
    /// The token's words, lowercased.
    words: Vec<String>,
    /// Words of the catalog the token matches fuzzily (a one-word fuzzy token only).
    fuzzy: Vec<String>,
}

impl Prepared {
    /// The full-text query for this token at a relevance level.
    fn fts(&self, level: Relevance) -> String {
        let quoted = format!("\"{}\"", self.token.value.replace('"', "\"\""));
        match (level, self.token.kind == TokenKind::Phrase || self.words.len() > 1) {
            (Relevance::Exact, _) => quoted,
            (Relevance::Prefix, _) | (Relevance::Fuzzy, true) => format!("{quoted} *"),
            (Relevance::Fuzzy, false) => {
                let mut parts = vec![format!("{quoted} *")];
                parts.extend(self.fuzzy.iter().map(|t| format!("\"{}\"", t.replace('"', "\"\""))));
                format!("({})", parts.join(" OR "))
            }
        }
    }
}

/// The words of a text, lowercased, with their byte ranges: runs of letters and digits.
fn words(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut it = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while it.peek().is_some_and(|(_, c)| !c.is_alphanumeric()) {
            it.next();
        }
        let (start, _) = *it.peek()?;
        let mut end = start;
        while let Some(&(i, c)) = it.peek() {
            if !c.is_alphanumeric() {
                break;
            }
            end = i + c.len_utf8();
            it.next();
        }
        Some((start, end))
    })
}

/// pi's `normalizeWhitespaceLower`.
fn normalize(s: &str) -> String {
    s.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs a search on a refreshed catalog.
pub(crate) fn run(cat: &Catalog, query: &Query, opts: &SearchOptions) -> rusqlite::Result<Vec<Hit>> {
    let mut s = Searcher { cat, conn: cat.conn(), opts, texts: Texts::default(), hits: vec![], seen: HashSet::new() };
    match query {
        Query::Tokens(tokens) if tokens.is_empty() => {}
        Query::Tokens(tokens) => {
            let prepared: Vec<Prepared> = tokens.iter().map(|t| s.prepare(t)).collect::<rusqlite::Result<_>>()?;
            let (indexed, unindexed): (Vec<&Prepared>, Vec<&Prepared>) =
                prepared.iter().partition(|p| !p.words.is_empty());
            let check = Check {
                phrases: phrases(&prepared),
                substrings: unindexed.iter().map(|p| p.token.value.to_lowercase()).collect(),
            };
            if indexed.is_empty() {
                s.scan(&|text: &str| check.accepts(text))?;
            } else {
                for level in [Relevance::Exact, Relevance::Prefix, Relevance::Fuzzy] {
                    if s.hits.len() >= opts.limit {
                        break;
                    }
                    if level == Relevance::Fuzzy && indexed.iter().all(|p| p.fuzzy.is_empty()) {
                        break;
                    }
                    let expr = indexed.iter().map(|p| p.fts(level)).collect::<Vec<_>>().join(" AND ");
                    s.fts(&expr, level, &check)?;
                }
            }
            let marker = Marker::Tokens(&prepared);
            s.finish(&marker)?;
            return Ok(s.hits.into_iter().map(|(h, _)| h).collect());
        }
        Query::Regex(re) => {
            s.scan(&|text: &str| re.is_match(text))?;
            s.finish(&Marker::Regex(re))?;
            return Ok(s.hits.into_iter().map(|(h, _)| h).collect());
        }
    }
    Ok(vec![])
}

/// The phrase tokens, normalized.
fn phrases(prepared: &[Prepared]) -> Vec<String> {
    prepared.iter().filter(|p| p.token.kind == TokenKind::Phrase).map(|p| normalize(&p.token.value)).collect()
}

/// What the index cannot decide: phrases (pi's rule: the normalized text holds
/// the normalized phrase) and tokens without a word (found as they are).
struct Check {
    phrases: Vec<String>,
    substrings: Vec<String>,
}

impl Check {
    fn accepts(&self, text: &str) -> bool {
        if self.phrases.is_empty() && self.substrings.is_empty() {
            return true;
        }
        let norm = normalize(text);
        self.phrases.iter().all(|p| norm.contains(p.as_str()))
            && self.substrings.iter().all(|s| norm.contains(s.as_str()))
    }
}

/// A candidate entry, before its text and path are read.
#[derive(Debug, Clone)]
struct Candidate {
    key: i64,
    session: i64,
    offset: i64,
    len: i64,
    entry_id: String,
    entry_type: EntryType,
    role: Option<Role>,
    relevance: Relevance,
}

struct Searcher<'a> {
    cat: &'a Catalog,
    conn: &'a Connection,
    opts: &'a SearchOptions,
    texts: Texts,
    /// Hits with their text, in rank order.
    hits: Vec<(Hit, String)>,
    seen: HashSet<i64>,
}

impl Searcher<'_> {
    fn prepare(&self, token: &Token) -> rusqlite::Result<Prepared> {
        let lower = token.value.to_lowercase();
        let words: Vec<String> = words(&lower).map(|(a, b)| lower[a..b].to_owned()).collect();
        let mut fuzzy = vec![];
        if token.kind == TokenKind::Fuzzy && words.len() == 1 {
            fuzzy = self.fuzzy_terms(&words[0])?;
        }
        Ok(Prepared { token: token.clone(), words, fuzzy })
    }

    /// The catalog's words that start with `word`'s first character and
    /// match it fuzzily (not as a prefix: those the index finds itself), best first.
    fn fuzzy_terms(&self, word: &str) -> rusqlite::Result<Vec<String>> {
        let Some(first) = word.chars().next() else { return Ok(vec![]) };
        let Some(next) = char::from_u32(first as u32 + 1) else { return Ok(vec![]) };
        let mut stmt = self.conn.prepare_cached("SELECT term FROM entry_vocab WHERE term >= ?1 AND term < ?2")?;
        let mut scored: Vec<(f64, String)> = vec![];
        let mut rows = stmt.query(params![first.to_string(), next.to_string()])?;
        while let Some(row) = rows.next()? {
            let term: String = row.get(0)?;
            if term.starts_with(word) {
                continue;
            }
            if let Some(score) = fuzzy_match(word, &term) {
                scored.push((score, term));
            }
        }
        scored.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        scored.truncate(FUZZY_TERMS);
        Ok(scored.into_iter().map(|(_, t)| t).collect())
    }

    /// Candidates from the index, newest first, until the limit.
    fn fts(&mut self, expr: &str, level: Relevance, check: &Check) -> rusqlite::Result<()> {
        let mut sql = "SELECT e.rowid, e.session, e.offset, e.len, e.entry_id, e.type, e.role \
                       FROM entry_text JOIN entries e ON e.rowid = entry_text.rowid"
            .to_owned();
        let dir = match &self.opts.scope {
            Scope::All => None,
            Scope::Dir(d) => {
                sql.push_str(" JOIN sessions s ON s.rowid = e.session");
                Some(d.clone())
            }
        };
        sql.push_str(" WHERE entry_text MATCH ?1");
        if dir.is_some() {
            sql.push_str(" AND s.dir = ?2");
        }
        sql.push_str(" ORDER BY entry_text.rowid DESC");
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = match &dir {
            None => stmt.query(params![expr])?,
            Some(d) => stmt.query(params![expr, d])?,
        };
        while self.hits.len() < self.opts.limit {
            let Some(row) = rows.next()? else { break };
            let c = Candidate {
                key: row.get(0)?,
                session: row.get(1)?,
                offset: row.get(2)?,
                len: row.get(3)?,
                entry_id: row.get(4)?,
                entry_type: EntryType::parse(&row.get::<_, String>(5)?),
                role: row.get::<_, Option<String>>(6)?.as_deref().map(Role::parse),
                relevance: level,
            };
            if !self.seen.insert(c.key) {
                continue;
            }
            let Some(text) = self.texts.read(self.cat, self.conn, &c)? else { continue };
            if check.accepts(&text) {
                let hit = self.hit(&c)?;
                self.hits.push((hit, text));
            }
        }
        Ok(())
    }

    /// Reads the scope's sessions newest first, keeping the newest `limit`
    /// entries whose text `accepts`; stops when no older session can hold a newer one.
    fn scan(&mut self, accepts: &dyn Fn(&str) -> bool) -> rusqlite::Result<()> {
        let mut sql = "SELECT rowid, max_key FROM sessions WHERE kind = 1 AND max_key IS NOT NULL".to_owned();
        if let Scope::Dir(_) = self.opts.scope {
            sql.push_str(" AND dir = ?1");
        }
        sql.push_str(" ORDER BY max_key DESC");
        let sessions: Vec<(i64, i64)> = {
            let mut stmt = self.conn.prepare(&sql)?;
            let map = |r: &rusqlite::Row| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?));
            let rows: rusqlite::Result<Vec<(i64, i64)>> = match &self.opts.scope {
                Scope::All => stmt.query_map([], map)?.collect(),
                Scope::Dir(d) => stmt.query_map([d], map)?.collect(),
            };
            rows?
        };
        let mut found: Vec<(Candidate, String)> = vec![];
        for (session, max_key) in sessions {
            if found.len() >= self.opts.limit && found.last().is_some_and(|(c, _)| c.key > max_key) {
                break;
            }
            for (c, text) in self.texts.session(self.cat, self.conn, session)? {
                if accepts(&text) {
                    found.push((c, text));
                }
            }
            found.sort_by_key(|f| std::cmp::Reverse(f.0.key));
            found.truncate(self.opts.limit);
        }
        for (c, text) in found {
            let hit = self.hit(&c)?;
            self.hits.push((hit, text));
        }
        Ok(())
    }

    /// A hit without its snippet (made in [`Searcher::finish`]).
    fn hit(&mut self, c: &Candidate) -> rusqlite::Result<Hit> {
        let (on_active_path, labels) = self.texts.path_of(self.conn, c.session, &c.entry_id)?;
        let s = self.texts.session_info(self.conn, c.session)?;
        Ok(Hit {
            path: self.cat.path_of(&s.rel),
            session_id: s.id.clone(),
            session_name: s.name.clone(),
            cwd: s.cwd.clone(),
            entry_id: c.entry_id.clone(),
            entry_type: c.entry_type.clone(),
            role: c.role.clone(),
            timestamp: format_iso_ms(c.key >> 16),
            snippet: String::new(),
            marks: vec![],
            on_active_path,
            labels,
            relevance: c.relevance,
        })
    }

    fn finish(&mut self, marker: &Marker) -> rusqlite::Result<()> {
        for (hit, text) in &mut self.hits {
            let spans = marker.spans(text);
            (hit.snippet, hit.marks) = snippet(text, &spans);
        }
        Ok(())
    }
}

/// What to mark in a hit's text.
enum Marker<'a> {
    Tokens(&'a [Prepared]),
    Regex(&'a regex::Regex),
}

impl Marker<'_> {
    /// The byte ranges of the matches in `text`, sorted.
    fn spans(&self, text: &str) -> Vec<(usize, usize)> {
        let mut spans = vec![];
        match self {
            Marker::Regex(re) => {
                spans.extend(re.find_iter(text).filter(|m| !m.is_empty()).map(|m| (m.start(), m.end())))
            }
            Marker::Tokens(tokens) => {
                for (a, b) in words(text) {
                    let w = text[a..b].to_lowercase();
                    let hit = tokens.iter().any(|p| {
                        p.token.kind == TokenKind::Fuzzy
                            && (p.words.iter().any(|t| w.starts_with(t.as_str())) || p.fuzzy.contains(&w))
                    });
                    if hit {
                        spans.push((a, b));
                    }
                }
                for p in tokens.iter().filter(|p| p.token.kind == TokenKind::Phrase || p.words.is_empty()) {
                    let parts: Vec<String> = p.token.value.split_whitespace().map(regex::escape).collect();
                    if let Ok(re) = regex::RegexBuilder::new(&parts.join(r"\s+")).case_insensitive(true).build() {
                        spans.extend(re.find_iter(text).filter(|m| !m.is_empty()).map(|m| (m.start(), m.end())));
                    }
                }
            }
        }
        spans.sort_unstable();
        spans
    }
}

/// Characters of context before the first match, and in the whole snippet.
const BEFORE: usize = 50;
const WIDTH: usize = 180;

/// The text around the first match, on one line, and the matches in it (character ranges).
fn snippet(text: &str, spans: &[(usize, usize)]) -> (String, Vec<[usize; 2]>) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let char_at = |byte: usize| chars.partition_point(|&(i, _)| i < byte);
    let first = spans.first().map_or(0, |&(a, _)| char_at(a));
    let start = first.saturating_sub(BEFORE);
    let end = (start + WIDTH).min(chars.len());
    let mut out = String::new();
    let lead = usize::from(start > 0);
    if start > 0 {
        out.push('…');
    }
    out.extend(chars[start..end].iter().map(|&(_, c)| if c.is_whitespace() { ' ' } else { c }));
    if end < chars.len() {
        out.push('…');
    }
    let marks = spans
        .iter()
        .map(|&(a, b)| (char_at(a), char_at(b)))
        .filter(|&(a, b)| a >= start && b <= end && a < b)
        .map(|(a, b)| [a - start + lead, b - start + lead])
        .collect();
    (out, marks)
}

/// What a search reads of a session.
#[derive(Debug)]
struct SessionRow {
    rel: String,
    id: String,
    cwd: String,
    name: Option<String>,
    indexed: i64,
}

/// Reads entries' text from the session files, and the catalog's view of
/// each session (its row, its tree and labels), once per session.
#[derive(Default)]
struct Texts {
    files: HashMap<i64, Option<File>>,
    legacy: HashMap<i64, Option<Session>>,
    rows: HashMap<i64, SessionRow>,
    trees: HashMap<i64, Tree>,
}

/// A session's tree as the catalog holds it: parents, labels, the leaf's path.
#[derive(Debug, Default)]
struct Tree {
    parent: HashMap<String, Option<String>>,
    labels: HashMap<String, String>,
    active: HashSet<String>,
}

impl Texts {
    fn session_info(&mut self, conn: &Connection, session: i64) -> rusqlite::Result<&SessionRow> {
        match self.rows.entry(session) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let sql = "SELECT rel, id, cwd, name, indexed FROM sessions WHERE rowid = ?1";
                let row = conn.query_row(sql, [session], |r| {
                    Ok(SessionRow {
                        rel: r.get(0)?,
                        id: r.get(1)?,
                        cwd: r.get(2)?,
                        name: r.get(3)?,
                        indexed: r.get(4)?,
                    })
                })?;
                Ok(e.insert(row))
            }
        }
    }

    /// The text of a candidate, read from its file; `None` when the file no
    /// longer holds that entry there (it changed since the refresh).
    fn read(&mut self, cat: &Catalog, conn: &Connection, c: &Candidate) -> rusqlite::Result<Option<String>> {
        let rel = self.session_info(conn, c.session)?.rel.clone();
        let path = cat.path_of(&rel);
        if c.offset < 0 {
            let s = self.legacy.entry(c.session).or_insert_with(|| {
                let opts = SessionOptions { index_dir: None, ..Default::default() };
                Session::open(&path, OpenMode::ReadOnly, opts).ok()
            });
            let Some(s) = s else { return Ok(None) };
            let Some(i) = s.position_of(&c.entry_id) else { return Ok(None) };
            return Ok(s.with_json_at(i, |j| arbor_log::json::parse(j).ok().map(|v| searchable_text(&v))).flatten());
        }
        let file = self.files.entry(c.session).or_insert_with(|| File::open(&path).ok());
        let Some(file) = file else { return Ok(None) };
        let Ok(bytes) = read_exact_at(file, c.offset as u64, c.len as usize) else { return Ok(None) };
        let Parsed::Object(v) = parse_line(&bytes).0 else { return Ok(None) };
        if v.get("id").and_then(Value::as_str) != Some(c.entry_id.as_str()) {
            return Ok(None);
        }
        Ok(Some(searchable_text(&v)))
    }

    /// Every entry of a session with text, with its text (for a scan).
    fn session(
        &mut self,
        cat: &Catalog,
        conn: &Connection,
        session: i64,
    ) -> rusqlite::Result<Vec<(Candidate, String)>> {
        let mut stmt = conn.prepare_cached(
            "SELECT rowid, offset, len, entry_id, type, role FROM entries WHERE session = ?1 ORDER BY pos",
        )?;
        let candidates: Vec<Candidate> = stmt
            .query_map([session], |r| {
                Ok(Candidate {
                    key: r.get(0)?,
                    session,
                    offset: r.get(1)?,
                    len: r.get(2)?,
                    entry_id: r.get(3)?,
                    entry_type: EntryType::parse(&r.get::<_, String>(4)?),
                    role: r.get::<_, Option<String>>(5)?.as_deref().map(Role::parse),
                    relevance: Relevance::Exact,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let row = self.session_info(conn, session)?;
        let (rel, indexed) = (row.rel.clone(), row.indexed);
        if candidates.first().is_some_and(|c| c.offset < 0) {
            let mut out = vec![];
            for c in candidates {
                if let Some(text) = self.read(cat, conn, &c)?.filter(|t| !t.is_empty()) {
                    out.push((c, text));
                }
            }
            return Ok(out);
        }
        // One pass over the file instead of a read per entry.
        let by_offset: HashMap<i64, Candidate> = candidates.into_iter().map(|c| (c.offset, c)).collect();
        let Ok(file) = File::open(cat.path_of(&rel)) else { return Ok(vec![]) };
        let mut lines = Lines::new(&file, 0, indexed as u64);
        let mut out = vec![];
        let mut take = |offset: u64, bytes: &[u8]| {
            let Some(c) = by_offset.get(&(offset as i64)) else { return };
            let Parsed::Object(v) = parse_line(bytes).0 else { return };
            if v.get("id").and_then(Value::as_str) != Some(c.entry_id.as_str()) {
                return;
            }
            let text = searchable_text(&v);
            if !text.is_empty() {
                out.push((c.clone(), text));
            }
        };
        while let Ok(Some(line)) = lines.next_line() {
            take(line.offset, line.bytes);
        }
        let (at, rest) = lines.rest();
        if !rest.is_empty() {
            take(at, rest);
        }
        Ok(out)
    }

    /// Whether an entry is on its session's active path, and the labels on its path (root first).
    fn path_of(&mut self, conn: &Connection, session: i64, id: &str) -> rusqlite::Result<(bool, Vec<PathLabel>)> {
        let tree = match self.trees.entry(session) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(load_tree(conn, session)?),
        };
        let mut labels = vec![];
        let mut seen = HashSet::new();
        let mut cur = Some(id.to_owned());
        while let Some(at) = cur {
            if !seen.insert(at.clone()) {
                break;
            }
            if let Some(l) = tree.labels.get(&at) {
                labels.push(PathLabel { entry_id: at.clone(), label: l.clone() });
            }
            cur = tree.parent.get(&at).cloned().flatten();
        }
        labels.reverse();
        Ok((tree.active.contains(id), labels))
    }
}

/// A session's parents and labels, and the path from its leaf (the last entry in the file).
fn load_tree(conn: &Connection, session: i64) -> rusqlite::Result<Tree> {
    let mut tree = Tree::default();
    let mut stmt = conn.prepare_cached("SELECT entry_id, parent_id FROM entries WHERE session = ?1 ORDER BY pos")?;
    let mut leaf = None;
    for row in stmt.query_map([session], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?)))? {
        let (id, parent) = row?;
        tree.parent.insert(id.clone(), parent);
        leaf = Some(id);
    }
    let mut stmt = conn.prepare_cached("SELECT target, label FROM labels WHERE session = ?1")?;
    for row in stmt.query_map([session], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))? {
        let (target, label) = row?;
        tree.labels.insert(target, label);
    }
    let mut cur = leaf;
    while let Some(at) = cur {
        if !tree.active.insert(at.clone()) {
            break;
        }
        cur = tree.parent.get(&at).cloned().flatten();
    }
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_runs_of_letters_and_digits() {
        let t = "src/main.rs: Größe 42x, 日本語 ok";
        let w: Vec<&str> = words(t).map(|(a, b)| &t[a..b]).collect();
        assert_eq!(w, ["src", "main", "rs", "Größe", "42x", "日本語", "ok"]);
    }

    #[test]
    fn snippets_mark_matches_in_characters() {
        let text = "é\nhello world";
        let (s, marks) = snippet(text, &[(text.find("world").unwrap_or(0), text.len())]);
        assert_eq!(s, "é hello world");
        assert_eq!(marks, vec![[8, 13]]);
        let long = format!("{}needle{}", "x".repeat(100), "y".repeat(300));
        let (s, marks) = snippet(&long, &[(100, 106)]);
        assert!(s.starts_with('…') && s.ends_with('…'));
        let m = marks[0];
        assert_eq!(s.chars().skip(m[0]).take(m[1] - m[0]).collect::<String>(), "needle");
    }
}
