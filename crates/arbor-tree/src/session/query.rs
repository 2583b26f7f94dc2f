//! Reading a session by id, the vocabulary of its users: entries, the path
//! from the root, children, labels, the session name.

use std::collections::HashSet;

use arbor_log::idhash::IdHash;
use arbor_log::{Entry, EntryKind, EntryType, Role, SessionInfo};

use super::Session;
use crate::error::TreeError;
use crate::labels::Label;

impl Session {
    /// The entry in slot `i`, decoded on first use.
    pub(super) fn entry_of(&self, i: usize) -> Result<&Entry, TreeError> {
        self.state.slots[i].entry(self.src()).map_err(|e| self.stale(e))
    }

    /// Every entry in file order, duplicates included (pi's `getEntries`).
    /// Each is decoded on first use: an `Err` when the file changed under
    /// the session ([`TreeError::Changed`]; the module docs of `Session`).
    pub fn entries(&self) -> impl ExactSizeIterator<Item = Result<&Entry, TreeError>> + '_ {
        (0..self.state.slots.len()).map(|i| self.entry_of(i))
    }

    /// Every entry in file order with the JSON text it is held as.
    pub fn entries_json(&self) -> impl ExactSizeIterator<Item = Result<(&Entry, &str), TreeError>> + '_ {
        self.state.slots.iter().map(|s| {
            let src = self.src();
            Ok((s.entry(src).map_err(|e| self.stale(e))?, s.json(src).map_err(|e| self.stale(e))?))
        })
    }

    /// The leaf entry.
    pub fn leaf_entry(&self) -> Result<Option<&Entry>, TreeError> {
        match self.state.leaf.as_deref() {
            Some(leaf) => self.get_entry(leaf),
            None => Ok(None),
        }
    }

    /// An entry by id (the later line wins on duplicates).
    pub fn get_entry(&self, id: &str) -> Result<Option<&Entry>, TreeError> {
        self.slot_of(id).map(|i| self.entry_of(i)).transpose()
    }

    /// The JSON text an entry is held as.
    pub fn entry_json(&self, id: &str) -> Result<Option<&str>, TreeError> {
        self.slot_of(id).map(|i| self.state.slots[i].json(self.src()).map_err(|e| self.stale(e))).transpose()
    }

    /// The direct children of `parent_id`, in file order (not sorted).
    pub fn get_children(&self, parent_id: &str) -> Result<Vec<&Entry>, TreeError> {
        let Some(kids) = self.kids().get(parent_id) else { return Ok(vec![]) };
        kids.as_slice().iter().filter(|&&i| self.state.slots[i].id() != parent_id).map(|&i| self.entry_of(i)).collect()
    }

    /// The resolved label of an entry.
    pub fn get_label(&self, id: &str) -> Result<Option<&str>, TreeError> {
        Ok(self.resolved_labels()?.get(id).map(|l| l.text.as_str()))
    }

    /// The resolved label of an entry: its value as written and when it was set.
    pub fn label(&self, id: &str) -> Result<Option<&Label>, TreeError> {
        Ok(self.resolved_labels()?.get(id))
    }

    /// True when some entry has a resolved label.
    pub(crate) fn has_labels(&self) -> Result<bool, TreeError> {
        Ok(!self.resolved_labels()?.is_empty())
    }

    /// Every resolved label, in the order the targets first got one.
    pub fn labels(&self) -> Result<impl Iterator<Item = (&str, &str)> + '_, TreeError> {
        Ok(self.resolved_labels()?.iter().map(|(k, v)| (k, v.text.as_str())))
    }

    /// The path root → `from` (or the leaf), every entry type included; empty
    /// when the start is unknown. Stops at a missing parent and at a repeated id.
    pub fn get_branch(&self, from: Option<&str>) -> Result<Vec<&Entry>, TreeError> {
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
    pub fn session_name(&self) -> Result<Option<&str>, TreeError> {
        // The `session_info` entries from the index's types column, not a build of every slot.
        let infos = self.state.slots.positions_of(&EntryType::SessionInfo);
        for i in infos.into_iter().rev() {
            if let EntryKind::SessionInfo(SessionInfo { name: Some(n), .. }) = &self.entry_of(i)?.kind {
                if !n.is_empty() {
                    return Ok(Some(n.as_str()));
                }
            }
        }
        Ok(None)
    }

    /// User messages with non-empty text on every branch, in file order (pi's `getUserMessagesForForking`).
    pub fn user_messages_for_forking(&self) -> Result<Vec<(&Entry, String)>, TreeError> {
        let mut out = vec![];
        for (i, s) in self.state.slots.iter().enumerate() {
            if !s.live() || s.role() != Some(&Role::User) {
                continue;
            }
            let entry = self.entry_of(i)?;
            let Some(m) = entry.message().filter(|m| m.role() == Some(Role::User)) else { continue };
            let text = m.view().text("");
            if !text.is_empty() {
                out.push((entry, text));
            }
        }
        Ok(out)
    }
}
