//! What the tree selector reads from an entry besides its head (docs/cli.md,
//! "The tree selector"): whether pi's selector always hides it, the text a
//! search looks in, and the tool calls it makes, so a tool result's row can
//! name its call.
//!
//! Two ways to the same [`EntryFacts`]: [`entry_facts`] from a decoded entry
//! (the reference), and [`message_facts`] from a `message` entry's JSON line
//! without decoding it, which reads only the message's role, content, stop
//! reason and command, skips everything else at serde_json's scanning speed,
//! and unescapes no more than the first 200 characters of text it needs. On a
//! million-entry session that is the difference between decoding 3 GB into
//! values and scanning it once.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use arbor_log::{content_text, Block, Entry, EntryKind, Role};

use super::entry::format_tool_call;

/// How many characters of a message's text a search looks at (pi's `searchableText`).
pub const SEARCH_CHARS: usize = 200;

/// What the selector needs to know about one entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryFacts {
    /// An assistant message pi's selector never shows: no non-blank text
    /// block, and a stop reason that is missing, `stop` or `toolUse`. (The
    /// session's leaf is shown anyway; that is the caller's to decide.)
    pub hidden: bool,
    /// pi's `searchableText` without the label, lowercased: the role, the
    /// first 200 characters of the message's text and a bash command, or the
    /// words naming any other kind of entry.
    pub search: String,
    /// The tool calls the entry makes, in order: the call's id, and the call
    /// as a result of it is shown (`[read: src/lib.rs]`).
    pub calls: Vec<(String, String)>,
}

/// The facts of a decoded entry; `home` shortens paths in tool calls.
pub fn entry_facts(entry: &Entry, home: Option<&str>) -> EntryFacts {
    let mut facts = EntryFacts { hidden: false, search: searchable(entry), calls: vec![] };
    if let Some(m) = entry.message() {
        let view = m.view();
        if view.role() == Some(Role::Assistant) {
            facts.hidden = !has_text(view.content()) && finished(view.str_field("stopReason"));
            if let Some(Value::Array(blocks)) = view.content() {
                for b in blocks {
                    if let Block::ToolCall(c) = Block::of(b) {
                        if let (Some(id), Some(name)) = (c.id, c.name) {
                            let args = c.arguments.cloned().unwrap_or(Value::Null);
                            facts.calls.push((id.to_owned(), format_tool_call(name, &args, home)));
                        }
                    }
                }
            }
        }
    }
    facts
}

fn has_text(content: Option<&Value>) -> bool {
    match content {
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Array(blocks)) => {
            blocks.iter().any(|b| matches!(Block::of(b), Block::Text(t) if !t.trim().is_empty()))
        }
        _ => false,
    }
}

/// True for a stop reason after which a message without text is hidden.
fn finished(stop: Option<&str>) -> bool {
    !matches!(stop, Some(r) if r != "stop" && r != "toolUse")
}

/// pi's `searchableText` without the label, lowercased.
fn searchable(entry: &Entry) -> String {
    let parts: Vec<String> = match &entry.kind {
        EntryKind::Message(m) => {
            let view = m.view();
            let role = view.role();
            let mut p = vec![role.as_ref().map_or("", Role::as_str).to_owned()];
            p.push(view.text("").chars().take(SEARCH_CHARS).collect());
            if role == Some(Role::BashExecution) {
                p.push(view.str_field("command").unwrap_or("").to_owned());
            }
            p
        }
        EntryKind::CustomMessage(c) => vec![c.custom_type.clone(), content_text(c.content.as_ref(), "")],
        EntryKind::Compaction(_) => vec!["compaction".into()],
        EntryKind::BranchSummary(b) => vec!["branch summary".into(), b.summary.clone()],
        EntryKind::ModelChange(m) => {
            vec!["model".into(), m.model_text().unwrap_or_default().to_owned()]
        }
        EntryKind::ThinkingLevelChange(t) => vec!["thinking".into(), t.level().unwrap_or_default().to_owned()],
        EntryKind::Custom(c) => vec!["custom".into(), c.custom_type.clone()],
        EntryKind::Label(l) => vec!["label".into(), l.text().unwrap_or_default()],
        _ => vec![],
    };
    parts.join(" ").to_lowercase()
}

