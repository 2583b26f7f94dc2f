//! Anthropic Messages (`POST {base}/v1/messages`, streamed).

use arbor_log::{MessageView, Role};
use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::http::{is_json, Http, SseEvent};
use super::reply::{ReplyBuilder, Tokens};
use super::transform::request_messages;
use super::{AssistantReply, ClientOptions, CompletionRequest, ModelClient, ModelError, ModelInfo, StreamSink};

const API: &str = "Anthropic Messages";
/// The API version sent in `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is used when a request has none.
const DEFAULT_MAX_TOKENS: u64 = 4096;

/// A client of the Anthropic Messages API.
#[derive(Debug)]
pub struct AnthropicClient {
    model: ModelInfo,
    key: Option<String>,
    http: Http,
}

impl AnthropicClient {
    /// A client for `model` with an optional `x-api-key`.
    pub fn new(model: ModelInfo, key: Option<String>, options: ClientOptions) -> Result<AnthropicClient, ModelError> {
        let http = Http::new(&model, options)?;
        Ok(AnthropicClient { model, key, http })
    }

    fn url(&self) -> String {
        format!("{}/v1/messages", self.model.base_url)
    }

    /// The request body (public for tests and debugging).
    pub fn request_body(&self, request: &CompletionRequest) -> Value {
        let mut messages: Vec<Value> = vec![];
        for m in &request_messages(&request.messages) {
            push_message(m, &mut messages);
        }
        let mut max_tokens = request.max_tokens.or(self.model.max_output_tokens).unwrap_or(DEFAULT_MAX_TOKENS);
        let mut body = Map::new();
        body.insert("model".into(), self.model.id.clone().into());
        if let Some(system) = &request.system_prompt {
            body.insert("system".into(), system.clone().into());
        }
        body.insert("messages".into(), Value::Array(messages));
        body.insert("stream".into(), true.into());
        if let (Some(effort), true) = (request.reasoning, self.model.reasoning) {
            // The thinking budget comes on top of the answer's tokens (max_tokens must exceed it).
            let budget = effort.budget_tokens();
            max_tokens = max_tokens.saturating_add(budget);
            if let Some(cap) = self.model.max_output_tokens {
                max_tokens = max_tokens.min(cap.max(budget + 1024));
            }
            body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        }
        body.insert("max_tokens".into(), max_tokens.into());
        Value::Object(body)
    }

    fn protocol(&self, message: String) -> ModelError {
        ModelError::Protocol { provider: self.model.provider.clone(), api: API, message }
    }

    fn stream_error(&self, message: String) -> ModelError {
        ModelError::Stream { provider: self.model.provider.clone(), message }
    }
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// pi message → Anthropic message; consecutive tool results share one user message.
fn push_message(m: &Value, out: &mut Vec<Value>) {
    let blocks = m.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    // Model messages (after convert_to_llm) have these three roles only.
    match MessageView::new(m).role() {
        Some(Role::User) => {
            if let Some(content) = user_content(m.get("content"), blocks) {
                out.push(json!({"role": "user", "content": content}));
            }
        }
        Some(Role::Assistant) => {
            let parts: Vec<Value> = blocks.iter().filter_map(assistant_part).collect();
            if !parts.is_empty() {
                out.push(json!({"role": "assistant", "content": parts}));
            }
        }
        Some(Role::ToolResult) => push_tool_result(m, out),
        _ => {}
    }
}

/// A user message's content: its text, or its text and image blocks; `None` when empty.
fn user_content(content: Option<&Value>, blocks: &[Value]) -> Option<Value> {
    match content {
        Some(Value::String(s)) if !s.is_empty() => Some(Value::String(s.clone())),
        Some(Value::String(_)) => None,
        _ => {
            let parts: Vec<Value> = blocks
                .iter()
                .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("text") if !str_of(b, "text").is_empty() => {
                        Some(json!({"type": "text", "text": str_of(b, "text")}))
                    }
                    Some("image") => Some(json!({"type": "image", "source": {
                        "type": "base64", "media_type": str_of(b, "mimeType"), "data": str_of(b, "data")}})),
                    _ => None,
                })
                .collect();
            (!parts.is_empty()).then_some(Value::Array(parts))
        }
    }
}

