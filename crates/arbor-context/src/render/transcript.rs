//! The readable transcript of a context (`arbor context` without `--json`):
//! a line or a few per message, then the model, thinking level and tokens.

use std::io::{self, Write};

use serde_json::Value;

use arbor_log::Role;
use arbor_tree::{Position, Session};

use super::entry::format_tool_call;
use crate::context::{message_of_entry, ContextStep, SessionContext};
use crate::json::BATCH;
use crate::llm::convert_message;
use crate::parts::{stored_parts, Parts};
use crate::session::{stored_positions, write_checked, Checked, SessionPlan};
use crate::tokens::{Counted, TokenTally};

const WIDTH: usize = 160;

/// `normalize(s)` cut to `n` characters (the last one `…` when cut), reading
/// only the first `n` characters of a long text (and trimming it from the end).
fn clip(s: &str, n: usize) -> String {
    // `normalize` turns newlines and tabs, which are white space, into spaces
    // and trims: the same as trimming first.
    let s = s.trim();
    let cut = s.char_indices().nth(n).map(|_| s.char_indices().nth(n.saturating_sub(1)).map_or(0, |(i, _)| i));
    let shown = cut.map_or(s, |at| &s[..at]);
    let mut out = shown.replace(['\n', '\t'], " ");
    if cut.is_some() {
        out.push('…');
    }
    out
}