/// The facts of a `message` entry from its JSON line, without decoding the
/// entry. `None` when the line is anything [`entry_facts`] must judge: not
/// an object, another id than `id` (the file changed under the reader), no
/// `message` field (a malformed entry), or text this reader does not take.
pub fn message_facts(json: &str, id: &str, home: Option<&str>) -> Option<EntryFacts> {
    let line = LineSeed { id }.deserialize(&mut serde_json::Deserializer::from_str(json)).ok()??;
    let msg = line.message?;
    let role = msg.role.as_deref().map(Role::parse);
    let content = msg.content.map(|raw| Content::read(raw.get())).transpose().ok()?.unwrap_or_default();
    let mut facts = EntryFacts::default();
    let mut search = role.as_ref().map_or("", Role::as_str).to_owned();
    search.push(' ');
    content.text_prefix(SEARCH_CHARS, &mut search).ok()?;
    if role == Some(Role::BashExecution) {
        search.push(' ');
        search.push_str(msg.command.as_deref().unwrap_or(""));
    }
    facts.search = search.to_lowercase();
    if role == Some(Role::Assistant) {
        facts.hidden = !content.has_text().ok()? && finished(msg.stop_reason.as_deref());
        for call in &content.calls {
            let args: Value = match call.arguments {
                Some(raw) => serde_json::from_str(raw.get()).ok()?,
                None => Value::Null,
            };
            facts.calls.push((call.id.to_string(), format_tool_call(&call.name, &args, home)));
        }
    }
    Some(facts)
}

/// The parts of a line [`message_facts`] reads.
struct Line<'a> {
    message: Option<Message<'a>>,
}

#[derive(Default)]
struct Message<'a> {
    role: Option<Cow<'a, str>>,
    content: Option<&'a RawValue>,
    stop_reason: Option<Cow<'a, str>>,
    command: Option<Cow<'a, str>>,
}

/// A string, or `None` for any other JSON value (`Value::as_str`).
struct OptStr<'a>(Option<Cow<'a, str>>);

