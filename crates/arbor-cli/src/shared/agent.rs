//! The agent flows commands and the tree selector run: the model and hook
//! arguments, an [`AgentSession`] opened on a file, and navigate / fork /
//! compact on a current-thread tokio runtime, with Ctrl-C (and, for the
//! selector, Escape) wired to the abort handle. An aborted operation writes
//! nothing.

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Context as _, Result};
use clap::Args;
use serde_json::json;

use arbor_agent::hooks::HookConfigError;
use arbor_agent::hooks::{HookBus, HookConfig, HookFailure};
use arbor_agent::model::ClientOptions;
use arbor_agent::{
    AbortHandle, AgentOptions, AgentSession, CompactOptions, CompactResult, NavigateOptions, NavigateResult,
};
use arbor_tree::{OpenMode, Session, SessionOptions};

use super::models::{pi_default_model, Models};
use super::output::write_json_line;
use super::session::{open_showing_progress, print_diagnostics};
use crate::shared::visible::say;

/// Which model to use, and the hooks to run.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// The model as PROVIDER/MODEL (default: the last one used on the session's path).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// The provider's base URL (for example an OpenAI-compatible server on localhost).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// A hooks file (TOML or JSON) mapping events to commands; see docs/hooks.md.
    #[arg(long, value_name = "FILE", env = "ARBOR_HOOKS")]
    pub hooks: Option<PathBuf>,
    /// Set by callers that already showed the file's diagnostics (the tree selector).
    #[arg(skip)]
    pub diagnostics_shown: bool,
}

impl ModelArgs {
    /// Only hooks: no model (`fork --before` summarizes nothing).
    pub fn hooks_only(hooks: Option<PathBuf>) -> ModelArgs {
        ModelArgs { model: None, base_url: None, hooks, diagnostics_shown: false }
    }
}

/// How a command opens its agent session: the file, the model and hook
/// arguments, and the session options.
#[derive(Debug)]
pub struct AgentSetup<'a> {
    /// The session file.
    pub file: &'a Path,
    /// `--model`, `--base-url`, `--hooks`.
    pub model: &'a ModelArgs,
    /// What may happen to the file.
    pub mode: OpenMode,
    /// How the session is opened.
    pub session: SessionOptions,
}

impl AgentSetup<'_> {
    /// Opens the session and builds the agent: the hooks first (a bad hooks
    /// file fails before the session is taken for writing), then the model
    /// (`--model`, else the session's, with `--base-url` applied).
    /// `needs_model`: the agent's notices (a model it could not restore) are shown.
    pub fn open(self, needs_model: bool) -> Result<AgentSession> {
        let m = self.model;
        let mut opts = AgentOptions::default().with_client_options(client_options(None, None)?);
        if let Some(h) = &m.hooks {
            load_hooks(h, &mut opts.hooks)?;
        }
        // The tree selector (which showed the diagnostics) owns the screen: no spinner over it.
        let session = if m.diagnostics_shown {
            Session::open(self.file, self.mode, self.session)?
        } else {
            open_showing_progress(self.file, self.mode, self.session)?
        };
        if !m.diagnostics_shown {
            print_diagnostics(self.file, session.diagnostics());
        }
        // pi's models.json adds a pi user's providers; a base URL without a
        // model applies to the model restored from the session.
        let mut models = Models::load();
        opts.model = models.choose(m.model.as_deref(), m.base_url.as_deref(), &session)?;
        // As pi does: its default model when the session's cannot be used.
        if opts.model.is_none() {
            opts.fallback_model = models.fallback(pi_default_model().as_deref());
        }
        opts.providers = models.registry;
        let agent = AgentSession::new(session, opts);
        if needs_model {
            for n in models.notices.iter().map(String::as_str).chain(agent.notices().iter().map(String::as_str)) {
                say!("arbor: {n}");
            }
        }
        Ok(agent)
    }
}

