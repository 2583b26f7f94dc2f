//! `search_sessions`: the same search as `arbor search`, a page of hits at a time.

use std::hash::Hash;

use serde::Deserialize;

use arbor_tree::sessions::{Hit, Scope, SearchRequest, Sessions};

use crate::error::ToolError;
use crate::page::{self, JsonPage};
use crate::progress::Reporter;

/// The most hits one call returns.
pub const MAX_LIMIT: u64 = 200;

/// `search_sessions`' arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, Hash)]
pub struct SearchArgs {
    /// What to find: space-separated words that must all match (as written, up to case; fuzzily only when nothing matches exactly), "quoted phrases", or re:REGEX.
    pub query: String,
    /// Only the sessions of this working directory (an absolute path). Default: every directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Only this session (its id, id prefix or file name).
    #[serde(default)]
    pub session: Option<String>,
    /// The most hits, best first (default 20, at most 200).
    #[serde(default)]
    pub limit: Option<u64>,
    /// The most characters of the answer (default 20000).
    #[serde(default)]
    #[schemars(range(min = 500))]
    pub budget: Option<u64>,
    /// The nextCursor of the previous page, for more hits.
    #[serde(default)]
    pub cursor: Option<String>,
}

impl SearchArgs {
    /// The arguments a cursor must come back with.
    fn fingerprint(&self) -> u64 {
        page::fingerprint(&(&self.query, &self.cwd, &self.session, self.limit))
    }
}

/// The hits `args` asks for, as a JSON page: `{"hits":[…],"nextCursor":…}`,
/// each hit what `arbor search --json` prints.
pub fn search(sessions: &dyn Sessions, args: &SearchArgs, progress: &Reporter) -> Result<String, ToolError> {
    let budget = page::budget(args.budget)?;
    let at = page::resume("search_sessions", args.fingerprint(), args.cursor.as_deref())?;
    if args.query.trim().is_empty() {
        return Err(ToolError::Argument("the query is empty".into()));
    }
    let limit = args.limit.unwrap_or(20).clamp(1, MAX_LIMIT);
    let (scope, only) = match (&args.session, &args.cwd) {
        (Some(name), _) => {
            let path = crate::session::resolve(sessions, name)?;
            let dir = path.parent().and_then(|d| d.file_name()).map(|d| d.to_string_lossy().into_owned());
            (dir.map_or(Scope::All, Scope::Dir), Some(path))
        }
        (None, Some(cwd)) => (Scope::cwd(cwd), None),
        (None, None) => (Scope::All, None),
    };
    // One session's hits are those of its folder's, filtered: asked for
    // until the page is full or the folder has no more.
    let skip = usize::try_from(at.item).unwrap_or(usize::MAX);
    let want = skip.saturating_add(limit as usize);
    let hits = match &only {
        None => sessions.search(&SearchRequest::new(args.query.clone(), scope).limit(want), progress)?,
        Some(path) => {
            let mut asked = want.max(100);
            loop {
                let all =
                    sessions.search(&SearchRequest::new(args.query.clone(), scope.clone()).limit(asked), progress)?;
                let done = all.len() < asked;
                let mine: Vec<Hit> = all.into_iter().filter(|h| &h.path == path).collect();
                if done || mine.len() >= want || asked >= 100_000 {
                    break mine;
                }
                asked *= 4;
            }
        }
    };
    let total = hits.len();
    let mut page = JsonPage::new("hits", budget);
    let mut next = None;
    for (i, hit) in hits.iter().enumerate().skip(skip).take(limit as usize) {
        if !page.push(hit) {
            if page.is_empty() {
                return Err(ToolError::Budget(format!("budget {budget} is too small for one hit; give more")));
            }
            next = Some(page::cursor("search_sessions", args.fingerprint(), page::At { item: i as u64, within: 0 }));
            break;
        }
    }
    if next.is_none() && total == want {
        // The search stopped at the limit: there may be more.
        next = Some(page::cursor("search_sessions", args.fingerprint(), page::At { item: want as u64, within: 0 }));
    }
    Ok(page.finish(next, &[]))
}
