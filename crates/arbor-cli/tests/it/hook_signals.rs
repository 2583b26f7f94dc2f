//! SIGTERM or SIGHUP to `arbor` while a command hook runs (#38, item 8): the
//! hook runs in a process group of its own, so the signal alone would leave
//! it (and what it started) running; `arbor` ends the group, then itself.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::chat::wait_until;
use crate::fixtures;

/// True while process `pid` exists (a zombie counts as gone).
fn alive(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state is the field after the command name, which ends with `) `.
    stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z'))
}

/// `arbor navigate` whose `session_before_tree` hook writes its shell's pid
/// and a child's, then waits for the child (five minutes).
fn navigate_with_a_sleeping_hook(dir: &Path) -> Child {
    std::fs::copy(fixtures().join("demo/demo.jsonl"), dir.join("demo.jsonl")).unwrap();
    let command = "sleep 300 & echo $! > child.pid; echo $$ > hook.pid; wait";
    let hooks =
        serde_json::json!({"hooks": [{"event": "session_before_tree", "command": command, "timeout_ms": 600000}]});
    std::fs::write(dir.join("hooks.json"), hooks.to_string()).unwrap();
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["navigate", "demo.jsonl", "0866b2b1", "--hooks", "hooks.json"])
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", dir.join("cache"))
        .env_remove("PI_CODING_AGENT_DIR")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn pid_in(file: &Path) -> String {
    wait_until("the hook to start", || std::fs::read_to_string(file).is_ok_and(|s| s.ends_with('\n')));
    std::fs::read_to_string(file).unwrap().trim().to_owned()
}

fn the_hook_goes_with_arbor_on(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut arbor = navigate_with_a_sleeping_hook(dir.path());
    let before = std::fs::read(dir.path().join("demo.jsonl")).unwrap();
    let (hook, child) = (pid_in(&dir.path().join("hook.pid")), pid_in(&dir.path().join("child.pid")));
    assert!(alive(&hook) && alive(&child));
    let sent = Command::new("kill").args([&format!("-{signal}"), &arbor.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let start = Instant::now();
    let status = loop {
        if let Some(s) = arbor.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "arbor did not end on SIG{signal}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success(), "ended by the signal: {status}");
    wait_until("the hook's group to end", || !alive(&hook) && !alive(&child));
    assert_eq!(std::fs::read(dir.path().join("demo.jsonl")).unwrap(), before, "nothing written after the signal");
}

#[test]
fn sigterm_to_arbor_ends_a_running_hook_and_its_children() {
    the_hook_goes_with_arbor_on("TERM");
}

#[test]
fn sighup_to_arbor_ends_a_running_hook_and_its_children() {
    the_hook_goes_with_arbor_on("HUP");
}
