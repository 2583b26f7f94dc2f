//! One entry of the page: its line in the sidebar (kind, flags, title) and
//! its card's body as cleaned HTML (Markdown rendered, thinking and tool
//! calls as people read them, outputs cut at a size with the full size
//! said, errors and aborts in words).

use arbor_context::calculate_context_tokens;
use arbor_context::summary::FileOps;
use arbor_log::{Entry, EntryKind, Role};
use serde_json::Value;

use super::markup::{escape, escape_into, group, long_note, markdown_into, MARKDOWN_MAX};
use super::stream::{head, shape, whole_up_to, Asked, Cuts, Src};
use super::text::{describe, At, Kind, Part, Stop};
use super::tools::{call_view_in, one_line, CallView, Detail, DiffLine};
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
    /// Texts too long to hold, in the order of their places in `html`:
    /// each written there (escaped) from the file when the body is written.
    pub long: Vec<Insert>,
}

/// A text too long to hold that a card's body shows whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Insert {
    /// Where in the body's HTML it goes (a byte offset).
    pub at: usize,
    /// The JSON pointer of the value in the entry, and its preview (see [`Cuts::whole`]).
    pub pointer: String,
    pub preview: String,
    /// The bytes of the text shown (white space at its ends left out).
    pub range: (usize, usize),
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

/// Renders an entry; the texts its preview cut (`cuts`) are read whole
/// from the file where the page shows them.
pub(crate) fn render(e: &Entry, limits: Limits, cuts: &dyn Cuts) -> std::io::Result<Rendered> {
    let d = describe(e);
    let asked = Asked::new(cuts);
    let cuts = &asked;
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
    for (p, at) in d.parts.iter().zip(d.at.iter().copied()) {
        if !limits.html {
            row_part(p, at, cuts, max, &mut r, &mut text_title)?;
            continue;
        }
        let mut b = Body { html: &mut html, long: &mut r.long, cuts, at };
        match p {
            Part::Text(t) => {
                if text_title.is_none() && !t.trim().is_empty() {
                    text_title = Some(short(t));
                }
                b.html.push_str(if summary { "<div class=\"md summary\">" } else { "<div class=\"md\">" });
                b.markdown(t)?;
                b.html.push_str("</div>");
            }
            Part::Thinking(t) => {
                b.html.push_str("<details class=\"thinking\"><summary>Thinking</summary><div class=\"plain\">");
                b.text(t, None, true)?;
                b.html.push_str("</div></details>");
            }
            Part::Call { id, name, arguments } => {
                let view = call_view_in(name, arguments, at.pointer(), cuts)?;
                call_html(&mut b, &view)?;
                r.calls.push((id.clone(), view.tool, view.line));
            }
            Part::Output(t) => {
                if b.output(t, max, d.error)? {
                    r.flags |= CUT;
                }
            }
            Part::Image { mime, data } => b.image(mime, data)?,
        }
    }
    if let Some(stop) = &d.stop {
        let class = if matches!(stop, Stop::Error(_)) { "stop error" } else { "stop" };
        html.push_str(&format!("<div class=\"{class}\">{}</div>", escape(&stop.line())));
    }
    let left = asked.missed();
    if limits.html && left > 0 {
        let what = if left == 1 { "value is" } else { "values are" };
        html.push_str(&format!(
            "<div class=\"cut\">{left} more {what} too long to show whole in this page: the first 4 KB of each is shown</div>"
        ));
    }
    if r.kind == 'a' && text_title.is_none() && !r.calls.is_empty() {
        r.flags |= TOOLS_ONLY;
    }
    r.html = html;
    r.title = title(&d.heading, &r, text_title, d.stop.as_ref(), &d.parts);
    Ok(r)
}

