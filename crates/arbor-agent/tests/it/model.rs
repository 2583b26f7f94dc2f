//! The model clients against the mock server: streaming, mapping to pi's
//! assistant message, retries, errors, cancellation.

use std::time::Duration;

use arbor_agent::model::{
    client_for, AnthropicClient, AssistantReply, CompletionRequest, ModelClient, ModelError, OpenAiClient,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::mock::{anthropic_events, MockServer, Reply};
use crate::*;

fn request() -> CompletionRequest {
    CompletionRequest {
        system_prompt: Some("be brief".into()),
        messages: vec![
            user("hello"),
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "reasoning_content"},
                {"type": "text", "text": "let me look"},
                {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.rs"}}
            ]}),
            json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "read", "content": [{"type": "text", "text": "fn main() {}"}], "isError": false}),
        ],
        max_tokens: Some(100),
        reasoning: None,
    }
}

#[tokio::test]
async fn openai_streams_into_pi_shape() {
    let mock = MockServer::start().await;
    let client = OpenAiClient::new(openai_model(&mock), Some("sk-test".into()), fast_client()).unwrap();
    let reply = client.complete(&request(), CancellationToken::new()).await.unwrap();
    assert_eq!(
        reply.json(),
        &json!({
            "role": "assistant",
            "content": [{"type": "text", "text": "mock summary"}],
            "api": "openai-completions",
            "provider": "openai-compat",
            "model": "gpt-test",
            "usage": {"input": 100, "output": 30, "cacheRead": 20, "cacheWrite": 0, "totalTokens": 150,
                      // Written as pi writes it: `0`, not `0.0`.
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "stop",
            "timestamp": 1_767_225_700_000i64
        })
    );
    let req = &mock.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        req.body,
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {"role": "assistant", "content": "let me look", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 100
        })
    );
}

