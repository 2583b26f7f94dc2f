//! The readable transcript of a context (`arbor context` without `--json`):
//! a line or a few per message, then the model, thinking level and tokens.

use std::io::{self, Write};

use serde_json::Value;

use arbor_log::Role;
use arbor_tree::{Position, Session};

use super::entry::format_tool_call;
use crate::context::{message_of_entry, ContextStep, SessionContext};
use crate::llm::convert_message;
use crate::long::Measured;
use crate::parts::{stored_parts, Parts};
use crate::session::{stored_positions, write_checked, Checked, SessionPlan, BATCH};
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

/// What the lines of a message count of its whole text, when the message
/// is held as its preview (`None`: counted from the message).
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    /// The characters of its thinking.
    thinking: Option<usize>,
    /// The lines of its text.
    lines: Option<usize>,
}

/// The characters of a message's thinking blocks.
fn thinking_chars(m: &Parts<'_>) -> usize {
    m.blocks()
        .iter()
        .filter(|b| b.is("thinking"))
        .filter_map(|b| b.thinking.as_deref())
        .map(|t| t.chars().count())
        .sum()
}

/// Appends the lines of message `m` to `out`, each ending in a newline.
fn lines_of(m: &Parts<'_>, counts: Counts, out: &mut String) {
    use std::fmt::Write as _;
    let text = m.text();
    // Writing to a String cannot fail.
    let _ = match m.role() {
        None => writeln!(out, "?: {}", clip(&text, WIDTH)),
        Some(Role::Assistant) => {
            let thinking = counts.thinking.unwrap_or_else(|| thinking_chars(m));
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
            let n = counts.lines.unwrap_or_else(|| line_count(&text));
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

/// How a transcript shows the messages of a context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Form {
    /// Each message as the session stores it (`arbor context`).
    #[default]
    AsStored,
    /// The messages after the mapping for the model, pi's convertToLlm
    /// ([`convert_to_llm`]; `arbor context --llm`): summaries and custom
    /// messages read as user text, other roles dropped.
    ///
    /// [`convert_to_llm`]: crate::convert_to_llm
    ForModel,
}

/// Writes one or more lines per message of `ctx` (shown in `form`), then
/// the model, thinking level and token estimate.
///
/// ```
/// use arbor_context::render::{write_transcript, Form};
/// use arbor_context::Context;
/// use arbor_tree::{Session, SessionOptions};
/// use serde_json::json;
///
/// let mut session = Session::in_memory("/work", SessionOptions::default());
/// session.append_message(json!({"role": "user", "content": "What is a session tree?", "timestamp": 1}))?;
/// let mut text = Vec::new();
/// write_transcript(&mut text, &Context::of(&session).build()?, Form::AsStored)?;
/// assert!(String::from_utf8(text)?.starts_with("user: What is a session tree?\n"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_transcript<W: Write + ?Sized>(out: &mut W, ctx: &SessionContext, form: Form) -> io::Result<()> {
    let llm = form == Form::ForModel;
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
    mut out: &mut W,
    session: &Session,
    plan: &SessionPlan,
    form: Form,
) -> io::Result<Checked> {
    let llm = form == Form::ForModel;
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
    // Entries on long lines are read from their previews, never whole.
    let (long, short): (Vec<Position>, Vec<Position>) = stored.iter().partition(|&&p| session.is_long_at(p));
    let of_line = |_, id: &str, line: &str| Written::of_line(line, id, llm);
    let read = if check {
        let Some(read) = session.map_id_json_sound(&short, of_line) else { return Ok(None) };
        read
    } else {
        session.map_id_json_many(&short, of_line).map_err(io::Error::other)?
    };
    let mut long_read = Vec::with_capacity(long.len());
    for &p in &long {
        long_read.push(match long_written(session, p, llm) {
            Ok(w) => w,
            // Not where the index put it (or changed): read the file again.
            Err(_) if check => return Ok(None),
            Err(e) => return Err(e),
        });
    }
    let (mut read, mut long_read) = (read.into_iter(), long_read.into_iter());
    let mut got: Vec<Option<Written>> = stored
        .iter()
        .map(|p| if session.is_long_at(*p) { long_read.next().flatten() } else { read.next().flatten().flatten() })
        .collect();
    // The entries the text could not be read from are decoded (on all cores).
    let again: Vec<usize> = (0..got.len()).filter(|&k| got[k].is_none()).collect();
    for part in again.chunks(BATCH) {
        let positions: Vec<Position> = part.iter().map(|&k| stored[k]).collect();
        let entries = session.decode_many(&positions).map_err(io::Error::other)?;
        for (&k, e) in part.iter().zip(entries) {
            got[k] = e.and_then(message_of_entry).map(|m| Written::of_value(&m, llm));
        }
    }
    let mut got = got.into_iter();
    let mut out = Vec::with_capacity(batch.len());
    for step in batch {
        let w = match step {
            ContextStep::Made(m) => Some(Written::of_value(m, llm)),
            ContextStep::Message(_) => got.next().flatten(),
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
    lines_counted(m, Counts::default())
}

fn lines_counted(m: &Parts<'_>, counts: Counts) -> String {
    let mut out = String::new();
    lines_of(m, counts, &mut out);
    out
}

/// The message of the entry at `p` on a long line (`Measured`: its preview
/// and what its long strings' whole text measures, streamed once), when
/// its lines and counts from the preview are those of the whole message;
/// `None` when the caller decodes the entry whole. The long texts enter the
/// counts through probes: the message with one long string as `""`, `"a"`
/// and `"\n"` tells how many times it is counted, and how many of those
/// inside a `JSON.stringify` (a tool call's arguments). The lines' clips
/// must read no further than the previews: the same with a character after
/// each preview.
fn long_written(session: &Session, p: Position, llm: bool) -> io::Result<Option<Written>> {
    let Some(m) = Measured::of(session, p)? else { return Ok(None) };
    let preview = Parts::of_value(&m.message);
    if llm && !matches!(preview.role(), Some(Role::User | Role::Assistant | Role::ToolResult)) {
        return Ok(None);
    }
    let zero = m.with(|_| String::new());
    let zero = Parts::of_value(&zero);
    let (base_thinking, base_text) = (thinking_chars(&zero), zero.text().len());
    let mut thinking = base_thinking;
    let mut newlines = line_count(&zero.text()) - usize::from(!zero.text().is_empty() && !zero.text().ends_with('\n'));
    for (k, (_, _, measures)) in m.strings.iter().enumerate() {
        let as_a = m.with(|j| if j == k { "a".into() } else { String::new() });
        let a = Parts::of_value(&as_a);
        thinking += thinking_chars(&a).saturating_sub(base_thinking) * measures.chars;
        newlines += a.text().len().saturating_sub(base_text) * measures.newlines;
    }
    // The text's last character: a long string's when the text ends with it.
    let tags = m.with(|k| format!("\u{1}{k}\u{1}"));
    let tagged = Parts::of_value(&tags);
    let text = tagged.text();
    let last = m.strings.iter().enumerate().find(|(k, _)| text.ends_with(&format!("\u{1}{k}\u{1}")));
    let last = last.map_or_else(|| text.chars().next_back(), |(_, (_, _, measures))| measures.last);
    let lines_n = newlines + usize::from(!text.is_empty() && last != Some('\n'));
    let counts = Counts { thinking: Some(thinking), lines: Some(lines_n) };
    let shown = lines_counted(&preview, counts);
    let further = m.with(|k| format!("{}\u{1}", m.strings[k].1));
    if lines_counted(&Parts::of_value(&further), counts) != shown {
        return Ok(None);
    }
    Ok(Some(Written { lines: Some(shown), counted: Counted::with_chars(&preview, m.estimated_chars()) }))
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
    #![allow(clippy::unwrap_used)]
    use super::*;

    use arbor_tree::{OpenMode, SessionOptions};
    use serde_json::json;

    use crate::Context;

    /// A session whose second message is `m`, on a line too long to hold.
    fn session_of(dir: &std::path::Path, k: usize, m: &Value) -> Session {
        let file = dir.join(format!("{k}.jsonl"));
        let lines = [
            json!({"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}),
            json!({"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",
                "message":{"role":"user","content":"hi","timestamp":1}}),
            json!({"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z","message":m}),
        ];
        let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&file, body).unwrap();
        let s = Session::open(&file, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
        assert!(s.is_long_at(s.position_of("b").unwrap()), "message {k} is on a long line");
        s
    }

    /// The transcript of messages on long lines, read from their previews
    /// with their long texts measured as they stream, is the one of the
    /// messages held whole: clips, line and character counts, tokens.
    #[test]
    fn long_messages_are_shown_and_counted_as_the_held_ones_are() {
        let unit = "a \"b\\c\u{1}\n\t é€😀\r\n";
        let long = unit.repeat(arbor_log::long::LONG_LINE / unit.len() + 100);
        let ends_in_newline = format!("{long}x\n");
        let other = "y\n".repeat(arbor_log::long::HELD);
        let blank = format!("{}{long}", " ".repeat(8 << 10));
        // (message, read from its preview)
        let messages = [
            (
                json!({"role":"assistant","content":[{"type":"thinking","thinking":other},{"type":"text","text":"short"},
                {"type":"text","text":long},{"type":"toolCall","id":"c","name":"write",
                "arguments":{"path":"a.txt","content":other}}],"stopReason":"stop","timestamp":1}),
                true,
            ),
            (
                json!({"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":ends_in_newline}],"timestamp":2}),
                true,
            ),
            (json!({"role":"user","content":long,"timestamp":3}), true),
            (json!({"role":"bashExecution","command":"ls","output":long,"exitCode":0,"timestamp":4}), true),
            (json!({"role":"custom","customType":"note","content":long,"display":true,"timestamp":5}), true),
            (json!({"role":"user","content":blank,"timestamp":7}), false),
        ];
        let d = tempfile::tempdir().unwrap();
        for (k, (m, streamed)) in messages.iter().enumerate() {
            let s = session_of(d.path(), k, m);
            let b = s.position_of("b").unwrap();
            assert_eq!(long_written(&s, b, false).unwrap().is_some(), *streamed, "message {k}");
            for form in [Form::AsStored, Form::ForModel] {
                let mut held = vec![];
                write_transcript(&mut held, &Context::of(&s).build().unwrap(), form).unwrap();
                let plan = crate::plan::plan_path(&s, s.branch_positions(None)).unwrap();
                let mut got = vec![];
                assert_eq!(write_plan_transcript(&mut got, &s, &plan, form).unwrap(), Checked::Written);
                assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(held).unwrap(), "message {k}, {form:?}");
            }
        }
    }

    #[test]
    fn lines_are_counted_as_str_lines_counts_them() {
        for text in ["", "\n", "a", "a\n", "a\nb", "\n\n", "a\r\nb\r\n", "\r", "x\n\ny", "é\n红"] {
            assert_eq!(line_count(text), text.lines().count(), "{text:?}");
        }
    }
}
