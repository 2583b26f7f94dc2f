//! The context at a session's leaf as pi's `SessionContext` JSON, written
//! fast: stored messages are copied from the file rather than decoded and
//! encoded again (what `arbor context --json` prints).

use std::borrow::Cow;
use std::io::{self, Write};

use arbor_log::EntryType;
use arbor_tree::{Position, Session};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::context::{message_of_entry, ContextStep};
use crate::llm::convert_message;
use crate::long::LongLlm;
use crate::session::{stored_positions, SessionPlan, BATCH};

/// Writes the context a plan of the session's context describes as pi's
/// `SessionContext` JSON: what `arbor_log::json::to_writer(out,
/// &plan::build(session, plan))` writes, up to the text of numbers and
/// strings (the parsed JSON is the same; what `arbor context --json` prints).
///
/// The messages of `message` entries are copied from the entries' JSON text
/// as stored instead of being decoded and encoded again (`stored_message`;
/// an entry it is not sure of is decoded). A batch of steps at a time, the
/// lines are read and their messages cut out on all cores
/// (`Session::map_json_many`), so only one batch's messages are held at once.
/// The message of an entry on a long line is copied from the file a block
/// at a time, never held (`Session::write_long_part_at`).
pub fn write_json<W: Write + ?Sized>(out: &mut W, session: &Session, plan: &SessionPlan) -> io::Result<()> {
    let SessionPlan { path, plan, .. } = plan;
    out.write_all(b"{\"messages\":[")?;
    let mut first = true;
    for batch in plan.steps.chunks(BATCH) {
        for text in batch_messages(session, path, batch)? {
            // The comma goes out with the message's first byte (a long line's may give none).
            let mut to = Lead { out: &mut *out, lead: if first { b"" } else { b"," }, pending: true };
            match text {
                Text::Held(text) => to.write_all(&text)?,
                Text::Long(p) => long_message(session, p, &mut to)?,
            }
            first &= to.pending;
        }
    }
    out.write_all(b"]")?;
    if let Some(level) = &plan.settings.thinking_level_value {
        out.write_all(b",\"thinkingLevel\":")?;
        arbor_log::json::to_writer(&mut *out, level)?;
    }
    out.write_all(b",\"model\":")?;
    arbor_log::json::to_writer(&mut *out, &plan.settings.model_value)?;
    out.write_all(b"}")?;
    Ok(())
}

/// Writes the messages of the context a plan describes after pi's
/// convertToLlm as a JSON list (`arbor context --json --llm`): what
/// `to_writer(out, &context.llm_messages())` writes, a batch of messages
/// decoded at a time (as [`crate::plan::for_each_message`] does). The
/// message of an entry on a long line is written from its preview with its
/// long strings streamed from the file (`long::LongLlm`), never held.
pub fn write_llm_json<W: Write + ?Sized>(out: &mut W, session: &Session, plan: &SessionPlan) -> io::Result<()> {
    let SessionPlan { path, plan, .. } = plan;
    out.write_all(b"[")?;
    let mut first = true;
    let mut lead = |out: &mut W| if std::mem::take(&mut first) { Ok(()) } else { out.write_all(b",") };
    for batch in plan.steps.chunks(BATCH) {
        let wanted: Vec<Position> =
            stored_positions(path, batch).into_iter().filter(|&p| !session.is_long_at(p)).collect();
        let mut decoded = session.decode_many(&wanted).map_err(io::Error::other)?.into_iter();
        for step in batch {
            let message = match step {
                ContextStep::Made(m) => convert_message(m),
                ContextStep::Message(i) if session.is_long_at(path[*i]) => match LongLlm::of(session, path[*i])? {
                    Some(long) if long.dropped() => None,
                    Some(long) => {
                        lead(out)?;
                        long.write(&mut *out)?;
                        continue;
                    }
                    None => decoded_message_value(session, path[*i])?.as_ref().and_then(convert_message),
                },
                ContextStep::Message(_) => {
                    decoded.next().flatten().and_then(message_of_entry).as_ref().and_then(convert_message)
                }
            };
            if let Some(m) = message {
                lead(out)?;
                arbor_log::json::to_writer(&mut *out, &m)?;
            }
        }
    }
    out.write_all(b"]")
}

