//! The search syntax of pi's session picker, and its fuzzy match.
//!
//! [`parse`] reads a query as pi's `parseSearchQuery` does: space-separated
//! tokens that must all match, `"quoted phrases"`, and `re:REGEX`
//! (case-insensitive); an unclosed quote makes every word a token (unlike
//! pi, without its quotes: a phrase being typed finds its words).
//! [`fuzzy_match`] is pi's `fuzzyMatch`: the query's characters in order,
//! not necessarily next to each other, scored (lower is better) by gaps,
//! runs, word starts and position.

/// How a token matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenKind {
    /// Fuzzy: see [`fuzzy_match`].
    Fuzzy,
    /// A quoted phrase: found as it is, up to case and runs of whitespace.
    Phrase,
}

/// One token of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// How it matches.
    pub kind: TokenKind,
    /// Its text (a phrase without its quotes).
    pub value: String,
}

/// A parsed query.
#[derive(Debug, Clone)]
pub enum Query {
    /// Tokens that must all match (none: everything matches).
    Tokens(Vec<Token>),
    /// `re:PATTERN`, case-insensitive.
    Regex(regex::Regex),
}

/// Parses a query with pi's picker syntax; an empty or invalid `re:` pattern is an error.
pub fn parse(query: &str) -> Result<Query, String> {
    let trimmed = query.trim();
    if let Some(pattern) = trimmed.strip_prefix("re:") {
        let pattern = pattern.trim();
        if pattern.is_empty() {
            return Err("Empty regex".to_owned());
        }
        return regex::RegexBuilder::new(pattern)
            .case_insensitive(true)
            .build()
            .map(Query::Regex)
            .map_err(|e| e.to_string().lines().last().unwrap_or_default().trim().to_owned());
    }
    let mut tokens = vec![];
    let mut buf = String::new();
    let mut in_quote = false;
    let flush = |buf: &mut String, kind: TokenKind, tokens: &mut Vec<Token>| {
        let v = buf.trim();
        if !v.is_empty() {
            tokens.push(Token { kind, value: v.to_owned() });
        }
        buf.clear();
    };
    for ch in trimmed.chars() {
        if ch == '"' {
            let kind = if in_quote { TokenKind::Phrase } else { TokenKind::Fuzzy };
            flush(&mut buf, kind, &mut tokens);
            in_quote = !in_quote;
            continue;
        }
        if !in_quote && ch.is_whitespace() {
            flush(&mut buf, TokenKind::Fuzzy, &mut tokens);
            continue;
        }
        buf.push(ch);
    }
    if in_quote {
        // An unclosed quote (a phrase still being typed): every word is a token, without its quotes.
        let words = trimmed
            .split_whitespace()
            .map(|w| w.trim_matches('"'))
            .filter(|w| !w.is_empty())
            .map(|w| Token { kind: TokenKind::Fuzzy, value: w.to_owned() });
        return Ok(Query::Tokens(words.collect()));
    }
    flush(&mut buf, TokenKind::Fuzzy, &mut tokens);
    Ok(Query::Tokens(tokens))
}

/// pi's `fuzzyMatch(query, text)`: `Some(score)` when every character of
/// `query` appears in `text` in order (case-insensitively), lower scores
/// better; a query of letters then digits (or digits then letters) also
/// matches with its two parts swapped, for 5 more.
pub fn fuzzy_match(query: &str, text: &str) -> Option<f64> {
    let q: Vec<char> = query.to_lowercase().chars().collect();
    let t: Vec<char> = text.to_lowercase().chars().collect();
    if let Some(score) = match_chars(&q, &t) {
        return Some(score);
    }
    let split = q.iter().position(|c| !c.is_ascii_lowercase()).unwrap_or(q.len());
    let swapped: Option<Vec<char>> = if split > 0 && split < q.len() && q[split..].iter().all(char::is_ascii_digit) {
        Some(q[split..].iter().chain(&q[..split]).copied().collect())
    } else {
        let split = q.iter().position(|c| !c.is_ascii_digit()).unwrap_or(q.len());
        (split > 0 && split < q.len() && q[split..].iter().all(char::is_ascii_lowercase))
            .then(|| q[split..].iter().chain(&q[..split]).copied().collect())
    };
    swapped.and_then(|s| match_chars(&s, &t)).map(|score| score + 5.0)
}

