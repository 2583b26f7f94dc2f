//! Assistant replies in pi's message shape, and the builder the streaming
//! clients fill.

use arbor_log::json::{js_number, push_joined};
use arbor_log::Role;
use serde_json::{json, Map, Value};

use super::{aborted_message, ModelError, ModelInfo, StreamDelta, StreamSink};
use crate::convert::assistant_text;

/// An assistant message as pi stores it:
/// `{role:"assistant", content:[text|thinking|toolCall…], api, provider, model,
/// usage:{input, output, cacheRead, cacheWrite, totalTokens, cost:{…}},
/// stopReason: "stop"|"length"|"toolUse"|"error"|"aborted", errorMessage?, timestamp}`.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantReply(Value);

impl AssistantReply {
    /// The reply with `errorMessage` set (a provider stopped it for a reason of its own).
    pub(crate) fn with_error_message(self, message: &str) -> AssistantReply {
        let mut v = self.into_json();
        if let Value::Object(m) = &mut v {
            m.insert("errorMessage".into(), message.into());
        }
        AssistantReply::from_json(v)
    }

    /// Wraps a message value.
    pub fn from_json(message: Value) -> AssistantReply {
        AssistantReply(message)
    }

    /// The message JSON.
    pub fn json(&self) -> &Value {
        &self.0
    }

    /// The message JSON, owned.
    pub fn into_json(self) -> Value {
        self.0
    }

    /// The text blocks joined with `sep`.
    pub fn text(&self, sep: &str) -> String {
        assistant_text(&self.0, sep)
    }

    /// `stopReason`.
    pub fn stop_reason(&self) -> &str {
        self.0.get("stopReason").and_then(Value::as_str).unwrap_or("")
    }

    /// `errorMessage`, when the reply is an error.
    pub fn error_message(&self) -> Option<&str> {
        self.0.get("errorMessage").and_then(Value::as_str)
    }

    /// The message pi records for a failed call: no content, zero usage,
    /// `stopReason` `"aborted"` for a cancellation and `"error"` otherwise,
    /// with the error as `errorMessage`.
    pub fn from_error(model: &ModelInfo, error: &ModelError, timestamp: i64) -> AssistantReply {
        let stop = if error.is_cancelled() { "aborted" } else { "error" };
        let mut v = ReplyBuilder::default().finish(model, stop, timestamp).0;
        if let Value::Object(m) = &mut v {
            m.insert("errorMessage".into(), error.to_string().into());
        }
        AssistantReply(v)
    }
}

#[derive(Debug)]
enum Block {
    Text(String),
    Thinking { text: String, signature: Option<String>, signature_field: &'static str },
    ToolCall { id: String, name: String, args: String },
}

/// Token counts of a reply.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// How far past the blocks started so far a stream may start a new one.
/// Servers start blocks in order (0, 1, 2, …); a small gap is tolerated, an
/// index far beyond it is a protocol error, not a reason to allocate.
const MAX_BLOCK_GAP: usize = 64;

/// Collects streamed content and usage into an [`AssistantReply`], handing
/// text and thinking deltas to an optional sink as they come.
#[derive(Default)]
pub(crate) struct ReplyBuilder {
    blocks: Vec<Block>,
    pub(crate) tokens: Tokens,
    sink: Option<StreamSink>,
}

impl std::fmt::Debug for ReplyBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplyBuilder")
            .field("blocks", &self.blocks)
            .field("tokens", &self.tokens)
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

impl ReplyBuilder {
    /// A builder that hands deltas to `sink`.
    pub(crate) fn with_sink(sink: Option<StreamSink>) -> ReplyBuilder {
        ReplyBuilder { sink, ..ReplyBuilder::default() }
    }

    fn send(&self, delta: &str, thinking: bool) {
        if let (Some(sink), false) = (&self.sink, delta.is_empty()) {
            let d = delta.to_owned();
            sink(if thinking { StreamDelta::Thinking(d) } else { StreamDelta::Text(d) });
        }
    }

    /// The reply so far, ended by `error`: `stopReason` `"aborted"` with
    /// [`aborted_message`] for a cancellation, else `"error"` with the error
    /// (pi-ai keeps the partial content and usage of both).
    pub(crate) fn fail(&mut self, model: &ModelInfo, error: &ModelError, timestamp: i64) -> AssistantReply {
        let (stop, message) = if error.is_cancelled() {
            ("aborted", aborted_message(model.api).to_owned())
        } else {
            ("error", error.to_string())
        };
        std::mem::take(self).finish(model, stop, timestamp).with_error_message(&message)
    }

    /// Appends text to the last block when it is text, else starts a text block.
    pub(crate) fn push_text(&mut self, delta: &str) {
        self.send(delta, false);
        if let Some(Block::Text(t)) = self.blocks.last_mut() {
            push_joined(t, delta);
        } else {
            self.blocks.push(Block::Text(delta.to_owned()));
        }
    }

    /// Appends thinking to the last block when it is thinking, else starts one.
    /// `signature_field` names where the provider put it (kept as `thinkingSignature`).
    pub(crate) fn push_thinking(&mut self, delta: &str, signature_field: &'static str) {
        self.send(delta, true);
        if let Some(Block::Thinking { text, .. }) = self.blocks.last_mut() {
            push_joined(text, delta);
        } else {
            self.blocks.push(Block::Thinking { text: delta.to_owned(), signature: None, signature_field });
        }
    }

