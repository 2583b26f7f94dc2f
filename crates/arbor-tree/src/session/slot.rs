//! One entry of a session ([`Slot`]) and the maps over many slots (ids,
//! children, unresolved parents).

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::OnceLock;

use compact_str::CompactString;
use once_cell::race::OnceBox;
use serde_json::Value;

use arbor_log::idhash::{IdHash, IdMap, IdTable};
use arbor_log::reader::trim_line;
use arbor_log::scan::{full_entry, read_exact_at, ParentField, ReadAt, ScanTarget, ScannedEntry};
use arbor_log::time::parse_iso_ms;
use arbor_log::{Entry, EntryType, Role};

use super::cursor::LineCursor;
use super::packed::{EntryId, PackedId};
use super::watch::changed_in;
use super::Slots;
use crate::index::ReadEntry;

/// Why a slot's line could not be read: the file changed under the session
/// (or its index placed the line wrongly). The session names the file
/// ([`crate::TreeError::Changed`]).
#[derive(Debug, Clone)]
pub(crate) struct Stale {
    /// The slot's line.
    pub(crate) line: usize,
    /// What was found, in a few words.
    pub(crate) what: String,
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

impl std::error::Error for Stale {}

/// A slot's parent index when its `parentId` does not resolve.
pub(crate) const NO_PARENT: usize = usize::MAX;

/// The slots whose `parentId` names one id, in file order: most ids have one child.
#[derive(Debug, Clone)]
pub(crate) enum Kids {
    One(usize),
    Many(Vec<usize>),
}

impl Kids {
    pub(crate) fn push(&mut self, i: usize) {
        match self {
            Kids::One(first) => *self = Kids::Many(vec![*first, i]),
            Kids::Many(v) => v.push(i),
        }
    }

    pub(crate) fn as_slice(&self) -> &[usize] {
        match self {
            Kids::One(i) => std::slice::from_ref(i),
            Kids::Many(v) => v,
        }
    }
}

/// One entry of the session. What the tree needs (id, parent, type, role,
/// time, line, place in the file) is always at hand, packed into 40 bytes
/// (a million entries are 40 MB, not 200): pi's 8-hex-digit ids as `u32`s,
/// the type and role as their codes, the place as one `u64`; whatever does
/// not fit (another id, a name Arbor does not know, a line past 16 MiB) is
/// kept in a box beside it. The decoded entry and its JSON text are filled
/// in on first use from the line's place in the file (`src`), so opening a
/// file costs a scan, not a decode of every body.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    /// Offset (low 40 bits) and length (high 24) of the line, when `PLACED`.
    place: u64,
    /// Epoch ms of `timestamp` (`NO_TIME`: none).
    ts_ms: i64,
    /// The id's value when `ID_HEX`.
    id: u32,
    /// The parent id's value when `PARENT_HEX`.
    parent: u32,
    /// The line the entry was read from (0 for an entry appended in this process; `u32::MAX`: in `more`).
    line: u32,
    /// The type's and the role's codes (see `type_code`, `role_code`).
    kind: [u8; 2],
    flags: u8,
    /// What does not fit above, and the decoded entry and JSON text once read.
    more: OnceBox<More>,
}

const LIVE: u8 = 1;
const JS_ONLY: u8 = 2;
const FROM_INDEX: u8 = 4;
const HAS_PARENT: u8 = 8;
const ID_HEX: u8 = 16;
const PARENT_HEX: u8 = 32;
const PLACED: u8 = 64;
const NO_TIME: i64 = i64::MIN;
/// A code saying the name is kept in `more`.
const NAMED: u8 = 255;
const NO_ROLE: u8 = 254;
const LEN_BITS: u32 = 24;
const OFFSET_BITS: u32 = 40;

#[derive(Debug, Clone, Default)]
struct More {
    id: CompactString,
    parent_id: Option<CompactString>,
    entry_type: Option<EntryType>,
    role: Option<Role>,
    line: usize,
    src: Option<(u64, usize)>,
    entry: OnceLock<Box<Entry>>,
    json: OnceLock<Box<str>>,
}

