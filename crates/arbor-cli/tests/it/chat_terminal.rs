//! `arbor chat` in a real terminal (tmux), against the model server: every
//! step waits for what the screen (or the server, or a file) must show, with
//! generous deadlines, never for a fixed time, so a loaded machine only makes
//! the tests slower.

use std::path::Path;
use std::time::Duration;

use crate::chat::{dump_entries, new_openai_chat, path_json, script, shape, wait_until};
use crate::fixtures;
use crate::model_server::ModelServer;
use crate::term::Term;
use crate::tui::tmux_missing;

#[test]
fn chat_streams_aborts_and_goes_back_with_double_escape() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let url = server.openai();
    let t = Term::start(
        dir.path(),
        "chat",
        (90, 24),
        &[format!("chat c.jsonl --new --model openai/test-model --base-url {url}")],
    );
    t.wait_for("openai/test-model");
    t.send("hello");
    t.wait_for("echo: hello");
    t.send("second question");
    t.wait_for("echo: second question");
    // A slow reply, aborted with Esc once it streams.
    t.send("a slow one");
    t.wait_for("word1");
    t.keys(&["Escape"]);
    let screen = t.wait_for("(aborted)");
    assert!(screen.contains("Aborted"), "{screen}");
    // Double Escape on the empty prompt opens the tree. The two presses must
    // come within 500 ms; a loaded machine can delay the second, so the pair
    // is sent again (only while the tree is not open) until it takes.
    t.double_escape_until("Session Tree");
    t.text("echo: hello");
    t.wait_for("(1/1)");
    t.keys(&["Enter"]);
    t.wait_for("Summarize branch?");
    t.keys(&["Enter"]);
    t.wait_for("Navigated to selected point");
    t.send("a new direction");
    t.wait_for("echo: a new direction");
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");

    let file = dir.path().join("c.jsonl");
    assert_eq!(
        shape(&path_json(&file)),
        [
            "model_change",
            "thinking_level_change",
            "user:hello",
            "assistant:echo: hello",
            "custom:arbor.leaf",
            "user:a new direction",
            "assistant:echo: a new direction",
        ]
    );
    let all = dump_entries(&file);
    let aborted = all.iter().find(|e| e["message"]["stopReason"] == "aborted").unwrap();
    assert!(aborted["message"]["content"][0]["text"].as_str().unwrap().starts_with("word0 "));
}

#[test]
fn a_local_session_resumed_by_base_url_never_sends_an_aborted_reply() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.jsonl");
    let url = server.openai();
    let (status, _, err) = script(dir.path(), &new_openai_chat(&file, &url, None), &["hello", "/quit"]);
    assert!(status.success(), "{err}");
    // Resumed with the base URL alone: the session's own model (openai/test-model) is used there.
    let t = Term::start(dir.path(), "resume", (90, 24), &[format!("chat c.jsonl --base-url {url}")]);
    t.wait_for("openai/test-model");
    t.send("a slow one");
    wait_until("the slow reply", || server.slow_started());
    t.wait_for("word1");
    t.keys(&["Escape"]);
    t.wait_for("(aborted)");
    t.send("after the abort");
    t.wait_for("echo: after the abort");
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
    wait_until("the aborted request to be dropped", || server.slow_dropped());

    // The server's log: the prompt after the abort carried no trace of the cut-off reply.
    let turns = server.turns();
    assert_eq!(turns.len(), 3);
    assert_eq!(
        turns[2].transcript(),
        ["user: hello", "assistant: echo: hello", "user: a slow one", "user: after the abort"]
    );
    assert!(!serde_json::to_string(&turns[2].body).unwrap().contains("word0"));
    // The file keeps it.
    let aborted = dump_entries(&file).into_iter().find(|e| e["message"]["stopReason"] == "aborted").unwrap();
    assert!(aborted["message"]["content"][0]["text"].as_str().unwrap().starts_with("word0 "));
}

