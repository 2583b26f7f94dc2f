//! `navigate`, `fork --before` and `compact` through the real binary, against
//! a model server started here on 127.0.0.1:0, and with command hooks.

use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::Value;

use crate::{arbor, fixtures, json, stderr, stdout};

/// An OpenAI-compatible server that answers every chat completion with a
/// streamed `reply` and records the request bodies.
struct MockModel {
    url: String,
    bodies: Arc<Mutex<Vec<String>>>,
}

impl MockModel {
    fn start(reply: &str) -> MockModel {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(vec![]));
        let seen = bodies.clone();
        let reply = reply.to_owned();
        thread::spawn(move || {
            // Bounded: a test never needs more than a few requests.
            for stream in listener.incoming().take(16) {
                let Ok(mut stream) = stream else { continue };
                let Some((_, body)) = crate::model_server::read_request(&stream) else { continue };
                seen.lock().unwrap().push(String::from_utf8_lossy(&body).into_owned());
                if reply == "<hang>" {
                    // Never answer: the client has to give up (or be aborted).
                    thread::sleep(std::time::Duration::from_secs(60));
                    continue;
                }
                let chunk = serde_json::json!({"id": "c1", "object": "chat.completion.chunk", "model": "test-model",
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": reply}}]});
                let end = serde_json::json!({"id": "c1", "object": "chat.completion.chunk", "model": "test-model",
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}});
                let sse = format!("data: {chunk}\n\ndata: {end}\n\ndata: [DONE]\n\n");
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{sse}",
                    sse.len()
                );
            }
        });
        MockModel { url, bodies }
    }

    fn requests(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }
}

fn demo_copy(dir: &Path) -> PathBuf {
    let file = dir.join("demo.jsonl");
    fs::copy(fixtures().join("demo/demo.jsonl"), &file).unwrap();
    file
}

fn last_entry(file: &Path) -> Value {
    serde_json::from_str(fs::read_to_string(file).unwrap().lines().last().unwrap()).unwrap()
}

#[test]
fn navigate_with_a_model_summary() {
    let dir = tempfile::tempdir().unwrap();
    let file = demo_copy(dir.path());
    let f = file.to_str().unwrap();
    let model = MockModel::start("## Goal\nTry clap.");
    let r = json(&arbor(&[
        "navigate",
        f,
        "b75648f5",
        "--summarize",
        "--instructions",
        "MONKEY",
        "--model",
        "openai/test-model",
        "--base-url",
        &model.url,
        "--json",
    ]));
    assert_eq!(r["cancelled"], false);
    assert_eq!(r["oldLeafId"], "6a490938");
    assert_eq!(r["editorText"], "Add a --top N flag using clap.");
    let summary_id = r["summaryEntryId"].as_str().unwrap();
    assert_eq!(r["newLeafId"], summary_id);
    let reqs = model.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].contains("<conversation>"), "{}", reqs[0]);
    assert!(reqs[0].contains("Additional focus: MONKEY"));
    // The summary sits at the new position (the parent of the selected user message).
    let e = last_entry(&file);
    assert_eq!(e["type"], "branch_summary");
    assert_eq!(e["id"], summary_id);
    assert_eq!(e["parentId"], "f91f94da");
    assert_eq!(e["fromId"], "f91f94da");
    assert!(e["summary"].as_str().unwrap().starts_with(
        "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n## Goal\nTry clap."
    ));
    // The file stays a valid session whose context ends with the summary.
    let ctx = json(&arbor(&["context", f, "--json"]));
    assert_eq!(ctx["messages"].as_array().unwrap().last().unwrap()["role"], "branchSummary");
}

#[test]
fn navigate_without_summary_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let file = demo_copy(dir.path());
    let f = file.to_str().unwrap();
    let r = json(&arbor(&["navigate", f, "4f487dd5", "--json"]));
    assert_eq!(r["newLeafId"], "4f487dd5");
    assert!(r["summaryEntryId"].is_null());
    // Reopening resumes at the new position, by pi's rule (last entry) too.
    let e = last_entry(&file);
    assert_eq!(e["customType"], "arbor.leaf");
    assert_eq!(e["parentId"], "4f487dd5");
    let path: Vec<Value> = json(&arbor(&["path", f, "--json"])).as_array().unwrap().clone();
    assert_eq!(path[path.len() - 2]["id"], "4f487dd5");
}

