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

#[cfg(test)]
mod tests {

    use super::super::{FilterMode, Input};
    use crate::ui::tui::loader::Loader;

    /// Read a few entries at a time with filter switches between (lists kept
    /// while entries found hidden change them), every list kept or marked clean
    /// is a fresh computation's, on every fixture.
    #[test]
    fn lists_kept_while_entries_are_read_stay_fresh() {
        let mut rng = arbor_test_support::Rng(0x2545_F491_4F6C_DD1D);
        for (file, s) in super::super::tests::fixture_sessions() {
            let at = file.display().to_string();
            let (mut loader, mut sel) = Loader::open(&s, None, (8, 120), &[], FilterMode::Default);
            loader.set_chunk(1 + rng.below(6));
            loader.prepare(&s, &mut sel);
            while loader.step(&s, &mut sel) {
                sel.assert_kept_fresh(&at);
                if rng.below(3) == 0 {
                    sel.handle(Input::CycleFilter { forward: true });
                }
                loader.prepare(&s, &mut sel);
                sel.assert_kept_fresh(&at);
            }
            sel.assert_fresh(&at);
            for _ in 0..5 {
                sel.handle(Input::CycleFilter { forward: true });
                sel.assert_fresh(&at);
            }
        }
    }
}
