//! A path of a session as Markdown: a heading per message, tool calls and
//! thinking folded (`<details>`), summaries quoted.

use std::io::Write;

use arbor_log::Role;
use arbor_tree::Session;

use super::markup::escape;
use super::text::{describe, Kind, Part};
use super::tools::{call_view, CallView, Detail};
use crate::InteropError;

/// Writes the path root → `leaf` (default: the leaf) as Markdown. Entries
/// the model does not see (labels, settings, extension state) are left out;
/// a label is shown beside the heading of the entry it marks. Entries are
/// decoded a batch at a time and not kept: memory follows the batch.
pub fn export_markdown(s: &Session, leaf: Option<&str>, out: &mut dyn Write) -> Result<(), InteropError> {
    if let Some(id) = leaf {
        if s.position_of(id).is_none() {
            return Err(InteropError::NoEntry {
                path: s.session_file().unwrap_or(s.session_dir()).to_owned(),
                id: id.to_owned(),
            });
        }
    }
    let io = |e| InteropError::io(s.session_file().unwrap_or(s.session_dir()), e);
    let path = s.branch_positions(leaf);
    let h = s.header();
    let title = s.session_name()?.map_or_else(|| format!("Session {}", h.id), str::to_owned);
    let last = path.last().and_then(|&p| s.id_at(p)).map_or_else(|| "(none)".to_owned(), |id| id.to_string());
    let head = format!(
        "# {}\n\nSession `{}`, started {}{}; the path to `{last}` ({} entries).\n",
        escape_line(&title),
        h.id,
        h.timestamp,
        h.cwd.as_deref().map(|c| format!(" in `{c}`")).unwrap_or_default(),
        path.len()
    );
    out.write_all(head.as_bytes()).map_err(io)?;
    for batch in path.chunks(2048) {
        let mut doc = String::new();
        for e in s.decode_many(batch)?.into_iter().flatten() {
            section(&mut doc, &e, s.get_label(&e.id)?);
        }
        out.write_all(doc.as_bytes()).map_err(io)?;
    }
    Ok(())
}

/// One entry's section (nothing for entries the model does not see).
fn section(doc: &mut String, e: &arbor_log::Entry, label: Option<&str>) {
    let d = describe(e);
    if !d.conversational {
        return;
    }
    let label = label.map(|l| format!(" · [{}]", escape_line(l))).unwrap_or_default();
    let heading = match &d.kind {
        Kind::Role(Role::User) => "User".to_owned(),
        Kind::Role(Role::Assistant) => "Assistant".to_owned(),
        _ => capitalized(&d.heading),
    };
    let failed = if d.error { " (error)" } else { "" };
    doc.push_str(&format!("\n## {heading}{failed}{label}\n\n<sub>{} · {}</sub>\n", e.id, e.timestamp));
    let summary = d.kind.is_summary();
    for p in &d.parts {
        doc.push('\n');
        match p {
            Part::Text(t) if summary => doc.push_str(&quoted(t)),
            Part::Text(t) => doc.push_str(&format!("{}\n", t.trim_end())),
            Part::Thinking(t) => doc.push_str(&folded("Thinking", &fenced("text", t))),
            Part::Call { name, arguments, .. } => doc.push_str(&call(&call_view(name, arguments))),
            Part::Output(t) => {
                let what = if d.error { "Output (error)" } else { "Output" };
                doc.push_str(&folded(what, &fenced("text", t)));
            }
            Part::Image { mime, .. } => doc.push_str(&format!("*[image: {mime}]*\n")),
        }
    }
    if let Some(stop) = &d.stop {
        doc.push_str(&format!("\n> **{}**\n", escape_line(&stop.line())));
    }
}

/// A tool call: the tool and its one line, and what more it holds folded.
fn call(v: &CallView) -> String {
    let line = if v.line.is_empty() { String::new() } else { format!(" <code>{}</code>", escape(&v.line)) };
    let summary = format!("Tool call: {}{line}", escape(&v.tool));
    let body = match &v.detail {
        Detail::None => return format!("{summary}\n"),
        Detail::Command(c) => fenced("sh", c),
        Detail::Content(c) => fenced("text", c),
        Detail::Json(j) => fenced("json", j),
        Detail::Patch(p) => fenced("diff", p),
        Detail::Diff(edits) => edits
            .iter()
            .map(|lines| fenced("diff", &lines.iter().map(|l| format!("{}{}\n", l.sign, l.text)).collect::<String>()))
            .collect(),
    };
    folded(&summary, &body)
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