/// What a part gives a row of the sidebar (no HTML): the title's text, the
/// calls, and whether an output is cut at `max`.
fn row_part(
    p: &Part,
    at: At,
    cuts: &dyn Cuts,
    max: usize,
    r: &mut Rendered,
    text_title: &mut Option<String>,
) -> std::io::Result<()> {
    match p {
        Part::Text(t) if text_title.is_none() && !t.trim().is_empty() => *text_title = Some(short(t)),
        Part::Call { id, name, arguments } => {
            let view = call_view_in(name, arguments, at.pointer(), cuts)?;
            r.calls.push((id.clone(), view.tool, view.line));
        }
        Part::Output(t) if t.len() > max => r.flags |= CUT,
        Part::Output(t) => {
            if let Src::Whole(w) = Src::of(cuts, at.pointer(), t) {
                // A cut string's JSON is over `HELD` bytes, its text over a sixth of that.
                if max < arbor_log::long::HELD / 6 || shape(w.as_ref())?.len > max {
                    r.flags |= CUT;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// A card's body being written: its HTML, and the places of the texts it
/// shows whole from the file.
struct Body<'a> {
    html: &'a mut String,
    long: &'a mut Vec<Insert>,
    cuts: &'a dyn Cuts,
    /// Where the part's text is in the entry.
    at: At,
}

impl<'a> Body<'a> {
    /// The part's text at `key` under its place (a call's argument), or at its place.
    fn src<'t>(&self, key: Option<&str>, held: &'t str) -> Src<'t>
    where
        'a: 't,
    {
        let pointer = match key {
            Some(k) => self.at.pointer().map(|p| format!("{p}/{k}")),
            None => self.at.pointer(),
        };
        Src::of(self.cuts, pointer, held)
    }

    /// Marks the place of `pointer`'s bytes `range`, escaped, in the HTML.
    fn insert(&mut self, key: Option<&str>, range: (usize, usize), preview: &str) {
        let pointer = match key {
            Some(k) => self.at.pointer().map(|p| format!("{p}/{k}")),
            None => self.at.pointer(),
        };
        if let Some(pointer) = pointer {
            self.long.push(Insert { at: self.html.len(), pointer, preview: preview.to_owned(), range });
        }
    }

    /// Markdown, rendered and cleaned; a text too long to render (over
    /// [`MARKDOWN_MAX`]) as escaped plain text with a note saying so.
    fn markdown(&mut self, held: &str) -> std::io::Result<()> {
        let src = self.src(None, held);
        let Src::Whole(whole) = src else {
            markdown_into(self.html, held);
            return Ok(());
        };
        if let Some(t) = whole_up_to(whole.as_ref(), MARKDOWN_MAX)? {
            markdown_into(self.html, &t);
            return Ok(());
        }
        let len = shape(whole.as_ref())?.len;
        drop(whole);
        self.html.push_str(&long_note(len));
        self.html.push_str("<pre class=\"plain\">");
        self.insert(None, (0, len), held);
        self.html.push_str("</pre>");
        Ok(())
    }

    /// Escaped text: trimmed at both ends (`trim`), or of its trailing newlines.
    fn text(&mut self, held: &str, key: Option<&str>, trim: bool) -> std::io::Result<()> {
        let range = match self.src(key, held) {
            Src::Held(_) => {
                escape_into(self.html, if trim { held.trim() } else { held.trim_end_matches('\n') });
                return Ok(());
            }
            Src::Whole(w) => {
                let s = shape(w.as_ref())?;
                if trim {
                    (s.lead.min(s.end), s.end)
                } else {
                    (0, s.end_newlines)
                }
            }
        };
        self.insert(key, range, held);
        Ok(())
    }

    /// `<pre class="CLASS">` of a text, its trailing newlines cut.
    fn pre(&mut self, class: &str, held: &str, key: Option<&str>) -> std::io::Result<()> {
        self.html.push_str(&format!("<pre class=\"{class}\">"));
        self.text(held, key, false)?;
        self.html.push_str("</pre>");
        Ok(())
    }

    /// A tool output, cut to `max` bytes (at a character boundary) with a note; true when cut.
    fn output(&mut self, held: &str, max: usize, error: bool) -> std::io::Result<bool> {
        let Src::Whole(w) = self.src(None, held) else { return Ok(output_html(self.html, held, max, error)) };
        let s = shape(w.as_ref())?;
        if s.len > max {
            let head = head(w.as_ref(), max)?;
            cut_output(self.html, &head, (s.len, s.newlines + 1), error);
            return Ok(true);
        }
        drop(w);
        self.pre(if error { "out clip error" } else { "out clip" }, held, None)?;
        Ok(false)
    }

    /// An image: embedded when it is small and clean base64, else named.
    fn image(&mut self, mime: &str, held: &str) -> std::io::Result<()> {
        let Src::Whole(w) = self.src(None, held) else {
            image_html(self.html, mime, held);
            return Ok(());
        };
        let (mut len, mut clean) = (0, true);
        w.each(&mut |c| {
            len += c.len();
            clean &= c.bytes().all(base64_byte);
            Ok(())
        })?;
        drop(w);
        if image_allowed(mime) && clean && len <= IMAGE_MAX {
            // Clean base64 is the same escaped.
            self.html.push_str(&format!("<img class=\"img\" alt=\"image\" src=\"data:{mime};base64,"));
            self.insert(None, (0, len), held);
            self.html.push_str("\">");
        } else {
            image_note(self.html, mime, len);
        }
        Ok(())
    }
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

fn call_html(b: &mut Body<'_>, v: &CallView) -> std::io::Result<()> {
    let html = &mut *b.html;
    html.push_str("<div class=\"call\"><div class=\"call-head\"><span class=\"tool\">");
    escape_into(html, &v.tool);
    html.push_str("</span> <code>");
    escape_into(html, &v.line);
    html.push_str("</code></div>");
    let whole = |b: &Body<'_>, held: &str| v.key.is_some_and(|k| b.src(Some(k), held).is_whole());
    match &v.detail {
        Detail::None => {}
        Detail::Command(c) => b.pre("cmd", c, v.key)?,
        Detail::Content(c) => b.pre("out clip", c, v.key)?,
        Detail::Json(j) => pre(b.html, "args", j),
        // A patch too long to hold is shown as its text.
        Detail::Patch(p) if whole(b, p) => b.pre("out clip", p, v.key)?,
        Detail::Patch(p) => {
            let lines: Vec<DiffLine> = p
                .lines()
                .map(|l| {
                    let sign = ['+', '-'].into_iter().find(|&c| l.starts_with(c)).unwrap_or(' ');
                    DiffLine { sign, text: l.to_owned() }
                })
                .collect();
            diff_html(b.html, &lines, false);
        }
        Detail::Diff(edits) => {
            for lines in edits {
                diff_html(b.html, lines, true);
            }
        }
    }
    b.html.push_str("</div>");
    Ok(())
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
    cut_output(html, &text[..end], (text.len(), memchr_count(text)), error);
    true
}

/// The head of an output of `(bytes, lines)` in all, and the note that says so.
fn cut_output(html: &mut String, head: &str, (len, lines): (usize, usize), error: bool) {
    pre(html, if error { "out clip error" } else { "out clip" }, head);
    html.push_str(&format!(
        "<div class=\"cut\">cut in this page: the first {} of {} bytes ({} lines in all)</div>",
        group(head.len() as u64),
        group(len as u64),
        group(lines as u64)
    ));
}

fn memchr_count(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count() + 1
}

fn base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
}

fn image_allowed(mime: &str) -> bool {
    ["image/png", "image/jpeg", "image/gif", "image/webp"].contains(&mime)
}

fn image_html(html: &mut String, mime: &str, data: &str) {
    let clean = data.bytes().all(base64_byte);
    if image_allowed(mime) && clean && !data.is_empty() && data.len() <= IMAGE_MAX {
        html.push_str(&format!("<img class=\"img\" alt=\"image\" src=\"data:{mime};base64,{data}\">"));
    } else {
        image_note(html, mime, data.len());
    }
}

fn image_note(html: &mut String, mime: &str, len: usize) {
    html.push_str(&format!(
        "<div class=\"img-note\">[image: {}, {} bytes of base64, not embedded]</div>",
        escape(mime),
        group(len as u64)
    ));
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
