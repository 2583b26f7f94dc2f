//! pi's editor and chat keys in `arbor chat`, in a real terminal (tmux)
//! against the local model server: each key's effect on the prompt line or
//! the screen, and what reached the server.

use std::path::Path;

use crate::model_server::ModelServer;
use crate::term::Term;
use crate::tui::tmux_missing;

/// `arbor chat c.jsonl --new` at the model server, in tmux (90×24), ready for keys.
fn new_chat(dir: &Path, name: &str, server: &ModelServer, env: &[&str]) -> Term {
    let url = server.openai();
    let t = Term::start_with(
        dir,
        name,
        (90, 24),
        env,
        &[format!("chat c.jsonl --new --model openai/test-model --base-url {url}")],
    );
    t.wait_for("openai/test-model");
    t
}

#[test]
fn word_and_line_editing_yank_paste_history_and_two_ctrl_c() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let t = new_chat(dir.path(), "edit", &server, &[]);
    t.text("alpha beta gamma");
    t.wait_prompt("alpha beta gamma");
    t.keys_then_prompt(&["C-w"], "alpha beta");
    t.keys_then_prompt(&["M-BSpace"], "alpha");
    t.keys_then_prompt(&["C-y"], "alpha beta");
    t.keys(&["C-a", "M-f"]);
    t.text("X");
    t.wait_prompt("alphaX beta");
    t.keys(&["C-e", "C-Left"]);
    t.keys_then_prompt(&["C-k"], "alphaX");
    t.keys(&["M-b"]);
    t.text("Z");
    t.wait_prompt("ZalphaX");
    t.keys(&["C-Right", "M-Left"]);
    t.keys_then_prompt(&["M-d"], "");
    t.text("one two");
    t.keys(&["C-b", "C-b", "C-d"]);
    t.wait_prompt("one to");
    t.keys_then_prompt(&["C-e", "C-u"], "");
    // A paste comes in whole (bracketed), newlines kept, and is not sent by itself.
    t.tmux.run(&["set-buffer", "-b", "p", "pasted first\npasted second"]);
    t.tmux.run(&["paste-buffer", "-p", "-b", "p", "-t", "tui"]);
    t.wait("the pasted lines", |s| s.contains("> pasted first") && s.contains("  pasted second"));
    t.keys(&["Enter"]);
    t.wait_for("echo: pasted first");
    // ↑ on the empty prompt brings it back.
    t.keys(&["Up"]);
    t.wait("the recalled prompt", |s| s.contains("> pasted first"));
    t.keys(&["C-u", "C-u", "C-w"]);
    t.keys(&["C-c"]);
    t.wait_for("Press Ctrl+C again to quit");
    t.keys(&["C-c"]);
    assert_eq!(t.exit_code(), "0");
    let turns = server.turns();
    assert_eq!(turns.len(), 1, "only the paste was sent");
    assert_eq!(turns[0].last_user(), "pasted first\npasted second");
}

#[test]
fn the_model_selector_model_cycling_and_the_thinking_cycle() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let agent = crate::pi_config::pi_agent_dir(dir.path(), &server);
    let models = serde_json::json!({"providers": {"local": {"baseUrl": server.openai(), "api": "openai-completions",
        "apiKey": "LOCAL_LLM_KEY", "models": [{"id": "small", "contextWindow": 4096, "reasoning": true}, {"id": "big"}]}}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let env = [format!("PI_CODING_AGENT_DIR={}", agent.display()), "LOCAL_LLM_KEY=k".to_owned()];
    let env: Vec<&str> = env.iter().map(String::as_str).collect();
    let t = Term::start_with(dir.path(), "models", (90, 24), &env, &["chat c.jsonl --new".to_owned()]);
    t.wait_for("local/small · thinking low");
    // Ctrl+L: every configured model; typing narrows the list.
    t.keys(&["C-l"]);
    let s = t.wait_for("Select a model");
    assert!(s.contains("local/small") && s.contains("local/big"), "{s}");
    t.text("big");
    t.wait("the narrowed list", |s| s.contains("(1/1)"));
    t.keys(&["Enter"]);
    t.wait_for("Model: local/big");
    t.send("hello");
    t.wait_for("echo: hello");
    // Ctrl+P: the next model; Shift+Tab: the next thinking level.
    t.keys(&["C-p"]);
    t.wait_for("Model: local/small");
    t.keys(&["BTab"]);
    t.wait_for("Thinking level: medium");
    t.send("again");
    t.wait_for("echo: again");
    // /model alone opens the selector too; Escape goes back.
    t.send("/model");
    t.wait_for("Select a model");
    t.keys(&["Escape"]);
    t.wait("the chat", |s| s.contains("echo: again") && !s.contains("Select a model"));
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
    let turns = server.turns();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0].body["model"], "big");
    assert_eq!(
        (turns[1].body["model"].as_str(), turns[1].body["reasoning_effort"].as_str()),
        (Some("small"), Some("medium"))
    );
    let path = crate::chat::path_json(&dir.path().join("c.jsonl"));
    let changes: Vec<&str> = path.iter().filter_map(|e| e["modelId"].as_str()).collect();
    assert_eq!(changes, ["small", "big", "small"], "each switch is recorded");
}

