//! External command hooks: a config maps event names to shell commands; each
//! command gets the event as JSON on stdin and may answer JSON on stdout
//! (protocol: `docs/hooks.md`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::events::tail;
use super::{EventName, Hook, HookBus, HookError, HookEvent, HookResponse};
use crate::config_file::{read_config_file, ConfigFileError};

/// The time a command hook gets when the config names none.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(30);
/// Most of a command's stdout that is read: a larger answer is refused.
const STDOUT_LIMIT: usize = 16 * 1024 * 1024;
/// Most of a command's stderr that is kept for reports (its end).
const STDERR_LIMIT: usize = 64 * 1024;
/// After the hook exits, its output is taken once no more bytes come for this
/// long (a background child it started may keep the pipe open).
const AFTER_EXIT_QUIET: Duration = Duration::from_millis(50);

/// A hooks file (TOML or JSON):
///
/// ```toml
/// timeout_ms = 30000            # optional default for every hook
///
/// [[hooks]]
/// event = "session_before_tree" # pi's name (omp aliases accepted)
/// command = "python3 hooks/summarize.py"   # run with `sh -c`
/// timeout_ms = 60000            # optional
/// cwd = "."                     # optional, relative to the file
/// env = { MODE = "short" }      # optional
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// The default timeout in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The hooks, in the order they run.
    #[serde(default)]
    pub hooks: Vec<CommandHookConfig>,
    /// The directory relative `cwd`s are resolved against (the file's, when loaded from one).
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
}

/// One `[[hooks]]` item.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandHookConfig {
    /// The event name.
    pub event: String,
    /// A shell command line.
    pub command: String,
    /// This hook's timeout in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A hooks file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HookConfigError {
    /// The file could not be read (missing, not a regular file, too large).
    #[error(transparent)]
    File(#[from] ConfigFileError),
    /// Bad TOML.
    #[error("hooks config: {0}")]
    Toml(#[from] toml::de::Error),
    /// Bad JSON.
    #[error("hooks config: {0}")]
    Json(#[from] serde_json::Error),
    /// An event name Arbor does not know.
    #[error("hooks config: hook {index}: unknown event {event:?} (known: {known})")]
    UnknownEvent {
        /// The hook's position (from 1).
        index: usize,
        /// The name given.
        event: String,
        /// The names Arbor knows.
        known: String,
    },
    /// A hook without a command.
    #[error("hooks config: hook {index}: empty command")]
    EmptyCommand {
        /// The hook's position (from 1).
        index: usize,
    },
}

impl HookConfig {
    /// Parses TOML.
    pub fn from_toml(text: &str) -> Result<HookConfig, HookConfigError> {
        Ok(toml::from_str(text)?)
    }

    /// Parses JSON (`{"timeout_ms": …, "hooks": [{"event": …, "command": …}]}`).
    pub fn from_json(text: &str) -> Result<HookConfig, HookConfigError> {
        Ok(serde_json::from_str(text)?)
    }

    /// Reads a file: `.json` as JSON, anything else as TOML. Only a regular
    /// file is read, and at most [`crate::config_file::CONFIG_FILE_LIMIT`] bytes of it.
    pub fn load(path: &Path) -> Result<HookConfig, HookConfigError> {
        let text = read_config_file(path)?;
        let mut config = if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            HookConfig::from_json(&text)?
        } else {
            HookConfig::from_toml(&text)?
        };
        config.base_dir = path.parent().map(Path::to_owned);
        Ok(config)
    }

    /// The configured hooks, validated, in order.
    pub fn command_hooks(&self) -> Result<Vec<(EventName, CommandHook)>, HookConfigError> {
        let default_timeout = self.timeout_ms.map_or(DEFAULT_HOOK_TIMEOUT, Duration::from_millis);
        let mut out = vec![];
        for (i, h) in self.hooks.iter().enumerate() {
            let Some(event) = EventName::parse(&h.event) else {
                let known: Vec<&str> = EventName::ALL.iter().map(|e| e.as_str()).collect();
                return Err(HookConfigError::UnknownEvent {
                    index: i + 1,
                    event: h.event.clone(),
                    known: format!("{}, session_before_branch, session_branch", known.join(", ")),
                });
            };
            if h.command.trim().is_empty() {
                return Err(HookConfigError::EmptyCommand { index: i + 1 });
            }
            let cwd = h.cwd.as_ref().map(|c| match &self.base_dir {
                Some(base) if c.is_relative() => base.join(c),
                _ => c.clone(),
            });
            out.push((
                event,
                CommandHook {
                    event_type: h.event.clone(),
                    command: h.command.clone(),
                    timeout: h.timeout_ms.map_or(default_timeout, Duration::from_millis),
                    cwd,
                    env: h.env.clone(),
                },
            ));
        }
        Ok(out)
    }

    /// Adds every configured hook to `bus`, after its existing handlers.
    pub fn register(&self, bus: &mut HookBus) -> Result<(), HookConfigError> {
        for (event, hook) in self.command_hooks()? {
            bus.register(event, Arc::new(hook));
        }
        Ok(())
    }
}

/// A hook that runs a shell command per event.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandHook {
    /// The event name as configured (the `type` the command sees).
    pub event_type: String,
    /// The command line, run with `sh -c` (`cmd /C` on Windows).
    pub command: String,
    /// How long the command may run.
    pub timeout: Duration,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
}

