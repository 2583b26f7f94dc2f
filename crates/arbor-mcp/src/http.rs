//! The streamable HTTP transport: rmcp's service behind a token check.
//!
//! Bound to a loopback address it answers without a token; bound to any
//! other address every request must carry `Authorization: Bearer <token>`
//! (the caller makes the token and shows it once). Requests whose `Host` is
//! not the bound address are refused (DNS rebinding), except on an
//! unspecified address (`0.0.0.0`), where any name may reach the machine
//! and the token is what guards it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

use crate::server::ArborMcp;

/// The path the MCP endpoint answers on.
pub const ENDPOINT: &str = "/mcp";

/// A token to require off loopback: 128 random bits, as 32 hex digits.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// True when `addr` is a loopback address (no token needed).
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Serves `server` on `listener` until `cancel`: every request needs
/// `token` (as a bearer token) when one is given.
pub async fn serve(
    server: ArborMcp,
    listener: TcpListener,
    token: Option<String>,
    cancel: CancellationToken,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token());
    config = if addr.ip().is_unspecified() {
        config.disable_allowed_hosts()
    } else if is_loopback(&addr) {
        config.with_allowed_hosts([
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            addr.ip().to_string(),
        ])
    } else {
        config.with_allowed_hosts([addr.ip().to_string()])
    };
    let factory = move || Ok(server.clone());
    let service = StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
    let token: Option<Arc<str>> = token.map(Into::into);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // A connection that failed before it was accepted is no reason to stop.
                Err(_) => continue,
            },
            () = cancel.cancelled() => return Ok(()),
        };
        let service = service.clone();
        let token = token.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
                let mut service = service.clone();
                let token = token.clone();
                async move {
                    if req.uri().path() != ENDPOINT {
                        return Ok::<_, Infallible>(plain(
                            StatusCode::NOT_FOUND,
                            "not found: the MCP endpoint is /mcp",
                        ));
                    }
                    if let Some(t) = &token {
                        if !authorized(&req, t) {
                            return Ok(unauthorized());
                        }
                    }
                    service.call(req).await
                }
            });
            let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), handler);
            tokio::select! {
                _ = conn => {}
                () = cancel.cancelled() => {}
            }
        });
    }
}

/// True when `req` carries `Authorization: Bearer <token>`.
fn authorized(req: &Request<Incoming>, token: &str) -> bool {
    let given = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    same(given.as_bytes(), token.as_bytes())
}

/// Compares two secrets in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *r.status_mut() = status;
    r
}

fn unauthorized() -> Response<Body> {
    let mut r = plain(StatusCode::UNAUTHORIZED, "unauthorized: this server needs its token (Authorization: Bearer …)");
    r.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static("Bearer"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd") && !same(b"abc", b"ab") && !same(b"", b"a"));
        let t = new_token();
        assert_eq!(t.len(), 32);
        assert_ne!(t, new_token());
    }
}
