//! The parts of an agent message that its transcript lines and its token
//! estimate read ([`Parts`]): from a `Value` ([`Parts::of_value`]), or
//! straight from the JSON text of a `message` entry ([`stored_parts`]),
//! where no `Value` tree is built: strings are borrowed from the text
//! (copied only where they hold escapes) and every other field is skipped.
//!
//! Both read what `Value::get` and `as_str`, `as_f64`, `as_bool` read: a
//! field of another JSON type than the one wanted reads as absent, a
//! message that is not an object as one with no fields, and of duplicate
//! keys the last counts. The text is read only when it means what decoding
//! the entry means (see [`stored_parts`]); otherwise the caller decodes.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use arbor_log::Role;

use crate::js;
use crate::json::{may_name_raw_value_marker, message_of_line};

/// What the transcript and the token estimate read of one agent message.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Parts<'a> {
    pub role: Option<Cow<'a, str>>,
    pub content: Content<'a>,
    pub stop_reason: Option<Cow<'a, str>>,
    pub error_message: Option<Cow<'a, str>>,
    pub tool_name: Option<Cow<'a, str>>,
    pub is_error: Option<bool>,
    pub command: Option<Cow<'a, str>>,
    pub output: Option<Cow<'a, str>>,
    pub custom_type: Option<Cow<'a, str>>,
    pub summary: Option<Cow<'a, str>>,
    pub tokens_before: Option<f64>,
    pub timestamp: Option<f64>,
    /// The `usage`, when it is there and truthy (JavaScript's truth).
    pub usage: Option<Usage>,
}

/// A message's `content`.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) enum Content<'a> {
    /// Absent, or neither a string nor a list.
    #[default]
    None,
    /// A string.
    Text(Cow<'a, str>),
    /// A list of blocks.
    Blocks(Vec<Block<'a>>),
}

/// One element of a `content` list (an element that is not an object has no fields).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Block<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub text: Option<Cow<'a, str>>,
    pub thinking: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    /// The `arguments` of any JSON type (`null` too) when present.
    pub arguments: Option<Cow<'a, Value>>,
}

/// The numbers of a `usage` (0 for each that is missing or not a number).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Usage {
    pub total: f64,
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl<'a> Parts<'a> {
    /// The parts of a message held as a value.
    pub fn of_value(m: &'a Value) -> Parts<'a> {
        let s = |k: &str| str_of(m.get(k));
        let n = |k: &str| m.get(k).and_then(Value::as_f64);
        Parts {
            role: s("role"),
            content: Content::of_value(m.get("content")),
            stop_reason: s("stopReason"),
            error_message: s("errorMessage"),
            tool_name: s("toolName"),
            is_error: m.get("isError").and_then(Value::as_bool),
            command: s("command"),
            output: s("output"),
            custom_type: s("customType"),
            summary: s("summary"),
            tokens_before: n("tokensBefore"),
            timestamp: n("timestamp"),
            usage: m.get("usage").filter(|u| js::truthy(Some(u))).map(Usage::of_value),
        }
    }

    /// The role, when it is a string.
    pub fn role(&self) -> Option<Role> {
        self.role.as_deref().map(Role::parse)
    }

    /// The content blocks (none when the content is a string or absent).
    pub fn blocks(&self) -> &[Block<'a>] {
        match &self.content {
            Content::Blocks(b) => b,
            _ => &[],
        }
    }

    /// The message's text for people ([`arbor_log::messages::content_text`] with `" "`
    /// between text blocks): borrowed when one piece holds it all.
    pub fn text(&self) -> Cow<'_, str> {
        match &self.content {
            Content::None => Cow::Borrowed(""),
            Content::Text(s) => arbor_log::json::display(s),
            Content::Blocks(blocks) => {
                let mut texts = blocks.iter().filter(|b| b.is("text")).filter_map(|b| b.text.as_deref());
                let Some(first) = texts.next() else { return Cow::Borrowed("") };
                let first = arbor_log::json::display(first);
                let Some(second) = texts.next() else { return first };
                let mut joined = first.into_owned();
                for t in std::iter::once(second).chain(texts) {
                    joined.push(' ');
                    joined.push_str(&arbor_log::json::display(t));
                }
                Cow::Owned(joined)
            }
        }
    }
}

