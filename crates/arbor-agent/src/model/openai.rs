//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`, streamed).

use arbor_log::{MessageView, Role};
use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::http::{is_json, Http, SseEvent};
use super::reply::{ReplyBuilder, Tokens};
use super::transform::request_messages;
use super::{AssistantReply, ClientOptions, CompletionRequest, ModelClient, ModelError, ModelInfo, StreamSink};

const API: &str = "OpenAI Chat Completions";

/// A client of an OpenAI-compatible Chat Completions endpoint (OpenAI,
/// OpenRouter, vLLM, llama.cpp, Ollama, …).
#[derive(Debug)]
pub struct OpenAiClient {
    model: ModelInfo,
    key: Option<String>,
    http: Http,
}

impl OpenAiClient {
    /// A client for `model` with an optional bearer key.
    pub fn new(model: ModelInfo, key: Option<String>, options: ClientOptions) -> Result<OpenAiClient, ModelError> {
        let http = Http::new(&model, options)?;
        Ok(OpenAiClient { model, key, http })
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.model.base_url)
    }

    /// The request body (public for tests and debugging).
    pub fn request_body(&self, request: &CompletionRequest) -> Value {
        let mut messages = vec![];
        if let Some(system) = &request.system_prompt {
            messages.push(json!({"role": "system", "content": system}));
        }
        for m in &request_messages(&request.messages) {
            push_message(m, &mut messages);
        }
        let mut body = Map::new();
        body.insert("model".into(), self.model.id.clone().into());
        body.insert("messages".into(), Value::Array(messages));
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
        if let Some(max) = request.max_tokens {
            // OpenAI itself wants the newer field; compatible servers mostly know only the old one.
            let field =
                if self.model.base_url.contains("api.openai.com") { "max_completion_tokens" } else { "max_tokens" };
            body.insert(field.into(), max.into());
        }
        if let (Some(effort), true) = (request.reasoning, self.model.reasoning) {
            body.insert("reasoning_effort".into(), effort.as_str().into());
        }
        Value::Object(body)
    }

    fn protocol(&self, message: String) -> ModelError {
        ModelError::Protocol { provider: self.model.provider.clone(), api: API, message }
    }

    fn stream_error(&self, message: String) -> ModelError {
        ModelError::Stream { provider: self.model.provider.clone(), message }
    }
}

/// pi message → Chat Completions message(s).
fn push_message(m: &Value, out: &mut Vec<Value>) {
    let blocks = m.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let text_of = |sep: &str| -> String {
        match m.get("content") {
            Some(Value::String(s)) => s.clone(),
            _ => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(sep),
        }
    };
    // Model messages (after convert_to_llm) have these three roles only.
    match MessageView::new(m).role() {
        Some(Role::User) => {
            let content = match m.get("content") {
                Some(Value::String(s)) => Value::String(s.clone()),
                _ => Value::Array(
                    blocks
                        .iter()
                        .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                            Some("text") => Some(json!({"type": "text", "text": b.get("text").cloned().unwrap_or_default()})),
                            Some("image") => {
                                let mime = b.get("mimeType").and_then(Value::as_str).unwrap_or("image/png");
                                let data = b.get("data").and_then(Value::as_str).unwrap_or("");
                                Some(json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}}))
                            }
                            _ => None,
                        })
                        .collect(),
                ),
            };
            out.push(json!({"role": "user", "content": content}));
        }
        Some(Role::Assistant) => {
            let text = text_of("");
            let calls: Vec<Value> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
                .map(|b| {
                    let args = b.get("arguments").cloned().unwrap_or_else(|| json!({}));
                    json!({
                        "id": b.get("id").cloned().unwrap_or_default(),
                        "type": "function",
                        "function": {"name": b.get("name").cloned().unwrap_or_default(), "arguments": args.to_string()},
                    })
                })
                .collect();
            if text.is_empty() && calls.is_empty() {
                return;
            }
            let mut msg = Map::new();
            msg.insert("role".into(), "assistant".into());
            msg.insert("content".into(), if text.is_empty() { Value::Null } else { text.into() });
            if !calls.is_empty() {
                msg.insert("tool_calls".into(), Value::Array(calls));
            }
            out.push(Value::Object(msg));
        }
        Some(Role::ToolResult) => out.push(json!({
            "role": "tool",
            "tool_call_id": m.get("toolCallId").cloned().unwrap_or_default(),
            "content": text_of("\n"),
        })),
        _ => {}
    }
}

