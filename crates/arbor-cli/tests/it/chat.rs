//! `arbor chat` end to end: the real binary against a model server started
//! here (both APIs, streamed), driven line by line through standard input
//! (the terminal tests are in `chat_terminal.rs`). Every result is checked
//! afterwards through the file, with `arbor path --json`, `arbor context
//! --json` and `arbor dump --json`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::model_server::ModelServer;
use crate::{arbor, json};

/// How long any one step of a chat test may take on a loaded machine: the
/// tests wait on conditions, never for a fixed time, so load only slows them.
pub(crate) const DEADLINE: Duration = Duration::from_secs(90);

/// Waits until `done`; panics naming `what` after [`DEADLINE`].
pub(crate) fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "waited for {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// `arbor chat` with piped standard input, deterministic ids, no keys, no
/// settings but the ones given, run in `dir`.
pub(crate) struct ChatRun {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Arc<Mutex<String>>,
    err: Arc<Mutex<String>>,
    readers: Vec<thread::JoinHandle<()>>,
}

pub(crate) fn pump(mut from: impl Read + Send + 'static, to: Arc<Mutex<String>>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            to.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
}

impl ChatRun {
    pub(crate) fn start(dir: &Path, args: &[&str]) -> ChatRun {
        ChatRun::start_with(dir, &["chat"], args, &[])
    }

    /// `arbor COMMAND… ARGS…` with these extra environment variables.
    pub(crate) fn start_with(dir: &Path, command: &[&str], args: &[&str], env: &[(&str, &str)]) -> ChatRun {
        let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
            .args(command)
            .args(args)
            .env_remove("PI_CODING_AGENT_DIR")
            .env("ARBOR_IDS", "counter")
            .env("HOME", "/nonexistent-home")
            .env("ARBOR_SESSIONS_DIR", dir.join("sessions"))
            .env_remove("ARBOR_CONFIG")
            .env_remove("ARBOR_HOOKS")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = Arc::new(Mutex::new(String::new()));
        let err = Arc::new(Mutex::new(String::new()));
        let readers =
            vec![pump(child.stdout.take().unwrap(), out.clone()), pump(child.stderr.take().unwrap(), err.clone())];
        ChatRun { stdin: child.stdin.take(), child, out, err, readers }
    }

    pub(crate) fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn wait(&self, what: &str, on: &Arc<Mutex<String>>) {
        let start = Instant::now();
        loop {
            let s = on.lock().unwrap().clone();
            if s.contains(what) {
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "waited for {what:?}; stdout:\n{}\nstderr:\n{}",
                self.out.lock().unwrap(),
                self.err.lock().unwrap()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn wait_out(&self, what: &str) {
        self.wait(what, &self.out);
    }

    pub(crate) fn wait_err(&self, what: &str) {
        self.wait(what, &self.err);
    }

    pub(crate) fn interrupt(&self) {
        let status = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
    }

    /// Closes standard input and waits: (status, stdout, stderr).
    pub(crate) fn finish(mut self) -> (ExitStatus, String, String) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        for r in self.readers.drain(..) {
            r.join().unwrap();
        }
        let out = self.out.lock().unwrap().clone();
        let err = self.err.lock().unwrap().clone();
        (status, out, err)
    }
}

/// Runs a whole script at once.
pub(crate) fn script(dir: &Path, args: &[&str], lines: &[&str]) -> (ExitStatus, String, String) {
    script_with(dir, &["chat"], args, &[], lines)
}

/// Runs a whole script at once: `arbor COMMAND… ARGS…` with extra environment variables.
pub(crate) fn script_with(
    dir: &Path,
    command: &[&str],
    args: &[&str],
    env: &[(&str, &str)],
    lines: &[&str],
) -> (ExitStatus, String, String) {
    let mut run = ChatRun::start_with(dir, command, args, env);
    for l in lines {
        run.send(l);
    }
    run.finish()
}

pub(crate) fn path_json(file: &Path) -> Vec<Value> {
    json(&arbor(&["path", file.to_str().unwrap(), "--json"])).as_array().unwrap().clone()
}

pub(crate) fn context_json(file: &Path) -> Value {
    json(&arbor(&["context", file.to_str().unwrap(), "--json"]))
}

pub(crate) fn dump_entries(file: &Path) -> Vec<Value> {
    json(&arbor(&["dump", file.to_str().unwrap(), "--json"]))["entries"].as_array().unwrap().clone()
}

/// `type` or `type:role:text` of each entry, for comparing paths at a glance.
pub(crate) fn shape(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            let t = e["type"].as_str().unwrap().to_owned();
            match t.as_str() {
                "message" => {
                    let m = &e["message"];
                    let text: String = m["content"]
                        .as_array()
                        .map(|b| b.iter().filter_map(|b| b["text"].as_str()).collect())
                        .unwrap_or_else(|| m["content"].as_str().unwrap_or("").to_owned());
                    format!("{}:{}", m["role"].as_str().unwrap(), text)
                }
                "custom" => format!("custom:{}", e["customType"].as_str().unwrap()),
                _ => t,
            }
        })
        .collect()
}

