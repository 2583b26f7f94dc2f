//! Messages on lines too long to hold, written without holding them: the
//! entry is decoded as its preview (every long string cut to its first few
//! KB, `arbor_log::long`), each cut string's value is swapped for a tag,
//! the message is converted and encoded as ever, and where a tag is in the
//! encoded text the whole string's text is streamed from the file, escaped
//! a chunk at a time ([`arbor_tree::LongLine::decode`]). The output is the
//! bytes the whole message would give (what `arbor context --json --llm`
//! prints); a message this cannot be sure of is decoded whole, as before.

use std::io::{self, Write};

use arbor_log::long::text::{write_json_fragment, LongText};
use arbor_tree::{LongLine, Position, Session, TreeError};
use serde_json::Value;

use crate::context::{message_of_entry, ContextStep};
use crate::llm::convert_message;
use crate::parts::Parts;
use crate::session::{stored_positions, SessionPlan, BATCH};
use crate::tokens::EstimateTally;

/// What a tag's encoded text starts with (control characters: escaped by
/// the writer, so the tag's text is found in the output as written).
const TAG: &str = "\u{1}\u{2}arbor-long ";
const TAG_ENCODED: &[u8] = b"\\u0001\\u0002arbor-long ";
/// What a tag's encoded text ends with.
const TAG_END: &str = "\u{2}\u{1}";
const TAG_END_ENCODED: &[u8] = b"\\u0002\\u0001";

/// The message of the entry at `p` on a long line, after pi's
/// convertToLlm, ready to be written with its long strings streamed.
pub(crate) struct LongLlm<'s> {
    line: LongLine<'s>,
    /// The converted message with tags for the long strings, encoded
    /// (`None` when the mapping drops the message).
    encoded: Option<Vec<u8>>,
}

impl<'s> LongLlm<'s> {
    /// The converted message of the entry at `p`, when its line is long and
    /// every long string of its message can be told from the preview;
    /// `None` when the caller decodes the entry whole instead.
    pub(crate) fn of(session: &'s Session, p: Position) -> io::Result<Option<LongLlm<'s>>> {
        let Some(line) = session.long_line_at(p).map_err(io::Error::other)? else { return Ok(None) };
        let Some(mut message) = preview_message(&line) else { return Ok(None) };
        // A tag must be nowhere in the message as it is.
        let plain = convert_message(&message).map(|m| arbor_log::json::to_vec(&m)).transpose()?;
        if plain.is_some_and(|b| memchr::memmem::find(&b, TAG_ENCODED).is_some()) {
            return Ok(None);
        }
        if !tag_long_strings(&line, &mut message) {
            return Ok(None);
        }
        let encoded = convert_message(&message).map(|m| arbor_log::json::to_vec(&m)).transpose()?;
        Ok(Some(LongLlm { line, encoded }))
    }

    /// True when the mapping for the model drops the message.
    pub(crate) fn dropped(&self) -> bool {
        self.encoded.is_none()
    }

    /// Writes the converted message, each tag replaced by its string's
    /// whole text, escaped, read from the file a block at a time.
    pub(crate) fn write<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        let Some(mut rest) = self.encoded.as_deref() else { return Ok(()) };
        while let Some(at) = memchr::memmem::find(rest, TAG_ENCODED) {
            out.write_all(&rest[..at])?;
            let after = &rest[at + TAG_ENCODED.len()..];
            let end = memchr::memmem::find(after, TAG_END_ENCODED).unwrap_or(after.len());
            let k: usize = std::str::from_utf8(&after[..end]).ok().and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
            let text = self.line.texts().iter().find(|t| t.index == k);
            let Some(text) = text else { return Err(io::Error::other("a long string's tag was changed")) };
            self.line.decode(text, &mut |chunk| write_json_fragment(chunk, out))?;
            rest = after.get(end + TAG_END_ENCODED.len()..).unwrap_or_default();
        }
        out.write_all(rest)
    }
}

/// The message of the entry on a long line, decoded from its preview (what
/// `Session::decode_previews` gives, without reading the line again).
fn preview_message(line: &LongLine<'_>) -> Option<Value> {
    let text = std::str::from_utf8(line.preview_json()).ok()?;
    let entry = arbor_log::Entry::from_value(&arbor_log::json::parse(text.trim_end()).ok()?).ok()?;
    message_of_entry(entry)
}

/// Swaps each long string of the entry's message for its tag; false when
/// one of them is not where its pointer says, with its preview's text.
fn tag_long_strings(line: &LongLine<'_>, message: &mut Value) -> bool {
    let Some(strings) = message_strings(line, message) else { return false };
    for (pointer, t) in strings {
        if let Some(Value::String(s)) = message.pointer_mut(&pointer) {
            *s = tag(t);
        }
    }
    true
}

