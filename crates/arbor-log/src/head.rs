//! What the light scan keeps of a record ([`RecordHead`], re-exported by
//! [`crate::scan`]), apart so the fast validator and the scan both read it.

use compact_str::CompactString;
use serde_json::Value;

use crate::clock::parse_iso_ms;
use crate::entry::{Entry, NotAnEntry};
use crate::vocab::{EntryType, Role};

/// A record's `parentId` as the entry decoder reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ParentField {
    /// Absent, `null`, or anything but a string (it resolves to no entry): a root.
    #[default]
    Root,
    /// A string.
    Id(CompactString),
}

/// What the light scan keeps of a JSON object line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecordHead {
    /// `type`, when it is a string.
    pub entry_type: Option<EntryType>,
    /// `id`, when it is a string (ids are short: held inline, no allocation).
    pub id: Option<CompactString>,
    /// `parentId`.
    pub parent: ParentField,
    /// `timestamp` in epoch ms, when it is a string that parses.
    pub ts_ms: Option<i64>,
    /// True when the object has a `message` field.
    pub has_message: bool,
    /// `message.role`, when the message is an object with a string role.
    pub role: Option<Role>,
    /// `message.timestamp`, when the message is an object and it is a number
    /// (what `Value::as_f64` gives: the time listings sort by).
    pub message_time: Option<f64>,
    /// The decoded entry, for records the scan decodes in full (see [`scan_source`](crate::scan::scan_source)).
    pub entry: Option<Box<Entry>>,
    /// True when only JavaScript's reading accepts the line (see [`crate::reader::parse_line_detail`]).
    pub js_only: bool,
}

impl RecordHead {
    /// Why the record is not an entry, checked in the order [`Entry::from_value`] checks.
    pub fn not_an_entry(&self) -> Option<NotAnEntry> {
        if self.entry_type.is_none() {
            Some(NotAnEntry::NoType)
        } else if self.id.is_none() {
            Some(NotAnEntry::NoId)
        } else {
            None
        }
    }

    /// True for a `message` entry whose body is decoded on demand (it has a message).
    pub fn is_lazy_message(&self) -> bool {
        self.entry_type == Some(EntryType::Message) && self.has_message
    }

    /// The head of a parsed object (the slow path's view of the same line).
    pub fn from_value(v: &Value) -> RecordHead {
        let parent = match v.get("parentId") {
            Some(Value::String(s)) => ParentField::Id(s.as_str().into()),
            _ => ParentField::Root,
        };
        let message = v.get("message");
        RecordHead {
            entry_type: v.get("type").and_then(Value::as_str).map(EntryType::parse),
            id: v.get("id").and_then(Value::as_str).map(CompactString::from),
            parent,
            ts_ms: v.get("timestamp").and_then(Value::as_str).and_then(parse_iso_ms),
            has_message: message.is_some(),
            role: message.and_then(|m| m.get("role")).and_then(Value::as_str).map(Role::parse),
            message_time: message.and_then(|m| m.get("timestamp")).and_then(Value::as_f64),
            entry: None,
            js_only: false,
        }
    }
}

/// The serde-private key serde_json's `Value` treats as a raw-value marker: a
/// line holding it takes the full parser's path.
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";