#[test]
fn a_command_hook_supplies_the_summary_and_one_cancels() {
    let dir = tempfile::tempdir().unwrap();
    let file = demo_copy(dir.path());
    let f = file.to_str().unwrap();
    let model = MockModel::start("unused");
    let hooks = dir.path().join("hooks.toml");
    fs::write(
        &hooks,
        "[[hooks]]\nevent = \"session_before_tree\"\ncommand = \"cat > /dev/null; printf '%s' '{\\\"summary\\\": {\\\"summary\\\": \\\"From the hook\\\"}}'\"\n",
    )
    .unwrap();
    let r = json(&arbor(&[
        "navigate",
        f,
        "a3b3dbef",
        "--summarize",
        "--model",
        "openai/test-model",
        "--base-url",
        &model.url,
        "--hooks",
        hooks.to_str().unwrap(),
        "--json",
    ]));
    assert!(model.requests().is_empty(), "the hook's summary is used instead of the model");
    let e = last_entry(&file);
    assert_eq!(e["id"], r["summaryEntryId"]);
    assert_eq!(e["summary"], "From the hook");
    assert_eq!(e["fromHook"], true);

    let cancel = dir.path().join("cancel.json");
    fs::write(
        &cancel,
        r#"{"hooks": [{"event": "session_before_tree", "command": "cat > /dev/null; echo '{\"cancel\": true}'"}]}"#,
    )
    .unwrap();
    let before = fs::read(&file).unwrap();
    let o = arbor(&["navigate", f, "0866b2b1", "--hooks", cancel.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["cancelled"], true);
    assert_eq!(fs::read(&file).unwrap(), before, "a cancelled navigation writes nothing");
}

#[test]
fn summarizing_without_a_model_fails_at_once_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = demo_copy(dir.path());
    let before = fs::read(&file).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["navigate", file.to_str().unwrap(), "0866b2b1", "--summarize"])
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("No model available for summarization"), "{}", stderr(&o));
    assert_eq!(fs::read(&file).unwrap(), before);
}

#[test]
fn fork_before_a_user_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = demo_copy(dir.path());
    let f = file.to_str().unwrap();
    let before = fs::read(&file).unwrap();
    let r = json(&arbor(&["fork", f, "--before", "34c4b0d0", "--json"]));
    assert_eq!(r["editorText"], "Add a --top N flag, but parse the arguments by hand (no new dependencies).");
    let new_path = r["path"].as_str().unwrap();
    let non_labels = |file: &str, at: Option<&str>| -> Vec<Value> {
        let mut args = vec!["path", file];
        args.extend(at);
        args.push("--json");
        json(&arbor(&args))
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] != "label")
            .map(|e| e["id"].clone())
            .collect()
    };
    // The new session is the path up to the parent of the user message (labels re-created after it).
    assert_eq!(non_labels(new_path, None), non_labels(f, Some("f91f94da")));
    assert_eq!(fs::read(&file).unwrap(), before, "the source is untouched");
    let o = arbor(&["fork", f, "--before", "a3b3dbef"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("Invalid entry ID for forking"), "{}", stderr(&o));
}

#[test]
fn compact_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let file = demo_copy(dir.path());
    let f = file.to_str().unwrap();
    let model = MockModel::start("## Goal\nShip wordfreq.");
    let r = json(&arbor(&[
        "compact",
        f,
        "--keep-recent-tokens",
        "200",
        "--model",
        "openai/test-model",
        "--base-url",
        &model.url,
        "--json",
    ]));
    assert!(r["tokensBefore"].as_u64().unwrap() > 0);
    let e = last_entry(&file);
    assert_eq!(e["type"], "compaction");
    assert_eq!(e["id"], r["entryId"]);
    assert_eq!(e["fromHook"], false);
    let ctx = json(&arbor(&["context", f, "--json"]));
    assert_eq!(ctx["messages"][0]["role"], "compactionSummary");
    assert!(ctx["messages"][0]["summary"].as_str().unwrap().starts_with("## Goal\nShip wordfreq."));
    assert!(stdout(&arbor(&["check", f])).contains("ok"));
}

#[test]
fn ctrl_c_during_a_summary_aborts_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = demo_copy(dir.path());
    let before = fs::read(&file).unwrap();
    let model = MockModel::start("<hang>");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args([
            "navigate",
            file.to_str().unwrap(),
            "b75648f5",
            "--summarize",
            "--model",
            "openai/test-model",
            "--base-url",
            &model.url,
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (bounded) until the request is in flight, then press Ctrl-C.
    for _ in 0..200 {
        if !model.requests().is_empty() {
            break;
        }
        thread::sleep(std::time::Duration::from_millis(25));
    }
    assert_eq!(model.requests().len(), 1, "the summary request was sent");
    let status = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let o = child.wait_with_output().unwrap();
    let r: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    assert_eq!(r["aborted"], true, "stdout {} stderr {}", stdout(&o), stderr(&o));
    assert_eq!(r["cancelled"], true);
    assert_eq!(fs::read(&file).unwrap(), before, "an aborted summary writes nothing");
}
