//! The chat session both front ends drive: an [`AgentSession`] on a small
//! tokio runtime, the settings, and one method per command. Long operations
//! (a reply, a summary, a compaction) run with a `poll` callback that sees
//! every agent event and may ask for an abort; nothing here draws or prints.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use arbor_agent::{
    AbortHandle, AgentError, AgentEvent, AgentOptions, AgentSession, CompactOptions, CompactResult, CompactionSettings,
    EventSink, ForkResult, ModelInfo, NavigateOptions, NavigateResult, PromptOptions, PromptResult, RetryObserver,
};
use arbor_context::render::{entry_text, ToolCalls};
use arbor_log::EntryKind;
use arbor_tree::{OpenMode, Session, SessionOptions};

use super::settings::{Settings, THINKING_LEVELS};
use crate::shared::agent::{client_options, load_hooks};
use crate::shared::models::Models;
use crate::shared::output::home;
use crate::shared::session::{open_showing_progress, Globals};

/// What a long operation's `poll` callback receives: an agent event, or a
/// tick (about every 20 ms) to look for an abort key and redraw.
pub type Poll<'a> = &'a mut dyn FnMut(Option<AgentEvent>) -> bool;

/// How `arbor chat` was asked to open its session.
#[derive(Debug, Clone)]
pub enum Target {
    /// This file (created there with `new`); with `at`, the tree selector
    /// opens at that entry first (a search hit picked in the session picker).
    File { path: PathBuf, new: bool, at: Option<String> },
    /// A new session in the sessions directory of the cwd.
    New,
    /// The most recent session of the cwd, or a new one.
    Recent,
}

