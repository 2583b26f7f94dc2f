//! The OpenAI Responses API (`POST {base}/responses`, streamed), pi's
//! `openai-responses`: OpenAI's newer endpoint, also served by vLLM and
//! others. The request carries the conversation as input items (messages,
//! function calls and their outputs), the answer streams as typed events
//! (`response.output_text.delta`, `response.completed`, …).

use std::collections::HashSet;

use arbor_log::{MessageView, Role};
use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::http::{is_json, Http, SseEvent};
use super::reply::{ReplyBuilder, Tokens};
use super::transform::request_messages;
use super::{AssistantReply, ClientOptions, CompletionRequest, ModelClient, ModelError, ModelInfo, StreamSink};

const API: &str = "OpenAI Responses";

/// A client of an OpenAI Responses endpoint.
#[derive(Debug)]
pub struct ResponsesClient {
    model: ModelInfo,
    key: Option<String>,
    http: Http,
}

/// The text blocks of a message, joined with `sep` (or its string content).
fn text_of(m: &Value, sep: &str) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(sep),
        _ => String::new(),
    }
}

/// The call id of a pi tool call id (`call|item` as pi-ai writes Responses ids).
fn call_id(id: &str) -> &str {
    id.split('|').next().unwrap_or(id)
}

/// pi message → Responses input item(s).
fn push_input(m: &Value, out: &mut Vec<Value>) {
    let blocks = m.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    match MessageView::new(m).role() {
        Some(Role::User) => {
            let content: Vec<Value> = match m.get("content") {
                Some(Value::String(s)) => vec![json!({"type": "input_text", "text": s})],
                _ => blocks
                    .iter()
                    .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                        Some("text") => Some(json!({"type": "input_text", "text": b.get("text").cloned().unwrap_or_default()})),
                        Some("image") => {
                            let mime = b.get("mimeType").and_then(Value::as_str).unwrap_or("image/png");
                            let data = b.get("data").and_then(Value::as_str).unwrap_or("");
                            Some(json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{mime};base64,{data}")}))
                        }
                        _ => None,
                    })
                    .collect(),
            };
            if !content.is_empty() {
                out.push(json!({"role": "user", "content": content}));
            }
        }
        Some(Role::Assistant) => {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = b.get("text").and_then(Value::as_str).unwrap_or("");
                        if !text.is_empty() {
                            out.push(json!({"role": "assistant", "content": text}));
                        }
                    }
                    Some("toolCall") => {
                        let args = b.get("arguments").cloned().unwrap_or_else(|| json!({}));
                        out.push(json!({
                            "type": "function_call",
                            "call_id": call_id(b.get("id").and_then(Value::as_str).unwrap_or("")),
                            "name": b.get("name").cloned().unwrap_or_default(),
                            "arguments": args.to_string(),
                        }));
                    }
                    // Reasoning is sent back only as the provider's own item (encrypted content).
                    _ => {}
                }
            }
        }
        Some(Role::ToolResult) => {
            let id = m.get("toolCallId").and_then(Value::as_str).unwrap_or("");
            out.push(json!({"type": "function_call_output", "call_id": call_id(id), "output": text_of(m, "\n")}));
        }
        _ => {}
    }
}

fn read_usage(usage: &Value, tokens: &mut Tokens) {
    let n = |p: &str| usage.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let cached = n("/input_tokens_details/cached_tokens");
    tokens.input = n("/input_tokens").saturating_sub(cached);
    tokens.cache_read = cached;
    tokens.output = n("/output_tokens");
}

/// What a streamed reply said so far beyond its content.
#[derive(Debug, Default)]
struct Decoding {
    /// The response's final status (`completed`, `incomplete`, …), once it came.
    status: Option<String>,
    /// Tool-call slots (output index → block), and the slots whose arguments streamed.
    slots: Vec<(u64, usize)>,
    streamed_args: HashSet<u64>,
    tool_calls: bool,
}

impl ResponsesClient {
    /// A client for `model` with an optional bearer key.
    pub fn new(model: ModelInfo, key: Option<String>, options: ClientOptions) -> Result<ResponsesClient, ModelError> {
        let http = Http::new(&model, options)?;
        Ok(ResponsesClient { model, key, http })
    }

