//! The session picker as a pure state machine: the sessions of a scope
//! (newest first), a query typed into it, the sessions and entry hits that
//! match, and the selection. No terminal, no catalog: [`super`] feeds it,
//! hits as the search finds them.
//!
//! For a query the rows are: the sessions whose text holds it (in the order
//! of their hits: newest first), then the entry hits, then the sessions that
//! match only on their id, name, first message or cwd (pi's rule, best
//! first). The selection stays on the row it is on while hits come in.

use std::path::PathBuf;

use arbor_tree::listing::SessionListInfo;
use arbor_tree::sessions::{fuzzy_match, parse_query, Hit, Query, TokenKind};

/// A key, as the picker reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input {
    Char(char),
    Backspace,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Enter,
    Escape,
    /// Between the current directory's sessions and every session.
    Tab,
    /// Clears the query (Ctrl+U).
    Clear,
}

/// What the caller must do after an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    None,
    Quit,
    /// The query changed: search the entries again.
    QueryChanged,
    /// The scope changed: list the sessions again.
    ScopeChanged,
    /// Open a session, at an entry when a hit was picked.
    Open {
        path: PathBuf,
        at: Option<String>,
    },
}

/// One line of the list.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Row<'a> {
    Session(&'a SessionListInfo),
    Hit(&'a Hit),
}

/// What a row is, to keep the selection on it while rows come in.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Session(PathBuf),
    Hit(PathBuf, String),
}

#[derive(Debug)]
pub(crate) struct Picker {
    all: Vec<SessionListInfo>,
    query: String,
    /// Indices into `all` of the sessions holding a hit, in the order of their first hit.
    holding: Vec<usize>,
    /// Indices into `all` of the sessions whose name, first message, cwd or id
    /// match (pi's rule), best first, without those in `holding`.
    sessions: Vec<usize>,
    hits: Vec<Hit>,
    selected: usize,
    /// The selected row, once the user moved to it.
    chosen: Option<Key>,
    scroll: usize,
    /// Rows the list shows at once.
    height: usize,
    pub scope_all: bool,
    /// A line for the footer (an invalid query, indexing progress).
    pub status: Option<String>,
}

impl Picker {
    pub fn new(all: Vec<SessionListInfo>, scope_all: bool, height: usize) -> Picker {
        let sessions = (0..all.len()).collect();
        Picker {
            all,
            query: String::new(),
            holding: vec![],
            sessions,
            hits: vec![],
            selected: 0,
            chosen: None,
            scroll: 0,
            height: height.max(1),
            scope_all,
            status: None,
        }
    }

    pub fn query(&self) -> &str {
        &self.query
    }

    pub fn set_height(&mut self, height: usize) {
        self.height = height.max(1);
        self.keep_in_view();
    }

    /// The sessions of a new scope (its hits come from a new search).
    pub fn set_sessions(&mut self, all: Vec<SessionListInfo>) {
        self.all = all;
        self.hits.clear();
        self.holding.clear();
        self.filter();
    }

    /// More entry hits for the current query (in the search's order); their
    /// sessions move up among the sessions that hold a hit.
    pub fn add_hits(&mut self, hits: Vec<Hit>) {
        for h in hits {
            if let Some(k) = self.all.iter().position(|s| s.path == h.path) {
                if !self.holding.contains(&k) {
                    self.holding.push(k);
                    self.sessions.retain(|&i| i != k);
                }
            }
            self.hits.push(h);
        }
        self.follow();
    }

    /// Keeps the selection on the row the user chose.
    fn follow(&mut self) {
        if let Some(key) = self.chosen.clone() {
            if let Some(i) = (0..self.len()).find(|&i| self.key(i).as_ref() == Some(&key)) {
                self.selected = i;
            }
        }
        self.clamp();
    }

    fn key(&self, i: usize) -> Option<Key> {
        Some(match self.row(i)? {
            Row::Session(s) => Key::Session(s.path.clone()),
            Row::Hit(h) => Key::Hit(h.path.clone(), h.entry_id.clone()),
        })
    }

    pub fn total(&self) -> usize {
        self.all.len()
    }

    pub fn len(&self) -> usize {
        self.holding.len() + self.hits.len() + self.sessions.len()
    }

    pub fn selected(&self) -> usize {
        self.selected
    }

    /// The rows in view and the index of the first.
    pub fn visible(&self) -> (usize, Vec<Row<'_>>) {
        let end = (self.scroll + self.height).min(self.len());
        (self.scroll, (self.scroll..end).filter_map(|i| self.row(i)).collect())
    }

