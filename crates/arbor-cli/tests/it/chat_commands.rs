//! `arbor chat`'s commands and requests, piped: what each request carries
//! (never an aborted reply), what `/label`, `/fork`, `/branch`, `/compact`
//! and `/context` do, resuming with a base URL alone, exit codes, and bare
//! `arbor`. Checked through the model server's log and the file.

use std::path::Path;

use crate::chat::{
    config, context_json, dump_entries, new_openai_chat, path_json, script, script_with, shape, wait_until, ChatRun,
};
use crate::model_server::ModelServer;
use crate::{arbor, stdout};

fn labels(file: &Path) -> Vec<(String, Option<String>)> {
    dump_entries(file)
        .iter()
        .filter(|e| e["type"] == "label")
        .map(|e| (e["targetId"].as_str().unwrap().to_owned(), e["label"].as_str().map(str::to_owned)))
        .collect()
}

/// The number in `about N tokens` of the last `/context` line.
fn context_tokens(err: &str) -> u64 {
    let line = err.lines().rev().find(|l| l.starts_with("Context: ")).unwrap();
    let after = line.split("about ").nth(1).unwrap();
    after.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn aborted_replies_are_left_out_of_prompts_summaries_and_compactions() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let cfg = config(dir.path(), "[compaction]\nkeepRecentTokens = 1\n");
    let url = server.openai();
    let mut run = ChatRun::start(dir.path(), &new_openai_chat(&file, &url, Some(&cfg)));
    run.send("hello");
    run.wait_out("echo: hello\n");
    run.send("a slow one");
    wait_until("the slow reply", || server.slow_started());
    run.wait_out("word1 ");
    run.interrupt();
    run.wait_err("[aborted]");
    run.send("after the abort");
    run.wait_out("echo: after the abort\n");
    run.send("/compact");
    run.wait_err("Compacted: ");
    run.send("/quit");
    let (status, _, err) = run.finish();
    assert!(status.success(), "{err}");
    let compaction_requests = server.requests().len() - 3;

    // Back to the first reply, summarizing the branch that holds the aborted reply.
    let (status, _, err) = script(
        dir.path(),
        &[file.to_str().unwrap(), "--model", "openai/test-model", "--base-url", &url],
        &["/tree", "00000004", "2", "/quit"],
    );
    assert!(status.success(), "{err}");
    assert!(err.contains("Navigated to selected point"), "{err}");

    // The prompt after the abort: the cut-off reply is not in it.
    let after = server.turns().into_iter().find(|t| t.last_user() == "after the abort").unwrap();
    assert_eq!(
        after.transcript(),
        ["user: hello", "assistant: echo: hello", "user: a slow one", "user: after the abort"]
    );
    // Nor in the compaction's summaries, nor in the branch summary; the rest of the conversation is.
    let summaries: Vec<String> =
        server.requests().iter().map(|r| r.last_user()).filter(|u| u.contains("<conversation>")).collect();
    assert_eq!(summaries.len(), compaction_requests + 1, "{summaries:#?}");
    for s in &summaries {
        assert!(!s.contains("word0"), "an aborted reply reached a summary:\n{s}");
    }
    assert!(summaries[..compaction_requests].iter().any(|s| s.contains("[User]: a slow one")), "{summaries:#?}");
    assert!(summaries.last().unwrap().contains("[User]: a slow one"), "{}", summaries.last().unwrap());
    // The file keeps the aborted reply as it was.
    let all = dump_entries(&file);
    let aborted = all.iter().find(|e| e["message"]["stopReason"] == "aborted").unwrap();
    assert!(aborted["message"]["content"][0]["text"].as_str().unwrap().starts_with("word0 "));
}

#[test]
fn label_marks_the_last_message_and_says_which() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let url = server.openai();
    let (status, _, err) = script(
        dir.path(),
        &new_openai_chat(&file, &url, None),
        &[
            "hello",
            "/name trip",
            "/label first-reply",
            "/model openai/other-model",
            "/label",
            "/thinking high",
            "/label",
            "/quit",
        ],
    );
    assert!(status.success(), "{err}");
    // Entries: 1 model, 2 thinking, 3 user, 4 reply, 5 name, 6 label, 7 model, 8 label (cleared), 9 thinking.
    assert!(err.contains("Label set: first-reply on 00000004 (assistant: echo: hello)"), "{err}");
    assert!(err.contains("Label cleared on 00000004 (assistant: echo: hello)"), "{err}");
    assert!(err.contains("No label to clear on 00000004 (assistant: echo: hello)"), "{err}");
    assert_eq!(labels(&file), [("00000004".to_owned(), Some("first-reply".to_owned())), ("00000004".to_owned(), None)]);
    let tree = stdout(&arbor(&["tree", file.to_str().unwrap()]));
    assert!(!tree.contains("[first-reply]"), "{tree}");
}

#[test]
fn a_local_model_resumes_with_the_base_url_alone() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let url = server.openai();
    let (status, _, err) = script(dir.path(), &new_openai_chat(&file, &url, None), &["hello", "/quit"]);
    assert!(status.success(), "{err}");
    let (status, out, err) = script(dir.path(), &[file.to_str().unwrap(), "--base-url", &url], &["again", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("echo: again\n"), "{out}\n{err}");
    assert!(!err.contains("Could not restore") && !err.contains("No model"), "{err}");
    let path = path_json(&file);
    let reply = &path.last().unwrap()["message"];
    assert_eq!((reply["provider"].as_str(), reply["model"].as_str()), (Some("openai"), Some("test-model")));
}

