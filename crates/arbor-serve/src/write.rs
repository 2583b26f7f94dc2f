//! Writes from the page (`POST /s/DIR/FILE/label`, `…/name`): refused (403)
//! unless the server allows writes; then each opens the session for writing
//! (its single-writer lock: a second writer is refused with the holder's
//! pid), appends one entry and closes it. The page sees the new entry
//! through its event stream, as it sees any other process's.

use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use arbor_tree::{OpenMode, Session};

use crate::error::Refusal;
use crate::page::locate;
use crate::state::Shared;
use crate::Writes;

/// A label or a name longer than this (in characters) is refused.
const TEXT_MAX: usize = 1_000;

/// `{"entry": ID, "label": TEXT or null}`: null or blank clears it.
#[derive(Debug, Deserialize)]
pub(crate) struct LabelWrite {
    entry: String,
    label: Option<String>,
}

/// `{"name": TEXT}`.
#[derive(Debug, Deserialize)]
pub(crate) struct NameWrite {
    name: String,
}

fn allowed(st: &Shared) -> Result<(), Refusal> {
    match st.options.writes {
        Writes::Allowed => Ok(()),
        Writes::Refused => Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "this server is read-only: start it with `arbor serve --allow-writes` to edit labels and names",
        )),
    }
}

fn checked(text: &str, what: &str) -> Result<(), Refusal> {
    if text.chars().count() > TEXT_MAX {
        return Err(Refusal::new(StatusCode::BAD_REQUEST, format!("a {what} is at most {TEXT_MAX} characters")));
    }
    if text.chars().any(char::is_control) {
        return Err(Refusal::new(StatusCode::BAD_REQUEST, format!("a {what} is one line of text")));
    }
    Ok(())
}

/// Opens `dir`/`file` for writing (taking its lock), calls `f`, closes it.
async fn write_to(
    st: Shared,
    dir: String,
    file: String,
    f: impl FnOnce(&mut Session) -> Result<String, Refusal> + Send + 'static,
) -> Result<Json<Value>, Refusal> {
    let written = tokio::task::spawn_blocking(move || {
        let path = locate(st.sessions.as_ref(), &dir, &file)?;
        let mut s = Session::open(&path, OpenMode::Write, st.options.session_options.clone())?;
        f(&mut s)
    })
    .await??;
    Ok(Json(json!({ "entry": written })))
}

/// Sets or clears an entry's label.
pub(crate) async fn label(
    State(st): State<Shared>,
    UrlPath((dir, file)): UrlPath<(String, String)>,
    Json(w): Json<LabelWrite>,
) -> Result<Json<Value>, Refusal> {
    allowed(&st)?;
    let label = w.label.as_deref().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned);
    if let Some(l) = &label {
        checked(l, "label's text")?;
    }
    write_to(st, dir, file, move |s| {
        // An id the index does not know is looked for in the file itself.
        match s.find_entry(&w.entry) {
            Ok(_) => {}
            Err(arbor_tree::TreeError::NotFound(_)) => {
                return Err(Refusal::new(StatusCode::NOT_FOUND, format!("no entry {}", w.entry)))
            }
            Err(e) => return Err(e.into()),
        }
        Ok(s.append_label_change(&w.entry, label.as_deref())?)
    })
    .await
}

/// Names the session.
pub(crate) async fn name(
    State(st): State<Shared>,
    UrlPath((dir, file)): UrlPath<(String, String)>,
    Json(w): Json<NameWrite>,
) -> Result<Json<Value>, Refusal> {
    allowed(&st)?;
    let name = w.name.trim().to_owned();
    if name.is_empty() {
        return Err(Refusal::new(StatusCode::BAD_REQUEST, "a session name cannot be empty"));
    }
    checked(&name, "session name")?;
    write_to(st, dir, file, move |s| Ok(s.append_session_info(&name)?)).await
}
