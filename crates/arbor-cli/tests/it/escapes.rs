//! Session and model text never reaches the terminal raw (#38, item 2): the
//! chat's printout of its last exchange at exit (the model's own reply
//! included), `arbor tui`'s editor text at exit and `arbor tui --fork`'s output
//! go through the same sanitizer as everything else. Each is driven in tmux
//! and the bytes the pane was sent are searched for the raw sequences.

use std::path::Path;

use serde_json::json;

use crate::model_server::{has_raw_escapes, ModelServer, ESCAPES};
use crate::term::Term;
use crate::tui::tmux_missing;

/// A session whose only user message carries [`ESCAPES`]; its id is `0000000u`.
fn hostile_session(file: &Path) {
    let header = json!({"type": "session", "version": 3, "id": "5b1c6f0e-9d2a-4c3b-8e7f-0a1b2c3d4e5f",
        "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/w"});
    let user = json!({"type": "message", "id": "0000000u", "parentId": null, "timestamp": "2026-01-02T03:04:06.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": format!("hello {ESCAPES} there")}], "timestamp": 1}});
    let reply = json!({"type": "message", "id": "0000000a", "parentId": "0000000u", "timestamp": "2026-01-02T03:04:07.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "fine"}], "stopReason": "stop", "timestamp": 2}});
    std::fs::write(file, format!("{header}\n{user}\n{reply}\n")).unwrap();
}

/// The visible form of the clipboard write, as the sanitizer prints it.
const SHOWN: &str = "\\x1b]52;c;cHduZWQ=\\x07";

#[test]
fn the_chats_last_exchange_at_exit_shows_the_models_escapes_instead_of_obeying_them() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let url = server.openai();
    let t = Term::start(
        dir.path(),
        "exchange",
        (100, 24),
        &[format!("chat c.jsonl --new --model openai/test-model --base-url {url}")],
    );
    t.wait_for("openai/test-model");
    t.send("send escapes");
    t.wait_for(" done");
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
    let s = t.wait_for("Session: ");
    assert!(s.contains(SHOWN), "the reply's escapes are shown:\n{s}");
    assert!(!has_raw_escapes(&t.sent()), "a raw escape of the reply reached the terminal");
}

#[test]
fn arbor_tui_prints_the_editor_text_of_a_hostile_message_made_visible() {
    if tmux_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    hostile_session(&dir.path().join("s.jsonl"));
    let t = Term::start_on_terminal(dir.path(), "editor", (100, 24), &["tui s.jsonl --at 0000000u".to_owned()]);
    t.wait_for("Session Tree");
    t.keys(&["Enter"]);
    t.wait_for("Summarize branch?");
    t.keys(&["Enter"]);
    t.wait_for("Navigated to selected point");
    t.keys(&["Escape"]);
    assert_eq!(t.exit_code(), "0");
    let s = t.wait_for("hello ");
    assert!(s.contains(SHOWN), "the editor text is printed, its escapes shown:\n{s}");
    assert!(!has_raw_escapes(&t.sent()), "a raw escape of the session reached the terminal");
}

#[test]
fn arbor_tui_fork_prints_the_editor_text_of_a_hostile_message_made_visible() {
    if tmux_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    hostile_session(&dir.path().join("s.jsonl"));
    let t = Term::start_on_terminal(dir.path(), "fork", (100, 24), &["tui --fork s.jsonl".to_owned()]);
    t.wait_for("Branch from Message");
    t.keys(&["Enter"]);
    assert_eq!(t.exit_code(), "0");
    let s = t.wait_for("editor text:");
    assert!(s.contains(SHOWN), "the editor text is printed, its escapes shown:\n{s}");
    assert!(!has_raw_escapes(&t.sent()), "a raw escape of the session reached the terminal");
}
