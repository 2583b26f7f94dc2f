//! Configuration files that are not regular files (#38, item 1): a FIFO or
//! `/dev/zero` given as the hooks file, pi's `settings.json` or `models.json`,
//! or Arbor's settings, is refused at once with one line naming it; nothing
//! waits for a writer or reads until memory runs out. Each run has a deadline
//! and, around it, a memory limit (`ulimit -v`) that reading `/dev/zero`
//! whole would pass.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::fixtures;

/// `arbor ARGS` in `dir` with `env`, standard input `input`, under a 2 GiB
/// address-space limit; killed (and the test failed) after 60 s.
fn bounded(dir: &Path, args: &[&str], env: &[(&str, &str)], input: &str) -> Output {
    let line = "ulimit -v 2097152; exec \"$0\" \"$@\"";
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(line)
        .arg(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", dir.join("cache"))
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("ARBOR_CONFIG")
        .env_remove("ARBOR_HOOKS")
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("arbor {args:?} hung on a configuration file");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

/// The one stderr line naming `file`.
fn line_naming(stderr: &str, file: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(file)).collect();
    assert_eq!(lines.len(), 1, "one line names {file}:\n{stderr}");
    lines[0].to_owned()
}

#[test]
fn a_fifo_or_dev_zero_as_the_hooks_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures().join("demo/demo.jsonl"), dir.path().join("s.jsonl")).unwrap();
    mkfifo(&dir.path().join("hooks.toml"));
    for hooks in ["hooks.toml", "/dev/zero"] {
        let o = bounded(dir.path(), &["compact", "s.jsonl", "--hooks", hooks], &[], "");
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(1), "{err}");
        let line = line_naming(&err, hooks);
        assert!(line.contains("not a regular file"), "{line}");
        assert_eq!(line.matches(hooks).count(), 1, "named once: {line}");
    }
}

#[test]
fn pis_settings_and_models_as_a_fifo_or_dev_zero_are_warnings_and_the_chat_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures().join("demo/demo.jsonl"), dir.path().join("s.jsonl")).unwrap();
    let agent = dir.path().join("pi-agent");
    std::fs::create_dir(&agent).unwrap();
    std::os::unix::fs::symlink("/dev/zero", agent.join("settings.json")).unwrap();
    mkfifo(&agent.join("models.json"));
    let env = [("PI_CODING_AGENT_DIR", agent.to_str().unwrap())];
    let o = bounded(dir.path(), &["chat", "s.jsonl"], &env, "/name still works\n/quit\n");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(line_naming(&err, "settings.json").contains("not a regular file (a device)"), "{err}");
    assert!(line_naming(&err, "models.json").contains("not a regular file (a FIFO)"), "{err}");
    assert!(err.contains("Session name set: still works"), "{err}");
    // The commands that call a model read the same files the same way.
    let o = bounded(dir.path(), &["compact", "s.jsonl"], &env, "");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(line_naming(&err, "models.json").contains("not a regular file (a FIFO)"), "{err}");
}

#[test]
fn arbors_own_settings_as_a_fifo_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures().join("demo/demo.jsonl"), dir.path().join("s.jsonl")).unwrap();
    mkfifo(&dir.path().join("config.toml"));
    let o = bounded(dir.path(), &["chat", "s.jsonl", "--config", "config.toml"], &[], "/quit\n");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(line_naming(&err, "config.toml").contains("not a regular file (a FIFO)"), "{err}");
    let o = bounded(dir.path(), &["chat", "s.jsonl"], &[("ARBOR_CONFIG", "/dev/zero")], "/quit\n");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(line_naming(&err, "/dev/zero").contains("not a regular file (a device)"), "{err}");
}