#[tokio::test]
async fn openai_tool_calls_reasoning_and_stop_reasons() {
    let mock = MockServer::start().await;
    let chunks = [
        json!({"choices":[{"index":0,"delta":{"reasoning_content":"thinking..."}}]}),
        json!({"choices":[{"index":0,"delta":{"content":"Reading."}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"read","arguments":"{\"pa"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"b.rs\"}"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
    ];
    let sse: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect::<String>() + "data: [DONE]\n\n";
    mock.script([Reply::RawSse(sse), Reply::TextWithStop("cut".into(), "length")]);
    let client = client_for(openai_model(&mock), None, fast_client()).unwrap();
    let reply = client.complete(&request(), CancellationToken::new()).await.unwrap();
    assert_eq!(reply.stop_reason(), "toolUse");
    assert_eq!(
        reply.json()["content"],
        json!([
            {"type": "thinking", "thinking": "thinking...", "thinkingSignature": "reasoning_content"},
            {"type": "text", "text": "Reading."},
            {"type": "toolCall", "id": "call_9", "name": "read", "arguments": {"path": "b.rs"}}
        ])
    );
    assert_eq!(mock.requests()[0].header("authorization"), None, "keyless on a local server");
    let reply = client.complete(&request(), CancellationToken::new()).await.unwrap();
    assert_eq!(reply.stop_reason(), "length");
}

/// A server may cut a reply between the two halves of a surrogate pair: the
/// halves join into one character, as JavaScript's string concatenation
/// joins them, and a half left alone stays a lone surrogate.
#[tokio::test]
async fn a_surrogate_pair_split_across_stream_chunks_is_joined() {
    let mock = MockServer::start().await;
    let openai: String = [
        r#"{"choices":[{"index":0,"delta":{"content":"ok \ud83d"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"\ude00 and \ud800"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    ]
    .iter()
    .map(|c| format!("data: {c}\n\n"))
    .collect::<String>()
        + "data: [DONE]\n\n";
    let anthropic = [
        r#"{"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok \ud83d"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ude00 and \ud800"}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
        r#"{"type":"message_stop"}"#,
    ]
    .iter()
    .map(|c| {
        let kind = arbor_log::json::parse(c).unwrap()["type"].as_str().unwrap().to_owned();
        format!("event: {kind}\ndata: {c}\n\n")
    })
    .collect::<String>();
    mock.script([Reply::RawSse(openai), Reply::RawSse(anthropic)]);
    let clients: [Box<dyn ModelClient>; 2] = [
        Box::new(OpenAiClient::new(openai_model(&mock), None, fast_client()).unwrap()),
        Box::new(AnthropicClient::new(anthropic_model(&mock), Some("k".into()), fast_client()).unwrap()),
    ];
    for client in clients {
        let reply = client.complete(&request(), CancellationToken::new()).await.unwrap();
        let text = arbor_log::json::to_string(&reply.json()["content"][0]["text"]).unwrap();
        assert_eq!(text, r#""ok 😀 and \ud800""#);
    }
}

#[tokio::test]
async fn anthropic_streams_into_pi_shape() {
    let mock = MockServer::start().await;
    let sse = anthropic_events(&[
        (
            "message_start",
            json!({"type":"message_start","message":{"usage":{"input_tokens":50,"output_tokens":1,"cache_read_input_tokens":7,"cache_creation_input_tokens":3}}}),
        ),
        (
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think."}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-abc"}}),
        ),
        (
            "content_block_start",
            json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"I will read it."}}),
        ),
        (
            "content_block_start",
            json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": "}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"c.rs\"}"}}),
        ),
        (
            "message_delta",
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":40}}),
        ),
        ("message_stop", json!({"type":"message_stop"})),
    ]);
    mock.script([Reply::RawSse(sse)]);
    let mut model = anthropic_model(&mock);
    model.cost = arbor_agent::model::ModelCost { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 };
    let client = AnthropicClient::new(model, Some("sk-ant".into()), fast_client()).unwrap();
    let reply = client.complete(&request(), CancellationToken::new()).await.unwrap();
    let v = reply.json();
    assert_eq!(
        v["content"],
        json!([
            {"type": "thinking", "thinking": "Let me think.", "thinkingSignature": "sig-abc"},
            {"type": "text", "text": "I will read it."},
            {"type": "toolCall", "id": "toolu_1", "name": "read", "arguments": {"path": "c.rs"}}
        ])
    );
    assert_eq!(v["stopReason"], "toolUse");
    assert_eq!(v["api"], "anthropic-messages");
    let usage = &v["usage"];
    assert_eq!(
        (
            usage["input"].as_u64(),
            usage["output"].as_u64(),
            usage["cacheRead"].as_u64(),
            usage["cacheWrite"].as_u64(),
            usage["totalTokens"].as_u64()
        ),
        (Some(50), Some(40), Some(7), Some(3), Some(100))
    );
    let total = usage["cost"]["total"].as_f64().unwrap();
    let want = (50.0 * 3.0 + 40.0 * 15.0 + 7.0 * 0.3 + 3.0 * 3.75) / 1e6;
    assert!((total - want).abs() < 1e-12, "{total} vs {want}");

    let req = &mock.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-ant"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        req.body,
        json!({
            "model": "claude-test",
            "system": "be brief",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "hmm"},
                    {"type": "text", "text": "let me look"},
                    {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.rs"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                    "content": [{"type": "text", "text": "fn main() {}"}], "is_error": false}]}
            ],
            "stream": true,
            "max_tokens": 100
        })
    );
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried() {
    let mock = MockServer::start().await;
    mock.script([
        Reply::Status { code: 429, retry_after: Some("0"), body: r#"{"error":{"message":"slow down"}}"#.into() },
        Reply::Status { code: 503, retry_after: None, body: String::new() },
    ]);
    // Every retry is told before its wait (a UI shows `Retrying (n/m) in Ns`).
    let told = std::sync::Arc::new(std::sync::Mutex::new(vec![]));
    let sink = told.clone();
    let observer = arbor_agent::model::RetryObserver(std::sync::Arc::new(move |n: arbor_agent::model::RetryNotice| {
        sink.lock().unwrap().push((n.attempt, n.max, n.delay, n.reason));
    }));
    let opts = arbor_agent::model::ClientOptions { on_retry: Some(observer), ..fast_client() };
    let client = client_for(anthropic_model(&mock), None, opts).unwrap();
    let reply = client.complete(&request(), CancellationToken::new()).await.unwrap();
    assert_eq!(reply.text(""), "mock summary");
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(
        *told.lock().unwrap(),
        [(1, 3, Duration::ZERO, "HTTP 429".to_owned()), (2, 3, Duration::from_millis(2), "HTTP 503".to_owned())]
    );
}

#[tokio::test]
async fn retries_are_bounded_and_errors_say_what_to_do() {
    let mock = MockServer::start().await;
    mock.set_default(Reply::Status {
        code: 429,
        retry_after: Some("0"),
        body: r#"{"error":{"message":"slow down"}}"#.into(),
    });
    let client = client_for(openai_model(&mock), None, fast_client()).unwrap();
    let e = client.complete(&request(), CancellationToken::new()).await.unwrap_err();
    assert_eq!(mock.requests().len(), 4, "one try and three retries");
    assert_eq!(
        e.to_string(),
        "openai-compat: HTTP 429: slow down (rate limited; gave up after 4 attempt(s); wait and try again)"
    );
    assert_eq!(e.status(), Some(429));

    // A Retry-After longer than the cap ends the retries at once.
    let mock = MockServer::start().await;
    mock.set_default(Reply::Status { code: 429, retry_after: Some("3600"), body: String::new() });
    let client = client_for(openai_model(&mock), None, fast_client()).unwrap();
    let e = client.complete(&request(), CancellationToken::new()).await.unwrap_err();
    assert_eq!(mock.requests().len(), 1);
    assert!(e.to_string().contains("HTTP 429: Too Many Requests"), "{e}");

    let mock = MockServer::start().await;
    mock.set_default(Reply::Status {
        code: 401,
        retry_after: None,
        body: r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#.into(),
    });
    let client = client_for(anthropic_model(&mock), Some("bad".into()), fast_client()).unwrap();
    let e = client.complete(&request(), CancellationToken::new()).await.unwrap_err();
    assert_eq!(mock.requests().len(), 1, "401 is not retried");
    assert_eq!(e.to_string(), "anthropic: HTTP 401: invalid x-api-key (check the API key in ANTHROPIC_API_KEY)");
}

#[tokio::test]
async fn cancellation_drops_the_request() {
    let mock = MockServer::start().await;
    mock.set_default(Reply::Hang);
    let client = client_for(anthropic_model(&mock), None, fast_client()).unwrap();
    let cancel = CancellationToken::new();
    let running = {
        let (client, cancel) = (client.clone(), cancel.clone());
        tokio::spawn(async move { client.complete(&request(), cancel).await })
    };
    bounded(mock.arrived.notified()).await;
    cancel.cancel();
    let e = bounded(running).await.unwrap().unwrap_err();
    assert!(e.is_cancelled(), "{e}");
    bounded(mock.disconnected.notified()).await;
    let aborted = AssistantReply::from_error(client.model(), &e, 5);
    assert_eq!(aborted.stop_reason(), "aborted");
    assert_eq!(aborted.error_message(), Some("anthropic: request cancelled"));
}

#[tokio::test]
async fn a_silent_stream_times_out() {
    let mock = MockServer::start().await;
    mock.set_default(Reply::Hang);
    let opts = arbor_agent::model::ClientOptions { idle_timeout: Duration::from_millis(50), ..fast_client() };
    let client = client_for(openai_model(&mock), None, opts).unwrap();
    let e = bounded(client.complete(&request(), CancellationToken::new())).await.unwrap_err();
    assert!(matches!(e, ModelError::Timeout { what: "the response stream", .. }), "{e}");
    assert!(e.to_string().starts_with("openai-compat: the response stream timed out after 0.05s"), "{e}");
}

#[tokio::test]
async fn an_endless_stream_is_cut_at_the_reply_limit() {
    let mock = MockServer::start().await;
    mock.set_default(Reply::Endless);
    for model in [openai_model(&mock), anthropic_model(&mock)] {
        let opts = arbor_agent::model::ClientOptions { max_reply_bytes: 1024 * 1024, ..fast_client() };
        let client = client_for(model, None, opts).unwrap();
        let e = bounded(client.complete(&request(), CancellationToken::new())).await.unwrap_err();
        assert!(matches!(e, ModelError::TooLarge { limit: 1_048_576, .. }), "{e}");
        assert!(e.to_string().contains(": the reply is larger than 1 MiB, the most one reply may have"), "{e}");
        bounded(mock.disconnected.notified()).await;
        // A streamed reply keeps what arrived and records the error.
        let reply = bounded(client.stream(&request(), CancellationToken::new(), None)).await;
        assert_eq!(reply.stop_reason(), "error");
        assert!(reply.error_message().unwrap().contains("larger than 1 MiB"));
        bounded(mock.disconnected.notified()).await;
    }
}

#[tokio::test]
async fn broken_streams_and_stream_errors_are_errors() {
    let mock = MockServer::start().await;
    mock.script([
        Reply::RawSse("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n".into()),
        Reply::RawSse("data: {\"error\":{\"message\":\"model overloaded\"}}\n\n".into()),
        Reply::RawSse("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".into()),
    ]);
    let openai = client_for(openai_model(&mock), None, fast_client()).unwrap();
    let e = openai.complete(&request(), CancellationToken::new()).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "openai-compat: the response stream failed: the stream ended before the reply was complete"
    );
    let e = openai.complete(&request(), CancellationToken::new()).await.unwrap_err();
    assert_eq!(e.to_string(), "openai-compat: the response stream failed: model overloaded");
    let anthropic = client_for(anthropic_model(&mock), None, fast_client()).unwrap();
    let e = anthropic.complete(&request(), CancellationToken::new()).await.unwrap_err();
    assert_eq!(e.to_string(), "anthropic: the response stream failed: Overloaded");
    let reply = AssistantReply::from_error(anthropic.model(), &e, 5);
    assert_eq!(reply.stop_reason(), "error");
}