    fn url(&self) -> String {
        format!("{}/responses", self.model.base_url)
    }

    /// The request body (public for tests and debugging).
    pub fn request_body(&self, request: &CompletionRequest) -> Value {
        let mut input = vec![];
        if let Some(system) = &request.system_prompt {
            // As pi-ai: reasoning models take it as the developer's message.
            let role = if self.model.reasoning { "developer" } else { "system" };
            input.push(json!({"role": role, "content": system}));
        }
        for m in &request_messages(&request.messages) {
            push_input(m, &mut input);
        }
        let mut body = Map::new();
        body.insert("model".into(), self.model.id.clone().into());
        body.insert("input".into(), Value::Array(input));
        body.insert("stream".into(), true.into());
        body.insert("store".into(), false.into());
        if let Some(max) = request.max_tokens {
            body.insert("max_output_tokens".into(), max.into());
        }
        if let (Some(effort), true) = (request.reasoning, self.model.reasoning) {
            body.insert("reasoning".into(), json!({"effort": effort.as_str(), "summary": "auto"}));
        }
        Value::Object(body)
    }

    fn protocol(&self, message: String) -> ModelError {
        ModelError::Protocol { provider: self.model.provider.clone(), api: API, message }
    }

    fn stream_error(&self, message: String) -> ModelError {
        ModelError::Stream { provider: self.model.provider.clone(), message }
    }

    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.key {
            let value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| self.protocol("the API key is not a valid header value".to_owned()))?;
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }

    /// Sends `request` and fills `reply` as the answer streams.
    async fn run(
        &self,
        request: &CompletionRequest,
        cancel: &CancellationToken,
        reply: &mut ReplyBuilder,
    ) -> Result<Decoding, ModelError> {
        let deadline = self.http.deadline();
        let body = self.request_body(request);
        let response = self.http.post(&self.url(), self.headers()?, &body, cancel, deadline).await?;
        let mut d = Decoding::default();
        if is_json(&response) {
            let v = self.http.read_json(response, API, cancel, deadline).await?;
            self.read_whole(&v, reply, &mut d)?;
            return Ok(d);
        }
        let mut events = self.http.events(response, deadline);
        while let Some(ev) = events.next(cancel).await? {
            if self.on_sse(&ev, &mut d, reply)? {
                return Ok(d);
            }
        }
        Err(self.stream_error("the stream ended before the reply was complete".to_owned()))
    }

    /// Applies one server-sent event; true once the response ended.
    fn on_sse(&self, ev: &SseEvent, d: &mut Decoding, reply: &mut ReplyBuilder) -> Result<bool, ModelError> {
        let data = ev.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(false);
        }
        let e: Value =
            arbor_log::json::parse(data).map_err(|e| self.protocol(format!("a stream event is not JSON: {e}")))?;
        let kind = e.get("type").and_then(Value::as_str).or(ev.event.as_deref()).unwrap_or("");
        let s = |p: &str| e.pointer(p).and_then(Value::as_str);
        let index = e.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "response.output_item.added" if s("/item/type") == Some("function_call") => {
                let id = format!("{}|{}", s("/item/call_id").unwrap_or(""), s("/item/id").unwrap_or(""));
                reply.tool_call_delta(&mut d.slots, index, Some(&id), s("/item/name"), None);
                d.tool_calls = true;
            }
            "response.output_text.delta" | "response.refusal.delta" => reply.push_text(s("/delta").unwrap_or("")),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                reply.push_thinking(s("/delta").unwrap_or(""), "signature");
            }
            "response.function_call_arguments.delta" => {
                d.streamed_args.insert(index);
                reply.tool_call_delta(&mut d.slots, index, None, None, s("/delta"));
            }
            // A server that sends the arguments whole, only at the end.
            "response.output_item.done"
                if s("/item/type") == Some("function_call") && !d.streamed_args.contains(&index) =>
            {
                reply.tool_call_delta(&mut d.slots, index, None, None, s("/item/arguments"));
            }
            "response.completed" | "response.incomplete" => {
                if let Some(u) = e.pointer("/response/usage").filter(|u| u.is_object()) {
                    read_usage(u, &mut reply.tokens);
                }
                d.status = Some(
                    s("/response/status")
                        .unwrap_or(if kind == "response.completed" { "completed" } else { "incomplete" })
                        .to_owned(),
                );
                return Ok(true);
            }
            "response.failed" => {
                let message = s("/response/error/message")
                    .map(str::to_owned)
                    .or_else(|| s("/response/incomplete_details/reason").map(|r| format!("incomplete: {r}")))
                    .unwrap_or_else(|| "the response failed, with no details".to_owned());
                return Err(self.stream_error(message));
            }
            "error" => {
                let message = s("/message").or(s("/error/message")).unwrap_or("error");
                return Err(self.stream_error(message.to_owned()));
            }
            _ => {}
        }
        Ok(false)
    }

    /// Fills `reply` from a whole (not streamed) response object.
    fn read_whole(&self, v: &Value, reply: &mut ReplyBuilder, d: &mut Decoding) -> Result<(), ModelError> {
        if let Some(m) = v.pointer("/error/message").and_then(Value::as_str) {
            return Err(self.stream_error(m.to_owned()));
        }
        let output = v
            .get("output")
            .and_then(Value::as_array)
            .ok_or_else(|| self.protocol("no output in the response".into()))?;
        for (i, item) in output.iter().enumerate() {
            let s = |p: &str| item.pointer(p).and_then(Value::as_str);
            match s("/type") {
                Some("message") => {
                    for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                        let text = part.get("text").or_else(|| part.get("refusal")).and_then(Value::as_str);
                        reply.push_text(text.unwrap_or(""));
                    }
                }
                Some("reasoning") => {
                    for part in item.get("summary").and_then(Value::as_array).into_iter().flatten() {
                        reply.push_thinking(part.get("text").and_then(Value::as_str).unwrap_or(""), "signature");
                    }
                }
                Some("function_call") => {
                    let id = format!("{}|{}", s("/call_id").unwrap_or(""), s("/id").unwrap_or(""));
                    reply.tool_call_delta(&mut d.slots, i as u64, Some(&id), s("/name"), s("/arguments"));
                    d.tool_calls = true;
                }
                _ => {}
            }
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            read_usage(u, &mut reply.tokens);
        }
        d.status = Some(v.get("status").and_then(Value::as_str).unwrap_or("completed").to_owned());
        Ok(())
    }

    /// pi-ai's stop reason for the final status.
    fn finished(&self, reply: ReplyBuilder, d: &Decoding) -> AssistantReply {
        let stop = match d.status.as_deref() {
            Some("incomplete") => "length",
            Some("failed" | "cancelled") => "error",
            _ if d.tool_calls => "toolUse",
            _ => "stop",
        };
        reply.finish(&self.model, stop, self.http.opts.clock.now_ms())
    }

    /// Decodes a recorded event stream into the reply a live request would
    /// record (the same parser and size limit, no network).
    pub fn replay(&self, chunks: &[&[u8]]) -> AssistantReply {
        let mut reply = ReplyBuilder::default();
        let mut d = Decoding::default();
        let done = self.http.replay(chunks, |ev| self.on_sse(ev, &mut d, &mut reply));
        match done {
            Ok(true) => self.finished(reply, &d),
            Ok(false) => {
                let e = self.stream_error("the stream ended before the reply was complete".to_owned());
                reply.fail(&self.model, &e, self.http.opts.clock.now_ms())
            }
            Err(e) => reply.fail(&self.model, &e, self.http.opts.clock.now_ms()),
        }
    }
}

