//! Building one pi session from source records: deterministic ids, the tree
//! (a source parent or the chain of records that have none), where each entry
//! came from, and the tally of what became what.

use std::collections::{BTreeMap, HashMap, HashSet};

use arbor_log::entries::{CustomEntry, MessageEntry};
use arbor_log::ids::{IdGenerator, SeededIds};
use arbor_log::time::{format_iso_ms, parse_iso_ms};
use arbor_log::{Entry, EntryKind, SessionHeader};
use serde_json::{json, Map, Value};

use super::lines::Record;

/// The entry-level key that says which source lines an entry was made from.
pub const SOURCE_KEY: &str = "source";

/// Where an entry goes in the tree.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Parent<'a> {
    /// Below the entry made from this source key (a uuid); `None` or an
    /// unknown key: a root. Bookkeeping hung below that entry in the meantime
    /// comes first.
    Source(Option<&'a str>),
    /// Below the entry made last: the chain of records that have no parent of their own.
    Chain,
    /// Below this entry.
    Entry(&'a str),
}

/// One session being built.
#[derive(Debug)]
pub(crate) struct Builder {
    seed: String,
    prefix: &'static str,
    pub entries: Vec<Entry>,
    position: HashMap<String, usize>,
    alias: HashMap<String, String>,
    /// The last entry hung below an entry (or below no entry: the roots) by [`Parent::Chain`].
    tails: HashMap<Option<String>, String>,
    last: Option<String>,
    last_time: String,
    /// Entries with a message child (an assistant message with one is not merged into).
    with_message_child: HashSet<String>,
    pub tally: BTreeMap<String, BTreeMap<String, usize>>,
}

impl Builder {
    /// A builder whose ids are derived from `seed`; custom entries are `<prefix>.<type>`.
    pub fn new(seed: String, prefix: &'static str, first_time: &str) -> Builder {
        Builder {
            seed,
            prefix,
            entries: Vec::new(),
            position: HashMap::new(),
            alias: HashMap::new(),
            tails: HashMap::new(),
            last: None,
            last_time: first_time.to_owned(),
            with_message_child: HashSet::new(),
            tally: BTreeMap::new(),
        }
    }

    /// The id for an entry made from `key`: 8 hex digits derived from the
    /// session's seed and the key, the next in the key's sequence on a collision.
    fn new_id(&self, key: &str) -> String {
        let taken = &self.position;
        SeededIds::from_text(&format!("{}\n{key}", self.seed)).entry_id(&|id| taken.contains_key(id))
    }

    /// The id of the entry a source key (a uuid) became.
    pub fn id_of(&self, key: &str) -> Option<&str> {
        self.alias.get(key).map(String::as_str)
    }

    /// Makes `key` name `id` too (a record merged into an entry, or split into several).
    pub fn alias(&mut self, key: &str, id: &str) {
        self.alias.insert(key.to_owned(), id.to_owned());
    }

    /// The entry with `id`.
    #[cfg(test)]
    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.position.get(id).map(|&i| &self.entries[i])
    }

    /// The entry with `id`, to change.
    pub fn entry_mut(&mut self, id: &str) -> Option<&mut Entry> {
        self.position.get(id).map(|&i| &mut self.entries[i])
    }

    /// True when a message entry hangs below `id`.
    pub fn has_message_child(&self, id: &str) -> bool {
        self.with_message_child.contains(id)
    }

    /// A time in ms as pi writes it, or (`None`) the time of the entry before.
    pub fn time_at(&mut self, ms: Option<i64>) -> String {
        if let Some(ms) = ms {
            self.last_time = format_iso_ms(ms);
        }
        self.last_time.clone()
    }

    /// The record's time as pi writes it, or the time of the entry before.
    pub fn time_of(&mut self, r: &Record) -> String {
        if let Some(ms) = r.str("timestamp").and_then(parse_iso_ms) {
            self.last_time = format_iso_ms(ms);
        }
        self.last_time.clone()
    }

    fn resolve(&self, parent: Parent) -> Option<String> {
        let mut at = match parent {
            Parent::Chain => return self.last.clone(),
            Parent::Entry(id) => Some(id.to_owned()),
            Parent::Source(key) => key.and_then(|k| self.alias.get(k)).cloned(),
        };
        while let Some(next) = self.tails.get(&at) {
            at = Some(next.clone());
        }
        at
    }

    /// Adds an entry made from `key` and returns its id. `source` says which
    /// lines it came from (see [`origin`]).
    pub fn push(&mut self, key: &str, parent: Parent, timestamp: String, kind: EntryKind, source: Value) -> String {
        let id = self.new_id(key);
        let parent_id = self.resolve(parent);
        if matches!(parent, Parent::Chain) {
            self.tails.insert(parent_id.clone(), id.clone());
        }
        let kind = with_source(kind, source);
        if let (Some(p), EntryKind::Message(_)) = (&parent_id, &kind) {
            self.with_message_child.insert(p.clone());
        }
        self.position.insert(id.clone(), self.entries.len());
        self.entries.push(Entry { id: id.clone(), parent_id, timestamp, kind });
        self.alias.insert(key.to_owned(), id.clone());
        self.last = Some(id.clone());
        id
    }

    /// Adds a `custom` entry keeping `record` whole (`customType: "<prefix>.<type>"`).
    pub fn push_custom(&mut self, r: &Record, key: &str, parent: Parent) -> String {
        let custom_type = format!("{}.{}", self.prefix, r.kind());
        self.count(&r.label(), &format!("custom {custom_type}"));
        let time = self.time_of(r);
        let kind = EntryKind::Custom(CustomEntry { custom_type, data: Some(r.value.clone()), extra: Map::new() });
        self.push(key, parent, time, kind, json!([{ "line": r.line }]))
    }

    /// Counts one source record of `source_type` that became `target`.
    pub fn count(&mut self, source_type: &str, target: &str) {
        *self.tally.entry(source_type.to_owned()).or_default().entry(target.to_owned()).or_default() += 1;
    }

    /// The session's header and entries as JSON lines.
    pub fn lines(&self, header: &SessionHeader) -> Vec<String> {
        let mut out = Vec::with_capacity(self.entries.len() + 1);
        out.push(header.to_value().to_string());
        out.extend(self.entries.iter().map(|e| e.to_value().to_string()));
        out
    }
}

