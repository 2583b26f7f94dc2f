//! Ids answered without the id map (docs/performance.md, "Appending"): a
//! session opened through its index answers "which entry holds this id?"
//! and "does some entry name it as an unresolved parent?" from the index's
//! id rows and the few slots appended after the index, so an append to a
//! million-entry session reads a few KB instead of building a map of a
//! million ids. Once the id map is built (a command that walks the tree
//! builds it), it answers instead.

use std::sync::atomic::Ordering;

use super::cursor::LineCursor;
use super::slot::{Slot, NO_PARENT};
use super::Session;
use crate::index::IdRows;

/// Ids looked up through the index before the id map is built instead.
const LOOKUPS_BEFORE_MAP: usize = 256;

/// Slots after the index's that are searched one by one; past this many, the id map is built.
const TAIL_SEARCHED: usize = 4096;

impl Session {
    /// The slot `id` resolves to (the later line of an id wins).
    pub(super) fn find(&self, id: &str) -> Option<usize> {
        if let Some(map) = self.state.by_id.get() {
            return map.get(id, |k| self.state.slots[k].id());
        }
        match self.state.slots.last() {
            // The last line holding an id is the one the id resolves to.
            Some(last) if last.id() == id => return Some(self.state.slots.len() - 1),
            _ => {}
        }
        // A command that asks about many ids is better served by the map.
        let asked = self.state.index_lookups.fetch_add(1, Ordering::Relaxed);
        if asked < LOOKUPS_BEFORE_MAP {
            if let Some(rows) = self.index_answer(id) {
                return rows.entry;
            }
        }
        self.ids().get(id, |k| self.state.slots[k].id())
    }

    /// What the index and the slots after it say about `id`; `None` when
    /// they cannot answer (no index, a long tail, an unreadable index, or an
    /// entry whose line is not where the index puts it).
    fn index_answer(&self, id: &str) -> Option<IdRows> {
        let slots = &self.state.slots;
        let index = slots.index()?;
        let n = index.len();
        if slots.len() - n > TAIL_SEARCHED {
            return None;
        }
        if let Some(i) = (n..slots.len()).rev().find(|&i| slots[i].id() == id) {
            return Some(IdRows { entry: Some(i), names_parent: false });
        }
        let mut rows = index.find_id(id)?;
        rows.names_parent |=
            (n..slots.len()).any(|i| slots.parent(i).is_none() && slots[i].parent_id().is_some_and(|p| *p == *id));
        if let Some(i) = rows.entry {
            // Confirmed against the line in the file, not only the index.
            let mut cursor = LineCursor::new(self.src());
            if !slots.get(i)?.line_is_sound(&mut cursor) {
                return None;
            }
        }
        Some(rows)
    }

    /// Where the parent of an appended slot resolves, when the index can
    /// vouch without the id map that the slot's id is new and names no
    /// entry's unresolved parent (every append's fresh id); `None` when it
    /// cannot (the id map is then needed).
    pub(super) fn fresh_parent(&self, slot: &Slot) -> Option<Option<usize>> {
        if self.state.by_id.get().is_some() {
            return None;
        }
        match self.index_answer(&slot.id())? {
            IdRows { entry: None, names_parent: false } => {}
            _ => return None,
        }
        match slot.parent_id() {
            None => Some(None),
            Some(p) => match self.state.slots.last() {
                Some(last) if last.id() == p => Some(Some(self.state.slots.len() - 1)),
                _ => self.index_answer(&p).map(|rows| rows.entry),
            },
        }
    }

    /// Adds `slot` (an id no slot holds) whose parent resolves to `parent`,
    /// keeping whatever is built of the children and unresolved parents.
    pub(super) fn push_new(&mut self, slot: Slot, parent: Option<usize>) -> usize {
        self.state.leaf = Some(slot.id().to_string());
        let parent_id = slot.parent_id().map(|p| compact_str::CompactString::from(&*p));
        let i = self.push_loaded(slot, parent.unwrap_or(NO_PARENT));
        if let (None, Some(p), Some(unresolved)) = (parent, &parent_id, self.state.unresolved.get_mut()) {
            unresolved.insert(p.clone());
        }
        if let (Some(children), Some(p)) = (self.state.children.get_mut(), parent_id) {
            match children.get_mut(&p) {
                Some(kids) => kids.push(i),
                None => {
                    children.insert(p, super::slot::Kids::One(i));
                }
            }
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use arbor_log::CounterIds;

    use crate::{OpenMode, Session, SessionOptions};

    #[test]
    fn appends_through_the_index_build_no_id_map() {
        let d = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        arbor_test_support::write_big_session(&p, 4000, 300);
        let opts = || {
            SessionOptions { index_dir: Some(cache.path().to_owned()), ..SessionOptions::default() }
                .with_ids(CounterIds::new())
        };
        Session::open(&p, OpenMode::ReadOnly, opts()).unwrap();
        for round in 0..2 {
            // The second round reads the first one's lines after the index from the file.
            let mut s = Session::open(&p, OpenMode::Write, opts()).unwrap();
            assert!(s.opened_from_index());
            s.append_label_change("e1234", Some("x")).unwrap();
            s.branch("e100").unwrap();
            s.append_message(serde_json::json!({"role": "user", "content": "hi"})).unwrap();
            assert_eq!(
                s.get_entry(&format!("0000000{}", 2 * round + 2)).unwrap().unwrap().parent_id.as_deref(),
                Some("e100")
            );
            assert!(s.state.by_id.get().is_none(), "round {round}: no id map");
            assert!(s.state.unresolved.get().is_none(), "round {round}: no unresolved parents");
        }
    }
}