impl<'a> Content<'a> {
    fn of_value(v: Option<&'a Value>) -> Content<'a> {
        match v {
            Some(Value::String(s)) => Content::Text(Cow::Borrowed(s)),
            Some(Value::Array(items)) => Content::Blocks(items.iter().map(Block::of_value).collect()),
            _ => Content::None,
        }
    }
}

impl<'a> Block<'a> {
    fn of_value(b: &'a Value) -> Block<'a> {
        let s = |k: &str| str_of(b.get(k));
        Block {
            kind: s("type"),
            text: s("text"),
            thinking: s("thinking"),
            name: s("name"),
            arguments: b.get("arguments").map(Cow::Borrowed),
        }
    }

    /// True when the block's `type` is `kind`.
    pub fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }
}

impl Usage {
    pub fn of_value(u: &Value) -> Usage {
        let n = |k: &str| u.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        Usage {
            total: n("totalTokens"),
            input: n("input"),
            output: n("output"),
            cache_read: n("cacheRead"),
            cache_write: n("cacheWrite"),
        }
    }
}

fn str_of(v: Option<&Value>) -> Option<Cow<'_, str>> {
    v.and_then(Value::as_str).map(Cow::Borrowed)
}

/// The parts of the message of a `message` entry's JSON `line` (one whose
/// id is `id`), read from the text; `None` when the text may not mean what
/// decoding the entry gives, and the caller decodes it instead:
/// - the line holds text only JavaScript's reading reads as it means
///   ([`arbor_log::json::is_plain`]), or serde_json refuses it (a lone
///   surrogate, a number out of range, deep nesting);
/// - it is not an object with exactly one `type` (`"message"`), one `id`
///   (`id`) and one `message` key, whose value is an object;
/// - it may hold serde_json's raw-value marker key, which a decoded `Value`
///   replaces by the JSON its string holds.
pub(crate) fn stored_parts<'a>(line: &'a str, id: &str) -> Option<Parts<'a>> {
    if !arbor_log::json::is_plain(line.as_bytes()) || may_name_raw_value_marker(line) {
        return None;
    }
    message_of_line::<Object<Parts<'a>>>(line, id)?.0
}

/// How a loose reading takes each JSON value: what it does not take reads
/// as the default (and a list or an object it does not take is skipped).
trait Loose<'a>: Default + Sized {
    fn string(s: Cow<'a, str>) -> Self {
        let _ = s;
        Self::default()
    }
    fn number(n: f64) -> Self {
        let _ = n;
        Self::default()
    }
    fn boolean(b: bool) -> Self {
        let _ = b;
        Self::default()
    }
    fn list<'de: 'a, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
    fn object<'de: 'a, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
}

/// The object fields a loose reading of an object takes, one at a time.
trait Fields<'a>: Default {
    /// Reads the value of `key` from `map` (skips it when it is not wanted).
    fn field<'de: 'a, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

struct LooseVisitor<'a, T>(PhantomData<(&'a (), T)>);

impl<'de: 'a, 'a, T: Loose<'a>> Visitor<'de> for LooseVisitor<'a, T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<T, E> {
        Ok(T::boolean(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<T, E> {
        Ok(T::number(n as f64))
    }
    fn visit_u64<E>(self, n: u64) -> Result<T, E> {
        Ok(T::number(n as f64))
    }
    fn visit_f64<E>(self, n: f64) -> Result<T, E> {
        Ok(T::number(n))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<T, E> {
        Ok(T::string(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<T, E> {
        Ok(T::string(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<T, E> {
        Ok(T::string(Cow::Owned(s)))
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::list(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::object(map)
    }
}

/// `Deserialize` for [`Loose`] readings: of text that lives for `'a`, or of owned values.
macro_rules! loose_deserialize {
    (borrowed: $($t:ty),*) => {$(
        impl<'de: 'a, 'a> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(LooseVisitor::<'a, Self>(PhantomData))
            }
        }
    )*};
    (owned: $($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(LooseVisitor::<'de, Self>(PhantomData))
            }
        }
    )*};
}

/// A string (borrowed where the text holds it unescaped), else `None`.
#[derive(Default)]
struct Str<'a>(Option<Cow<'a, str>>);

impl<'a> Loose<'a> for Str<'a> {
    fn string(s: Cow<'a, str>) -> Self {
        Str(Some(s))
    }
}

/// A number, else `None`.
#[derive(Default)]
struct Num(Option<f64>);

impl Loose<'_> for Num {
    fn number(n: f64) -> Self {
        Num(Some(n))
    }
}

/// A boolean, else `None`.
#[derive(Default)]
struct Bool(Option<bool>);

impl Loose<'_> for Bool {
    fn boolean(b: bool) -> Self {
        Bool(Some(b))
    }
}

/// An object's fields, else `None`.
#[derive(Default)]
struct Object<T>(Option<T>);

impl<'a, T: Fields<'a>> Loose<'a> for Object<T> {
    fn object<'de: 'a, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut t = T::default();
        while let Some(Str(key)) = map.next_key::<Str<'a>>()? {
            t.field(key.as_deref().unwrap_or(""), &mut map)?;
        }
        Ok(Object(Some(t)))
    }
}

