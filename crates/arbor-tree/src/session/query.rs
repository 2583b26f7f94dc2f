//! Reading a session by id, the vocabulary of its users: entries, the path
//! from the root, children, labels, the session name.

use std::collections::HashSet;

use arbor_log::entries::SessionInfo;
use arbor_log::idhash::IdHash;
use arbor_log::{Entry, EntryKind, EntryType, Role};

use super::Session;
use crate::labels::{Label, Labeled};

impl Session {
    /// The entry in slot `i`, decoded on first use.
    pub(super) fn entry_of(&self, i: usize) -> &Entry {
        self.state.slots[i].entry(self.src())
    }

    /// Every entry in file order, duplicates included (pi's `getEntries`).
    pub fn entries(&self) -> impl ExactSizeIterator<Item = &Entry> + '_ {
        self.state.slots.iter().map(|s| s.entry(self.src()))
    }

    /// Every entry in file order with the JSON text it is held as.
    pub fn entries_json(&self) -> impl ExactSizeIterator<Item = (&Entry, &str)> + '_ {
        self.state.slots.iter().map(|s| (s.entry(self.src()), s.json(self.src())))
    }

    /// The leaf entry.
    pub fn leaf_entry(&self) -> Option<&Entry> {
        self.get_entry(self.state.leaf.as_deref()?)
    }

    /// An entry by id (the later line wins on duplicates).
    pub fn get_entry(&self, id: &str) -> Option<&Entry> {
        self.slot_of(id).map(|i| self.entry_of(i))
    }

    /// The JSON text an entry is held as.
    pub fn entry_json(&self, id: &str) -> Option<&str> {
        self.slot_of(id).map(|i| self.state.slots[i].json(self.src()))
    }

    /// The direct children of `parent_id`, in file order (not sorted).
    pub fn get_children(&self, parent_id: &str) -> Vec<&Entry> {
        self.kids()
            .get(parent_id)
            .map(|v| {
                v.as_slice()
                    .iter()
                    .filter(|&&i| self.state.slots[i].id() != parent_id)
                    .map(|&i| self.entry_of(i))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The resolved label of an entry: its text, its value as written and
    /// when it was set.
    ///
    /// ```
    /// use arbor_tree::{Session, SessionOptions};
    /// use serde_json::json;
    ///
    /// let mut session = Session::in_memory("/w", SessionOptions::default());
    /// let id = session.append_message(json!({"role": "user", "content": "hi", "timestamp": 1}))?;
    /// session.append_label_change(&id, Some("start"))?;
    /// assert_eq!(session.label(&id).map(|l| l.text.as_str()), Some("start"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn label(&self, id: &str) -> Option<&Label> {
        self.resolved_labels().get(id)
    }

    /// True when some entry has a resolved label.
    pub(crate) fn has_labels(&self) -> bool {
        !self.resolved_labels().is_empty()
    }

    /// Every resolved label with the id of the entry it labels, in the
    /// order the targets got one.
    ///
    /// ```
    /// use arbor_tree::{Session, SessionOptions};
    /// use serde_json::json;
    ///
    /// let mut session = Session::in_memory("/w", SessionOptions::default());
    /// let id = session.append_message(json!({"role": "user", "content": "hi", "timestamp": 1}))?;
    /// session.append_label_change(&id, Some("start"))?;
    /// let labels: Vec<(&str, &str)> = session.labels().map(|l| (l.id, l.text())).collect();
    /// assert_eq!(labels, [(id.as_str(), "start")]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn labels(&self) -> impl Iterator<Item = Labeled<'_>> + '_ {
        self.resolved_labels().iter().map(|(id, label)| Labeled { id, label })
    }

    /// The path root → `from` (or the leaf), every entry type included; empty
    /// when the start is unknown. Stops at a missing parent and at a repeated id.
    pub fn get_branch(&self, from: Option<&str>) -> Vec<&Entry> {
        self.path_slots(from).into_iter().map(|i| self.entry_of(i)).collect()
    }

    /// The slots of [`Session::get_branch`], root first.
    pub(super) fn path_slots(&self, from: Option<&str>) -> Vec<usize> {
        self.path_as(from, |i| i)
    }

    /// The slots of [`Session::get_branch`], root first, each made into a `T`
    /// (a position list is 4 bytes an entry, not 8).
    pub(super) fn path_as<T>(&self, from: Option<&str>, make: impl Fn(usize) -> T) -> Vec<T> {
        let Some(start) = from.or(self.state.leaf.as_deref()).and_then(|id| self.slot_of(id)) else {
            return vec![];
        };
        // A path without a repeated entry is at most every slot long: walk
        // without bookkeeping, and only a walk that gets longer (a parent
        // cycle) is walked again with a set of the slots seen.
        let mut out = vec![];
        if !self.state.slots.walk_up(start, self.state.slots.len(), &mut |i| out.push(make(i))) {
            return self.path_with_cycle(start, make);
        }
        out.reverse();
        out
    }

    fn path_with_cycle<T>(&self, start: usize, make: impl Fn(usize) -> T) -> Vec<T> {
        let mut seen: HashSet<usize, IdHash> = HashSet::default();
        let mut out = vec![];
        let mut cur = Some(start);
        while let Some(i) = cur {
            if !seen.insert(i) {
                break;
            }
            out.push(make(i));
            cur = self.parent_of(i);
        }
        out.reverse();
        out
    }

    /// The session name: the newest `session_info` with a non-empty name, on any branch.
    pub fn session_name(&self) -> Option<&str> {
        // The `session_info` entries from the index's types column, not a build of every slot.
        let infos = self.state.slots.positions_of(&EntryType::SessionInfo);
        infos.into_iter().rev().find_map(|i| match &self.state.slots.get(i)?.entry(self.src()).kind {
            EntryKind::SessionInfo(SessionInfo { name: Some(n), .. }) if !n.is_empty() => Some(n.as_str()),
            _ => None,
        })
    }

    /// User messages with non-empty text on every branch, in file order (pi's `getUserMessagesForForking`).
    pub fn user_messages_for_forking(&self) -> Vec<(&Entry, String)> {
        self.state
            .slots
            .iter()
            .filter(|s| s.live() && s.role() == Some(&Role::User))
            .filter_map(|s| {
                let entry = s.entry(self.src());
                let m = entry.message()?;
                if m.role() != Some(Role::User) {
                    return None;
                }
                let text = m.view().text("");
                (!text.is_empty()).then_some((entry, text))
            })
            .collect()
    }
}
