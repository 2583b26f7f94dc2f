//! How a literal matches regardless of case, and which of its bytes the gram
//! filter may rely on.
//!
//! ASCII letters match either case (`a` matches `a` and `A`, and nothing
//! else: not the Kelvin sign that Unicode folds with `k`). Any other letter
//! with case matches its simple case folds (`Ж` matches `ж`, `É` matches
//! `é`). Every other character matches itself.
//!
//! The gram filter folds bytes, not characters (see [`crate::grams`]): it
//! can vouch for ASCII (folded) and for characters without case (CJK, emoji,
//! digits, punctuation), not for cased non-ASCII letters, whose other case
//! may be spelled with other bytes. [`Literal::safe`] says which bytes it
//! may rely on.

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};

/// Which case rule a literal follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Case {
    /// Tokens and phrases: the rule of the module docs.
    Words,
    /// Literals a `re:` pattern requires: the regex matches with Unicode's
    /// simple case folding, so `k` also matches the Kelvin sign and `s` the
    /// long s (and the filter cannot rely on them).
    Unicode,
}

/// A literal prepared for matching: a regex source that matches it with
/// the case rule above, and the bytes the gram filter may rely on.
#[derive(Debug, Clone)]
pub(crate) struct Literal {
    /// The literal's bytes.
    pub bytes: Vec<u8>,
    /// A regex source matching the literal as the case rule says.
    pub pattern: String,
    /// For each byte of `bytes`: may a gram that holds it be relied on?
    pub safe: Vec<bool>,
}

impl Literal {
    pub fn new(text: &str, case: Case) -> Literal {
        let mut pattern = String::with_capacity(text.len() * 4);
        let mut safe = Vec::with_capacity(text.len());
        for c in text.chars() {
            let ok = push_char(c, case, &mut pattern);
            safe.extend(std::iter::repeat_n(ok, c.len_utf8()));
        }
        Literal { bytes: text.as_bytes().to_vec(), pattern, safe }
    }
}

/// How many characters `c` matches under Unicode's simple case folding (itself included).
fn fold_count(c: char) -> u32 {
    let mut class = ClassUnicode::new([ClassUnicodeRange::new(c, c)]);
    class.case_fold_simple();
    class.ranges().iter().map(|r| r.end() as u32 - r.start() as u32 + 1).sum()
}

/// True when `c` has another case that is not its ASCII pair: a cased
/// character outside ASCII (`é`, `Ж`, the Kelvin sign).
pub(crate) fn has_other_case(c: char) -> bool {
    !c.is_ascii() && fold_count(c) > 1
}

/// Appends the regex source for `c`; true when the gram filter may rely on its bytes.
fn push_char(c: char, case: Case, out: &mut String) -> bool {
    if case == Case::Unicode && (c.is_ascii_alphabetic() || has_other_case(c)) {
        out.push_str("(?i:");
        out.push_str(&regex_syntax::escape(c.encode_utf8(&mut [0; 4])));
        out.push(')');
        // Safe only when the folds are the ASCII pair.
        return c.is_ascii() && fold_count(c) == 2;
    }
    if c.is_ascii_alphabetic() {
        out.push('[');
        out.push(c.to_ascii_lowercase());
        out.push(c.to_ascii_uppercase());
        out.push(']');
        return true;
    }
    if has_other_case(c) {
        out.push_str("(?i:");
        out.push_str(&regex_syntax::escape(c.encode_utf8(&mut [0; 4])));
        out.push(')');
        return false;
    }
    out.push_str(&regex_syntax::escape(c.encode_utf8(&mut [0; 4])));
    true
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn matches(lit: &str, text: &str) -> bool {
        regex::Regex::new(&Literal::new(lit, Case::Words).pattern).unwrap().is_match(text)
    }

    #[test]
    fn ascii_letters_fold_other_cased_letters_fold_simply_the_rest_is_exact() {
        assert!(matches("Karika", "xKARIKAx") && matches("karika", "KaRiKa"));
        assert!(!matches("k", "\u{212A}"), "the Kelvin sign is not an ASCII k");
        assert!(matches("жук", "ЖУК") && matches("Éa", "éA"));
        assert!(matches("a.b", "A.B") && !matches("a.b", "axb"));
        assert!(matches("备份", "百度云自动备份") && matches("😀", "x😀"));
        let lit = Literal::new("aé备", Case::Words);
        assert_eq!(lit.safe, [true, false, false, true, true, true]);
        let lit = Literal::new("ksa", Case::Unicode);
        assert_eq!(lit.safe, [false, false, true]);
        assert!(regex::Regex::new(&lit.pattern).unwrap().is_match("\u{212A}\u{17F}A"));
        assert!(!has_other_case('备') && has_other_case('é') && !has_other_case('k') && has_other_case('\u{212A}'));
    }
}
