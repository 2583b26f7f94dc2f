//! Prompting a model (pi's `AgentSession.prompt` without tools): streamed
//! replies recorded as pi records them, aborts, failures, automatic
//! compaction (docs/architecture.md, "Compacting") and the settings entries of docs/architecture.md, "The agent session" — against
//! the mock server, for both APIs.

use std::sync::{Arc, Mutex};

use arbor_agent::model::REQUEST_ABORTED;
use arbor_agent::prompt::{AutoCompactionReason, AUTO_COMPACTION_MAX_FAILURES, OVERFLOW_RECOVERY_FAILED};
use arbor_agent::{
    AgentError, AgentEvent, AgentOptions, AgentSession, Api, AssistantReply, CompactOptions, CompletionRequest,
    EventSink, ModelClient, ModelError, ModelInfo, PromptOptions, StreamDelta, StreamSink,
};
use arbor_log::{CounterIds, FixedClock};
use arbor_tree::{Session, SessionOptions};
use async_trait::async_trait;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::mock::{split_chunks, MockServer, Recorded, Reply};
use crate::*;

#[derive(Debug, Clone, Copy)]
enum Wire {
    OpenAi,
    Anthropic,
}

const WIRES: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

fn model_for(wire: Wire, mock: &MockServer) -> ModelInfo {
    match wire {
        Wire::OpenAi => openai_model(mock),
        Wire::Anthropic => anthropic_model(mock),
    }
}

/// The usage the mock reports, as `totalTokens`.
fn mock_total(wire: Wire) -> u64 {
    match wire {
        Wire::OpenAi => 150,
        Wire::Anthropic => 140,
    }
}

/// One clock for the session, the client and the agent, as in real life
/// (compaction checks compare reply and entry times).
fn clock() -> FixedClock {
    FixedClock::new(1_767_225_600_000, 1)
}

fn chat_session(clock: &FixedClock) -> Session {
    Session::in_memory("/work/project", SessionOptions::default().with_ids(CounterIds::new()).with_clock(clock.clone()))
}

fn chat_opts(clock: &FixedClock, model: ModelInfo) -> AgentOptions {
    let mut client = fast_client();
    client.clock = Arc::new(clock.clone());
    client.max_retries = 0;
    agent_opts().with_model(model).with_client_options(client).with_clock(clock.clone())
}

fn chat_agent(wire: Wire, mock: &MockServer) -> AgentSession {
    let clock = clock();
    AgentSession::new(chat_session(&clock), chat_opts(&clock, model_for(wire, mock)))
}

/// An event sink that keeps every event.
fn recording() -> (EventSink, Arc<Mutex<Vec<AgentEvent>>>) {
    let log = Arc::new(Mutex::new(vec![]));
    let l = log.clone();
    (Arc::new(move |e| l.lock().unwrap().push(e)), log)
}

fn with_events(sink: EventSink) -> PromptOptions {
    PromptOptions { events: Some(sink), ..Default::default() }
}

/// Short names of events: `user`, `delta`, `assistant`, `start:<reason>`, `end`.
fn kinds(log: &Arc<Mutex<Vec<AgentEvent>>>) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .map(|e| match e {
            AgentEvent::UserMessage { .. } => "user".to_owned(),
            AgentEvent::Delta(_) => "delta".to_owned(),
            AgentEvent::AssistantMessage { .. } => "assistant".to_owned(),
            AgentEvent::AutoCompactionStart { reason } => format!("start:{}", reason.as_str()),
            AgentEvent::AutoCompactionEnd { .. } => "end".to_owned(),
            AgentEvent::AutoCompactionStopped { failures } => format!("stopped:{failures}"),
            AgentEvent::Retry(n) => format!("retry:{}", n.attempt),
        })
        .collect()
}

/// Consecutive duplicates collapsed (`delta`, `delta` → `delta`).
fn collapsed(kinds: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for k in kinds {
        if out.last() != Some(&k) {
            out.push(k);
        }
    }
    out
}

/// `(role, text)` of the messages a request sent (either API; no system prompt).
fn wire_messages(r: &Recorded) -> Vec<(String, String)> {
    r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join(""),
                _ => String::new(),
            };
            (m["role"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

fn entries(agent: &AgentSession) -> Vec<Value> {
    agent.session().entries().map(Result::unwrap).map(|e| e.to_value()).collect()
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn overflow_status() -> Reply {
    Reply::Status {
        code: 400,
        retry_after: None,
        body: json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "prompt is too long: 300000 tokens > 200000 maximum"}})
        .to_string(),
    }
}