/// One block of an assistant message, as Anthropic takes it back.
fn assistant_part(b: &Value) -> Option<Value> {
    match b.get("type").and_then(Value::as_str) {
        Some("text") if !str_of(b, "text").is_empty() => Some(json!({"type": "text", "text": str_of(b, "text")})),
        Some("thinking") if !str_of(b, "thinking").is_empty() => {
            let sig = str_of(b, "thinkingSignature");
            // Only Anthropic's own signatures can be sent back as thinking.
            if sig.len() > 32 {
                Some(json!({"type": "thinking", "thinking": str_of(b, "thinking"), "signature": sig}))
            } else {
                Some(json!({"type": "text", "text": str_of(b, "thinking")}))
            }
        }
        Some("toolCall") => Some(json!({
            "type": "tool_use",
            "id": str_of(b, "id"),
            "name": str_of(b, "name"),
            "input": b.get("arguments").cloned().unwrap_or_else(|| json!({})),
        })),
        _ => None,
    }
}

/// A tool result, added to the user message of tool results before it, or in a new one.
fn push_tool_result(m: &Value, out: &mut Vec<Value>) {
    let text = arbor_log::messages::content_text(m.get("content"), "\n");
    let block = json!({
        "type": "tool_result",
        "tool_use_id": str_of(m, "toolCallId"),
        "content": [{"type": "text", "text": if text.is_empty() { "(no output)".to_owned() } else { text }}],
        "is_error": m.get("isError").and_then(Value::as_bool).unwrap_or(false),
    });
    if let Some(Value::Array(last)) = out.last_mut().and_then(|l| {
        let only_results = l.get("role").and_then(Value::as_str) == Some("user")
            && l.get("content")
                .and_then(Value::as_array)
                .is_some_and(|c| c.iter().all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")));
        if only_results {
            l.get_mut("content")
        } else {
            None
        }
    }) {
        last.push(block);
    } else {
        out.push(json!({"role": "user", "content": [block]}));
    }
}

fn stop_reason(reason: &str) -> &'static str {
    match reason {
        "max_tokens" => "length",
        "tool_use" => "toolUse",
        "refusal" => "error",
        _ => "stop",
    }
}

fn read_usage(usage: &Value, tokens: &mut Tokens) {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64);
    if let Some(v) = n("input_tokens") {
        tokens.input = v;
    }
    if let Some(v) = n("output_tokens") {
        tokens.output = v;
    }
    if let Some(v) = n("cache_read_input_tokens") {
        tokens.cache_read = v;
    }
    if let Some(v) = n("cache_creation_input_tokens") {
        tokens.cache_write = v;
    }
}

fn with_refusal(reply: AssistantReply, reason: &str) -> AssistantReply {
    if reason != "refusal" {
        return reply;
    }
    reply.with_error_message("the model refused to answer")
}

impl AnthropicClient {
    /// Sends `request` and fills `reply` as the answer streams; returns the
    /// stop reason. On an error `reply` keeps what arrived before it.
    async fn run(
        &self,
        request: &CompletionRequest,
        cancel: &CancellationToken,
        reply: &mut ReplyBuilder,
    ) -> Result<String, ModelError> {
        let deadline = self.http.deadline();
        let body = self.request_body(request);
        let response = self.http.post(&self.url(), self.headers()?, &body, cancel, deadline).await?;
        if is_json(&response) {
            let v = self.http.read_json(response, API, cancel, deadline).await?;
            return self.read_whole(&v, reply);
        }
        let mut events = self.http.events(response, deadline);
        let mut reason = String::new();
        while let Some(ev) = events.next(cancel).await? {
            if self.on_sse(&ev, reply, &mut reason)? {
                return Ok(reason);
            }
        }
        Err(self.ended())
    }

    /// Applies one server-sent event; true at `message_stop`.
    fn on_sse(&self, ev: &SseEvent, reply: &mut ReplyBuilder, reason: &mut String) -> Result<bool, ModelError> {
        if ev.data.trim().is_empty() {
            return Ok(false);
        }
        let data: Value =
            arbor_log::json::parse(&ev.data).map_err(|e| self.protocol(format!("a stream event is not JSON: {e}")))?;
        let kind = ev.event.as_deref().unwrap_or_else(|| str_of(&data, "type"));
        self.on_event(kind, &data, reply, reason)
    }

    fn ended(&self) -> ModelError {
        self.stream_error("the stream ended before message_stop".to_owned())
    }

    /// Decodes a recorded event stream (the response body's bytes as they
    /// arrived) into the reply a live request would record: the same
    /// parser, decoding and size limit, no network. For replaying captured
    /// streams.
    pub fn replay(&self, chunks: &[&[u8]]) -> AssistantReply {
        let mut reply = ReplyBuilder::default();
        let mut reason = String::new();
        let done = self.http.replay(chunks, |ev| self.on_sse(ev, &mut reply, &mut reason));
        match done.and_then(|done| if done { Ok(()) } else { Err(self.ended()) }) {
            Ok(()) => self.finished(reply, &reason),
            Err(e) => reply.fail(&self.model, &e, self.http.opts.clock.now_ms()),
        }
    }

