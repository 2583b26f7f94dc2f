//! The commands that go through `arbor-agent`: `navigate`, `fork --before`
//! and `compact`. They run on a small tokio runtime; Ctrl-C aborts a running
//! summary or compaction, and an aborted operation writes nothing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Context as _, Result};
use clap::Args as ClapArgs;

use arbor_agent::{AgentOptions, AgentSession, CompactOptions, HookBus, HookConfig, HookFailure, NavigateOptions};
use arbor_tree::{OpenMode, Session, SessionOptions};

/// Which model to use, and the hooks to run.
#[derive(Debug, Clone, ClapArgs)]
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

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the async runtime")
}

fn agent(
    file: &Path,
    mode: OpenMode,
    session_opts: SessionOptions,
    m: &ModelArgs,
    needs_model: bool,
) -> Result<AgentSession> {
    // Hooks first: a bad hooks file must fail before the session is taken for writing.
    let mut opts = AgentOptions::default();
    if let Some(h) = &m.hooks {
        load_hooks(h, &mut opts.hooks)?;
    }
    let session = Session::open(file, mode, session_opts)?;
    if !m.diagnostics_shown {
        crate::cli::print_diagnostics(file, session.diagnostics());
    }
    let spec = m.model.clone().or_else(|| {
        // A base URL without a model applies to the model restored from the session.
        m.base_url.as_ref().and_then(|_| {
            let path = session.get_branch(None);
            arbor_context::build_context_from_path(&path).model.map(|r| format!("{}/{}", r.provider, r.model_id))
        })
    });
    if let Some(spec) = spec {
        let mut info = opts
            .providers
            .parse_model(&spec)
            .ok_or_else(|| anyhow!("unknown model {spec:?}: use PROVIDER/MODEL with a known provider (anthropic, openai, openrouter, ollama)"))?;
        if let Some(url) = &m.base_url {
            info.base_url = url.trim_end_matches('/').to_owned();
        }
        opts.model = Some(info);
    }
    let agent = AgentSession::new(session, opts);
    if needs_model {
        for n in agent.notices() {
            eprintln!("arbor: {n}");
        }
    }
    Ok(agent)
}

/// Registers the command hooks of a hooks file on `bus`; errors name the file.
pub(crate) fn load_hooks(path: &Path, bus: &mut HookBus) -> Result<()> {
    let config = HookConfig::load(path).with_context(|| format!("{}: cannot load hooks", path.display()))?;
    config.register(bus).with_context(|| format!("{}: bad hooks", path.display()))?;
    Ok(())
}

/// Reports hooks that failed, one line each on stderr.
pub(crate) fn report_hook_failures(failures: &[HookFailure]) {
    for f in failures {
        eprintln!("arbor: hook failed: {f}");
    }
}

/// `arbor navigate`.
#[allow(clippy::too_many_arguments)]
pub fn navigate(
    out: &mut dyn Write,
    file: &Path,
    target: &str,
    summarize: bool,
    instructions: Option<String>,
    replace_instructions: bool,
    label: Option<String>,
    m: &ModelArgs,
    session_opts: SessionOptions,
    json: bool,
    abort_flag: Option<Arc<AtomicBool>>,
) -> Result<ExitCode> {
    let rt = runtime()?;
    let mut agent = agent(file, OpenMode::Write, session_opts, m, summarize)?;
    let abort = agent.abort_handle();
    let flag_abort = agent.abort_handle();
    let opts = NavigateOptions {
        summarize,
        custom_instructions: instructions,
        replace_instructions: replace_instructions.then_some(true),
        label,
    };
    let r = rt.block_on(async {
        let ctrl_c = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                abort.abort();
            }
        });
        // The tree selector raises this flag when Escape is pressed during a summary.
        let flag = abort_flag.map(|flag| {
            tokio::spawn(async move {
                while !flag.load(Ordering::SeqCst) {
                    tokio::time::sleep(std::time::Duration::from_millis(25)).await;
                }
                flag_abort.abort();
            })
        });
        let r = agent.navigate_tree(target, opts).await;
        ctrl_c.abort();
        if let Some(f) = flag {
            f.abort();
        }
        r
    });
    let r = r.with_context(|| file.display().to_string())?;
    report_hook_failures(&r.hook_failures);
    for n in agent.session().notices() {
        eprintln!("arbor: {n}");
    }
    let summary_id = r.summary_entry.as_ref().map(|e| e.id.clone());
    if json {
        arbor_log::json::to_writer(
            &mut *out,
            &serde_json::json!({
                "newLeafId": r.new_leaf_id,
                "oldLeafId": r.old_leaf_id,
                "summaryEntryId": summary_id,
                "editorText": r.editor_text,
                "cancelled": r.cancelled,
                "aborted": r.aborted,
            }),
        )?;
        out.write_all(b"\n")?;
    } else if r.aborted {
        writeln!(out, "summary aborted: nothing changed")?;
    } else if r.cancelled {
        writeln!(out, "navigation cancelled by a hook: nothing changed")?;
    } else {
        writeln!(
            out,
            "leaf {} -> {}",
            r.old_leaf_id.as_deref().unwrap_or("(none)"),
            r.new_leaf_id.as_deref().unwrap_or("(before the first entry)")
        )?;
        if let Some(id) = &summary_id {
            writeln!(out, "branch summary {id}")?;
        }
        if let Some(t) = &r.editor_text {
            writeln!(out, "editor text:\n{t}")?;
        }
    }
    Ok(if r.cancelled { ExitCode::from(3) } else { ExitCode::SUCCESS })
}

