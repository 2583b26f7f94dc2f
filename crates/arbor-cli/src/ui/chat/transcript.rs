//! What the chat shows of the conversation: the newest messages of the
//! session's path (not only of the context, so a compaction shows where it
//! happened, with the messages before it above), each as styled paragraphs:
//! user prompts, replies with their thinking and tool calls, tool results
//! clipped to a few lines, summaries and compactions as one dim line.

use arbor_context::render::format_tool_call;
use arbor_context::{branch_summary_message, compaction_summary_message, custom_message};
use arbor_log::{Entry, EntryKind, MessageView, Role};
use arbor_tree::Session;
use ratatui::style::{Color, Modifier, Style};
use serde_json::Value;

use crate::shared::output::home;

/// The most path entries the transcript looks at (the newest ones).
pub const TRANSCRIPT_ENTRIES: usize = 400;

/// The most lines of a tool result shown.
const TOOL_RESULT_LINES: usize = 3;

/// The newest messages on the session's path, oldest first: messages,
/// shown extension messages, branch summaries and compactions (as
/// `compactionSummary` at their place), at most [`TRANSCRIPT_ENTRIES`] entries back.
///
/// The path is walked up by position from the leaf (its parents as the
/// session resolved them): a session opened through its index looks up one
/// id, not one per entry (past a few hundred it would build a map of every id).
pub fn path_messages(session: &Session) -> Result<Vec<Value>, arbor_tree::TreeError> {
    let mut path = vec![];
    let mut seen = std::collections::HashSet::new();
    let mut at = session.leaf_id().and_then(|id| session.position_of(id));
    while let Some(p) = at {
        if path.len() >= TRANSCRIPT_ENTRIES || !seen.insert(p) {
            break;
        }
        path.push(p);
        at = session.parent_at(p);
    }
    let mut out = vec![];
    for p in path.into_iter().rev() {
        out.extend(session.entry_at(p)?.and_then(shown_message));
    }
    Ok(out)
}

/// The message the chat shows for a path entry, if any: messages, shown
/// extension messages, branch summaries and compactions.
fn shown_message(e: &Entry) -> Option<Value> {
    match &e.kind {
        EntryKind::Message(m) => Some(m.message.clone()),
        EntryKind::CustomMessage(c) if arbor_log::json::truthy(c.display.as_ref()) => {
            Some(custom_message(c, &e.timestamp))
        }
        EntryKind::BranchSummary(b) => Some(branch_summary_message(b, &e.timestamp)),
        EntryKind::Compaction(c) => Some(compaction_summary_message(c, &e.timestamp)),
        _ => None,
    }
}

/// The last exchange: from the last user message on, as plain text.
pub fn last_exchange(messages: &[Value]) -> Vec<String> {
    let start = messages.iter().rposition(|m| MessageView::new(m).role() == Some(Role::User)).unwrap_or(0);
    messages[start..].iter().flat_map(|m| paragraphs(m, Detail::default()).into_iter().map(|(text, _)| text)).collect()
}

fn text_of(m: &Value, kind: &str, field: &str) -> String {
    match m.get("content") {
        Some(Value::String(s)) if kind == "text" => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some(kind))
            .filter_map(|b| b.get(field).and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The first `max` lines of a text (all of them when expanded).
fn clip(text: &str, max: usize, detail: Detail) -> String {
    if detail.expanded {
        return text.trim_end().to_owned();
    }
    clip_lines(text, max)
}

/// The first lines of a text, and how many more there are (Ctrl+O shows them).
fn clip_lines(text: &str, max: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    if lines.len() <= max {
        return lines.join("\n");
    }
    format!("{}\n… ({} more lines, Ctrl+O)", lines[..max].join("\n"), lines.len() - max)
}

/// The style of the user's own prompts.
pub fn user_style() -> Style {
    Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD)
}

/// How much of each message is shown (Ctrl+O, Ctrl+T).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Detail {
    /// Tool results, shell output, branch summaries and compactions whole.
    pub expanded: bool,
    /// Thinking on one line.
    pub thinking_collapsed: bool,
}