#[tokio::test]
async fn a_conversation_of_three_turns_is_recorded_as_pi_records_it() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.script(["first answer", "second answer", "third answer"].map(|t| Reply::Text(t.into())));
        let mut agent = chat_agent(wire, &mock);
        let mut results = vec![];
        for p in ["one?", "two?", "three?"] {
            results.push(bounded(agent.prompt(p, PromptOptions::default())).await.unwrap());
        }

        let reqs = mock.requests();
        assert_eq!(reqs.len(), 3, "{wire:?}");
        assert_eq!(wire_messages(&reqs[0]), pairs(&[("user", "one?")]), "{wire:?}");
        assert_eq!(
            wire_messages(&reqs[2]),
            pairs(&[
                ("user", "one?"),
                ("assistant", "first answer"),
                ("user", "two?"),
                ("assistant", "second answer"),
                ("user", "three?"),
            ]),
            "{wire:?}"
        );

        let es = entries(&agent);
        assert_eq!(es.len(), 6, "{wire:?}");
        assert_eq!(es[0]["parentId"], Value::Null);
        for w in es.windows(2) {
            assert_eq!(w[1]["parentId"], w[0]["id"], "{wire:?}: chained by parentId");
        }
        let model = model_for(wire, &mock);
        for (i, e) in es.iter().enumerate() {
            assert_eq!(e["type"], "message");
            let m = &e["message"];
            if i % 2 == 0 {
                assert_eq!(keys(m), ["role", "content", "timestamp"]);
                assert_eq!(m["role"], "user");
                assert!(m["timestamp"].is_i64());
            } else {
                assert_eq!(
                    keys(m),
                    ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp"],
                    "{wire:?}: pi's key order"
                );
                assert_eq!(m["api"], model.api.as_str());
                assert_eq!(m["provider"], model.provider.as_str());
                assert_eq!(m["model"], model.id.as_str());
                assert_eq!(m["stopReason"], "stop");
                assert_eq!(m["usage"]["totalTokens"], mock_total(wire));
            }
        }
        assert_eq!(es[4]["message"]["content"], json!([{"type": "text", "text": "three?"}]));
        for (i, r) in results.iter().enumerate() {
            assert_eq!(r.user_entry_id, es[2 * i]["id"].as_str().unwrap());
            assert_eq!(r.assistant_entry_id, es[2 * i + 1]["id"].as_str().unwrap());
            assert!(r.auto_compaction.is_none());
        }
        assert_eq!(results[2].reply.text(""), "third answer");
        assert_eq!(agent.messages().unwrap().len(), 6);
        assert_eq!(agent.context_tokens().unwrap(), mock_total(wire), "the last usage, nothing after it");
    }
}

