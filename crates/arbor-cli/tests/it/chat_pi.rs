//! pi's commands, flags and feedback in `arbor chat` (#34), in tmux against
//! the local model server where a terminal is needed: each checked on the
//! screen (or the bytes the pane was sent), in the files and in the
//! server's log.

use std::path::Path;

use base64::Engine as _;

use crate::chat::{dump_entries, path_json};
use crate::model_server::ModelServer;
use crate::term::Term;
use crate::tui::tmux_missing;

fn new_chat(dir: &Path, name: &str, server: &ModelServer, size: (u16, u16)) -> Term {
    let url = server.openai();
    let t = Term::start(dir, name, size, &[format!("chat c.jsonl --new --model openai/test-model --base-url {url}")]);
    t.wait_for("openai/test-model");
    t
}

/// The status bar's last field: the session's title.
fn bar_title(screen: &str) -> String {
    let bar = screen.lines().find(|l| l.contains(" · thinking ")).unwrap_or_default();
    bar.rsplit(" · ").next().unwrap_or_default().trim().to_owned()
}

#[test]
fn session_commands_new_resume_clone_session_export_copy_hotkeys_settings_and_unknown() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let t = new_chat(dir.path(), "cmds", &server, (110, 40));
    t.send("first words");
    let s = t.wait_for("echo: first words");
    assert_eq!(bar_title(&s), "first words", "the first prompt names the session, not its file: {s}");
    t.send("/session");
    let s = t.wait_for("Id: ");
    assert!(s.contains(&format!("Session: {}", dir.path().join("c.jsonl").display())), "{s}");
    t.send("/copy");
    t.wait_for("Copied the last reply");
    let osc = format!("\x1b]52;c;{}\x07", base64::engine::general_purpose::STANDARD.encode("echo: first words"));
    t.wait_sent("the clipboard write", |sent| sent.contains(&osc));
    t.send("/export");
    t.wait_for("Exported to c.html");
    assert!(std::fs::read_to_string(dir.path().join("c.html")).unwrap().contains("<html"));
    t.send("/export c.html");
    t.wait_for("cannot create");
    t.send("/hotkeys");
    t.wait_for("Ctrl+W, Alt+Backspace");
    t.send("/settings");
    t.wait_for("Settings (for this chat)");
    t.keys(&["Enter"]);
    t.wait_for("(1/6)");
    t.keys(&["End", "Up", "Enter"]);
    // Back in the settings, the new value shown; Escape goes back to the chat, which says so.
    t.wait_for("Thinking level  high");
    t.keys(&["Escape"]);
    t.wait_for("Thinking level: high");
    // An unknown command is refused and the prompt cleared.
    t.send("/bogus thing");
    let s = t.wait_for("Unknown command /bogus");
    assert!(s.lines().any(|l| l.trim_end() == ">"), "cleared: {s}");
    t.send("/clone");
    t.wait_for("Cloned the branch into a new session");
    t.send("/new");
    t.wait_for("New session: ");
    t.send("in the new one");
    let s = t.wait_for("echo: in the new one");
    assert!(!s.contains("echo: first words"), "a new session: {s}");
    t.send("/resume");
    t.wait_for("Resume a session");
    // The sessions of the session's directory: the original and its clone (listed first: the same
    // time, and its name sorts first), not the new one without "first".
    t.text("first");
    let s = t.wait_for("(1/2)");
    assert!(s.contains("· c.jsonl"), "{s}");
    t.keys(&["Enter"]);
    t.wait_for("Resumed first words");
    t.send("back in the clone");
    t.wait_for("echo: back in the clone");
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
    let last = server.turns().pop().unwrap();
    assert_eq!(last.transcript(), ["user: first words", "assistant: echo: first words", "user: back in the clone"]);
    // The turn went to the clone; the original file is untouched by the clone and the rest.
    let clone = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains("back in the clone")))
        .unwrap();
    assert_ne!(clone.file_name().unwrap(), "c.jsonl");
    let original: Vec<String> = path_json(&dir.path().join("c.jsonl"))
        .iter()
        .filter_map(|e| e["message"]["role"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(original, ["user", "assistant"]);
    let thinking: Vec<String> = path_json(&dir.path().join("c.jsonl"))
        .iter()
        .filter_map(|e| e["thinkingLevel"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(thinking, ["off", "high"], "/settings' thinking level is recorded");
}

#[test]
fn feedback_retries_html_errors_a_cancelled_compact_and_a_refreshed_context() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[compaction]\nkeepRecentTokens = 1\n").unwrap();
    let url = server.openai();
    let t = Term::start(
        dir.path(),
        "feedback",
        (110, 30),
        &[format!("chat c.jsonl --new --model openai/test-model --base-url {url} --config config.toml")],
    );
    // Two 503s with Retry-After: 1, then the answer: the status line counts the retries.
    t.send("flaky please");
    t.wait_for("Waiting for the model… 0s · Retrying (1/3) in 1s (Esc to abort)");
    t.wait_for("Retrying (2/3) in 1s");
    t.wait_for("echo: flaky please");
    // A proxy's HTML page: its status and title, not its markup.
    t.send("html please");
    let s = t.wait_for("(an HTML page)");
    assert!(s.contains("HTTP 404: 404 Not Found (an HTML page)") && !s.contains("<html"), "{s}");
    t.send("take your time with this");
    t.wait_for("echo: take your time with this");
    t.send("/context");
    let before = t.wait_for("Context: ");
    // /compact, cancelled while the summary is slow: said so, not an error.
    t.send("/compact");
    t.wait_sent("the compaction spinner", |s| s.contains("Compacting… 0s (Esc to cancel)"));
    t.keys(&["Escape"]);
    let s = t.wait_for("Compaction cancelled");
    assert!(!s.contains("Error: Compaction cancelled"), "{s}");
    // /context is made again after a move in the tree.
    t.send("/context");
    t.wait_for("Context: ");
    t.double_escape_until("Session Tree");
    t.text("echo: flaky");
    t.wait_for("(1/1)");
    t.keys(&["Enter"]);
    t.wait_for("Summarize branch?");
    t.keys(&["Enter"]);
    let after = t.wait_for("Navigated to selected point");
    let line = |s: &str| s.lines().find(|l| l.starts_with("Context: ")).unwrap_or_default().to_owned();
    assert_ne!(line(&before), line(&after), "refreshed after the move:\n{after}");
    assert!(line(&after).starts_with("Context: 2 messages"), "{after}");
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
    assert_eq!(server.requests().iter().filter(|r| r.last_user() == "flaky please").count(), 3);
    assert!(!dump_entries(&dir.path().join("c.jsonl")).iter().any(|e| e["type"] == "compaction"));
}

/// pi's turn after `leaf`, appended to `file` as pi appends it (whole lines).
fn pi_appends(file: &Path, leaf: &str) {
    let user = serde_json::json!({"type": "message", "id": "pi000001", "parentId": leaf, "timestamp": "2026-01-02T03:04:05.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "written by pi"}], "timestamp": 1}});
    let reply = serde_json::json!({"type": "message", "id": "pi000002", "parentId": "pi000001", "timestamp": "2026-01-02T03:04:06.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "pi answered"}], "api": "openai-completions",
            "provider": "openai", "model": "test-model", "stopReason": "stop", "timestamp": 2,
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}}});
    let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    std::io::Write::write_all(&mut f, format!("{user}\n{reply}\n").as_bytes()).unwrap();
}

#[test]
fn without_a_terminal_too_another_writers_entries_come_before_the_next_prompt() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.jsonl");
    let url = server.openai();
    let mut run = crate::chat::ChatRun::start(dir.path(), &crate::chat::new_openai_chat(&file, &url, None));
    run.send("mine first");
    run.wait_out("echo: mine first");
    let leaf = path_json(&file).last().unwrap()["id"].as_str().unwrap().to_owned();
    pi_appends(&file, &leaf);
    run.send("after pi");
    run.wait_out("echo: after pi");
    run.send("/quit");
    let (status, _, err) = run.finish();
    assert!(status.success(), "{err}");
    assert!(err.contains("Another program wrote 2 new entries"), "{err}");
    let mine = path_json(&file).into_iter().find(|e| e["message"]["content"][0]["text"] == "after pi").unwrap();
    assert_eq!(mine["parentId"], "pi000002");
}

#[test]
fn another_writer_appending_is_taken_in_and_the_chat_continues_after_it() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.jsonl");
    let t = new_chat(dir.path(), "writer", &server, (100, 30));
    t.send("mine first");
    t.wait_for("echo: mine first");
    // pi appends a turn of its own to the file the chat has open.
    let leaf = path_json(&file).last().unwrap()["id"].as_str().unwrap().to_owned();
    pi_appends(&file, &leaf);
    let s = t.wait_for("Another program wrote 2 new entries");
    assert!(s.contains("pi answered"), "shown: {s}");
    t.send("after pi");
    t.wait_for("echo: after pi");
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
    let path = path_json(&file);
    let mine = path.iter().find(|e| e["message"]["content"][0]["text"] == "after pi").unwrap();
    assert_eq!(mine["parentId"], "pi000002", "continued after pi's entries, not beside them");
    let sent = server.turns().pop().unwrap().transcript();
    assert_eq!(sent[2..], ["user: written by pi", "assistant: pi answered", "user: after pi"]);
}

