//! The list: the page (`/`), the sessions as JSON (`/api/sessions`), search
//! across sessions (`/api/search`) and the list's event stream
//! (`/api/events`: an event whenever the listing changes, found by reading
//! it again every second while someone watches).

use std::collections::hash_map::DefaultHasher;
use std::convert::Infallible;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine as _;
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use arbor_tree::sessions::{ListRequest, NoProgress, Scope, SearchRequest};
use arbor_tree::SessionListInfo;

use crate::error::Refusal;
use crate::page::key_of;
use crate::state::Shared;

const HTML: &str = include_str!("assets/list.html");
const JS: &str = include_str!("assets/list.js");
const CSS: &str = include_str!("assets/list.css");

/// A first prompt is shown up to this many characters.
const FIRST_MAX: usize = 300;
/// The most hits one search returns.
const HITS_MAX: usize = 200;

/// The list's page: its script allowed by hash, connections to this origin only.
pub(crate) async fn index() -> Response {
    static PAGE: OnceLock<(String, String)> = OnceLock::new();
    let (page, csp) = PAGE.get_or_init(|| {
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(JS.as_bytes()));
        let csp = format!(
            "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; script-src 'sha256-{hash}'"
        );
        (HTML.replacen("{{CSS}}", CSS, 1).replacen("{{JS}}", JS, 1), csp)
    });
    let mut r = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page.clone()).into_response();
    if let Ok(v) = HeaderValue::from_str(csp) {
        r.headers_mut().insert(header::CONTENT_SECURITY_POLICY, v);
    }
    r
}

/// `?cwd=` narrows a question to one working directory.
#[derive(Debug, Deserialize)]
pub(crate) struct Narrow {
    cwd: Option<String>,
}

fn scope(cwd: Option<&str>) -> Scope {
    match cwd.filter(|c| !c.is_empty()) {
        Some(c) => Scope::cwd(c),
        None => Scope::All,
    }
}

/// One session as the list shows it.
fn shown(info: &SessionListInfo) -> Option<Value> {
    let (dir, file) = key_of(&info.path)?;
    let mut first: String = info.first_message.chars().take(FIRST_MAX).collect();
    if first.len() < info.first_message.len() {
        first.push('…');
    }
    Some(json!({
        "dir": dir,
        "file": file,
        "id": info.id,
        "name": info.name,
        "cwd": info.cwd,
        "first": first,
        "messages": info.message_count,
        "created": info.created,
        "modified": info.modified,
    }))
}

/// The sessions, newest first.
pub(crate) async fn sessions(State(st): State<Shared>, Query(q): Query<Narrow>) -> Result<Json<Value>, Refusal> {
    let scope = scope(q.cwd.as_deref());
    let list = tokio::task::spawn_blocking(move || {
        let list = st.sessions.listing(&ListRequest::new(scope), &NoProgress)?;
        Ok::<_, Refusal>(json!({
            "location": st.sessions.location(),
            "writes": st.options.writes == crate::Writes::Allowed,
            "sessions": list.iter().filter_map(shown).collect::<Vec<_>>(),
        }))
    })
    .await??;
    Ok(Json(list))
}

/// `?q=QUERY[&cwd=DIR][&limit=N]`.
#[derive(Debug, Deserialize)]
pub(crate) struct Find {
    q: String,
    cwd: Option<String>,
    limit: Option<usize>,
}

/// Hits across sessions, best first, each with the session it opens.
pub(crate) async fn search(State(st): State<Shared>, Query(f): Query<Find>) -> Result<Json<Value>, Refusal> {
    if f.q.trim().is_empty() {
        return Err(Refusal::new(StatusCode::BAD_REQUEST, "an empty search"));
    }
    let request = SearchRequest::new(f.q, scope(f.cwd.as_deref())).limit(f.limit.unwrap_or(50).clamp(1, HITS_MAX));
    let hits = tokio::task::spawn_blocking(move || st.sessions.search(&request, &NoProgress)).await??;
    let hits: Vec<Value> = hits
        .iter()
        .filter_map(|h| {
            let (dir, file) = key_of(&h.path)?;
            let mut v = serde_json::to_value(h).ok()?;
            let o = v.as_object_mut()?;
            // The session is named by the URL, not by a path of this machine.
            o.remove("path");
            o.insert("dir".into(), dir.into());
            o.insert("file".into(), file.into());
            Some(v)
        })
        .collect();
    Ok(Json(json!({ "hits": hits })))
}

/// The list's events: `sessions` whenever the listing changed.
pub(crate) async fn events(State(st): State<Shared>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = st.changes.subscribe();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.changed().await.ok()?;
        let generation = *rx.borrow_and_update();
        Some((Ok(Event::default().event("sessions").data(generation.to_string())), rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// How often the listing is read while someone watches it.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Reads the listing every [`WATCH_EVERY`] while a list is open, and tells
/// the lists when it changed.
pub(crate) async fn watch_listing(st: Shared) {
    let mut last: Option<u64> = None;
    let mut tick = tokio::time::interval(WATCH_EVERY);
    loop {
        tick.tick().await;
        if st.changes.receiver_count() == 0 {
            last = None;
            continue;
        }
        let s = st.clone();
        let seen = tokio::task::spawn_blocking(move || {
            let list = s.sessions.listing(&ListRequest::new(Scope::All), &NoProgress).ok()?;
            let mut h = DefaultHasher::new();
            for i in &list {
                (&i.path, &i.modified, i.message_count, &i.name).hash(&mut h);
            }
            Some(h.finish())
        })
        .await
        .ok()
        .flatten();
        // The first reading tells too: a list may have been read just before it.
        if seen.is_some() && seen != last {
            st.changes.send_modify(|g| *g += 1);
            last = seen;
        }
    }
}
