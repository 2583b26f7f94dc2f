//! A model server for the chat tests, on 127.0.0.1:0, speaking OpenAI Chat
//! Completions (`POST …/chat/completions`), the OpenAI Responses API
//! (`POST …/responses`) and Anthropic Messages (`POST …/v1/messages`),
//! always streamed (SSE).
//!
//! What it answers depends only on the request, so a test needs no script:
//! - a summary request (the prompt holds `<conversation>`) gets `SUMMARY n`,
//!   after 2 s when the conversation mentions `take your time`;
//! - a prompt containing `slow` streams `word0 word1 …` one word every 100 ms
//!   (up to 100) and notes when the client hangs up;
//! - a prompt containing `endless` streams 100-byte pieces every millisecond
//!   and never ends the reply, until the client hangs up;
//! - a prompt containing `please fail` gets HTTP 400 (not retried);
//! - a prompt containing `html please` gets HTTP 404 with an HTML page (a proxy's);
//! - a prompt containing `flaky` gets HTTP 503 with `Retry-After: 1` twice
//!   (counted over the server's life), then its echo;
//! - a prompt containing `send escapes` gets [`ESCAPES`] (a clipboard write,
//!   a title, a terminal reset) and `done`;
//! - anything else gets `echo: <the last user text>`.
//!
//! Every request is kept (path, body, `authorization` header) for the test to read.
//!
//! Every reply reports `usage` (120 prompt + 30 completion tokens), except
//! when the conversation's last prompt contains `[no usage]`: then it reports
//! zeros, as some servers do.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

/// What a reply to `send escapes` holds before `done`: an OSC 52 clipboard
/// write, an OSC 0 title and RIS (a full reset), none of which Arbor's own
/// drawing ever sends.
pub const ESCAPES: &str = "\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;pwned-title\u{7}\u{1b}c";

/// True when `bytes` hold any of the raw sequences of [`ESCAPES`].
pub fn has_raw_escapes(bytes: &[u8]) -> bool {
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    has(b"\x1b]52;") || has(b"\x1b]0;pwned") || has(b"\x1bc")
}

#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    pub body: Value,
    /// The `authorization` header (`x-api-key` for Anthropic), if any.
    pub auth: Option<String>,
}

impl Request {
    /// The texts of the request's messages, role: text (system prompts included).
    pub fn transcript(&self) -> Vec<String> {
        let mut out = vec![];
        if let Some(s) = self.body["system"].as_str() {
            out.push(format!("system: {s}"));
        }
        for m in self.body["messages"].as_array().or(self.body["input"].as_array()).into_iter().flatten() {
            out.push(format!("{}: {}", m["role"].as_str().unwrap_or("?"), text(&m["content"])));
        }
        out
    }

    pub fn last_user(&self) -> String {
        // Chat Completions and Anthropic send `messages`, the Responses API `input`.
        let msgs = self.body["messages"].as_array().or(self.body["input"].as_array()).cloned().unwrap_or_default();
        msgs.iter().rev().find(|m| m["role"] == "user").map(|m| text(&m["content"])).unwrap_or_default()
    }
}

fn text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    }
}

#[derive(Default)]
struct State {
    requests: Mutex<Vec<Request>>,
    summaries: AtomicUsize,
    slow_started: AtomicBool,
    slow_dropped: AtomicBool,
    /// Requests of `flaky` prompts so far.
    flaky: AtomicUsize,
}

pub struct ModelServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<State>,
}

impl ModelServer {
    pub fn start() -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(State::default());
        let s = state.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let s = s.clone();
                thread::spawn(move || serve(stream, &s));
            }
        });
        ModelServer { base, state }
    }

    /// The base URL for Chat Completions (with `/v1`).
    pub fn openai(&self) -> String {
        format!("{}/v1", self.base)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.requests.lock().unwrap().clone()
    }

    /// The requests that were conversation turns (not summaries).
    pub fn turns(&self) -> Vec<Request> {
        self.requests().into_iter().filter(|r| !r.last_user().contains("<conversation>")).collect()
    }

    pub fn slow_started(&self) -> bool {
        self.state.slow_started.load(Ordering::SeqCst)
    }

    pub fn slow_dropped(&self) -> bool {
        self.state.slow_dropped.load(Ordering::SeqCst)
    }
}