/// The long strings of an entry's message decoded as its preview: each
/// one's pointer in the message and its [`LongText`], in line order;
/// `None` when one of them is not where its pointer says with its
/// preview's text (the caller then decodes the entry whole).
fn message_strings<'l>(line: &'l LongLine<'_>, message: &Value) -> Option<Vec<(String, &'l LongText)>> {
    let mut strings = vec![];
    for t in line.texts() {
        let pointer = t.pointer.as_deref()?;
        let Some(inner) = pointer.strip_prefix("/message") else { continue };
        if !inner.starts_with('/') {
            return None;
        }
        // Of duplicate keys the record keeps the last: an earlier one is not in it.
        if line.texts().iter().rev().find(|l| l.pointer == t.pointer).map(|l| l.index) != Some(t.index) {
            continue;
        }
        match message.pointer(inner) {
            Some(Value::String(s)) if *s == t.preview => strings.push((inner.to_owned(), t)),
            _ => return None,
        }
    }
    Some(strings)
}

/// What a transcript reads of a long string's whole text.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Measures {
    /// Its length in UTF-16 code units (JavaScript's length).
    pub units: usize,
    /// The length of `JSON.stringify` of it, quotes left out.
    pub escaped: usize,
    /// Its characters.
    pub chars: usize,
    /// Its newlines.
    pub newlines: usize,
    /// Its last character.
    pub last: Option<char>,
}

impl Measures {
    fn add(&mut self, chunk: &str) {
        self.units += crate::js::len(chunk);
        self.chars += chunk.chars().count();
        let mut extra = 0;
        for &b in chunk.as_bytes() {
            extra += match b {
                b'"' | b'\\' | 0x08 | b'\t' | b'\n' | 0x0c | b'\r' => 1,
                0..0x20 => 5,
                _ => 0,
            };
            self.newlines += usize::from(b == b'\n');
        }
        self.escaped += crate::js::len(chunk) + extra;
        self.last = chunk.chars().next_back().or(self.last);
    }
}

/// The message of an entry on a long line as its preview, with the
/// measures of each long string's whole text (streamed from the file once).
pub(crate) struct Measured {
    /// The message, each long string cut to its preview.
    pub message: Value,
    /// Each long string: its pointer in the message, its preview, its measures.
    pub strings: Vec<(String, String, Measures)>,
}

impl Measured {
    /// The message of the entry at `p`, when its line is long and every
    /// long string of its message can be told from the preview (`None`:
    /// the caller decodes the entry whole).
    pub(crate) fn of(session: &Session, p: Position) -> io::Result<Option<Measured>> {
        let Some(line) = session.long_line_at(p).map_err(io::Error::other)? else { return Ok(None) };
        let Some(message) = preview_message(&line) else { return Ok(None) };
        let Some(found) = message_strings(&line, &message) else { return Ok(None) };
        let mut strings = Vec::with_capacity(found.len());
        for (pointer, t) in found {
            let mut m = Measures::default();
            line.decode(t, &mut |chunk| {
                m.add(chunk);
                Ok(())
            })?;
            strings.push((pointer, t.preview.clone(), m));
        }
        Ok(Some(Measured { message, strings }))
    }

    /// The characters the token estimate counts of the whole message: of
    /// the message with every long string empty, plus each string's
    /// length as often as the estimate counts it. How often, and how often
    /// inside `JSON.stringify` (a tool call's arguments), is asked of the
    /// message: with the string as `"a"` each count adds 1, as `"\n"` each
    /// stringified one adds 1 more.
    pub(crate) fn estimated_chars(&self) -> usize {
        let chars = |m: &Value| Parts::of_value(m).estimated_chars();
        let base = chars(&self.with(|_| String::new()));
        let mut total = base;
        for (k, (_, _, measures)) in self.strings.iter().enumerate() {
            let a = chars(&self.with(|j| if j == k { "a".into() } else { String::new() }));
            let newline = chars(&self.with(|j| if j == k { "\n".into() } else { String::new() }));
            let counted = a.saturating_sub(base);
            let escaped = newline.saturating_sub(a).min(counted);
            total += (counted - escaped) * measures.units + escaped * measures.escaped;
        }
        total
    }

    /// The message with long string `k` as `text(k)`.
    pub(crate) fn with(&self, text: impl Fn(usize) -> String) -> Value {
        let mut m = self.message.clone();
        for (k, (pointer, _, _)) in self.strings.iter().enumerate() {
            if let Some(Value::String(s)) = m.pointer_mut(pointer) {
                *s = text(k);
            }
        }
        m
    }
}

fn tag(t: &LongText) -> String {
    format!("{TAG}{}{TAG_END}", t.index)
}

