//! The context of an `arbor-tree` [`Session`] at its leaf, reading only what
//! the answer needs: the path's heads (no decoding), then the entries the
//! context reads, on all cores.

use arbor_tree::{Position, Session};

use crate::context::{message_of_entry, plan_context, ContextPlan, PathHead, SessionContext};

/// The plan of a session's context at its leaf ([`plan_session_context`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPlan {
    /// The leaf's path, root first, as positions in file order.
    pub path: Vec<Position>,
    /// The [`plan_context`] of that path: its positions index [`SessionPlan::path`].
    pub plan: ContextPlan,
}

/// The context at the session's leaf, decoding only the path entries it
/// reads (on all cores) and moving them into it: on a large session that is
/// what the answer costs, not the whole path. The same value as
/// `build_context_from_path(&session.get_branch(None))` (tested in the
/// `positions` tests).
pub fn session_context(session: &Session) -> SessionContext {
    let SessionPlan { path, plan } = plan_session_context(session);
    let wanted: Vec<Position> = plan.message_positions().map(|p| path[p]).collect();
    let mut messages = session.decode_many(&wanted).into_iter();
    plan.into_context(|_| messages.next().flatten().and_then(message_of_entry))
}

/// The leaf's path and the [`plan_context`] of its context: the settings and
/// made-up messages are decoded (on all cores), each other message is left
/// where it is stored, for callers that copy it from there
/// ([`session_context`] decodes it, [`crate::write_context_json`] copies it).
pub fn plan_session_context(session: &Session) -> SessionPlan {
    let path = session.branch_positions(None);
    // Positions the session just gave: each has a head.
    let heads: Vec<PathHead> = path
        .iter()
        .filter_map(|&p| {
            Some(PathHead {
                id: session.id_at(p)?,
                entry_type: session.entry_type_at(p)?.clone(),
                role: session.role_at(p).cloned(),
            })
        })
        .collect();
    let plan = plan_context(&heads, |ps| session.decode_many(&ps.iter().map(|&p| path[p]).collect::<Vec<_>>()));
    SessionPlan { path, plan }
}
