//! Drawing the picker into a ratatui [`Buffer`].

use std::time::SystemTime;

use arbor_log::Role;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use super::state::{Picker, Row};
use crate::shared::visible::visible;

/// Rows above and below the list: title, query, rule; rule, help.
pub(crate) const CHROME: u16 = 5;

const HELP: &str = "  ↑/↓: move. Enter: open. Tab: this directory / every directory. Ctrl+U: clear. Esc: quit";

/// pi's age of a session: `now`, `5m`, `3h`, `2d`, `1w`, `4mo`, `1y`.
pub(crate) fn age(modified: &str, now_ms: i64) -> String {
    let Some(t) = arbor_log::time::parse_iso_ms(modified) else { return String::new() };
    let mins = (now_ms - t).max(0) / 60_000;
    let (hours, days) = (mins / 60, mins / 1440);
    match () {
        _ if mins < 1 => "now".to_owned(),
        _ if mins < 60 => format!("{mins}m"),
        _ if hours < 24 => format!("{hours}h"),
        _ if days < 7 => format!("{days}d"),
        _ if days < 30 => format!("{}w", days / 7),
        _ if days < 365 => format!("{}mo", days / 30),
        _ => format!("{}y", days / 365),
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Cuts styled pieces to `width` display columns.
fn fit(pieces: Vec<(String, Style)>, width: usize) -> Line<'static> {
    let mut used = 0;
    let mut spans = vec![];
    'outer: for (text, style) in pieces {
        // Text from the files: control characters are shown, not obeyed.
        let text = visible(&text);
        let mut kept = String::new();
        for c in text.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width {
                if !kept.is_empty() {
                    spans.push(Span::styled(kept, style));
                }
                break 'outer;
            }
            used += w;
            kept.push(c);
        }
        if !kept.is_empty() {
            spans.push(Span::styled(kept, style));
        }
    }
    Line::from(spans)
}

fn put(buf: &mut Buffer, area: Rect, y: u16, pieces: Vec<(String, Style)>) {
    if y < area.height {
        buf.set_line(area.x, area.y + y, &fit(pieces, usize::from(area.width)), area.width);
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `home`-relative path.
fn short(path: &str, home: Option<&str>) -> String {
    match home {
        Some(h) if !h.is_empty() && path.starts_with(h) => format!("~{}", &path[h.len()..]),
        _ => path.to_owned(),
    }
}

pub(crate) fn draw(p: &Picker, home: Option<&str>, area: Rect, buf: &mut Buffer) {
    let dim = Style::default().fg(Color::DarkGray);
    let accent = Style::default().fg(Color::Cyan);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let scope = if p.scope_all { "every directory" } else { "this directory" };
    let plural = if p.total() == 1 { "" } else { "s" };
    let title = format!("  ({} session{plural} in {scope})", p.total());
    put(buf, area, 0, vec![("Resume a session".to_owned(), bold), (title, dim)]);
    put(buf, area, 1, vec![("> ".to_owned(), accent), (p.query().to_owned(), Style::default()), ("█".to_owned(), dim)]);
    put(buf, area, 2, vec![("─".repeat(usize::from(area.width)), dim)]);
    let now = now_ms();
    let (first, rows) = p.visible();
    let list_height = area.height.saturating_sub(CHROME);
    for (k, row) in rows.iter().enumerate() {
        let i = first + k;
        let y = 3 + k as u16;
        if k as u16 >= list_height {
            break;
        }
        let chosen = i == p.selected();
        let marker = if chosen { ("› ".to_owned(), accent) } else { ("  ".to_owned(), Style::default()) };
        let text_style = if chosen { bold } else { Style::default() };
        let pieces = match row {
            Row::Session(s) => {
                let title = s.name.clone().unwrap_or_else(|| one_line(&s.first_message));
                let mut pieces =
                    vec![marker, (format!("{:>4} {:>5} msgs  ", age(&s.modified, now), s.message_count), dim)];
                pieces.push((title, text_style));
                if p.scope_all {
                    pieces.push((format!("  {}", short(&s.cwd, home)), dim));
                }
                pieces
            }
            Row::Hit(h) => {
                let what = h.role.as_ref().map_or(h.entry_type.as_str(), Role::as_str);
                // `•` when the entry is on its session's active path (root to leaf).
                let active = if h.on_active_path { "•" } else { " " };
                let mut pieces = vec![marker, (format!("{:>4} {what:>9} {active} ", age(&h.timestamp, now)), dim)];
                pieces.extend(marked(&h.snippet, &h.marks, text_style));
                let session = h.session_name.clone().unwrap_or_else(|| h.session_id.chars().take(8).collect());
                pieces.push((format!("  in {session}"), dim));
                pieces
            }
        };
        put(buf, area, y, pieces);
    }
    let bottom = area.height.saturating_sub(2);
    put(buf, area, bottom, vec![("─".repeat(usize::from(area.width)), dim)]);
    let count = if p.len() == 0 { "(no matches)".to_owned() } else { format!("({}/{})", p.selected() + 1, p.len()) };
    let status = p.status.clone().map(|s| format!("  {s}")).unwrap_or_default();
    put(buf, area, bottom + 1, vec![(format!("{HELP}  {count}"), dim), (status, accent)]);
}

/// The snippet's pieces with the marked characters underlined.
fn marked(snippet: &str, marks: &[[usize; 2]], base: Style) -> Vec<(String, Style)> {
    let hit = base.fg(Color::Yellow).add_modifier(Modifier::BOLD);
    let mut out: Vec<(String, Style)> = vec![];
    for (i, c) in snippet.chars().enumerate() {
        let style = if marks.iter().any(|m| m[0] <= i && i < m[1]) { hit } else { base };
        match out.last_mut() {
            Some((s, st)) if *st == style => s.push(c),
            _ => out.push((c.to_string(), style)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_as_pi_shows_them() {
        let t = arbor_log::time::parse_iso_ms("2026-03-14T09:00:00.000Z").unwrap_or(0);
        let iso = "2026-03-14T09:00:00.000Z";
        assert_eq!(age(iso, t + 30_000), "now");
        assert_eq!(age(iso, t + 5 * 60_000), "5m");
        assert_eq!(age(iso, t + 3 * 3_600_000), "3h");
        assert_eq!(age(iso, t + 2 * 86_400_000), "2d");
        assert_eq!(age(iso, t + 15 * 86_400_000), "2w");
        assert_eq!(age(iso, t + 65 * 86_400_000), "2mo");
        assert_eq!(age(iso, t + 800 * 86_400_000), "2y");
        assert_eq!(age("", t), "");
    }
}