#[tokio::test]
async fn deltas_reach_the_sink_in_order_and_make_the_reply() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        let text = "The quick brown fox jumps over the lazy dog";
        mock.script([Reply::Slow { text: text.into(), chunks: 5, delay_ms: 1 }]);
        let mut agent = chat_agent(wire, &mock);
        let (sink, log) = recording();
        let r = bounded(agent.prompt("go", with_events(sink))).await.unwrap();

        let mut want = vec!["user".to_owned()];
        want.extend(vec!["delta".to_owned(); 5]);
        want.push("assistant".to_owned());
        assert_eq!(kinds(&log), want, "{wire:?}");
        let deltas: Vec<String> = log
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Delta(StreamDelta::Text(t)) => Some(t.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, split_chunks(text, 5), "{wire:?}");
        assert_eq!(deltas.concat(), r.reply.text(""));
        assert_eq!(r.reply.text(""), text);
        let events = log.lock().unwrap();
        match (&events[0], events.last().unwrap()) {
            (AgentEvent::UserMessage { entry_id: u }, AgentEvent::AssistantMessage { entry_id: a, message }) => {
                assert_eq!(u, &r.user_entry_id);
                assert_eq!(a, &r.assistant_entry_id);
                assert_eq!(message, r.reply.json());
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn an_abort_mid_stream_records_the_partial_reply_and_drops_the_connection() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        // The second chunk would come a minute later: only the abort ends this reply.
        let text = "Partial answer that never ends";
        mock.script([Reply::Slow { text: text.into(), chunks: 3, delay_ms: 60_000 }]);
        let mut agent = chat_agent(wire, &mock);
        let abort = agent.abort_handle();
        let seen = Arc::new(Mutex::new(vec![]));
        let s = seen.clone();
        let sink: EventSink = Arc::new(move |e| {
            if matches!(e, AgentEvent::Delta(_)) {
                abort.abort();
            }
            s.lock().unwrap().push(e);
        });
        let r = bounded(agent.prompt("tell me", with_events(sink))).await.unwrap();
        bounded(mock.disconnected.notified()).await;

        let first = split_chunks(text, 3)[0].clone();
        assert_eq!(r.reply.stop_reason(), "aborted", "{wire:?}");
        // As the recorded pi sessions have it: Anthropic's SDK ends the message with a full stop, OpenAI's does not.
        let expected = match wire {
            Wire::OpenAi => "Request was aborted",
            Wire::Anthropic => REQUEST_ABORTED,
        };
        assert_eq!(r.reply.error_message(), Some(expected), "{wire:?}");
        assert_eq!(r.reply.text(""), first, "{wire:?}: the partial text is kept");
        assert!(!agent.abort_handle().is_streaming());
        let es = entries(&agent);
        assert_eq!(es.len(), 2);
        let m = &es[1]["message"];
        assert_eq!(
            keys(m),
            ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp", "errorMessage"],
            "{wire:?}: pi's key order"
        );
        assert_eq!(m["stopReason"], "aborted");
        assert_eq!(m["errorMessage"], expected);
        assert_eq!(m["content"], json!([{"type": "text", "text": first}]));
        assert_eq!(kinds(&seen), ["user", "delta", "assistant"], "{wire:?}: no compaction after an abort");
        assert!(r.auto_compaction.is_none());
    }
}

#[tokio::test]
async fn a_server_error_is_recorded_as_an_error_reply() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        let body = json!({"error": {"message": "the model crashed"}}).to_string();
        mock.script([Reply::Status { code: 500, retry_after: None, body }]);
        let mut agent = chat_agent(wire, &mock);
        let (sink, log) = recording();
        let r = bounded(agent.prompt("hello", with_events(sink))).await.unwrap();
        assert_eq!(r.reply.stop_reason(), "error", "{wire:?}");
        let message = r.reply.error_message().unwrap();
        assert!(message.contains("HTTP 500") && message.contains("the model crashed"), "{message}");
        assert_eq!(mock.requests().len(), 1, "max_retries 0");
        let es = entries(&agent);
        assert_eq!(es.len(), 2);
        assert_eq!(es[1]["message"]["stopReason"], "error");
        assert_eq!(es[1]["message"]["content"], json!([]));
        assert_eq!(es[1]["message"]["errorMessage"], message);
        assert_eq!(kinds(&log), ["user", "assistant"]);

        // The next prompt leaves the failed reply out of the request.
        mock.script([Reply::Text("fine now".into())]);
        bounded(agent.prompt("again", PromptOptions::default())).await.unwrap();
        let last = mock.requests().last().unwrap().clone();
        assert_eq!(wire_messages(&last), pairs(&[("user", "hello"), ("user", "again")]), "{wire:?}");
    }
}

#[tokio::test]
async fn no_model_or_no_key_writes_nothing() {
    let mut agent = AgentSession::new(mem_session(), agent_opts());
    let e = agent.prompt("hi", PromptOptions::default()).await.unwrap_err();
    assert!(matches!(e, AgentError::NoModelSelected), "{e}");
    assert_eq!(e.to_string(), "No model selected");
    assert_eq!(agent.session().entries().map(Result::unwrap).count(), 0);

    let remote = ModelInfo::new("anthropic", "claude-x", Api::AnthropicMessages, "https://api.anthropic.com");
    let mut agent = AgentSession::new(mem_session(), agent_opts().with_model(remote));
    let e = agent.prompt("hi", PromptOptions::default()).await.unwrap_err();
    assert_eq!(e.to_string(), "No API key for anthropic");
    assert_eq!(agent.session().entries().map(Result::unwrap).count(), 0);
}