/// Reads one HTTP request: its path and body (`None` when the client went away).
pub fn read_request(stream: &TcpStream) -> Option<(String, Vec<u8>)> {
    read_request_with_auth(stream).map(|(path, body, _)| (path, body))
}

/// Reads one HTTP request: its path, body and key header.
fn read_request_with_auth(stream: &TcpStream) -> Option<(String, Vec<u8>, Option<String>)> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut first = String::new();
    if reader.read_line(&mut first).unwrap_or(0) == 0 {
        return None;
    }
    let path = first.split_whitespace().nth(1).unwrap_or("").to_owned();
    let mut len = 0usize;
    let mut auth = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("authorization:") || lower.starts_with("x-api-key:") {
            auth = line.split_once(':').map(|(_, v)| v.trim().to_owned());
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some((path, body, auth))
}

/// The wire protocol of a request, from its path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Proto {
    /// `…/chat/completions`.
    OpenAi,
    /// `…/v1/messages`.
    Anthropic,
    /// `…/responses`.
    Responses,
}

impl Proto {
    fn of(path: &str) -> Proto {
        if path.ends_with("/messages") {
            Proto::Anthropic
        } else if path.ends_with("/responses") {
            Proto::Responses
        } else {
            Proto::OpenAi
        }
    }

    fn head(self, model: &str) -> String {
        match self {
            Proto::Anthropic => anthropic_head(model),
            Proto::Responses => responses_head(),
            Proto::OpenAi => String::new(),
        }
    }

    fn delta(self, model: &str, text: &str) -> String {
        match self {
            Proto::Anthropic => anthropic_delta(text),
            Proto::Responses => responses_delta(text),
            Proto::OpenAi => openai_delta(model, text),
        }
    }

    fn tail(self, model: &str, usage: bool) -> String {
        match self {
            Proto::Anthropic => anthropic_tail(),
            Proto::Responses => responses_tail(usage),
            Proto::OpenAi if usage => openai_tail(model),
            Proto::OpenAi => {
                let end = json!({"id": "c1", "object": "chat.completion.chunk", "model": model,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}});
                format!("data: {end}\n\ndata: [DONE]\n\n")
            }
        }
    }
}

