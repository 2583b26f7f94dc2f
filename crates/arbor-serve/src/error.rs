//! The server's errors: [`ServeError`] for its caller, [`Refusal`] for a
//! request (a status and one line of text the page shows).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use arbor_tree::sessions::SessionsError;
use arbor_tree::TreeError;

/// What can stop the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why not.
        source: std::io::Error,
    },
    /// No random token could be made.
    #[error("cannot make a random token: {0}")]
    Random(String),
    /// Serving failed.
    #[error("serving failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A request answered with an error: its status and one line saying why.
#[derive(Debug)]
pub(crate) struct Refusal(pub StatusCode, pub String);

impl Refusal {
    pub(crate) fn new(status: StatusCode, text: impl Into<String>) -> Refusal {
        Refusal(status, text.into())
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.1 }).to_string();
        (self.0, [(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
    }
}

impl From<SessionsError> for Refusal {
    fn from(e: SessionsError) -> Refusal {
        let status = match &e {
            SessionsError::NotFound { .. } => StatusCode::NOT_FOUND,
            SessionsError::Ambiguous { .. } | SessionsError::BadName { .. } | SessionsError::Query(_) => {
                StatusCode::BAD_REQUEST
            }
            SessionsError::Tree(t) => return Refusal::from_tree(t),
            SessionsError::Backend(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Refusal(status, e.to_string())
    }
}

impl Refusal {
    /// A tree error as a refusal: a held lock says who holds it.
    pub(crate) fn from_tree(e: &TreeError) -> Refusal {
        match e {
            TreeError::Locked { holder, .. } => Refusal(
                StatusCode::CONFLICT,
                match holder {
                    Some(h) => {
                        format!("the session is open for writing by another process ({h}); try again when it is closed")
                    }
                    None => {
                        "the session is open for writing by another process; try again when it is closed".to_owned()
                    }
                },
            ),
            other => Refusal(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
        }
    }
}

impl From<TreeError> for Refusal {
    fn from(e: TreeError) -> Refusal {
        Refusal::from_tree(&e)
    }
}

impl From<tokio::task::JoinError> for Refusal {
    fn from(e: tokio::task::JoinError) -> Refusal {
        Refusal(StatusCode::INTERNAL_SERVER_ERROR, format!("the request's worker failed: {e}"))
    }
}