/// An agent whose model's window is just above the reserve, so that the mock's usage passes the threshold.
fn small_window_agent(wire: Wire, mock: &MockServer, enabled: bool) -> AgentSession {
    compacting_agent(wire, mock, enabled, 16_384 + 100)
}

/// An agent over a two-turn conversation that keeps 1 token when it compacts.
fn compacting_agent(wire: Wire, mock: &MockServer, enabled: bool, window: u64) -> AgentSession {
    let clock = clock();
    let mut s = chat_session(&clock);
    conversation(&mut s, &[("alpha question", "alpha answer"), ("bravo question", "bravo answer")]);
    let model = model_for(wire, mock).with_context_window(window);
    let mut opts = chat_opts(&clock, model);
    opts.compaction.enabled = enabled;
    opts.compaction.keep_recent_tokens = 1;
    AgentSession::new(s, opts)
}

#[tokio::test]
async fn a_reply_past_the_threshold_compacts() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.script([Reply::Text("charlie answer".into())]);
        let mut agent = small_window_agent(wire, &mock, true);
        assert_eq!(agent.context_window(), 16_484);
        let hooks = Arc::new(Mutex::new(vec![]));
        add_recorder(agent.hooks_mut(), &hooks);
        let (sink, log) = recording();
        let r = bounded(agent.prompt("charlie question", with_events(sink))).await.unwrap();
        assert_eq!(types(&hooks), ["session_before_compact", "session.compacting", "session_compact"], "as /compact");

        assert_eq!(collapsed(kinds(&log)), ["user", "delta", "assistant", "start:threshold", "end"], "{wire:?}");
        assert_eq!(count_type(agent.session(), "compaction"), 1);
        let outcome = r.auto_compaction.clone().expect("auto-compaction ran");
        assert_eq!(outcome.reason, AutoCompactionReason::Threshold);
        assert!(!outcome.aborted && !outcome.will_retry && outcome.error_message.is_none());
        let result = outcome.result.expect("a compaction");
        assert_eq!(agent.session().leaf_id(), Some(result.entry_id.as_str()));
        match log.lock().unwrap().last().unwrap() {
            AgentEvent::AutoCompactionEnd {
                result: Some(c),
                aborted: false,
                will_retry: false,
                error_message: None,
            } => {
                assert_eq!(c.entry_id, result.entry_id);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(agent.messages().unwrap()[0]["role"], "compactionSummary");
        assert_eq!(r.reply.text(""), "charlie answer");

        // The next prompt does not compact first: its last reply is older than the compaction.
        mock.script([Reply::Text("delta answer".into())]);
        let (sink, log) = recording();
        bounded(agent.prompt("delta question", with_events(sink))).await.unwrap();
        assert_eq!(kinds(&log)[0], "user", "{wire:?}");
    }
}

#[tokio::test]
async fn compaction_disabled_never_compacts() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.script([Reply::Text("charlie answer".into()), overflow_status()]);
        let mut agent = small_window_agent(wire, &mock, false);
        let (sink, log) = recording();
        let r = bounded(agent.prompt("charlie question", with_events(sink.clone()))).await.unwrap();
        assert!(r.auto_compaction.is_none());
        let r = bounded(agent.prompt("too long", with_events(sink))).await.unwrap();
        assert_eq!(r.reply.stop_reason(), "error");
        assert!(r.auto_compaction.is_none());
        assert_eq!(count_type(agent.session(), "compaction"), 0);
        assert!(!kinds(&log).iter().any(|k| k.starts_with("start") || k == "end"), "{wire:?}");
        assert_eq!(mock.requests().len(), 2, "no retry");
    }
}

