//! What the selector knows about every entry from the moment it opens, read
//! from the session's heads (type, role, id) without decoding messages: the
//! tree in display order, ids, the kinds the filters ask about, labels, and
//! how deep pi's layout would go. Whether an assistant message is one pi
//! always hides needs its content, so it starts unknown and is told later
//! ([`kind::UNKNOWN`]).

use std::collections::HashMap;

use compact_str::CompactString;

use arbor_tree::Session;

use crate::shared::filter::{kind, kind_of};
use crate::shared::forest::{Forest, NONE};
use crate::shared::layout::pi_depth;

/// The selector's data about every entry, by display index.
#[derive(Debug, Clone, Default)]
pub struct SelectorData {
    pub(super) forest: Forest,
    pub(super) ids: Vec<CompactString>,
    pub(super) kinds: Vec<u8>,
    pub(super) labels: HashMap<u32, String>,
    /// How deep pi's layout goes (it is kept while this fits the budget).
    pub(super) pi_depth: u32,
    /// How many entries are still [`kind::UNKNOWN`].
    pub(super) unknown: usize,
}

impl SelectorData {
    /// The data of `session` as it is now.
    pub fn of_session(session: &Session) -> SelectorData {
        let forest = Forest::of_session(session);
        let n = forest.len();
        let mut ids = Vec::with_capacity(n);
        let mut kinds = Vec::with_capacity(n);
        for k in 0..n as u32 {
            let p = forest.position(k);
            ids.push(CompactString::from(&*session.id_at(p).unwrap_or_default()));
            kinds.push(kind_of(session, p));
        }
        let mut labels = HashMap::new();
        let mut by_position = None;
        for (id, label) in session.labels() {
            let Some(p) = session.position_of(id) else { continue };
            let by = by_position.get_or_insert_with(|| forest.index_by_position(session.len()));
            if let Some(&k) = by.get(p.get()).filter(|&&k| k != NONE) {
                labels.insert(k, label.to_owned());
            }
        }
        let unknown = kinds.iter().filter(|&&k| k & kind::UNKNOWN != 0).count();
        SelectorData { pi_depth: pi_depth(&forest), forest, ids, kinds, labels, unknown }
    }

    /// The display index of the entry with this id (a scan: for rare lookups).
    pub fn index_of(&self, id: &str) -> Option<u32> {
        self.ids.iter().position(|i| i == id).map(|k| k as u32)
    }

    /// The tree in display order.
    pub fn forest(&self) -> &Forest {
        &self.forest
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.forest.len()
    }

    /// True when the entry's kind still waits for its content.
    pub fn is_unknown(&self, k: u32) -> bool {
        self.kinds[k as usize] & kind::UNKNOWN != 0
    }

    /// Records whether an assistant entry is one pi always hides.
    pub(super) fn classify(&mut self, k: u32, hidden: bool) -> bool {
        let bits = &mut self.kinds[k as usize];
        if *bits & kind::UNKNOWN == 0 {
            return false;
        }
        *bits &= !kind::UNKNOWN;
        if hidden {
            *bits |= kind::HIDDEN;
        }
        self.unknown -= 1;
        true
    }
}
