//! The HTTP part shared by the model clients: one POST with timeouts, bounded
//! retries with exponential backoff (honouring `Retry-After`), cancellation
//! that drops the request, and a server-sent-events reader.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::error::{hint_for_status, ModelError};
use super::{ClientOptions, ModelInfo};

/// Most of an error body that is kept for the message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

#[derive(Debug)]
pub(crate) struct Http {
    client: reqwest::Client,
    pub(crate) opts: ClientOptions,
    pub(crate) provider: String,
    env_var: String,
}

impl Http {
    pub(crate) fn new(model: &ModelInfo, opts: ClientOptions) -> Result<Http, ModelError> {
        let client = reqwest::Client::builder()
            .connect_timeout(opts.connect_timeout)
            .user_agent(concat!("arbor/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|source| ModelError::Setup { provider: model.provider.clone(), source })?;
        Ok(Http { client, opts, provider: model.provider.clone(), env_var: model.key_env.clone() })
    }

    pub(crate) fn deadline(&self) -> Instant {
        Instant::now() + self.opts.request_timeout
    }

    fn cancelled(&self) -> ModelError {
        ModelError::Cancelled { provider: self.provider.clone() }
    }

    fn timeout(&self, what: &'static str, after: Duration) -> ModelError {
        ModelError::Timeout { provider: self.provider.clone(), what, after }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.opts.initial_backoff.saturating_mul(factor).min(self.opts.max_backoff)
    }

    /// Tells the observer, if any, of retry `attempt` after `delay`.
    fn tell_retry(&self, attempt: u32, delay: Duration, reason: String) {
        if let Some(o) = &self.opts.on_retry {
            (o.0)(super::RetryNotice { attempt, max: self.opts.max_retries, delay, reason });
        }
    }

    /// Waits `delay` unless cancelled or past the deadline.
    async fn pause(&self, delay: Duration, cancel: &CancellationToken, deadline: Instant) -> Result<(), ModelError> {
        if Instant::now() + delay > deadline {
            return Err(self.timeout("the request", self.opts.request_timeout));
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(self.cancelled()),
            _ = tokio::time::sleep(delay) => Ok(()),
        }
    }

    /// POSTs `body` as JSON, retrying 429, 5xx and failed connections up to
    /// `max_retries` times. Returns the first successful response.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
        cancel: &CancellationToken,
        deadline: Instant,
    ) -> Result<reqwest::Response, ModelError> {
        // JSON.stringify's text: a lone surrogate goes out as its escape.
        let bytes = arbor_log::json::to_vec(body).unwrap_or_default();
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let request = self
                .client
                .post(url)
                .headers(headers.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(bytes.clone())
                .send();
            // Dropping `request` (on cancel or timeout) closes the connection.
            let sent = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(self.cancelled()),
                r = tokio::time::timeout_at(deadline, request) => r,
            };
            let may_retry = attempt <= self.opts.max_retries;
            let response = match sent {
                Err(_) => return Err(self.timeout("the request", self.opts.request_timeout)),
                Ok(Err(e)) if may_retry && e.is_connect() => {
                    let delay = self.backoff(attempt);
                    self.tell_retry(attempt, delay, "could not connect".to_owned());
                    self.pause(delay, cancel, deadline).await?;
                    continue;
                }
                Ok(Err(source)) => {
                    return Err(ModelError::Connect {
                        provider: self.provider.clone(),
                        url: url.to_owned(),
                        attempts: attempt,
                        source,
                    })
                }
                Ok(Ok(r)) => r,
            };
            let status = response.status().as_u16();
            if response.status().is_success() {
                return Ok(response);
            }
            if may_retry && (status == 429 || status >= 500) {
                let delay = retry_after(response.headers()).unwrap_or_else(|| self.backoff(attempt));
                if delay <= self.opts.max_retry_after {
                    drop(response);
                    self.tell_retry(attempt, delay, format!("HTTP {status}"));
                    self.pause(delay, cancel, deadline).await?;
                    continue;
                }
            }
            let body = self.read_limited(response, ERROR_BODY_LIMIT, cancel, deadline).await.unwrap_or_default();
            return Err(ModelError::Http {
                provider: self.provider.clone(),
                status,
                message: error_message(&body, status),
                hint: hint_for_status(status, &self.env_var, attempt),
                attempts: attempt,
            });
        }
    }

