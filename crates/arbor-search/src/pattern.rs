//! A query compiled for a scan: what the raw bytes of a line must hold for
//! the line to be decoded, what an entry's text must hold to be a hit, and
//! what a range's gram filter must hold for the range to be read.
//!
//! Every part is a consequence of the one before it: an entry whose text
//! holds the query is on a line whose bytes hold each literal's escaped form
//! (or on a line with odd escapes, which is always decoded, see
//! [`crate::escape`]), in a range whose filter holds the literal's grams. So
//! the scan skips only what cannot be a hit.

use regex_syntax::hir::{Hir, HirKind};

use crate::escape::escaped;
use crate::fold::{Case, Literal};
use crate::grams::Need;
use arbor_tree::sessions::{fuzzy_match, Query, TokenKind};

/// The longest query, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;
/// The most words a query may hold (tokens and the words of its phrases).
pub const MAX_QUERY_WORDS: usize = 256;
/// The most memory a `re:` pattern's compiled form may take.
const REGEX_SIZE_LIMIT: usize = 4 << 20;

/// Why a query cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// It does not parse (an empty or invalid `re:` pattern).
    #[error("{0}")]
    Syntax(String),
    /// It is longer than a search allows.
    #[error("the query is too long ({0}); at most {MAX_QUERY_BYTES} bytes and {MAX_QUERY_WORDS} words")]
    TooLong(String),
}

/// What a line's raw bytes must hold.
#[derive(Debug, Clone)]
pub(crate) enum Raw {
    Anything,
    /// A literal's escaped form, matched by the case rule; its length.
    Lit(Box<regex::bytes::Regex>, usize),
    All(Vec<Raw>),
    Any(Vec<Raw>),
}

impl Raw {
    pub fn holds(&self, line: &[u8]) -> bool {
        match self {
            Raw::Anything => true,
            Raw::Lit(re, _) => re.is_match(line),
            Raw::All(v) => v.iter().all(|r| r.holds(line)),
            Raw::Any(v) => v.iter().any(|r| r.holds(line)),
        }
    }
}

/// One token or phrase of a query: every one must match an entry.
#[derive(Debug, Clone)]
struct Term {
    /// A token's text (it may also match an entry's or its session's id); `None` for a phrase.
    token: Option<String>,
    /// Matches the term in an entry's text.
    text: regex::Regex,
    raw: Raw,
    need: Need,
}

#[derive(Debug, Clone)]
enum Kind {
    Terms(Vec<Term>),
    Regex { re: regex::Regex, raw: Raw, need: Need },
}

/// A compiled query (see the module docs).
#[derive(Debug, Clone)]
pub struct Pattern {
    kind: Kind,
    /// A raw matcher that finds candidate lines in a buffer fast, when there is one.
    lead: Option<regex::bytes::Regex>,
}

/// Literal text of a query compiled for the text, the raw bytes and the filter.
fn compile_literal(text: &str, case: Case) -> Result<(Raw, Need), PatternError> {
    let esc = escaped(text);
    let lit = Literal::new(&esc, case);
    let re = regex::bytes::RegexBuilder::new(&lit.pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| PatternError::Syntax(e.to_string()))?;
    Ok((Raw::Lit(Box::new(re), esc.len()), Need::literal(&lit.bytes, &lit.safe)))
}

fn text_regex(source: &str, case_insensitive: bool) -> Result<regex::Regex, PatternError> {
    regex::RegexBuilder::new(source)
        .case_insensitive(case_insensitive)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| PatternError::Syntax(e.to_string().lines().last().unwrap_or_default().trim().to_owned()))
}

