//! The context of an `arbor-tree` [`Session`] at its leaf, reading only what
//! the answer needs: the path's heads (no decoding), then the entries the
//! context reads, on all cores.

use std::io::{self, Write};

use arbor_log::{Entry, EntryType, Role};
use arbor_tree::{Position, Session, TreeError};

use serde_json::Value;

use crate::context::{message_of_entry, plan_kinds_at, ContextPlan, ContextStep, SessionContext};
use crate::reads::PathKind;

/// Steps of the plan whose messages are read (and held) at once.
pub(crate) const BATCH: usize = 512;

/// The plan of a session's context at an entry ([`Context::plan`](crate::Context::plan)).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPlan {
    /// The leaf's path, root first, as positions in file order.
    pub path: Vec<Position>,
    /// The [`plan_heads`](crate::plan::plan_heads) of that path: its positions index [`SessionPlan::path`].
    pub plan: ContextPlan,
    /// The positions decoded for the plan (the settings that count, the
    /// last compaction, the made-up messages it shows, the last assistant
    /// message), in file order.
    pub read: Vec<Position>,
}

/// The context a plan of the session's context describes (made before, by
/// [`Context::plan`](crate::Context::plan) or [`plan_path`]): the stored
/// messages it reads are decoded (on all cores) and moved into it, so on a
/// large session the answer costs what it holds, not the whole path.
pub fn build(session: &Session, plan: SessionPlan) -> Result<SessionContext, TreeError> {
    let SessionPlan { path, plan, .. } = plan;
    let wanted: Vec<Position> = plan.message_positions().map(|p| path[p]).collect();
    let mut messages = session.decode_many(&wanted)?.into_iter();
    Ok(plan.into_context(|_| messages.next().flatten().and_then(message_of_entry)))
}

/// The plan of the context at the end of `path` (its positions, root
/// first, as [`Session::branch_positions`] gives them), the session's leaf
/// left where it is: the path and the [`plan_heads`](crate::plan::plan_heads) of its context: the settings and
/// made-up messages are decoded (on all cores), each other message is left
/// where it is stored, for callers that copy it from there
/// ([`build`] decodes it, [`write_json`](crate::plan::write_json) copies it).
///
/// Only the path's types and roles are read for the plan (the session
/// answers them without building its entries when it was opened through
/// its index), and the id of the entry a compaction keeps from is looked
/// up once: but for the leaf, the path holds only entries that ids resolve
/// to (parents), so the entry with that id before the compaction, if any,
/// is the one the id resolves to. No id of the path is read.
pub fn plan_path(session: &Session, path: Vec<Position>) -> Result<SessionPlan, TreeError> {
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
    let mut failed = None;
    let plan = plan_kinds_at(path.len(), kind_at, find_kept, |ps| {
        let wanted: Vec<Position> = ps.iter().map(|&p| path[p]).collect();
        read.extend_from_slice(&wanted);
        decode_for_plan(session, &wanted).unwrap_or_else(|e| {
            failed = Some(e);
            vec![None; wanted.len()]
        })
    });
    if let Some(e) = failed {
        return Err(e);
    }
    read.sort_unstable();
    read.dedup();
    Ok(SessionPlan { path, plan, read })
}

/// The entries at `positions` for a plan: an assistant message is read
/// only for the model it names, so from a long line its preview is enough
/// (`Session::decode_previews`: the line is not held); every other entry
/// (a compaction's summary, a made-up message) whole.
fn decode_for_plan(session: &Session, positions: &[Position]) -> Result<Vec<Option<Entry>>, TreeError> {
    let assistant: Vec<bool> = positions
        .iter()
        .map(|&p| matches!(session.head_at(p), Some((EntryType::Message, Some(Role::Assistant)))))
        .collect();
    let pick = |want: bool| -> Vec<Position> {
        positions.iter().zip(&assistant).filter(|(_, &a)| a == want).map(|(&p, _)| p).collect()
    };
    let mut previews = session.decode_previews(&pick(true))?.into_iter();
    let mut whole = session.decode_many(&pick(false))?.into_iter();
    Ok(assistant.iter().map(|&a| if a { previews.next().flatten() } else { whole.next().flatten() }).collect())
}

