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
