//! A path of a session as Markdown: a heading per message, tool calls and
//! thinking folded (`<details>`), summaries quoted. Written as it goes: a
//! text too long to hold (on a line the session reads as a preview) is
//! written from the file, a block at a time, as it is (it is Markdown
//! already), inside the same fences and quotes as any other.

use std::io::{self, BufWriter, Write};

use arbor_log::Role;
use arbor_tree::Session;

use super::markup::escape;
use super::stream::{md_fenced, md_folded, md_quoted, md_text, Asked, Cuts, NoCuts, Src};
use super::text::{describe, At, Kind, Part};
use super::tools::{call_view_in, CallView, Detail};
use super::whole::{cuts_at, failed};
use crate::InteropError;

/// Writes the path root → `leaf` (default: the leaf) as Markdown. Entries
/// the model does not see (labels, settings, extension state) are left out;
/// a label is shown beside the heading of the entry it marks. Entries are
/// decoded a batch at a time and not kept, and written as they go: memory
/// follows the batch, and a text too long to hold is copied from the file
/// (a line changed on disk meanwhile fails with
/// [`arbor_tree::TreeError::Changed`], naming the file and line).
pub fn export_markdown(s: &Session, leaf: Option<&str>, out: &mut dyn Write) -> Result<(), InteropError> {
    write_markdown(s, leaf, out, true)
}

/// [`export_markdown`]; with `previews` off, every entry decoded whole (the
/// tests' yardstick for what the streamed texts must give).
pub(crate) fn write_markdown(
    s: &Session,
    leaf: Option<&str>,
    out: &mut dyn Write,
    previews: bool,
) -> Result<(), InteropError> {
    if let Some(id) = leaf {
        if s.position_of(id).is_none() {
            return Err(InteropError::NoEntry {
                path: s.session_file().unwrap_or(s.session_dir()).to_owned(),
                id: id.to_owned(),
            });
        }
    }
    let path = s.branch_positions(leaf);
    let h = s.header();
    let title = s.session_name()?.map_or_else(|| format!("Session {}", h.id), str::to_owned);
    let last = path.last().and_then(|&p| s.id_at(p)).map_or_else(|| "(none)".to_owned(), |id| id.to_string());
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let head = format!(
        "# {}\n\nSession `{}`, started {}{}; the path to `{last}` ({} entries).\n",
        escape_line(&title),
        h.id,
        h.timestamp,
        h.cwd.as_deref().map(|c| format!(" in `{c}`")).unwrap_or_default(),
        path.len()
    );
    out.write_all(head.as_bytes()).map_err(|e| failed(s, e))?;
    for batch in path.chunks(2048) {
        // Entries on lines too long to hold come as previews; what they cut is read when written.
        let entries = if previews { s.decode_previews(batch)? } else { s.decode_many(batch)? };
        for (&p, e) in batch.iter().zip(entries) {
            let Some(e) = e else { continue };
            let cuts = if previews { cuts_at(s, p)? } else { Box::new(NoCuts) };
            let label = s.label(&e.id).map(|l| l.map(|l| l.text.as_str()))?;
            section(&mut out, &e, label, cuts.as_ref()).map_err(|e| failed(s, e))?;
        }
    }
    out.flush().map_err(|e| failed(s, e))
}

/// One entry's section (nothing for entries the model does not see).
fn section(out: &mut dyn Write, e: &arbor_log::Entry, label: Option<&str>, cuts: &dyn Cuts) -> io::Result<()> {
    let d = describe(e);
    let asked = Asked::new(cuts);
    let cuts = &asked;
    if !d.conversational {
        return Ok(());
    }
    let label = label.map(|l| format!(" · [{}]", escape_line(l))).unwrap_or_default();
    let heading = match &d.kind {
        Kind::Role(Role::User) => "User".to_owned(),
        Kind::Role(Role::Assistant) => "Assistant".to_owned(),
        _ => capitalized(&d.heading),
    };
    let failed = if d.error { " (error)" } else { "" };
    write!(out, "\n## {heading}{failed}{label}\n\n<sub>{} · {}</sub>\n", e.id, e.timestamp)?;
    let summary = d.kind.is_summary();
    for (p, at) in d.parts.iter().zip(d.at.iter().copied()) {
        out.write_all(b"\n")?;
        match p {
            Part::Text(t) => {
                let t = Src::of(cuts, at.pointer(), t);
                if summary {
                    md_quoted(t.get(), out)?;
                } else {
                    md_text(t.get(), out)?;
                }
            }
            Part::Thinking(t) => {
                let t = Src::of(cuts, at.pointer(), t);
                md_folded("Thinking", out, |o| md_fenced("text", t.get(), o))?;
            }
            Part::Call { name, arguments, .. } => {
                call(out, &call_view_in(name, arguments, at.pointer(), cuts)?, at, cuts)?;
            }
            Part::Output(t) => {
                let t = Src::of(cuts, at.pointer(), t);
                let what = if d.error { "Output (error)" } else { "Output" };
                md_folded(what, out, |o| md_fenced("text", t.get(), o))?;
            }
            Part::Image { mime, data } => {
                // Named, not shown: nothing of it is left out.
                let _ = Src::of(cuts, at.pointer(), data);
                writeln!(out, "*[image: {mime}]*")?;
            }
        }
    }
    if let Some(stop) = &d.stop {
        write!(out, "\n> **{}**\n", escape_line(&stop.line()))?;
    }
    let left = asked.missed();
    if left > 0 {
        let what = if left == 1 { "value is" } else { "values are" };
        write!(out, "\n*{left} more {what} too long to show whole here: the first 4 KB of each is shown.*\n")?;
    }
    Ok(())
}

/// A tool call: the tool and its one line, and what more it holds folded.
fn call(out: &mut dyn Write, v: &CallView, at: At, cuts: &dyn Cuts) -> io::Result<()> {
    let line = if v.line.is_empty() { String::new() } else { format!(" <code>{}</code>", escape(&v.line)) };
    let summary = format!("Tool call: {}{line}", escape(&v.tool));
    let pointer = at.pointer().zip(v.key).map(|(p, k)| format!("{p}/{k}"));
    let (lang, held) = match &v.detail {
        Detail::None => {
            writeln!(out, "{summary}")?;
            return Ok(());
        }
        Detail::Command(c) => ("sh", c),
        Detail::Content(c) => ("text", c),
        Detail::Json(j) => ("json", j),
        Detail::Patch(p) => ("diff", p),
        Detail::Diff(edits) => {
            return md_folded(&summary, out, |o| {
                for lines in edits {
                    let body: String = lines.iter().map(|l| format!("{}{}\n", l.sign, l.text)).collect();
                    md_fenced("diff", &body, o)?;
                }
                Ok(())
            });
        }
    };
    let body = Src::of(cuts, pointer, held);
    md_folded(&summary, out, |o| md_fenced(lang, body.get(), o))
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

/// One line of text, with Markdown's heading-breaking characters tamed.
fn escape_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").replace('<', "&lt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fenced(lang: &str, body: &str) -> String {
        let mut v = Vec::new();
        md_fenced(lang, &body, &mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn fences_outgrow_the_backticks_inside() {
        assert_eq!(fenced("text", "a ``` b"), "````text\na ``` b\n````\n");
        assert_eq!(fenced("", "plain\n"), "```\nplain\n```\n");
    }
}
