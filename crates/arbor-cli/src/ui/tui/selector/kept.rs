//! The rows and layout of each filter mode with no search and no folds,
//! kept once made (docs/cli.md, "The tree selector"): switching back to a
//! mode, clearing a search or unfolding the last fold swaps a kept list in
//! instead of recomputing a million rows. The lists hold what a fresh
//! recompute gives as long as nothing they depend on changes: an entry found
//! hidden (every list), a label (the labeled-only list), the width (every
//! layout); the selector forgets them then.

use crate::shared::filter::FilterMode;
use crate::shared::forest::Visible;
use crate::shared::layout::Layout;

/// A mode's rows and layout with no search and no folds.
pub(super) type List = (Visible, Layout);

/// The kept lists, at most one per mode (see the module docs).
#[derive(Debug, Clone, Default)]
pub(super) struct Kept {
    lists: Vec<(FilterMode, List)>,
}

impl Kept {
    /// True when `mode`'s list is kept.
    pub(super) fn has(&self, mode: FilterMode) -> bool {
        self.lists.iter().any(|(m, _)| *m == mode)
    }

    /// Takes `mode`'s list out, if it is kept.
    pub(super) fn take(&mut self, mode: FilterMode) -> Option<List> {
        let i = self.lists.iter().position(|(m, _)| *m == mode)?;
        Some(self.lists.swap_remove(i).1)
    }

    /// Keeps `list` as `mode`'s (replacing any kept before).
    pub(super) fn put(&mut self, mode: FilterMode, list: List) {
        self.forget(mode);
        self.lists.push((mode, list));
    }

    /// Forgets `mode`'s list.
    pub(super) fn forget(&mut self, mode: FilterMode) {
        self.lists.retain(|(m, _)| *m != mode);
    }

    /// Forgets every list.
    pub(super) fn clear(&mut self) {
        self.lists.clear();
    }
}