    /// Starts a block at position `index` (Anthropic's indexed blocks).
    /// Blocks skipped over are empty text; an index more than
    /// [`MAX_BLOCK_GAP`] past the blocks so far is refused (what was wrong,
    /// for a protocol error), so a hostile index cannot make it allocate.
    pub(crate) fn start_block(&mut self, index: usize, kind: &str, id: &str, name: &str) -> Result<(), String> {
        if index > self.blocks.len() + MAX_BLOCK_GAP {
            return Err(format!("content block {index} started after only {} blocks", self.blocks.len()));
        }
        let block = match kind {
            "thinking" => Block::Thinking { text: String::new(), signature: None, signature_field: "signature" },
            "tool_use" => Block::ToolCall { id: id.to_owned(), name: name.to_owned(), args: String::new() },
            _ => Block::Text(String::new()),
        };
        while self.blocks.len() < index {
            self.blocks.push(Block::Text(String::new()));
        }
        if index < self.blocks.len() {
            self.blocks[index] = block;
        } else {
            self.blocks.push(block);
        }
        Ok(())
    }

    /// Adds to block `index`: text, thinking, tool arguments or a signature.
    pub(crate) fn delta_at(&mut self, index: usize, kind: &str, delta: &str) {
        match (self.blocks.get(index), kind) {
            (Some(Block::Text(_)), "text") => self.send(delta, false),
            (Some(Block::Thinking { .. }), "thinking") => self.send(delta, true),
            _ => {}
        }
        match (self.blocks.get_mut(index), kind) {
            (Some(Block::Text(t)), "text") => push_joined(t, delta),
            (Some(Block::Thinking { text, .. }), "thinking") => push_joined(text, delta),
            (Some(Block::Thinking { signature, .. }), "signature") => {
                push_joined(signature.get_or_insert_with(String::new), delta);
            }
            (Some(Block::ToolCall { args, .. }), "args") => push_joined(args, delta),
            _ => {}
        }
    }

    /// Adds to the tool call at the OpenAI stream index `slot` (a new call when first seen).
    pub(crate) fn tool_call_delta(
        &mut self,
        slots: &mut Vec<(u64, usize)>,
        slot: u64,
        id: Option<&str>,
        name: Option<&str>,
        args: Option<&str>,
    ) {
        let pos = match slots.iter().find(|(s, _)| *s == slot) {
            Some((_, p)) => *p,
            None => {
                self.blocks.push(Block::ToolCall { id: String::new(), name: String::new(), args: String::new() });
                slots.push((slot, self.blocks.len() - 1));
                self.blocks.len() - 1
            }
        };
        if let Some(Block::ToolCall { id: i, name: n, args: a }) = self.blocks.get_mut(pos) {
            if let Some(id) = id.filter(|s| !s.is_empty()) {
                *i = id.to_owned();
            }
            if let Some(name) = name.filter(|s| !s.is_empty()) {
                n.push_str(name);
            }
            if let Some(args) = args {
                push_joined(a, args);
            }
        }
    }

    /// The finished message.
    pub(crate) fn finish(self, model: &ModelInfo, stop_reason: &str, timestamp: i64) -> AssistantReply {
        let content: Vec<Value> = self
            .blocks
            .into_iter()
            .filter_map(|b| match b {
                Block::Text(t) if t.is_empty() => None,
                Block::Text(t) => Some(json!({"type": "text", "text": t})),
                Block::Thinking { text, signature, signature_field } => {
                    let mut m = Map::new();
                    m.insert("type".into(), "thinking".into());
                    m.insert("thinking".into(), text.into());
                    let sig =
                        signature.or_else(|| (signature_field != "signature").then(|| signature_field.to_owned()));
                    if let Some(sig) = sig {
                        m.insert("thinkingSignature".into(), sig.into());
                    }
                    Some(Value::Object(m))
                }
                Block::ToolCall { id, name, args } => {
                    let arguments = match arbor_log::json::parse(&args) {
                        Ok(v @ Value::Object(_)) => v,
                        _ => Value::Object(Map::new()),
                    };
                    Some(json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments}))
                }
            })
            .collect();
        let t = self.tokens;
        let per_million = |n: u64, price: f64| n as f64 * price / 1_000_000.0;
        let cost = [
            per_million(t.input, model.cost.input),
            per_million(t.output, model.cost.output),
            per_million(t.cache_read, model.cost.cache_read),
            per_million(t.cache_write, model.cost.cache_write),
        ];
        let usage = json!({
            "input": t.input,
            "output": t.output,
            "cacheRead": t.cache_read,
            "cacheWrite": t.cache_write,
            "totalTokens": t.input + t.output + t.cache_read + t.cache_write,
            // Written as pi writes numbers: no cost is `0.0`.
            "cost": {
                "input": js_number(cost[0]),
                "output": js_number(cost[1]),
                "cacheRead": js_number(cost[2]),
                "cacheWrite": js_number(cost[3]),
                "total": js_number(cost.iter().sum::<f64>()),
            },
        });
        AssistantReply(json!({
            "role": Role::Assistant.as_str(),
            "content": content,
            "api": model.api.as_str(),
            "provider": model.provider,
            "model": model.id,
            "usage": usage,
            "stopReason": stop_reason,
            "timestamp": timestamp,
        }))
    }
}