/// Model flags from the command line (they win over the settings).
#[derive(Debug, Clone, Default)]
pub struct ModelFlags {
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--hooks`.
    pub hooks: Option<PathBuf>,
}

/// The chat session.
pub struct Chat {
    pub(super) rt: tokio::runtime::Runtime,
    pub(super) agent: AgentSession,
    /// The settings in effect.
    pub settings: Settings,
    pub(super) models: Models,
    /// Things to tell the user once (restored model, settings warnings, new session path).
    pub notices: Vec<String>,
    /// How sessions are opened (for `/new`, `/resume`, a file read again).
    pub(super) session_opts: SessionOptions,
    /// Where agent events (and retries) go while an operation runs, and where `drive` reads them.
    events_tx: UnboundedSender<AgentEvent>,
    events_rx: UnboundedReceiver<AgentEvent>,
    /// The session file's length after the chat's own last look or write (another writer appends past it).
    pub(super) disk_len: Option<u64>,
}

/// What `/compact` did.
#[derive(Debug)]
pub enum Compacted {
    /// Compacted.
    Done(CompactResult),
    /// There was nothing to compact yet (nothing was sent).
    Nothing,
    /// Cancelled (Esc, or a hook): nothing was written.
    Cancelled,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    // One worker, so that a signal listener runs while the main thread waits for input.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Runs `fut` to its end, handing every agent event and a tick every 20 ms
/// to `poll`; when `poll` answers true the running operation is aborted
/// (and `fut` still runs to its end, which then records the abort).
async fn drive<T>(
    fut: impl Future<Output = T>,
    abort: AbortHandle,
    mut events: Option<&mut UnboundedReceiver<AgentEvent>>,
    poll: Poll<'_>,
) -> T {
    tokio::pin!(fut);
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    loop {
        let next_event = async {
            match events.as_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            r = &mut fut => {
                if let Some(rx) = events.as_mut() {
                    while let Ok(ev) = rx.try_recv() {
                        poll(Some(ev));
                    }
                }
                return r;
            }
            Some(ev) = next_event => {
                if poll(Some(ev)) {
                    abort.abort();
                }
            }
            _ = tick.tick() => {
                if poll(None) {
                    abort.abort();
                }
            }
        }
    }
}

impl Chat {
    /// Opens (or creates) the session and sets up the model, hooks and settings.
    pub fn open(target: Target, flags: &ModelFlags, settings: Settings, globals: &Globals) -> Result<Chat> {
        let session_opts = globals.options()?;
        let store = session_opts.store.clone();
        let (session, created) = match &target {
            Target::File { path, new, .. } => {
                let path = &globals.session(path)?;
                let existed = store.exists(path)?;
                if !new && !existed {
                    bail!("{}: no such session file (use --new to start one there)", path.display());
                }
                // `--new` starts a session at a missing path; neither form replaces a file that is not a session.
                let mode = if *new { OpenMode::WriteOrCreate } else { OpenMode::Write };
                let s = open_showing_progress(path, mode, session_opts)?;
                (s, !existed)
            }
            Target::New => (Session::create(&process_cwd(), session_opts)?, true),
            Target::Recent => {
                let s = Session::continue_recent(&process_cwd(), session_opts)?;
                let created = match s.session_file() {
                    Some(p) => !store.exists(p)?,
                    None => true,
                };
                (s, created)
            }
        };
        Chat::of_session(session, created, flags, settings, globals.options()?)
    }

    /// The chat over an open session (`created`: new, its start is recorded):
    /// the model, hooks and settings set up, the context at its leaf built.
    pub fn of_session(
        session: Session,
        created: bool,
        flags: &ModelFlags,
        settings: Settings,
        session_opts: SessionOptions,
    ) -> Result<Chat> {
        let rt = runtime()?;
        let mut notices: Vec<String> = settings.warnings.clone();
        let limits = client_options(settings.reply_timeout_secs, settings.max_reply_bytes)?;
        let mut opts = AgentOptions::default().with_client_options(limits);
        let hooks = flags.hooks.clone().or_else(|| settings.hooks.clone());
        if let Some(h) = &hooks {
            load_hooks(h, &mut opts.hooks)?;
        }
        opts.compaction = CompactionSettings {
            enabled: settings.compaction_enabled,
            reserve_tokens: settings.compaction_reserve_tokens,
            keep_recent_tokens: settings.keep_recent_tokens,
        };
        opts.branch_summary_reserve_tokens = settings.branch_reserve_tokens;

        let mut models = Models::load();
        notices.append(&mut models.notices);

        for d in session.diagnostics() {
            let name = session.session_file().map(|p| p.display().to_string()).unwrap_or_default();
            notices.push(d.with_file(&name).to_string());
        }
        // `--model`, else Arbor's settings, else (the agent restores it) the
        // session's own model; a base URL applies to whichever it is. A
        // session without a model takes pi's default one.
        let spec = flags.model.clone().or_else(|| settings.model.clone());
        let base_url = flags.base_url.clone().or_else(|| settings.base_url.clone());
        opts.model = models.choose(spec.as_deref(), base_url.as_deref(), &session)?;
        // pi's default model: a new session's, and the one used when the session's cannot be.
        if opts.model.is_none() {
            opts.fallback_model = models.fallback(settings.default_model.as_deref());
            notices.append(&mut models.notices);
        }
        opts.providers = models.registry.clone();
        let (events_tx, events_rx) = unbounded_channel();
        let tx = events_tx.clone();
        let mut agent = AgentSession::new(session, opts);
        agent.set_retry_observer(Some(RetryObserver(Arc::new(move |n| {
            let _ = tx.send(AgentEvent::Retry(n));
        }))));
        let mut chat =
            Chat { rt, agent, settings, models, notices, session_opts, events_tx, events_rx, disk_len: None };
        chat.notices.extend(chat.agent.notices().iter().cloned());
        if let Some(m) = chat.agent.model().cloned() {
            let m = chat.tune(m);
            chat.agent.set_model(Some(m));
        }
        if created {
            let level = chat.settings.default_thinking_level.clone();
            chat.agent.record_session_start(&level)?;
            if let Some(p) = chat.agent.session().session_file() {
                chat.notices.push(format!("New session: {}", p.display()));
            }
        }
        chat.note_disk();
        Ok(chat)
    }

    /// Applies the settings' window and reasoning flag to a model.
    fn tune(&self, mut model: ModelInfo) -> ModelInfo {
        if let Some(w) = self.settings.context_window {
            model.context_window = Some(w);
        }
        if self.settings.reasoning {
            model.reasoning = true;
        }
        model
    }

    fn resolve_model(&self, spec: &str) -> Result<ModelInfo> {
        Ok(self.tune(self.models.parse(spec)?))
    }

    /// Runs `fut` on the chat's runtime, in the background.
    pub fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        self.rt.spawn(fut);
    }

    /// The agent session.
    pub fn agent(&self) -> &AgentSession {
        &self.agent
    }

    /// The session.
    pub fn session(&self) -> &Session {
        self.agent.session()
    }

    /// The session file.
    pub fn file(&self) -> Option<&Path> {
        self.agent.session().session_file()
    }

    /// `provider/model`, or `no model`.
    pub fn model_name(&self) -> String {
        self.agent.model().map_or_else(|| "no model".to_owned(), |m| format!("{}/{}", m.provider, m.id))
    }

    /// Sends a prompt and records the reply (see [`AgentSession::prompt`]).
    pub fn prompt(&mut self, text: &str, poll: Poll<'_>) -> Result<PromptResult> {
        let tx = self.events_tx.clone();
        let sink: EventSink = Arc::new(move |e| {
            let _ = tx.send(e);
        });
        let options = PromptOptions {
            events: Some(sink),
            system_prompt: self.settings.system_prompt.clone(),
            ..Default::default()
        };
        let abort = self.agent.abort_handle();
        let agent = &mut self.agent;
        let r = self.rt.block_on(drive(agent.prompt(text, options), abort, Some(&mut self.events_rx), poll));
        self.note_disk();
        Ok(r?)
    }

    /// Moves to `id` (pi's navigateTree), summarizing the branch left when asked.
    pub fn navigate(
        &mut self,
        id: &str,
        summarize: bool,
        instructions: Option<String>,
        poll: Poll<'_>,
    ) -> Result<NavigateResult> {
        let options = NavigateOptions { summarize, custom_instructions: instructions, ..Default::default() };
        let abort = self.agent.abort_handle();
        let agent = &mut self.agent;
        let r = self.rt.block_on(drive(agent.navigate_tree(id, options), abort, Some(&mut self.events_rx), poll));
        self.note_disk();
        Ok(r?)
    }

    /// Forks before the user message `id` into a new file, which the chat continues in.
    pub fn fork(&mut self, id: &str) -> Result<ForkResult> {
        let agent = &mut self.agent;
        let r = self.rt.block_on(agent.fork(id));
        self.note_disk();
        Ok(r?)
    }

    /// Compacts now (nothing is sent when there is nothing to compact yet).
    pub fn compact(&mut self, instructions: Option<String>, poll: Poll<'_>) -> Result<Compacted> {
        let options = CompactOptions { custom_instructions: instructions, ..Default::default() };
        let abort = self.agent.abort_handle();
        let agent = &mut self.agent;
        let r = self.rt.block_on(drive(agent.compact(options), abort, Some(&mut self.events_rx), poll));
        self.note_disk();
        match r {
            Ok(r) => Ok(Compacted::Done(r)),
            Err(AgentError::NothingToCompact) => Ok(Compacted::Nothing),
            Err(AgentError::CompactionCancelled) => Ok(Compacted::Cancelled),
            Err(e) => Err(e.into()),
        }
    }

    /// `/label`: labels the last message on the path (never a model, name
    /// or label entry), or clears its label; says which message it was.
    pub fn label(&mut self, label: Option<&str>) -> Result<String> {
        let path = self.agent.session().get_branch(None)?;
        let mut calls = ToolCalls::new();
        for e in &path {
            calls.record(e);
        }
        let target = path.iter().rev().find(|e| {
            matches!(
                e.kind,
                EntryKind::Message(_)
                    | EntryKind::CustomMessage(_)
                    | EntryKind::BranchSummary(_)
                    | EntryKind::Compaction(_)
            )
        });
        let Some(target) = target else { bail!("No message to label yet") };
        let (id, what) = (target.id.clone(), entry_text(target, &calls, home().as_deref()));
        let what: String =
            if what.chars().count() > 60 { format!("{}…", what.chars().take(59).collect::<String>()) } else { what };
        if label.is_none() && self.agent.session().get_label(&id)?.is_none() {
            return Ok(format!("No label to clear on {id} ({what})"));
        }
        self.agent.append_label_change(&id, label)?;
        self.note_disk();
        Ok(match label {
            Some(l) => format!("Label set: {l} on {id} ({what})"),
            None => format!("Label cleared on {id} ({what})"),
        })
    }

    /// Appends `message` (a shell command's `bashExecution`) at the leaf.
    pub fn record(&mut self, message: serde_json::Value) -> Result<()> {
        self.agent.append_message(message)?;
        self.note_disk();
        Ok(())
    }

    /// Labels `id`, or clears its label.
    pub fn set_label(&mut self, id: &str, label: Option<&str>) -> Result<String> {
        self.agent.append_label_change(id, label)?;
        self.note_disk();
        Ok(match label {
            Some(l) => format!("Label set: {l} (on {id})"),
            None => format!("Label cleared (on {id})"),
        })
    }

    /// `/name`: sets the name, or tells it.
    pub fn name(&mut self, name: Option<&str>) -> Result<String> {
        match name {
            Some(n) => {
                self.agent.append_session_info(n)?;
                self.note_disk();
                Ok(format!("Session name set: {}", n.trim()))
            }
            None => Ok(match self.agent.session().session_name()? {
                Some(n) => format!("Session name: {n}"),
                None => "No session name (set one with /name <name>)".to_owned(),
            }),
        }
    }

    /// `/model`: switches (and records `model_change`), or tells the model.
    pub fn model(&mut self, spec: Option<&str>) -> Result<String> {
        let Some(spec) = spec else {
            return Ok(format!("Model: {}", self.model_name()));
        };
        let model = self.resolve_model(spec)?;
        self.agent.set_model_recorded(model)?;
        self.note_disk();
        Ok(format!("Model: {}", self.model_name()))
    }

    /// Every model the chat knows by name, `provider/id` with a detail: those
    /// of pi's `models.json`, the settings' and pi's default one, and the
    /// active one (pi's model selector lists every configured model).
    pub fn model_choices(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = vec![];
        let mut add = |m: &ModelInfo| {
            let spec = format!("{}/{}", m.provider, m.id);
            if out.iter().all(|(s, _)| *s != spec) {
                let window = m.context_window.map_or_else(String::new, |w| format!("{}k tokens", w / 1000));
                let detail = [window, if m.reasoning { "reasoning".to_owned() } else { String::new() }]
                    .into_iter()
                    .filter(|d| !d.is_empty())
                    .collect::<Vec<_>>()
                    .join(", ");
                out.push((spec, detail));
            }
        };
        if let Some(m) = self.agent.model() {
            add(m);
        }
        let named = [self.settings.model.as_deref(), self.settings.default_model.as_deref()];
        for m in named.into_iter().flatten().filter_map(|s| self.models.registry.parse_model(s)) {
            add(&m);
        }
        for name in self.models.registry.names() {
            for m in self.models.registry.get(name).map(|p| p.models.as_slice()).unwrap_or_default() {
                add(m);
            }
        }
        out
    }

    /// Ctrl+P (Shift+Ctrl+P): the next (previous) of [`Chat::model_choices`], recorded.
    pub fn cycle_model(&mut self, forward: bool) -> Result<String> {
        let choices = self.model_choices();
        if choices.len() < 2 {
            bail!("No other model to switch to (pi's models.json lists the models to cycle through)");
        }
        let now = self.model_name();
        let i = choices.iter().position(|(s, _)| *s == now).unwrap_or(0);
        let n = choices.len();
        let next = &choices[if forward { (i + 1) % n } else { (i + n - 1) % n }].0;
        self.model(Some(next))
    }

    /// Shift+Tab: the next thinking level (after `xhigh`, `off`), recorded.
    pub fn cycle_thinking(&mut self) -> Result<String> {
        let now = self.agent.thinking_level()?;
        let i = THINKING_LEVELS.iter().position(|l| *l == now).unwrap_or(0);
        let next = THINKING_LEVELS[(i + 1) % THINKING_LEVELS.len()];
        self.thinking(Some(next))
    }

    /// `/thinking`: sets the level (recorded when it changes), or tells it.
    pub fn thinking(&mut self, level: Option<&str>) -> Result<String> {
        let Some(level) = level else {
            return Ok(format!("Thinking level: {}", self.agent.thinking_level()?));
        };
        if !THINKING_LEVELS.contains(&level) {
            bail!("Invalid thinking level {level:?}: use {}", THINKING_LEVELS.join(", "));
        }
        let changed = self.agent.set_thinking_level(level)?;
        self.note_disk();
        Ok(match changed {
            Some(_) => format!("Thinking level: {level}"),
            None => format!("Thinking level is already {level}"),
        })
    }

    /// `/context`: the estimate of what the next request carries.
    pub fn context_info(&self) -> Result<String> {
        let tokens = self.agent.context_tokens()?;
        let window = self.agent.context_window();
        let pct = if window == 0 { 0.0 } else { tokens as f64 * 100.0 / window as f64 };
        Ok(format!(
            "Context: {} messages, about {tokens} tokens of {window} ({pct:.1}%); model {}, thinking {}",
            self.agent.messages()?.len(),
            self.model_name(),
            self.agent.thinking_level()?
        ))
    }
}

/// What a finished compaction tells the user.
pub fn compaction_report(r: &CompactResult) -> String {
    format!("Compacted: {} tokens summarized, kept from {}", r.tokens_before, r.first_kept_entry_id)
}

/// What the user hears once automatic compaction stopped after `failures` failures in a row.
pub fn auto_compaction_stopped(failures: u32) -> String {
    format!(
        "Automatic compaction failed {failures} times in a row and is off for this session; \
         /compact tries again (and turns it back on)"
    )
}

/// What `/compact` tells the user: the compaction, that there is nothing to
/// compact yet, or that it was cancelled (not an error).
pub fn manual_compaction_report(r: &Compacted) -> String {
    match r {
        Compacted::Done(r) => compaction_report(r),
        Compacted::Nothing => "Nothing to compact yet (the session is too small)".to_owned(),
        Compacted::Cancelled => "Compaction cancelled".to_owned(),
    }
}

/// What an automatic compaction's end tells the user: its error, its
/// cancellation or its result (nothing when there was nothing to compact).
pub fn auto_compaction_report(result: Option<&CompactResult>, aborted: bool, error: Option<String>) -> Option<String> {
    match (error, aborted, result) {
        (Some(e), _, _) => Some(e),
        (None, true, _) => Some("Auto-compaction cancelled".to_owned()),
        (None, false, r) => r.map(compaction_report),
    }
}

fn process_cwd() -> String {
    std::env::current_dir().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|_| ".".to_owned())
}