#[test]
fn the_tree_in_the_chat_takes_q_into_its_search_and_its_help_fits_80_columns() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let t = new_chat(dir.path(), "treeq", &server, (80, 24));
    t.send("queued things");
    t.wait_for("echo: queued things");
    t.send("/tree");
    let s = t.wait_for("Session Tree");
    assert!(s.contains("Esc: back to the chat"), "the whole help at 80 columns: {s}");
    t.text("queued");
    let s = t.wait_for("Type to search: queued");
    assert!(s.contains("Session Tree"), "q did not close the tree: {s}");
    t.keys(&["Escape"]);
    t.wait("the search cleared", |s| s.lines().any(|l| l.trim_end() == "  Type to search:"));
    t.keys(&["Escape"]);
    t.wait("the chat", |s| !s.contains("Session Tree") && s.contains("echo: queued things"));
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
}

#[test]
fn resume_picker_in_the_chat_opens_the_tree_at_the_hit() {
    if tmux_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    crate::tui::sessions_of_the_cwd(dir.path());
    let t = Term::start(dir.path(), "hit", (100, 30), &["chat -r".to_owned()]);
    t.wait_for("Resume a session");
    t.text("strip punctuation");
    let mut screen = t.wait_for("Strip punctuation without adding dependencies");
    for _ in 0..10 {
        if screen.lines().any(|l| l.starts_with("› ") && l.contains("Strip punctuation without adding")) {
            break;
        }
        t.keys(&["Down"]);
        std::thread::sleep(std::time::Duration::from_millis(150));
        screen = t.tmux.screen();
    }
    assert!(screen.lines().any(|l| l.starts_with("› ") && l.contains("Strip punctuation without adding")), "{screen}");
    t.keys(&["Enter"]);
    // The chat opens with the tree at the hit, not on the session's current branch.
    let s = t.wait_for("Session Tree");
    assert!(s.lines().any(|l| l.starts_with("› ") && l.contains("user: Strip punctuation without adding")), "{s}");
    assert!(s.contains("Esc: back to the chat"), "{s}");
    t.keys(&["Escape"]);
    t.wait("the chat", |s| !s.contains("Session Tree") && s.contains(" · thinking "));
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
}