/// Writes an error response with this status, content type and body.
fn send_error(out: &mut TcpStream, status: &str, content_type: &str, extra: &str, body: &str) {
    let _ = write!(
        out,
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\nconnection: close\r\n{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    );
}

/// A stream of `pieces` one every `every`, until done or the client hangs up (then false).
fn trickle(
    out: &mut TcpStream,
    proto: Proto,
    model: &str,
    pieces: impl Iterator<Item = String>,
    every: Duration,
    started: &AtomicBool,
) -> bool {
    let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
    let _ = out.write_all(proto.head(model).as_bytes());
    for piece in pieces {
        if out.write_all(proto.delta(model, &piece).as_bytes()).and_then(|_| out.flush()).is_err() {
            return false;
        }
        started.store(true, Ordering::SeqCst);
        thread::sleep(every);
    }
    let _ = out.write_all(proto.tail(model, true).as_bytes());
    true
}

fn serve(stream: TcpStream, state: &State) {
    let Some((path, body, auth)) = read_request_with_auth(&stream) else { return };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request = Request { path: path.clone(), body, auth };
    let prompt = request.last_user();
    state.requests.lock().unwrap().push(request.clone());
    let proto = Proto::of(&path);
    let model = request.body["model"].as_str().unwrap_or("m").to_owned();
    let mut out = stream;
    if prompt.contains("<conversation>") {
        if prompt.contains("take your time") {
            thread::sleep(Duration::from_secs(2));
        }
        let n = state.summaries.fetch_add(1, Ordering::SeqCst) + 1;
        let _ = send_whole(&mut out, proto, &model, &[format!("SUMMARY {n}")], true);
    } else if prompt.contains("endless") {
        let piece = "more ".repeat(20);
        let dropped =
            !trickle(&mut out, proto, &model, std::iter::repeat(piece), Duration::from_millis(1), &state.slow_started);
        state.slow_dropped.store(dropped, Ordering::SeqCst);
    } else if prompt.contains("slow") {
        let words = (0..100).map(|i| format!("word{i} "));
        if !trickle(&mut out, proto, &model, words, Duration::from_millis(100), &state.slow_started) {
            state.slow_dropped.store(true, Ordering::SeqCst);
        }
    } else if prompt.contains("send escapes") {
        let _ = send_whole(&mut out, proto, &model, &[ESCAPES.to_owned(), " done".to_owned()], true);
    } else if prompt.contains("please fail") {
        let body = r#"{"error":{"message":"the server refuses this prompt","type":"invalid_request_error"}}"#;
        send_error(&mut out, "400 Bad Request", "application/json", "", body);
    } else if prompt.contains("html please") {
        let body = "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n<body><h1>Not Found</h1><p>nginx</p><script>x()</script></body></html>\n";
        send_error(&mut out, "404 Not Found", "text/html", "", body);
    } else if prompt.contains("flaky") && state.flaky.fetch_add(1, Ordering::SeqCst) < 2 {
        // The first two tries are refused with a short Retry-After; the third is answered.
        send_error(
            &mut out,
            "503 Service Unavailable",
            "application/json",
            "retry-after: 1\r\n",
            r#"{"error":{"message":"busy"}}"#,
        );
    } else {
        let usage = !prompt.contains("[no usage]");
        let _ = send_whole(&mut out, proto, &model, &["echo: ".to_owned(), prompt], usage);
    }
}

fn send_whole(out: &mut TcpStream, proto: Proto, model: &str, pieces: &[String], usage: bool) -> std::io::Result<()> {
    let mut sse = proto.head(model);
    for p in pieces {
        sse.push_str(&proto.delta(model, p));
    }
    sse.push_str(&proto.tail(model, usage));
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{sse}",
        sse.len()
    )
}

fn responses_head() -> String {
    let created = json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}});
    let item = json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}});
    format!("event: response.created\ndata: {created}\n\nevent: response.output_item.added\ndata: {item}\n\n")
}

fn responses_delta(text: &str) -> String {
    let d = json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "delta": text});
    format!("event: response.output_text.delta\ndata: {d}\n\n")
}

fn responses_tail(usage: bool) -> String {
    let n = |v: u64| if usage { v } else { 0 };
    let done = json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
        "usage": {"input_tokens": n(120), "output_tokens": n(30), "total_tokens": n(150)}}});
    format!("event: response.completed\ndata: {done}\n\n")
}

fn openai_delta(model: &str, text: &str) -> String {
    let chunk = json!({"id": "c1", "object": "chat.completion.chunk", "model": model,
        "choices": [{"index": 0, "delta": {"content": text}}]});
    format!("data: {chunk}\n\n")
}

fn openai_tail(model: &str) -> String {
    let end = json!({"id": "c1", "object": "chat.completion.chunk", "model": model,
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}});
    format!("data: {end}\n\ndata: [DONE]\n\n")
}

fn anthropic_head(model: &str) -> String {
    let start = json!({"type": "message_start", "message": {"id": "m1", "type": "message", "role": "assistant",
        "model": model, "content": [], "usage": {"input_tokens": 120, "output_tokens": 1}}});
    let block = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}});
    format!("event: message_start\ndata: {start}\n\nevent: content_block_start\ndata: {block}\n\n")
}

fn anthropic_delta(text: &str) -> String {
    let d = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}});
    format!("event: content_block_delta\ndata: {d}\n\n")
}

fn anthropic_tail() -> String {
    let stop = json!({"type": "content_block_stop", "index": 0});
    let delta = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 30}});
    format!(
        "event: content_block_stop\ndata: {stop}\n\nevent: message_delta\ndata: {delta}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
    )
}
