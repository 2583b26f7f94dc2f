//! The one way to get a session's context: [`Context::of`], optionally
//! [`Context::at`] an entry, then build it as a value, write it as JSON or
//! text, or walk its messages. Each answer plans the context first (the
//! path's heads, the few entries the plan needs) and then reads only the
//! messages it shows ([`crate::plan`] holds the plan API for callers that
//! keep a plan between steps).

use std::io::{self, Write};

use arbor_tree::{Position, Session, TreeError};
use serde_json::Value;

use crate::context::SessionContext;
use crate::json::{write_json, write_llm_json};
use crate::render::transcript::write_plan_transcript;
use crate::render::Form;
use crate::session::{build, for_each_message, plan_path, Checked, SessionPlan};

/// Where in the session a [`Context`] is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
enum At<'a> {
    /// The session's leaf.
    Leaf,
    /// The entry with this id.
    Entry(&'a str),
    /// The end of this path (positions, root first).
    Path(Vec<Position>),
}

/// The context of a session, as pi's `buildSessionContext` makes it: the
/// root-to-leaf path, the replay of its latest compaction, its branch
/// summaries and custom messages, the thinking level and model state.
///
/// ```
/// use arbor_context::Context;
/// use arbor_tree::{Session, SessionOptions};
/// use serde_json::json;
///
/// let mut session = Session::in_memory("/work", SessionOptions::default());
/// let question = session.append_message(json!({"role": "user", "content": "What is a session tree?", "timestamp": 1}))?;
/// session.append_message(json!({
///     "role": "assistant", "content": [{"type": "text", "text": "A log whose entries point at their parents."}],
///     "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop", "timestamp": 2,
/// }))?;
///
/// // At the leaf, as a value.
/// let context = Context::of(&session).build()?;
/// assert_eq!(context.messages.len(), 2);
/// assert_eq!(context.model.as_ref().map(|m| m.model_id.as_str()), Some("claude-sonnet-4-5"));
///
/// // As if the leaf were at the question (the session's leaf stays where it is).
/// assert_eq!(Context::of(&session).at(&question).build()?.messages.len(), 1);
///
/// // As pi's JSON, the stored messages copied from the session.
/// let mut out = Vec::new();
/// Context::of(&session).write_json(&mut out)?;
/// assert_eq!(serde_json::from_slice::<serde_json::Value>(&out)?, serde_json::to_value(&context)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Context<'a> {
    session: &'a Session,
    at: At<'a>,
}

impl<'a> Context<'a> {
    /// The context of `session` at its leaf.
    pub fn of(session: &'a Session) -> Context<'a> {
        Context { session, at: At::Leaf }
    }

    /// The context as if the leaf were at entry `id` (the session's leaf is
    /// left where it is). An id the session does not hold has no path, so
    /// its context is empty: check it first
    /// ([`Session::position_of`](arbor_tree::Session::position_of)) where
    /// that is an error.
    ///
    /// ```
    /// # use arbor_context::Context;
    /// # use arbor_tree::{Session, SessionOptions};
    /// let session = Session::in_memory("/work", SessionOptions::default());
    /// assert!(Context::of(&session).at("no-such-id").build()?.messages.is_empty());
    /// # Ok::<(), arbor_tree::TreeError>(())
    /// ```
    pub fn at(self, id: &'a str) -> Context<'a> {
        Context { at: At::Entry(id), ..self }
    }

    /// The context at the end of `path`, a root-first path of positions as
    /// [`Session::branch_positions`](arbor_tree::Session::branch_positions)
    /// gives it (for callers that walk positions already).
    ///
    /// ```
    /// # use arbor_context::Context;
    /// # use arbor_tree::{Session, SessionOptions};
    /// # use serde_json::json;
    /// let mut session = Session::in_memory("/work", SessionOptions::default());
    /// let first = session.append_message(json!({"role": "user", "content": "hi", "timestamp": 1}))?;
    /// session.append_message(json!({"role": "user", "content": "again", "timestamp": 2}))?;
    /// let path = session.branch_positions(Some(&first));
    /// assert_eq!(Context::of(&session).at_path(path).build()?, Context::of(&session).at(&first).build()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn at_path(self, path: Vec<Position>) -> Context<'a> {
        Context { at: At::Path(path), ..self }
    }

    /// The plan of the context ([`crate::plan`]): the path, the settings and
    /// where each message comes from, read from the path's heads and the
    /// few entries the settings need; the stored messages are not read.
    ///
    /// ```
    /// # use arbor_context::{plan, Context};
    /// # use arbor_tree::{Session, SessionOptions};
    /// # use serde_json::json;
    /// let mut session = Session::in_memory("/work", SessionOptions::default());
    /// session.append_message(json!({"role": "user", "content": "hi", "timestamp": 1}))?;
    /// let p = Context::of(&session).plan()?;
    /// assert_eq!(p.plan.steps.len(), 1);
    /// assert_eq!(plan::build(&session, p)?, Context::of(&session).build()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn plan(&self) -> Result<SessionPlan, TreeError> {
        let path = match &self.at {
            At::Leaf => self.session.branch_positions(None),
            At::Entry(id) => self.session.branch_positions(Some(id)),
            At::Path(path) => path.clone(),
        };
        plan_path(self.session, path)
    }

