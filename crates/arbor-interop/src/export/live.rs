//! A page that grows: the entries appended to a session after its page was
//! made, as items the page's script adds in place (`window.arbor.append`),
//! for a program that serves the page and follows the session (`arbor
//! serve`).
//!
//! An item is one entry as JSON: `{"id", "parent" (an id or null), "row":
//! [kind, flags, id, title, extra?], "body": [time, html]}`, the row (less
//! its parent's place) and the
//! body exactly as the page's own (the body cleaned the same way), plus
//! `"label": [target, text or null]` for a label entry and `"name"` for a
//! session name.

use std::collections::HashMap;

use arbor_log::reader::{parse_line, Parsed};
use arbor_log::records::is_header;
use arbor_log::{json as js, Entry, EntryKind};
use serde_json::{json, Value};

use super::body::{render, Limits};
use super::html::{row, HtmlOptions};
use super::stream::NoCuts;

/// Tool calls remembered for the titles of their results, at most.
const CALLS_KEPT: usize = 10_000;

/// Turns appended entries into the page's items, remembering the tool calls
/// it saw so that their results get the call as their title (as in the page).
#[derive(Debug)]
pub struct LiveEntries {
    limits: Limits,
    calls: HashMap<String, String>,
}

impl LiveEntries {
    /// Items made as the page made with `opts` makes its entries.
    pub fn new(opts: &HtmlOptions) -> LiveEntries {
        LiveEntries { limits: Limits { max_output: opts.max_output, html: true }, calls: HashMap::new() }
    }

    /// The items of the entries among whole `lines` (a session file's bytes);
    /// the header and lines that are no entry are left out.
    pub fn lines(&mut self, lines: &[u8]) -> Vec<Value> {
        lines
            .split_inclusive(|&b| b == b'\n')
            .filter_map(|l| match parse_line(l).0 {
                Parsed::Object(v) if !is_header(&v) => Entry::from_owned(v).ok(),
                _ => None,
            })
            .map(|e| self.entry(&e))
            .collect()
    }

    /// The item of one entry.
    pub fn entry(&mut self, e: &Entry) -> Value {
        // A line here is held whole: nothing of it is cut.
        let Ok(mut r) = render(e, self.limits, &NoCuts) else { return Value::Null };
        if let Some(line) = r.call_id.as_ref().and_then(|id| self.calls.remove(id)) {
            r.title = line;
        }
        if self.calls.len() > CALLS_KEPT {
            self.calls.clear();
        }
        for (id, tool, line) in &r.calls {
            self.calls.insert(id.clone(), super::tools::one_line(&format!("{tool} {line}"), 80));
        }
        let mut item = json!({
            "id": e.id,
            "parent": e.parent_id,
            "row": row(Value::Null, None, &e.id, &r).as_array().map(|a| a[1..].to_vec()).unwrap_or_default(),
            "body": [r.time, r.html],
        });
        match &e.kind {
            EntryKind::Label(l) => item["label"] = json!([l.target_id, l.set_to().map(js::text)]),
            EntryKind::SessionInfo(i) => item["name"] = json!(i.name),
            _ => {}
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_result_is_titled_by_its_call_and_labels_name_their_target() {
        let lines = concat!(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
            "\n",
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls -la"}}]}}"#,
            "\n",
            r#"{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"<script>x</script>"}]}}"#,
            "\n",
            r#"{"type":"label","id":"l1","parentId":"r1","timestamp":"2026-01-01T00:00:03.000Z","targetId":"a1","label":"here"}"#,
            "\n",
            "not json\n",
        );
        let items = LiveEntries::new(&HtmlOptions::default()).lines(lines.as_bytes());
        assert_eq!(items.len(), 3, "{items:?}");
        assert_eq!(items[0]["parent"], Value::Null);
        assert_eq!(items[1]["parent"], "a1");
        assert_eq!(items[1]["row"][3], "bash $ ls -la", "the title the page gives it");
        let body = items[1]["body"][1].as_str().unwrap();
        assert!(!body.contains("<script"), "{body}");
        assert_eq!(items[2]["label"], json!(["a1", "here"]));
    }
}