/// One message as (text, style) paragraphs.
pub fn paragraphs(m: &Value, detail: Detail) -> Vec<(String, Style)> {
    let dim = Style::default().fg(Color::DarkGray);
    let str_field = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let Some(role) = MessageView::new(m).role() else { return vec![("[]".to_owned(), dim)] };
    match role {
        Role::User => vec![(format!("› {}", text_of(m, "text", "text")), user_style())],
        Role::Assistant => {
            let mut out = vec![];
            let thinking = text_of(m, "thinking", "thinking");
            if !thinking.trim().is_empty() {
                let shown = if detail.thinking_collapsed {
                    let first = thinking.trim().lines().next().unwrap_or_default();
                    format!("(thinking, Ctrl+T shows it) {}…", first.chars().take(60).collect::<String>())
                } else {
                    format!("(thinking) {}", thinking.trim())
                };
                out.push((shown, dim.add_modifier(Modifier::ITALIC)));
            }
            let text = text_of(m, "text", "text");
            if !text.is_empty() {
                out.push((text, Style::default()));
            }
            let blocks = m.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            for b in blocks.iter().filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall")) {
                let name = b.get("name").and_then(Value::as_str).unwrap_or("tool");
                let args = b.get("arguments").cloned().unwrap_or(Value::Null);
                out.push((format_tool_call(name, &args, home().as_deref()), Style::default().fg(Color::Blue)));
            }
            match m.get("stopReason").and_then(Value::as_str) {
                Some("aborted") => out.push(("(aborted)".to_owned(), Style::default().fg(Color::Yellow))),
                Some("error") => out.push((
                    format!("(error: {})", m.get("errorMessage").and_then(Value::as_str).unwrap_or("unknown")),
                    Style::default().fg(Color::Red),
                )),
                _ => {}
            }
            out
        }
        Role::ToolResult => {
            let text = clip(&text_of(m, "text", "text"), TOOL_RESULT_LINES, detail);
            let mark = if m.get("isError").and_then(Value::as_bool) == Some(true) { "✗" } else { "←" };
            vec![(format!("{mark} {text}"), dim)]
        }
        Role::BranchSummary => vec![(format!("[branch summary] {}", clip(&str_field("summary"), 2, detail)), dim)],
        Role::CompactionSummary => {
            let before = m.get("tokensBefore").and_then(Value::as_f64).unwrap_or(0.0);
            let rule = (format!("── compaction: {before} tokens summarized ──"), Style::default().fg(Color::Magenta));
            if detail.expanded {
                vec![rule, (str_field("summary").trim_end().to_owned(), dim)]
            } else {
                vec![rule]
            }
        }
        Role::BashExecution => {
            let kept =
                if m.get("excludeFromContext").and_then(Value::as_bool) == Some(true) { " (not sent)" } else { "" };
            let mut out = vec![(format!("[bash]{kept} $ {}", str_field("command")), dim)];
            let output = str_field("output");
            if !output.trim().is_empty() {
                out.push((clip(&output, TOOL_RESULT_LINES, detail), dim));
            }
            out
        }
        Role::Custom | Role::HookMessage => {
            vec![(format!("[{}] {}", str_field("customType"), text_of(m, "text", "text")), dim)]
        }
        Role::Developer | Role::Other(_) => vec![(format!("[{role}]"), dim)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_calls_results_and_compactions() {
        let call = json!({"role": "assistant", "content": [{"type": "text", "text": "Reading."},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/main.rs"}}], "stopReason": "toolUse"});
        let texts: Vec<String> = paragraphs(&call, Detail::default()).into_iter().map(|(t, _)| t).collect();
        assert_eq!(texts, ["Reading.", "[read: src/main.rs]"]);
        let result =
            json!({"role": "toolResult", "toolCallId": "c1", "content": [{"type": "text", "text": "1\n2\n3\n4\n5"}]});
        assert_eq!(paragraphs(&result, Detail::default())[0].0, "← 1\n2\n3\n… (2 more lines, Ctrl+O)");
        let expanded = Detail { expanded: true, ..Detail::default() };
        assert_eq!(paragraphs(&result, expanded)[0].0, "← 1\n2\n3\n4\n5");
        let compaction = json!({"role": "compactionSummary", "summary": "long", "tokensBefore": 9314});
        assert_eq!(paragraphs(&compaction, Detail::default()).len(), 1);
        let shown = paragraphs(&compaction, expanded);
        assert_eq!((shown[0].0.as_str(), shown[1].0.as_str()), ("── compaction: 9314 tokens summarized ──", "long"));
    }

    /// The path's newest entries walked up by id, as the chat did before it
    /// walked by position: the leaf's entry, then each entry's parent by id.
    fn walked_by_id(session: &Session) -> Vec<String> {
        let mut ids = vec![];
        let mut seen = std::collections::HashSet::new();
        let mut at = session.leaf_entry().unwrap();
        while let Some(e) = at {
            if ids.len() >= TRANSCRIPT_ENTRIES || !seen.insert(e.id.clone()) {
                break;
            }
            ids.push(e.id.clone());
            at = e.parent_id.as_deref().and_then(|p| session.get_entry(p).unwrap());
        }
        ids.reverse();
        ids
    }

    #[test]
    fn the_path_walked_by_position_is_the_path_walked_by_id_in_every_fixture() {
        use arbor_tree::{OpenMode, SessionOptions};
        let cache = tempfile::tempdir().unwrap();
        let mut checked = 0;
        for file in arbor_test_support::jsonl_under(&arbor_test_support::fixtures()) {
            // Read in full, then through the index the first open wrote.
            for _ in 0..2 {
                let opts = SessionOptions { index_dir: Some(cache.path().to_owned()), ..SessionOptions::default() };
                let Ok(s) = Session::open(&file, OpenMode::ReadOnly, opts) else { continue };
                let shown: Vec<Value> = walked_by_id(&s)
                    .iter()
                    .filter_map(|id| s.get_entry(id).unwrap())
                    .filter_map(shown_message)
                    .collect();
                assert_eq!(path_messages(&s).unwrap(), shown, "{}", file.display());
                checked += 1;
            }
        }
        assert!(checked > 40, "{checked} sessions");
    }

    #[test]
    fn the_last_exchange_starts_at_the_last_prompt() {
        let u = |t: &str| json!({"role": "user", "content": t});
        let a = |t: &str| json!({"role": "assistant", "content": [{"type": "text", "text": t}], "stopReason": "stop"});
        assert_eq!(last_exchange(&[u("one"), a("first"), u("two"), a("second")]), ["› two", "second"]);
        assert!(last_exchange(&[]).is_empty());
    }
}