impl<'de> serde::Deserialize<'de> for OptStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OptStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(OptStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(OptStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(OptStr(Some(Cow::Owned(v))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(OptStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(OptStr(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Reads a line object: `None` inside when it is not one, or names another id.
struct LineSeed<'i> {
    id: &'i str,
}

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = Option<Line<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V<'i>(&'i str);
        impl<'de> Visitor<'de> for V<'_> {
            type Value = Option<Line<'de>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an entry object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut line, mut id_ok) = (Line { message: None }, false);
                while let Some(key) = map.next_key::<OptStr<'de>>()? {
                    match key.0.as_deref() {
                        Some("message") => line.message = Some(map.next_value::<MessageField<'de>>()?.0),
                        Some("id") => id_ok = map.next_value::<OptStr<'de>>()?.0.as_deref() == Some(self.0),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(id_ok.then_some(line))
            }
        }
        d.deserialize_map(V(self.id)).or(Ok(None))
    }
}

/// The `message` value: its fields when it is an object, nothing otherwise.
struct MessageField<'a>(Message<'a>);

impl<'de> serde::Deserialize<'de> for MessageField<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageField<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a message")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut m = Message::default();
                while let Some(key) = map.next_key::<OptStr<'de>>()? {
                    match key.0.as_deref() {
                        Some("role") => m.role = map.next_value::<OptStr<'de>>()?.0,
                        Some("content") => m.content = Some(map.next_value::<&'de RawValue>()?),
                        Some("stopReason") => m.stop_reason = map.next_value::<OptStr<'de>>()?.0,
                        Some("command") => m.command = map.next_value::<OptStr<'de>>()?.0,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(MessageField(m))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MessageField(Message::default()))
            }
            fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Self::Value, E> {
                Ok(MessageField(Message::default()))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(MessageField(Message::default()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MessageField(Message::default()))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MessageField(Message::default()))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MessageField(Message::default()))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MessageField(Message::default()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MessageField(Message::default()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A message's `content`, with its strings still as JSON text.
#[derive(Default)]
struct Content<'a> {
    /// The `text` of each text block in order (or the content itself when it is a string), as JSON strings.
    texts: Vec<&'a str>,
    calls: Vec<Call<'a>>,
}

struct Call<'a> {
    id: Cow<'a, str>,
    name: Cow<'a, str>,
    arguments: Option<&'a RawValue>,
}

/// One element of a content array: the fields a text block or a tool call has.
#[derive(Default)]
struct BlockFields<'a> {
    ty: Option<Cow<'a, str>>,
    text: Option<&'a RawValue>,
    id: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    arguments: Option<&'a RawValue>,
}

impl<'a> Content<'a> {
    fn read(raw: &'a str) -> Result<Content<'a>, serde_json::Error> {
        if raw.starts_with('"') {
            return Ok(Content { texts: vec![raw], calls: vec![] });
        }
        if !raw.starts_with('[') {
            return Ok(Content::default());
        }
        let blocks: Vec<BlockFieldsOrOther<'a>> = serde_json::from_str(raw)?;
        let mut content = Content::default();
        for b in blocks.into_iter().filter_map(|b| b.0) {
            match b.ty.as_deref() {
                Some("text") => {
                    if let Some(t) = b.text.filter(|t| t.get().starts_with('"')) {
                        content.texts.push(t.get());
                    }
                }
                Some("toolCall") => {
                    if let (Some(id), Some(name)) = (b.id, b.name) {
                        content.calls.push(Call { id, name, arguments: b.arguments });
                    }
                }
                _ => {}
            }
        }
        Ok(content)
    }

    /// Appends the first `n` characters of the texts, joined with nothing.
    fn text_prefix(&self, mut n: usize, out: &mut String) -> Result<(), Unsure> {
        for t in &self.texts {
            for c in JsonChars::new(t) {
                if n == 0 {
                    return Ok(());
                }
                out.push(c?);
                n -= 1;
            }
        }
        Ok(())
    }

    /// True when some text has a character that is not white space.
    fn has_text(&self) -> Result<bool, Unsure> {
        for t in &self.texts {
            for c in JsonChars::new(t) {
                if !c?.is_whitespace() {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

impl<'de> serde::Deserialize<'de> for BlockFieldsOrOther<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BlockFieldsOrOther<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut b = BlockFields::default();
                while let Some(key) = map.next_key::<OptStr<'de>>()? {
                    match key.0.as_deref() {
                        Some("type") => b.ty = map.next_value::<OptStr<'de>>()?.0,
                        Some("text") => b.text = Some(map.next_value::<&'de RawValue>()?),
                        Some("id") => b.id = map.next_value::<OptStr<'de>>()?.0,
                        Some("name") => b.name = map.next_value::<OptStr<'de>>()?.0,
                        Some("arguments") => b.arguments = Some(map.next_value::<&'de RawValue>()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(BlockFieldsOrOther(Some(b)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(BlockFieldsOrOther(None))
            }
            fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Self::Value, E> {
                Ok(BlockFieldsOrOther(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(BlockFieldsOrOther(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(BlockFieldsOrOther(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(BlockFieldsOrOther(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(BlockFieldsOrOther(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(BlockFieldsOrOther(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(BlockFieldsOrOther(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A content element: a block's fields when it is an object.
struct BlockFieldsOrOther<'a>(Option<BlockFields<'a>>);

/// A string this reader will not decode (a lone surrogate escape): the caller decodes the entry.
#[derive(Debug)]
struct Unsure;

/// The characters of a JSON string literal (quotes included in the input),
/// decoded one at a time, so only the characters asked for are unescaped.
struct JsonChars<'a> {
    rest: &'a str,
}

impl<'a> JsonChars<'a> {
    fn new(literal: &'a str) -> JsonChars<'a> {
        let inner = literal.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or("");
        JsonChars { rest: inner }
    }

    fn hex4(&mut self) -> Option<u32> {
        let (h, rest) = (self.rest.get(..4)?, self.rest.get(4..)?);
        self.rest = rest;
        u32::from_str_radix(h, 16).ok()
    }
}

impl Iterator for JsonChars<'_> {
    type Item = Result<char, Unsure>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut chars = self.rest.chars();
        let c = chars.next()?;
        self.rest = chars.as_str();
        if c != '\\' {
            return Some(Ok(c));
        }
        let mut chars = self.rest.chars();
        let e = chars.next()?;
        self.rest = chars.as_str();
        Some(match e {
            'n' => Ok('\n'),
            't' => Ok('\t'),
            'r' => Ok('\r'),
            'b' => Ok('\u{8}'),
            'f' => Ok('\u{c}'),
            'u' => {
                let Some(hi) = self.hex4() else { return Some(Err(Unsure)) };
                if (0xD800..0xDC00).contains(&hi) {
                    let lo = match self.rest.strip_prefix("\\u") {
                        Some(r) => {
                            self.rest = r;
                            self.hex4()
                        }
                        None => None,
                    };
                    match lo {
                        Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                            char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).ok_or(Unsure)
                        }
                        _ => Err(Unsure),
                    }
                } else {
                    char::from_u32(hi).ok_or(Unsure)
                }
            }
            other => Ok(other),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use arbor_tree::{OpenMode, Session, SessionOptions};

    fn both(line: &str) -> (Option<EntryFacts>, EntryFacts) {
        let v: Value = serde_json::from_str(line).unwrap();
        let e = Entry::from_value(&v).unwrap();
        (message_facts(line, &e.id, Some("/home/u")), entry_facts(&e, Some("/home/u")))
    }

    fn msg(message: &str) -> String {
        format!(r#"{{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{message}}}"#)
    }

    #[test]
    fn the_fast_path_agrees_with_the_decoded_entry_on_edge_lines() {
        let cases = [
            r#"{"role":"user","content":"Hello \"World\"\n\ttabs \u00e9\ud83d\ude00 and more"}"#,
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"x","mimeType":"m"},{"type":"text","text":"B\u00C9"}]}"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"/home/u/x.rs","offset":3,"limit":2}}],"stopReason":"toolUse"}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":" \n\u00a0\u2028"}],"stopReason":"stop"}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":" x"}],"stopReason":"stop"}"#,
            r#"{"role":"assistant","content":[],"stopReason":"aborted"}"#,
            r#"{"role":"assistant","content":[],"stopReason":7}"#,
            r#"{"role":"assistant","content":[]}"#,
            r#"{"role":"assistant","content":"  "}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":5},{"type":"text"},"loose",[1],{"type":"toolCall","id":"c2","name":"weird","arguments":{"a":[1,2,{"b":"ccccccccccccccccccccccccccccccccccccccc"}]}}]}"#,
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"c3","name":"bash","arguments":{"command":"ls -la"}},{"type":"toolCall","id":"c4"}],"stopReason":"error"}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"first","type":"thinking"},{"type":"thinking","type":"text","text":"later","text":"  "}],"stopReason":"stop","stopReason":"length"}"#,
            r#"{"role":"bashExecution","command":"cargo  TEST","output":"ok"}"#,
            r#"{"role":"bashExecution","command":5}"#,
            r#"{"role":"toolResult","toolCallId":"c1","content":[{"type":"text","text":"ΣΑΣ done"}]}"#,
            r#"{"role":"custom","content":{"nested":true}}"#,
            r#"{"content":"no role"}"#,
            r#""just a string""#,
            r#"[1,2]"#,
            r#"null"#,
            r#"{"role":"user","content":"x","role":"assistant"}"#,
        ];
        for m in cases {
            let line = msg(m);
            let (fast, full) = both(&line);
            assert_eq!(fast.as_ref(), Some(&full), "{line}");
        }
        let long: String = "é\\n".repeat(300);
        let line = msg(&format!(r#"{{"role":"user","content":"{long}"}}"#));
        let (fast, full) = both(&line);
        assert_eq!(fast.as_ref(), Some(&full));
        assert_eq!(full.search.chars().count(), "user ".len() + SEARCH_CHARS);
    }

    #[test]
    fn lines_the_fast_path_leaves_to_the_decoder() {
        // Another id (the file changed), no message at all, not an object, a lone surrogate.
        let line = msg(r#"{"role":"user","content":"x"}"#);
        assert_eq!(message_facts(&line, "other", None), None);
        assert_eq!(message_facts(r#"{"type":"message","id":"a1"}"#, "a1", None), None);
        assert_eq!(message_facts("[1]", "a1", None), None);
        assert_eq!(message_facts(&msg(r#"{"role":"user","content":"\ud800 x"}"#), "a1", None), None);
        // The surrogate past the first 200 characters is not read at all.
        let tail = format!(r#"{{"role":"user","content":"{}\ud800"}}"#, "x".repeat(300));
        assert!(message_facts(&msg(&tail), "a1", None).is_some());
    }

    #[test]
    fn every_fixture_entry_reads_the_same_both_ways() {
        let mut seen = 0;
        for f in arbor_test_support::jsonl_under(&arbor_test_support::fixtures()) {
            let Ok(s) = Session::open(&f, OpenMode::ReadOnly, SessionOptions::default()) else { continue };
            for p in s.positions() {
                let Some(e) = s.decode_at(p).unwrap() else { continue };
                let full = entry_facts(&e, None);
                if e.message().is_some() {
                    if let Some(fast) = s.json_at(p).unwrap().and_then(|j| message_facts(j, &e.id, None)) {
                        assert_eq!(fast, full, "{} {}", f.display(), e.id);
                        seen += 1;
                    }
                }
            }
        }
        assert!(seen > 100, "{seen}");
    }
}