/// What a slot is made of, before it is packed.
struct Parts<'a> {
    id: &'a str,
    parent_id: Option<&'a str>,
    entry_type: &'a EntryType,
    role: Option<&'a Role>,
    line: usize,
    ts_ms: Option<i64>,
    js_only: bool,
    src: Option<(u64, usize)>,
    from_index: bool,
}

impl Parts<'_> {
    fn pack(self, entry: Option<Box<Entry>>, json: Option<Box<str>>) -> Slot {
        let mut more = More::default();
        let mut odd = entry.is_some() || json.is_some();
        let mut flags = LIVE;
        let mut set = |on: bool, flag: u8| {
            if on {
                flags |= flag;
            }
        };
        set(self.js_only, JS_ONLY);
        set(self.from_index, FROM_INDEX);
        set(self.parent_id.is_some(), HAS_PARENT);
        let (packed_id, packed_parent) = (PackedId::of(self.id), self.parent_id.map(PackedId::of));
        let id = match packed_id {
            PackedId::Hex(v) => v,
            PackedId::Other => {
                more.id = self.id.into();
                odd = true;
                0
            }
        };
        let parent = match packed_parent {
            Some(PackedId::Hex(v)) => v,
            Some(PackedId::Other) => {
                more.parent_id = self.parent_id.map(CompactString::from);
                odd = true;
                0
            }
            None => 0,
        };
        set(packed_id != PackedId::Other, ID_HEX);
        set(matches!(packed_parent, Some(PackedId::Hex(_))), PARENT_HEX);
        let type_code = match EntryType::ALL.iter().position(|t| t == self.entry_type) {
            Some(k) => k as u8,
            None => {
                more.entry_type = Some(self.entry_type.clone());
                odd = true;
                NAMED
            }
        };
        let role_code = match self.role.map(|r| Role::ALL.iter().position(|x| x == r)) {
            None => NO_ROLE,
            Some(Some(k)) => k as u8,
            Some(None) => {
                more.role = self.role.cloned();
                odd = true;
                NAMED
            }
        };
        let line = match u32::try_from(self.line) {
            Ok(l) if l != u32::MAX => l,
            _ => {
                more.line = self.line;
                odd = true;
                u32::MAX
            }
        };
        let place = match self.src {
            Some((offset, len)) if offset >> OFFSET_BITS == 0 && len >> LEN_BITS == 0 => {
                flags |= PLACED;
                offset | (len as u64) << OFFSET_BITS
            }
            Some(src) => {
                more.src = Some(src);
                odd = true;
                0
            }
            None => 0,
        };
        let ts_ms = self.ts_ms.filter(|&t| t != NO_TIME).unwrap_or(NO_TIME);
        if let Some(e) = entry {
            more.entry = OnceLock::from(e);
        }
        if let Some(j) = json {
            more.json = OnceLock::from(j);
        }
        let more = if odd { OnceBox::with_value(Box::new(more)) } else { OnceBox::new() };
        Slot { place, ts_ms, id, parent, line, kind: [type_code, role_code], flags, more }
    }
}

/// Id → slot over `slots`, the later line of an id winning.
pub(crate) fn id_index(slots: &Slots) -> IdTable {
    let mut by_id = IdTable::with_capacity(slots.len());
    for (i, s) in slots.iter().enumerate() {
        by_id.insert(&s.id(), i, |k| slots[k].id());
    }
    by_id
}

/// The parent ids that resolve to no slot.
pub(crate) fn unresolved_parents(slots: &Slots) -> HashSet<CompactString, IdHash> {
    slots
        .iter()
        .enumerate()
        .filter(|&(i, _)| slots.parent(i).is_none())
        .filter_map(|(_, s)| s.parent_id().map(|p| CompactString::from(&*p)))
        .collect()
}

/// Parent id → the live slots of `slots` naming it, in file order.
pub(crate) fn children_index(slots: &Slots) -> IdMap<Kids> {
    let mut children: IdMap<Kids> = IdMap::default();
    for (i, s) in slots.iter().enumerate() {
        let Some(p) = s.parent_id().filter(|_| s.live()) else { continue };
        match children.get_mut(&*p) {
            Some(kids) => kids.push(i),
            None => {
                children.insert(CompactString::from(&*p), Kids::One(i));
            }
        }
    }
    children
}