/// The reasoning text of a message or delta (`reasoning_content`, or OpenRouter's `reasoning`), as thinking.
fn push_reasoning(msg: &Value, reply: &mut ReplyBuilder) {
    for field in ["reasoning_content", "reasoning"] {
        if let Some(t) = msg.get(field).and_then(Value::as_str).filter(|t| !t.is_empty()) {
            reply.push_thinking(t, field);
        }
    }
}

fn stop_reason(finish: &str) -> &'static str {
    match finish {
        "length" => "length",
        "tool_calls" | "function_call" => "toolUse",
        "content_filter" => "error",
        _ => "stop",
    }
}

fn read_usage(usage: &Value, tokens: &mut Tokens) {
    let n = |p: &str| usage.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let prompt = n("/prompt_tokens");
    let cached = n("/prompt_tokens_details/cached_tokens");
    tokens.input = prompt.saturating_sub(cached);
    tokens.cache_read = cached;
    tokens.output = n("/completion_tokens");
}

fn finish_with(reply: AssistantReply, finish: Option<&str>) -> AssistantReply {
    if finish != Some("content_filter") {
        return reply;
    }
    reply.with_error_message("the provider's content filter stopped the reply")
}

/// What a streamed reply said so far beyond its content: the finish reason
/// and the tool-call slots.
#[derive(Debug, Default)]
struct Decoding {
    finish: Option<String>,
    slots: Vec<(u64, usize)>,
}

impl OpenAiClient {
    /// Sends `request` and fills `reply` as the answer streams; returns the
    /// finish reason. On an error `reply` keeps what arrived before it.
    async fn run(
        &self,
        request: &CompletionRequest,
        cancel: &CancellationToken,
        reply: &mut ReplyBuilder,
    ) -> Result<Option<String>, ModelError> {
        let deadline = self.http.deadline();
        let body = self.request_body(request);
        let response = self.http.post(&self.url(), self.headers()?, &body, cancel, deadline).await?;
        if is_json(&response) {
            let v = self.http.read_json(response, API, cancel, deadline).await?;
            return self.read_whole(&v, reply).map(Some);
        }
        let mut events = self.http.events(response, deadline);
        let mut d = Decoding::default();
        while let Some(ev) = events.next(cancel).await? {
            if self.on_sse(&ev, &mut d, reply)? {
                return Ok(d.finish);
            }
        }
        self.ended(d)
    }

