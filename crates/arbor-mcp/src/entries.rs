//! `read_entries`: entries by id or id prefix, each with its whole text
//! (tool calls and results included), a page at a time; an entry longer
//! than a page goes on on the next.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use arbor_tree::sessions::Sessions;
use arbor_tree::{Position, SessionOptions};

use crate::error::ToolError;
use crate::page::{self, chars, take_chars, At, JsonPage};
use crate::session::{damage_note, entry, id_at, open_read};
use crate::text::entry_text;

/// The most entries one call names.
pub const MAX_IDS: usize = 100;

/// `read_entries`' arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, Hash)]
pub struct EntriesArgs {
    /// The session: its id, id prefix, file name or path.
    pub session: String,
    /// The entries: ids or unique id prefixes (at most 100).
    pub ids: Vec<String>,
    /// The most characters of the answer (default 20000).
    #[serde(default)]
    #[schemars(range(min = 500))]
    pub budget: Option<u64>,
    /// The nextCursor of the previous page, for the rest.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// One entry as `read_entries` gives it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown {
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_id: Option<String>,
    #[serde(rename = "type")]
    entry_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<String>,
    timestamp: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    on_active_path: bool,
    /// Where `text` starts in the entry's whole text (characters), when a page before gave its beginning.
    #[serde(skip_serializing_if = "is_zero")]
    text_from: u64,
    /// The entry's text (from `textFrom`).
    text: String,
    /// Characters of the text left for the next page.
    #[serde(skip_serializing_if = "is_zero")]
    text_left: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The entries `args` names, as a JSON page: `{"entries":[…],"nextCursor":…}`.
pub fn read_entries(sessions: &dyn Sessions, opts: &SessionOptions, args: &EntriesArgs) -> Result<String, ToolError> {
    let budget = page::budget(args.budget)?;
    let request = page::fingerprint(&(&args.session, &args.ids));
    let at = page::resume("read_entries", request, args.cursor.as_deref())?;
    if args.ids.is_empty() {
        return Err(ToolError::Argument("no entry ids given".into()));
    }
    if args.ids.len() > MAX_IDS {
        return Err(ToolError::Argument(format!("{} ids given: at most {MAX_IDS} a call", args.ids.len())));
    }
    let (path, mut s) = open_read(sessions, opts, &args.session)?;
    let mut positions: Vec<Position> = args.ids.iter().map(|id| entry(&s, &path, id)).collect::<Result<_, _>>()?;
    if !s.lines_sound(&positions) {
        s.read_again_without_index()?;
        positions = args.ids.iter().map(|id| entry(&s, &path, id)).collect::<Result<_, _>>()?;
    }
    let active: std::collections::HashSet<Position> = s.branch_positions(None).into_iter().collect();
    let mut page = JsonPage::new("entries", budget);
    let mut next = None;
    let start = usize::try_from(at.item).unwrap_or(usize::MAX);
    let mut within = at.within;
    for (k, &p) in positions.iter().enumerate().skip(start) {
        let value: Value = s.json_at(p)?.and_then(|j| serde_json::from_str(j).ok()).unwrap_or(Value::Null);
        let whole = entry_text(&value);
        let field = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_owned);
        let id = id_at(&s, p);
        let skip = usize::try_from(within).unwrap_or(usize::MAX);
        let rest: &str = whole.char_indices().nth(skip).map_or("", |(i, _)| &whole[i..]);
        let mut shown = Shown {
            label: s.get_label(&id)?.map(str::to_owned),
            id,
            parent_id: field("parentId"),
            entry_type: field("type").unwrap_or_default(),
            role: value.pointer("/message/role").and_then(Value::as_str).map(str::to_owned),
            timestamp: field("timestamp").unwrap_or_default(),
            on_active_path: active.contains(&p),
            text_from: within,
            text: rest.to_owned(),
            text_left: 0,
        };
        if page.push(&shown) {
            within = 0;
            continue;
        }
        // It does not fit whole: as much of its text as fits, the rest on the next page.
        let mut room = budget.saturating_sub(page_len_estimate(&page) + 600);
        let mut placed = false;
        while room > 0 {
            let part = take_chars(rest, room);
            shown.text = part.to_owned();
            shown.text_left = (chars(rest) - chars(part)) as u64;
            if page.push(&shown) {
                let given = within + chars(part) as u64;
                next = Some(page::cursor("read_entries", request, At { item: k as u64, within: given }));
                placed = true;
                break;
            }
            // JSON escapes made it longer than counted: try with less.
            room = room * 3 / 4;
            if room < 50 {
                break;
            }
        }
        if !placed {
            if page.is_empty() {
                return Err(ToolError::Budget(format!(
                    "budget {budget} is too small for entry {}; give more",
                    shown.id
                )));
            }
            next = Some(page::cursor("read_entries", request, At { item: k as u64, within }));
        }
        break;
    }
    let mut extra = vec![];
    if let Some(note) = damage_note(&s) {
        extra.push(("note", Value::String(note)));
    }
    Ok(page.finish(next, &extra))
}

/// The characters a page holds so far (an upper bound is enough).
fn page_len_estimate(page: &JsonPage) -> usize {
    page.used()
}