/// The limits of one model reply: `timeout_secs` (the whole request, streaming
/// included) and `max_bytes`, from the settings when given, each overridden
/// by `ARBOR_REPLY_TIMEOUT` (seconds) and `ARBOR_MAX_REPLY_BYTES` when set.
pub fn client_options(timeout_secs: Option<u64>, max_bytes: Option<u64>) -> Result<ClientOptions> {
    fn env(name: &str) -> Result<Option<u64>> {
        match std::env::var(name) {
            Ok(v) if !v.trim().is_empty() => {
                let n: u64 = v.trim().parse().map_err(|_| anyhow!("{name}={v:?}: not a whole number"))?;
                Ok(Some(n))
            }
            _ => Ok(None),
        }
    }
    let mut opts = ClientOptions::default();
    if let Some(secs) = env("ARBOR_REPLY_TIMEOUT")?.or(timeout_secs) {
        if secs == 0 {
            return Err(anyhow!("a reply timeout of 0 seconds would refuse every reply"));
        }
        opts.request_timeout = std::time::Duration::from_secs(secs);
    }
    if let Some(bytes) = env("ARBOR_MAX_REPLY_BYTES")?.or(max_bytes) {
        opts.max_reply_bytes = usize::try_from(bytes).unwrap_or(usize::MAX).max(1);
    }
    Ok(opts)
}

/// Makes SIGTERM and SIGHUP end the running command hooks with the process:
/// a hook runs in a process group of its own (so that a timeout ends its
/// whole pipeline), which a signal to `arbor` does not reach. The process
/// still ends as the signal's default says, once the hooks are killed.
fn end_hooks_with_the_process() {
    use signal_hook::consts::{SIGHUP, SIGTERM};
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP]) else { return };
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                arbor_agent::hooks::kill_running_hooks();
                let _ = signal_hook::low_level::emulate_default_handler(signal);
            }
        });
    });
}

/// Registers the command hooks of a hooks file on `bus`; errors name the
/// file. From then on SIGTERM and SIGHUP end a running hook with `arbor`.
pub fn load_hooks(path: &Path, bus: &mut HookBus) -> Result<()> {
    end_hooks_with_the_process();
    let config = HookConfig::load(path).map_err(|e| match e {
        // Already names the file.
        HookConfigError::File(e) => anyhow!("cannot load hooks: {e}"),
        e => anyhow::Error::new(e).context(format!("{}: cannot load hooks", path.display())),
    })?;
    config.register(bus).with_context(|| format!("{}: bad hooks", path.display()))?;
    Ok(())
}

/// Reports hooks that failed, one line each on stderr.
pub fn report_hook_failures(failures: &[HookFailure]) {
    for f in failures {
        say!("arbor: hook failed: {f}");
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the async runtime")
}

/// Runs `fut` to its end on a current-thread runtime while Ctrl-C, or
/// `flag` when it is raised, aborts the running operation through `abort`.
fn run_abortable<T>(abort: AbortHandle, flag: Option<Arc<AtomicBool>>, fut: impl Future<Output = T>) -> Result<T> {
    let rt = runtime()?;
    Ok(rt.block_on(async {
        let on_signal = abort.clone();
        let ctrl_c = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_signal.abort();
            }
        });
        let flag = flag.map(|flag| {
            tokio::spawn(async move {
                while !flag.load(Ordering::SeqCst) {
                    tokio::time::sleep(std::time::Duration::from_millis(25)).await;
                }
                abort.abort();
            })
        });
        let r = fut.await;
        ctrl_c.abort();
        if let Some(f) = flag {
            f.abort();
        }
        r
    }))
}

/// Prints the session's notices (a repaired tail, …) on stderr.
fn report_notices(agent: &AgentSession) {
    for n in agent.session().notices() {
        say!("arbor: {n}");
    }
}