#[tokio::test]
async fn servers_that_ignore_stream_true_still_work() {
    let mock = MockServer::start().await;
    mock.script([
        Reply::Json(json!({"choices":[{"index":0,"message":{"role":"assistant","content":"plain json"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}})),
        Reply::Json(json!({"type":"message","content":[{"type":"text","text":"plain anthropic"}],"stop_reason":"max_tokens","usage":{"input_tokens":5,"output_tokens":2}})),
    ]);
    let openai = client_for(openai_model(&mock), None, fast_client()).unwrap();
    let r = openai.complete(&request(), CancellationToken::new()).await.unwrap();
    assert_eq!((r.text(""), r.stop_reason()), ("plain json".to_owned(), "stop"));
    assert_eq!(r.json()["usage"]["totalTokens"], 7);
    let anthropic = client_for(anthropic_model(&mock), None, fast_client()).unwrap();
    let r = anthropic.complete(&request(), CancellationToken::new()).await.unwrap();
    assert_eq!((r.text(""), r.stop_reason()), ("plain anthropic".to_owned(), "length"));
}

#[tokio::test]
async fn unreachable_servers_fail_with_the_url() {
    // Bind and drop a listener to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let model = arbor_agent::model::ModelInfo::new(
        "local",
        "m",
        arbor_agent::model::Api::OpenAiCompletions,
        &format!("http://127.0.0.1:{port}/v1"),
    );
    let client = client_for(model, None, fast_client()).unwrap();
    let e = client.complete(&request(), CancellationToken::new()).await.unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "local: could not reach http://127.0.0.1:{port}/v1/chat/completions after 4 attempt(s)"
        )),
        "{text}"
    );
}

