//! What can go wrong talking to a model.

use std::time::Duration;

/// A failed model call. Every message names the provider; HTTP failures also
/// give the status and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// No key for a provider that needs one (checked before any request).
    #[error("No API key for {provider}")]
    NoApiKey {
        /// The provider.
        provider: String,
        /// The environment variable the key is read from.
        env_var: String,
    },
    /// pi's `models.json` could not be read, or breaks its rules.
    #[error("{}: bad models.json: {message}", path.display())]
    BadModelsFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The server answered with an error status (after retries, for 429 and 5xx).
    #[error("{provider}: HTTP {status}: {message} ({hint})")]
    Http {
        /// The provider.
        provider: String,
        /// The HTTP status code.
        status: u16,
        /// The server's error message (or the start of its body).
        message: String,
        /// What to do about it.
        hint: String,
        /// How many requests were made.
        attempts: u32,
    },
    /// The server could not be reached or the connection broke before an answer.
    #[error(
        "{provider}: could not reach {url} after {attempts} attempt(s): {source} (check the base URL and the network)"
    )]
    Connect {
        /// The provider.
        provider: String,
        /// The URL requested.
        url: String,
        /// How many requests were made.
        attempts: u32,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// No answer, or no new data, within the configured time.
    #[error("{provider}: {what} timed out after {}s (the server is slow or stuck; try again, or raise the timeout)", after.as_secs_f64())]
    Timeout {
        /// The provider.
        provider: String,
        /// What timed out (`"the request"`, `"the response stream"`).
        what: &'static str,
        /// The limit that passed.
        after: Duration,
    },
    /// The response passed the most bytes a reply may have.
    #[error("{provider}: the reply is larger than {}, the most one reply may have (the server may be stuck): stopped reading it (raise the limit if replies this large are expected)", size_text(*limit))]
    TooLarge {
        /// The provider.
        provider: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The response stream broke off or reported an error.
    #[error("{provider}: the response stream failed: {message}")]
    Stream {
        /// The provider.
        provider: String,
        /// What happened.
        message: String,
    },
    /// The response could not be understood.
    #[error("{provider}: unexpected response: {message} (is the base URL an {api} endpoint?)")]
    Protocol {
        /// The provider.
        provider: String,
        /// The API expected.
        api: &'static str,
        /// What was wrong.
        message: String,
    },
    /// The HTTP client could not be built (TLS set-up).
    #[error("{provider}: could not set up the HTTP client: {source}")]
    Setup {
        /// The provider.
        provider: String,
        /// Why.
        #[source]
        source: reqwest::Error,
    },
    /// The request was cancelled; it was dropped, not left running.
    #[error("{provider}: request cancelled")]
    Cancelled {
        /// The provider.
        provider: String,
    },
}

impl ModelError {
    /// True for a cancelled request.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, ModelError::Cancelled { .. })
    }

    /// The HTTP status, for [`ModelError::Http`].
    pub fn status(&self) -> Option<u16> {
        match self {
            ModelError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// A size in bytes as people read it (`32 MiB`, `1500 bytes`).
fn size_text(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// What to do about an HTTP error status.
pub(crate) fn hint_for_status(status: u16, env_var: &str, attempts: u32) -> String {
    match status {
        401 | 403 => format!("check the API key in {env_var}"),
        404 => "check the model id and the base URL".to_owned(),
        400 | 422 => "the request was refused; check that the model supports it".to_owned(),
        413 => "the request is too large for this model; compact the session or pick a larger model".to_owned(),
        429 => format!("rate limited; gave up after {attempts} attempt(s); wait and try again"),
        s if s >= 500 => format!("the provider failed; gave up after {attempts} attempt(s); try again later"),
        _ => "unexpected status".to_owned(),
    }
}
