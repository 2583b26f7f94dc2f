//! Token estimation (docs/architecture.md, "Compacting"): pi's characters / 4, rounded up per message.
//!
//! "Characters" are JavaScript string lengths, that is UTF-16 code units.

use arbor_log::{MessageView, Role};
use serde_json::Value;

use crate::js;

/// What an image counts for, in characters (pi: "4800 chars, or 1200 tokens").
const IMAGE_CHARS: usize = 4800;

/// Estimates the tokens of one agent message: its characters divided by 4, rounded up.
///
/// | role | characters |
/// |---|---|
/// | `user` | the string, or the text blocks (images are not counted) |
/// | `assistant` | text + thinking + `name` and `JSON.stringify(arguments)` of each tool call |
/// | `custom`, `toolResult` | the string, or the text blocks plus 4800 per image |
/// | `bashExecution` | `command` + `output` |
/// | `branchSummary`, `compactionSummary` | `summary` |
/// | any other | 0 |
pub fn estimate_tokens(message: &Value) -> u64 {
    let Some(role) = MessageView::new(message).role() else { return 0 };
    let chars = match role {
        Role::User => content_chars(message.get("content"), 0),
        Role::Assistant => assistant_chars(message),
        Role::Custom | Role::ToolResult => content_chars(message.get("content"), IMAGE_CHARS),
        Role::BashExecution => str_len(message.get("command")) + str_len(message.get("output")),
        Role::BranchSummary | Role::CompactionSummary => str_len(message.get("summary")),
        Role::HookMessage | Role::Developer | Role::Other(_) => 0,
    };
    chars.div_ceil(4) as u64
}

fn str_len(v: Option<&Value>) -> usize {
    v.and_then(Value::as_str).map_or(0, js::len)
}

fn blocks(content: Option<&Value>) -> &[Value] {
    content.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn block_type(b: &Value) -> Option<&str> {
    b.get("type").and_then(Value::as_str)
}

/// A string's length, or the text blocks' lengths plus `image_chars` per image.
fn content_chars(content: Option<&Value>, image_chars: usize) -> usize {
    if let Some(Value::String(s)) = content {
        return js::len(s);
    }
    blocks(content)
        .iter()
        .map(|b| match block_type(b) {
            Some("text") => str_len(b.get("text")),
            Some("image") => image_chars,
            _ => 0,
        })
        .sum()
}

fn assistant_chars(message: &Value) -> usize {
    blocks(message.get("content"))
        .iter()
        .map(|b| match block_type(b) {
            Some("text") => str_len(b.get("text")),
            Some("thinking") => str_len(b.get("thinking")),
            Some("toolCall") => str_len(b.get("name")) + b.get("arguments").map_or(0, |a| js::len(&js::stringify(a))),
            _ => 0,
        })
        .sum()
}

/// The context size an assistant's usage reports: `totalTokens`, or (when it
/// is missing or 0) `input + output + cacheRead + cacheWrite`.
pub fn calculate_context_tokens(usage: &Value) -> u64 {
    let n = |k: &str| usage.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let total = n("totalTokens");
    let tokens = if total != 0.0 { total } else { n("input") + n("output") + n("cacheRead") + n("cacheWrite") };
    // Token counts are whole numbers; a negative or fractional one is bad data, clamped.
    tokens.max(0.0) as u64
}

/// The estimated size of a context (pi's `ContextUsageEstimate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextTokens {
    /// `usage_tokens + trailing_tokens`.
    pub tokens: u64,
    /// What the last usable assistant usage reports (0 when there is none).
    pub usage_tokens: u64,
    /// The estimates of the messages after that assistant message (all messages when there is none).
    pub trailing_tokens: u64,
    /// The index of that assistant message.
    pub last_usage_index: Option<usize>,
}