impl Slot {
    /// A slot holding a decoded entry and its JSON text (appends, the slow path).
    pub(crate) fn decoded(entry: Entry, json: Box<str>, line: usize, js_only: bool) -> Slot {
        let (entry_type, role) = (entry.entry_type(), entry.message_role());
        let parts = Parts {
            id: &entry.id,
            parent_id: entry.parent_id.as_deref(),
            entry_type: &entry_type,
            role: role.as_ref(),
            line,
            ts_ms: parse_iso_ms(&entry.timestamp),
            js_only,
            src: None,
            from_index: false,
        };
        let slot = Parts { ..parts }.pack(None, Some(json));
        let _ = slot.caches().entry.set(Box::new(entry));
        slot
    }

    /// A slot from the index: nothing decoded yet.
    pub(crate) fn indexed(e: ReadEntry, parent_id: Option<&str>) -> Slot {
        Parts {
            id: &e.id,
            parent_id,
            entry_type: &e.entry_type,
            role: e.role.as_ref(),
            line: e.line as usize,
            ts_ms: e.ts_ms,
            js_only: e.js_only,
            src: Some((e.offset, e.len as usize)),
            from_index: true,
        }
        .pack(None, None)
    }

    /// A slot the index placed but could not describe (it cannot be read
    /// there any more): no id, no line, so whatever reads it says the line
    /// changed, and a check of the lines reads the file again.
    pub(crate) fn unreadable() -> Slot {
        Parts {
            id: "",
            parent_id: None,
            entry_type: &EntryType::parse(""),
            role: None,
            line: 0,
            ts_ms: None,
            js_only: false,
            src: None,
            from_index: true,
        }
        .pack(None, None)
    }

    /// A slot for a scanned line; the entry is decoded now only when the scan did.
    pub(crate) fn scanned(e: ScannedEntry) -> Slot {
        let h = e.head;
        // The scan keeps only records that are entries, and those have a type.
        let entry_type = h.entry_type.unwrap_or_else(|| EntryType::parse(""));
        Parts {
            id: h.id.as_deref().unwrap_or_default(),
            parent_id: match &h.parent {
                ParentField::Id(p) => Some(p),
                _ => None,
            },
            entry_type: &entry_type,
            role: h.role.as_ref(),
            line: e.line,
            ts_ms: h.ts_ms,
            js_only: h.js_only,
            src: Some((e.offset, e.len)),
            from_index: false,
        }
        .pack(h.entry, None)
    }

    /// The caches and the odd parts (made on first use when the slot had no odd part).
    fn caches(&self) -> &More {
        self.more.get_or_init(Box::default)
    }

    /// The odd parts (`None` when everything fits the packed fields).
    fn odd(&self) -> Option<&More> {
        self.more.get()
    }