/// `text.lines().count()`, counted as newline bytes (a loop the compiler
/// turns into vector code: tool outputs of megabytes are counted whole).
fn line_count(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Appends the lines of message `m` to `out`, each ending in a newline.
fn lines_of(m: &Parts<'_>, out: &mut String) {
    use std::fmt::Write as _;
    let text = m.text();
    // Writing to a String cannot fail.
    let _ = match m.role() {
        None => writeln!(out, "?: {}", clip(&text, WIDTH)),
        Some(Role::Assistant) => {
            let thinking: usize = m
                .blocks()
                .iter()
                .filter(|b| b.is("thinking"))
                .filter_map(|b| b.thinking.as_deref())
                .map(|t| t.chars().count())
                .sum();
            if !text.trim().is_empty() {
                let _ = write!(out, "assistant: {}", clip(&text, WIDTH));
            } else {
                let _ = match m.stop_reason.as_deref() {
                    Some("aborted") => write!(out, "assistant: (aborted)"),
                    Some("error") => {
                        write!(out, "assistant: (error) {}", clip(m.error_message.as_deref().unwrap_or(""), WIDTH))
                    }
                    _ => write!(out, "assistant:"),
                };
            }
            if thinking > 0 {
                let _ = write!(out, "  [thinking: {thinking} chars]");
            }
            out.push('\n');
            for b in m.blocks().iter().filter(|b| b.is("toolCall")) {
                let name = b.name.as_deref().unwrap_or("tool");
                let args = b.arguments.as_deref().unwrap_or(&Value::Null);
                let _ = writeln!(out, "  → {}", format_tool_call(name, args, None));
            }
            Ok(())
        }
        Some(Role::ToolResult) => {
            let name = m.tool_name.as_deref().unwrap_or("tool");
            let err = if m.is_error == Some(true) { " (error)" } else { "" };
            let n = line_count(&text);
            writeln!(out, "  ← {name}{err}: {} ({n} lines)", clip(&text, WIDTH - 20))
        }
        Some(Role::BashExecution) => writeln!(out, "bash: $ {}", clip(m.command.as_deref().unwrap_or(""), WIDTH)),
        Some(Role::Custom) => {
            let t = m.custom_type.as_deref().unwrap_or(Role::Custom.as_str());
            writeln!(out, "[{t}]: {}", clip(&text, WIDTH))
        }
        Some(Role::BranchSummary) => {
            writeln!(out, "[branch summary]: {}", clip(m.summary.as_deref().unwrap_or(""), WIDTH))
        }
        Some(Role::CompactionSummary) => {
            let before = m.tokens_before.unwrap_or(0.0);
            writeln!(out, "[compaction, {before} tokens before]: {}", clip(m.summary.as_deref().unwrap_or(""), WIDTH))
        }
        Some(role @ (Role::User | Role::HookMessage | Role::Developer | Role::Other(_))) => {
            writeln!(out, "{role}: {}", clip(&text, WIDTH))
        }
    };
}

/// Writes one or more lines per message of `ctx` (after [`convert_to_llm`]
/// when `llm`), then the model, thinking level and token estimate.
///
/// [`convert_to_llm`]: crate::convert_to_llm
pub fn write_transcript<W: Write + ?Sized>(out: &mut W, ctx: &SessionContext, llm: bool) -> io::Result<()> {
    let mut t = Transcript::default();
    for m in &ctx.messages {
        t.write(out, &Written::of_value(m, llm))?;
    }
    t.finish(out, ctx)
}

/// [`write_transcript`] of the context a plan of the session's context
/// describes, holding one batch of its messages at a time: the lines of the
/// stored messages are read and their lines written on all cores, straight
/// from the JSON text where it can be (`parts::stored_parts`; the entry is
/// decoded otherwise), then written out in order and dropped, so a context
/// of a million messages is never all in memory.
///
/// Each line is read once, and checked as it is read when the session was
/// opened through its index: the transcript is written once every line is
/// known to be where the index put it (see [`Checked`]; past 4 MiB of
/// text, the lines still to come are checked first and the rest streams).
pub fn write_plan_transcript<W: Write + ?Sized>(
    session: &Session,
    plan: &SessionPlan,
    mut out: &mut W,
    llm: bool,
) -> io::Result<Checked> {
    let mut t = Transcript::default();
    let checked = write_checked(session, plan, &mut out, TEXT_BATCH, |batch, check, sink| {
        let Some(written) = written_batch(session, &plan.path, batch, llm, check)? else { return Ok(false) };
        for w in written {
            t.write(sink, &w)?;
        }
        Ok(true)
    })?;
    if checked == Checked::Written {
        t.finish(out, &plan.plan.settings)?;
    }
    Ok(checked)
}

/// Steps of the plan whose messages are read at once. Only their lines are
/// held (a few hundred bytes a message), and the entries decoded instead
/// are decoded [`BATCH`] at a time.
const TEXT_BATCH: usize = 8 * BATCH;

/// The messages a batch of steps gives, written, in order (a malformed
/// `message` entry gives none); `None` when `check` and a line is not where
/// the session's index put it.
fn written_batch(
    session: &Session,
    path: &[Position],
    batch: &[ContextStep],
    llm: bool,
    check: bool,
) -> io::Result<Option<Vec<Written>>> {
    let stored = stored_positions(path, batch);
    let of_line = |_, id: &str, line: &str| Written::of_line(line, id, llm);
    let read = if check {
        let Some(read) = session.map_id_json_sound(&stored, of_line) else { return Ok(None) };
        read
    } else {
        session.map_id_json_many(&stored, of_line).map_err(io::Error::other)?
    };
    // The entries the text could not be read from are decoded (on all cores).
    let again: Vec<Position> =
        stored.iter().zip(&read).filter(|(_, r)| !matches!(r, Some(Some(_)))).map(|(&p, _)| p).collect();
    let mut decoded = vec![];
    for part in again.chunks(BATCH) {
        let entries = session.decode_many(part).map_err(io::Error::other)?.into_iter();
        decoded.extend(entries.map(|e| e.and_then(message_of_entry).map(|m| Written::of_value(&m, llm))));
    }
    let mut decoded = decoded.into_iter();
    let mut read = read.into_iter();
    let mut out = Vec::with_capacity(batch.len());
    for step in batch {
        let w = match step {
            ContextStep::Made(m) => Some(Written::of_value(m, llm)),
            ContextStep::Message(_) => match read.next().flatten().flatten() {
                Some(w) => Some(w),
                None => decoded.next().flatten(),
            },
        };
        out.extend(w);
    }
    Ok(Some(out))
}

/// One message of a transcript: its lines (none when the mapping for the
/// model drops it) and what the token tally counts of it.
struct Written {
    lines: Option<String>,
    counted: Counted,
}

impl Written {
    /// Message `m` (shown after pi's convertToLlm when `llm`; the tokens
    /// count the message as stored).
    fn of_value(m: &Value, llm: bool) -> Written {
        let counted = Counted::of(&Parts::of_value(m));
        let lines = if llm {
            convert_message(m).map(|c| lines(&Parts::of_value(&c)))
        } else {
            Some(lines(&Parts::of_value(m)))
        };
        Written { lines, counted }
    }

    /// The message of a `message` entry's JSON `line` with id `id`, when
    /// it can be read from the text ([`stored_parts`]) and (when `llm`) the
    /// mapping for the model passes it through unchanged.
    fn of_line(line: &str, id: &str, llm: bool) -> Option<Written> {
        let m = stored_parts(line, id)?;
        if llm && !matches!(m.role(), Some(Role::User | Role::Assistant | Role::ToolResult)) {
            return None;
        }
        Some(Written { lines: Some(lines(&m)), counted: Counted::of(&m) })
    }
}

fn lines(m: &Parts<'_>) -> String {
    let mut out = String::new();
    lines_of(m, &mut out);
    out
}

/// A transcript written one message at a time: the lines of each message,
/// then (at [`Transcript::finish`]) the footer, which counts what was shown.
#[derive(Default)]
struct Transcript {
    shown: usize,
    tokens: TokenTally,
}

impl Transcript {
    /// Writes the lines of the context's next message.
    fn write<W: Write + ?Sized>(&mut self, out: &mut W, m: &Written) -> io::Result<()> {
        self.tokens.add_counted(m.counted);
        if let Some(lines) = &m.lines {
            self.shown += 1;
            out.write_all(lines.as_bytes())?;
        }
        Ok(())
    }

    /// Writes the footer: the messages shown, the model, thinking level and tokens.
    fn finish<W: Write + ?Sized>(self, out: &mut W, settings: &SessionContext) -> io::Result<()> {
        let model = settings
            .model
            .as_ref()
            .map(|m| format!("{}/{}", m.provider, m.model_id))
            .unwrap_or_else(|| "(none)".into());
        writeln!(
            out,
            "-- {} messages, model {model}, thinking {}, ~{} tokens",
            self.shown,
            settings.thinking_level,
            self.tokens.tokens().tokens
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_as_str_lines_counts_them() {
        for text in ["", "\n", "a", "a\n", "a\nb", "\n\n", "a\r\nb\r\n", "\r", "x\n\ny", "é\n红"] {
            assert_eq!(line_count(text), text.lines().count(), "{text:?}");
        }
    }
}