#[test]
fn transcript_tools_compaction_history_completion_wrapping_and_the_last_exchange_on_exit() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures().join("demo/demo.jsonl"), dir.path().join("s.jsonl")).unwrap();
    let url = server.openai();
    let t = Term::start(
        dir.path(),
        "transcript",
        (100, 40),
        &[format!("chat s.jsonl --model openai/test-model --base-url {url}")],
    );
    // A resumed pi session: its tool calls and its compaction are in the conversation.
    let s = t.wait_for("README.md now documents");
    assert!(s.contains("[edit: README.md]"), "{s}");
    assert!(s.contains("── compaction: 9314 tokens summarized ──"), "{s}");
    // PageUp goes back to the start of the path shown, PageDown down again.
    let s = t.press_until(&["PageUp"], "› wordfreq counts \"Hello\"", Duration::from_millis(500));
    assert!(!s.contains("README.md now documents"), "{s}");
    t.press_until(&["PageDown"], "README.md now documents", Duration::from_millis(500));
    t.send("hello");
    t.wait_for("echo: hello");
    // ↑ on the empty prompt brings the prompt back.
    t.keys(&["Up"]);
    t.wait("the recalled prompt", |s| s.lines().any(|l| l.trim_end() == "> hello"));
    t.keys(&["C-u"]);
    // `/` and Tab complete a command name.
    t.text("/cont");
    t.keys(&["Tab"]);
    t.wait("the completed command", |s| s.lines().any(|l| l.trim_end() == "> /context"));
    t.keys(&["Enter"]);
    t.wait_for("Context: ");
    // A long prompt wraps: its start and its end are both on screen.
    let long = format!("begin-{}-finish", "x".repeat(150));
    t.text(&long);
    t.wait("the wrapped prompt", |s| s.contains("> begin-xxx") && s.contains("xxx-finish"));
    t.keys(&["Enter"]);
    t.wait_for("echo: begin-");
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
    // The last exchange stays on the normal screen.
    let s = t.wait_for("Session: ");
    assert!(s.contains("› begin-xxx") && s.contains("echo: begin-xxx"), "{s}");
    assert!(!s.contains("echo: hello"), "only the last exchange:\n{s}");
}

#[test]
fn enter_while_a_reply_streams_queues_the_message() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let url = server.openai();
    let t = Term::start(
        dir.path(),
        "queue",
        (90, 24),
        &[format!("chat c.jsonl --new --model openai/test-model --base-url {url}")],
    );
    t.wait_for("openai/test-model");
    t.send("a slow one");
    t.wait_for("word1");
    t.send("queued question");
    t.wait_for("Queued: queued question");
    // Sent once the reply is done (about ten seconds).
    t.wait_for("echo: queued question");
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
    let path = shape(&path_json(&dir.path().join("c.jsonl")));
    assert_eq!(
        path[2..4],
        [
            "user:a slow one".to_owned(),
            format!("assistant:{}", (0..100).map(|i| format!("word{i} ")).collect::<String>())
        ]
    );
    assert_eq!(path[4..], ["user:queued question", "assistant:echo: queued question"]);
}

#[test]
fn a_refused_prompt_stays_in_the_prompt() {
    if tmux_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let t = Term::start(dir.path(), "refused", (90, 24), &["chat c.jsonl --new".to_owned()]);
    t.wait_for("no model");
    t.send("keep me");
    let s = t.wait_for("No model selected");
    assert!(s.lines().any(|l| l.trim_end() == "> keep me"), "{s}");
    t.keys(&["C-u"]);
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
}

#[test]
fn compact_and_summaries_show_a_spinner_with_the_elapsed_time() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.jsonl");
    let url = server.openai();
    let (status, _, err) =
        script(dir.path(), &new_openai_chat(&file, &url, None), &["take your time", "second", "third", "/quit"]);
    assert!(status.success(), "{err}");
    let model = format!("--model openai/test-model --base-url {url}");
    let t = Term::start(
        dir.path(),
        "spinner",
        (90, 24),
        &[
            format!("compact c.jsonl --keep-recent-tokens 1 {model}"),
            format!("navigate c.jsonl 00000002 --summarize {model}"),
        ],
    );
    // The spinner's frames as the pane was sent them: `⠙ Compacting… 1s (Ctrl+C to cancel)`.
    let spun = |sent: &str, what: &str| {
        sent.split(['\r', '\n']).any(|l| l.contains(what) && l.contains("s (Ctrl+C to cancel)"))
    };
    t.wait_sent("the compaction spinner", |s| spun(s, "Compacting"));
    t.wait_sent("the summary spinner", |s| spun(s, "Summarizing branch"));
    assert_eq!(t.exit_code(), "0");
    let s = t.tmux.screen();
    assert!(!s.contains("Compacting"), "the spinner is cleared when done:\n{s}");
}