    /// Reads a whole body, keeping at most `limit` bytes.
    pub(crate) async fn read_limited(
        &self,
        response: reqwest::Response,
        limit: usize,
        cancel: &CancellationToken,
        deadline: Instant,
    ) -> Result<Vec<u8>, ModelError> {
        let mut stream = response.bytes_stream();
        let mut out = Vec::new();
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(self.cancelled()),
                r = tokio::time::timeout_at(deadline.min(Instant::now() + self.opts.idle_timeout), stream.next()) => r,
            };
            match next {
                Err(_) => return Err(self.timeout("the response", self.opts.idle_timeout)),
                Ok(None) => return Ok(out),
                Ok(Some(Err(e))) => {
                    return Err(ModelError::Stream { provider: self.provider.clone(), message: e.to_string() })
                }
                Ok(Some(Ok(chunk))) => {
                    let room = limit.saturating_sub(out.len());
                    out.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    if out.len() >= limit {
                        return Ok(out);
                    }
                }
            }
        }
    }

    /// Reads a non-streamed JSON body.
    pub(crate) async fn read_json(
        &self,
        response: reqwest::Response,
        api: &'static str,
        cancel: &CancellationToken,
        deadline: Instant,
    ) -> Result<Value, ModelError> {
        let limit = self.opts.max_reply_bytes;
        let body = self.read_limited(response, limit.saturating_add(1), cancel, deadline).await?;
        if body.len() > limit {
            return Err(ModelError::TooLarge { provider: self.provider.clone(), limit });
        }
        serde_json::from_slice(&body).map_err(|e| ModelError::Protocol {
            provider: self.provider.clone(),
            api,
            message: format!("the body is not JSON: {e}"),
        })
    }

    /// The events of a `text/event-stream` response.
    pub(crate) fn events(&self, response: reqwest::Response, deadline: Instant) -> SseStream {
        SseStream {
            inner: Box::pin(response.bytes_stream()),
            parser: SseParser::default(),
            queue: VecDeque::new(),
            done: false,
            provider: self.provider.clone(),
            idle: self.opts.idle_timeout,
            total: self.opts.request_timeout,
            deadline,
            received: 0,
            limit: self.opts.max_reply_bytes,
        }
    }
}

impl Http {
    /// Feeds a recorded event stream (the body's bytes as they arrived) to
    /// `on` event by event, as a live response would be: the same parser and
    /// the same size limit. Returns `Ok(true)` once `on` says the reply is
    /// done, `Ok(false)` when the bytes end first.
    pub(crate) fn replay(
        &self,
        chunks: &[&[u8]],
        mut on: impl FnMut(&SseEvent) -> Result<bool, ModelError>,
    ) -> Result<bool, ModelError> {
        let mut parser = SseParser::default();
        let mut received = 0usize;
        for chunk in chunks {
            received = received.saturating_add(chunk.len());
            if received > self.opts.max_reply_bytes {
                return Err(ModelError::TooLarge { provider: self.provider.clone(), limit: self.opts.max_reply_bytes });
            }
            for ev in parser.push(chunk) {
                if on(&ev)? {
                    return Ok(true);
                }
            }
        }
        for ev in parser.finish() {
            if on(&ev)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// True when a response is JSON rather than an event stream (a server that ignored `stream: true`).
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("application/json"))
}

/// The wait a 429/5xx response asks for: `retry-after-ms`, or `Retry-After` in seconds.
/// (An HTTP-date `Retry-After` is not honoured; the backoff applies instead.)
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    get("retry-after").and_then(|v| v.parse::<f64>().ok()).and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// The one line an HTML error page (a proxy's, a gateway's) comes down to:
/// its title, else its first line of text; `None` for a body that is not HTML.
fn html_line(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let head = lower.trim_start();
    if !(head.starts_with("<!doctype html") || head.starts_with("<html") || head.starts_with("<head")) {
        return None;
    }
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(start) = lower.find("<title>").map(|i| i + "<title>".len()) {
        if let Some(len) = lower[start..].find("</title>") {
            let title = squeeze(&text[start..start + len]);
            if !title.is_empty() {
                return Some(title);
            }
        }
    }
    // The first line of text, tags (and what scripts and styles hold) left out.
    let mut kept = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(open) = ["<script", "<style"].iter().filter_map(|t| lower[at..].find(t).map(|i| (at + i, *t))).min()
    {
        kept.push_str(&text[at..open.0]);
        let close = format!("</{}>", &open.1[1..]);
        at = lower[open.0..].find(&close).map_or(text.len(), |i| open.0 + i + close.len());
    }
    kept.push_str(&text[at..]);
    let mut plain = String::new();
    let mut in_tag = false;
    for c in kept.chars() {
        match c {
            '<' => {
                in_tag = true;
                plain.push('\n');
            }
            '>' => in_tag = false,
            c if !in_tag => plain.push(c),
            _ => {}
        }
    }
    plain.lines().map(squeeze).find(|l| !l.is_empty())
}

/// The message of an error body: `error.message`, `error` (a string), `message`,
/// an HTML page's title or first line, or the start of the body.
pub(crate) fn error_message(body: &[u8], status: u16) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let candidates = [v.pointer("/error/message"), v.get("error"), v.get("message"), v.get("detail")];
        if let Some(s) = candidates.into_iter().flatten().find_map(Value::as_str) {
            return s.to_owned();
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if let Some(line) = html_line(text) {
        let short: String = line.chars().take(200).collect();
        return format!("{short} (an HTML page)");
    }
    if text.is_empty() {
        return reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("no message")
            .to_owned();
    }
    let short: String = text.chars().take(300).collect();
    if short.len() < text.len() {
        format!("{short}…")
    } else {
        short
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field (`None` for the default `message`).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// An incremental parser of the `text/event-stream` format.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
}

impl SseParser {
    /// Feeds bytes; returns the events they complete. Linear in the bytes
    /// fed: the complete lines are taken in one pass, and only an unfinished
    /// last line stays buffered.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = vec![];
        let mut rest = bytes;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = rest.split_at(pos);
            rest = &tail[1..];
            let line = if self.buf.is_empty() {
                String::from_utf8_lossy(head).into_owned()
            } else {
                self.buf.extend_from_slice(head);
                String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned()
            };
            self.line(line.strip_suffix('\r').unwrap_or(&line), &mut out);
        }
        self.buf.extend_from_slice(rest);
        out
    }