#[test]
fn piped_chat_exits_non_zero_when_a_prompt_failed() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    // No model: refused.
    let (status, _, err) = script(dir.path(), &[file.to_str().unwrap(), "--new"], &["hello", "/quit"]);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("Error: No model selected"), "{err}");
    // The model fails: recorded as pi records it, and the exit code says so.
    let url = server.openai();
    let (status, _, err) = script(dir.path(), &new_openai_chat(&file, &url, None), &["please fail", "hello", "/quit"]);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("the server refuses this prompt"), "{err}");
    let path = path_json(&file);
    assert!(path.iter().any(|e| e["message"]["stopReason"] == "error"), "{:?}", shape(&path));
    assert_eq!(shape(&path).last().unwrap(), "assistant:echo: hello");
    // All well: 0.
    let (status, _, err) = script(dir.path(), &[file.to_str().unwrap(), "--base-url", &url], &["fine", "/quit"]);
    assert!(status.success(), "{err}");
}

#[test]
fn a_model_named_on_the_command_line_is_used_without_a_restore_warning() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let args = [file.to_str().unwrap(), "--new", "--model", "anthropic/claude-test", "--base-url", &server.base];
    let (status, _, err) = script(dir.path(), &args, &["hello", "/quit"]);
    assert!(status.success(), "{err}");
    let url = server.openai();
    let args = [file.to_str().unwrap(), "--model", "openai/test-model", "--base-url", &url];
    let (status, out, err) = script(dir.path(), &args, &["again", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("echo: again"), "{out}");
    assert!(!err.contains("Could not restore"), "{err}");
}

#[test]
fn tokens_after_a_compaction_are_those_of_the_context_as_it_is() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let cfg = config(dir.path(), "[compaction]\nkeepRecentTokens = 1\n");
    let url = server.openai();
    let (status, _, err) = script(
        dir.path(),
        &new_openai_chat(&file, &url, Some(&cfg)),
        &["hello", "second", "/context", "/compact", "/context", "/quit"],
    );
    assert!(status.success(), "{err}");
    let (before, after) = err.split_once("Compacted: ").unwrap();
    // Before: the last reply's usage (150) and what follows it.
    assert!(context_tokens(before) >= 150, "{before}");
    // After: an estimate of the summary and the kept messages, a few dozen tokens.
    let now = context_tokens(after);
    assert!(now < 100, "{after}");
    let text = stdout(&arbor(&["context", file.to_str().unwrap()]));
    assert!(text.trim_end().ends_with(&format!("~{now} tokens")), "{text}");
}

#[test]
fn fork_always_opens_the_message_selector_and_branch_keeps_pis_routing() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let url = server.openai();
    let (status, _, err) = script(dir.path(), &new_openai_chat(&file, &url, None), &["hello", "how are you", "/quit"]);
    assert!(status.success(), "{err}");
    let model = [file.to_str().unwrap(), "--model", "openai/test-model", "--base-url", &url];
    // doubleEscapeAction is `tree` (the default): /fork still picks a message, /branch opens the tree.
    let (status, out, err) = script(dir.path(), &model, &["/fork", "1", "/branch", "", "/help", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("1. hello\n2. how are you\n"), "{out}");
    assert!(err.contains("Branched to new session: ") && err.contains("Editor: hello"), "{err}");
    assert!(err.contains("Entry id (empty to cancel):"), "/branch opens the tree:\n{err}");
    let help = |cmd: &str| err.lines().find(|l| l.split_whitespace().next() == Some(cmd)).unwrap_or("").to_owned();
    assert!(help("/fork").contains("pick one of your messages"), "{err}");
    let branch = help("/branch");
    assert!(branch.contains("tree selector") && branch.contains("doubleEscapeAction"), "{err}");
}

#[test]
fn compact_on_a_small_session_says_so_and_sends_nothing() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let url = server.openai();
    let (status, _, err) = script(dir.path(), &new_openai_chat(&file, &url, None), &["hello", "/compact", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(err.contains("Nothing to compact yet"), "{err}");
    assert!(!err.contains("Compacted"), "{err}");
    assert_eq!(server.requests().len(), 1, "only the prompt went to the model");
    assert!(!dump_entries(&file).iter().any(|e| e["type"] == "compaction"));
    // `arbor compact` says so too (pi's words), and fails.
    let o = arbor(&["compact", file.to_str().unwrap(), "--model", "openai/test-model", "--base-url", &url]);
    assert_eq!(o.status.code(), Some(1));
    assert!(crate::stderr(&o).contains("Nothing to compact (session too small)"), "{}", crate::stderr(&o));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn bare_arbor_resumes_the_latest_session_of_the_directory() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let url = server.openai();
    let new = ["--new", "--model", "openai/test-model", "--base-url", url.as_str()];
    let (status, _, err) = script_with(dir.path(), &["chat"], &new, &[], &["hello", "/quit"]);
    assert!(status.success(), "{err}");
    let file = err.lines().find_map(|l| l.strip_prefix("arbor: New session: ")).unwrap().to_owned();
    // No arguments at all: the chat resumes that session (the base URL from the settings).
    let cfg = config(dir.path(), &format!("baseUrl = \"{url}\"\n"));
    let env = [("ARBOR_CONFIG", cfg.to_str().unwrap())];
    let (status, out, err) = script_with(dir.path(), &[], &[], &env, &["again", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("echo: again\n"), "{out}\n{err}");
    assert_eq!(shape(&path_json(Path::new(&file))).last().unwrap(), "assistant:echo: again");
    // In a directory without a session it says how to start one.
    let empty = tempfile::tempdir().unwrap();
    let (status, out, err) = script_with(empty.path(), &[], &[], &[], &[]);
    assert!(status.success(), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("No session in ") && err.contains("arbor chat --new --model PROVIDER/MODEL"), "{err}");
    assert!(!context_json(Path::new(&file))["messages"].as_array().unwrap().is_empty());
}