/// `arbor ARGS` in `dir` with `stdin`, its sessions under `dir/sessions`.
fn arbor_in(dir: &Path, args: &[&str], env: &[(&str, &str)], stdin: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .env("ARBOR_IDS", "counter")
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_SESSIONS_DIR", dir.join("sessions"))
        .env("ARBOR_CACHE_DIR", dir.join("cache"))
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("ARBOR_CONFIG")
        .env_remove("OPENAI_API_KEY")
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn pis_flags_print_continue_and_session_and_bare_arbor_starting_a_session() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let url = server.openai();
    let model = ["--model", "openai/test-model", "--base-url", url.as_str()];
    // -p: standard input, then the prompt; the reply on stdout; a new session.
    let o = arbor_in(dir.path(), &[&["chat", "-p", "summarize that"], &model[..]].concat(), &[], "context first, ");
    assert!(o.status.success(), "{}", crate::stderr(&o));
    assert_eq!(crate::stdout(&o), "echo: context first, summarize that\n");
    assert_eq!(server.turns().pop().unwrap().last_user(), "context first, summarize that");
    let files: Vec<_> = walk(&dir.path().join("sessions"));
    assert_eq!(files.len(), 1, "{files:?}");
    // -c: the most recent session of the directory, continued.
    let o = arbor_in(dir.path(), &["chat", "-c", "--base-url", &url], &[], "and again\n/quit\n");
    assert!(o.status.success(), "{}", crate::stderr(&o));
    assert!(crate::stdout(&o).contains("echo: and again"));
    assert_eq!(server.turns().pop().unwrap().transcript().len(), 3, "the earlier exchange was sent too");
    // --session by a prefix of its id, with -p.
    let id = std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .next()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_str().unwrap().to_owned())
        .unwrap();
    let o = arbor_in(dir.path(), &["chat", "--session", &id[..8], "-p", "third", "--base-url", &url], &[], "");
    assert!(o.status.success(), "{}", crate::stderr(&o));
    assert_eq!(crate::stdout(&o), "echo: third\n");
    assert_eq!(path_json(&files[0]).iter().filter(|e| e["message"]["role"] == "user").count(), 3);
    let o = arbor_in(dir.path(), &["chat", "--session", "nonesuch"], &[], "");
    // The same one-line refusal every command gives for a name that matches nothing.
    assert!(crate::stderr(&o).contains("sessions: no session nonesuch"), "{}", crate::stderr(&o));

    // Bare `arbor` where there is no session, with pi's default model: a new one starts.
    let empty = tempfile::tempdir().unwrap();
    let agent = crate::pi_config::pi_agent_dir(empty.path(), &server);
    let env = [("PI_CODING_AGENT_DIR", agent.to_str().unwrap()), ("LOCAL_LLM_KEY", "k")];
    let o = arbor_in(empty.path(), &[], &env, "hello there\n/quit\n");
    assert!(o.status.success(), "{}", crate::stderr(&o));
    assert!(crate::stdout(&o).contains("echo: hello there"), "{}", crate::stderr(&o));
    assert_eq!(server.turns().pop().unwrap().body["model"], "small");
    assert_eq!(walk(&empty.path().join("sessions")).len(), 1);
}

/// The `.jsonl` files under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    arbor_test_support::jsonl_under(dir)
}