    pub(crate) fn id(&self) -> EntryId<'_> {
        if self.flags & ID_HEX != 0 {
            return EntryId::hex(self.id);
        }
        EntryId::Text(self.odd().map_or("", |m| m.id.as_str()))
    }

    /// The `parentId` as written (`None`: none, or null).
    pub(crate) fn parent_id(&self) -> Option<EntryId<'_>> {
        if self.flags & HAS_PARENT == 0 {
            return None;
        }
        if self.flags & PARENT_HEX != 0 {
            return Some(EntryId::hex(self.parent));
        }
        Some(EntryId::Text(self.odd().and_then(|m| m.parent_id.as_deref()).unwrap_or_default()))
    }

    pub(crate) fn entry_type(&self) -> &EntryType {
        static UNNAMED: std::sync::LazyLock<EntryType> = std::sync::LazyLock::new(|| EntryType::parse(""));
        match EntryType::ALL.get(usize::from(self.kind[0])) {
            Some(t) => t,
            None => self.odd().and_then(|m| m.entry_type.as_ref()).unwrap_or(&UNNAMED),
        }
    }

    /// The `role` of a message entry's message.
    pub(crate) fn role(&self) -> Option<&Role> {
        match self.kind[1] {
            NO_ROLE => None,
            NAMED => self.odd().and_then(|m| m.role.as_ref()),
            code => Role::ALL.get(usize::from(code)),
        }
    }

    /// The line the entry was read from (0 for an entry appended in this process).
    pub(crate) fn line(&self) -> usize {
        match self.line {
            u32::MAX => self.odd().map_or(0, |m| m.line),
            l => l as usize,
        }
    }

    /// Adds `by` to the line number (a scanning thread counts lines from its range's start).
    pub(crate) fn shift_line(&mut self, by: usize) {
        let line = self.line() + by;
        match u32::try_from(line) {
            Ok(l) if l != u32::MAX => self.line = l,
            _ => {
                let mut more = self.odd().cloned().unwrap_or_default();
                more.line = line;
                self.line = u32::MAX;
                self.more = OnceBox::with_value(Box::new(more));
            }
        }
    }

    pub(crate) fn ts_ms(&self) -> Option<i64> {
        (self.ts_ms != NO_TIME).then_some(self.ts_ms)
    }

    /// False for an earlier line whose id a later line took over.
    pub(crate) fn live(&self) -> bool {
        self.flags & LIVE != 0
    }

    pub(crate) fn set_live(&mut self, live: bool) {
        self.flags = if live { self.flags | LIVE } else { self.flags & !LIVE };
    }

    /// Only JavaScript's reading accepts the line (`arbor_log::reader::parse_line_detail`): its
    /// text may not be what `JSON.stringify` writes for what it means (a number beyond `f64`
    /// reads as `null`), so its JSON text is the line's value written again, never the line.
    pub(crate) fn js_only(&self) -> bool {
        self.flags & JS_ONLY != 0
    }

    /// The JSON text, when it is held.
    pub(crate) fn held_json(&self) -> Option<&str> {
        self.odd().and_then(|m| m.json.get()).map(|j| &**j)
    }

    /// Where the line is in the session's source: (offset, length).
    pub(crate) fn src(&self) -> Option<(u64, usize)> {
        if self.flags & PLACED != 0 {
            return Some((self.place & ((1 << OFFSET_BITS) - 1), (self.place >> OFFSET_BITS) as usize));
        }
        self.odd().and_then(|m| m.src)
    }

    /// The place came from the index cache, not from reading the file now:
    /// the line is checked before it is used (see [`Slot::indexed_line`]).
    pub(crate) fn placed_by_index(&self) -> bool {
        self.flags & FROM_INDEX != 0
    }

    /// The entry, decoded from the source on first use (and then kept).
    pub(crate) fn entry(&self, src: Option<&dyn ReadAt>) -> Result<&Entry, Stale> {
        let caches = self.caches();
        if let Some(e) = caches.entry.get() {
            return Ok(e);
        }
        let e = self.decode(src)?;
        Ok(caches.entry.get_or_init(|| Box::new(e)))
    }

    /// The entry as an owned value, without keeping a decoded copy (a copy when one is kept already).
    pub(crate) fn owned_entry(&self, src: Option<&dyn ReadAt>) -> Result<Entry, Stale> {
        self.owned_entry_via(&mut LineCursor::new(src))
    }

    fn read_line(&self, src: Option<&dyn ReadAt>) -> Result<Vec<u8>, Stale> {
        let (Some(src), Some((offset, len))) = (src, self.src()) else {
            return Err(self.stale("the index's entry cannot be read there any more"));
        };
        // A line placed by the index is read with the byte before it, to check where it starts.
        let before = usize::from(self.placed_by_index());
        let Some(start) = offset.checked_sub(before as u64) else { return Err(self.misplaced()) };
        let mut bytes = read_exact_at(src, start, len + before).map_err(|e| match changed_in(&e) {
            Some(what) => self.stale(what),
            None => self.stale(&format!("cannot read the line: {e}")),
        })?;
        if bytes.len() != len + before {
            return Err(self.stale("the file is shorter than when it was opened"));
        }
        if self.placed_by_index() {
            if self.indexed_line(&bytes).is_none() {
                return Err(self.misplaced());
            }
            bytes.remove(0);
        }
        Ok(bytes)
    }

    /// Why this slot's line cannot be read: `what`, at its line.
    pub(super) fn stale(&self, what: &str) -> Stale {
        Stale { line: self.line(), what: what.to_owned() }
    }

    pub(super) fn misplaced(&self) -> Stale {
        self.stale(&format!("entry {} is not on the line the index put it", self.id()))
    }

    /// For a slot placed by the index: the line in `raw` (which holds the
    /// byte before the line, then the line) when it is where the index says
    /// a line is (after a newline, ending in one) and holds a JSON object
    /// with this entry's id; `None` when the file was changed behind the
    /// index. The check is cheap (no parse); the index's stamp (size, times,
    /// edge checksum) is what stands for the rest of the line.
    pub(crate) fn indexed_line<'b>(&self, raw: &'b [u8]) -> Option<&'b [u8]> {
        let (&first, line) = raw.split_first()?;
        if first != b'\n' || line.last() != Some(&b'\n') {
            return None;
        }
        let text = trim_line(line);
        if text.first() != Some(&b'{') || text.last() != Some(&b'}') {
            return None;
        }
        holds_id(text, &self.id()).then_some(line)
    }

    /// The bytes [`Slot::line_via`] reads, as `(offset, len)`: the line,
    /// with the byte before it when the index placed it.
    pub(crate) fn span(&self) -> Option<(u64, usize)> {
        let (offset, len) = self.src()?;
        if !self.placed_by_index() {
            return Some((offset, len));
        }
        Some((offset.checked_sub(1)?, len + 1))
    }

    /// The line of this slot through `cursor`, checked when the index placed it.
    pub(super) fn line_via<'c>(&self, cursor: &'c mut LineCursor<'_>) -> Option<&'c [u8]> {
        let (offset, len) = self.span()?;
        let raw = cursor.line(offset, len)?;
        if !self.placed_by_index() {
            return Some(raw);
        }
        self.indexed_line(raw)
    }

    /// The entry's preview, decoded from its long line read in windows
    /// (see [`crate::Session::read_previews`]); `None` for a short line, or
    /// one that cannot be reduced or is not where the index put it.
    /// A long line the file no longer holds as the session read it fails, saying why.
    fn preview_entry(&self, src: Option<&dyn ReadAt>) -> Result<Option<Entry>, Stale> {
        if self.odd().is_some_and(|m| m.entry.get().is_some()) {
            return Ok(None);
        }
        let Some(reduced) = self.reduced(src)? else { return Ok(None) };
        Ok(full_entry(&reduced.bytes).filter(|e| *self.id() == *e.id).map(|e| *e))
    }

    fn decode(&self, src: Option<&dyn ReadAt>) -> Result<Entry, Stale> {
        let line = self.read_line(src)?;
        self.decode_line(&line)
    }

    /// The entry, decoded from its line read through `cursor` (not kept).
    pub(crate) fn owned_entry_via(&self, cursor: &mut LineCursor<'_>) -> Result<Entry, Stale> {
        if let Some(e) = self.odd().and_then(|m| m.entry.get()) {
            return Ok((**e).clone());
        }
        if cursor.previews {
            if let Some(e) = self.preview_entry(cursor.src)? {
                return Ok(e);
            }
        }
        match self.line_via(cursor) {
            Some(line) => self.decode_line(line),
            // No line where it was: read again alone, for the reason.
            None => self.decode(cursor.src),
        }
    }

    /// The entry in `line`: the file changed under the session when it
    /// holds no entry with this slot's id.
    fn decode_line(&self, line: &[u8]) -> Result<Entry, Stale> {
        match full_entry(line).filter(|e| *self.id() == *e.id) {
            Some(e) => Ok(*e),
            None => Err(self.stale(&format!("the line no longer holds entry {}", self.id()))),
        }
    }

    /// The JSON text, read from the source on first use (and then kept).
    pub(crate) fn json(&self, src: Option<&dyn ReadAt>) -> Result<&str, Stale> {
        let caches = self.caches();
        if let Some(j) = caches.json.get() {
            return Ok(j);
        }
        let text = match self.read_line(src) {
            Ok(bytes) => line_json(bytes, self.js_only()),
            // A slot with no line in the file (appended here) holds its entry.
            Err(_) if self.src().is_none() && caches.entry.get().is_some() => entry_json(self.entry(src)?),
            Err(e) => return Err(e),
        };
        Ok(caches.json.get_or_init(|| text))
    }

    /// Calls `f` with the JSON text without keeping it (for writers that stream every entry).
    pub(crate) fn with_json<R>(&self, src: Option<&dyn ReadAt>, f: impl FnOnce(&str) -> R) -> Result<R, Stale> {
        self.with_json_via(&mut LineCursor::new(src), f)
    }

    /// The span [`Slot::with_json_via`] asks its cursor for: none when the
    /// JSON text is held (or the slot has no line).
    pub(crate) fn json_span(&self) -> Option<(u64, usize)> {
        match self.odd().and_then(|m| m.json.get()) {
            Some(_) => None,
            None => self.span(),
        }
    }

    /// [`Slot::with_json`] reading the line through `cursor` (see [`LineCursor`]).
    pub(crate) fn with_json_via<R>(&self, cursor: &mut LineCursor<'_>, f: impl FnOnce(&str) -> R) -> Result<R, Stale> {
        self.with_text_via(cursor, false, f)
    }

    /// [`Slot::with_json_via`], or with `as_written` the line's text as the
    /// file holds it even when only JavaScript reads it (`1e400` stays).
    pub(crate) fn with_text_via<R>(
        &self,
        cursor: &mut LineCursor<'_>,
        as_written: bool,
        f: impl FnOnce(&str) -> R,
    ) -> Result<R, Stale> {
        if let Some(j) = self.odd().and_then(|m| m.json.get()).filter(|_| !(as_written && self.js_only())) {
            return Ok(f(j));
        }
        // A reader of previews is handed a long line's reduced form (valid UTF-8: the reducer checked).
        if cursor.previews {
            if let Some(bytes) = self.reduced(cursor.src)?.map(|r| r.bytes) {
                if let Ok(text) = std::str::from_utf8(trim_line(&bytes)) {
                    return Ok(f(text));
                }
            }
        }
        // A line the index placed wrongly, or one read after the file
        // changed, is never copied: the read fails, saying why.
        let src = cursor.src;
        let alone;
        let bytes = match self.line_via(cursor) {
            Some(bytes) => bytes,
            // A slot with no line in the file (appended here) holds its entry.
            None if self.src().is_none() => return Ok(f(&entry_json(self.entry(src)?))),
            // No line where it was: read again alone, for the reason.
            None => {
                alone = self.read_line(src)?;
                &alone[..]
            }
        };
        let text = trim_line(bytes);
        // Whole lines: the vector check (a million lines on the way out of `tree --json`).
        let text = match simdutf8::basic::from_utf8(text) {
            Ok(t) => Cow::Borrowed(t),
            Err(_) => String::from_utf8_lossy(text),
        };
        Ok(match (self.js_only() && !as_written).then(|| stringified(&text)).flatten() {
            Some(again) => f(&again),
            None => f(&text),
        })
    }
}