    /// The request headers: the API version and the key.
    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(ANTHROPIC_VERSION));
        if let Some(key) = &self.key {
            let value = HeaderValue::from_str(key)
                .map_err(|_| self.protocol("the API key is not a valid header value".to_owned()))?;
            headers.insert("x-api-key", value);
        }
        Ok(headers)
    }

    /// Fills `reply` from a whole (not streamed) answer; returns the stop reason.
    fn read_whole(&self, v: &Value, reply: &mut ReplyBuilder) -> Result<String, ModelError> {
        if v.get("type").and_then(Value::as_str) == Some("error") {
            return Err(
                self.stream_error(v.pointer("/error/message").and_then(Value::as_str).unwrap_or("error").to_owned())
            );
        }
        let content = v
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| self.protocol("no content in the response".into()))?;
        for (i, b) in content.iter().enumerate() {
            let kind = str_of(b, "type");
            reply.start_block(i, kind, str_of(b, "id"), str_of(b, "name")).map_err(|m| self.protocol(m))?;
            match kind {
                "text" => reply.delta_at(i, "text", str_of(b, "text")),
                "thinking" => {
                    reply.delta_at(i, "thinking", str_of(b, "thinking"));
                    reply.delta_at(i, "signature", str_of(b, "signature"));
                }
                "tool_use" => reply.delta_at(i, "args", &b.get("input").cloned().unwrap_or_default().to_string()),
                _ => {}
            }
        }
        if let Some(u) = v.get("usage") {
            read_usage(u, &mut reply.tokens);
        }
        Ok(str_of(v, "stop_reason").to_owned())
    }

    /// Applies one stream event of type `kind` to `reply` (the stop reason to
    /// `reason`); true at `message_stop`.
    fn on_event(
        &self,
        kind: &str,
        data: &Value,
        reply: &mut ReplyBuilder,
        reason: &mut String,
    ) -> Result<bool, ModelError> {
        let index = || data.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match kind {
            "message_start" => {
                if let Some(u) = data.pointer("/message/usage") {
                    read_usage(u, &mut reply.tokens);
                }
            }
            "content_block_start" => {
                let block = data.get("content_block").cloned().unwrap_or_default();
                let block_kind = str_of(&block, "type");
                reply
                    .start_block(index(), block_kind, str_of(&block, "id"), str_of(&block, "name"))
                    .map_err(|m| self.protocol(m))?;
                match block_kind {
                    "text" => reply.delta_at(index(), "text", str_of(&block, "text")),
                    "thinking" => reply.delta_at(index(), "thinking", str_of(&block, "thinking")),
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = data.get("delta").cloned().unwrap_or_default();
                match str_of(&delta, "type") {
                    "text_delta" => reply.delta_at(index(), "text", str_of(&delta, "text")),
                    "thinking_delta" => reply.delta_at(index(), "thinking", str_of(&delta, "thinking")),
                    "signature_delta" => reply.delta_at(index(), "signature", str_of(&delta, "signature")),
                    "input_json_delta" => reply.delta_at(index(), "args", str_of(&delta, "partial_json")),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    *reason = r.to_owned();
                }
                if let Some(u) = data.get("usage") {
                    read_usage(u, &mut reply.tokens);
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let message = data.pointer("/error/message").and_then(Value::as_str).unwrap_or("error");
                return Err(self.stream_error(message.to_owned()));
            }
            _ => {}
        }
        Ok(false)
    }

    fn finished(&self, reply: ReplyBuilder, reason: &str) -> AssistantReply {
        with_refusal(reply.finish(&self.model, stop_reason(reason), self.http.opts.clock.now_ms()), reason)
    }
}

#[async_trait]
impl ModelClient for AnthropicClient {
    fn model(&self) -> &ModelInfo {
        &self.model
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        cancel: CancellationToken,
    ) -> Result<AssistantReply, ModelError> {
        let mut reply = ReplyBuilder::default();
        let reason = self.run(request, &cancel, &mut reply).await?;
        Ok(self.finished(reply, &reason))
    }

    async fn stream(
        &self,
        request: &CompletionRequest,
        cancel: CancellationToken,
        sink: Option<StreamSink>,
    ) -> AssistantReply {
        let mut reply = ReplyBuilder::with_sink(sink);
        match self.run(request, &cancel, &mut reply).await {
            Ok(reason) => self.finished(reply, &reason),
            Err(e) => reply.fail(&self.model, &e, self.http.opts.clock.now_ms()),
        }
    }
}
