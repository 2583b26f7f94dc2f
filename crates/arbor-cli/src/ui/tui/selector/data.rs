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
use crate::shared::forest::Forest;
use crate::shared::layout::pi_depth;

/// Each label by the display index of its entry. A label names its entry
/// by id, and the later line of an id wins; the ids are matched here against
/// the forest's, so no id map of the whole session is built for a few labels.
fn labels_by_index(session: &Session, forest: &Forest, ids: &[CompactString]) -> HashMap<u32, String> {
    // A file changed on disk shows no labels (its rows say why when they are read).
    let wanted: foldhash::HashMap<&str, &str> = session.labels().map(Iterator::collect).unwrap_or_default();
    if wanted.is_empty() {
        return HashMap::new();
    }
    // The display index of the latest line of each labelled id.
    let mut found: foldhash::HashMap<&str, u32> = foldhash::HashMap::default();
    for (k, id) in ids.iter().enumerate() {
        if let Some((&target, _)) = wanted.get_key_value(id.as_str()) {
            let k = k as u32;
            let later = |&old: &u32| forest.position(k).get() > forest.position(old).get();
            if found.get(target).is_none_or(later) {
                found.insert(target, k);
            }
        }
    }
    found.into_iter().map(|(id, k)| (k, wanted[id].to_owned())).collect()
}

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
        let labels = labels_by_index(session, &forest, &ids);
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