    fn row(&self, i: usize) -> Option<Row<'_>> {
        let (a, b) = (self.holding.len(), self.holding.len() + self.hits.len());
        if i < a {
            self.all.get(self.holding[i]).map(Row::Session)
        } else if i < b {
            self.hits.get(i - a).map(Row::Hit)
        } else {
            self.sessions.get(i - b).and_then(|&k| self.all.get(k)).map(Row::Session)
        }
    }

    pub fn handle(&mut self, input: Input) -> Outcome {
        match input {
            Input::Char(c) => {
                self.query.push(c);
                self.edited()
            }
            Input::Backspace => {
                if self.query.pop().is_none() {
                    return Outcome::None;
                }
                self.edited()
            }
            Input::Clear => {
                if self.query.is_empty() {
                    return Outcome::None;
                }
                self.query.clear();
                self.edited()
            }
            Input::Up => self.move_to(self.selected.checked_sub(1).unwrap_or(self.len().saturating_sub(1))),
            Input::Down => self.move_to(if self.selected + 1 >= self.len() { 0 } else { self.selected + 1 }),
            Input::PageUp => self.move_to(self.selected.saturating_sub(self.height)),
            Input::PageDown => self.move_to((self.selected + self.height).min(self.len().saturating_sub(1))),
            Input::Home => self.move_to(0),
            Input::End => self.move_to(self.len().saturating_sub(1)),
            Input::Tab => {
                self.scope_all = !self.scope_all;
                Outcome::ScopeChanged
            }
            Input::Escape => Outcome::Quit,
            Input::Enter => match self.row(self.selected) {
                Some(Row::Session(s)) => Outcome::Open { path: s.path.clone(), at: None },
                Some(Row::Hit(h)) => Outcome::Open { path: h.path.clone(), at: Some(h.entry_id.clone()) },
                None => Outcome::None,
            },
        }
    }

    fn edited(&mut self) -> Outcome {
        self.hits.clear();
        self.holding.clear();
        self.filter();
        self.selected = 0;
        self.chosen = None;
        self.scroll = 0;
        Outcome::QueryChanged
    }

    fn move_to(&mut self, i: usize) -> Outcome {
        self.selected = i;
        self.chosen = self.key(i);
        self.keep_in_view();
        Outcome::None
    }

    fn clamp(&mut self) {
        self.selected = self.selected.min(self.len().saturating_sub(1));
        self.keep_in_view();
    }

    fn keep_in_view(&mut self) {
        if self.selected < self.scroll {
            self.scroll = self.selected;
        } else if self.selected >= self.scroll + self.height {
            self.scroll = self.selected + 1 - self.height;
        }
    }

    /// The sessions whose id, name, first message and cwd match the query,
    /// as pi's picker matches them (best score first, then newest); all of
    /// them, newest first, for an empty query.
    fn filter(&mut self) {
        self.status = None;
        let parsed = match parse_query(&self.query) {
            Ok(q) => q,
            Err(e) => {
                self.status = Some(format!("invalid query: {e}"));
                self.sessions.clear();
                self.clamp();
                return;
            }
        };
        let mut scored: Vec<(f64, usize)> = self
            .all
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let text = format!("{} {} {} {}", s.id, s.name.as_deref().unwrap_or(""), s.first_message, s.cwd);
                session_score(&parsed, &text).map(|score| (score, i))
            })
            .collect();
        // A stable sort keeps the newest-first order among equal scores.
        scored.sort_by(|a, b| a.0.total_cmp(&b.0));
        let holding = &self.holding;
        self.sessions = scored.into_iter().map(|(_, i)| i).filter(|i| !holding.contains(i)).collect();
        self.clamp();
    }
}

/// pi's `matchSession` score of one session's text (lower is better), `None` when it does not match.
fn session_score(query: &Query, text: &str) -> Option<f64> {
    match query {
        Query::Regex(re) => re.find(text).map(|m| text[..m.start()].encode_utf16().count() as f64 * 0.1),
        Query::Tokens(tokens) => {
            let mut total = 0.0;
            let mut normalized: Option<String> = None;
            for t in tokens {
                match t.kind {
                    TokenKind::Phrase => {
                        let norm = normalized.get_or_insert_with(|| normalize(text));
                        let phrase = normalize(&t.value);
                        if phrase.is_empty() {
                            continue;
                        }
                        let at = norm.find(&phrase)?;
                        total += norm[..at].encode_utf16().count() as f64 * 0.1;
                    }
                    TokenKind::Fuzzy => total += fuzzy_match(&t.value, text)?,
                }
            }
            Some(total)
        }
    }
}