/// A scan keeps each entry as a slot, made in the thread that scanned its line.
impl ScanTarget for Slot {
    type Id<'a> = EntryId<'a>;

    fn from_scanned(e: ScannedEntry) -> Slot {
        Slot::scanned(e)
    }

    fn shift_line(&mut self, by: usize) {
        Slot::shift_line(self, by);
    }

    fn id(&self) -> EntryId<'_> {
        Slot::id(self)
    }

    fn place(&self) -> (usize, u64, usize) {
        let (offset, len) = self.src().unwrap_or_default();
        (self.line(), offset, len)
    }
}

/// True when the JSON text `text` has the key `"id"` with the string `id`
/// (written as `JSON.stringify` writes it). No allocation for an id that
/// needs no escaping (every id pi makes).
pub(super) fn holds_id(text: &[u8], id: &str) -> bool {
    static KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"id\":"));
    let plain = id.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
    let escaped;
    let want: &[u8] = if plain {
        id.as_bytes()
    } else {
        escaped = serde_json::to_string(id).unwrap_or_default();
        escaped.as_bytes().get(1..escaped.len().saturating_sub(1)).unwrap_or_default()
    };
    KEY.find_iter(text).any(|at| {
        let rest = &text[at + 5..];
        rest.first() == Some(&b'"')
            && rest.get(1..1 + want.len()) == Some(want)
            && rest.get(1 + want.len()) == Some(&b'"')
    })
}