/// A usage when the value is truthy (an object's numbers; none for any other truthy value).
#[derive(Default)]
struct Truthy(Option<Usage>);

impl<'a> Loose<'a> for Truthy {
    fn string(s: Cow<'a, str>) -> Self {
        Truthy((!s.is_empty()).then(Usage::default))
    }
    fn number(n: f64) -> Self {
        Truthy((n != 0.0 && !n.is_nan()).then(Usage::default))
    }
    fn boolean(b: bool) -> Self {
        Truthy(b.then(Usage::default))
    }
    fn list<'de: 'a, A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        Str::list(seq)?;
        Ok(Truthy(Some(Usage::default())))
    }
    fn object<'de: 'a, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        Ok(Truthy(Some(Object::<Usage>::object(map)?.0.unwrap_or_default())))
    }
}

impl<'a> Loose<'a> for Content<'a> {
    fn string(s: Cow<'a, str>) -> Self {
        Content::Text(s)
    }
    fn list<'de: 'a, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Object(b)) = seq.next_element::<Object<Block<'a>>>()? {
            blocks.push(b.unwrap_or_default());
        }
        Ok(Content::Blocks(blocks))
    }
}

loose_deserialize!(borrowed: Str<'a>, Content<'a>, Object<Parts<'a>>, Object<Block<'a>>);
loose_deserialize!(owned: Num, Bool, Truthy, Object<Usage>);

impl<'a> Fields<'a> for Parts<'a> {
    fn field<'de: 'a, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "role" => self.role = map.next_value::<Str>()?.0,
            "content" => self.content = map.next_value()?,
            "stopReason" => self.stop_reason = map.next_value::<Str>()?.0,
            "errorMessage" => self.error_message = map.next_value::<Str>()?.0,
            "toolName" => self.tool_name = map.next_value::<Str>()?.0,
            "isError" => self.is_error = map.next_value::<Bool>()?.0,
            "command" => self.command = map.next_value::<Str>()?.0,
            "output" => self.output = map.next_value::<Str>()?.0,
            "customType" => self.custom_type = map.next_value::<Str>()?.0,
            "summary" => self.summary = map.next_value::<Str>()?.0,
            "tokensBefore" => self.tokens_before = map.next_value::<Num>()?.0,
            "timestamp" => self.timestamp = map.next_value::<Num>()?.0,
            "usage" => self.usage = map.next_value::<Truthy>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'a> Fields<'a> for Block<'a> {
    fn field<'de: 'a, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.kind = map.next_value::<Str>()?.0,
            "text" => self.text = map.next_value::<Str>()?.0,
            "thinking" => self.thinking = map.next_value::<Str>()?.0,
            "name" => self.name = map.next_value::<Str>()?.0,
            "arguments" => self.arguments = Some(Cow::Owned(map.next_value::<Value>()?)),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'a> Fields<'a> for Usage {
    fn field<'de: 'a, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let n = |map: &mut A| Ok::<f64, A::Error>(map.next_value::<Num>()?.0.unwrap_or(0.0));
        match key {
            "totalTokens" => self.total = n(map)?,
            "input" => self.input = n(map)?,
            "output" => self.output = n(map)?,
            "cacheRead" => self.cache_read = n(map)?,
            "cacheWrite" => self.cache_write = n(map)?,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}
