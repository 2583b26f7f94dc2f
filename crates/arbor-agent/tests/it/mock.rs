//! A mock model server on 127.0.0.1:0 that speaks Chat Completions and
//! Anthropic Messages (streamed), records requests, and can fail or hang.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A streamed answer with this text, in the request's API.
    Text(String),
    /// A streamed answer that ends with the given stop (`length`, `tool_calls`/`tool_use`).
    TextWithStop(String, &'static str),
    /// An error status with an optional `Retry-After` and a body.
    Status { code: u16, retry_after: Option<&'static str>, body: String },
    /// Headers and one comment, then silence until the client hangs up.
    Hang,
    /// A non-streamed JSON body.
    Json(Value),
    /// A raw SSE body.
    RawSse(String),
    /// A streamed answer with this text in `chunks` deltas, pausing
    /// `delay_ms` between them; a client that hangs up during a pause is
    /// reported on [`MockServer::disconnected`].
    Slow { text: String, chunks: usize, delay_ms: u64 },
    /// A streamed answer that never ends: text deltas as fast as the client
    /// reads them, until it hangs up (reported on [`MockServer::disconnected`]).
    Endless,
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The text of the last user message of the request.
    pub fn prompt(&self) -> String {
        let msgs = self.body["messages"].as_array().cloned().unwrap_or_default();
        let last = msgs.iter().rev().find(|m| m["role"] == "user").cloned().unwrap_or_default();
        match &last["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join(""),
            _ => String::new(),
        }
    }

    /// The system prompt (either API).
    pub fn system(&self) -> String {
        if let Some(s) = self.body["system"].as_str() {
            return s.to_owned();
        }
        let msgs = self.body["messages"].as_array().cloned().unwrap_or_default();
        msgs.iter().find(|m| m["role"] == "system").and_then(|m| m["content"].as_str()).unwrap_or("").to_owned()
    }
}

#[derive(Debug)]
struct State {
    script: VecDeque<Reply>,
    default: Reply,
    /// The answer to every summarization request, when set (instead of the script).
    summaries: Option<Reply>,
    requests: Vec<Recorded>,
}

/// The server. Dropping it stops accepting.
#[derive(Debug)]
pub struct MockServer {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    /// Notified (one permit) when a request has been read.
    pub arrived: Arc<Notify>,
    /// Notified (one permit) when a client hung up on a `Hang` reply.
    pub disconnected: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockServer {
    /// Starts a server whose default answer is `Text("mock summary")`.
    pub async fn start() -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            script: VecDeque::new(),
            default: Reply::Text("mock summary".into()),
            summaries: None,
            requests: vec![],
        }));
        let arrived = Arc::new(Notify::new());
        let disconnected = Arc::new(Notify::new());
        let task = {
            let (state, arrived, disconnected) = (state.clone(), arrived.clone(), disconnected.clone());
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (state, arrived, disconnected) = (state.clone(), arrived.clone(), disconnected.clone());
                    tokio::spawn(async move {
                        let _ = serve(stream, state, arrived, disconnected).await;
                    });
                }
            })
        };
        MockServer { addr, state, arrived, disconnected, task }
    }

    /// `http://127.0.0.1:port` (the Anthropic base URL).
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:port/v1` (the Chat Completions base URL).
    pub fn base_v1(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues answers for the next requests.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.state.lock().unwrap().script.extend(replies);
    }

    /// Sets the answer used when the script is empty.
    pub fn set_default(&self, reply: Reply) {
        self.state.lock().unwrap().default = reply;
    }

    /// Answers every summarization request (pi's summarization system
    /// prompt) with `reply`, leaving the script to the other requests.
    pub fn answer_summaries(&self, reply: Reply) {
        self.state.lock().unwrap().summaries = Some(reply);
    }

    /// The requests so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<(String, String)>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next()?;
    let path = request_line.split(' ').nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((path, headers, body))
}

async fn serve(
    mut stream: TcpStream,
    state: Arc<Mutex<State>>,
    arrived: Arc<Notify>,
    disconnected: Arc<Notify>,
) -> std::io::Result<()> {
    let Some((path, headers, body)) = read_request(&mut stream).await else { return Ok(()) };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let reply = {
        let mut s = state.lock().unwrap();
        let recorded = Recorded { path: path.clone(), headers, body: body.clone() };
        let summary = recorded.system().starts_with("You summarize conversations");
        s.requests.push(recorded);
        match (&s.summaries, summary) {
            (Some(reply), true) => reply.clone(),
            _ => s.script.pop_front().unwrap_or_else(|| s.default.clone()),
        }
    };
    arrived.notify_one();
    let anthropic = path.ends_with("/v1/messages");
    let model = body["model"].as_str().unwrap_or("m").to_owned();
    let sse_head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    match reply {
        Reply::Text(text) => {
            let stop = if anthropic { "end_turn" } else { "stop" };
            let sse = if anthropic { anthropic_sse(&model, &text, stop) } else { openai_sse(&model, &text, stop) };
            stream.write_all(format!("{sse_head}{sse}").as_bytes()).await?;
        }
        Reply::TextWithStop(text, stop) => {
            let sse = if anthropic { anthropic_sse(&model, &text, stop) } else { openai_sse(&model, &text, stop) };
            stream.write_all(format!("{sse_head}{sse}").as_bytes()).await?;
        }
        Reply::RawSse(sse) => stream.write_all(format!("{sse_head}{sse}").as_bytes()).await?,
        Reply::Slow { text, chunks, delay_ms } => {
            let pieces = split_chunks(&text, chunks);
            let (head, deltas, tail) = if anthropic {
                anthropic_parts(&model, &pieces, "end_turn")
            } else {
                openai_parts(&model, &pieces, "stop")
            };
            stream.write_all(format!("{sse_head}{head}").as_bytes()).await?;
            for (i, delta) in deltas.iter().enumerate() {
                if i > 0 {
                    let mut buf = [0u8; 256];
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(delay_ms)) => {}
                        r = stream.read(&mut buf) => {
                            if matches!(r, Ok(0) | Err(_)) {
                                disconnected.notify_one();
                                return Ok(());
                            }
                        }
                    }
                }
                stream.write_all(delta.as_bytes()).await?;
                stream.flush().await?;
            }
            stream.write_all(tail.as_bytes()).await?;
        }
        Reply::Endless => {
            let (head, deltas, _) = if anthropic {
                anthropic_parts(&model, &["more text ".repeat(100)], "end_turn")
            } else {
                openai_parts(&model, &["more text ".repeat(100)], "stop")
            };
            stream.write_all(format!("{sse_head}{head}").as_bytes()).await?;
            while stream.write_all(deltas[0].as_bytes()).await.is_ok() {}
            disconnected.notify_one();
            return Ok(());
        }
        Reply::Json(v) => {
            let text = v.to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                text.len()
            );
            stream.write_all(format!("{head}{text}").as_bytes()).await?;
        }
        Reply::Status { code, retry_after, body } => {
            let retry = retry_after.map(|r| format!("retry-after: {r}\r\n")).unwrap_or_default();
            let head = format!(
                "HTTP/1.1 {code} Mock\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{retry}connection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(format!("{head}{body}").as_bytes()).await?;
        }
        Reply::Hang => {
            stream.write_all(format!("{sse_head}: waiting\n\n").as_bytes()).await?;
            stream.flush().await?;
            let mut sink = [0u8; 1024];
            loop {
                match stream.read(&mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            disconnected.notify_one();
            return Ok(());
        }
    }
    stream.flush().await?;
    stream.shutdown().await
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

/// A Chat Completions stream: the text in two chunks, the finish reason, usage, `[DONE]`.
pub fn openai_sse(model: &str, text: &str, finish: &str) -> String {
    let mid = text.char_indices().nth(text.chars().count() / 2).map_or(text.len(), |(i, _)| i);
    let (a, b) = text.split_at(mid);
    let mut out = String::new();
    out.push_str(&data(json!({"id":"c1","object":"chat.completion.chunk","model":model,"choices":[{"index":0,"delta":{"role":"assistant","content":a}}]})));
    out.push_str(&data(json!({"id":"c1","choices":[{"index":0,"delta":{"content":b},"finish_reason":null}]})));
    out.push_str(&data(json!({"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":finish}]})));
    out.push_str(&data(json!({"id":"c1","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":20}}})));
    out.push_str("data: [DONE]\n\n");
    out
}

fn event(name: &str, v: Value) -> String {
    format!("event: {name}\ndata: {v}\n\n")
}

/// An Anthropic Messages stream with one text block.
pub fn anthropic_sse(model: &str, text: &str, stop: &str) -> String {
    let mut out = String::new();
    out.push_str(&event("message_start", json!({"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","model":model,"content":[],"usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":10,"cache_creation_input_tokens":5}}})));
    out.push_str(&event(
        "content_block_start",
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    ));
    out.push_str(&event("ping", json!({"type":"ping"})));
    for piece in [&text[..text.len() / 2], &text[text.len() / 2..]] {
        out.push_str(&event(
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":piece}}),
        ));
    }
    out.push_str(&event("content_block_stop", json!({"type":"content_block_stop","index":0})));
    out.push_str(&event(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":stop},"usage":{"output_tokens":25}}),
    ));
    out.push_str(&event("message_stop", json!({"type":"message_stop"})));
    out
}

/// Anthropic events as one SSE body (for hand-made streams).
pub fn anthropic_events(events: &[(&str, Value)]) -> String {
    events.iter().map(|(n, v)| event(n, v.clone())).collect()
}

/// `text` in `n` pieces of about the same number of characters (none empty).
pub fn split_chunks(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let n = n.clamp(1, chars.len().max(1));
    let size = chars.len().div_ceil(n).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// A Chat Completions stream in parts: the head (empty), one event per piece, the tail.
pub fn openai_parts(model: &str, pieces: &[String], finish: &str) -> (String, Vec<String>, String) {
    let deltas = pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let delta = if i == 0 { json!({"role": "assistant", "content": p}) } else { json!({"content": p}) };
            data(json!({"id":"c1","object":"chat.completion.chunk","model":model,"choices":[{"index":0,"delta":delta,"finish_reason":null}]}))
        })
        .collect();
    let mut tail = String::new();
    tail.push_str(&data(json!({"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":finish}]})));
    tail.push_str(&data(json!({"id":"c1","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":20}}})));
    tail.push_str("data: [DONE]\n\n");
    (String::new(), deltas, tail)
}

/// An Anthropic Messages stream in parts: the head, one event per piece, the tail.
pub fn anthropic_parts(model: &str, pieces: &[String], stop: &str) -> (String, Vec<String>, String) {
    let mut head = String::new();
    head.push_str(&event("message_start", json!({"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","model":model,"content":[],"usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":10,"cache_creation_input_tokens":5}}})));
    head.push_str(&event(
        "content_block_start",
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    ));
    let deltas = pieces
        .iter()
        .map(|p| {
            event(
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":p}}),
            )
        })
        .collect();
    let mut tail = String::new();
    tail.push_str(&event("content_block_stop", json!({"type":"content_block_stop","index":0})));
    tail.push_str(&event(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":stop},"usage":{"output_tokens":25}}),
    ));
    tail.push_str(&event("message_stop", json!({"type":"message_stop"})));
    (head, deltas, tail)
}
