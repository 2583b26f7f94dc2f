//! One entry of the page: its line in the sidebar (kind, flags, title) and
//! its card's body as cleaned HTML (Markdown rendered, thinking and tool
//! calls as people read them, outputs cut at a size with the full size
//! said, errors and aborts in words).

use arbor_context::calculate_context_tokens;
use arbor_context::summary::FileOps;
use arbor_log::{Entry, EntryKind, Role};
use serde_json::Value;

use super::markup::{escape, escape_into, markdown_into};
use super::text::{describe, Kind, Part, Stop};
use super::tools::{call_view, one_line, CallView, Detail, DiffLine};
use crate::files::{add_file_ops, file_lists};

/// How long a sidebar title is at most, in characters.
const TITLE_MAX: usize = 80;
/// Images larger than this (base64 bytes) are named, not embedded.
const IMAGE_MAX: usize = 2 * 1024 * 1024;

/// Flags of an entry (bits).
pub(crate) const ERROR: u8 = 1;
pub(crate) const ABORTED: u8 = 2;
/// An assistant reply with tool calls and no text.
pub(crate) const TOOLS_ONLY: u8 = 4;
/// An output was cut in the page.
pub(crate) const CUT: u8 = 8;

/// An entry made ready for the page.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    /// The kind's one-letter code (see `page.js`).
    pub kind: char,
    pub flags: u8,
    pub title: String,
    pub time: String,
    /// The card's body.
    pub html: String,
    /// The calls it makes: (id, tool, line).
    pub calls: Vec<(String, String, String)>,
    /// A tool result's call id.
    pub call_id: Option<String>,
    /// (read, modified) files of its calls.
    pub files: (Vec<String>, Vec<String>),
    /// (context tokens, cost) of an assistant reply's usage.
    pub usage: Option<(u64, f64)>,
    /// `provider/model` of a reply or a model change.
    pub model: Option<String>,
}

/// What shapes the page's text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// A tool output longer than this many bytes is cut to its head (0: never).
    pub max_output: usize,
    /// Make the body's HTML (false: only the row's facts, for the page's first pass).
    pub html: bool,
}

fn kind_code(kind: &Kind, bookkeeping: bool) -> char {
    use arbor_log::EntryType as T;
    match kind {
        Kind::Role(Role::User) => 'u',
        Kind::Role(Role::Assistant) => 'a',
        Kind::Role(Role::ToolResult) => 'r',
        Kind::Role(Role::BashExecution) => 'b',
        Kind::Role(Role::CompactionSummary) | Kind::Type(T::Compaction) => 'c',
        Kind::Role(Role::BranchSummary) | Kind::Type(T::BranchSummary) => 's',
        Kind::Role(_) | Kind::Type(T::CustomMessage) => 'm',
        Kind::Type(T::ModelChange) => 'M',
        Kind::Type(T::ThinkingLevelChange) => 'T',
        Kind::Type(T::Label) => 'L',
        Kind::Type(T::SessionInfo) => 'N',
        Kind::Type(T::Custom) if bookkeeping => 'K',
        Kind::Type(T::Custom) => 'X',
        Kind::Type(_) => 'O',
    }
}

/// The start of `s` on one line, its runs of white space as one space.
fn short(s: &str) -> String {
    let head: String = s.trim_start().chars().take(TITLE_MAX * 4).collect();
    one_line(&head.split_whitespace().collect::<Vec<_>>().join(" "), TITLE_MAX)
}

/// Renders an entry.
pub(crate) fn render(e: &Entry, limits: Limits) -> Rendered {
    let d = describe(e);
    let mut r = Rendered {
        kind: kind_code(&d.kind, d.bookkeeping),
        time: e.timestamp.clone(),
        call_id: d.call_id.clone(),
        ..Rendered::default()
    };
    if d.error {
        r.flags |= ERROR;
    }
    if matches!(d.stop, Some(Stop::Aborted(_))) {
        r.flags |= ABORTED;
    }
    usage_and_files(e, &mut r);
    let summary = d.kind.is_summary();
    let mut text_title = None;
    let mut html = String::new();
    let max = if limits.max_output == 0 { usize::MAX } else { limits.max_output };
    for p in &d.parts {
        if !limits.html {
            match p {
                Part::Text(t) if text_title.is_none() && !t.trim().is_empty() => text_title = Some(short(t)),
                Part::Call { id, name, arguments } => {
                    let view = call_view(name, arguments);
                    r.calls.push((id.clone(), view.tool, view.line));
                }
                Part::Output(t) if t.len() > max => r.flags |= CUT,
                _ => {}
            }
            continue;
        }
        match p {
            Part::Text(t) => {
                if text_title.is_none() && !t.trim().is_empty() {
                    text_title = Some(short(t));
                }
                html.push_str(if summary { "<div class=\"md summary\">" } else { "<div class=\"md\">" });
                markdown_into(&mut html, t);
                html.push_str("</div>");
            }
            Part::Thinking(t) => {
                html.push_str("<details class=\"thinking\"><summary>Thinking</summary><div class=\"plain\">");
                escape_into(&mut html, t.trim());
                html.push_str("</div></details>");
            }
            Part::Call { id, name, arguments } => {
                let view = call_view(name, arguments);
                call_html(&mut html, &view);
                r.calls.push((id.clone(), view.tool, view.line));
            }
            Part::Output(t) => {
                if output_html(&mut html, t, max, d.error) {
                    r.flags |= CUT;
                }
            }
            Part::Image { mime, data } => image_html(&mut html, mime, data),
        }
    }
    if let Some(stop) = &d.stop {
        let class = if matches!(stop, Stop::Error(_)) { "stop error" } else { "stop" };
        html.push_str(&format!("<div class=\"{class}\">{}</div>", escape(&stop.line())));
    }
    if r.kind == 'a' && text_title.is_none() && !r.calls.is_empty() {
        r.flags |= TOOLS_ONLY;
    }
    r.html = html;
    r.title = title(&d.heading, &r, text_title, d.stop.as_ref(), &d.parts);
    r
}