#[tokio::test]
async fn a_context_overflow_compacts_and_retries_once() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.script([overflow_status(), Reply::Text("the summary".into()), Reply::Text("recovered".into())]);
        let mut agent = compacting_agent(wire, &mock, true, 200_000);
        let (sink, log) = recording();
        let r = bounded(agent.prompt("a huge question", with_events(sink))).await.unwrap();

        assert_eq!(
            collapsed(kinds(&log)),
            ["user", "assistant", "start:overflow", "end", "delta", "assistant"],
            "{wire:?}"
        );
        assert_eq!(r.reply.text(""), "recovered");
        assert_eq!(r.reply.stop_reason(), "stop");
        let outcome = r.auto_compaction.clone().unwrap();
        assert_eq!(outcome.reason, AutoCompactionReason::Overflow);
        assert!(outcome.will_retry && !outcome.aborted && outcome.error_message.is_none());
        let compaction_id = outcome.result.unwrap().entry_id;

        // The file: the user message, the failed reply, the compaction, the retried reply.
        let es = entries(&agent);
        let tail: Vec<&str> = es[es.len() - 4..]
            .iter()
            .map(|e| e["message"]["stopReason"].as_str().unwrap_or_else(|| e["type"].as_str().unwrap()))
            .collect();
        assert_eq!(tail, ["message", "error", "compaction", "stop"], "{wire:?}");
        assert_eq!(es[es.len() - 4]["id"], r.user_entry_id.as_str());
        assert_eq!(es.last().unwrap()["parentId"], compaction_id.as_str());
        assert_eq!(es.last().unwrap()["id"], r.assistant_entry_id.as_str());

        // The retry sends the summary and the question, not the failed reply.
        let reqs = mock.requests();
        assert_eq!(reqs.len(), 3);
        let retry = wire_messages(&reqs[2]);
        assert_eq!(retry.len(), 2, "{retry:?}");
        assert_eq!(retry[1], ("user".to_owned(), "a huge question".to_owned()));
        assert!(retry[0].1.contains("the summary"), "{retry:?}");
    }
}

#[tokio::test]
async fn a_second_overflow_ends_the_recovery() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.script([overflow_status(), Reply::Text("the summary".into()), overflow_status()]);
        let mut agent = compacting_agent(wire, &mock, true, 200_000);
        let (sink, log) = recording();
        let r = bounded(agent.prompt("a huge question", with_events(sink))).await.unwrap();

        assert_eq!(kinds(&log), ["user", "assistant", "start:overflow", "end", "assistant", "end"], "{wire:?}");
        assert_eq!(r.reply.stop_reason(), "error");
        let outcome = r.auto_compaction.unwrap();
        assert_eq!(outcome.reason, AutoCompactionReason::Overflow);
        assert_eq!(outcome.error_message.as_deref(), Some(OVERFLOW_RECOVERY_FAILED));
        assert!(outcome.result.is_none() && !outcome.will_retry);
        assert_eq!(
            OVERFLOW_RECOVERY_FAILED,
            "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model."
        );
        match log.lock().unwrap().last().unwrap() {
            AgentEvent::AutoCompactionEnd { result: None, aborted: false, will_retry: false, error_message } => {
                assert_eq!(error_message.as_deref(), Some(OVERFLOW_RECOVERY_FAILED));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(mock.requests().len(), 3, "one retry only");
        assert_eq!(count_type(agent.session(), "compaction"), 1);
    }
}

#[tokio::test]
async fn a_failed_auto_compaction_does_not_fail_the_prompt() {
    let mock = MockServer::start().await;
    let body = json!({"error": {"message": "summaries are down"}}).to_string();
    mock.script([Reply::Text("charlie answer".into())]);
    mock.set_default(Reply::Status { code: 500, retry_after: None, body });
    let mut agent = small_window_agent(Wire::Anthropic, &mock, true);
    let (sink, log) = recording();
    let r = bounded(agent.prompt("charlie question", with_events(sink))).await.unwrap();
    assert_eq!(r.reply.text(""), "charlie answer");
    let outcome = r.auto_compaction.unwrap();
    let message = outcome.error_message.unwrap();
    assert!(message.starts_with("Auto-compaction failed: Summarization failed: "), "{message}");
    assert!(outcome.result.is_none() && !outcome.aborted);
    assert_eq!(collapsed(kinds(&log)), ["user", "delta", "assistant", "start:threshold", "end"]);
    assert_eq!(count_type(agent.session(), "compaction"), 0);
}