/// Calls `f` with each message of the context a plan describes, in order:
/// the stored messages are decoded a batch at a time (on all cores) and
/// dropped after `f` saw them, so a context of a million messages is never
/// all in memory (what `arbor context` prints from).
pub fn for_each_message<E: From<TreeError>>(
    session: &Session,
    plan: &SessionPlan,
    mut f: impl FnMut(&Value) -> Result<(), E>,
) -> Result<(), E> {
    let SessionPlan { path, plan, .. } = plan;
    for batch in plan.steps.chunks(BATCH) {
        let wanted = stored_positions(path, batch);
        let mut decoded = session.decode_many(&wanted)?.into_iter();
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

/// What writing the context of a session opened through its index did
/// (the lines are checked as they are read: [`Session::map_id_json_sound`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Checked {
    /// The context was written.
    Written,
    /// A line the context reads is not where the session's index put it
    /// (the file was changed in place): nothing was written. Read the file
    /// again ([`Session::read_again_without_index`]), plan the context
    /// again and write it.
    Moved,
}

/// Output held back (up to this many bytes) until every line it is made of
/// is known to be where the index put it: a transcript of some 25,000
/// messages, a constant beside the file (a million-entry session's
/// transcript is about 1 MB).
const HOLD: usize = 4 << 20;

/// Writes the steps of a plan a batch of `batch` at a time through
/// `write(steps, check, sink)`, which reads the batch's lines, checking
/// each the index placed when `check` ([`Session::map_id_json_sound`]), and
/// answers false when one is not where the index put it.
///
/// Each line is read once: the output is held until every line is checked,
/// and written then. Past [`HOLD`] bytes of it, the lines still to come are
/// checked on their own first ([`Session::lines_sound`]), and the rest of
/// the output is written as it comes, so output of any size is never all
/// held. Nothing is written when a line has moved ([`Checked::Moved`]).
pub(crate) fn write_checked(
    session: &Session,
    plan: &SessionPlan,
    out: &mut dyn Write,
    batch: usize,
    write: impl FnMut(&[ContextStep], bool, &mut dyn Write) -> io::Result<bool>,
) -> io::Result<Checked> {
    write_checked_holding(session, plan, out, batch, HOLD, write)
}

/// [`write_checked`] holding at most `hold` bytes.
fn write_checked_holding(
    session: &Session,
    plan: &SessionPlan,
    out: &mut dyn Write,
    batch: usize,
    hold: usize,
    mut write: impl FnMut(&[ContextStep], bool, &mut dyn Write) -> io::Result<bool>,
) -> io::Result<Checked> {
    let SessionPlan { path, plan: steps, read } = plan;
    // The entries read for the plan itself (settings, made-up messages) first.
    let mut held = session.opened_from_index().then(Vec::new);
    if held.is_some() && !session.lines_sound(read) {
        return Ok(Checked::Moved);
    }
    let batch = batch.max(1);
    for (n, part) in steps.steps.chunks(batch).enumerate() {
        let check = held.is_some();
        let sink: &mut dyn Write = match &mut held {
            Some(h) => h,
            None => out,
        };
        if !write(part, check, sink)? {
            return Ok(Checked::Moved);
        }
        if held.as_ref().is_some_and(|h| h.len() > hold) {
            let rest = stored_positions(path, steps.steps.get((n + 1) * batch..).unwrap_or_default());
            if !session.lines_sound(&rest) {
                return Ok(Checked::Moved);
            }
            out.write_all(&held.take().unwrap_or_default())?;
        }
    }
    if let Some(h) = held {
        out.write_all(&h)?;
    }
    Ok(Checked::Written)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::path::Path;

    use arbor_test_support::{edit_in_place, forged_index, write_big_session};
    use arbor_tree::{FileStore, OpenMode, SessionOptions};

    fn open_in(path: &Path, index_dir: Option<&Path>) -> Session {
        let opts = SessionOptions { index_dir: index_dir.map(Path::to_owned), ..SessionOptions::default() };
        Session::open(path, OpenMode::ReadOnly, opts.with_store(FileStore)).unwrap()
    }

    /// A line per stored message (its id and length), `batch` steps at a
    /// time through [`write_checked_holding`], holding up to `hold` bytes.
    fn written(s: &Session, batch: usize, hold: usize) -> (Checked, Vec<u8>) {
        let plan = plan_path(s, s.branch_positions(None)).unwrap();
        let mut out = vec![];
        let checked = write_checked_holding(s, &plan, &mut out, batch, hold, |steps, check, sink| {
            let stored = stored_positions(&plan.path, steps);
            let f = |_, id: &str, line: &str| format!("{id} {}\n", line.len());
            let read = if check {
                match s.map_id_json_sound(&stored, f) {
                    Some(read) => read,
                    None => return Ok(false),
                }
            } else {
                s.map_id_json_many(&stored, f).unwrap()
            };
            read.into_iter().flatten().try_for_each(|line| sink.write_all(line.as_bytes()))?;
            Ok(true)
        })
        .unwrap();
        (checked, out)
    }

    #[test]
    fn a_checked_write_writes_nothing_until_every_line_is_found_where_the_index_put_it() {
        let d = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        let text = write_big_session(&p, 4000, 300);
        let (checked, want) = written(&open_in(&p, None), 100, HOLD);
        assert_eq!(checked, Checked::Written);
        assert!(want.len() > 30_000, "{} bytes", want.len());
        // Through a sound index: the same, held whole, streamed past a
        // small hold after checking the lines to come, or past none at all.
        open_in(&p, Some(cache.path()));
        let s = open_in(&p, Some(cache.path()));
        assert!(s.opened_from_index());
        for hold in [HOLD, want.len() / 2, 0] {
            assert_eq!(written(&s, 100, hold), (Checked::Written, want.clone()), "hold {hold}");
        }
        // Lines moved behind the index (its stamp forged to match): nothing
        // is written, whether the moved lines come in a batch read held or
        // among the lines to come checked before streaming.
        let index = std::fs::read_dir(cache.path()).unwrap().next().unwrap().unwrap().path();
        edit_in_place(&p, &text, 2000, 2500);
        std::fs::write(&index, forged_index(&index, &p)).unwrap();
        let s = open_in(&p, Some(cache.path()));
        assert!(s.opened_from_index(), "the forged index is used");
        for hold in [HOLD, want.len() / 4, 0] {
            assert_eq!(written(&s, 100, hold), (Checked::Moved, vec![]), "hold {hold}");
        }
    }
}