/// A line's bytes as the JSON text of its entry: trimmed as the reader trims
/// it, without a copy in the common case of clean UTF-8 ending in `\n`; a
/// line only JavaScript reads is written again as `JSON.stringify` would.
pub(crate) fn line_json(raw: Vec<u8>, js_only: bool) -> Box<str> {
    let text = trimmed_text(raw);
    if js_only {
        return stringified(&text).map_or(text, String::into_boxed_str);
    }
    text
}

/// An entry's JSON text with another `parentId` (in its place among the keys).
pub(crate) fn with_parent(text: &str, parent: Option<&str>) -> String {
    match arbor_log::json::parse(text) {
        Ok(Value::Object(mut v)) => {
            v.insert("parentId".into(), parent.map_or(Value::Null, |p| Value::String(p.to_owned())));
            value_json(&Value::Object(v))
        }
        _ => text.to_owned(),
    }
}

/// The JSON text `JSON.stringify` writes for what `text` means.
fn stringified(text: &str) -> Option<String> {
    arbor_log::json::parse(text).ok().and_then(|v| arbor_log::json::to_string(&v).ok())
}

fn trimmed_text(mut raw: Vec<u8>) -> Box<str> {
    let trimmed = trim_line(&raw);
    if trimmed.len() != raw.len() && raw.starts_with(trimmed) {
        raw.truncate(trimmed.len());
    } else if trimmed.len() != raw.len() {
        raw = trimmed.to_vec();
    }
    match String::from_utf8(raw) {
        Ok(s) => s.into_boxed_str(),
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned().into_boxed_str(),
    }
}

