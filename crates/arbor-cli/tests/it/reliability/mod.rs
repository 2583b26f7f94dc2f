//! Reliability round 2 (issue #20), end to end with real processes: the
//! write lock through any name of a file, links never written through,
//! read-only files left alone, the holder always named, what is not a
//! regular file refused (docs/reliability.md lists each promise and its test).

mod disk_full;
mod endless;
mod hooks;
mod hostile;
mod links;
mod locks;
mod memory;
mod memory_table;
mod model_limits;
mod numbers;
mod ownership;
mod planted;
mod stale_index;
mod terminal;

use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::fixtures;

/// `arbor ARGS` run in `dir`, with deterministic ids and this test process's cache.
pub fn arbor_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .env("ARBOR_IDS", "counter")
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", crate::cache_dir())
        .env_remove("ARBOR_SESSIONS_DIR")
        .env_remove("ARBOR_HOOKS")
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A copy of a fixture at `to`; returns its bytes.
pub fn copy_fixture(name: &str, to: &Path) -> Vec<u8> {
    std::fs::copy(fixtures().join(name), to).unwrap();
    std::fs::read(to).unwrap()
}

/// The first entry id of a session file.
pub fn first_id(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let line = text.lines().nth(1).unwrap();
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    v["id"].as_str().unwrap().to_owned()
}

/// `arbor chat FILE`, a real process holding the file's write lock until dropped.
pub struct Holder {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Holder {
    /// Starts `arbor chat file` in `dir` and waits until it has the session open.
    pub fn start(dir: &Path, file: &str) -> Holder {
        let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
            .args(["chat", file])
            .env("HOME", "/nonexistent-home")
            .env("ARBOR_CACHE_DIR", crate::cache_dir())
            .env_remove("ARBOR_SESSIONS_DIR")
            .env_remove("ARBOR_CONFIG")
            .env_remove("ARBOR_HOOKS")
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = Arc::new(Mutex::new(String::new()));
        crate::chat::pump(child.stderr.take().unwrap(), err.clone());
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"/help\n").unwrap();
        stdin.flush().unwrap();
        let start = Instant::now();
        // The help comes after the session is open (and locked).
        while !err.lock().unwrap().contains("/quit") {
            assert!(start.elapsed() < Duration::from_secs(30), "chat did not start: {}", err.lock().unwrap());
            thread::sleep(Duration::from_millis(10));
        }
        Holder { child, stdin: Some(stdin) }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Ends the holder with SIGKILL: it cannot clean up.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