/// The usage of an assistant message that is neither aborted nor an error.
fn assistant_usage(m: &Value) -> Option<&Value> {
    if MessageView::new(m).role() != Some(Role::Assistant) {
        return None;
    }
    let stop = m.get("stopReason").and_then(Value::as_str);
    if matches!(stop, Some("aborted") | Some("error")) {
        return None;
    }
    m.get("usage").filter(|u| js::truthy(Some(u)))
}

/// Estimates the tokens of a whole context: the last usable assistant usage
/// plus the estimates of the messages after it, or the sum of all estimates.
pub fn estimate_context_tokens(messages: &[Value]) -> ContextTokens {
    let last = messages.iter().enumerate().rev().find_map(|(i, m)| assistant_usage(m).map(|u| (i, u)));
    match last {
        None => {
            let total = messages.iter().map(estimate_tokens).fold(0u64, u64::saturating_add);
            ContextTokens { tokens: total, usage_tokens: 0, trailing_tokens: total, last_usage_index: None }
        }
        Some((index, usage)) => {
            let usage_tokens = calculate_context_tokens(usage);
            let trailing_tokens = messages[index + 1..].iter().map(estimate_tokens).fold(0u64, u64::saturating_add);
            ContextTokens {
                // A usage from a damaged file can be near u64::MAX: saturate, never overflow.
                tokens: usage_tokens.saturating_add(trailing_tokens),
                usage_tokens,
                trailing_tokens,
                last_usage_index: Some(index),
            }
        }
    }
}

/// The size of a context as it is now: [`estimate_context_tokens`], except
/// that after a compaction (a context that starts with a
/// `compactionSummary`) an assistant usage from before the compaction is not
/// used. Such a usage measured the context before it was compacted (pi then
/// shows no number until the next reply); without a newer one the messages
/// are estimated one by one.
pub fn current_context_tokens(messages: &[Value]) -> ContextTokens {
    let mut tally = TokenTally::default();
    messages.iter().for_each(|m| tally.add(m));
    tally.tokens()
}

/// [`current_context_tokens`] one message at a time, in order, for callers
/// that do not hold the whole context (the transcript of a large session).
#[derive(Debug, Clone, Default)]
pub struct TokenTally {
    /// How many messages were added.
    count: usize,
    /// The first message's timestamp when it is a compaction summary.
    compacted_at: Option<f64>,
    /// The sum of every message's estimate.
    total: u64,
    /// The index and tokens of the last usable assistant usage.
    last: Option<(usize, u64)>,
    /// The estimates of the messages after it.
    trailing: u64,
}

impl TokenTally {
    /// Adds the next message of the context.
    pub fn add(&mut self, m: &Value) {
        if self.count == 0 && MessageView::new(m).role() == Some(Role::CompactionSummary) {
            self.compacted_at = m.get("timestamp").and_then(Value::as_f64);
        }
        let estimate = estimate_tokens(m);
        self.total = self.total.saturating_add(estimate);
        // After a compaction, a usage measured before it is stale.
        let fresh = |m: &Value| {
            self.compacted_at.is_none_or(|at| m.get("timestamp").and_then(Value::as_f64).is_some_and(|t| t > at))
        };
        match assistant_usage(m).filter(|_| fresh(m)) {
            Some(usage) => {
                self.last = Some((self.count, calculate_context_tokens(usage)));
                self.trailing = 0;
            }
            None => self.trailing = self.trailing.saturating_add(estimate),
        }
        self.count += 1;
    }

    /// The tokens of the messages added so far: what
    /// [`current_context_tokens`] gives for them.
    pub fn tokens(&self) -> ContextTokens {
        match self.last {
            None => ContextTokens {
                tokens: self.total,
                usage_tokens: 0,
                trailing_tokens: self.total,
                last_usage_index: None,
            },
            Some((index, usage_tokens)) => ContextTokens {
                // A usage from a damaged file can be near u64::MAX: saturate, never overflow.
                tokens: usage_tokens.saturating_add(self.trailing),
                usage_tokens,
                trailing_tokens: self.trailing,
                last_usage_index: Some(index),
            },
        }
    }
}
