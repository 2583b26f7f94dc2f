//! Token estimation (docs/architecture.md, "Compacting"): pi's characters / 4, rounded up per message.
//!
//! "Characters" are JavaScript string lengths, that is UTF-16 code units.

use std::borrow::Cow;

use arbor_log::Role;
use serde_json::Value;

use crate::js;
use crate::parts::{Content, Parts, Usage};

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
///
/// ```
/// use arbor_context::estimate_tokens;
/// use serde_json::json;
///
/// // Eight characters: two tokens.
/// assert_eq!(estimate_tokens(&json!({"role": "user", "content": "abcdefgh"})), 2);
/// assert_eq!(estimate_tokens(&json!({"role": "mystery"})), 0);
/// ```
pub fn estimate_tokens(message: &Value) -> u64 {
    Parts::of_value(message).estimate_tokens()
}

impl Parts<'_> {
    /// [`estimate_tokens`] of the message these are the parts of.
    pub(crate) fn estimate_tokens(&self) -> u64 {
        self.estimated_chars().div_ceil(4) as u64
    }

    /// The characters [`estimate_tokens`] counts of the message.
    pub(crate) fn estimated_chars(&self) -> usize {
        let Some(role) = self.role() else { return 0 };
        match role {
            Role::User => self.content_chars(0),
            Role::Assistant => self.assistant_chars(),
            Role::Custom | Role::ToolResult => self.content_chars(IMAGE_CHARS),
            Role::BashExecution => str_len(&self.command) + str_len(&self.output),
            Role::BranchSummary | Role::CompactionSummary => str_len(&self.summary),
            Role::HookMessage | Role::Developer | Role::Other(_) => 0,
        }
    }

    /// A string's length, or the text blocks' lengths plus `image_chars` per image.
    fn content_chars(&self, image_chars: usize) -> usize {
        if let Content::Text(s) = &self.content {
            return js::len(s);
        }
        self.blocks()
            .iter()
            .map(|b| match b.kind.as_deref() {
                Some("text") => str_len(&b.text),
                Some("image") => image_chars,
                _ => 0,
            })
            .sum()
    }

    fn assistant_chars(&self) -> usize {
        self.blocks()
            .iter()
            .map(|b| match b.kind.as_deref() {
                Some("text") => str_len(&b.text),
                Some("thinking") => str_len(&b.thinking),
                Some("toolCall") => str_len(&b.name) + b.arguments.as_ref().map_or(0, |a| js::len(&js::stringify(a))),
                _ => 0,
            })
            .sum()
    }

    /// The context size the usage of an assistant message that is neither
    /// aborted nor an error reports ([`calculate_context_tokens`]).
    pub(crate) fn usable_usage(&self) -> Option<u64> {
        if self.role() != Some(Role::Assistant) || matches!(self.stop_reason.as_deref(), Some("aborted" | "error")) {
            return None;
        }
        self.usage.map(|u| u.tokens())
    }
}

fn str_len(s: &Option<Cow<'_, str>>) -> usize {
    s.as_deref().map_or(0, js::len)
}

/// The context size an assistant's usage reports: `totalTokens`, or (when it
/// is missing or 0) `input + output + cacheRead + cacheWrite`.
///
/// ```
/// use arbor_context::calculate_context_tokens;
/// use serde_json::json;
///
/// assert_eq!(calculate_context_tokens(&json!({"totalTokens": 1200})), 1200);
/// assert_eq!(calculate_context_tokens(&json!({"input": 1000, "output": 150, "cacheRead": 50})), 1200);
/// ```
pub fn calculate_context_tokens(usage: &Value) -> u64 {
    Usage::of_value(usage).tokens()
}

impl Usage {
    /// [`calculate_context_tokens`] of this usage.
    pub(crate) fn tokens(&self) -> u64 {
        let total = self.total;
        let tokens = if total != 0.0 { total } else { self.input + self.output + self.cache_read + self.cache_write };
        // Token counts are whole numbers; a negative or fractional one is bad data, clamped.
        tokens.max(0.0) as u64
    }
}

/// The estimated size of a context (pi's `ContextUsageEstimate`).
///
/// ```
/// use arbor_context::{estimate_context_tokens, ContextTokens};
/// use serde_json::json;
///
/// let reply = json!({"role": "assistant", "content": [], "stopReason": "stop", "usage": {"totalTokens": 500}});
/// let after = json!({"role": "user", "content": "abcdefgh"});
/// let size: ContextTokens = estimate_context_tokens(&[reply, after]);
/// assert_eq!((size.tokens, size.usage_tokens, size.trailing_tokens, size.last_usage_index), (502, 500, 2, Some(0)));
/// ```
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

