//! Text from a session made into HTML that runs nothing: escaped as plain
//! text, or rendered as Markdown (`pulldown-cmark`) with any HTML in it
//! shown as the text it is (a session's `<div>` is something someone typed
//! or a model wrote, not markup for the page), then cleaned by `ammonia`'s
//! allow-list all the same (no script, no event handler, no style, no
//! `javascript:` link, no SVG, no image that would leave the page).

use std::collections::HashSet;
use std::sync::OnceLock;

use pulldown_cmark::{html, Event, Options, Parser};

/// Markdown longer than this is shown as plain text (rendering and cleaning
/// megabytes of one message would stall the export for nothing).
pub(crate) const MARKDOWN_MAX: usize = 512 * 1024;

/// Appends `s` to `out` with `&`, `<`, `>`, `"` and `'` escaped.
pub(crate) fn escape_into(out: &mut String, s: &str) {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&s[last..i]);
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(&s[last..]);
}

/// `s` as HTML text (element content and quoted attributes): `&`, `<`,
/// `>`, `"` and `'` escaped. The page's own escaping, for servers that draw
/// pages of their own (`arbor serve`'s usage view).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    escape_into(&mut out, s);
    out
}

fn cleaner() -> &'static ammonia::Builder<'static> {
    static CLEANER: OnceLock<ammonia::Builder<'static>> = OnceLock::new();
    CLEANER.get_or_init(|| {
        let mut b = ammonia::Builder::default();
        // Images would reach out of the page (and the page's policy blocks them anyway).
        b.rm_tags(["img"]);
        let schemes: HashSet<&str> = ["http", "https", "mailto"].into_iter().collect();
        b.url_schemes(schemes);
        b.link_rel(Some("noopener noreferrer nofollow"));
        b
    })
}

/// Appends the Markdown `text` rendered as cleaned HTML.
pub(crate) fn markdown_into(out: &mut String, text: &str) {
    if text.len() > MARKDOWN_MAX {
        out.push_str(&long_note(text.len()));
        out.push_str("<pre class=\"plain\">");
        escape_into(out, text);
        out.push_str("</pre>");
        return;
    }
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut raw = String::with_capacity(text.len() + text.len() / 4);
    let events = Parser::new_ext(text, opts).map(|e| match e {
        Event::Html(h) | Event::InlineHtml(h) => Event::Text(h),
        e => e,
    });
    html::push_html(&mut raw, events);
    out.push_str(&cleaner().clean(&raw).to_string());
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

/// The note over a text shown as plain text: too long to render as Markdown.
pub(crate) fn long_note(len: usize) -> String {
    format!(
        "<div class=\"cut\">{} bytes: too long to render as Markdown here, shown as plain text</div>",
        group(len as u64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(t: &str) -> String {
        let mut s = String::new();
        markdown_into(&mut s, t);
        s
    }

    #[test]
    fn markdown_renders_and_nothing_runs() {
        assert_eq!(md("**bold** `x<y`"), "<p><strong>bold</strong> <code>x&lt;y</code></p>\n");
        assert_eq!(md("a <b>c</b>"), "<p>a &lt;b&gt;c&lt;/b&gt;</p>\n", "HTML in a message is text");
        for hostile in [
            "<script>alert(1)</script>",
            "<img src=x onerror=alert(1)>",
            "[click](javascript:alert(1))",
            "<a href=\"javascript:alert(1)\">x</a>",
            "<svg onload=alert(1)><circle/></svg>",
            "<div style=\"background:url(javascript:alert(1))\">s</div>",
            "<iframe src=\"data:text/html,<script>alert(1)</script>\"></iframe>",
            "<p onclick=alert(1)>x</p>",
            "<style>body{background:red}</style>",
        ] {
            let out = md(hostile).to_lowercase();
            // Text's `<` is escaped: every `<` left opens a tag of ours.
            for tag in out.split('<').skip(1).map(|t| t.split('>').next().unwrap_or("")) {
                for bad in ["script", "onerror", "javascript:", "svg", "style", "iframe", "onclick", "onload", "href"] {
                    assert!(!tag.contains(bad), "{hostile:?} gave {out:?}");
                }
            }
        }
    }

    #[test]
    fn escaping() {
        assert_eq!(escape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
    }
}