    /// Ends the stream: a last line without a newline and a pending event are dispatched.
    pub(crate) fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = vec![];
        if !self.buf.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned();
            self.line(line.strip_suffix('\r').unwrap_or(&line), &mut out);
        }
        self.dispatch(&mut out);
        out
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.data.is_empty() && self.event.is_none() {
            return;
        }
        out.push(SseEvent { event: self.event.take(), data: std::mem::take(&mut self.data).join("\n") });
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => self.data.push(value.to_owned()),
            _ => {}
        }
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// The events of one streamed response, read with the idle and total timeouts.
pub(crate) struct SseStream {
    inner: ByteStream,
    parser: SseParser,
    queue: VecDeque<SseEvent>,
    done: bool,
    provider: String,
    idle: Duration,
    total: Duration,
    deadline: Instant,
    /// Bytes of the stream so far, and the most it may have.
    received: usize,
    limit: usize,
}

impl std::fmt::Debug for SseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseStream").field("provider", &self.provider).field("done", &self.done).finish()
    }
}

impl SseStream {
    /// The next event; `None` at the end of the stream.
    pub(crate) async fn next(&mut self, cancel: &CancellationToken) -> Result<Option<SseEvent>, ModelError> {
        loop {
            if let Some(ev) = self.queue.pop_front() {
                return Ok(Some(ev));
            }
            if self.done {
                return Ok(None);
            }
            let idle_deadline = Instant::now() + self.idle;
            let (limit, what, after) = if self.deadline < idle_deadline {
                (self.deadline, "the request", self.total)
            } else {
                (idle_deadline, "the response stream", self.idle)
            };
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ModelError::Cancelled { provider: self.provider.clone() }),
                r = tokio::time::timeout_at(limit, self.inner.next()) => r,
            };
            match next {
                Err(_) => return Err(ModelError::Timeout { provider: self.provider.clone(), what, after }),
                Ok(None) => {
                    self.done = true;
                    self.queue.extend(self.parser.finish());
                }
                Ok(Some(Err(e))) => {
                    return Err(ModelError::Stream { provider: self.provider.clone(), message: e.to_string() })
                }
                Ok(Some(Ok(chunk))) => {
                    self.received = self.received.saturating_add(chunk.len());
                    if self.received > self.limit {
                        return Err(ModelError::TooLarge { provider: self.provider.clone(), limit: self.limit });
                    }
                    self.queue.extend(self.parser.push(chunk.as_ref()))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_parser_handles_split_lines_crlf_comments_and_multiline_data() {
        let mut p = SseParser::default();
        let mut got = p.push(b": ping\r\nevent: a\r\ndata: {\"x\"");
        assert!(got.is_empty());
        got.extend(p.push(b":1}\r\n\r\ndata: one\ndata: two\n\ndata:no-space"));
        got.extend(p.finish());
        assert_eq!(
            got,
            vec![
                SseEvent { event: Some("a".into()), data: "{\"x\":1}".into() },
                SseEvent { event: None, data: "one\ntwo".into() },
                SseEvent { event: None, data: "no-space".into() },
            ]
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut d = HeaderMap::new();
        d.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&d), None);
    }

    #[test]
    fn error_messages_come_from_the_body() {
        assert_eq!(error_message(br#"{"error":{"message":"bad key","type":"x"}}"#, 401), "bad key");
        assert_eq!(
            error_message(br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#, 529),
            "Overloaded"
        );
        assert_eq!(error_message(b"", 404), "Not Found");
        assert_eq!(error_message(b"plain text", 500), "plain text");
        let page =
            b"<!DOCTYPE html>\n<html><head><title>502  Bad\nGateway</title></head><body><h1>502</h1></body></html>";
        assert_eq!(error_message(page, 502), "502 Bad Gateway (an HTML page)");
        let untitled =
            b"<html><body>\n<script>var x = 1;</script><h1>Service Unavailable</h1><p>try later</p></body></html>";
        assert_eq!(error_message(untitled, 503), "Service Unavailable (an HTML page)");
    }
}