    /// The context as a value, decoding only the path entries it reads (on
    /// all cores) and moving them into it: on a large session that is what
    /// the answer costs, not the whole path. The same value as pi's
    /// `buildSessionContext` over every entry
    /// ([`plan::build_from_entries`](crate::plan::build_from_entries)).
    pub fn build(&self) -> Result<SessionContext, TreeError> {
        build(self.session, self.plan()?)
    }

    /// Writes the context as pi's `SessionContext` JSON (what `arbor context
    /// --json` prints), copying each stored message from the file a batch
    /// at a time ([`plan::write_json`](crate::plan::write_json)): it parses
    /// to exactly what serializing [`Context::build`] gives.
    pub fn write_json<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        write_json(out, self.session, &self.plan().map_err(io::Error::other)?)
    }

    /// Writes the context's messages after pi's convertToLlm as a JSON list
    /// (`arbor context --json --llm`), a batch of messages at a time.
    ///
    /// ```
    /// # use arbor_context::Context;
    /// # use arbor_tree::{Session, SessionOptions};
    /// # use serde_json::json;
    /// let mut session = Session::in_memory("/work", SessionOptions::default());
    /// session.append_message(json!({"role": "user", "content": "hi", "timestamp": 1}))?;
    /// let mut out = Vec::new();
    /// Context::of(&session).write_llm_json(&mut out)?;
    /// assert_eq!(String::from_utf8(out)?, r#"[{"role":"user","content":"hi","timestamp":1}]"#);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_llm_json<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        write_llm_json(out, self.session, &self.plan().map_err(io::Error::other)?)
    }

    /// Writes the context as text for people (`arbor context`), its
    /// messages shown in `form`, holding one batch of messages at a time.
    /// [`Checked::Moved`] when the session was opened through its index and
    /// a line the context reads is no longer where the index put it: nothing
    /// was written (see [`plan::write_transcript`](crate::plan::write_transcript)).
    ///
    /// ```
    /// # use arbor_context::{plan::Checked, render::Form, Context};
    /// # use arbor_tree::{Session, SessionOptions};
    /// # use serde_json::json;
    /// let mut session = Session::in_memory("/work", SessionOptions::default());
    /// session.append_message(json!({"role": "user", "content": "hi", "timestamp": 1}))?;
    /// let mut out = Vec::new();
    /// assert_eq!(Context::of(&session).write_transcript(&mut out, Form::AsStored)?, Checked::Written);
    /// assert!(String::from_utf8(out)?.starts_with("user: hi\n"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_transcript<W: Write + ?Sized>(&self, out: &mut W, form: Form) -> io::Result<Checked> {
        write_plan_transcript(out, self.session, &self.plan().map_err(io::Error::other)?, form)
    }

    /// Calls `f` with each message of the context, in order, decoding a
    /// batch of stored messages at a time (on all cores) and dropping them
    /// after `f` saw them: a context of a million messages is never all in
    /// memory. The first error `f` returns stops the walk and is returned.
    ///
    /// ```
    /// # use arbor_context::Context;
    /// # use arbor_tree::{Session, SessionOptions};
    /// # use serde_json::json;
    /// let mut session = Session::in_memory("/work", SessionOptions::default());
    /// session.append_message(json!({"role": "user", "content": "hi", "timestamp": 1}))?;
    /// let mut n = 0;
    /// Context::of(&session).for_each_message(|_| Ok::<_, arbor_tree::TreeError>(n += 1))?;
    /// assert_eq!(n, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_each_message<E: From<TreeError>>(&self, f: impl FnMut(&Value) -> Result<(), E>) -> Result<(), E> {
        for_each_message(self.session, &self.plan()?, f)
    }
}