fn match_chars(q: &[char], t: &[char]) -> Option<f64> {
    if q.is_empty() {
        return Some(0.0);
    }
    if q.len() > t.len() {
        return None;
    }
    // As in pi, the match before the first is at -1: a match at 0 continues a run.
    let (mut qi, mut score, mut last, mut run) = (0usize, 0f64, -1isize, 0f64);
    for (i, &c) in t.iter().enumerate() {
        if qi == q.len() {
            break;
        }
        if c != q[qi] {
            continue;
        }
        let boundary = i == 0 || matches!(t[i - 1], '-' | '_' | '.' | '/' | ':') || t[i - 1].is_whitespace();
        let i = i as isize;
        if last == i - 1 {
            run += 1.0;
            score -= run * 5.0;
        } else {
            run = 0.0;
            if last >= 0 {
                score += (i - last - 1) as f64 * 2.0;
            }
        }
        if boundary {
            score -= 10.0;
        }
        score += i as f64 * 0.1;
        last = i;
        qi += 1;
    }
    if qi < q.len() {
        return None;
    }
    if q == t {
        score -= 100.0;
    }
    Some(score)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tokens(q: &str) -> Vec<(TokenKind, String)> {
        match parse(q).unwrap() {
            Query::Tokens(t) => t.into_iter().map(|t| (t.kind, t.value)).collect(),
            Query::Regex(r) => panic!("regex {r}"),
        }
    }

    #[test]
    fn tokens_phrases_and_unclosed_quotes_as_pi_reads_them() {
        use TokenKind::*;
        assert_eq!(tokens("  "), vec![]);
        assert_eq!(tokens("foo  bar"), vec![(Fuzzy, "foo".into()), (Fuzzy, "bar".into())]);
        assert_eq!(
            tokens(r#"foo "node  cve" bar"#),
            vec![(Fuzzy, "foo".into()), (Phrase, "node  cve".into()), (Fuzzy, "bar".into())]
        );
        assert_eq!(tokens(r#"a"b c"d"#), vec![(Fuzzy, "a".into()), (Phrase, "b c".into()), (Fuzzy, "d".into())]);
        assert_eq!(tokens(r#""""#), vec![]);
        assert_eq!(
            tokens(r#"foo "bar baz"#),
            vec![(Fuzzy, "foo".into()), (Fuzzy, "bar".into()), (Fuzzy, "baz".into())]
        );
    }

    #[test]
    fn regex_queries() {
        assert!(matches!(parse("re: Foo.*bar "), Ok(Query::Regex(r)) if r.is_match("xFOOzBAR")));
        assert_eq!(parse("re:").unwrap_err(), "Empty regex");
        assert!(parse("re:(").is_err());
    }

    #[test]
    fn fuzzy_scores_as_pi_scores() {
        // Scores printed by pi's own fuzzyMatch (pi-tui as installed with pi 0.73.1).
        let cases = [
            ("abc", "abc", -139.7),
            ("cfg", "config", -8.2),
            ("MAIN", "src/main.rs", -37.8),
            ("12ab", "12ab", -159.4),
            ("ab12", "12ab", -154.4),
            ("é", "Café", 0.3),
            ("ΣΑΣ", "σας", -139.7),
        ];
        for (q, t, want) in cases {
            let got = fuzzy_match(q, t).unwrap();
            assert!((got - want).abs() < 1e-9, "{q} in {t}: {got} vs {want}");
        }
        assert_eq!(fuzzy_match("", "x"), Some(0.0));
        assert_eq!(fuzzy_match("xyz", "ab"), None);
        assert_eq!(fuzzy_match("gfc", "config"), None);
    }
}