impl Pattern {
    /// Compiles a parsed query; `None` for a query that matches everything (no tokens).
    pub fn new(query: &Query) -> Result<Option<Pattern>, PatternError> {
        let kind = match query {
            Query::Tokens(tokens) if tokens.is_empty() => return Ok(None),
            Query::Tokens(tokens) => {
                let words: usize = tokens.iter().map(|t| t.value.split_whitespace().count()).sum();
                if words > MAX_QUERY_WORDS {
                    return Err(PatternError::TooLong(format!("{words} words")));
                }
                let mut terms = vec![];
                for t in tokens {
                    terms.push(match t.kind {
                        TokenKind::Fuzzy => {
                            let (raw, need) = compile_literal(&t.value, Case::Words)?;
                            let text = text_regex(&Literal::new(&t.value, Case::Words).pattern, false)?;
                            Term { token: Some(t.value.clone()), text, raw, need }
                        }
                        TokenKind::Phrase => {
                            let mut raws = vec![];
                            let mut needs = vec![];
                            let mut parts = vec![];
                            for w in t.value.split_whitespace() {
                                let (raw, need) = compile_literal(w, Case::Words)?;
                                raws.push(raw);
                                needs.push(need);
                                parts.push(Literal::new(w, Case::Words).pattern);
                            }
                            let text = text_regex(&parts.join(r"\s+"), false)?;
                            Term { token: None, text, raw: Raw::All(raws), need: Need::all(needs) }
                        }
                    });
                }
                Kind::Terms(terms)
            }
            Query::Regex(re) => {
                let hir = regex_syntax::ParserBuilder::new()
                    .build()
                    .parse(re.as_str())
                    .map_err(|e| PatternError::Syntax(e.to_string()))?;
                let (raw, need) = required(&hir)?;
                Kind::Regex { re: text_regex(re.as_str(), true)?, raw, need }
            }
        };
        let lead = lead_of(&kind)?;
        Ok(Some(Pattern { kind, lead }))
    }

    /// What a range's filter must hold for the range to hold a hit.
    pub fn need(&self) -> Need {
        match &self.kind {
            Kind::Terms(terms) => Need::all(terms.iter().map(|t| t.need.clone()).collect()),
            Kind::Regex { need, .. } => need.clone(),
        }
    }

    /// The pattern as it applies to the entries of the session with id `session_id`.
    pub fn in_session(&self, session_id: &str) -> InSession<'_> {
        let given = match &self.kind {
            Kind::Terms(terms) => {
                terms.iter().map(|t| t.token.as_deref().is_some_and(|v| names(v, session_id))).collect()
            }
            Kind::Regex { .. } => vec![],
        };
        let all_given = !given.is_empty() && given.iter().all(|&g| g);
        InSession {
            pattern: self,
            lead: if given.contains(&true) { None } else { self.lead.as_ref() },
            given,
            all_given,
        }
    }

    /// True when the query is tokens and phrases (it has a fuzzy form).
    pub fn has_tokens(&self) -> bool {
        matches!(&self.kind, Kind::Terms(terms) if terms.iter().any(|t| t.token.is_some()))
    }
}

/// True when token `v` names id `id`: the whole id, or (for a session) its first 8 or more characters.
fn names(v: &str, id: &str) -> bool {
    v.len() >= 8 && id.len() >= v.len() && id.as_bytes()[..v.len()].eq_ignore_ascii_case(v.as_bytes())
}

/// The matcher that finds candidate lines in a buffer: the longest literal
/// every match needs, or every literal of which one is needed.
fn lead_of(kind: &Kind) -> Result<Option<regex::bytes::Regex>, PatternError> {
    let raw = match kind {
        Kind::Terms(terms) => {
            let all: Vec<&Raw> = terms.iter().flat_map(|t| flat_all(&t.raw)).collect();
            longest(&all).cloned()
        }
        Kind::Regex { raw, .. } => match raw {
            Raw::Lit(re, _) => Some((**re).clone()),
            Raw::All(v) => longest(&v.iter().collect::<Vec<_>>()).cloned(),
            Raw::Any(v) if v.iter().all(|r| matches!(r, Raw::Lit(..))) => {
                let parts: Vec<String> = v
                    .iter()
                    .filter_map(|r| match r {
                        Raw::Lit(re, _) => Some(format!("(?:{})", re.as_str())),
                        _ => None,
                    })
                    .collect();
                let re = regex::bytes::RegexBuilder::new(&parts.join("|"))
                    .size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .map_err(|e| PatternError::Syntax(e.to_string()))?;
                Some(re)
            }
            _ => None,
        },
    };
    Ok(raw)
}

