//! The text around a hit's first match, on one line, with the matches marked.

/// Characters of context before the first match, and in the whole snippet.
const BEFORE: usize = 50;
const WIDTH: usize = 180;

/// The text around the first of `spans` (byte ranges, sorted) on one line
/// (whitespace as spaces, `…` where cut), and the spans in it as `[start,
/// end)` character offsets.
pub fn snippet(text: &str, spans: &[(usize, usize)]) -> (String, Vec<[usize; 2]>) {
    let first = spans.first().map_or(0, |&(a, _)| a);
    // Only the characters around the first match are looked at: a hit in a
    // long text costs its neighbourhood, not the text.
    let from = floor_char(text, first.saturating_sub(BEFORE * 4));
    let to = ceil_char(text, first.saturating_add(WIDTH * 4).min(text.len()));
    let window = &text[from..to];
    let chars: Vec<(usize, char)> = window.char_indices().map(|(i, c)| (i + from, c)).collect();
    let char_at = |byte: usize| chars.partition_point(|&(i, _)| i < byte);
    let start = char_at(first).saturating_sub(BEFORE);
    let end = (start + WIDTH).min(chars.len());
    let mut out = String::new();
    let cut_before = start > 0 || from > 0;
    if cut_before {
        out.push('…');
    }
    out.extend(chars[start..end].iter().map(|&(_, c)| if c.is_whitespace() { ' ' } else { c }));
    if end < chars.len() || to < text.len() {
        out.push('…');
    }
    let lead = usize::from(cut_before);
    let marks = spans
        .iter()
        .filter(|&&(a, b)| a >= from && b <= to)
        .map(|&(a, b)| (char_at(a), char_at(b)))
        .filter(|&(a, b)| a >= start && b <= end && a < b)
        .map(|(a, b)| [a - start + lead, b - start + lead])
        .collect();
    (out, marks)
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn marked(s: &str, m: [usize; 2]) -> String {
        s.chars().skip(m[0]).take(m[1] - m[0]).collect()
    }

    #[test]
    fn snippets_mark_matches_in_characters() {
        let text = "é\nhello world";
        let (s, marks) = snippet(text, &[(text.find("world").unwrap(), text.len())]);
        assert_eq!(s, "é hello world");
        assert_eq!(marks, vec![[8, 13]]);
        let long = format!("{}needle{}", "x".repeat(100), "y".repeat(300));
        let (s, marks) = snippet(&long, &[(100, 106)]);
        assert!(s.starts_with('…') && s.ends_with('…'));
        assert_eq!(marked(&s, marks[0]), "needle");
        // Far into a long text of wide characters.
        let wide = format!("{}備份{}", "語".repeat(10_000), "語".repeat(10_000));
        let at = wide.find("備份").unwrap();
        let (s, marks) = snippet(&wide, &[(at, at + "備份".len())]);
        assert_eq!(marked(&s, marks[0]), "備份");
        assert_eq!(s.chars().count(), WIDTH + 2);
        assert_eq!(snippet("", &[]), (String::new(), vec![]));
    }
}