pub(crate) fn roles(context: &Value) -> Vec<String> {
    context["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap().to_owned()).collect()
}

/// `FILE --new --model openai/test-model --base-url URL [--config CFG]`.
pub(crate) fn new_openai_chat<'a>(file: &'a Path, url: &'a str, cfg: Option<&'a Path>) -> Vec<&'a str> {
    let mut args = vec![file.to_str().unwrap(), "--new", "--model", "openai/test-model", "--base-url", url];
    if let Some(c) = cfg {
        args.extend(["--config", c.to_str().unwrap()]);
    }
    args
}

pub(crate) fn config(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("config.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_conversation_goes_back_with_tree_with_and_without_a_summary_and_labels() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let url = server.openai();
    let (status, out, err) = script(
        dir.path(),
        &new_openai_chat(&file, &url, None),
        &[
            "hello",
            "how are you",
            "/label second-turn",
            // Back to the first reply, no summary: a leaf marker makes the move durable.
            "/tree",
            "00000004",
            "1",
            "/name trip planning",
            "what now",
            // Back to the end of the first branch, with a summary of what is left.
            "/tree",
            "00000006",
            "2",
            "and then",
            "/context",
            "/quit",
        ],
    );
    assert!(status.success(), "{err}");
    assert!(out.contains("echo: hello\n") && out.contains("echo: how are you\n"), "{out}");
    assert!(out.contains("[second-turn]"), "the tree shows the label:\n{out}");
    assert!(err.contains("New session: ") && err.contains("Navigated to selected point"), "{err}");
    assert!(err.contains("Session name set: trip planning"), "{err}");
    assert!(err.contains("Context: "), "{err}");

    // The active path: the first branch, then the summary and the last turn.
    let path = path_json(&file);
    assert_eq!(
        shape(&path),
        [
            "model_change",
            "thinking_level_change",
            "user:hello",
            "assistant:echo: hello",
            "user:how are you",
            "assistant:echo: how are you",
            "branch_summary",
            "user:and then",
            "assistant:echo: and then",
        ]
    );
    assert_eq!(path[0]["provider"], "openai");
    assert_eq!(path[0]["modelId"], "test-model");
    assert_eq!(path[1]["thinkingLevel"], "off");
    let summary = &path[6];
    assert_eq!(summary["parentId"], "00000006");
    assert!(summary["summary"].as_str().unwrap().contains("SUMMARY 1"), "{summary}");
    // Replies are recorded as pi records them.
    let reply = &path[3]["message"];
    assert_eq!(reply["api"], "openai-completions");
    assert_eq!(reply["provider"], "openai");
    assert_eq!(reply["model"], "test-model");
    assert_eq!(reply["stopReason"], "stop");
    assert_eq!(reply["usage"]["input"], 120);
    assert_eq!(reply["usage"]["output"], 30);
    assert_eq!(reply["usage"]["totalTokens"], 150);
    assert!(reply["timestamp"].is_number());

    // Everything else is in the file too: the label, the marker, the name, the abandoned turn.
    let all = dump_entries(&file);
    let label = all.iter().find(|e| e["type"] == "label").unwrap();
    assert_eq!((label["targetId"].as_str(), label["label"].as_str()), (Some("00000006"), Some("second-turn")));
    let marker = all.iter().find(|e| e["customType"] == "arbor.leaf").unwrap();
    assert_eq!(marker["parentId"], "00000004");
    assert!(all.iter().any(|e| e["type"] == "session_info" && e["name"] == "trip planning"));
    assert!(shape(&all).contains(&"user:what now".to_owned()));

    // Each request carried exactly the context of its leaf.
    let turns = server.turns();
    assert_eq!(turns.len(), 4);
    assert_eq!(turns[1].transcript(), ["user: hello", "assistant: echo: hello", "user: how are you"]);
    assert_eq!(turns[2].transcript(), ["user: hello", "assistant: echo: hello", "user: what now"]);
    let last = turns[3].transcript();
    assert_eq!(last.len(), 6, "{last:?}");
    assert!(last[4].starts_with("user: The following is a summary of a branch"), "{last:?}");
    assert_eq!(last[5], "user: and then");

    let ctx = context_json(&file);
    assert_eq!(roles(&ctx), ["user", "assistant", "user", "assistant", "branchSummary", "user", "assistant"]);
    assert_eq!(ctx["model"]["provider"], "openai");
}

#[test]
fn anthropic_streaming_compact_and_abort_mid_stream() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let cfg = config(dir.path(), "[compaction]\nkeepRecentTokens = 1\n");
    let mut run = ChatRun::start(
        dir.path(),
        &[
            file.to_str().unwrap(),
            "--new",
            "--model",
            "anthropic/claude-test",
            "--base-url",
            &server.base,
            "--config",
            cfg.to_str().unwrap(),
        ],
    );
    run.send("hello");
    run.wait_out("echo: hello\n");
    run.send("second");
    run.wait_out("echo: second\n");
    run.send("/compact keep the names");
    run.wait_err("Compacted: ");
    run.send("tell me a slow story");
    wait_until("the slow reply", || server.slow_started());
    run.wait_out("word1 ");
    run.interrupt();
    run.wait_err("[aborted]");
    run.send("after the abort");
    run.wait_out("echo: after the abort\n");
    run.send("/quit");
    let (status, _out, err) = run.finish();
    assert!(status.success(), "{err}");
    wait_until("the aborted request to be dropped", || server.slow_dropped());

    let path = path_json(&file);
    let kinds: Vec<String> =
        shape(&path).into_iter().map(|s| s.split(':').take(2).collect::<Vec<_>>().join(":")).collect();
    assert_eq!(
        kinds,
        [
            "model_change",
            "thinking_level_change",
            "user:hello",
            "assistant:echo",
            "user:second",
            "assistant:echo",
            "compaction",
            "user:tell me a slow story",
            "assistant:word0 word1 ",
            "user:after the abort",
            "assistant:echo",
        ]
        .map(|s| s.split(':').take(2).collect::<Vec<_>>().join(":"))
    );
    let compaction = &path[6];
    assert!(compaction["summary"].as_str().unwrap().contains("SUMMARY 1"));
    let aborted = &path[8]["message"];
    assert_eq!(aborted["stopReason"], "aborted");
    // pi's Anthropic provider says it with a full stop (see the recorded fixtures).
    assert_eq!(aborted["errorMessage"], "Request was aborted.");
    assert_eq!(aborted["api"], "anthropic-messages");
    assert_eq!(aborted["provider"], "anthropic");
    assert!(aborted["content"][0]["text"].as_str().unwrap().starts_with("word0 word1 "), "{aborted}");
    let done = &path[10]["message"];
    assert_eq!(done["stopReason"], "stop");
    assert_eq!(done["usage"]["input"], 120);
    assert_eq!(done["usage"]["output"], 30);

    assert!(server.requests().iter().all(|r| r.path == "/v1/messages"));
    // The compaction's instructions reached the summarizer; the last turn started from the summary.
    let summaries: Vec<_> =
        server.requests().into_iter().filter(|r| r.last_user().contains("<conversation>")).collect();
    assert!(summaries.iter().any(|r| r.last_user().contains("keep the names")));
    let last = server.turns().last().unwrap().transcript();
    assert!(last[0].starts_with("user: The conversation history before this point was compacted"), "{last:?}");
    let ctx = context_json(&file);
    assert_eq!(roles(&ctx)[0], "compactionSummary");
    assert_eq!(roles(&ctx).last().unwrap(), "assistant");
}