fn flat_all(r: &Raw) -> Vec<&Raw> {
    match r {
        Raw::All(v) => v.iter().flat_map(flat_all).collect(),
        r => vec![r],
    }
}

fn longest<'a>(raws: &[&'a Raw]) -> Option<&'a regex::bytes::Regex> {
    raws.iter()
        .filter_map(|r| match r {
            Raw::Lit(re, len) => Some((&**re, *len)),
            _ => None,
        })
        .max_by_key(|(_, len)| *len)
        .map(|(re, _)| re)
}

/// The literals every match of a regex holds (as raw requirements and filter needs).
fn required(hir: &Hir) -> Result<(Raw, Need), PatternError> {
    Ok(match hir.kind() {
        HirKind::Literal(lit) => match std::str::from_utf8(&lit.0) {
            Ok(s) => literal_parts(s)?,
            Err(_) => (Raw::Anything, Need::Anything),
        },
        HirKind::Capture(c) => required(&c.sub)?,
        HirKind::Repetition(r) if r.min > 0 => required(&r.sub)?,
        HirKind::Concat(subs) => {
            let (mut raws, mut needs) = (vec![], vec![]);
            let mut run: Vec<u8> = vec![];
            let flush = |run: &mut Vec<u8>, raws: &mut Vec<Raw>, needs: &mut Vec<Need>| -> Result<(), PatternError> {
                if let Ok(s) = std::str::from_utf8(run) {
                    let (r, n) = literal_parts(s)?;
                    raws.push(r);
                    needs.push(n);
                }
                run.clear();
                Ok(())
            };
            for sub in subs {
                if let HirKind::Literal(lit) = sub.kind() {
                    run.extend_from_slice(&lit.0);
                    continue;
                }
                flush(&mut run, &mut raws, &mut needs)?;
                let (r, n) = required(sub)?;
                raws.push(r);
                needs.push(n);
            }
            flush(&mut run, &mut raws, &mut needs)?;
            (raw_all(raws), Need::all(needs))
        }
        HirKind::Alternation(subs) => {
            let (mut raws, mut needs) = (vec![], vec![]);
            for sub in subs {
                let (r, n) = required(sub)?;
                if matches!(r, Raw::Anything) {
                    return Ok((Raw::Anything, Need::Anything));
                }
                raws.push(r);
                needs.push(n);
            }
            (Raw::Any(raws), Need::any(needs))
        }
        _ => (Raw::Anything, Need::Anything),
    })
}

/// A literal of a regex: its parts between line ends (an entry's text joins its pieces with them).
fn literal_parts(s: &str) -> Result<(Raw, Need), PatternError> {
    let (mut raws, mut needs) = (vec![], vec![]);
    for part in s.split('\n').filter(|p| !p.is_empty()) {
        let (r, n) = compile_literal(part, Case::Unicode)?;
        raws.push(r);
        needs.push(n);
    }
    Ok((raw_all(raws), Need::all(needs)))
}

fn raw_all(raws: Vec<Raw>) -> Raw {
    let mut out: Vec<Raw> = raws.into_iter().filter(|r| !matches!(r, Raw::Anything)).collect();
    match out.len() {
        0 => Raw::Anything,
        1 => out.pop().unwrap_or(Raw::Anything),
        _ => Raw::All(out),
    }
}