    /// Applies one server-sent event; true at `[DONE]`.
    fn on_sse(&self, ev: &SseEvent, d: &mut Decoding, reply: &mut ReplyBuilder) -> Result<bool, ModelError> {
        let data = ev.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            return Ok(true);
        }
        let chunk: Value =
            arbor_log::json::parse(data).map_err(|e| self.protocol(format!("a stream chunk is not JSON: {e}")))?;
        if let Some(f) = self.on_chunk(&chunk, reply, &mut d.slots)? {
            d.finish = Some(f);
        }
        Ok(false)
    }

    /// The stream ended without `[DONE]`: complete when a finish reason came.
    fn ended(&self, d: Decoding) -> Result<Option<String>, ModelError> {
        if d.finish.is_none() {
            return Err(self.stream_error("the stream ended before the reply was complete".to_owned()));
        }
        Ok(d.finish)
    }

    /// Decodes a recorded event stream (the response body's bytes as they
    /// arrived) into the reply a live request would record: the same
    /// parser, decoding and size limit, no network. For replaying captured
    /// streams.
    pub fn replay(&self, chunks: &[&[u8]]) -> AssistantReply {
        let mut reply = ReplyBuilder::default();
        let mut d = Decoding::default();
        let done = self.http.replay(chunks, |ev| self.on_sse(ev, &mut d, &mut reply));
        let finish = done.and_then(|done| if done { Ok(d.finish) } else { self.ended(d) });
        match finish {
            Ok(finish) => self.finished(reply, finish.as_deref()),
            Err(e) => reply.fail(&self.model, &e, self.http.opts.clock.now_ms()),
        }
    }

    /// The request headers: the key as a bearer token.
    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.key {
            let value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| self.protocol("the API key is not a valid header value".to_owned()))?;
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }

    /// Fills `reply` from a whole (not streamed) answer; returns the finish reason.
    fn read_whole(&self, v: &Value, reply: &mut ReplyBuilder) -> Result<String, ModelError> {
        if let Some(e) = v.get("error") {
            return Err(self.stream_error(e.get("message").and_then(Value::as_str).unwrap_or("error").to_owned()));
        }
        let choice = v.pointer("/choices/0").ok_or_else(|| self.protocol("no choices in the response".into()))?;
        let msg = choice.get("message").cloned().unwrap_or_default();
        push_reasoning(&msg, reply);
        if let Some(t) = msg.get("content").and_then(Value::as_str) {
            reply.push_text(t);
        }
        let mut slots = vec![];
        for (i, call) in msg.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let s = |p: &str| call.pointer(p).and_then(Value::as_str);
            reply.tool_call_delta(&mut slots, i as u64, s("/id"), s("/function/name"), s("/function/arguments"));
        }
        if let Some(u) = v.get("usage") {
            read_usage(u, &mut reply.tokens);
        }
        Ok(choice.get("finish_reason").and_then(Value::as_str).unwrap_or("stop").to_owned())
    }

    /// Applies one stream chunk to `reply`; returns its finish reason, if it has one.
    fn on_chunk(
        &self,
        chunk: &Value,
        reply: &mut ReplyBuilder,
        slots: &mut Vec<(u64, usize)>,
    ) -> Result<Option<String>, ModelError> {
        if let Some(e) = chunk.get("error") {
            let message = e.get("message").and_then(Value::as_str).map_or_else(|| e.to_string(), str::to_owned);
            return Err(self.stream_error(message));
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            read_usage(u, &mut reply.tokens);
        }
        let Some(choice) = chunk.pointer("/choices/0") else { return Ok(None) };
        if let Some(delta) = choice.get("delta") {
            push_reasoning(delta, reply);
            if let Some(t) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                reply.push_text(t);
            }
            for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                let s = |p: &str| call.pointer(p).and_then(Value::as_str);
                let slot = call.get("index").and_then(Value::as_u64).unwrap_or(0);
                reply.tool_call_delta(slots, slot, s("/id"), s("/function/name"), s("/function/arguments"));
            }
        }
        Ok(choice.get("finish_reason").and_then(Value::as_str).map(str::to_owned))
    }

    fn finished(&self, reply: ReplyBuilder, finish: Option<&str>) -> AssistantReply {
        let out = reply.finish(&self.model, stop_reason(finish.unwrap_or("stop")), self.http.opts.clock.now_ms());
        finish_with(out, finish)
    }
}

#[async_trait]
impl ModelClient for OpenAiClient {
    fn model(&self) -> &ModelInfo {
        &self.model
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        cancel: CancellationToken,
    ) -> Result<AssistantReply, ModelError> {
        let mut reply = ReplyBuilder::default();
        let finish = self.run(request, &cancel, &mut reply).await?;
        Ok(self.finished(reply, finish.as_deref()))
    }

    async fn stream(
        &self,
        request: &CompletionRequest,
        cancel: CancellationToken,
        sink: Option<StreamSink>,
    ) -> AssistantReply {
        let mut reply = ReplyBuilder::with_sink(sink);
        match self.run(request, &cancel, &mut reply).await {
            Ok(finish) => self.finished(reply, finish.as_deref()),
            Err(e) => reply.fail(&self.model, &e, self.http.opts.clock.now_ms()),
        }
    }
}
