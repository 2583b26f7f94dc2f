//! A session's event stream (`/s/DIR/FILE/events`): what is appended to the
//! session, as the page's items ([`LiveEntries`]), from the backend's
//! follower ([`Sessions::follow`]: a file's growth, a server's
//! notifications). Each `entries` event carries as its id the number of
//! entries in file order after it, so a stream that reconnects (the
//! browser sends `Last-Event-ID`) or a page made a moment before its stream
//! started (`?have=N`) gets what it missed first. A session replaced whole
//! sends `replaced` (the page is drawn anew), one that went away `gone`.
//!
//! [`Sessions::follow`]: arbor_tree::sessions::Sessions::follow

use std::convert::Infallible;
use std::path::Path;
use std::time::Duration;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use arbor_interop::LiveEntries;
use arbor_tree::sessions::{FollowFrom, Followed};
use arbor_tree::{OpenMode, Position, Session};

use crate::error::Refusal;
use crate::page::locate;
use crate::state::Shared;

/// How long a follower waits before it looks whether its page is still there.
const WAIT: Duration = Duration::from_millis(250);
/// Items per event.
const PER_EVENT: usize = 200;
/// Missed entries sent as items, at most; more and the page is drawn anew.
const CATCH_UP_MAX: usize = 2_000;

/// `?have=N`: the entries the page holds.
#[derive(Debug, Deserialize)]
pub(crate) struct Have {
    have: Option<usize>,
}

/// The event stream of `dir`/`file`.
pub(crate) async fn events(
    State(st): State<Shared>,
    UrlPath((dir, file)): UrlPath<(String, String)>,
    Query(q): Query<Have>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Refusal> {
    let permit = st.followers.clone().try_acquire_owned().map_err(|_| {
        Refusal::new(StatusCode::SERVICE_UNAVAILABLE, "too many sessions followed at once; close a page")
    })?;
    let resumed = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    let have = resumed.or(q.have);
    let s2 = st.clone();
    let path = tokio::task::spawn_blocking(move || locate(s2.sessions.as_ref(), &dir, &file)).await??;
    let (tx, rx) = mpsc::channel::<Event>(16);
    std::thread::Builder::new()
        .name("arbor-serve-follow".into())
        .spawn(move || {
            let _permit = permit;
            follow(&st, &path, have, &tx);
        })
        .map_err(|e| Refusal::new(StatusCode::SERVICE_UNAVAILABLE, format!("cannot follow the session: {e}")))?;
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let event = rx.recv().await?;
        Some((Ok(event), rx))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Sends `items` as `entries` events, `count` (entries so far) as the last one's id.
fn send_items(tx: &mpsc::Sender<Event>, items: &[Value], count: usize) -> bool {
    let chunks: Vec<&[Value]> = items.chunks(PER_EVENT).collect();
    for (k, chunk) in chunks.iter().enumerate() {
        let mut event = Event::default().event("entries").data(Value::Array(chunk.to_vec()).to_string());
        if k + 1 == chunks.len() {
            event = event.id(count.to_string());
        }
        if tx.blocking_send(event).is_err() {
            return false;
        }
    }
    true
}

fn send(tx: &mpsc::Sender<Event>, name: &str, data: &str) -> bool {
    tx.blocking_send(Event::default().event(name).data(data)).is_ok()
}

/// Follows `path` until its page goes away.
fn follow(st: &Shared, path: &Path, have: Option<usize>, tx: &mpsc::Sender<Event>) {
    let mut follower = match st.sessions.follow(path, FollowFrom::End) {
        Ok((f, _)) => f,
        Err(e) => {
            send(tx, "failed", &e.to_string());
            return;
        }
    };
    let mut live = LiveEntries::new(&st.options.html);
    // Started after the page was made: what came in between first. Without
    // `have` (not a page), the ids count from the entries there are now.
    let mut count = match have.map_or_else(|| count_entries(st, path), Ok) {
        Ok(n) => n,
        Err(e) => {
            send(tx, "failed", &e);
            return;
        }
    };
    if let Some(have) = have {
        match catch_up(st, path, have, &mut live) {
            Ok(Some((items, now))) => {
                count = now;
                if !items.is_empty() && !send_items(tx, &items, count) {
                    return;
                }
            }
            Ok(None) => {
                send(tx, "replaced", "");
                return;
            }
            Err(e) => {
                send(tx, "failed", &e);
                return;
            }
        }
    }
    while !tx.is_closed() {
        let sent = match follower.wait(WAIT) {
            Ok(Followed::Idle) => true,
            Ok(Followed::Lines(bytes)) => {
                let items = live.lines(&bytes);
                count += items.len();
                send_items(tx, &items, count)
            }
            Ok(Followed::Replaced(_)) => send(tx, "replaced", ""),
            Ok(Followed::Gone) => send(tx, "gone", ""),
            // The store is away (a server restart): the page says so; what
            // was written meanwhile arrives once it is back.
            Ok(Followed::Reconnecting(why)) => send(tx, "reconnecting", &why),
            Err(e) => {
                std::thread::sleep(Duration::from_secs(1));
                send(tx, "failed", &e.to_string())
            }
        };
        if !sent {
            return;
        }
    }
}

/// How many entries `path` holds in file order.
fn count_entries(st: &Shared, path: &Path) -> Result<usize, String> {
    let s = Session::open(path, OpenMode::ReadOnly, st.options.session_options.clone()).map_err(|e| e.to_string())?;
    Ok(s.positions().len())
}

/// The items of the entries after the first `have` in file order, and how
/// many entries there are now; `None` when the page is better drawn anew
/// (fewer entries than it holds, or too many missed).
fn catch_up(
    st: &Shared,
    path: &Path,
    have: usize,
    live: &mut LiveEntries,
) -> Result<Option<(Vec<Value>, usize)>, String> {
    let s = Session::open(path, OpenMode::ReadOnly, st.options.session_options.clone()).map_err(|e| e.to_string())?;
    let now = s.positions().len();
    if now < have || now - have > CATCH_UP_MAX {
        return Ok(None);
    }
    let missed: Vec<Position> = s.positions().skip(have).collect();
    let items =
        s.decode_many(&missed).map_err(|e| e.to_string())?.into_iter().flatten().map(|e| live.entry(&e)).collect();
    Ok(Some((items, now)))
}
