//! Which of a path's entries its context must decode (docs/performance.md,
//! "Deep paths"): of the settings of which the last on the path wins (a
//! thinking level, a mode, a compaction, the model an assistant message
//! names) only the last one is read, going back one at a time only when an
//! entry's body does not decode as its type says; every model change and
//! rule injection is read (each adds to oh-my-pi's lists; they are few).
//! The made-up messages (custom messages, branch summaries) are read only
//! where the context shows them: after the last compaction and from the
//! entry it keeps. So a path of a million entries with thousands of
//! thinking-level changes and compactions decodes a handful of them.

use std::borrow::Borrow;

use arbor_log::{Entry, EntryKind, EntryType, Role};

/// What a path position shows without decoding its entry or reading its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathKind<'a> {
    /// The entry `type`.
    pub entry_type: &'a EntryType,
    /// A message entry's message `role`.
    pub role: Option<&'a Role>,
}

/// A setting of which only the last entry on the path counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Last {
    Thinking,
    Mode,
    Compaction,
    Assistant,
}

impl Last {
    const ALL: [Last; 4] = [Last::Thinking, Last::Mode, Last::Compaction, Last::Assistant];

    /// True when the head says the entry may set it.
    fn head(self, h: &PathKind<'_>) -> bool {
        match self {
            Last::Thinking => *h.entry_type == EntryType::ThinkingLevelChange,
            Last::Mode => *h.entry_type == EntryType::ModeChange,
            Last::Compaction => *h.entry_type == EntryType::Compaction,
            Last::Assistant => *h.entry_type == EntryType::Message && h.role == Some(&Role::Assistant),
        }
    }

    /// True when the decoded entry sets it (a malformed body sets nothing).
    fn sets(self, e: &Entry) -> bool {
        match (self, &e.kind) {
            (Last::Thinking, EntryKind::ThinkingLevelChange(_))
            | (Last::Mode, EntryKind::ModeChange(_))
            | (Last::Compaction, EntryKind::Compaction(_)) => true,
            (Last::Assistant, EntryKind::Message(m)) => m.role() == Some(Role::Assistant),
            _ => false,
        }
    }
}

/// True for the types of which every entry on the path adds to the settings.
fn each_counts(t: &EntryType) -> bool {
    matches!(t, EntryType::ModelChange | EntryType::TtsrInjection)
}

/// True for the types whose entries the context shows as a made-up message.
pub(crate) fn made_up(t: &EntryType) -> bool {
    matches!(t, EntryType::CustomMessage | EntryType::BranchSummary)
}

/// The entries the settings of a path depend on, decoded through `decode`
/// (see the module docs), as `(position, entry)` in path order. `kind_at(p)`
/// is the head of path position `p < len`; the path is walked once, from
/// its end. Processing the entries in order gives the settings (and the
/// last compaction) that processing every entry of the path gives.
pub(crate) fn settings_entries<'k, E: Borrow<Entry>>(
    len: usize,
    kind_at: &impl Fn(usize) -> PathKind<'k>,
    decode: &mut impl FnMut(&[usize]) -> Vec<Option<E>>,
) -> Vec<(usize, E)> {
    let mut last: [Option<usize>; Last::ALL.len()] = [None; Last::ALL.len()];
    let mut wanted = vec![];
    for p in (0..len).rev() {
        let h = kind_at(p);
        if each_counts(h.entry_type) {
            wanted.push(p);
        }
        for (k, s) in Last::ALL.into_iter().enumerate() {
            if last[k].is_none() && s.head(&h) {
                last[k] = Some(p);
            }
        }
    }
    wanted.extend(last.iter().flatten());
    let mut out: Vec<(usize, E)> = Vec::with_capacity(wanted.len());
    while !wanted.is_empty() {
        wanted.sort_unstable();
        wanted.dedup();
        let decoded = decode(&wanted);
        let mut again = vec![];
        for (&p, e) in wanted.iter().zip(decoded) {
            // The setting whose last entry this was, if any: when the body
            // does not set it, the entry before of the same kind is read.
            for (k, s) in Last::ALL.into_iter().enumerate() {
                if last[k] == Some(p) && !e.as_ref().is_some_and(|e| s.sets(e.borrow())) {
                    last[k] = (0..p).rev().find(|&q| s.head(&kind_at(q)));
                    again.extend(last[k]);
                }
            }
            out.extend(e.map(|e| (p, e)));
        }
        wanted = again;
    }
    out.sort_by_key(|&(p, _)| p);
    out
}

/// Decodes the made-up messages' entries among `positions` and adds them
/// to `read` (kept in path order).
pub(crate) fn add_made_up<'k, E: Borrow<Entry>>(
    kind_at: &impl Fn(usize) -> PathKind<'k>,
    positions: impl Iterator<Item = usize>,
    read: &mut Vec<(usize, E)>,
    decode: &mut impl FnMut(&[usize]) -> Vec<Option<E>>,
) {
    let wanted: Vec<usize> = positions.filter(|&p| made_up(kind_at(p).entry_type)).collect();
    if wanted.is_empty() {
        return;
    }
    let decoded = decode(&wanted);
    read.extend(wanted.into_iter().zip(decoded).filter_map(|(p, e)| e.map(|e| (p, e))));
    read.sort_by_key(|&(p, _)| p);
}
