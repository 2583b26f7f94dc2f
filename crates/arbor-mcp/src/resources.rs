//! Resources: every session as `arbor://session/<id>` (its Markdown
//! export, the active path), listable a page at a time, and templates for
//! a session and for one entry of it.

use rmcp::model::{ListResourcesResult, ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use rmcp::ErrorData;
use serde_json::{json, Value};

use arbor_tree::sessions::{ListRequest, NoProgress, Scope, Sessions};
use arbor_tree::SessionOptions;

use crate::error::ToolError;
use crate::session::{entry, id_at, open_read};
use crate::text::entry_text;

/// The scheme and prefix of a session's resource.
const PREFIX: &str = "arbor://session/";
/// Sessions listed a page.
const PAGE: usize = 200;
/// The most bytes of a session's Markdown a resource gives.
pub const MAX_MARKDOWN: usize = 1 << 20;

/// The resource templates.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("arbor://session/{session}", "session")
            .with_description("A session's active path as Markdown (by id, id prefix or file name).")
            .with_mime_type("text/markdown"),
        ResourceTemplate::new("arbor://session/{session}/entry/{entry}", "entry")
            .with_description("One entry of a session, whole, as JSON (id, parent, type, role, time, label, text).")
            .with_mime_type("application/json"),
    ]
}

fn error(e: ToolError) -> ErrorData {
    match e {
        ToolError::Sessions(arbor_tree::sessions::SessionsError::NotFound { .. }) | ToolError::Entry(_) => {
            ErrorData::resource_not_found(e.to_string(), None)
        }
        e => ErrorData::invalid_params(e.to_string(), None),
    }
}

/// A page of the sessions as resources, newest first.
pub fn list(
    sessions: &dyn Sessions,
    open: &SessionOptions,
    cursor: Option<&str>,
) -> Result<ListResourcesResult, ErrorData> {
    let start: usize = match cursor {
        None => 0,
        Some(c) => c
            .parse()
            .map_err(|_| ErrorData::invalid_params(format!("cursor {c:?} is not one this server gave"), None))?,
    };
    let all = sessions.listing(&ListRequest::new(Scope::All), &NoProgress).map_err(|e| error(e.into()))?;
    let mut ids: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for i in &all {
        *ids.entry(i.id.as_str()).or_default() += 1;
    }
    let resources: Vec<Resource> = all
        .iter()
        .skip(start)
        .take(PAGE)
        .map(|i| {
            let title = i.name.clone().unwrap_or_else(|| i.first_message.chars().take(80).collect());
            // A session id two files share (a copy) names neither: those are named by DIR/FILE.
            let name = match ids.get(i.id.as_str()) {
                Some(1) => i.id.clone(),
                _ => dir_file(&i.path).unwrap_or_else(|| i.id.clone()),
            };
            let mut r = Resource::new(format!("{PREFIX}{name}"), title)
                .with_description(format!("{} · {} messages · {}", i.cwd, i.message_count, i.modified))
                .with_mime_type("text/markdown");
            if let Some(stamp) = open.store.stamp(&i.path) {
                r = r.with_size(stamp.size);
            }
            r
        })
        .collect();
    let mut page = ListResourcesResult::with_all_items(resources);
    page.next_cursor = (start + PAGE < all.len()).then(|| (start + PAGE).to_string());
    Ok(page)
}

/// How a `/` inside a session's name is written in a URI (`DIR%2FFILE`).
const SLASH: &str = "%2F";

/// `DIR%2FFILE` of a session file: its folder's and its own name.
fn dir_file(path: &std::path::Path) -> Option<String> {
    let file = path.file_name()?.to_str()?;
    let dir = path.parent()?.file_name()?.to_str()?;
    Some(format!("{dir}{SLASH}{file}"))
}

/// Reads `arbor://session/<session>` or `arbor://session/<session>/entry/<entry>`.
pub fn read(sessions: &dyn Sessions, open: &SessionOptions, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let rest = uri.strip_prefix(PREFIX).ok_or_else(|| {
        ErrorData::resource_not_found(format!("{uri}: not a resource of this server (arbor://session/…)"), None)
    })?;
    let (session, entry_id) = match rest.split_once("/entry/") {
        Some((s, e)) => (s, Some(e)),
        None => (rest, None),
    };
    if session.is_empty() || session.contains('/') || entry_id.is_some_and(|e| e.is_empty() || e.contains('/')) {
        return Err(ErrorData::resource_not_found(format!("{uri}: not a resource of this server"), None));
    }
    let session = session.replace(SLASH, "/").replace("%2f", "/");
    let (path, s) = open_read(sessions, open, &session).map_err(error)?;
    let contents = match entry_id {
        None => {
            let mut out = Capped::default();
            let result = arbor_interop::export_markdown(&s, None, &mut out);
            if let Err(e) = result {
                if !out.full {
                    return Err(ErrorData::internal_error(format!("{uri}: {e}"), None));
                }
            }
            let mut text = String::from_utf8_lossy(&out.bytes).into_owned();
            if out.full {
                text.push_str("\n\n[… cut at 1 MiB: read the rest with the read_context and read_entries tools]\n");
            }
            ResourceContents::text(text, uri).with_mime_type("text/markdown")
        }
        Some(e) => {
            let p = entry(&s, &path, e).map_err(error)?;
            let value: Value = s
                .json_at(p)
                .map_err(|e| error(e.into()))?
                .and_then(|j| serde_json::from_str(j).ok())
                .unwrap_or(Value::Null);
            let id = id_at(&s, p);
            let body = json!({
                "id": id,
                "parentId": value.get("parentId"),
                "type": value.get("type"),
                "role": value.pointer("/message/role"),
                "timestamp": value.get("timestamp"),
                "label": s.get_label(&id).map_err(|e| error(e.into()))?,
                "text": entry_text(&value),
            });
            ResourceContents::text(body.to_string(), uri).with_mime_type("application/json")
        }
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// A writer that keeps the first [`MAX_MARKDOWN`] bytes and then refuses more.
#[derive(Default)]
struct Capped {
    bytes: Vec<u8>,
    full: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = MAX_MARKDOWN - self.bytes.len();
        if buf.len() > room {
            self.bytes.extend_from_slice(&buf[..room]);
            self.full = true;
            return Err(std::io::Error::other("the resource is full"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
