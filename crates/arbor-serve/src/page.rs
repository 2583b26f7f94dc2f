//! A session's page (`/s/DIR/FILE`): the export's page, made per request
//! and streamed as it is written, with the server's script added (live
//! updates, editing, the way back to the list). Sessions are named in URLs
//! by pi's two names, the cwd folder and the file, and served only when the
//! backend lists a session by those names.

use std::io::Write;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;
use tokio::sync::mpsc;

use arbor_interop::{HtmlOptions, Served};
use arbor_tree::sessions::{check_component, ListRequest, NoProgress, Scope, Sessions};
use arbor_tree::{OpenMode, Session};

use crate::error::Refusal;
use crate::state::Shared;
use crate::Writes;

const SERVE_JS: &str = include_str!("assets/serve.js");
const SERVE_CSS: &str = include_str!("assets/serve.css");

/// Bytes of the page sent at a time.
const PIECE: usize = 64 * 1024;
/// Pieces waiting for a slow reader, at most.
const PIECES_WAITING: usize = 4;

/// A session's two names (its cwd folder and file), from the end of `path`.
pub(crate) fn key_of(path: &Path) -> Option<(String, String)> {
    let file = path.file_name()?.to_str()?;
    let dir = path.parent()?.file_name()?.to_str()?;
    Some((dir.to_owned(), file.to_owned()))
}

/// The session the backend lists as `dir`/`file` (blocking: a listing).
pub(crate) fn locate(sessions: &dyn Sessions, dir: &str, file: &str) -> Result<PathBuf, Refusal> {
    check_component(dir)?;
    check_component(file)?;
    let list = sessions.listing(&ListRequest::new(Scope::Dir(dir.to_owned())), &NoProgress)?;
    list.into_iter()
        .map(|i| i.path)
        .find(|p| key_of(p).is_some_and(|(d, f)| d == dir && f == file))
        .ok_or_else(|| Refusal::new(StatusCode::NOT_FOUND, format!("no session {dir}/{file}")))
}

/// Writes into a channel, a piece at a time; fails once the reader is gone.
struct Pieces {
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    buf: Vec<u8>,
}

impl Write for Pieces {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= PIECE {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let piece = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(PIECE)));
        self.tx
            .blocking_send(Ok(piece))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the browser went away"))
    }
}

/// The page of `dir`/`file`.
pub(crate) async fn page(
    State(st): State<Shared>,
    UrlPath((dir, file)): UrlPath<(String, String)>,
) -> Result<Response, Refusal> {
    let s2 = st.clone();
    let (d2, f2) = (dir.clone(), file.clone());
    let session = tokio::task::spawn_blocking(move || {
        let path = locate(s2.sessions.as_ref(), &d2, &f2)?;
        Ok::<_, Refusal>(Session::open(&path, OpenMode::ReadOnly, s2.options.session_options.clone())?)
    })
    .await??;
    let opts = HtmlOptions { served: Some(served(&st, &dir, &file, &session)), ..st.options.html.clone() };
    let (tx, rx) = mpsc::channel(PIECES_WAITING);
    tokio::task::spawn_blocking(move || {
        let mut out = Pieces { tx: tx.clone(), buf: Vec::with_capacity(PIECE) };
        let written = arbor_interop::export_html(&session, &opts, &mut out).map_err(std::io::Error::other);
        // A failure halfway ends the page early; the browser shows what came.
        let _ = written.and_then(|()| out.flush());
    });
    let body = Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        let piece = rx.recv().await?;
        Some((piece, rx))
    }));
    Ok(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response())
}

/// What the server adds to a session's page: its script and the script's data.
fn served(st: &Shared, dir: &str, file: &str, s: &Session) -> Served {
    Served {
        script: SERVE_JS.to_owned(),
        data: json!({
            "dir": dir,
            "file": file,
            // Entries in file order when the page was made: the event
            // stream starts after them.
            "have": s.positions().len(),
            "writes": st.options.writes == Writes::Allowed,
        }),
        css: SERVE_CSS.to_owned(),
    }
}