/// `arbor fork --before`: the /branch flow.
pub fn fork_before(
    out: &mut dyn Write,
    file: &Path,
    user_message_id: &str,
    sessions_dir: Option<PathBuf>,
    m: &ModelArgs,
    session_opts: SessionOptions,
    json: bool,
) -> Result<ExitCode> {
    let rt = runtime()?;
    if let Some(dir) = &sessions_dir {
        std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    let session_opts = SessionOptions { session_dir: sessions_dir, ..session_opts };
    // The source is only read; the fork writes a new file.
    let mut agent = agent(file, OpenMode::ReadOnly, session_opts, m, false)?;
    let r = rt.block_on(agent.fork(user_message_id)).with_context(|| file.display().to_string())?;
    report_hook_failures(&r.hook_failures);
    if r.cancelled {
        if json {
            arbor_log::json::to_writer(
                &mut *out,
                &serde_json::json!({ "path": null, "editorText": r.selected_text, "cancelled": true }),
            )?;
            out.write_all(b"\n")?;
        } else {
            writeln!(out, "fork cancelled by a hook: nothing written")?;
        }
        return Ok(ExitCode::from(3));
    }
    // The CLI wants the file to exist even when the new session has no assistant message yet.
    let mut session = agent.into_session();
    session.materialize()?;
    let path = session.session_file().map(Path::to_owned).or(r.path);
    if json {
        arbor_log::json::to_writer(&mut *out, &serde_json::json!({ "path": path, "editorText": r.selected_text }))?;
        out.write_all(b"\n")?;
    } else {
        if let Some(p) = &path {
            writeln!(out, "{}", p.display())?;
        }
        writeln!(out, "editor text:\n{}", r.selected_text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `arbor compact`.
pub fn compact(
    out: &mut dyn Write,
    file: &Path,
    keep_recent_tokens: Option<u64>,
    instructions: Option<String>,
    m: &ModelArgs,
    session_opts: SessionOptions,
    json: bool,
) -> Result<ExitCode> {
    let rt = runtime()?;
    let mut agent = agent(file, OpenMode::Write, session_opts, m, true)?;
    let abort = agent.abort_handle();
    let r = rt.block_on(async {
        let ctrl_c = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                abort.abort();
            }
        });
        let r = agent.compact(CompactOptions { custom_instructions: instructions, keep_recent_tokens }).await;
        ctrl_c.abort();
        r
    });
    let r = r.with_context(|| file.display().to_string())?;
    report_hook_failures(&r.hook_failures);
    for n in agent.session().notices() {
        eprintln!("arbor: {n}");
    }
    if json {
        arbor_log::json::to_writer(
            &mut *out,
            &serde_json::json!({
                "entryId": r.entry_id,
                "firstKeptEntryId": r.first_kept_entry_id,
                "tokensBefore": r.tokens_before,
                "summary": r.summary,
                "fromExtension": r.from_extension,
            }),
        )?;
        out.write_all(b"\n")?;
    } else {
        writeln!(
            out,
            "compaction {} keeps from {} ({} tokens before)",
            r.entry_id, r.first_kept_entry_id, r.tokens_before
        )?;
        writeln!(out, "{}", r.summary)?;
    }
    Ok(ExitCode::SUCCESS)
}