/// The message of the entry at `p`, decoded whole.
fn decoded_message_value(session: &Session, p: Position) -> io::Result<Option<serde_json::Value>> {
    Ok(session.decode_at(p).map_err(io::Error::other)?.and_then(message_of_entry))
}

/// A message of the context: its JSON text, or the position of a message
/// entry on a long line, copied when written ([`long_message`]).
enum Text {
    Held(Vec<u8>),
    Long(Position),
}

/// The JSON text of each message a batch of steps gives, in order (a
/// malformed `message` entry gives none).
fn batch_messages(session: &Session, path: &[Position], batch: &[ContextStep]) -> io::Result<Vec<Text>> {
    let stored: Vec<Position> = stored_positions(path, batch).into_iter().filter(|&p| !session.is_long_at(p)).collect();
    // The message's text as stored, or `None` when the entry must be decoded.
    let copies = session
        .map_id_json_many(&stored, |_, id, line| stored_message(line, id).map(|m| m.as_bytes().to_vec()))
        .map_err(io::Error::other)?;
    let mut copies = stored.iter().zip(copies);
    let mut texts = Vec::with_capacity(batch.len());
    for step in batch {
        let text = match step {
            ContextStep::Made(m) => Some(Text::Held(arbor_log::json::to_vec(m)?)),
            ContextStep::Message(p) if session.is_long_at(path[*p]) => Some(Text::Long(path[*p])),
            ContextStep::Message(_) => match copies.next() {
                Some((_, Some(Some(copy)))) => Some(Text::Held(copy)),
                Some((&index, _)) => decoded_message(session, index)?.map(Text::Held),
                None => None,
            },
        };
        texts.extend(text);
    }
    Ok(texts)
}

/// The message of the entry at `p`, decoded and written again.
fn decoded_message(session: &Session, p: Position) -> io::Result<Option<Vec<u8>>> {
    Ok(decoded_message_value(session, p)?.map(|m| arbor_log::json::to_vec(&m)).transpose()?)
}

/// Writes the message of the entry at `p`, on a long line: copied from the
/// file (what [`stored_message`] cuts out of the line, the parts of it the
/// reduced line does not hold checked for the raw-value marker as they are
/// read), or decoded when that is not sure.
fn long_message(session: &Session, p: Position, out: &mut dyn Write) -> io::Result<()> {
    let id = session.id_at(p).map(|id| id.to_string()).unwrap_or_default();
    let pick = |text: &str| {
        let m = stored_message(text, &id)?;
        let at = (m.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
        Some(at..at + m.len())
    };
    if session.write_long_part_at(p, pick, may_name_raw_value_marker_in, out)? {
        return Ok(());
    }
    match decoded_message(session, p)? {
        Some(m) => out.write_all(&m),
        None => Ok(()),
    }
}

/// [`may_name_raw_value_marker`] of bytes (a window of a line).
fn may_name_raw_value_marker_in(bytes: &[u8]) -> bool {
    ["RawValue", "\\u005", "\\u006", "\\u007"].iter().any(|n| memchr::memmem::find(bytes, n.as_bytes()).is_some())
}

/// Writes `lead` before the first byte written through it.
struct Lead<'a, W: ?Sized> {
    out: &'a mut W,
    lead: &'static [u8],
    pending: bool,
}

impl<W: Write + ?Sized> Write for Lead<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pending && !buf.is_empty() {
            self.out.write_all(self.lead)?;
            self.pending = false;
        }
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The text of the `message` of a `message` entry's JSON `line`, as stored,
/// when it parses to the very message that decoding the entry gives; `None`
/// when that is not sure, and the caller decodes the entry instead:
/// - the line is not an object with exactly one `type` (`"message"`), one
///   `id` (the session's: the file may have changed since it was opened) and
///   one `message` key: a decoded entry keeps the last of duplicate keys (a
///   derived struct refuses them), and one without a message is malformed
///   and gives none;
/// - the message may hold serde_json's raw-value marker key
///   (`$serde_json::private::RawValue`), which a decoded `Value` replaces by
///   the JSON its string holds: the text names it, or escapes a letter of it.
///
/// Everything else a `Value` does to a message leaves its parsed JSON as it
/// is: duplicate keys inside it (every parser keeps the last), escapes,
/// whitespace and the spelling of numbers.
fn stored_message<'a>(line: &'a str, id: &str) -> Option<&'a str> {
    let m = message_of_line::<&RawValue>(line, id)?.get();
    (!may_name_raw_value_marker(m)).then_some(m)
}