#[async_trait]
impl ModelClient for ResponsesClient {
    fn model(&self) -> &ModelInfo {
        &self.model
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        cancel: CancellationToken,
    ) -> Result<AssistantReply, ModelError> {
        let mut reply = ReplyBuilder::default();
        let d = self.run(request, &cancel, &mut reply).await?;
        Ok(self.finished(reply, &d))
    }

    async fn stream(
        &self,
        request: &CompletionRequest,
        cancel: CancellationToken,
        sink: Option<StreamSink>,
    ) -> AssistantReply {
        let mut reply = ReplyBuilder::with_sink(sink);
        match self.run(request, &cancel, &mut reply).await {
            Ok(d) => self.finished(reply, &d),
            Err(e) => reply.fail(&self.model, &e, self.http.opts.clock.now_ms()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Api, ReasoningEffort};

    fn client(reasoning: bool) -> ResponsesClient {
        let model =
            ModelInfo::new("openai", "gpt-x", Api::OpenAiResponses, "http://127.0.0.1:1/v1").with_reasoning(reasoning);
        ResponsesClient::new(model, None, ClientOptions::default()).unwrap()
    }

    #[test]
    fn the_conversation_becomes_input_items() {
        let request = CompletionRequest {
            system_prompt: Some("Be brief.".into()),
            messages: vec![
                json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}),
                json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Reading."},
                    {"type": "toolCall", "id": "call_1|fc_1", "name": "read", "arguments": {"path": "a"}}],
                    "stopReason": "toolUse", "timestamp": 2}),
                json!({"role": "toolResult", "toolCallId": "call_1|fc_1", "toolName": "read",
                    "content": [{"type": "text", "text": "text of a"}], "isError": false, "timestamp": 3}),
            ],
            max_tokens: Some(100),
            reasoning: Some(ReasoningEffort::High),
        };
        let body = client(true).request_body(&request);
        assert_eq!(
            body["input"],
            json!([
                {"role": "developer", "content": "Be brief."},
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"role": "assistant", "content": "Reading."},
                {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "text of a"},
            ])
        );
        assert_eq!((body["stream"].clone(), body["store"].clone()), (json!(true), json!(false)));
        assert_eq!(body["max_output_tokens"], 100);
        assert_eq!(body["reasoning"], json!({"effort": "high", "summary": "auto"}));
        assert!(client(false).request_body(&request).get("reasoning").is_none());
    }

    #[test]
    fn a_recorded_stream_becomes_pis_message() {
        let events = [
            r#"{"type":"response.created","response":{"id":"r1","status":"in_progress"}}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1"}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"delta":"Think"}"#,
            r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"message","id":"m1"}}"#,
            r#"{"type":"response.output_text.delta","output_index":1,"delta":"Hel"}"#,
            r#"{"type":"response.output_text.delta","output_index":1,"delta":"lo"}"#,
            r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_9","call_id":"call_9","name":"ls","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":2,"delta":"{\"path\":"}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":2,"delta":"\".\"}"}"#,
            r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":50,"output_tokens":7,"total_tokens":57,"input_tokens_details":{"cached_tokens":20}}}}"#,
        ];
        let body: String = events.iter().map(|e| format!("event: x\ndata: {e}\n\n")).collect();
        let reply = client(true).replay(&[body.as_bytes()]);
        let m = reply.json();
        assert_eq!(m["content"][0], json!({"type": "thinking", "thinking": "Think"}));
        assert_eq!(m["content"][1], json!({"type": "text", "text": "Hello"}));
        assert_eq!(
            m["content"][2],
            json!({"type": "toolCall", "id": "call_9|fc_9", "name": "ls", "arguments": {"path": "."}})
        );
        assert_eq!((m["stopReason"].as_str(), m["api"].as_str()), (Some("toolUse"), Some("openai-responses")));
        assert_eq!(
            (m["usage"]["input"].as_u64(), m["usage"]["cacheRead"].as_u64(), m["usage"]["output"].as_u64()),
            (Some(30), Some(20), Some(7))
        );
    }

    #[test]
    fn an_incomplete_or_failed_response_and_a_cut_stream() {
        let incomplete = "data: {\"type\":\"response.output_text.delta\",\"delta\":\"par\"}\n\ndata: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\"}}\n\n";
        let r = client(false).replay(&[incomplete.as_bytes()]);
        assert_eq!((r.stop_reason(), r.text("")), ("length", "par".to_owned()));
        let failed = "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"overloaded\"}}}\n\n";
        let r = client(false).replay(&[failed.as_bytes()]);
        assert_eq!(r.stop_reason(), "error");
        assert!(r.error_message().unwrap().contains("overloaded"));
        let cut = "data: {\"type\":\"response.output_text.delta\",\"delta\":\"half\"}\n\n";
        let r = client(false).replay(&[cut.as_bytes()]);
        assert_eq!((r.stop_reason(), r.text("")), ("error", "half".to_owned()));
    }
}
