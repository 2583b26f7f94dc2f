//! `read_context`: what the model saw at an entry (default: the leaf), as
//! text, trimmed to the budget from the oldest end, the compaction summary
//! kept; a cursor pages back to the older messages.

use std::path::Path;

use serde::Deserialize;

use arbor_context::{message_of_entry, plan_branch_context, ContextStep, SessionPlan};
use arbor_tree::sessions::Sessions;
use arbor_tree::{Position, Session, SessionOptions, TreeError};

use crate::error::ToolError;
use crate::page::{self, chars, take_chars, At};
use crate::session::{damage_note, entry, id_at, open_read};
use crate::text::{context_message_text, is_compaction_summary};

/// `read_context`'s arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, Hash)]
pub struct ContextArgs {
    /// The session: its id, id prefix, file name or path.
    pub session: String,
    /// The entry whose context to read (id or id prefix). Default: the session's leaf.
    #[serde(default)]
    pub entry: Option<String>,
    /// The most characters of the answer (default 20000).
    #[serde(default)]
    #[schemars(range(min = 500))]
    pub budget: Option<u64>,
    /// The nextCursor of the previous page, for older messages.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Messages rendered at a time, newest first.
const BATCH: usize = 64;
/// Room kept for the line that says what was left out.
const FOOTER: usize = 300;

/// The context `args` asks for, as text within its budget.
pub fn read_context(sessions: &dyn Sessions, opts: &SessionOptions, args: &ContextArgs) -> Result<String, ToolError> {
    let budget = page::budget(args.budget)?;
    let request = page::fingerprint(&(&args.session, &args.entry));
    let at = page::resume("read_context", request, args.cursor.as_deref())?;
    let (path, mut s) = open_read(sessions, opts, &args.session)?;
    let mut answer = page_of(&s, &path, args, budget, at, request)?;
    if !s.lines_sound(&answer.read) {
        // The file changed in place since its index was made: read it again.
        s.read_again_without_index()?;
        answer = page_of(&s, &path, args, budget, at, request)?;
    }
    Ok(answer.text)
}

struct Answer {
    text: String,
    /// The lines the answer was read from.
    read: Vec<Position>,
}

fn page_of(
    s: &Session,
    path: &Path,
    args: &ContextArgs,
    budget: usize,
    at: At,
    request: u64,
) -> Result<Answer, ToolError> {
    let leaf = match &args.entry {
        Some(e) => Some(entry(s, path, e)?),
        None => s.leaf_id().and_then(|id| s.position_of(id)),
    };
    let Some(leaf) = leaf else {
        return Ok(Answer {
            text: format!("session {} has no entries: its context is empty", s.session_id()),
            read: vec![],
        });
    };
    let leaf_id = id_at(s, leaf);
    let plan = plan_branch_context(s, s.branch_positions(Some(&leaf_id)))?;
    let steps = &plan.plan.steps;
    let n = steps.len();
    let name = s.session_name()?.map(|n| format!(" ({n})")).unwrap_or_default();
    let mut head = format!(
        "session {}{name} at entry {leaf_id}: {n} messages in the model's context, oldest first\n",
        s.session_id()
    );
    if let Some(note) = damage_note(s) {
        head.push_str(&note);
        head.push('\n');
    }
    let end = usize::try_from(at.item).ok().filter(|&e| e > 0 && at != At::default()).unwrap_or(n).min(n);
    let summary = steps.iter().position(|st| matches!(st, ContextStep::Made(m) if is_compaction_summary(m)));
    let mut left = budget.saturating_sub(chars(&head) + FOOTER);
    // The compaction summary is kept whatever the budget (up to half of it).
    let summary_text = match summary {
        Some(k) if k < end => {
            let text = match &steps[k] {
                ContextStep::Made(m) => context_message_text(m),
                ContextStep::Message(_) => String::new(),
            };
            let text = clip(&text, left / 2);
            left = left.saturating_sub(chars(&text) + 2);
            Some((k, text))
        }
        _ => None,
    };
    let (shown, read, first) = newest_first(s, &plan, end, summary.filter(|_| summary_text.is_some()), left)?;
    let mut text = head;
    if let Some((k, t)) = &summary_text {
        if *k < first {
            text.push('\n');
            text.push_str(t);
            text.push('\n');
        }
    }
    let older = if summary_text.as_ref().is_some_and(|(k, _)| *k < first) { first - 1 } else { first };
    if older > 0 {
        let c = page::cursor("read_context", request, At { item: first as u64, within: 0 });
        text.push_str(&format!(
            "\n[… {older} older message(s) not shown: call read_context again with cursor \"{c}\" to read them]\n"
        ));
    }
    for t in shown.iter().rev() {
        text.push('\n');
        text.push_str(t);
        text.push('\n');
    }
    Ok(Answer { text, read })
}

/// The texts of the context's messages before step `end` that fit in
/// `left` characters, newest first (the step `skip`, the summary shown
/// apart, left out), the lines they were read from, and the first step shown.
fn newest_first(
    s: &Session,
    plan: &SessionPlan,
    end: usize,
    skip: Option<usize>,
    mut left: usize,
) -> Result<(Vec<String>, Vec<Position>, usize), TreeError> {
    let mut shown: Vec<String> = Vec::new();
    let mut read = Vec::new();
    let mut first = end;
    let mut full = false;
    while first > 0 && !full {
        let lo = first.saturating_sub(BATCH);
        let texts = render(s, plan, lo..first, &mut read)?;
        for (k, text) in texts.into_iter().rev() {
            if Some(k) == skip || text.is_empty() {
                first = k;
                continue;
            }
            let need = chars(&text) + 2;
            if need > left {
                if shown.is_empty() {
                    // The newest message alone is over the budget: its beginning.
                    shown.push(clip(&text, left.saturating_sub(2)));
                    first = k;
                }
                full = true;
                break;
            }
            left -= need;
            shown.push(text);
            first = k;
        }
    }
    Ok((shown, read, first))
}

/// The texts of the context's messages at steps `range`, each with its
/// step index, the stored ones headed by their entry id.
fn render(
    s: &Session,
    plan: &SessionPlan,
    range: std::ops::Range<usize>,
    read: &mut Vec<Position>,
) -> Result<Vec<(usize, String)>, TreeError> {
    let steps = &plan.plan.steps[range.clone()];
    let stored: Vec<Position> = steps
        .iter()
        .filter_map(|st| match st {
            ContextStep::Message(i) => plan.path.get(*i).copied(),
            ContextStep::Made(_) => None,
        })
        .collect();
    read.extend_from_slice(&stored);
    let mut decoded = s.decode_many(&stored)?.into_iter().zip(stored.iter().copied());
    let mut out = Vec::with_capacity(steps.len());
    for (k, st) in range.zip(steps) {
        let text = match st {
            ContextStep::Made(m) => context_message_text(m),
            ContextStep::Message(_) => match decoded.next() {
                Some((Some(e), p)) => {
                    let id = id_at(s, p);
                    let body = message_of_entry(e).map(|m| context_message_text(&m)).unwrap_or_default();
                    if body.is_empty() {
                        body
                    } else {
                        format!("[entry {id}]\n{body}")
                    }
                }
                _ => String::new(),
            },
        };
        out.push((k, text));
    }
    Ok(out)
}

/// The first `n` characters of `text`, saying how many more there were.
fn clip(text: &str, n: usize) -> String {
    let total = chars(text);
    if total <= n {
        return text.to_owned();
    }
    let note = format!("\n[… {} more characters]", total);
    let keep = n.saturating_sub(chars(&note));
    let mut out = take_chars(text, keep).to_owned();
    out.push_str(&format!("\n[… {} more characters]", total - keep));
    out
}
