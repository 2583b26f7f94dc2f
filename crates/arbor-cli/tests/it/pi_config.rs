//! A pi user's setup carries over: the providers and models of pi's
//! `models.json` and the defaults of its `settings.json` (in
//! `$PI_CODING_AGENT_DIR`) work with no flags, below Arbor's own settings
//! file and the flags.

use std::path::{Path, PathBuf};

use crate::chat::{config, path_json, script_with, shape};
use crate::model_server::ModelServer;
use crate::stderr;

/// A pi agent directory: a `local` provider at the model server (key in
/// `LOCAL_LLM_KEY`), its model `small` (4096 tokens, reasoning), and
/// settings naming it, with thinking `low`, `doubleEscapeAction` `fork`,
/// `keepRecentTokens` 1 and `reserveTokens` 100.
pub(crate) fn pi_agent_dir(dir: &Path, server: &ModelServer) -> PathBuf {
    let agent = dir.join("pi-agent");
    std::fs::create_dir_all(&agent).unwrap();
    let models = serde_json::json!({
        "providers": {
            "local": {
                "baseUrl": server.openai(),
                "api": "openai-completions",
                "apiKey": "LOCAL_LLM_KEY",
                // pi's files may carry comments and trailing commas; this one is plain JSON.
                "models": [{"id": "small", "contextWindow": 4096, "reasoning": true}]
            }
        }
    });
    std::fs::write(agent.join("models.json"), serde_json::to_string_pretty(&models).unwrap()).unwrap();
    std::fs::write(
        agent.join("settings.json"),
        "{\n  // pi allows comments here\n  \"defaultProvider\": \"local\",\n  \"defaultModel\": \"small\",\n  \"defaultThinkingLevel\": \"low\",\n  \"doubleEscapeAction\": \"fork\",\n  \"theme\": \"dark\",\n  \"compaction\": {\"keepRecentTokens\": 1, \"reserveTokens\": 100},\n}\n",
    )
    .unwrap();
    agent
}

#[test]
fn a_pi_users_models_and_settings_work_with_no_flags() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let agent = pi_agent_dir(dir.path(), &server);
    let file = dir.path().join("chat.jsonl");
    let env = [("PI_CODING_AGENT_DIR", agent.to_str().unwrap()), ("LOCAL_LLM_KEY", "sekrit")];
    let f = file.to_str().unwrap();
    let (status, out, err) =
        script_with(dir.path(), &["chat"], &[f, "--new"], &env, &["hello", "second", "/context", "/compact", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("echo: hello\n"), "{out}\n{err}");
    assert!(err.contains("of 4096"), "the window comes from models.json:\n{err}");
    assert!(err.contains("Compacted: "), "keepRecentTokens comes from settings.json:\n{err}");
    let path = path_json(&file);
    assert_eq!((path[0]["provider"].as_str(), path[0]["modelId"].as_str()), (Some("local"), Some("small")));
    assert_eq!(path[1]["thinkingLevel"], "low");
    let turn = &server.turns()[0];
    assert_eq!(turn.body["model"], "small");
    assert_eq!(turn.body["reasoning_effort"], "low", "a reasoning model gets the thinking level");
    assert_eq!(turn.auth.as_deref(), Some("Bearer sekrit"), "the key from the variable models.json names");

    // Resumed with no flags; doubleEscapeAction `fork` makes /branch pick a message.
    let (status, out, err) = script_with(dir.path(), &["chat"], &[f], &env, &["again", "/branch", "", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("echo: again\n") && out.contains("1. hello\n"), "{out}\n{err}");
    assert!(!err.contains("Could not restore") && !err.contains("unknown provider"), "{err}");
    assert_eq!(shape(&path_json(&file)).last().unwrap(), "assistant:echo: again");

    // `navigate --summarize` and `compact` find the model the same way.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["navigate", f, "00000004", "--summarize"])
        .envs(env)
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", crate::cache_dir())
        .env_remove("ARBOR_CONFIG")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(server.requests().last().unwrap().last_user().contains("<conversation>"));
}

#[test]
fn arbors_settings_and_flags_win_over_pis() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let agent = pi_agent_dir(dir.path(), &server);
    let url = server.openai();
    let cfg = config(dir.path(), &format!("model = \"openai/from-arbor\"\nbaseUrl = \"{url}\"\n"));
    let env = [("PI_CODING_AGENT_DIR", agent.to_str().unwrap()), ("ARBOR_CONFIG", cfg.to_str().unwrap())];
    let a = dir.path().join("a.jsonl");
    let (status, _, err) =
        script_with(dir.path(), &["chat"], &[a.to_str().unwrap(), "--new"], &env, &["hello", "/quit"]);
    assert!(status.success(), "{err}");
    assert_eq!(path_json(&a)[0]["modelId"], "from-arbor");
    let b = dir.path().join("b.jsonl");
    let args = [b.to_str().unwrap(), "--new", "--model", "local/flagged"];
    let (status, _, err) = script_with(dir.path(), &["chat"], &args, &env, &["hello", "/quit"]);
    assert!(status.success(), "{err}");
    assert_eq!(path_json(&b)[0]["modelId"], "flagged");
    assert_eq!(server.turns().last().unwrap().body["model"], "flagged");
}

