//! A path of a session as Markdown: a heading per message, tool calls and
//! thinking folded (`<details>`), summaries quoted.

use std::io::Write;

use arbor_tree::Session;

use super::path_to;
use arbor_log::Role;

use super::text::{describe, Kind, Part};
use crate::InteropError;

/// Writes the path root → `leaf` (default: the leaf) as Markdown. Entries
/// the model does not see (labels, settings, extension state) are left out;
/// a label is shown beside the heading of the entry it marks.
pub fn export_markdown(s: &Session, leaf: Option<&str>, out: &mut dyn Write) -> Result<(), InteropError> {
    let path = path_to(s, leaf)?;
    let mut doc = String::new();
    let h = s.header();
    let title = s.session_name().map_or_else(|| format!("Session {}", h.id), str::to_owned);
    doc.push_str(&format!("# {}\n\n", escape_line(&title)));
    doc.push_str(&format!(
        "Session `{}`, started {}{}; the path to `{}` ({} entries).\n",
        h.id,
        h.timestamp,
        h.cwd.as_deref().map(|c| format!(" in `{c}`")).unwrap_or_default(),
        path.last().map_or("(none)", |e| e.id.as_str()),
        path.len()
    ));
    for e in &path {
        let d = describe(e);
        if !d.conversational {
            continue;
        }
        let label = s.get_label(&e.id).map(|l| format!(" · [{}]", escape_line(l))).unwrap_or_default();
        let heading = match &d.kind {
            Kind::Role(Role::User) => "User".to_owned(),
            Kind::Role(Role::Assistant) => "Assistant".to_owned(),
            _ => capitalized(&d.heading),
        };
        doc.push_str(&format!("\n## {heading}{label}\n\n<sub>{} · {}</sub>\n", e.id, e.timestamp));
        let summary = d.kind.is_summary();
        for p in &d.parts {
            doc.push('\n');
            match p {
                Part::Text(t) if summary => doc.push_str(&quoted(t)),
                Part::Text(t) => doc.push_str(&format!("{}\n", t.trim_end())),
                Part::Thinking(t) => doc.push_str(&folded("Thinking", &fenced("text", t))),
                Part::Call { id, name, arguments } => {
                    doc.push_str(&folded(&format!("Tool call: {name} <code>{id}</code>"), &fenced("json", arguments)))
                }
                Part::Output(t) => {
                    let what = if d.error { "Output (error)" } else { "Output" };
                    doc.push_str(&folded(what, &fenced("text", t)));
                }
                Part::Image(mime) => doc.push_str(&format!("*[image: {mime}]*\n")),
            }
        }
    }
    out.write_all(doc.as_bytes()).map_err(|e| InteropError::io(s.session_file().unwrap_or(s.session_dir()), e))
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

/// One line of text, with Markdown's heading-breaking characters tamed.
fn escape_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").replace('<', "&lt;")
}

fn quoted(t: &str) -> String {
    t.trim_end().lines().map(|l| if l.is_empty() { ">\n".to_owned() } else { format!("> {l}\n") }).collect()
}

/// A fenced code block whose fence is longer than any run of backticks inside.
pub(crate) fn fenced(lang: &str, body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", body.trim_end_matches('\n'))
}

fn folded(summary: &str, body: &str) -> String {
    format!("<details>\n<summary>{summary}</summary>\n\n{body}\n</details>\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_the_backticks_inside() {
        assert_eq!(fenced("text", "a ``` b"), "````text\na ``` b\n````\n");
        assert_eq!(fenced("", "plain\n"), "```\nplain\n```\n");
    }
}
