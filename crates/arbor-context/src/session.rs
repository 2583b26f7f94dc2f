//! The context of an `arbor-tree` [`Session`] at its leaf, reading only what
//! the answer needs: the path's heads (no decoding), then the entries the
//! context reads, on all cores.

use arbor_log::EntryType;
use arbor_tree::{Position, Session};

use serde_json::Value;

use crate::context::{message_of_entry, plan_kinds_context, ContextPlan, ContextStep, PathKind, SessionContext};
use crate::json::BATCH;

/// The plan of a session's context at its leaf ([`plan_session_context`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPlan {
    /// The leaf's path, root first, as positions in file order.
    pub path: Vec<Position>,
    /// The [`plan_context`](crate::plan_context) of that path: its positions index [`SessionPlan::path`].
    pub plan: ContextPlan,
    /// The positions decoded for the plan (the settings that count, the
    /// last compaction, the made-up messages it shows, the last assistant
    /// message), in file order.
    pub read: Vec<Position>,
}

/// The context at the session's leaf, decoding only the path entries it
/// reads (on all cores) and moving them into it: on a large session that is
/// what the answer costs, not the whole path. The same value as
/// `build_context_from_path(&session.get_branch(None))` (tested in the
/// `positions` tests).
pub fn session_context(session: &Session) -> SessionContext {
    context_of_plan(session, plan_session_context(session))
}

/// [`session_context`] from a plan of the session's context made before.
pub fn context_of_plan(session: &Session, plan: SessionPlan) -> SessionContext {
    let SessionPlan { path, plan, .. } = plan;
    let wanted: Vec<Position> = plan.message_positions().map(|p| path[p]).collect();
    let mut messages = session.decode_many(&wanted).into_iter();
    plan.into_context(|_| messages.next().flatten().and_then(message_of_entry))
}

/// The leaf's path and the [`plan_context`](crate::plan_context) of its context: the settings and
/// made-up messages are decoded (on all cores), each other message is left
/// where it is stored, for callers that copy it from there
/// ([`session_context`] decodes it, [`crate::write_context_json`] copies it).
///
/// Only the path's types and roles are read for the plan (the session
/// answers them without building its entries when it was opened through
/// its index), and the id of the entry a compaction keeps from is looked
/// up once: but for the leaf, the path holds only entries that ids resolve
/// to (parents), so the entry with that id before the compaction, if any,
/// is the one the id resolves to. No id of the path is read.
pub fn plan_session_context(session: &Session) -> SessionPlan {
    let path = session.branch_positions(None);
    // Read from the session's columns as the plan asks (a position the
    // session just gave always has a type; one that gives the context
    // nothing stands in otherwise).
    let kind_at = |p: usize| match session.head_at(path[p]) {
        Some((entry_type, role)) => PathKind { entry_type, role },
        None => PathKind { entry_type: &EntryType::Custom, role: None },
    };
    let find_kept = |id: &str, k: usize| {
        let p = session.position_of(id)?;
        let before = &path[..k];
        // The path runs forward through the file but for parents written after their children.
        if before.is_sorted() {
            before.binary_search(&p).ok()
        } else {
            before.iter().rposition(|&q| q == p)
        }
    };
    let mut read = vec![];
    let plan = plan_kinds_context(path.len(), kind_at, find_kept, |ps| {
        let wanted: Vec<Position> = ps.iter().map(|&p| path[p]).collect();
        read.extend_from_slice(&wanted);
        session.decode_many(&wanted)
    });
    read.sort_unstable();
    read.dedup();
    SessionPlan { path, plan, read }
}

/// Calls `f` with each message of the context a plan describes, in order:
/// the stored messages are decoded a batch at a time (on all cores) and
/// dropped after `f` saw them, so a context of a million messages is never
/// all in memory (what `arbor context` prints from).
pub fn for_each_plan_message<E>(
    session: &Session,
    plan: &SessionPlan,
    mut f: impl FnMut(&Value) -> Result<(), E>,
) -> Result<(), E> {
    let SessionPlan { path, plan, .. } = plan;
    for batch in plan.steps.chunks(BATCH) {
        let wanted = stored_positions(path, batch);
        let mut decoded = session.decode_many(&wanted).into_iter();
        for step in batch {
            match step {
                ContextStep::Made(m) => f(m)?,
                ContextStep::Message(_) => {
                    if let Some(m) = decoded.next().flatten().and_then(message_of_entry) {
                        f(&m)?;
                    }
                }
            }
        }
    }
    Ok(())
}

impl SessionPlan {
    /// Every position whose line the context reads: the entries decoded
    /// for the plan and the stored messages, in file order.
    pub fn lines(&self) -> Vec<Position> {
        let mut all: Vec<Position> = self.read.clone();
        all.extend(self.plan.message_positions().map(|p| self.path[p]));
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// The positions (in the session) of the stored messages among `steps`, in
/// order; `path` is the plan's path, which the steps index.
pub(crate) fn stored_positions(path: &[Position], steps: &[ContextStep]) -> Vec<Position> {
    steps
        .iter()
        .filter_map(|step| match step {
            ContextStep::Message(p) => Some(path[*p]),
            ContextStep::Made(_) => None,
        })
        .collect()
}
