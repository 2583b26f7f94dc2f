//! What every tool shares: a budget in characters and a cursor to page on.
//!
//! A tool's answer is text that fits its budget (counted in characters,
//! what a model's context holds); what did not fit is named by a cursor the
//! model passes back to get the next page. A cursor is opaque to the model:
//! it names the tool, the request it continues (a fingerprint of the other
//! arguments) and where to go on, so a cursor given to another tool or with
//! other arguments is refused with a clear message instead of paging
//! something else.

use std::hash::{DefaultHasher, Hash, Hasher};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::ToolError;

/// The budget a tool answers in when none is given (characters).
pub const DEFAULT_BUDGET: usize = 20_000;
/// The smallest budget a tool takes: below it no answer is useful.
pub const MIN_BUDGET: usize = 500;
/// The largest budget a tool takes.
pub const MAX_BUDGET: usize = 400_000;

/// The budget asked for, checked: [`DEFAULT_BUDGET`] when none.
pub fn budget(asked: Option<u64>) -> Result<usize, ToolError> {
    let Some(b) = asked else { return Ok(DEFAULT_BUDGET) };
    if b < MIN_BUDGET as u64 {
        return Err(ToolError::Budget(format!("budget {b} is too small: give at least {MIN_BUDGET} characters")));
    }
    Ok(usize::try_from(b).unwrap_or(MAX_BUDGET).min(MAX_BUDGET))
}

/// Where a page starts: decoded from a cursor the tool handed out before.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct At {
    /// The item (a hit, a session, a row, an entry, a message).
    #[serde(rename = "o")]
    pub item: u64,
    /// Characters already given of that item (an entry longer than a page).
    #[serde(rename = "c", default, skip_serializing_if = "is_zero")]
    pub within: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize, Deserialize)]
struct Wire {
    /// The tool.
    t: String,
    /// The request's fingerprint.
    f: u64,
    #[serde(flatten)]
    at: At,
}

/// A fingerprint of a request's arguments (all but the budget and the cursor).
pub fn fingerprint(args: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    args.hash(&mut h);
    h.finish()
}

/// The cursor that continues `tool`'s request `request` at `at`.
pub fn cursor(tool: &str, request: u64, at: At) -> String {
    let wire = Wire { t: tool.to_owned(), f: request, at };
    let json = serde_json::to_vec(&wire).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(json)
}

/// Where `cursor` (when given) says `tool`'s request `request` goes on; the
/// start without one.
pub fn resume(tool: &str, request: u64, cursor: Option<&str>) -> Result<At, ToolError> {
    let Some(c) = cursor.map(str::trim).filter(|c| !c.is_empty()) else { return Ok(At::default()) };
    let bad = |why: &str| ToolError::Cursor(format!("cursor {}: {why}", shown(c)));
    let bytes = URL_SAFE_NO_PAD.decode(c).map_err(|_| bad("not a cursor this server gave"))?;
    let wire: Wire = serde_json::from_slice(&bytes).map_err(|_| bad("not a cursor this server gave"))?;
    if wire.t != tool {
        return Err(bad(&format!("it continues {}, not {tool}", wire.t)));
    }
    if wire.f != request {
        return Err(bad("it continues a call with other arguments; repeat that call's arguments with it"));
    }
    Ok(wire.at)
}

/// A cursor as an error message shows it (cut: it comes from the model).
fn shown(c: &str) -> String {
    let cut: String = c.chars().take(40).collect();
    if cut.len() < c.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// The number of characters of `s`.
pub fn chars(s: &str) -> usize {
    s.chars().count()
}

/// The first `n` characters of `s`.
pub fn take_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// A JSON object written item by item into a budget: `{"KEY":[item,…],"nextCursor":"…",…}`.
///
/// Items are added while the whole answer, with room kept for the closing
/// fields, stays within the budget; the first item that does not fit ends
/// the page.
#[derive(Debug)]
pub struct JsonPage {
    out: String,
    used: usize,
    budget: usize,
    items: usize,
}

/// Room kept for what closes a page (the cursor and the counts).
const CLOSING: usize = 300;

impl JsonPage {
    /// A page of `key`'s items within `budget` characters.
    pub fn new(key: &str, budget: usize) -> JsonPage {
        let out = format!("{{\"{key}\":[");
        let used = chars(&out);
        JsonPage { out, used, budget, items: 0 }
    }

    /// Adds `item` when it fits; false (nothing added) when it does not.
    pub fn push(&mut self, item: &impl Serialize) -> bool {
        let text = serde_json::to_string(item).unwrap_or_default();
        let n = chars(&text) + usize::from(self.items > 0);
        if self.used + n + CLOSING > self.budget {
            return false;
        }
        if self.items > 0 {
            self.out.push(',');
        }
        self.out.push_str(&text);
        self.used += n;
        self.items += 1;
        true
    }

    /// The characters the page holds so far.
    pub fn used(&self) -> usize {
        self.used
    }

    /// True when the page holds no item.
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }

    /// The page's text: its items, then `nextCursor` (when more is left)
    /// and the other closing fields.
    pub fn finish(mut self, next: Option<String>, extra: &[(&str, serde_json::Value)]) -> String {
        self.out.push(']');
        for (k, v) in extra {
            self.out.push_str(&format!(",\"{k}\":{v}"));
        }
        if let Some(c) = next {
            self.out.push_str(&format!(",\"nextCursor\":\"{c}\""));
        }
        self.out.push('}');
        self.out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_cursor_goes_back_to_its_own_request_only() {
        let f = fingerprint(&("q", 3));
        let c = cursor("search_sessions", f, At { item: 40, within: 0 });
        assert_eq!(resume("search_sessions", f, Some(&c)).unwrap(), At { item: 40, within: 0 });
        let e = resume("list_sessions", f, Some(&c)).unwrap_err().to_string();
        assert!(e.contains("it continues search_sessions, not list_sessions"), "{e}");
        let e = resume("search_sessions", fingerprint(&("other", 3)), Some(&c)).unwrap_err().to_string();
        assert!(e.contains("other arguments"), "{e}");
        let e = resume("search_sessions", f, Some("!!nonsense")).unwrap_err().to_string();
        assert!(e.contains("not a cursor this server gave"), "{e}");
        assert_eq!(resume("search_sessions", f, None).unwrap(), At::default());
    }

    #[test]
    fn budgets_are_checked() {
        assert_eq!(budget(None).unwrap(), DEFAULT_BUDGET);
        assert!(budget(Some(10)).unwrap_err().to_string().contains("too small"));
        assert_eq!(budget(Some(u64::MAX)).unwrap(), MAX_BUDGET);
    }

    #[test]
    fn a_page_stays_within_its_budget() {
        let mut page = JsonPage::new("items", 1000);
        let item = "x".repeat(100);
        let mut n = 0;
        while page.push(&item) {
            n += 1;
        }
        let text = page.finish(Some("c".repeat(60)), &[("total", serde_json::json!(12345))]);
        assert!(n > 3);
        assert!(chars(&text) <= 1000, "{}", chars(&text));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["items"].as_array().unwrap().len(), n);
    }
}