/// Puts the `source` key on an entry's body.
fn with_source(mut kind: EntryKind, source: Value) -> EntryKind {
    let extra = match &mut kind {
        EntryKind::Message(b) => &mut b.extra,
        EntryKind::Custom(b) => &mut b.extra,
        EntryKind::Compaction(b) => &mut b.extra,
        EntryKind::Label(b) => &mut b.extra,
        EntryKind::ThinkingLevelChange(b) => &mut b.extra,
        _ => return kind,
    };
    extra.insert(SOURCE_KEY.to_owned(), source);
    kind
}

/// The origin of an entry made from (the first part of) a record: its line and
/// the record without the parts the entry holds.
pub(crate) fn origin(r: &Record, kept: Value) -> Value {
    json!({ "line": r.line, "record": kept })
}

/// The origin of a later part of a record split into several entries.
pub(crate) fn part_origin(r: &Record, part: usize) -> Value {
    json!({ "line": r.line, "part": part })
}

/// Appends an origin to an entry's `source` list (a record merged into it).
pub(crate) fn add_origin(e: &mut Entry, origin: Value) {
    let extra = match &mut e.kind {
        EntryKind::Message(b) => &mut b.extra,
        EntryKind::Compaction(b) => &mut b.extra,
        _ => return,
    };
    if let Some(Value::Array(list)) = extra.get_mut(SOURCE_KEY) {
        list.push(origin);
    }
}

/// A `message` entry's body.
pub(crate) fn message(m: Value) -> EntryKind {
    EntryKind::Message(MessageEntry { message: m, extra: Map::new() })
}

/// The message of a `message` entry, to change.
pub(crate) fn message_mut(e: &mut Entry) -> Option<&mut Map<String, Value>> {
    match &mut e.kind {
        EntryKind::Message(m) => m.message.as_object_mut(),
        _ => None,
    }
}

/// pi's zero usage.
pub(crate) fn zero_usage() -> Value {
    json!({
        "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    })
}

/// pi's usage from token counts and a total cost.
pub(crate) fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64, cost: f64) -> Value {
    json!({
        "input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write,
        "totalTokens": input + output + cache_read + cache_write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": arbor_log::json::js_number(cost)}
    })
}

/// A message's timestamp in milliseconds (pi's `Date.now()` form).
pub(crate) fn millis(iso: &str) -> Value {
    parse_iso_ms(iso).map_or(Value::Null, Value::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(line: usize, v: Value) -> Record {
        Record { line, text: v.to_string(), value: v }
    }

    #[test]
    fn ids_are_derived_and_chained_records_slot_in_before_later_children() {
        let mut b = Builder::new("claude:s".into(), "claude", "2026-01-01T00:00:00.000Z");
        let u = rec(1, json!({"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:01Z"}));
        let t = b.time_of(&u);
        assert_eq!(t, "2026-01-01T00:00:01.000Z");
        let a = b.push("u1", Parent::Source(None), t, message(json!({"role":"user"})), json!([]));
        let snap = rec(2, json!({"type":"file-history-snapshot"}));
        let s = b.push_custom(&snap, &snap.content_key(), Parent::Chain);
        let c = b.push("u2", Parent::Source(Some("u1")), "t".into(), message(json!({"role":"user"})), json!([]));
        assert_eq!(b.entry(&s).and_then(|e| e.parent_id.as_deref()), Some(a.as_str()));
        assert_eq!(b.entry(&c).and_then(|e| e.parent_id.as_deref()), Some(s.as_str()));
        assert!(arbor_log::ids::is_pi_entry_id(&a));
        let again = Builder::new("claude:s".into(), "claude", "").new_id("u1");
        assert_eq!(again, a);
        assert_eq!(b.tally["file-history-snapshot"]["custom claude.file-history-snapshot"], 1);
        let unknown = b.push("u3", Parent::Source(Some("nowhere")), "t".into(), message(json!({})), json!([]));
        assert_eq!(b.entry(&unknown).and_then(|e| e.parent_id.clone()), None, "an unknown parent: a root");
    }
}