/// An entry's JSON text in pi's key order.
pub(crate) fn entry_json(entry: &Entry) -> Box<str> {
    value_json(&entry.to_value()).into_boxed_str()
}

/// A value's JSON text, as `JSON.stringify` writes it.
pub(crate) fn value_json(v: &Value) -> String {
    // Encoding a Value built from JSON cannot fail.
    arbor_log::json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_packed_and_reads_back_what_it_was_made_of() {
        assert!(std::mem::size_of::<Slot>() <= 40, "{} bytes", std::mem::size_of::<Slot>());
        let odd_type = EntryType::parse("future_thing");
        let odd_role = Role::parse("narrator");
        let cases = [
            ("0a1b2c3d", Some("ffffffff"), EntryType::Message, Some(Role::Assistant), 7, Some(-5), (10, 20)),
            ("not-hex", Some("Also Not"), odd_type.clone(), Some(odd_role.clone()), 1 << 33, None, (1 << 41, 1 << 25)),
            ("", None, EntryType::Label, None, 0, Some(i64::MAX), ((1 << 40) - 1, (1 << 24) - 1)),
        ];
        for (id, parent_id, entry_type, role, line, ts_ms, src) in cases {
            for js_only in [false, true] {
                let s = Parts {
                    id,
                    parent_id,
                    entry_type: &entry_type,
                    role: role.as_ref(),
                    line,
                    ts_ms,
                    js_only,
                    src: Some(src),
                    from_index: js_only,
                }
                .pack(None, None);
                assert_eq!(&*s.id(), id);
                assert_eq!(s.parent_id().as_deref(), parent_id);
                assert_eq!(s.entry_type(), &entry_type);
                assert_eq!(s.role(), role.as_ref());
                assert_eq!((s.line(), s.ts_ms(), s.src()), (line, ts_ms, Some(src)));
                assert_eq!((s.js_only(), s.placed_by_index(), s.live()), (js_only, js_only, true));
            }
        }
    }
}