#[test]
fn branch_forks_into_a_new_file_and_the_chat_goes_on_there() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let url = server.openai();
    let model = ["--model", "openai/test-model", "--base-url", url.as_str()];
    let mut args = vec![file.to_str().unwrap(), "--new"];
    args.extend(model);
    let (status, _, err) = script(dir.path(), &args, &["hello", "how are you", "/quit"]);
    assert!(status.success(), "{err}");
    let before = std::fs::read(&file).unwrap();

    // /branch opens the message selector when doubleEscapeAction is not "tree" (pi's default is "tree").
    let cfg = config(dir.path(), "doubleEscapeAction = \"branch\"\n");
    let mut args = vec![file.to_str().unwrap(), "--config", cfg.to_str().unwrap()];
    args.extend(model);
    let (status, out, err) = script(dir.path(), &args, &["/branch", "2", "a different question", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("1. hello\n2. how are you\n"), "{out}");
    assert!(err.contains("Editor: how are you"), "{err}");
    let new_file = err.lines().find_map(|l| l.strip_prefix("Branched to new session: ")).unwrap();
    let new_file = PathBuf::from(new_file);
    assert_ne!(new_file, file);
    assert_eq!(std::fs::read(&file).unwrap(), before, "the original file is untouched");

    assert_eq!(
        shape(&path_json(&new_file)),
        [
            "model_change",
            "thinking_level_change",
            "user:hello",
            "assistant:echo: hello",
            "user:a different question",
            "assistant:echo: a different question",
        ]
    );
    let header = &json(&arbor(&["dump", new_file.to_str().unwrap(), "--json"]))["header"];
    assert_eq!(header["parentSession"].as_str().unwrap(), file.canonicalize().unwrap().to_str().unwrap());

    // With doubleEscapeAction = "tree" (the default), /branch opens the tree instead.
    let mut args = vec![file.to_str().unwrap()];
    args.extend(model);
    let (status, out, err) = script(dir.path(), &args, &["/branch", "", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(err.contains("Entry id (empty to cancel):") && out.contains("echo: how are you"), "{out}\n{err}");
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[test]
fn automatic_compaction_near_the_window_is_shown_and_written() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    // 150 tokens of usage against a 200-token window with 100 reserved: over the threshold.
    let cfg = config(dir.path(), "contextWindow = 200\n[compaction]\nreserveTokens = 100\nkeepRecentTokens = 1\n");
    let url = server.openai();
    let (status, _out, err) =
        script(dir.path(), &new_openai_chat(&file, &url, Some(&cfg)), &["hello", "second", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(err.contains("Auto-compacting (threshold)..."), "{err}");
    assert!(err.contains("Compacted: "), "{err}");
    let all = dump_entries(&file);
    assert!(all.iter().any(|e| e["type"] == "compaction"), "{:?}", shape(&all));
    assert_eq!(roles(&context_json(&file))[0], "compactionSummary");
}

#[test]
fn refusals_are_one_line_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let (status, _, err) = script(dir.path(), &[file.to_str().unwrap()], &[]);
    assert!(!status.success());
    assert!(err.contains("no such session file (use --new to start one there)"), "{err}");
    let (status, _, err) = script(dir.path(), &[file.to_str().unwrap(), "--new", "--model", "nowhere/x"], &[]);
    assert!(!status.success());
    assert!(err.contains("unknown model \"nowhere/x\""), "{err}");
    // No model: the prompt is refused before anything is written.
    let (status, _, err) =
        script(dir.path(), &[file.to_str().unwrap(), "--new"], &["hello", "/thinking loud", "/quit"]);
    assert_eq!(status.code(), Some(1), "a refused prompt is a failure: {err}");
    assert!(err.contains("Error: No model selected"), "{err}");
    assert!(err.contains("Invalid thinking level"), "{err}");
    assert!(!file.exists() || !std::fs::read_to_string(&file).unwrap().contains("\"user\""));
    let cfg = config(dir.path(), "modle = \"openai/x\"\n");
    let (status, _, err) =
        script(dir.path(), &[file.to_str().unwrap(), "--new", "--config", cfg.to_str().unwrap()], &[]);
    assert!(!status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("config.toml: bad settings"), "{err}");
}

#[test]
fn model_and_thinking_changes_are_recorded() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    let url = server.openai();
    let (status, _, err) = script(
        dir.path(),
        &new_openai_chat(&file, &url, None),
        &["hello", "/model openai/other-model", "/thinking high", "/thinking high", "/model", "again", "/quit"],
    );
    assert!(status.success(), "{err}");
    assert!(err.contains("Model: openai/other-model") && err.contains("Thinking level is already high"), "{err}");
    let path = path_json(&file);
    assert_eq!(
        shape(&path),
        [
            "model_change",
            "thinking_level_change",
            "user:hello",
            "assistant:echo: hello",
            "model_change",
            "thinking_level_change",
            "user:again",
            "assistant:echo: again",
        ]
    );
    assert_eq!(path[4]["modelId"], "other-model");
    assert_eq!(path[5]["thinkingLevel"], "high");
    assert_eq!(path[7]["message"]["model"], "other-model");
    assert_eq!(server.turns()[1].body["model"], "other-model");
    let ctx = context_json(&file);
    assert_eq!(ctx["thinkingLevel"], "high");
    assert_eq!(ctx["model"]["modelId"], "other-model");
}

#[test]
fn hooks_from_the_settings_fire_in_the_chat() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.jsonl");
    // The hooks file is named relative to the settings file.
    std::fs::write(
        dir.path().join("hooks.toml"),
        "[[hooks]]\nevent = \"session_before_tree\"\ncommand = \"cat > /dev/null; printf '%s' '{\\\"summary\\\": {\\\"summary\\\": \\\"From the hook\\\"}}'\"\n\
         [[hooks]]\nevent = \"session_before_compact\"\ncommand = \"cat > /dev/null; echo '{\\\"cancel\\\": true}'\"\n",
    )
    .unwrap();
    let cfg = config(dir.path(), "hooks = \"hooks.toml\"\n[compaction]\nkeepRecentTokens = 1\n");
    let url = server.openai();
    let (status, _out, err) = script(
        dir.path(),
        &new_openai_chat(&file, &url, Some(&cfg)),
        &["hello", "second", "/tree", "00000004", "2", "/compact", "/quit"],
    );
    assert!(status.success(), "{err}");
    assert!(err.contains("Navigated to selected point"), "{err}");
    // A cancelled /compact is said so, not reported as an error (#34).
    assert!(err.contains("Compaction cancelled") && !err.contains("Error: Compaction cancelled"), "{err}");
    let path = path_json(&file);
    let summary = path.iter().find(|e| e["type"] == "branch_summary").unwrap();
    assert_eq!(summary["summary"], "From the hook");
    assert_eq!(summary["fromHook"], true);
    assert!(!dump_entries(&file).iter().any(|e| e["type"] == "compaction"));
    assert_eq!(server.requests().len(), 2, "the hook's summary is used instead of the model");
}

/// `arbor chat FILE --bench` (what `cargo xtask bench --tui` times): the
/// chat's first screen drawn with no terminal and no model, its steps
/// timed, the context it was set up with the file's, nothing written.
#[test]
fn the_chat_bench_draws_the_first_screen_without_a_terminal_or_a_model() {
    let file = "pi/before-compaction.jsonl";
    let dir = arbor_test_support::fixtures().join("pi");
    let before = arbor_test_support::DirSnapshot::of(&dir);
    let o = arbor(&["chat", file, "--bench"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<Value> =
        String::from_utf8(o.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let steps: Vec<&str> = lines.iter().filter_map(|l| l["step"].as_str()).collect();
    assert_eq!(
        steps,
        [
            "open the session",
            "the chat over it (the context at the leaf)",
            "the first screen drawn",
            "first frame (from the start)"
        ]
    );
    assert!(lines.iter().filter(|l| l.get("step").is_some()).all(|l| l["ms"].as_f64().is_some_and(|ms| ms >= 0.0)));
    let summary = lines.last().unwrap();
    assert_eq!(summary["summary"], true);
    let context = json(&arbor(&["context", file, "--json"]));
    assert_eq!(summary["context messages"], context["messages"].as_array().unwrap().len());
    assert!(lines[2]["shown"].as_u64().unwrap() > 0, "{lines:?}");
    assert_eq!(arbor_test_support::DirSnapshot::of(&dir), before, "the bench wrote beside the file");
}
