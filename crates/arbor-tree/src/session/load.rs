//! Filling a session: index-first from the index cache or a light scan
//! (current-version files), or in full from a [`SessionLog`] (files that
//! need a migration); and keeping the id map, parents, children, labels and
//! cycles right as slots are added.

use std::io;
use std::sync::{Arc, OnceLock};

use arbor_log::idhash::{IdMap, IdTable};
use arbor_log::ids::SeededIds;
use arbor_log::scan::{read_exact_at, ReadAt, ScannedLog};
use arbor_log::{
    Diagnostic, DiagnosticKind, Entry, EntryKind, EntryType, OwnedLine, Role, SessionHeader, SessionLog,
    CURRENT_VERSION,
};
use compact_str::CompactString;

use super::grown::{indexed, names_of, Names};
use super::slot::{children_index, id_index, line_json, unresolved_parents, Kids, Slot, Stale, NO_PARENT};
use super::slots::narrow;
use super::{Disk, Session, Slots};
use crate::error::TreeError;
use crate::index::stored::StoredIndex;
use crate::index::{self, Columns, IndexFile, IndexWriter, LazyIndex};
use crate::labels::Labels;

/// The slot the parent of slot `i` resolves to through the id map `ids`
/// (the later line of an id live): the slot before it when that is its
/// parent (each entry of a chain) and live, without a lookup.
fn parent_in(slots: &Slots, ids: &IdTable, i: usize) -> Option<usize> {
    let p = slots[i].parent_id()?;
    // A live slot is the one its id resolves to.
    if i > 0 && slots[i - 1].live() && slots[i - 1].id() == p {
        return Some(i - 1);
    }
    ids.get(&p, |k| slots[k].id())
}

/// Slots whose index columns are made at once while the index is written.
const WRITE_RUN: usize = 8192;

/// What an entry's slot costs held in memory: the slot, its parent and its row of the id table.
const HELD_PER_ENTRY: u64 = 64;
/// Without the cache's index, the scan's slots are kept when they hold at
/// most this fraction (1/16) of the file's bytes, entries of a kilobyte or
/// more: writing a private index for them would cost time and save little.
/// Smaller entries are read on through a private index.
const HELD_SHARE: u64 = 16;