#[test]
fn ctrl_o_expands_tool_output_and_compactions_and_ctrl_t_folds_thinking() {
    if tmux_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(crate::fixtures().join("demo/demo.jsonl"), dir.path().join("s.jsonl")).unwrap();
    let t = Term::start(dir.path(), "expand", (100, 60), &["chat s.jsonl".to_owned()]);
    let s = t.wait_for("── compaction: 9314 tokens summarized ──");
    assert!(s.contains("more lines, Ctrl+O)"), "a long tool result is clipped: {s}");
    t.keys(&["C-o"]);
    let s = t.wait_for("Expanded");
    assert!(!s.contains("more lines, Ctrl+O)"), "every line shown: {s}");
    assert!(s.contains("## Goal") || s.contains("Goal"), "the compaction's summary is shown: {s}");
    t.keys(&["C-o"]);
    t.wait_for("more lines, Ctrl+O)");
    // The demo's one thinking block: shown, then on one line.
    t.press_until(&["PageUp"], "(thinking) I need to look at how words", std::time::Duration::from_millis(300));
    t.keys(&["C-t"]);
    t.wait_for("(thinking, Ctrl+T shows it) I need to look at how words");
    t.keys(&["C-t"]);
    t.wait_for("(thinking) I need to look at how words");
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
}

#[test]
fn ctrl_g_edits_the_prompt_in_the_editor_and_shell_commands_reach_the_model_or_not() {
    if tmux_missing() {
        return;
    }
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    // The "editor" appends to what the prompt held.
    let editor = dir.path().join("edit.sh");
    std::fs::write(&editor, "#!/bin/sh\nprintf ' and from the editor' >> \"$1\"\n").unwrap();
    assert!(std::process::Command::new("chmod").args(["+x", editor.to_str().unwrap()]).status().unwrap().success());
    let env = [format!("VISUAL={}", editor.display()), format!("EDITOR={}", editor.display())];
    let env: Vec<&str> = env.iter().map(String::as_str).collect();
    let t = new_chat(dir.path(), "editor", &server, &env);
    t.text("typed here");
    t.wait_prompt("typed here");
    t.keys(&["C-g"]);
    t.wait_prompt("typed here and from the editor");
    t.keys(&["Enter"]);
    t.wait_for("echo: typed here and from the editor");
    // !cmd: run, shown, recorded; its output goes with the next prompt. !!cmd: kept out.
    t.send("!echo visible-out");
    t.wait_for("[bash] $ echo visible-out");
    t.send("!!echo hidden-out");
    t.wait_for("[bash] (not sent) $ echo hidden-out");
    t.send("after the shell");
    t.wait_for("echo: after the shell");
    t.send("/quit");
    assert_eq!(t.exit_code(), "0");
    let turns = server.turns();
    let last = serde_json::to_string(&turns.last().unwrap().body).unwrap();
    assert!(last.contains("visible-out"), "the output of ! went to the model: {last}");
    assert!(!last.contains("hidden-out"), "the output of !! did not: {last}");
    let entries = crate::chat::dump_entries(&dir.path().join("c.jsonl"));
    let bash: Vec<&serde_json::Value> = entries.iter().filter(|e| e["message"]["role"] == "bashExecution").collect();
    assert_eq!(bash.len(), 2);
    assert_eq!(
        (bash[0]["message"]["output"].as_str(), bash[0]["message"]["exitCode"].as_i64()),
        (Some("visible-out\n"), Some(0))
    );
    assert_eq!(bash[1]["message"]["excludeFromContext"], true);
}
