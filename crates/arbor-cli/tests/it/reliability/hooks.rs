//! Hooks that misbehave (items 5 and 13 of issue #20), through `arbor
//! navigate` and a real shell: the answer is taken when the hook exits even
//! if a child it left keeps its stdout open, and an answer over the limit is
//! named as such.

use std::fs;

use super::{arbor_in, copy_fixture};

/// `arbor navigate demo.jsonl 0866b2b1 --hooks hooks.json` with one
/// `session_before_tree` hook running `command` (time limit `timeout_ms`).
fn navigate_with_hook(command: &str, timeout_ms: u64) -> (std::process::Output, Vec<u8>, Vec<u8>) {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("demo.jsonl");
    let before = copy_fixture("demo/demo.jsonl", &file);
    let hooks = serde_json::json!({
        "hooks": [{"event": "session_before_tree", "command": command, "timeout_ms": timeout_ms}]
    });
    fs::write(d.path().join("hooks.json"), hooks.to_string()).unwrap();
    let o = arbor_in(d.path(), &["navigate", "demo.jsonl", "0866b2b1", "--hooks", "hooks.json", "--json"]);
    let after = fs::read(&file).unwrap();
    (o, before, after)
}

#[test]
fn a_hook_that_leaves_a_child_behind_is_answered_when_it_exits() {
    // The child keeps the hook's stdout open for longer than the time limit.
    let (o, before, after) = navigate_with_hook("cat > /dev/null; (sleep 8; true) & echo '{\"cancel\": true}'", 4000);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("timed out"), "{err}");
    assert_eq!(o.status.code(), Some(3), "the hook's cancel was taken: {err}");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["cancelled"], true);
    assert_eq!(after, before, "the cancelled navigation wrote nothing");
}

#[test]
fn an_answer_over_the_limit_is_named() {
    let (o, _, _) = navigate_with_hook("cat > /dev/null; yes '{}' | head -c 17000000", 60_000);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "a failed hook does not stop the flow: {err}");
    assert!(err.contains("its output is larger than 16 MiB"), "{err}");
    assert!(!err.contains("signal") && !err.contains("not JSON"), "{err}");
}