#[tokio::test]
async fn automatic_compaction_stops_after_three_failures_in_a_row_until_compact() {
    let mock = MockServer::start().await;
    let body = json!({"error": {"message": "summaries are down"}}).to_string();
    mock.answer_summaries(Reply::Status { code: 500, retry_after: None, body });
    // Every reply passes the threshold: each prompt would try to compact before and after it.
    mock.set_default(Reply::Text("an answer".into()));
    let mut agent = small_window_agent(Wire::Anthropic, &mock, true);
    let summary_requests = |mock: &MockServer| {
        mock.requests().iter().filter(|r| r.system().starts_with("You summarize conversations")).count()
    };
    let lines_before = entries(&agent).len();
    let (sink, log) = recording();
    let (mut failures, mut requests_at_stop) = (0, None);
    for n in 0..5 {
        let r = bounded(agent.prompt(&format!("question {n}"), with_events(sink.clone()))).await.unwrap();
        assert_eq!(r.reply.text(""), "an answer", "the prompts go on");
        failures = kinds(&log).iter().filter(|k| *k == "end").count();
        assert!(failures <= AUTO_COMPACTION_MAX_FAILURES as usize, "prompt {n}: {failures} attempts");
        if agent.auto_compaction_stopped() && requests_at_stop.is_none() {
            requests_at_stop = Some(summary_requests(&mock));
        }
    }
    assert_eq!(failures, 3);
    assert!(agent.auto_compaction_stopped());
    assert!(requests_at_stop.is_some_and(|n| n > 0));
    assert_eq!(Some(summary_requests(&mock)), requests_at_stop, "no attempt after the third failure");
    let stopped: Vec<u32> = log
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AutoCompactionStopped { failures } => Some(*failures),
            _ => None,
        })
        .collect();
    assert_eq!(stopped, [3], "said once");
    // Nothing but the prompts' messages was written by the failed attempts.
    assert_eq!(entries(&agent).len(), lines_before + 2 * 5);
    assert_eq!(count_type(agent.session(), "compaction"), 0);

    // /compact gives automatic compaction its tries back (here it fails too).
    assert!(bounded(agent.compact(CompactOptions::default())).await.is_err());
    assert!(!agent.auto_compaction_stopped());
    // A successful compaction resets the count as well.
    mock.answer_summaries(Reply::Text("the summary".into()));
    let r = bounded(agent.prompt("question 5", with_events(sink))).await.unwrap();
    assert!(r.auto_compaction.and_then(|o| o.result).is_some());
    assert!(!agent.auto_compaction_stopped());
}

#[tokio::test]
async fn an_abort_during_auto_compaction_is_reported_as_aborted() {
    let mock = MockServer::start().await;
    mock.script([Reply::Text("charlie answer".into())]);
    mock.set_default(Reply::Hang);
    let mut agent = small_window_agent(Wire::OpenAi, &mock, true);
    let abort = agent.abort_handle();
    let sink: EventSink = Arc::new(move |e| {
        if matches!(e, AgentEvent::AutoCompactionStart { .. }) {
            // The summary request hangs; abort it once it is under way.
            let abort = abort.clone();
            tokio::spawn(async move {
                while !abort.is_compacting() {
                    tokio::task::yield_now().await;
                }
                abort.abort();
            });
        }
    });
    let r = bounded(agent.prompt("charlie question", with_events(sink))).await.unwrap();
    let outcome = r.auto_compaction.unwrap();
    assert!(outcome.aborted && outcome.result.is_none() && outcome.error_message.is_none());
    assert_eq!(count_type(agent.session(), "compaction"), 0);
    assert_eq!(r.reply.stop_reason(), "stop", "the reply stays recorded");
}

