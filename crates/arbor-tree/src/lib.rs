//! The session tree over a pi log (work in progress).
//!
//! `arbor-tree` will own the tree/leaf model over an `arbor-log` log: indexes
//! by id, children and labels; `branch`, `reset_leaf`, `branch_with_summary`;
//! every append; `get_branch`, `get_tree`, `get_children`; labels; the session
//! name; branched sessions; new/open/continue-recent/in-memory sessions; the
//! sessions directory layout and listing; one writer per file. It knows
//! nothing of LLM contexts, models or async runtimes.