fn normalize(s: &str) -> String {
    s.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn info(id: &str, name: Option<&str>, first: &str) -> SessionListInfo {
        SessionListInfo {
            path: PathBuf::from(format!("/s/{id}.jsonl")),
            id: id.to_owned(),
            cwd: "/home/me/proj".to_owned(),
            name: name.map(str::to_owned),
            parent_session_path: None,
            created: String::new(),
            modified: String::new(),
            message_count: 3,
            first_message: first.to_owned(),
            all_messages_text: String::new(),
        }
    }

    fn picker() -> Picker {
        Picker::new(
            vec![
                info("a1", Some("wordfreq cleanup"), "count words"),
                info("b2", None, "parse the config file"),
                info("c3", None, "fix the flaky test"),
            ],
            false,
            2,
        )
    }

    fn ids(p: &Picker) -> Vec<String> {
        (0..p.len())
            .filter_map(|i| match p.row(i)? {
                Row::Session(s) => Some(s.id.clone()),
                Row::Hit(h) => Some(format!("hit:{}", h.entry_id)),
            })
            .collect()
    }

    #[test]
    fn typing_filters_newest_first_and_enter_opens() {
        let mut p = picker();
        assert_eq!(ids(&p), ["a1", "b2", "c3"]);
        for c in "config".chars() {
            assert_eq!(p.handle(Input::Char(c)), Outcome::QueryChanged);
        }
        assert_eq!(ids(&p), ["b2"]);
        assert_eq!(p.handle(Input::Enter), Outcome::Open { path: PathBuf::from("/s/b2.jsonl"), at: None });
        for _ in 0..6 {
            p.handle(Input::Backspace);
        }
        assert_eq!(p.query(), "");
        assert_eq!(ids(&p), ["a1", "b2", "c3"]);
        assert_eq!(p.handle(Input::Backspace), Outcome::None);
    }

    #[test]
    fn moving_wraps_and_scrolls() {
        let mut p = picker();
        p.handle(Input::Up);
        assert_eq!(p.selected(), 2);
        assert_eq!(p.visible().0, 1, "the selection stays in view");
        p.handle(Input::Down);
        assert_eq!((p.selected(), p.visible().0), (0, 0));
        p.handle(Input::End);
        assert_eq!(p.selected(), 2);
        assert_eq!(p.handle(Input::Tab), Outcome::ScopeChanged);
        assert!(p.scope_all);
        assert_eq!(p.handle(Input::Escape), Outcome::Quit);
    }

    fn hit(session: &str, id: &str) -> Hit {
        Hit {
            path: PathBuf::from(format!("/s/{session}.jsonl")),
            session_id: session.to_owned(),
            session_name: None,
            cwd: "/home/me/proj".to_owned(),
            entry_id: id.to_owned(),
            entry_type: arbor_log::EntryType::Message,
            role: None,
            timestamp: String::new(),
            snippet: "frobnicator".to_owned(),
            marks: vec![],
            on_active_path: true,
            labels: vec![],
            relevance: arbor_tree::sessions::Relevance::Exact,
        }
    }

    #[test]
    fn sessions_holding_the_word_come_first_then_hits_then_the_rest() {
        let mut p = picker();
        for c in "/home".chars() {
            p.handle(Input::Char(c));
        }
        // pi's rule matches every session (each cwd holds it), in its order.
        let before = ids(&p);
        assert_eq!(before.len(), 3);
        p.add_hits(vec![hit("c3", "e1")]);
        let rest: Vec<String> = before.iter().filter(|i| *i != "c3").cloned().collect();
        assert_eq!(ids(&p), [vec!["c3".to_owned(), "hit:e1".to_owned()], rest.clone()].concat());
        p.add_hits(vec![hit("c3", "e2"), hit("a1", "e3")]);
        let rest: Vec<String> = rest.into_iter().filter(|i| i != "a1").collect();
        let head = ["c3", "a1", "hit:e1", "hit:e2", "hit:e3"].map(str::to_owned).to_vec();
        assert_eq!(ids(&p), [head, rest].concat());
    }

    #[test]
    fn the_selection_stays_on_its_row_while_hits_come_in() {
        let mut p = picker();
        p.handle(Input::Char('c'));
        p.add_hits(vec![hit("c3", "e1")]);
        p.handle(Input::Down);
        assert_eq!(p.key(p.selected()), Some(Key::Hit(PathBuf::from("/s/c3.jsonl"), "e1".into())));
        p.add_hits(vec![hit("b2", "e9")]);
        assert_eq!(p.key(p.selected()), Some(Key::Hit(PathBuf::from("/s/c3.jsonl"), "e1".into())));
        assert_eq!(p.handle(Input::Clear), Outcome::QueryChanged);
        assert_eq!((p.query(), ids(&p).len(), p.selected()), ("", 3, 0));
        assert_eq!(p.handle(Input::Clear), Outcome::None);
    }

    #[test]
    fn phrases_regexes_and_bad_queries() {
        let mut p = picker();
        for c in "\"flaky test\"".chars() {
            p.handle(Input::Char(c));
        }
        assert_eq!(ids(&p), ["c3"]);
        let mut p = picker();
        for c in "re:(".chars() {
            p.handle(Input::Char(c));
        }
        assert!(ids(&p).is_empty());
        assert!(p.status.as_deref().unwrap().starts_with("invalid query"));
    }
}
