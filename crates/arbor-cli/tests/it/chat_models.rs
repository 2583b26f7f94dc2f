//! The chat's models against the local model server: the token estimate of
//! a server that reports no usage, the OpenAI Responses API, and switching
//! models (the `/model` picker, Ctrl+P).

use crate::chat::{config, new_openai_chat, script};
use crate::model_server::ModelServer;

/// A prompt of about `tokens` tokens (four characters each) whose reply reports zero usage.
fn no_usage_prompt(tokens: usize) -> String {
    format!("[no usage] {}", "word ".repeat(tokens * 4 / 5))
}

#[test]
fn a_server_reporting_no_usage_still_gets_a_token_estimate_and_auto_compaction() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.jsonl");
    let url = server.openai();
    // A 2000-token window with 1000 reserved: past 1000 tokens the context is compacted.
    let cfg = config(dir.path(), "contextWindow = 2000\n[compaction]\nreserveTokens = 1000\nkeepRecentTokens = 10\n");
    let (first, second) = (no_usage_prompt(300), no_usage_prompt(300));
    let (status, _, err) =
        script(dir.path(), &new_openai_chat(&file, &url, Some(&cfg)), &[&first, "/context", &second, "/quit"]);
    assert!(status.success(), "{err}");
    // About 600 tokens after the first exchange (its usage says 0): the estimate from the text.
    let context = err.lines().find(|l| l.starts_with("Context: ")).unwrap();
    let tokens: u64 = context.split("about ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((500..800).contains(&tokens), "{context}");
    // The second exchange passes the threshold: the context is compacted (the server was asked for a summary).
    assert!(err.contains("Auto-compacting (threshold)"), "{err}");
    assert!(server.requests().iter().any(|r| r.last_user().contains("<conversation>")), "no summary request");
}

/// A pi agent directory whose `oai` provider speaks the Responses API at
/// the server (model `gpt-r`), with a `gem` model of an API Arbor does not speak.
fn responses_agent_dir(dir: &std::path::Path, server: &ModelServer) -> std::path::PathBuf {
    let agent = dir.join("pi-agent");
    std::fs::create_dir_all(&agent).unwrap();
    let models = serde_json::json!({"providers": {"oai": {
        "baseUrl": server.openai(), "api": "openai-responses", "apiKey": "OAI_KEY",
        "models": [{"id": "gpt-r", "contextWindow": 64000}, {"id": "gem", "api": "google-generative-ai"}]
    }}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    agent
}

#[test]
fn an_openai_responses_model_speaks_the_responses_api_streamed() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let agent = responses_agent_dir(dir.path(), &server);
    let file = dir.path().join("c.jsonl");
    let env = [("PI_CODING_AGENT_DIR", agent.to_str().unwrap()), ("OAI_KEY", "sekrit")];
    let args = [file.to_str().unwrap(), "--new", "--model", "oai/gpt-r"];
    let (status, out, err) =
        crate::chat::script_with(dir.path(), &["chat"], &args, &env, &["hello", "and again", "/quit"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("echo: hello\n") && out.contains("echo: and again\n"), "{out}\n{err}");
    assert!(!err.contains("oai/gpt-r: API"), "gpt-r is not left out: {err}");
    let turns = server.turns();
    assert_eq!(turns.len(), 2);
    assert!(turns.iter().all(|t| t.path == "/v1/responses"), "{:?}", turns.iter().map(|t| &t.path).collect::<Vec<_>>());
    let body = &turns[1].body;
    assert_eq!(
        (body["model"].as_str(), body["stream"].as_bool(), body["store"].as_bool()),
        (Some("gpt-r"), Some(true), Some(false))
    );
    assert_eq!(
        body["input"],
        serde_json::json!([
            {"role": "user", "content": [{"type": "input_text", "text": "hello"}]},
            {"role": "assistant", "content": "echo: hello"},
            {"role": "user", "content": [{"type": "input_text", "text": "and again"}]},
        ])
    );
    assert_eq!(turns[1].auth.as_deref(), Some("Bearer sekrit"));
    // Recorded as pi records a Responses reply, with the server's usage.
    let last = crate::chat::path_json(&file).pop().unwrap();
    assert_eq!(last["message"]["api"], "openai-responses");
    assert_eq!(last["message"]["usage"]["totalTokens"], 150);
}

#[test]
fn a_model_of_an_api_arbor_does_not_speak_is_refused_and_never_sent() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let agent = responses_agent_dir(dir.path(), &server);
    let file = dir.path().join("c.jsonl");
    let env = [("PI_CODING_AGENT_DIR", agent.to_str().unwrap()), ("OAI_KEY", "k")];
    let args = [file.to_str().unwrap(), "--new", "--model", "oai/gem"];
    let (status, _, err) = crate::chat::script_with(dir.path(), &["chat"], &args, &env, &["hello", "/quit"]);
    assert!(!status.success());
    assert!(
        err.contains("model \"oai/gem\" cannot be used: its API \"google-generative-ai\" is not one Arbor speaks"),
        "{err}"
    );
    assert!(server.requests().is_empty(), "nothing was sent over another API");
}