#[tokio::test]
async fn settings_entries_are_written_as_pi_writes_them() {
    let mock = MockServer::start().await;
    let clock = clock();
    let mut agent = AgentSession::new(chat_session(&clock), chat_opts(&clock, openai_model(&mock)));
    assert_eq!(agent.thinking_level().unwrap(), "off");
    agent.record_session_start("medium").unwrap();
    let es = entries(&agent);
    assert_eq!(es.len(), 2);
    assert_eq!((es[0]["type"].as_str(), es[0]["parentId"].clone()), (Some("model_change"), Value::Null));
    assert_eq!((&es[0]["provider"], &es[0]["modelId"]), (&json!("openai-compat"), &json!("gpt-test")));
    assert_eq!(es[1]["type"], "thinking_level_change");
    assert_eq!(es[1]["thinkingLevel"], "medium");
    assert_eq!(es[1]["parentId"], es[0]["id"]);
    assert_eq!(agent.thinking_level().unwrap(), "medium");

    assert_eq!(agent.set_thinking_level("medium").unwrap(), None, "the same level writes nothing");
    assert_eq!(agent.session().entries().map(Result::unwrap).count(), 2);
    let id = agent.set_thinking_level("high").unwrap().unwrap();
    assert_eq!(agent.session().leaf_id(), Some(id.as_str()));
    assert_eq!(agent.thinking_level().unwrap(), "high");
    let e = agent.set_thinking_level("max").unwrap_err();
    assert_eq!(e.to_string(), "Invalid thinking level \"max\": use off, minimal, low, medium, high or xhigh");
    assert!(agent.record_session_start("turbo").is_err());
    assert_eq!(agent.session().entries().map(Result::unwrap).count(), 3);

    let other = anthropic_model(&mock);
    let id = agent.set_model_recorded(other.clone()).unwrap();
    let last = entries(&agent).pop().unwrap();
    assert_eq!(last["id"], id.as_str());
    assert_eq!(
        (&last["type"], &last["provider"], &last["modelId"]),
        (&json!("model_change"), &json!("anthropic"), &json!("claude-test"))
    );
    assert_eq!(agent.model(), Some(&other));
    let restored = agent.context().unwrap().model.clone().unwrap();
    assert_eq!((restored.provider.as_str(), restored.model_id.as_str()), ("anthropic", "claude-test"));

    // Without a model only the thinking level is written.
    let mut bare = AgentSession::new(chat_session(&clock), agent_opts());
    bare.record_session_start("off").unwrap();
    let es = entries(&bare);
    assert_eq!(es.len(), 1);
    assert_eq!(es[0]["type"], "thinking_level_change");
}

#[tokio::test]
async fn thinking_high_asks_a_reasoning_model_to_reason() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        let clock = clock();
        let model = model_for(wire, &mock).with_reasoning(true);
        let mut agent = AgentSession::new(chat_session(&clock), chat_opts(&clock, model));
        bounded(agent.prompt("first", PromptOptions::default())).await.unwrap();
        agent.set_thinking_level("high").unwrap();
        bounded(agent.prompt("second", PromptOptions::default())).await.unwrap();
        let reqs = mock.requests();
        match wire {
            Wire::OpenAi => {
                assert!(reqs[0].body.get("reasoning_effort").is_none());
                assert_eq!(reqs[1].body["reasoning_effort"], "high");
            }
            Wire::Anthropic => {
                assert!(reqs[0].body.get("thinking").is_none());
                assert_eq!(reqs[1].body["thinking"], json!({"type": "enabled", "budget_tokens": 16384}));
            }
        }
    }
}

#[tokio::test]
async fn a_system_prompt_and_max_tokens_are_sent() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        let mut agent = chat_agent(wire, &mock);
        let options =
            PromptOptions { system_prompt: Some("Be brief.".into()), max_tokens: Some(321), ..Default::default() };
        bounded(agent.prompt("hi", options)).await.unwrap();
        let req = &mock.requests()[0];
        assert_eq!(req.system(), "Be brief.", "{wire:?}");
        assert_eq!(req.body["max_tokens"], 321, "{wire:?}");
    }
}

/// A client with only `complete`, to check the default `stream`.
#[derive(Debug)]
struct Canned {
    model: ModelInfo,
    outcome: Result<&'static str, bool>,
}

#[async_trait]
impl ModelClient for Canned {
    fn model(&self) -> &ModelInfo {
        &self.model
    }

    async fn complete(&self, _: &CompletionRequest, _: CancellationToken) -> Result<AssistantReply, ModelError> {
        match self.outcome {
            Ok(text) => Ok(AssistantReply::from_json(json!({
                "role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"
            }))),
            Err(true) => Err(ModelError::Cancelled { provider: "p".into() }),
            Err(false) => Err(ModelError::Stream { provider: "p".into(), message: "broken".into() }),
        }
    }
}

