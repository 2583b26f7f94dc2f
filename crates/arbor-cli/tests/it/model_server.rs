//! A model server for the chat tests, on 127.0.0.1:0, speaking OpenAI Chat
//! Completions (`POST …/chat/completions`) and Anthropic Messages
//! (`POST …/v1/messages`), always streamed (SSE).
//!
//! What it answers depends only on the request, so a test needs no script:
//! - a summary request (the prompt holds `<conversation>`) gets `SUMMARY n`,
//!   after 2 s when the conversation mentions `take your time`;
//! - a prompt containing `slow` streams `word0 word1 …` one word every 100 ms
//!   (up to 100) and notes when the client hangs up;
//! - a prompt containing `endless` streams 100-byte pieces every millisecond
//!   and never ends the reply, until the client hangs up;
//! - a prompt containing `please fail` gets HTTP 400 (not retried);
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
        for m in self.body["messages"].as_array().into_iter().flatten() {
            out.push(format!("{}: {}", m["role"].as_str().unwrap_or("?"), text(&m["content"])));
        }
        out
    }

    pub fn last_user(&self) -> String {
        let msgs = self.body["messages"].as_array().cloned().unwrap_or_default();
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

fn serve(stream: TcpStream, state: &State) {
    let Some((path, body, auth)) = read_request_with_auth(&stream) else { return };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request = Request { path: path.clone(), body, auth };
    let prompt = request.last_user();
    state.requests.lock().unwrap().push(request.clone());
    let anthropic = path.ends_with("/messages");
    let model = request.body["model"].as_str().unwrap_or("m").to_owned();
    let mut out = stream;
    if prompt.contains("<conversation>") {
        if prompt.contains("take your time") {
            thread::sleep(Duration::from_secs(2));
        }
        let n = state.summaries.fetch_add(1, Ordering::SeqCst) + 1;
        let _ = send_whole(&mut out, anthropic, &model, &[format!("SUMMARY {n}")]);
    } else if prompt.contains("endless") {
        let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
        if anthropic {
            let _ = out.write_all(anthropic_head(&model).as_bytes());
        }
        let piece = "more ".repeat(20);
        let event = if anthropic { anthropic_delta(&piece) } else { openai_delta(&model, &piece) };
        while out.write_all(event.as_bytes()).and_then(|_| out.flush()).is_ok() {
            thread::sleep(Duration::from_millis(1));
        }
    } else if prompt.contains("slow") {
        let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
        if anthropic {
            let _ = out.write_all(anthropic_head(&model).as_bytes());
        }
        for i in 0..100 {
            let piece = format!("word{i} ");
            let event = if anthropic { anthropic_delta(&piece) } else { openai_delta(&model, &piece) };
            if out.write_all(event.as_bytes()).and_then(|_| out.flush()).is_err() {
                state.slow_dropped.store(true, Ordering::SeqCst);
                return;
            }
            state.slow_started.store(true, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(100));
        }
        let _ = out.write_all(if anthropic { anthropic_tail() } else { openai_tail(&model) }.as_bytes());
    } else if prompt.contains("send escapes") {
        let _ = send_whole(&mut out, anthropic, &model, &[ESCAPES.to_owned(), " done".to_owned()]);
    } else if prompt.contains("please fail") {
        let body = r#"{"error":{"message":"the server refuses this prompt","type":"invalid_request_error"}}"#;
        let _ = write!(
            out,
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
    } else if prompt.contains("[no usage]") && !anthropic {
        let mut sse = openai_delta(&model, &format!("echo: {prompt}"));
        let end = json!({"id": "c1", "object": "chat.completion.chunk", "model": model,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}});
        sse.push_str(&format!("data: {end}\n\ndata: [DONE]\n\n"));
        let _ = write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{sse}",
            sse.len()
        );
    } else {
        let _ = send_whole(&mut out, anthropic, &model, &["echo: ".to_owned(), prompt]);
    }
}

fn send_whole(out: &mut TcpStream, anthropic: bool, model: &str, pieces: &[String]) -> std::io::Result<()> {
    let mut sse = String::new();
    if anthropic {
        sse.push_str(&anthropic_head(model));
    }
    for p in pieces {
        sse.push_str(&if anthropic { anthropic_delta(p) } else { openai_delta(model, p) });
    }
    sse.push_str(&if anthropic { anthropic_tail() } else { openai_tail(model) });
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{sse}",
        sse.len()
    )
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