#[test]
fn a_broken_models_json_is_named_and_the_rest_still_works() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let agent = pi_agent_dir(dir.path(), &server);
    std::fs::write(agent.join("models.json"), "{\"providers\": {\"local\": {\"models\": [{\"id\": 3}]}}}").unwrap();
    let file = dir.path().join("c.jsonl");
    let url = server.openai();
    let args = [file.to_str().unwrap(), "--new", "--model", "openai/test-model", "--base-url", url.as_str()];
    let env = [("PI_CODING_AGENT_DIR", agent.to_str().unwrap())];
    let (status, out, err) = script_with(dir.path(), &["chat"], &args, &env, &["hello", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("echo: hello"), "{out}");
    let warning = err.lines().find(|l| l.contains("models.json")).unwrap_or_default();
    assert!(warning.contains(agent.join("models.json").to_str().unwrap()) && warning.contains("ignored"), "{err}");
}

/// A session that last talked to `fake/echo-1`, a provider only a (now
/// broken or missing) `models.json` knew.
fn session_of_a_lost_provider(file: &Path) {
    let header = serde_json::json!({"type": "session", "version": 3, "id": "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f",
        "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/w"});
    let lines = [
        header,
        serde_json::json!({"type": "model_change", "id": "0000000a", "parentId": null,
            "timestamp": "2026-01-02T03:04:05.000Z", "provider": "fake", "modelId": "echo-1"}),
        serde_json::json!({"type": "message", "id": "0000000b", "parentId": "0000000a", "timestamp": "2026-01-02T03:04:06.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "first"}], "timestamp": 1}}),
        serde_json::json!({"type": "message", "id": "0000000c", "parentId": "0000000b", "timestamp": "2026-01-02T03:04:07.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "an answer"}], "api": "openai-completions",
                "provider": "fake", "model": "echo-1", "stopReason": "stop", "timestamp": 2,
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}}}),
        serde_json::json!({"type": "message", "id": "0000000d", "parentId": "0000000c", "timestamp": "2026-01-02T03:04:08.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "second"}], "timestamp": 3}}),
        serde_json::json!({"type": "message", "id": "0000000e", "parentId": "0000000d", "timestamp": "2026-01-02T03:04:09.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "another"}], "api": "openai-completions",
                "provider": "fake", "model": "echo-1", "stopReason": "stop", "timestamp": 4,
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(file, text).unwrap();
}

/// `arbor ARGS` with pi's agent directory `agent` and its key, in `dir`.
fn arbor_with_pi(dir: &Path, agent: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .env("PI_CODING_AGENT_DIR", agent)
        .env("LOCAL_LLM_KEY", "k")
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", crate::cache_dir())
        .env_remove("ARBOR_CONFIG")
        .env_remove("OPENAI_API_KEY")
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn a_session_whose_model_is_gone_falls_back_to_pis_default_model_in_chat_compact_and_navigate() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let agent = pi_agent_dir(dir.path(), &server);
    // The session last used `fake`, which no models.json defines any more; settings.json names `local/small`.
    let file = dir.path().join("lost.jsonl");
    session_of_a_lost_provider(&file);
    let f = file.to_str().unwrap();
    let env = [("PI_CODING_AGENT_DIR", agent.to_str().unwrap()), ("LOCAL_LLM_KEY", "k")];
    let (status, out, err) = script_with(dir.path(), &["chat"], &[f], &env, &["third", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("echo: third"), "{out}\n{err}");
    assert!(err.contains("Could not restore model fake/echo-1: unknown provider fake"), "{err}");
    assert!(err.contains("Using the default model local/small instead"), "{err}");
    assert!(!err.contains("OPENAI_API_KEY"), "no hint about a key that is not the problem: {err}");
    let turn = server.turns().pop().unwrap();
    assert_eq!(turn.body["model"], "small", "pi's default model was asked");
    assert_eq!(path_json(&file).last().unwrap()["message"]["provider"], "local");

    // compact and navigate --summarize fall back the same way (on a copy that still ends with fake's reply).
    session_of_a_lost_provider(&file);
    let o = arbor_with_pi(dir.path(), &agent, &["compact", f, "--keep-recent-tokens", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("Using the default model local/small instead"), "{}", stderr(&o));
    let summary = server.requests().pop().unwrap();
    assert!(summary.last_user().contains("<conversation>") && summary.body["model"] == "small");
    session_of_a_lost_provider(&file);
    let o = arbor_with_pi(dir.path(), &agent, &["navigate", f, "0000000b", "--summarize"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary = server.requests().pop().unwrap();
    assert!(summary.last_user().contains("<conversation>") && summary.body["model"] == "small");
}

#[test]
fn a_model_of_a_broken_models_json_is_refused_naming_the_file() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let agent = pi_agent_dir(dir.path(), &server);
    std::fs::write(agent.join("models.json"), "{\"providers\": {\"fake\": {\"models\": [{\"id\": 3}]}}}").unwrap();
    let file = dir.path().join("c.jsonl");
    let env = [("PI_CODING_AGENT_DIR", agent.to_str().unwrap())];
    let args = [file.to_str().unwrap(), "--new", "--model", "fake/echo-1"];
    let (status, _, err) = script_with(dir.path(), &["chat"], &args, &env, &["hello", "/quit"]);
    assert!(!status.success());
    let line = err.lines().find(|l| l.contains("unknown model \"fake/echo-1\"")).unwrap_or_default();
    assert!(line.contains(agent.join("models.json").to_str().unwrap()) && line.contains("bad models.json"), "{err}");
}