/// A compiled query as it applies to one session's entries.
#[derive(Debug)]
pub struct InSession<'p> {
    pattern: &'p Pattern,
    /// The terms the session's id satisfies.
    given: Vec<bool>,
    all_given: bool,
    lead: Option<&'p regex::bytes::Regex>,
}

/// Byte ranges of the text an entry matched at.
pub(crate) type Spans = Vec<(usize, usize)>;

impl InSession<'_> {
    /// The matcher for candidate lines in a buffer; `None`: every line is one.
    pub(crate) fn lead(&self) -> Option<&regex::bytes::Regex> {
        if self.all_given {
            return None;
        }
        self.lead
    }

    /// True when a token names the session (its id): every entry of it may match.
    pub fn names_session(&self) -> bool {
        self.given.contains(&true)
    }

    /// True when a line's raw bytes may hold a hit.
    pub(crate) fn line_may_match(&self, line: &[u8]) -> bool {
        match &self.pattern.kind {
            Kind::Terms(terms) => terms.iter().zip(&self.given).all(|(t, &g)| g || t.raw.holds(line)),
            Kind::Regex { raw, .. } => raw.holds(line),
        }
    }

    /// The spans where an entry with text `text` and id `entry_id` matches
    /// exactly, or `None` when it does not match.
    pub(crate) fn exact(&self, text: &str, entry_id: &str) -> Option<Spans> {
        let mut spans = vec![];
        match &self.pattern.kind {
            Kind::Regex { re, .. } => {
                let mut any = false;
                for m in re.find_iter(text) {
                    any = true;
                    if !m.is_empty() {
                        spans.push((m.start(), m.end()));
                    }
                }
                any.then_some(())?;
            }
            Kind::Terms(terms) => {
                for (t, &given) in terms.iter().zip(&self.given) {
                    let before = spans.len();
                    spans.extend(t.text.find_iter(text).map(|m| (m.start(), m.end())));
                    let by_id = t.token.as_deref().is_some_and(|v| v.eq_ignore_ascii_case(entry_id));
                    if spans.len() == before && !by_id && !given {
                        return None;
                    }
                }
            }
        }
        spans.sort_unstable();
        Some(spans)
    }

    /// The spans where an entry matches when tokens may also match words
    /// fuzzily (pi's fuzzy match, from the word's first character); `None`
    /// when it does not match even so. Phrases and regexes match only exactly.
    pub(crate) fn fuzzy(&self, text: &str, entry_id: &str) -> Option<Spans> {
        let Kind::Terms(terms) = &self.pattern.kind else { return None };
        let mut spans = vec![];
        for (t, &given) in terms.iter().zip(&self.given) {
            let before = spans.len();
            spans.extend(t.text.find_iter(text).map(|m| (m.start(), m.end())));
            let Some(v) = t.token.as_deref() else {
                if spans.len() == before {
                    return None;
                }
                continue;
            };
            if spans.len() == before && !given && !v.eq_ignore_ascii_case(entry_id) {
                spans.extend(fuzzy_words(v, text));
                if spans.len() == before {
                    return None;
                }
            }
        }
        spans.sort_unstable();
        Some(spans)
    }
}

/// The words of `text` that `token` matches fuzzily: those that start with
/// its first character and hold the rest in order (pi's `fuzzyMatch`).
fn fuzzy_words(token: &str, text: &str) -> Vec<(usize, usize)> {
    let Some(first) = token.chars().next() else { return vec![] };
    let first: Vec<char> = first.to_lowercase().collect();
    words(text)
        .filter(|&(a, b)| {
            let w = &text[a..b];
            w.chars().next().is_some_and(|c| c.to_lowercase().eq(first.iter().copied()))
                && fuzzy_match(token, w).is_some()
        })
        .collect()
}