/// Estimates the tokens of a whole context: the last usable assistant usage
/// plus the estimates of the messages after it, or the sum of all estimates.
///
/// ```
/// use arbor_context::estimate_context_tokens;
/// use serde_json::json;
///
/// let messages = [json!({"role": "user", "content": "abcdefgh"}), json!({"role": "user", "content": "abcd"})];
/// assert_eq!(estimate_context_tokens(&messages).tokens, 3);
/// ```
pub fn estimate_context_tokens(messages: &[Value]) -> ContextTokens {
    let last = messages.iter().enumerate().rev().find_map(|(i, m)| Parts::of_value(m).usable_usage().map(|u| (i, u)));
    match last {
        None => {
            let total = messages.iter().map(estimate_tokens).fold(0u64, u64::saturating_add);
            ContextTokens { tokens: total, usage_tokens: 0, trailing_tokens: total, last_usage_index: None }
        }
        Some((index, usage_tokens)) => {
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

/// [`estimate_context_tokens`] one message at a time, in order, for callers
/// that do not hold the whole context (`arbor diff` on a long path): the
/// same `tokens` as the whole list gives.
///
/// ```
/// use arbor_context::{estimate_context_tokens, EstimateTally};
/// use serde_json::json;
///
/// let messages = [json!({"role": "user", "content": "abcdefgh"}), json!({"role": "user", "content": "abcd"})];
/// let mut tally = EstimateTally::default();
/// messages.iter().for_each(|m| tally.add(m));
/// assert_eq!((tally.tokens(), tally.count()), (estimate_context_tokens(&messages).tokens, 2));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct EstimateTally {
    /// The last usable assistant usage so far.
    usage: Option<u64>,
    /// The estimates of the messages after it (of every message, while there is none).
    since: u64,
    /// How many messages were added.
    count: usize,
}

impl EstimateTally {
    /// Adds the next message of the context.
    pub fn add(&mut self, message: &Value) {
        self.add_counted(message, None);
    }

    /// [`EstimateTally::add`] of a message whose estimate is made of
    /// `chars` characters (one held as its preview).
    pub(crate) fn add_with_chars(&mut self, message: &Value, chars: usize) {
        self.add_counted(message, Some(chars));
    }

    /// Adds `message`, its estimate made of `chars` characters when given,
    /// else of the characters its parts hold.
    fn add_counted(&mut self, message: &Value, chars: Option<usize>) {
        self.count += 1;
        let parts = Parts::of_value(message);
        match parts.usable_usage() {
            Some(u) => {
                self.usage = Some(u);
                self.since = 0;
            }
            None => {
                let chars = chars.unwrap_or_else(|| parts.estimated_chars());
                self.since = self.since.saturating_add(chars.div_ceil(4) as u64);
            }
        }
    }

    /// The estimate of the messages added so far ([`ContextTokens::tokens`]).
    pub fn tokens(&self) -> u64 {
        self.usage.map_or(self.since, |u| u.saturating_add(self.since))
    }

    /// How many messages were added.
    pub fn count(&self) -> usize {
        self.count
    }
}

/// The size of a context as it is now: [`estimate_context_tokens`], except
/// that after a compaction (a context that starts with a
/// `compactionSummary`) an assistant usage from before the compaction is not
/// used. Such a usage measured the context before it was compacted (pi then
/// shows no number until the next reply); without a newer one the messages
/// are estimated one by one.
///
/// ```
/// use arbor_context::{current_context_tokens, estimate_context_tokens};
/// use serde_json::json;
///
/// let messages = [
///     json!({"role": "compactionSummary", "summary": "abcdefgh", "tokensBefore": 9000, "timestamp": 10}),
///     // A reply from before the compaction: its usage measured the old context.
///     json!({"role": "assistant", "content": [], "stopReason": "stop", "usage": {"totalTokens": 9000}, "timestamp": 5}),
/// ];
/// assert_eq!(estimate_context_tokens(&messages).tokens, 9000);
/// assert_eq!(current_context_tokens(&messages).tokens, 2);
/// ```
pub fn current_context_tokens(messages: &[Value]) -> ContextTokens {
    let mut tally = TokenTally::default();
    messages.iter().for_each(|m| tally.add(m));
    tally.tokens()
}

/// [`current_context_tokens`] one message at a time, in order, for callers
/// that do not hold the whole context (the transcript of a large session).
///
/// ```
/// use arbor_context::{current_context_tokens, TokenTally};
/// use serde_json::json;
///
/// let messages = [json!({"role": "user", "content": "abcdefgh"}), json!({"role": "user", "content": "abcd"})];
/// let mut tally = TokenTally::default();
/// messages.iter().for_each(|m| tally.add(m));
/// assert_eq!(tally.tokens(), current_context_tokens(&messages));
/// ```
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
        self.add_counted(Counted::of(&Parts::of_value(m)));
    }

    /// Adds the next message of the context, as [`Counted`].
    pub(crate) fn add_counted(&mut self, m: Counted) {
        if self.count == 0 && m.compaction {
            self.compacted_at = m.timestamp;
        }
        self.total = self.total.saturating_add(m.estimate);
        // After a compaction, a usage measured before it is stale.
        let fresh = self.compacted_at.is_none_or(|at| m.timestamp.is_some_and(|t| t > at));
        match m.usage.filter(|_| fresh) {
            Some(usage) => {
                self.last = Some((self.count, usage));
                self.trailing = 0;
            }
            None => self.trailing = self.trailing.saturating_add(m.estimate),
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

/// What a [`TokenTally`] reads of one message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Counted {
    /// The message is a compaction summary.
    compaction: bool,
    timestamp: Option<f64>,
    estimate: u64,
    /// The context size its usage reports, when it is a usable assistant usage.
    usage: Option<u64>,
}

impl Counted {
    /// What is counted of `m`, its estimate made of `chars` characters
    /// instead (a message whose long texts are not held).
    pub(crate) fn with_chars(m: &Parts<'_>, chars: usize) -> Counted {
        Counted { estimate: chars.div_ceil(4) as u64, ..Counted::of(m) }
    }

    pub(crate) fn of(m: &Parts<'_>) -> Counted {
        Counted {
            compaction: m.role() == Some(Role::CompactionSummary),
            timestamp: m.timestamp,
            estimate: m.estimate_tokens(),
            usage: m.usable_usage(),
        }
    }
}