/// The `message` of a `message` entry's JSON `line` read as `M`: `None`
/// unless the line is an object with exactly one `type` (`"message"`), one
/// `id` (`id`) and one `message` key, whose value reads as `M`.
pub(crate) fn message_of_line<'a, M: Deserialize<'a>>(line: &'a str, id: &str) -> Option<M> {
    #[derive(Deserialize)]
    struct Stored<'a, M> {
        #[serde(rename = "type", borrow)]
        entry_type: Cow<'a, str>,
        #[serde(borrow)]
        id: Cow<'a, str>,
        message: M,
    }
    let e: Stored<M> = serde_json::from_str(line).ok()?;
    (e.entry_type == EntryType::Message.as_str() && e.id == id).then_some(e.message)
}

/// True when JSON text may hold the key `$serde_json::private::RawValue`:
/// it has `RawValue`, or a `\u` escape of one of its letters (`\u005x`,
/// `\u006x`, `\u007x`; an escape of any other character of the key leaves
/// `RawValue` in the text).
pub(crate) fn may_name_raw_value_marker(text: &str) -> bool {
    // `contains` searches short needles with SIMD: a few passes cost less than one walk over every `\u`.
    text.contains("RawValue")
        || text.contains("\\u00") && ["\\u005", "\\u006", "\\u007"].iter().any(|n| text.contains(n))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::path::Path;

    use arbor_tree::{OpenMode, SessionOptions};
    use serde_json::{json, Value};

    use crate::Context;

    /// `context --json` of the session's leaf, parsed.
    fn written(s: &Session) -> Value {
        let mut out = Vec::new();
        Context::of(s).write_json(&mut out).unwrap();
        // As JavaScript reads it: the output writes lone surrogates as their escapes.
        let text = String::from_utf8(out).unwrap();
        arbor_log::json::parse(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// Checks, at a spread of leaves, that the written context parses to the
    /// decoded one; returns how many leaves were checked.
    fn check_file(path: &Path) -> usize {
        let mut checked = 0;
        for index_first in [true, false] {
            let opts = SessionOptions { index_first, index_dir: None, ..Default::default() };
            let Ok(mut s) = Session::open(path, OpenMode::ReadOnly, opts) else { return 0 };
            let leaves: Vec<Option<String>> = std::iter::once(None)
                .chain(s.positions().step_by((s.len() / 40).max(1)).map(|i| s.id_at(i).map(|id| id.to_string())))
                .collect();
            for leaf in leaves {
                if let Some(id) = &leaf {
                    s.branch(id).unwrap();
                }
                // Read back from its text, as the output is: a value nested past serde_json's
                // limit is kept as its JSON text at a depth counted from the document's root.
                let want = arbor_log::json::to_string(&Context::of(&s).build().unwrap()).unwrap();
                let want = arbor_log::json::parse(&want).unwrap();
                assert_eq!(written(&s), want, "{} at {leaf:?}", path.display());
                checked += 1;
            }
        }
        checked
    }

    /// A message on a line too long to hold is copied from the file whole
    /// (a text of 6 MB, past `arbor_log::long::LONG_LINE`); one whose cut
    /// text names the raw-value marker is decoded instead; either way the
    /// written context is the decoded one.
    #[test]
    fn a_message_on_a_long_line_is_copied_whole() {
        let d = tempfile::tempdir().unwrap();
        for (name, inner) in [("plain", "x"), ("marker", "RawValue"), ("escaped", "\\u0052awValue")] {
            let text = format!("{}{inner}{}", "word ".repeat(600_000), " end".repeat(100_000));
            let file = d.path().join(format!("{name}.jsonl"));
            let lines = [
                json!({"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}),
                json!({"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",
                    "message":{"role":"user","content":"hi","timestamp":1}}),
                json!({"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z",
                    "message":{"role":"assistant","content":[{"type":"text","text":text}],"provider":"p","model":"m","timestamp":1}}),
            ];
            let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(&file, body).unwrap();
            let opts = SessionOptions { index_first: false, index_dir: None, ..Default::default() };
            let s = Session::open(&file, OpenMode::ReadOnly, opts).unwrap();
            let want = arbor_log::json::parse(&arbor_log::json::to_string(&Context::of(&s).build().unwrap()).unwrap())
                .unwrap();
            let got = written(&s);
            assert_eq!(got, want, "{name}");
            assert_eq!(got["messages"][1]["content"][0]["text"].as_str().map(str::len), Some(text.len()), "{name}");
            assert_eq!(got["model"], json!({"provider":"p","modelId":"m"}), "{name}");
        }
    }

    #[test]
    fn context_json_parses_to_the_session_context_for_every_fixture() {
        let files = arbor_test_support::jsonl_under(&arbor_test_support::fixtures());
        let checked: usize = files.iter().map(|f| check_file(f)).sum();
        assert!(files.len() > 40 && checked > 500, "{} files, {checked} leaves", files.len());
    }

    /// A session file: a header and `lines` (one entry each, as given).
    fn session_file(lines: &[String]) -> tempfile::NamedTempFile {
        let mut f = tempfile::Builder::new().suffix(".jsonl").tempfile().unwrap();
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
        writeln!(f, "{header}").unwrap();
        for l in lines {
            f.write_all(l.as_bytes()).unwrap();
            f.write_all(b"\n").unwrap();
        }
        f
    }

    /// An entry line with id `n` whose parent is `n - 1`, and `body` after the base fields.
    fn line(n: usize, body: &str) -> String {
        let parent = if n == 0 { "null".to_owned() } else { format!("\"e{}\"", n - 1) };
        format!(r#"{{"type":"message","id":"e{n}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z",{body}}}"#)
    }

    #[test]
    fn messages_the_copy_cannot_be_sure_of_are_decoded() {
        let bodies = [
            // Duplicate `message` keys: the decoded entry keeps the last.
            r#""message":{"role":"user","content":"first"},"message":{"role":"user","content":"second"}"#,
            r#""message":{"role":"user","content":"a"},"mess\u0061ge":{"role":"user","content":"b"}"#,
            // Malformed: no message; a message that is not an object.
            r#""msg":{"role":"user","content":"x"}"#,
            r#""message":null"#,
            r#""message":"just text""#,
            r#""message":[1,2.50,1e2]"#,
            // serde_json's raw-value marker: a Value holds the JSON of its string.
            r#""message":{"role":"user","content":{"$serde_json::private::RawValue":"[1, 2]"}}"#,
            r#""message":{"role":"user","content":[{"$serde_json::private::\u0052awValue":"{\"a\":1}"}]}"#,
            r#""message":{"role":"user","content":"the word RawValue"}"#,
            // Parsed the same, spelled differently: duplicate keys inside, escapes, numbers, spaces.
            r#""message":{"role":"user","content":"a","content":"b","x":{"k":1,"k":2}}"#,
            r#""message" : { "role" : "user" , "content" : "caf\u00e9 \/ \ud83d\ude00 \u001b[0m" , "timestamp" : 1.50 }"#,
            r#""message":{"role":"user","content":"n","nums":[1.0,-0,1E2,18446744073709551616,12345678901234567890123,0.1,5e-324]}"#,
            // Duplicate base keys: the last `type`/`id` count.
            r#""message":{"role":"user","content":"dup type"},"type":"message""#,
            r#""message":{"role":"assistant","provider":"p","model":"m","content":[]},"extra":{"k":[1,{"a":null}]}"#,
        ];
        let mut lines: Vec<String> = bodies.iter().enumerate().map(|(n, b)| line(n, b)).collect();
        let n = lines.len();
        lines.push(format!(
            r#"{{"type":"custom_message","customType":"x","content":"c","display":true,"id":"e{n}","parentId":"e{}","timestamp":"2025-01-01T00:00:00.000Z"}}"#,
            n - 1
        ));
        let f = session_file(&lines);
        assert!(check_file(f.path()) > 10);
        // The cases above are really there: the marker became its string's JSON.
        let s = Session::open(f.path(), OpenMode::ReadOnly, SessionOptions { index_dir: None, ..Default::default() })
            .unwrap();
        let ctx = written(&s);
        let messages = ctx["messages"].as_array().unwrap();
        assert!(messages.contains(&json!({"role": "user", "content": "second"})), "{ctx}");
        assert!(messages.contains(&json!({"role": "user", "content": [1, 2]})), "{ctx}");
        assert!(messages.contains(&json!("just text")) && messages.contains(&Value::Null), "{ctx}");
        assert_eq!(messages.len(), lines.len() - 1, "{ctx}");
    }

    #[test]
    fn the_marker_check_finds_every_spelling_of_raw_value() {
        for text in [r#"{"RawValue":1}"#, r#"{"\u0052aw":1}"#, r#""\u0061""#, r#""\u006C""#, r#""\u0077""#] {
            assert!(may_name_raw_value_marker(text), "{text}");
        }
        for text in [r#"{"raw value":"caf\u00e9 \u001b[0m \u0024 \u0041"}"#, "", r#""\\u00""#] {
            assert!(!may_name_raw_value_marker(text), "{text}");
        }
    }

    #[test]
    fn invalid_utf8_is_copied_as_it_is_decoded() {
        let mut f = session_file(&[]);
        let text = line(0, r#""message":{"role":"user","content":"bad @ byte"}"#);
        f.write_all(&text.bytes().map(|b| if b == b'@' { 0xff } else { b }).collect::<Vec<u8>>()).unwrap();
        f.write_all(b"\n").unwrap();
        assert!(check_file(f.path()) > 0);
        let s = Session::open(f.path(), OpenMode::ReadOnly, SessionOptions { index_dir: None, ..Default::default() })
            .unwrap();
        assert_eq!(written(&s)["messages"][0]["content"], "bad \u{fffd} byte");
    }

    #[test]
    fn a_session_of_many_batches_is_written_whole_and_in_order() {
        // More than 256 messages per thread, with made-up messages and a compaction among them.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        let total = 256 * threads * 2 + 77;
        let ts = r#""timestamp":"2025-01-01T00:00:00.000Z""#;
        let lines: Vec<String> = (0..total)
            .map(|n| {
                let parent = if n == 0 { "null".to_owned() } else { format!("\"e{}\"", n - 1) };
                let base = format!(r#""id":"e{n}","parentId":{parent},{ts}"#);
                match n % 97 {
                    13 => format!(r#"{{"type":"custom_message","customType":"x","content":"c{n}","display":true,{base}}}"#),
                    29 => format!(r#"{{"type":"branch_summary",{base},"fromId":"e0","summary":"s{n}"}}"#),
                    41 if n > total / 2 && n < total / 2 + 97 => {
                        format!(r#"{{"type":"compaction",{base},"summary":"S","firstKeptEntryId":"e{}","tokensBefore":9}}"#, n - 300)
                    }
                    _ => format!(r#"{{"type":"message",{base},"message":{{"role":"user","content":"m{n} \"q\" \u00e9\n","timestamp":{n}}}}}"#),
                }
            })
            .collect();
        let f = session_file(&lines);
        let s = Session::open(f.path(), OpenMode::ReadOnly, SessionOptions { index_dir: None, ..Default::default() })
            .unwrap();
        let ctx = written(&s);
        assert_eq!(ctx, serde_json::to_value(Context::of(&s).build().unwrap()).unwrap());
        let n = ctx["messages"].as_array().unwrap().len();
        assert!(n > 256 * threads, "{n} messages");
    }
}