impl CommandHook {
    /// A hook for `event_type` running `command` with the default timeout.
    pub fn new(event_type: &str, command: &str) -> CommandHook {
        CommandHook {
            event_type: event_type.to_owned(),
            command: command.to_owned(),
            timeout: DEFAULT_HOOK_TIMEOUT,
            cwd: None,
            env: BTreeMap::new(),
        }
    }

    fn shell(&self) -> tokio::process::Command {
        #[cfg(windows)]
        let mut cmd = {
            let mut c = tokio::process::Command::new("cmd");
            c.arg("/C").arg(&self.command);
            c
        };
        #[cfg(not(windows))]
        let mut cmd = {
            let mut c = tokio::process::Command::new("sh");
            c.arg("-c").arg(&self.command);
            // Its own process group, so that a timeout can end the whole pipeline.
            c.process_group(0);
            c
        };
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        cmd.envs(&self.env)
            .env("ARBOR_HOOK_EVENT", &self.event_type)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }
}

/// A pipe read on its own task into a buffer that is kept when the task is
/// stopped: a child the hook left behind may hold the pipe open forever.
struct Capture {
    buf: Arc<Mutex<Vec<u8>>>,
    task: tokio::task::JoinHandle<()>,
    over: Arc<tokio::sync::Notify>,
}

impl Drop for Capture {
    fn drop(&mut self) {
        // A pipe still held open by something the hook left must not keep a task alive.
        self.task.abort();
    }
}

/// How a [`Capture`] keeps a stream that passes its limit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    /// Stop reading and say so (an answer larger than the limit is refused).
    Refuse,
    /// Keep reading and keep the last `limit` bytes (stderr, for reports).
    KeepTail,
}

