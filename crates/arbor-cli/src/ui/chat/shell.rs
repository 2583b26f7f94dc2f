//! pi's `!COMMAND` and `!!COMMAND`: the command runs with `sh -c` in the
//! current directory, its standard output and error together, and is
//! recorded as pi records it, a `bashExecution` message (`command`,
//! `output`, `exitCode`, `cancelled`, `truncated`, `excludeFromContext`).
//! Its output goes to the model with the next prompt, except with `!!`.
//! Only the last 50 KB and 2000 lines are kept (pi's limits); Escape (or
//! Ctrl+C) ends the command's whole process group.

use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use serde_json::{json, Value};

/// The most bytes of output kept (its end), as pi keeps.
const MAX_BYTES: usize = 50 * 1024;
/// The most lines of output kept (its end), as pi keeps.
const MAX_LINES: usize = 2000;

/// What a command did.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// Its output (the end of it when `truncated`).
    pub output: String,
    /// Its exit code (`None` when a signal ended it).
    pub exit_code: Option<i32>,
    /// Ended by the user.
    pub cancelled: bool,
    /// Only the end of the output was kept.
    pub truncated: bool,
}

impl Ran {
    /// pi's `bashExecution` message for `command`.
    pub fn message(&self, command: &str, exclude: bool, timestamp: i64) -> Value {
        json!({
            "role": arbor_log::Role::BashExecution.as_str(),
            "command": command,
            "output": self.output,
            "exitCode": self.exit_code,
            "cancelled": self.cancelled,
            "truncated": self.truncated,
            "timestamp": timestamp,
            "excludeFromContext": exclude,
        })
    }
}

/// The end of what a pipe wrote, at most [`MAX_BYTES`], and whether some was dropped.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    dropped: bool,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > 2 * MAX_BYTES {
            let extra = self.bytes.len() - MAX_BYTES;
            self.bytes.drain(..extra);
            self.dropped = true;
        }
    }
}

fn capture(mut from: impl Read + Send + 'static, into: Arc<Mutex<Tail>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n @ 1..) = from.read(&mut buf) {
            into.lock().unwrap_or_else(|e| e.into_inner()).push(&buf[..n]);
        }
    })
}

/// Ends the process group `pid` leads.
fn kill_group(pid: u32) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Runs `command`, asking `abort` every 20 ms whether to end it.
pub fn run(command: &str, abort: &mut dyn FnMut() -> bool) -> Result<Ran> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot run {command:?}"))?;
    let tail = Arc::new(Mutex::new(Tail::default()));
    let readers: Vec<_> = [
        child.stdout.take().map(|o| Box::new(o) as Box<dyn Read + Send>),
        child.stderr.take().map(|e| Box::new(e) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|r| capture(r, tail.clone()))
    .collect();
    let mut cancelled = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if !cancelled && abort() {
            cancelled = true;
            kill_group(child.id());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // What the command left running holds the pipes: it goes too, so the readers end.
    kill_group(child.id());
    for r in readers {
        let _ = r.join();
    }
    let tail = std::mem::take(&mut *tail.lock().unwrap_or_else(|e| e.into_inner()));
    let (output, truncated) = trim(&tail.bytes, tail.dropped);
    Ok(Ran { output, exit_code: status.code(), cancelled, truncated })
}

/// The output as kept: its last [`MAX_BYTES`] and [`MAX_LINES`], whole characters.
fn trim(bytes: &[u8], dropped: bool) -> (String, bool) {
    let mut truncated = dropped || bytes.len() > MAX_BYTES;
    let start = bytes.len().saturating_sub(MAX_BYTES);
    let mut text = String::from_utf8_lossy(&bytes[start..]).into_owned();
    let lines = text.lines().count();
    if lines > MAX_LINES {
        text = text.lines().skip(lines - MAX_LINES).collect::<Vec<_>>().join("\n");
        truncated = true;
    }
    (text, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_exit_code_and_the_end_of_a_long_output() {
        let r = run("echo out; echo err >&2; exit 3", &mut || false).unwrap();
        assert_eq!((r.exit_code, r.cancelled, r.truncated), (Some(3), false, false));
        assert!(r.output.contains("out\n") && r.output.contains("err\n"), "{:?}", r.output);
        let r = run("seq 1 5000", &mut || false).unwrap();
        assert!(r.truncated && r.output.ends_with("5000") && r.output.lines().count() == MAX_LINES);
        let m = r.message("seq 1 5000", true, 7);
        assert_eq!((m["role"].as_str(), m["excludeFromContext"].as_bool()), (Some("bashExecution"), Some(true)));
    }

    #[test]
    fn an_abort_ends_the_whole_group() {
        let mut asked = 0;
        let r = run("sleep 30 | cat; echo never", &mut || {
            asked += 1;
            asked > 3
        })
        .unwrap();
        assert!(r.cancelled && r.exit_code.is_none() && !r.output.contains("never"), "{r:?}");
    }
}