/// The estimate of the context a plan describes, a batch of messages at a
/// time ([`crate::plan::for_each_message`] into an [`EstimateTally`]); a
/// message on a line too long to hold is counted from its preview and its
/// long texts measured as they stream (`long::Measured`), never held.
pub fn estimate_tally(session: &Session, plan: &SessionPlan) -> Result<EstimateTally, TreeError> {
    let SessionPlan { path, plan, .. } = plan;
    let mut tally = EstimateTally::default();
    for batch in plan.steps.chunks(BATCH) {
        let wanted: Vec<Position> =
            stored_positions(path, batch).into_iter().filter(|&p| !session.is_long_at(p)).collect();
        let mut decoded = session.decode_many(&wanted)?.into_iter();
        for step in batch {
            match step {
                ContextStep::Made(m) => tally.add(m),
                ContextStep::Message(i) if session.is_long_at(path[*i]) => {
                    match Measured::of(session, path[*i]).map_err(|e| tree_error(session, e))? {
                        Some(m) => tally.add_with_chars(&m.message, m.estimated_chars()),
                        None => {
                            if let Some(m) = session.decode_at(path[*i])?.and_then(message_of_entry) {
                                tally.add(&m);
                            }
                        }
                    }
                }
                ContextStep::Message(_) => {
                    if let Some(m) = decoded.next().flatten().and_then(message_of_entry) {
                        tally.add(&m);
                    }
                }
            }
        }
    }
    Ok(tally)
}

/// An I/O error of a session's read as the [`TreeError`] it holds, or one naming the file.
fn tree_error(session: &Session, e: io::Error) -> TreeError {
    let path = session.session_file().map(|p| p.to_owned()).unwrap_or_default();
    let kind = e.kind();
    match e.into_inner() {
        Some(inner) => match inner.downcast::<TreeError>() {
            Ok(tree) => *tree,
            Err(other) => TreeError::Log(arbor_log::LogError::io(path, io::Error::new(kind, other))),
        },
        None => TreeError::Log(arbor_log::LogError::io(path, io::Error::from(kind))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    use arbor_tree::{OpenMode, SessionOptions};
    use serde_json::json;

    use crate::plan::{for_each_message, plan_path};

    /// `--json --llm` as it was written before: every message decoded whole.
    fn held(s: &Session) -> Vec<u8> {
        let plan = plan_path(s, s.branch_positions(None)).unwrap();
        let mut all = vec![];
        for_each_message::<arbor_tree::TreeError>(s, &plan, |m| {
            all.extend(convert_message(m));
            Ok(())
        })
        .unwrap();
        arbor_log::json::to_vec(&all).unwrap()
    }

    fn streamed(s: &Session) -> Vec<u8> {
        let plan = plan_path(s, s.branch_positions(None)).unwrap();
        let mut out = vec![];
        crate::plan::write_llm_json(&mut out, s, &plan).unwrap();
        out
    }

    /// Messages of every role whose long strings a model sees, each with
    /// escapes, control characters and characters of every size astride
    /// the blocks: the output is byte for byte what decoding them whole
    /// writes, and the long strings were streamed (not decoded whole).
    #[test]
    fn long_messages_are_written_as_the_held_ones_are() {
        let unit = "a\"b\\c\u{1}\u{1f}\u{7f}\n\t é€😀 </x>";
        let long = unit.repeat(arbor_log::long::LONG_LINE / unit.len() + 100);
        let other = "y".repeat(arbor_log::long::HELD + 7);
        let messages = [
            json!({"role":"assistant","content":[{"type":"thinking","thinking":other},{"type":"text","text":long},
                {"type":"toolCall","id":"c","name":"bash","arguments":{"command":long}}],"provider":"p","model":"m","timestamp":1}),
            json!({"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":long}],"isError":false,"timestamp":2}),
            json!({"role":"user","content":long,"timestamp":3}),
            json!({"role":"bashExecution","command":"ls","output":long,"exitCode":0,"timestamp":4}),
            json!({"role":"custom","customType":"note","content":long,"display":true,"timestamp":5}),
            json!({"role":"bashExecution","command":"ls","output":long,"excludeFromContext":true,"timestamp":6}),
            json!({"role":"somethingElse","content":long,"timestamp":7}),
        ];
        let d = tempfile::tempdir().unwrap();
        for (k, m) in messages.iter().enumerate() {
            let file = d.path().join(format!("{k}.jsonl"));
            let lines = [
                json!({"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}),
                json!({"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",
                    "message":{"role":"user","content":"hi","timestamp":1}}),
                json!({"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z","message":m}),
                json!({"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:00.000Z",
                    "message":{"role":"user","content":"bye","timestamp":9}}),
            ];
            let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(&file, body).unwrap();
            let s = Session::open(&file, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
            let b = s.position_of("b").unwrap();
            assert!(s.is_long_at(b));
            let long_llm = LongLlm::of(&s, b).unwrap().expect("streamed");
            assert_eq!(long_llm.dropped(), k >= 5, "message {k}");
            // The token estimate counts the whole texts (what `arbor diff` shows).
            let plan = plan_path(&s, s.branch_positions(None)).unwrap();
            let mut tally = EstimateTally::default();
            for_each_message::<TreeError>(&s, &plan, |m| {
                tally.add(m);
                Ok(())
            })
            .unwrap();
            let counted = estimate_tally(&s, &plan).unwrap();
            assert_eq!((counted.tokens(), counted.count()), (tally.tokens(), tally.count()), "message {k}");
            let (want, got) = (held(&s), streamed(&s));
            assert!(want == got, "message {k}: {} bytes written, {} held", got.len(), want.len());
            assert!(want.len() > long.len() || k >= 5, "message {k}");
        }
    }
}