impl Capture {
    fn start<R: AsyncRead + Unpin + Send + 'static>(reader: Option<R>, limit: usize, overflow: Overflow) -> Capture {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let over = Arc::new(tokio::sync::Notify::new());
        let (b, o) = (buf.clone(), over.clone());
        let task = tokio::spawn(async move {
            let Some(mut r) = reader else { return };
            let mut chunk = vec![0u8; 64 * 1024];
            // A read error ends the output; what was read is kept.
            while let Ok(n @ 1..) = r.read(&mut chunk).await {
                let mut b = b.lock().unwrap_or_else(|p| p.into_inner());
                b.extend_from_slice(&chunk[..n]);
                if b.len() > limit {
                    if overflow == Overflow::Refuse {
                        o.notify_one();
                        return;
                    }
                    let extra = b.len() - limit;
                    b.drain(..extra);
                }
            }
        });
        Capture { buf, task, over }
    }

    /// Resolves when the stream passed its limit (never for [`Overflow::KeepTail`]).
    async fn overflowed(&self) {
        self.over.notified().await;
    }

    /// What was read, once the writer is gone: everything up to the end of
    /// the stream, or, while something else still holds the pipe open, up to
    /// the moment the bytes stop coming.
    async fn finish(mut self) -> Vec<u8> {
        let mut seen = usize::MAX;
        loop {
            if tokio::time::timeout(AFTER_EXIT_QUIET, &mut self.task).await.is_ok() {
                break;
            }
            let len = self.buf.lock().unwrap_or_else(|p| p.into_inner()).len();
            if len == seen {
                break;
            }
            seen = len;
        }
        std::mem::take(&mut *self.buf.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The process groups of the command hooks running now (their shells' pids).
static RUNNING: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// A running hook's process group, in [`RUNNING`] while this lives.
struct Running(Option<u32>);

impl Running {
    fn register(pid: Option<u32>) -> Running {
        if let Some(p) = pid {
            RUNNING.lock().unwrap_or_else(|e| e.into_inner()).push(p);
        }
        Running(pid)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = running.iter().position(|&r| r == p) {
                running.swap_remove(i);
            }
        }
    }
}

/// Set once the program ends on a signal: a hook it killed is not taken as an answer.
static ENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ends the process group of every command hook running now: for a program
/// about to end on a signal (SIGTERM, SIGHUP), whose hooks run in process
/// groups of their own and would otherwise go on without it. From then on
/// no hook's end lets its flow go on (the flow waits for the program's end,
/// so nothing is written after the signal).
pub fn kill_running_hooks() {
    ENDING.store(true, std::sync::atomic::Ordering::SeqCst);
    let running: Vec<u32> = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for pid in running {
        kill_group(Some(pid));
    }
}

/// Ends the command's whole process group (the shell and what it started),
/// with one system call (no `kill` process to wait for: a program ending on a
/// signal kills its hooks' groups this way just before it goes).
fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()).and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    #[cfg(not(unix))]
    let _ = pid;
}

#[async_trait]
impl Hook for CommandHook {
    fn name(&self) -> String {
        format!("`{}`", self.command)
    }

    async fn handle(
        &self,
        event: Arc<HookEvent>,
        cancel: CancellationToken,
    ) -> Result<Option<HookResponse>, HookError> {
        let name = event.name();
        let mut input = arbor_log::json::to_vec(&event.to_json_as(&self.event_type))?;
        input.push(b'\n');
        let mut child = self.shell().spawn().map_err(|e| format!("could not start: {e}"))?;
        let pid = child.id();
        let _running = Running::register(pid);
        let out = Capture::start(child.stdout.take(), STDOUT_LIMIT, Overflow::Refuse);
        let err = Capture::start(child.stderr.take(), STDERR_LIMIT, Overflow::KeepTail);
        let stdin = child.stdin.take();
        // Written on its own task: a command that exits without reading it
        // (while a child it left holds the pipe) must not hold us up.
        let write = tokio::spawn(async move {
            if let Some(mut s) = stdin {
                // A command that does not read its input closes the pipe early; that is fine.
                let _ = s.write_all(&input).await;
                let _ = s.shutdown().await;
            }
        });
        // The answer is taken when the hook itself exits, not when every
        // holder of its stdout has closed it.
        let exited = async {
            tokio::select! {
                status = child.wait() => Some(status),
                _ = out.overflowed() => None,
            }
        };
        let finished = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            r = tokio::time::timeout(self.timeout, exited) => Some(r),
        };
        write.abort();
        if ENDING.load(std::sync::atomic::Ordering::SeqCst) {
            // Killed because the program ends: its flow must not go on and write.
            std::future::pending::<()>().await;
        }
        let status = match finished {
            None => {
                kill_group(pid);
                return Ok(None);
            }
            Some(Err(_)) => {
                kill_group(pid);
                return Err(format!("timed out after {} ms and was killed", self.timeout.as_millis()).into());
            }
            Some(Ok(None)) => {
                kill_group(pid);
                return Err("its output is larger than 16 MiB (the limit for an answer) and it was killed".into());
            }
            Some(Ok(Some(status))) => status.map_err(|e| format!("could not wait for it: {e}"))?,
        };
        let (out, err) = tokio::join!(out.finish(), err.finish());
        if !status.success() {
            let stderr = tail(&err);
            let detail = if stderr.is_empty() { String::new() } else { format!("; stderr: {stderr}") };
            return Err(format!("exited with {status}{detail}").into());
        }
        HookResponse::from_stdout(name, &out).map_err(HookError::from)
    }
}