#[tokio::test]
async fn the_default_stream_wraps_complete() {
    let model = ModelInfo::new("p", "m", Api::OpenAiCompletions, "http://127.0.0.1:1/v1");
    let got = Arc::new(Mutex::new(vec![]));
    let g = got.clone();
    let sink: StreamSink = Arc::new(move |d| g.lock().unwrap().push(d));
    let req = CompletionRequest::default();

    let ok = Canned { model: model.clone(), outcome: Ok("whole") };
    let r = ok.stream(&req, CancellationToken::new(), Some(sink.clone())).await;
    assert_eq!(r.text(""), "whole");
    assert_eq!(*got.lock().unwrap(), [StreamDelta::Text("whole".into())]);

    let aborted = Canned { model: model.clone(), outcome: Err(true) };
    let r = aborted.stream(&req, CancellationToken::new(), Some(sink.clone())).await;
    assert_eq!((r.stop_reason(), r.error_message()), ("aborted", Some("Request was aborted")));

    let failed = Canned { model, outcome: Err(false) };
    let r = failed.stream(&req, CancellationToken::new(), Some(sink)).await;
    assert_eq!((r.stop_reason(), r.error_message()), ("error", Some("p: the response stream failed: broken")));
    assert_eq!(got.lock().unwrap().len(), 1, "failures hand nothing to the sink");
}

#[tokio::test]
async fn thinking_streams_as_thinking_deltas() {
    let mock = MockServer::start().await;
    let openai: String = [
        json!({"choices":[{"index":0,"delta":{"reasoning_content":"Hmm, "}}]}),
        json!({"choices":[{"index":0,"delta":{"reasoning_content":"let me see."}}]}),
        json!({"choices":[{"index":0,"delta":{"content":"Four."}}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
    ]
    .iter()
    .map(|c| format!("data: {c}\n\n"))
    .collect::<String>()
        + "data: [DONE]\n\n";
    let anthropic = crate::mock::anthropic_events(&[
        ("message_start", json!({"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}})),
        (
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hmm, "}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"let me see."}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}),
        ),
        (
            "content_block_start",
            json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Four."}}),
        ),
        (
            "message_delta",
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}),
        ),
        ("message_stop", json!({"type":"message_stop"})),
    ]);
    for (wire, sse) in [(Wire::OpenAi, openai), (Wire::Anthropic, anthropic)] {
        mock.script([Reply::RawSse(sse)]);
        let mut agent = chat_agent(wire, &mock);
        let (sink, log) = recording();
        let r = bounded(agent.prompt("2+2?", with_events(sink))).await.unwrap();
        let deltas: Vec<StreamDelta> = log
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Delta(d) => Some(d.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            deltas,
            [
                StreamDelta::Thinking("Hmm, ".into()),
                StreamDelta::Thinking("let me see.".into()),
                StreamDelta::Text("Four.".into())
            ],
            "{wire:?}"
        );
        assert_eq!(r.reply.json()["content"][0]["thinking"], "Hmm, let me see.");
        assert_eq!(r.reply.text(""), "Four.");
    }
}

#[tokio::test]
async fn a_stream_that_breaks_keeps_what_arrived() {
    let mock = MockServer::start().await;
    let sse = format!("data: {}\n\n", json!({"choices":[{"index":0,"delta":{"content":"Half an"}}]}));
    mock.script([Reply::RawSse(sse)]);
    let mut agent = chat_agent(Wire::OpenAi, &mock);
    let r = bounded(agent.prompt("go", PromptOptions::default())).await.unwrap();
    assert_eq!(r.reply.stop_reason(), "error");
    assert_eq!(r.reply.text(""), "Half an");
    let message = r.reply.error_message().unwrap();
    assert!(message.contains("the stream ended before the reply was complete"), "{message}");
    assert_eq!(entries(&agent)[1]["message"]["content"], json!([{"type": "text", "text": "Half an"}]));
}

#[tokio::test]
async fn the_handle_prompts_and_aborts() {
    let mock = MockServer::start().await;
    mock.script([
        Reply::Text("via the handle".into()),
        Reply::Slow { text: "never finished".into(), chunks: 2, delay_ms: 60_000 },
    ]);
    let handle = chat_agent(Wire::Anthropic, &mock).spawn();
    let r = bounded(handle.prompt("hi", PromptOptions::default())).await.unwrap();
    assert_eq!(r.reply.text(""), "via the handle");

    let abort = handle.abort_handle();
    let sink: EventSink = Arc::new(move |e| {
        if matches!(e, AgentEvent::Delta(_)) {
            abort.abort_prompt();
        }
    });
    let r = bounded(handle.prompt("again", with_events(sink))).await.unwrap();
    assert_eq!(r.reply.stop_reason(), "aborted");
    let agent = handle.shutdown().await.unwrap();
    assert_eq!(agent.session().entries().map(Result::unwrap).count(), 4);
}