/// Moves the leaf to `target` (pi's /tree), summarizing the branch left
/// behind when asked. `abort_flag`: raised by the tree selector when Escape
/// is pressed during a summary.
pub fn navigate(
    setup: AgentSetup<'_>,
    target: &str,
    opts: NavigateOptions,
    abort_flag: Option<Arc<AtomicBool>>,
) -> Result<NavigateResult> {
    navigate_and_keep(setup, target, opts, abort_flag).map(|(r, _)| r)
}

/// [`navigate`], handing back the session as the navigation left it, no
/// longer writing (so whoever shows the tree next need not read the file again).
pub fn navigate_and_keep(
    setup: AgentSetup<'_>,
    target: &str,
    opts: NavigateOptions,
    abort_flag: Option<Arc<AtomicBool>>,
) -> Result<(NavigateResult, Session)> {
    let file = setup.file;
    let mut agent = setup.open(opts.summarize)?;
    let abort = agent.abort_handle();
    let r = run_abortable(abort, abort_flag, agent.navigate_tree(target, opts))?;
    let r = r.with_context(|| file.display().to_string())?;
    report_hook_failures(&r.hook_failures);
    report_notices(&agent);
    let mut session = agent.into_session();
    session.stop_writing();
    Ok((r, session))
}

/// Compacts the session's active path.
pub fn compact(setup: AgentSetup<'_>, opts: CompactOptions) -> Result<CompactResult> {
    let file = setup.file;
    let mut agent = setup.open(true)?;
    let abort = agent.abort_handle();
    let r = run_abortable(abort, None, agent.compact(opts))?;
    let r = r.with_context(|| file.display().to_string())?;
    report_hook_failures(&r.hook_failures);
    report_notices(&agent);
    Ok(r)
}

/// What a fork before a user message left.
#[derive(Debug)]
pub struct ForkOutcome {
    /// The new session file (none when a hook cancelled).
    pub path: Option<PathBuf>,
    /// The selected message's text, for the editor.
    pub editor_text: String,
    /// A hook cancelled the fork: nothing was written.
    pub cancelled: bool,
}

/// Forks before the user message `id` (pi's /branch) into a new session
/// file, which is written even before its first assistant message.
pub fn fork_before(setup: AgentSetup<'_>, id: &str) -> Result<ForkOutcome> {
    let file = setup.file;
    let rt = runtime()?;
    let mut agent = setup.open(false)?;
    let r = rt.block_on(agent.fork(id)).with_context(|| file.display().to_string())?;
    report_hook_failures(&r.hook_failures);
    if r.cancelled {
        return Ok(ForkOutcome { path: None, editor_text: r.selected_text, cancelled: true });
    }
    // The CLI wants the file to exist even when the new session has no assistant message yet.
    let mut session = agent.into_session();
    session.materialize()?;
    let path = session.session_file().map(Path::to_owned).or(r.path);
    Ok(ForkOutcome { path, editor_text: r.selected_text, cancelled: false })
}

/// Prints a fork's outcome as `arbor fork --before` does; a cancelled fork exits with 3.
/// The editor text is a session's text: for people its control characters are
/// made visible ([`crate::shared::visible`]); JSON is written exactly.
pub fn write_fork(out: &mut dyn Write, r: &ForkOutcome, json: bool) -> Result<ExitCode> {
    let mut slot = None;
    let out = crate::shared::visible::for_people(out, json, &mut slot);
    if r.cancelled {
        if json {
            write_json_line(out, &json!({ "path": null, "editorText": r.editor_text, "cancelled": true }))?;
        } else {
            writeln!(out, "fork cancelled by a hook: nothing written")?;
        }
        return Ok(ExitCode::from(3));
    }
    if json {
        write_json_line(out, &json!({ "path": r.path, "editorText": r.editor_text }))?;
    } else {
        if let Some(p) = &r.path {
            writeln!(out, "{}", p.display())?;
        }
        writeln!(out, "editor text:\n{}", r.editor_text)?;
    }
    Ok(ExitCode::SUCCESS)
}