#[tokio::test]
async fn a_recorded_stream_replays_to_the_reply_a_live_request_records() {
    let mock = MockServer::start().await;
    mock.set_default(Reply::Text("hello there".into()));
    for model in [openai_model(&mock), anthropic_model(&mock)] {
        let openai = model.api == Api::OpenAiCompletions;
        let live = client_for(model.clone(), None, fast_client()).unwrap();
        let live = bounded(live.stream(&request(), CancellationToken::new(), None)).await;
        let body = if openai {
            crate::mock::openai_sse(&model.id, "hello there", "stop")
        } else {
            crate::mock::anthropic_sse(&model.id, "hello there", "end_turn")
        };
        let whole: Vec<&[u8]> = vec![body.as_bytes()];
        let bytewise: Vec<&[u8]> = body.as_bytes().chunks(1).collect();
        for chunks in [whole, bytewise] {
            let replayed = if openai {
                arbor_agent::model::OpenAiClient::new(model.clone(), None, fast_client()).unwrap().replay(&chunks)
            } else {
                arbor_agent::model::AnthropicClient::new(model.clone(), None, fast_client()).unwrap().replay(&chunks)
            };
            assert_eq!(replayed.json(), live.json(), "{}", model.provider);
        }
        // A stream cut short is a failed reply that keeps what arrived.
        let cut = &body.as_bytes()[..body.len() / 2];
        let replayed = if openai {
            arbor_agent::model::OpenAiClient::new(model.clone(), None, fast_client()).unwrap().replay(&[cut])
        } else {
            arbor_agent::model::AnthropicClient::new(model.clone(), None, fast_client()).unwrap().replay(&[cut])
        };
        assert_eq!(replayed.stop_reason(), "error", "{}", model.provider);
    }
}

/// Found by the `sse_anthropic` fuzz target: a block index far past the
/// blocks started so far made the decoder pad the reply up to it (an
/// allocation of terabytes). It is a protocol error now; a small gap is
/// still filled.
#[test]
fn a_block_index_far_past_the_blocks_so_far_is_an_error_not_an_allocation() {
    let model = ModelInfo::new("anthropic", "claude-test", Api::AnthropicMessages, "http://127.0.0.1:9");
    let client = arbor_agent::model::AnthropicClient::new(model, None, fast_client()).unwrap();
    let stream = |index: u64| {
        format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{}}}}\n\n\
             event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{index},\
             \"content_block\":{{\"type\":\"text\",\"text\":\"hi\"}}}}\n\n\
             event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}}}}\n\n\
             event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        )
    };
    let far = stream(888_888_888_888_720);
    let reply = client.replay(&[far.as_bytes()]);
    assert_eq!(reply.stop_reason(), "error");
    let message = reply.error_message().unwrap();
    assert!(message.contains("content block 888888888888720 started after only 0 blocks"), "{message}");
    let near = stream(3);
    let reply = client.replay(&[near.as_bytes()]);
    assert_eq!(reply.stop_reason(), "stop", "{:?}", reply.error_message());
    assert_eq!(reply.text(""), "hi");
}
