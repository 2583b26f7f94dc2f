//! The readable transcript of a context (`arbor context` without `--json`):
//! a line or a few per message, then the model, thinking level and tokens.

use std::io::{self, Write};

use serde_json::Value;

use arbor_log::{content_text, MessageView, Role};
use arbor_tree::Session;

use super::entry::{format_tool_call, normalize};
use crate::context::SessionContext;
use crate::llm::convert_message;
use crate::session::{for_each_plan_message, SessionPlan};
use crate::tokens::TokenTally;

const WIDTH: usize = 160;

fn clip(s: &str, n: usize) -> String {
    let s = normalize(s);
    if s.chars().count() <= n {
        return s;
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn blocks(m: &Value) -> &[Value] {
    m.get("content").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn line_for(m: &Value, out: &mut Vec<String>) {
    let Some(role) = MessageView::new(m).role() else {
        out.push(format!("?: {}", clip(&content_text(m.get("content"), " "), WIDTH)));
        return;
    };
    let text = content_text(m.get("content"), " ");
    match role {
        Role::Assistant => {
            let thinking: usize = blocks(m)
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("thinking"))
                .filter_map(|b| b.get("thinking").and_then(Value::as_str))
                .map(|t| t.chars().count())
                .sum();
            let mut head = format!("assistant: {}", clip(&text, WIDTH));
            if text.trim().is_empty() {
                head = match m.get("stopReason").and_then(Value::as_str) {
                    Some("aborted") => "assistant: (aborted)".into(),
                    Some("error") => format!(
                        "assistant: (error) {}",
                        clip(m.get("errorMessage").and_then(Value::as_str).unwrap_or(""), WIDTH)
                    ),
                    _ => "assistant:".into(),
                };
            }
            if thinking > 0 {
                head.push_str(&format!("  [thinking: {thinking} chars]"));
            }
            out.push(head);
            for b in blocks(m) {
                if b.get("type").and_then(Value::as_str) == Some("toolCall") {
                    let name = b.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let args = b.get("arguments").cloned().unwrap_or(Value::Null);
                    out.push(format!("  → {}", format_tool_call(name, &args, None)));
                }
            }
        }
        Role::ToolResult => {
            let name = m.get("toolName").and_then(Value::as_str).unwrap_or("tool");
            let err = if m.get("isError").and_then(Value::as_bool) == Some(true) { " (error)" } else { "" };
            let n = text.lines().count();
            out.push(format!("  ← {name}{err}: {} ({n} lines)", clip(&text, WIDTH - 20)));
        }
        Role::BashExecution => {
            let cmd = m.get("command").and_then(Value::as_str).unwrap_or("");
            out.push(format!("bash: $ {}", clip(cmd, WIDTH)));
        }
        Role::Custom => {
            let t = m.get("customType").and_then(Value::as_str).unwrap_or(Role::Custom.as_str());
            out.push(format!("[{t}]: {}", clip(&text, WIDTH)));
        }
        Role::BranchSummary => {
            let s = m.get("summary").and_then(Value::as_str).unwrap_or("");
            out.push(format!("[branch summary]: {}", clip(s, WIDTH)));
        }
        Role::CompactionSummary => {
            let s = m.get("summary").and_then(Value::as_str).unwrap_or("");
            let before = m.get("tokensBefore").and_then(Value::as_f64).unwrap_or(0.0);
            out.push(format!("[compaction, {before} tokens before]: {}", clip(s, WIDTH)));
        }
        Role::User | Role::HookMessage | Role::Developer | Role::Other(_) => {
            out.push(format!("{role}: {}", clip(&text, WIDTH)))
        }
    }
}

/// Writes one or more lines per message of `ctx` (after [`convert_to_llm`]
/// when `llm`), then the model, thinking level and token estimate.
///
/// [`convert_to_llm`]: crate::convert_to_llm
pub fn write_transcript<W: Write + ?Sized>(out: &mut W, ctx: &SessionContext, llm: bool) -> io::Result<()> {
    let mut t = Transcript::new(llm);
    for m in &ctx.messages {
        t.write_message(out, m)?;
    }
    t.finish(out, ctx)
}

/// [`write_transcript`] of the context a plan of the session's context
/// describes, holding one batch of its messages at a time: the stored
/// messages are decoded a batch at a time (on all cores), written and
/// dropped, so a context of a million messages is never all in memory.
pub fn write_plan_transcript<W: Write + ?Sized>(
    session: &Session,
    plan: &SessionPlan,
    out: &mut W,
    llm: bool,
) -> io::Result<()> {
    let mut t = Transcript::new(llm);
    for_each_plan_message(session, plan, |m| t.write_message(out, m))?;
    t.finish(out, &plan.plan.settings)
}

/// A transcript written one message at a time: the lines of each message,
/// then (at [`Transcript::finish`]) the footer, which counts what was shown.
struct Transcript {
    llm: bool,
    shown: usize,
    tokens: TokenTally,
}

impl Transcript {
    fn new(llm: bool) -> Self {
        Self { llm, shown: 0, tokens: TokenTally::default() }
    }

    /// Writes the lines of the context's next message (after pi's
    /// convertToLlm when `llm`; the tokens count the message as stored).
    fn write_message<W: Write + ?Sized>(&mut self, out: &mut W, m: &Value) -> io::Result<()> {
        self.tokens.add(m);
        let converted;
        let shown = if self.llm {
            converted = convert_message(m);
            match &converted {
                Some(c) => c,
                None => return Ok(()),
            }
        } else {
            m
        };
        self.shown += 1;
        let mut lines = vec![];
        line_for(shown, &mut lines);
        for l in lines {
            writeln!(out, "{l}")?;
        }
        Ok(())
    }

    /// Writes the footer: the messages shown, the model, thinking level and tokens.
    fn finish<W: Write + ?Sized>(self, out: &mut W, settings: &SessionContext) -> io::Result<()> {
        let model = settings
            .model
            .as_ref()
            .map(|m| format!("{}/{}", m.provider, m.model_id))
            .unwrap_or_else(|| "(none)".into());
        writeln!(
            out,
            "-- {} messages, model {model}, thinking {}, ~{} tokens",
            self.shown,
            settings.thinking_level,
            self.tokens.tokens().tokens
        )
    }
}
