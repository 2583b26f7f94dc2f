//! A model server that never ends its reply (item 10 of issue #20): `arbor
//! chat` stops reading at the reply's size limit or its time limit (settings
//! `maxReplyBytes` and `replyTimeoutSeconds`, or `ARBOR_MAX_REPLY_BYTES` and
//! `ARBOR_REPLY_TIMEOUT`), says which and records the reply as failed (piped, it exits non-zero).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::model_server::ModelServer;

/// `arbor chat` on a new session in `dir`, the endless prompt then `/quit`;
/// killed (and `None`) if still running after `limit`.
fn endless_chat(dir: &Path, url: &str, config: &str, env: &[(&str, &str)], limit: Duration) -> Option<(bool, String)> {
    std::fs::write(dir.join("config.toml"), config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["chat", "chat.jsonl", "--new", "--model", "openai/test-model", "--base-url", url])
        .args(["--config", "config.toml"])
        .envs(env.iter().copied())
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", crate::cache_dir())
        .env_remove("ARBOR_HOOKS")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"tell me endless things\n/quit\n").unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    Some((o.status.success(), String::from_utf8_lossy(&o.stderr).into_owned()))
}

/// The stop reason and error of the last assistant message in `dir/chat.jsonl`.
fn last_reply(dir: &Path) -> (String, String) {
    let text = std::fs::read_to_string(dir.join("chat.jsonl")).unwrap();
    let last = text.lines().rev().find(|l| l.contains("\"role\":\"assistant\"")).expect("the reply is recorded");
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    let m = &v["message"];
    (m["stopReason"].as_str().unwrap_or("").to_owned(), m["errorMessage"].as_str().unwrap_or("").to_owned())
}

/// A case: the config file's text, environment variables, and what chat says.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);

#[test]
fn an_endless_reply_is_cut_at_its_size_or_its_time() {
    let server = ModelServer::start();
    let url = server.openai();
    let cases: [Case; 3] = [
        ("", &[("ARBOR_MAX_REPLY_BYTES", "100000")], "the reply is larger than 100000 bytes"),
        ("maxReplyBytes = 65536\n", &[], "the reply is larger than 65536 bytes"),
        ("replyTimeoutSeconds = 1\n", &[], "the request timed out after 1s"),
    ];
    for (config, env, says) in cases {
        let d = tempfile::tempdir().unwrap();
        let Some((ok, err)) = endless_chat(d.path(), &url, config, env, Duration::from_secs(30)) else {
            panic!("{config:?} {env:?}: chat was still reading the endless reply after 30 s");
        };
        // The prompt failed, so piped chat exits non-zero.
        assert!(!ok, "{err}");
        assert!(err.contains(says), "{config:?} {env:?}: {err}");
        let (stop, error) = last_reply(d.path());
        assert_eq!(stop, "error");
        assert!(error.contains(says), "{error}");
    }
}