/// A session of `entries` messages of about 3 KB each, in one chain.
fn big_session(file: &Path, entries: usize) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(file).unwrap());
    let header = serde_json::json!({"type": "session", "version": 3, "id": "0b9e4f5e-3c1a-4d6b-9f0e-1a2b3c4d5e6f",
        "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/w"});
    writeln!(out, "{header}").unwrap();
    let text = "lorem ipsum dolor sit amet ".repeat(110);
    for i in 0..entries {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let parent = if i == 0 { serde_json::Value::Null } else { format!("{:08x}", i - 1).into() };
        let e = serde_json::json!({"type": "message", "id": format!("{i:08x}"), "parentId": parent,
            "timestamp": "2026-01-02T03:04:05.000Z",
            "message": {"role": role, "content": [{"type": "text", "text": text}], "timestamp": i}});
        writeln!(out, "{e}").unwrap();
    }
}

#[test]
fn a_big_file_opened_for_the_first_time_shows_a_spinner() {
    if tmux_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    big_session(&dir.path().join("big.jsonl"), 15_000);
    let t = Term::start(dir.path(), "open", (90, 24), &["context big.jsonl".to_owned()]);
    t.wait_sent("the open spinner", |s| s.contains("Opening big.jsonl…"));
    assert_eq!(t.exit_code(), "0");
    assert!(!t.tmux.screen().contains("Opening"), "cleared when done");
}

/// The token count of the status bar (`model · thinking off · ~N tokens (P%) · name`).
fn status_tokens(screen: &str) -> Option<u64> {
    let bar = screen.lines().rev().find(|l| l.contains(" tokens (") && l.contains(" · thinking "))?;
    let part = bar.split(" · ").find(|p| p.starts_with('~') && p.contains(" tokens ("))?;
    part[1..].split_whitespace().next()?.parse().ok()
}

#[test]
fn the_status_bar_counts_the_context_as_it_is_after_a_compaction() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.jsonl");
    let url = server.openai();
    std::fs::write(dir.path().join("config.toml"), "[compaction]\nkeepRecentTokens = 1\n").unwrap();
    let t = Term::start(
        dir.path(),
        "tokens",
        (100, 24),
        &[format!("chat c.jsonl --new --model openai/test-model --base-url {url} --config config.toml")],
    );
    t.wait_for("openai/test-model");
    t.send("hello");
    t.wait_for("echo: hello");
    t.send("second");
    t.wait_for("echo: second");
    // The last reply's usage: 150 tokens and what follows it.
    let before = status_tokens(&t.wait("the token count", |s| status_tokens(s).is_some_and(|n| n >= 150))).unwrap();
    t.send("/compact");
    let s = t.wait_for("Compacted: ");
    assert!(s.contains(&format!("Compacted: {before} tokens summarized")), "{s}");
    // After: the estimate of the summary and the kept messages, as `arbor context` counts them.
    let s = t.wait("the new token count", |s| status_tokens(s).is_some_and(|n| n < 100));
    let now = status_tokens(&s).unwrap();
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
    let text = crate::stdout(&crate::arbor(&["context", file.to_str().unwrap()]));
    assert!(text.trim_end().ends_with(&format!("~{now} tokens")), "status bar ~{now}, arbor context:\n{text}");
}

#[test]
fn the_tree_opens_with_the_filter_of_pis_settings() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let agent = crate::pi_config::pi_agent_dir(dir.path(), &server);
    std::fs::write(
        agent.join("settings.json"),
        r#"{"defaultProvider": "local", "defaultModel": "small", "treeFilterMode": "user-only"}"#,
    )
    .unwrap();
    let env = [format!("PI_CODING_AGENT_DIR={}", agent.display()), "LOCAL_LLM_KEY=k".to_owned()];
    let env: Vec<&str> = env.iter().map(String::as_str).collect();
    let t = Term::start_with(dir.path(), "filter", (90, 24), &env, &["chat c.jsonl --new".to_owned()]);
    t.wait_for("local/small");
    t.send("hello");
    t.wait_for("echo: hello");
    t.send("/tree");
    let s = t.wait_for("Session Tree");
    // user-only: the prompt is listed, the reply is not.
    assert!(s.contains("user: hello") && !s.contains("echo: hello"), "user-only, from settings.json:\n{s}");
    t.keys(&["Escape"]);
    t.wait("the chat again", |s| !s.contains("Session Tree") && s.contains("echo: hello"));
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
}
