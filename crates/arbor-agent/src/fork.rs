//! Forking before a user message into a new session (pi's `fork`, the
//! /branch flow of docs/architecture.md, "Forking before a user message"), with the `session_before_fork` and
//! `session_fork` hooks around it.

use std::path::PathBuf;

use arbor_log::Role;
use tokio_util::sync::CancellationToken;

use crate::agent::{emit, AgentSession};
use crate::convert::editor_text;
use crate::error::AgentError;
use crate::hooks::{BeforeForkEvent, ForkEvent, HookEvent, HookFailure, HookResponse};

/// What [`AgentSession::fork`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkResult {
    /// The selected user message's text, to pre-fill the editor.
    pub selected_text: String,
    /// A hook cancelled the fork.
    pub cancelled: bool,
    /// The new session file (persistent sessions; it may not exist until the first assistant message).
    pub path: Option<PathBuf>,
    /// Hooks that failed along the way.
    pub hook_failures: Vec<HookFailure>,
}

impl AgentSession {
    /// Forks before a user message into a new session (pi's `fork`, the
    /// /branch flow of docs/architecture.md, "Forking before a user message").
    ///
    /// A root message starts an empty session whose header names the old
    /// file as parent; any other gets the path up to the message's parent
    /// ([`Session::create_branched_session`](arbor_tree::Session::create_branched_session)). In-memory sessions return no path.
    pub async fn fork(&mut self, entry_id: &str) -> Result<ForkResult, AgentError> {
        self.check_failed()?;
        let entry = self
            .session
            .get_entry(entry_id)?
            .filter(|e| e.message_role() == Some(Role::User))
            .cloned()
            .ok_or(AgentError::InvalidForkEntry)?;
        let selected_text = editor_text(&entry).unwrap_or_default();
        let token = CancellationToken::new();
        let mut failures = vec![];
        let mut skip_restore = false;
        let event = HookEvent::BeforeFork(BeforeForkEvent { entry_id: entry_id.to_owned() });
        if let Some(HookResponse::BeforeFork(r)) = emit(&self.opts.hooks, event, &token, &mut failures).await {
            if r.cancel == Some(true) {
                return Ok(ForkResult { selected_text, cancelled: true, path: None, hook_failures: failures });
            }
            skip_restore = r.skip_conversation_restore == Some(true);
        }
        if skip_restore {
            // The agent keeps the messages it had: build them before the fork changes the session.
            self.context()?;
        }
        let previous_session_file = self.session.session_file().map(|p| p.to_string_lossy().into_owned());
        let path = match &entry.parent_id {
            None => {
                let parent = if self.session.is_persistent() { previous_session_file.clone() } else { None };
                self.session.new_session(None, parent)
            }
            Some(parent) => self.write(|s| s.create_branched_session(parent))?,
        };
        if !skip_restore {
            self.rebuild_context();
        }
        emit(&self.opts.hooks, HookEvent::Fork(ForkEvent { previous_session_file }), &token, &mut failures).await;
        Ok(ForkResult { selected_text, cancelled: false, path, hook_failures: failures })
    }
}

impl AgentSession {
    /// pi's `/clone`: copies the active branch (root to leaf) into a new
    /// session file, which the session continues in; returns its path
    /// (`None` for a session that is not persisted). The original file is
    /// not touched.
    pub fn clone_branch(&mut self) -> Result<Option<PathBuf>, AgentError> {
        self.check_failed()?;
        let Some(leaf) = self.session.leaf_id().map(str::to_owned) else {
            return Err(AgentError::EntryNotFound("(no leaf: the session is empty)".to_owned()));
        };
        let path = self.write(|s| s.create_branched_session(&leaf))?;
        self.rebuild_context();
        Ok(path)
    }

    /// pi's `/new`: a new, empty session in the same sessions directory
    /// (written with its first reply), the active model and hooks kept;
    /// returns its path (`None` when not persisted).
    pub fn new_session(&mut self) -> Option<PathBuf> {
        let path = self.session.new_session(None, None);
        self.rebuild_context();
        path
    }
}