/// The words of a text with their byte ranges: runs of letters and digits.
pub(crate) fn words(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
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

/// Checks a query's size before it is parsed.
pub fn check_size(query: &str) -> Result<(), PatternError> {
    let q = query.trim();
    if q.len() > MAX_QUERY_BYTES {
        return Err(PatternError::TooLong(format!("{} bytes", q.len())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use arbor_tree::sessions::parse_query as parse;

    fn pattern(q: &str) -> Pattern {
        Pattern::new(&parse(q).unwrap()).unwrap().unwrap()
    }

    #[test]
    fn tokens_phrases_and_ids() {
        let p = pattern(r#"Open "claw backup""#);
        let s = p.in_session("sess");
        assert!(s.line_may_match(br#"{"text":"OPENclaw-Backup.git claw\nbackup"}"#));
        assert!(!s.line_may_match(br#"{"text":"open claw"}"#));
        assert_eq!(s.exact("OPENclaw claw\n backup", "e1"), Some(vec![(0, 4), (9, 21)]));
        assert_eq!(s.exact("openclaw clawbackup", "e1"), None);
        // An entry's id, and its session's id (or 8+ of its first characters), match a token.
        let p = pattern("ab12cd34");
        assert_eq!(p.in_session("x").exact("text", "AB12CD34"), Some(vec![]));
        assert_eq!(p.in_session("ab12cd34-0000").exact("text", "e"), Some(vec![]));
        assert!(p.in_session("ab12cd34-0000").lead().is_none());
        assert_eq!(pattern("ab12").in_session("ab12cd34").exact("text", "e"), None);
    }

    #[test]
    fn escapes_in_literals_are_looked_for_escaped() {
        let p = pattern(r#"say"hi C:\dir"#);
        let s = p.in_session("x");
        assert!(s.line_may_match(br#"{"t":"we say\"hi to C:\\dir"}"#));
        assert!(!s.line_may_match(br#"{"t":"we say hi to C:dir"}"#));
    }

    #[test]
    fn regexes_need_their_literals() {
        let p = pattern("re:foo(bar|baz)+q");
        let s = p.in_session("x");
        assert!(s.line_may_match(b"FOO baz q") && !s.line_may_match(b"foo q"));
        assert!(s.exact("fooBAZq", "e").is_some());
        assert!(s.lead().is_some());
        assert_eq!(p.need().grams().len(), 3, "foo, bar, baz");
        // No literal: every line is read.
        let p = pattern(r"re:\d+");
        assert!(p.in_session("x").line_may_match(b"abc") && p.in_session("x").lead().is_none());
        assert!(!p.need().selects());
        // A literal across an entry's pieces needs each part.
        let p = pattern("re:end\nstart");
        assert!(p.in_session("x").line_may_match(br#"{"a":"the end","b":"start"}"#));
        // The Kelvin sign is a k to a regex: the filter does not rely on k.
        let p = pattern("re:kelvin");
        assert!(p.in_session("x").exact("\u{212A}elvin", "e").is_some());
        assert_eq!(p.need().grams().len(), 3, "elv, lvi, vin: not kel");
    }

    #[test]
    fn fuzzy_words_start_with_the_first_character() {
        let p = pattern("bnchmrks");
        let s = p.in_session("x");
        assert_eq!(s.exact("Benchmarks show", "e"), None);
        assert_eq!(s.fuzzy("Benchmarks show", "e"), Some(vec![(0, 10)]));
        assert_eq!(pattern("nchmrks").in_session("x").fuzzy("Benchmarks", "e"), None);
        // A token inside a word is an exact match.
        assert_eq!(pattern("enchmarks").in_session("x").exact("Benchmarks", "e"), Some(vec![(1, 10)]));
    }

    #[test]
    fn a_query_too_long_is_refused() {
        let long = "word ".repeat(1000);
        assert!(matches!(check_size(&long), Err(PatternError::TooLong(_))));
        let many = "w ".repeat(MAX_QUERY_WORDS + 1);
        assert!(matches!(Pattern::new(&parse(&many).unwrap()), Err(PatternError::TooLong(_))));
    }
}