/// An entry's usage, model and the files its calls touch.
fn usage_and_files(e: &Entry, r: &mut Rendered) {
    if let Some(m) = e.message() {
        if let Some(u) = m.message.get("usage") {
            let cost = u.get("cost").and_then(|c| c.get("total")).and_then(Value::as_f64).unwrap_or(0.0);
            r.usage = Some((calculate_context_tokens(u), cost));
        }
        let field = |k: &str| m.message.get(k).and_then(Value::as_str);
        if let (Some(p), Some(id)) = (field("provider"), field("model")) {
            r.model = Some(format!("{p}/{id}"));
        }
        if m.role() == Some(Role::Assistant) {
            let mut ops = FileOps::new();
            add_file_ops(&m.message, &mut ops);
            r.files = file_lists(&ops);
        }
    }
    if let EntryKind::ModelChange(m) = &e.kind {
        let (p, id) = m.default_model().unwrap_or_default();
        r.model = Some(format!("{p}/{id}"));
    }
}

/// The sidebar's line for an entry (its tool results get theirs from the call, later).
fn title(heading: &str, r: &Rendered, text: Option<String>, stop: Option<&Stop>, parts: &[Part]) -> String {
    match (r.kind, text) {
        ('a', text) => {
            let failed = stop.filter(|s| !matches!(s, Stop::Length)).map(|s| short(&s.line()));
            match (failed, text, r.calls.first()) {
                (Some(f), _, _) => f,
                (None, Some(t), _) => t,
                (None, None, Some((_, tool, line))) => short(&format!("{tool} {line}")),
                (None, None, None) => "(no text)".to_owned(),
            }
        }
        ('r', _) => {
            let out = parts.iter().find_map(|p| if let Part::Output(o) = p { Some(short(o)) } else { None });
            out.unwrap_or_else(|| heading.to_owned())
        }
        ('u' | 'm', Some(t)) => t,
        ('c' | 's', Some(t)) => short(&format!("{heading}: {t}")),
        (_, _) => short(heading),
    }
}

fn call_html(html: &mut String, v: &CallView) {
    html.push_str("<div class=\"call\"><div class=\"call-head\"><span class=\"tool\">");
    escape_into(html, &v.tool);
    html.push_str("</span> <code>");
    escape_into(html, &v.line);
    html.push_str("</code></div>");
    match &v.detail {
        Detail::None => {}
        Detail::Command(c) => pre(html, "cmd", c),
        Detail::Content(c) => pre(html, "out clip", c),
        Detail::Json(j) => pre(html, "args", j),
        Detail::Patch(p) => {
            let lines: Vec<DiffLine> = p
                .lines()
                .map(|l| {
                    let sign = ['+', '-'].into_iter().find(|&c| l.starts_with(c)).unwrap_or(' ');
                    DiffLine { sign, text: l.to_owned() }
                })
                .collect();
            diff_html(html, &lines, false);
        }
        Detail::Diff(edits) => {
            for lines in edits {
                diff_html(html, lines, true);
            }
        }
    }
    html.push_str("</div>");
}

fn diff_html(html: &mut String, lines: &[DiffLine], signed: bool) {
    html.push_str("<div class=\"diff\">");
    for l in lines {
        let class = match l.sign {
            '-' => "del",
            '+' => "add",
            _ => "ctx",
        };
        html.push_str(&format!("<div class=\"{class}\">"));
        if signed {
            html.push(l.sign);
        }
        escape_into(html, &l.text);
        html.push_str("</div>");
    }
    html.push_str("</div>");
}

fn pre(html: &mut String, class: &str, text: &str) {
    html.push_str(&format!("<pre class=\"{class}\">"));
    escape_into(html, text.trim_end_matches('\n'));
    html.push_str("</pre>");
}

/// A tool output, cut to `max` bytes (at a character boundary) with a note; true when cut.
fn output_html(html: &mut String, text: &str, max: usize, error: bool) -> bool {
    let class = if error { "out clip error" } else { "out clip" };
    if text.len() <= max {
        pre(html, class, text);
        return false;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    pre(html, class, &text[..end]);
    let lines = memchr_count(text);
    html.push_str(&format!(
        "<div class=\"cut\">cut in this page: the first {} of {} bytes ({} lines in all)</div>",
        group(end as u64),
        group(text.len() as u64),
        group(lines as u64)
    ));
    true
}

fn memchr_count(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count() + 1
}

/// `1234567` as `1,234,567`.
pub(crate) fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn image_html(html: &mut String, mime: &str, data: &str) {
    let allowed = ["image/png", "image/jpeg", "image/gif", "image/webp"].contains(&mime);
    let clean = data.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    if allowed && clean && !data.is_empty() && data.len() <= IMAGE_MAX {
        html.push_str(&format!("<img class=\"img\" alt=\"image\" src=\"data:{mime};base64,{data}\">"));
    } else {
        html.push_str(&format!(
            "<div class=\"img-note\">[image: {}, {} bytes of base64, not embedded]</div>",
            escape(mime),
            group(data.len() as u64)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_digits() {
        assert_eq!(group(0), "0");
        assert_eq!(group(1234), "1,234");
        assert_eq!(group(1234567), "1,234,567");
    }

    #[test]
    fn outputs_are_cut_with_their_size() {
        let mut h = String::new();
        assert!(output_html(&mut h, &"é".repeat(100), 51, false));
        assert!(h.contains("the first 50 of 200 bytes"), "{h}");
    }
}
