//! `diff_branches`: what `arbor diff` computes for two entries (the common
//! ancestor; each side's messages, tool calls, files, context size and
//! cost), with the messages each side adds after the ancestor, a page at a time.

use serde::Deserialize;
use serde_json::{json, Value};

use arbor_tree::sessions::Sessions;
use arbor_tree::SessionOptions;

use crate::error::ToolError;
use crate::page::{self, chars, At, JsonPage};
use crate::session::{entry, id_at, open_read};
use crate::text::entry_text;

/// The entry ids of a side the answer lists before it only counts them.
const LISTED: usize = 50;
/// The characters of one message's text a diff shows.
const MESSAGE_CHARS: usize = 2000;

/// `diff_branches`' arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, Hash)]
pub struct DiffArgs {
    /// The session: its id, id prefix, file name or path.
    pub session: String,
    /// One entry (id or id prefix): usually the leaf of one branch.
    pub a: String,
    /// The other entry (id or id prefix).
    pub b: String,
    /// The most characters of the answer (default 20000).
    #[serde(default)]
    #[schemars(range(min = 500))]
    pub budget: Option<u64>,
    /// The nextCursor of the previous page, for more of the messages.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The diff `args` asks for, as JSON: on the first page `{"commonAncestor",
/// "a", "b"}` as `arbor diff --json` prints them (entry lists past 50 cut,
/// with `entriesTotal`), then `"messages"`: each side's added messages, `a`'s
/// first, as `{side, entryId, role, text}`.
pub fn diff_branches(sessions: &dyn Sessions, opts: &SessionOptions, args: &DiffArgs) -> Result<String, ToolError> {
    let budget = page::budget(args.budget)?;
    let request = page::fingerprint(&(&args.session, &args.a, &args.b));
    let at = page::resume("diff_branches", request, args.cursor.as_deref())?;
    let (path, s) = open_read(sessions, opts, &args.session)?;
    let a = id_at(&s, entry(&s, &path, &args.a)?);
    let b = id_at(&s, entry(&s, &path, &args.b)?);
    let d = arbor_interop::diff(&s, &a, &b)?;
    let mut summary = serde_json::to_value(&d).unwrap_or(Value::Null);
    for side in ["a", "b"] {
        if let Some(list) = summary.pointer_mut(&format!("/{side}/entries")).and_then(Value::as_array_mut) {
            if list.len() > LISTED {
                let total = list.len();
                list.truncate(LISTED);
                if let Some(o) = summary.get_mut(side).and_then(Value::as_object_mut) {
                    o.insert("entriesTotal".into(), json!(total));
                }
            }
        }
    }
    // Every message each side adds, in order: a's then b's.
    let added: Vec<(&str, &String)> =
        d.a.entries.iter().map(|e| ("a", e)).chain(d.b.entries.iter().map(|e| ("b", e))).collect();
    let first_page = at == At::default();
    let mut budget_left = budget;
    let mut head = vec![];
    if first_page {
        let text = summary.to_string();
        budget_left = budget_left.saturating_sub(chars(&text) + 20);
        if budget_left < 300 {
            return Err(ToolError::Budget(format!(
                "budget {budget} is too small for this diff's summary ({} characters); give more",
                chars(&text)
            )));
        }
        head.push(("diff", summary));
    }
    let mut page = JsonPage::new("messages", budget_left);
    let mut next = None;
    let start = usize::try_from(at.item).unwrap_or(usize::MAX);
    for (k, (side, id)) in added.iter().enumerate().skip(start) {
        let Some(p) = s.position_of(id) else { continue };
        if !matches!(
            s.entry_type_at(p),
            Some(
                arbor_log::EntryType::Message
                    | arbor_log::EntryType::CustomMessage
                    | arbor_log::EntryType::BranchSummary
                    | arbor_log::EntryType::Compaction
            )
        ) {
            continue;
        }
        let value: Value = s.json_at(p)?.and_then(|j| serde_json::from_str(j).ok()).unwrap_or(Value::Null);
        let text = entry_text(&value);
        let cut = page::take_chars(&text, MESSAGE_CHARS);
        let shown = if cut.len() < text.len() {
            format!("{cut}… [{} more characters: read_entries]", chars(&text) - chars(cut))
        } else {
            text.clone()
        };
        let role = value
            .pointer("/message/role")
            .and_then(Value::as_str)
            .unwrap_or_else(|| value.get("type").and_then(Value::as_str).unwrap_or_default());
        let item = json!({"side": side, "entryId": id, "role": role, "text": shown});
        if !page.push(&item) {
            next = Some(page::cursor("diff_branches", request, At { item: k as u64, within: 0 }));
            break;
        }
    }
    let text = page.finish(next, &[]);
    if head.is_empty() {
        return Ok(text);
    }
    // {"diff":…, "messages":[…], "nextCursor":…}
    let body = text.strip_prefix('{').unwrap_or(&text);
    let diff = head.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect::<Vec<_>>().join(",");
    Ok(format!("{{{diff},{body}"))
}
