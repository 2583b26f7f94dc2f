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
