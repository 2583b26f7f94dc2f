//! `list_sessions`: the sessions newest first, as `arbor ls` lists them,
//! filtered by working directory and time, a page at a time.

use serde::{Deserialize, Serialize};

use arbor_log::time::parse_iso_ms;
use arbor_tree::listing::SessionListInfo;
use arbor_tree::sessions::{ListRequest, Scope, Sessions};

use crate::error::ToolError;
use crate::page::{self, JsonPage};
use crate::progress::Reporter;

/// The characters of a first prompt a listing shows.
const FIRST_PROMPT: usize = 300;

/// `list_sessions`' arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, Hash)]
pub struct ListArgs {
    /// Only the sessions of this working directory (an absolute path). Default: every directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Only sessions active at or after this time (ISO date or date-time, e.g. 2026-05-01).
    #[serde(default)]
    pub since: Option<String>,
    /// Only sessions last active before this time (ISO date or date-time).
    #[serde(default)]
    pub until: Option<String>,
    /// The most sessions per page (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
    /// The most characters of the answer (default 20000).
    #[serde(default)]
    #[schemars(range(min = 500))]
    pub budget: Option<u64>,
    /// The nextCursor of the previous page, for older sessions.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// One session of a listing.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed<'a> {
    /// The session's id.
    pub id: &'a str,
    /// Its name, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    /// Its working directory.
    pub cwd: &'a str,
    /// When it was created, and last active (ISO).
    pub created: &'a str,
    /// See [`Listed::created`].
    pub modified: &'a str,
    /// Its `message` entries.
    pub message_count: usize,
    /// Its first user message (cut).
    pub first_message: String,
    /// Its size in bytes, where the backend can tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Where it is (a file, or a server's `/DIR/FILE`).
    pub path: String,
}

/// A time bound given as an argument, in epoch milliseconds.
fn bound(what: &str, v: Option<&str>) -> Result<Option<i64>, ToolError> {
    let Some(s) = v.map(str::trim).filter(|s| !s.is_empty()) else { return Ok(None) };
    match parse_iso_ms(s) {
        Some(ms) => Ok(Some(ms)),
        None => Err(ToolError::Argument(format!("{what} {s:?} is not an ISO date (2026-05-01) or date-time"))),
    }
}

/// The sessions `args` asks for, as a JSON page: `{"sessions":[…],"total":N,"nextCursor":…}`.
pub fn list(
    sessions: &dyn Sessions,
    size_of: &dyn Fn(&SessionListInfo) -> Option<u64>,
    args: &ListArgs,
    progress: &Reporter,
) -> Result<String, ToolError> {
    let budget = page::budget(args.budget)?;
    let request = page::fingerprint(&(&args.cwd, &args.since, &args.until, args.limit));
    let at = page::resume("list_sessions", request, args.cursor.as_deref())?;
    let since = bound("since", args.since.as_deref())?;
    let until = bound("until", args.until.as_deref())?;
    let scope = args.cwd.as_deref().map_or(Scope::All, Scope::cwd);
    let limit = args.limit.unwrap_or(50).clamp(1, 500) as usize;
    let all = sessions.listing(&ListRequest::new(scope), progress)?;
    let shown: Vec<&SessionListInfo> = all
        .iter()
        .filter(|i| {
            let t = parse_iso_ms(&i.modified);
            since.is_none_or(|s| t.is_some_and(|t| t >= s)) && until.is_none_or(|u| t.is_some_and(|t| t < u))
        })
        .collect();
    let skip = usize::try_from(at.item).unwrap_or(usize::MAX);
    let mut page = JsonPage::new("sessions", budget);
    let mut next = None;
    for (k, info) in shown.iter().enumerate().skip(skip) {
        let full = k >= skip + limit;
        if full || !page.push(&listed(info, size_of(info))) {
            if page.is_empty() {
                return Err(ToolError::Budget(format!("budget {budget} is too small for one session; give more")));
            }
            next = Some(page::cursor("list_sessions", request, page::At { item: k as u64, within: 0 }));
            break;
        }
    }
    Ok(page.finish(next, &[("total", serde_json::json!(shown.len()))]))
}

fn listed(i: &SessionListInfo, size: Option<u64>) -> Listed<'_> {
    let first = i.first_message.trim();
    let cut = page::take_chars(first, FIRST_PROMPT);
    let first_message = if cut.len() < first.len() { format!("{cut}…") } else { cut.to_owned() };
    Listed {
        id: &i.id,
        name: i.name.as_deref(),
        cwd: &i.cwd,
        created: &i.created,
        modified: &i.modified,
        message_count: i.message_count,
        first_message,
        size,
        path: i.path.to_string_lossy().into_owned(),
    }
}