impl Session {
    /// The index-first load: true when done, false when the file needs the full
    /// path (no usable header, or an old version that needs a migration).
    pub(super) fn load_index_first(&mut self, src: Arc<dyn ReadAt>, stored: Option<StoredIndex>) -> io::Result<bool> {
        // The index the store keeps, when it covers the session as read: it
        // answers as the cache's does, and a first open reads no scan.
        let covers =
            |s: &StoredIndex| src.len().is_ok_and(|len| len == s.extent().bytes && len >= self.opts.index_min_bytes);
        if let Some(lazy) = stored.filter(covers).and_then(StoredIndex::open) {
            if self.load_lazy(lazy, &src)? {
                return Ok(true);
            }
        }
        let path = self.file.clone().unwrap_or_default();
        let index = self
            .opts
            .index_dir
            .as_deref()
            .and_then(|dir| IndexFile::locate(dir, self.opts.store.as_ref(), &path, &*src));
        if let Some(index) = &index {
            if self.load_indexed(index, &src)? || self.load_grown(index, &src)? {
                return Ok(true);
            }
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        let mut scanned = ScannedLog::<Slot>::read_as(&*src, threads)?;
        let clean = scanned.diagnostics.is_empty() && !scanned.entries.is_empty();
        let dup_free = !scanned.diagnostics.iter().any(|d| matches!(d.kind, DiagnosticKind::DuplicateId { .. }));
        // The scan's table of the first entry of each id is the id map when no id is taken twice.
        let ids = std::mem::take(&mut scanned.ids);
        let header_bytes = scanned.prefix.lines().last().map_or(0, |l| l.offset + l.raw().len() as u64);
        let scanned_bytes = scanned.bytes;
        if !self.load_scan(src.clone(), scanned)? {
            return Ok(false);
        }
        // Stamped after the scan: an index says what the scan read, and a file
        // that grew meanwhile (a writer beside this reader) gets none now.
        let stamp = index::stamp_now(self.opts.store.as_ref(), &path, &*src).filter(|s| s.size == scanned_bytes);
        if let Some(stamp) = stamp.filter(|_| clean && scanned_bytes >= self.opts.index_min_bytes) {
            // Read on through an index, as a later open does: the slots made
            // by the scan go, and what the command builds comes on top of the
            // index's few bytes an entry, not the slots' 40. The cache's index
            // when it can be written; else one only this process reads.
            let write = |file: &mut std::fs::File, content| self.write_index(file, stamp, content, header_bytes, &ids);
            let private = || {
                let held = self.state.slots.len() as u64 * HELD_PER_ENTRY;
                let dir = self.opts.index_dir.as_deref();
                (held > scanned_bytes / HELD_SHARE).then(|| index::private_index(dir, stamp, |f| write(f, 0))).flatten()
            };
            // The cache's index records what every byte it covers hashed to, for when the file grows.
            let cached = index.and_then(|i| {
                let content = index::content_hash(&*src, stamp.size).ok()?;
                i.with_stamp(stamp).write_and_open(|f| write(f, content))
            });
            let lazy = cached.or_else(private);
            if let Some(lazy) = lazy {
                self.state.slots = Slots::from_index(lazy);
                return Ok(true);
            }
        }
        self.resolve_ids(dup_free.then_some(ids));
        self.find_cycles();
        self.diagnostics.sort_by_key(|d| d.line);
        Ok(true)
    }

    /// Writes the index of a loaded file without duplicate ids (`ids` its id
    /// map) into `file`, a run of slots at a time; fails (the file is then
    /// dropped) when a parent comes after its child (the index keeps only
    /// parents that point back, so it can hold no cycle) or an entry does not
    /// fit the index's layout.
    fn write_index(
        &self,
        file: &mut std::fs::File,
        stamp: index::Stamp,
        content: u64,
        header_bytes: u64,
        ids: &IdTable,
    ) -> io::Result<()> {
        let slots = &self.state.slots;
        let n = slots.len();
        let unfit = || io::Error::other("an entry does not fit the index");
        let mut w = IndexWriter::new(file, n);
        // Entries whose parent id resolves to none (the index keeps that id).
        let mut unresolved = vec![];
        for start in (0..n).step_by(WRITE_RUN) {
            let end = (start + WRITE_RUN).min(n);
            // The index borrows its ids, and the slots hold pi's packed: spell them out first.
            let names: Vec<Names> = (start..end).map(|i| names_of(&slots[i])).collect();
            let entries = (start..end)
                .zip(&names)
                .map(|(i, names)| match parent_in(slots, ids, i) {
                    Some(p) if p >= i => None,
                    parent => {
                        if parent.is_none() && names.1.is_some() {
                            unresolved.push(i);
                        }
                        indexed(&slots[i], parent, names)
                    }
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(unfit)?;
            let cols = Columns::of(&entries, start, w.strings_len()).ok_or_else(unfit)?;
            w.put(start, &cols)?;
        }
        w.finish(stamp, content, header_bytes, &|emit| {
            let mut unresolved = unresolved.iter().peekable();
            for (i, s) in slots.iter().enumerate() {
                let parent = if unresolved.next_if_eq(&&i).is_some() { s.parent_id() } else { None };
                // Positions fit: the columns were made.
                index::id_rows(i as u32, &s.id(), parent.as_deref(), emit);
            }
        })
    }

    /// Loads from the cached index; false when there is none usable. Only
    /// the index's columns are read now: the slots are built from the index
    /// when first asked for ([`super::Slots`]).
    pub(super) fn load_indexed(&mut self, index: &IndexFile, src: &Arc<dyn ReadAt>) -> io::Result<bool> {
        match index.open() {
            Some(lazy) => self.load_lazy(lazy, src),
            None => Ok(false),
        }
    }

    /// Loads from an opened index (see [`Session::load_indexed`]).
    pub(super) fn load_lazy(&mut self, lazy: LazyIndex, src: &Arc<dyn ReadAt>) -> io::Result<bool> {
        // The index holds each parent already resolved, and only clean files
        // (no duplicate ids, no cycles) are indexed: no id is hashed here.
        let header_bytes = lazy.header_bytes;
        let raw = read_exact_at(&**src, 0, usize::try_from(header_bytes).unwrap_or(usize::MAX))?;
        let prefix = SessionLog::read(&raw[..])?;
        let Some(header) = prefix.header() else { return Ok(false) };
        if header.version() < CURRENT_VERSION || !prefix.diagnostics().is_empty() {
            return Ok(false);
        }
        let has_assistant = lazy.has_role(&Role::Assistant);
        let loaded = self.load_slots(prefix, header, vec![], src.clone(), Slots::from_index(lazy), true);
        self.state.has_assistant |= loaded && has_assistant;
        Ok(loaded)
    }

    /// Loads from a fresh scan; false when the file needs the full path.
    fn load_scan(&mut self, src: Arc<dyn ReadAt>, scanned: ScannedLog<Slot>) -> io::Result<bool> {
        let Some(header) = scanned.prefix.header() else { return Ok(false) };
        if header.version() < CURRENT_VERSION {
            return Ok(false);
        }
        let slots = Slots::from_vec(scanned.entries);
        // Parents are resolved by the caller: through the index it writes, or the id map.
        Ok(self.load_slots(scanned.prefix, header, scanned.diagnostics, src, slots, true))
    }

    /// Takes a v3 prefix's header and the loaded slots; false (nothing
    /// changed) when the prefix would need a migration or a rewrite.
    fn load_slots(
        &mut self,
        mut prefix: SessionLog,
        header: SessionHeader,
        diagnostics: Vec<Diagnostic>,
        src: Arc<dyn ReadAt>,
        slots: Slots,
        resolved: bool,
    ) -> bool {
        let report = prefix.migrate(&mut SeededIds::from_text(&header.id));
        if report.migrated() || prefix.is_dirty() {
            return false;
        }
        self.cwd = header.cwd.clone().unwrap_or_default();
        self.header = header;
        self.header_text = prefix.header_text().map(String::into_boxed_str);
        self.migration = report;
        self.diagnostics = diagnostics;
        self.state.source = Some(src);
        // Moved in whole (a million slots are not copied one by one).
        let lazy = slots.index().is_some();
        self.state.slots = slots;
        if !lazy {
            // Slots from the index say whether there is an assistant message without being built.
            for i in 0..self.state.slots.len() {
                self.note_loaded(i);
            }
        }
        self.state.leaf = self.state.slots.last().map(|s| s.id().to_string());
        if !resolved {
            self.resolve_ids(None);
            self.find_cycles();
        }
        self.diagnostics.sort_by_key(|d| d.line);
        self.disk = Disk::Synced { count: self.state.slots.len() };
        true
    }

    /// Loads decoded entries (the full path), the later line of an id winning.
    pub(super) fn load_entries(&mut self, entries: Vec<(usize, Entry, OwnedLine)>, diags: Vec<Diagnostic>) {
        self.diagnostics.extend(diags);
        self.state.slots.reserve_exact(entries.len());
        for (line, entry, owned) in entries {
            let json = line_json(owned.raw, owned.js_only);
            // Parents are resolved once every slot is in.
            self.push_loaded(Slot::decoded(entry, json, line, owned.js_only), NO_PARENT);
        }
        self.state.leaf = self.state.slots.last().map(|s| s.id().to_string());
        self.resolve_ids(None);
        self.find_cycles();
        self.diagnostics.sort_by_key(|d| d.line);
    }

    /// Appends a decoded entry after the load (see [`Session::push`]).
    pub(super) fn push_slot(&mut self, entry: Entry, json: Box<str>, line: usize, js_only: bool) -> usize {
        self.push(Slot::decoded(entry, json, line, js_only))
    }

    /// Appends a slot after the load: the id map, parents and children lists
    /// follow it. A fresh id the index vouches for needs no id map
    /// ([`Session::fresh_parent`]).
    fn push(&mut self, slot: Slot) -> usize {
        if let Some(parent) = self.fresh_parent(&slot) {
            return self.push_new(slot, parent);
        }
        let id = CompactString::from(&*slot.id());
        let by_id = self.state.by_id.take().unwrap_or_else(|| id_index(&self.state.slots));
        let mut unresolved = self.state.unresolved.take().unwrap_or_else(|| unresolved_parents(&self.state.slots));
        let prev = by_id.get(&id, |k| self.state.slots[k].id());
        if let Some(prev) = prev {
            self.state.slots[prev].set_live(false);
        }
        // A parent naming the entry's own id resolves to the entry itself.
        let own = match slot.parent_id() {
            Some(p) if *p == *id => Some(self.state.slots.len()),
            Some(p) => by_id.get(&p, |k| self.state.slots[k].id()),
            None => None,
        };
        // Entries naming this id as their parent now resolve to it (the later
        // line wins). Only possible when the id was taken before or was some
        // entry's unresolved parent; a fresh id (every append) skips the walk.
        let adopts = prev.is_some() || unresolved.remove(&id);
        self.state.unresolved = OnceLock::from(unresolved);
        let i = self.push_new(slot, own);
        // The map holds slot numbers: the slot is in before its id is.
        let mut by_id = by_id;
        by_id.insert(&id, i, |k| self.state.slots[k].id());
        self.state.by_id = OnceLock::from(by_id);
        if adopts {
            for k in 0..i {
                if self.state.slots[k].parent_id().is_some_and(|p| *p == *id) {
                    self.state.slots.set_parent(k, i);
                }
            }
        }
        i
    }

    /// After a bulk load: the id map (the later line of an id wins, earlier
    /// ones are no longer live) and every slot's parent resolved through it.
    /// `dup_free`: the id map of a load where no id is taken twice (every
    /// slot is live, and a parent that is the slot before needs no lookup).
    fn resolve_ids(&mut self, dup_free: Option<IdTable>) {
        let st = &mut self.state;
        let by_id = dup_free.unwrap_or_else(|| {
            let by_id = id_index(&st.slots);
            for i in 0..st.slots.len() {
                if by_id.get(&st.slots[i].id(), |k| st.slots[k].id()) != Some(i) {
                    st.slots[i].set_live(false);
                }
            }
            by_id
        });
        let parents =
            (0..st.slots.len()).map(|i| parent_in(&st.slots, &by_id, i).unwrap_or(NO_PARENT)).map(narrow).collect();
        st.slots.set_parents(parents);
        st.by_id = OnceLock::from(by_id);
        st.children = OnceLock::new();
        st.unresolved = OnceLock::new();
    }

    /// The slot an id resolves to. The last entry (usually the leaf) is
    /// answered without the id map, so reading the context at the leaf of a
    /// file opened through its index hashes no id at all.
    pub(super) fn slot_of(&self, id: &str) -> Option<usize> {
        self.find(id)
    }

    /// True when some entry has the id `id`.
    pub(super) fn has_id(&self, id: &str) -> bool {
        self.slot_of(id).is_some()
    }

    /// Id → slot (the later line of an id wins), built on first use.
    pub(super) fn ids(&self) -> &IdTable {
        self.state.by_id.get_or_init(|| id_index(&self.state.slots))
    }

    /// Parent id → the live slots naming it, in file order, built on first use.
    pub(super) fn kids(&self) -> &IdMap<Kids> {
        self.state.children.get_or_init(|| children_index(&self.state.slots))
    }

    /// The slot the parent of slot `i` resolves to.
    pub(crate) fn parent_of(&self, i: usize) -> Option<usize> {
        self.state.slots.parent(i)
    }

    /// Adds a loaded slot whose parent resolves to `parent` (see [`Session::note_loaded`]).
    pub(super) fn push_loaded(&mut self, slot: Slot, parent: usize) -> usize {
        let i = self.state.slots.len();
        self.state.slots.push(slot, parent);
        self.note_loaded(i);
        i
    }

    /// Counts a loaded slot: whether it is an assistant message, and its
    /// label once the labels are resolved (before, they are resolved from
    /// every slot on first use).
    fn note_loaded(&mut self, i: usize) {
        let st = &mut self.state;
        let slot = &st.slots[i];
        if !st.has_assistant && slot.role() == Some(&Role::Assistant) {
            st.has_assistant = true;
        }
        if slot.entry_type() != &EntryType::Label {
            return;
        }
        let src = st.source.as_deref();
        if let Some(labels) = st.labels.get_mut() {
            if apply_label(labels, slot, src).is_err() {
                // Resolved again on next use, which then says why.
                st.labels = OnceLock::new();
            }
        }
    }

    /// The resolved labels, from every label entry in file order on first use.
    pub(super) fn resolved_labels(&self) -> Result<&Labels, TreeError> {
        if let Some(labels) = self.state.labels.get() {
            return Ok(labels);
        }
        let mut labels = Labels::default();
        let src = self.src();
        // In passing: a label every few hundred entries would otherwise keep a run of slots each.
        let mut slots = self.state.slots.passing();
        let at = self.state.slots.positions_of(&EntryType::Label);
        if let Some(src) = src.filter(|s| s.remote()) {
            // Told first, a source far away fetches the label lines a few statements in all, not one a line.
            let mut first = self.state.slots.passing();
            let spans: Vec<(u64, u64)> =
                at.iter().filter_map(|&i| first.get(i)?.span()).map(|(o, n)| (o, o + n as u64)).collect();
            src.will_read(&spans);
        }
        for i in at {
            if let Some(slot) = slots.get(i) {
                apply_label(&mut labels, slot, src).map_err(|e| self.stale(e))?;
            }
        }
        Ok(self.state.labels.get_or_init(|| labels))
    }

    /// Makes one entry of each parent cycle a root (and reports the cycle).
    fn find_cycles(&mut self) {
        let n = self.state.slots.len();
        // 0 = unseen, 1 = on the current walk, 2 = done.
        let mut state = vec![0u8; n];
        for start in 0..n {
            if !self.state.slots[start].live() || state[start] != 0 {
                continue;
            }
            let mut walk = vec![];
            let mut cur = Some(start);
            while let Some(i) = cur {
                match state[i] {
                    2 => break,
                    1 => {
                        // A cycle: from the first occurrence of i in this walk to its end.
                        let pos = walk.iter().position(|&w| w == i).unwrap_or(0);
                        if let Some(&first) = walk[pos..].iter().min() {
                            self.note_cycle(first);
                        }
                        break;
                    }
                    _ => {}
                }
                state[i] = 1;
                walk.push(i);
                let e = &self.state.slots[i];
                cur = match &e.parent_id() {
                    Some(p) if *p != e.id() => self.parent_of(i),
                    _ => None,
                };
            }
            for w in walk {
                state[w] = 2;
            }
        }
    }

    fn note_cycle(&mut self, first: usize) {
        let slot = &self.state.slots[first];
        self.diagnostics.push(Diagnostic {
            line: slot.line(),
            offset: 0,
            kind: DiagnosticKind::ParentCycle { id: slot.id().to_string() },
        });
        self.state.cycle_roots.insert(first);
    }
}

/// Applies a label entry's change to `labels`.
fn apply_label(labels: &mut Labels, slot: &Slot, src: Option<&dyn ReadAt>) -> Result<(), Stale> {
    let entry = slot.entry(src)?;
    if let EntryKind::Label(l) = &entry.kind {
        // The entry's `timestamp` as written (a label keeps it, and a fork copies it).
        let timestamp = match entry.timestamp.as_str() {
            "" => arbor_log::json::parse(slot.json(src)?).ok().and_then(|v| v.get("timestamp").cloned()),
            ts => Some(serde_json::Value::String(ts.to_owned())),
        };
        labels.apply(l, timestamp);
    }
    Ok(())
}
