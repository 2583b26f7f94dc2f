//! The guard in front of every route: the request's `Host` must be this
//! server's address (DNS rebinding), off loopback the token must come with
//! it (the first URL's `?token=` becomes a cookie), and anything but a read
//! must be a same-origin `POST` of JSON (CSRF). Every answer says not to be
//! cached, sniffed, framed or followed by a referrer.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::error::{Refusal, ServeError};

/// Whether the pages may change sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Writes {
    /// Every write is refused (403): the default.
    #[default]
    Refused,
    /// Labels and session names can be edited from the page, each through
    /// the session's write lock.
    Allowed,
}

/// The token's random bytes.
const TOKEN_BYTES: usize = 32;

/// Who may ask.
#[derive(Debug)]
pub(crate) struct Guard {
    /// The `Host` values accepted (lower case); `None`: any (an address of
    /// every interface, where the token is the guard).
    hosts: Option<Vec<String>>,
    /// The token, off loopback.
    token: Option<String>,
    /// The cookie that carries it (one per port: cookies ignore ports).
    cookie: String,
    /// `http://HOST:PORT`, as the URL to open names the server.
    base: String,
    /// Whether requests that write may pass.
    writes: Writes,
}

fn with_port(host: &str, port: u16) -> String {
    format!("{host}:{port}")
}

impl Guard {
    /// The guard of a server listening on `addr`.
    pub(crate) fn new(addr: SocketAddr, writes: Writes) -> Result<Guard, ServeError> {
        let ip = addr.ip();
        let shown = match ip {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            std::net::IpAddr::V4(v4) => v4.to_string(),
        };
        let port = addr.port();
        let (hosts, token, base) = if ip.is_loopback() {
            let hosts = vec![with_port(&shown, port), with_port("localhost", port)];
            (Some(hosts), None, format!("http://{}", with_port(&shown, port)))
        } else if ip.is_unspecified() {
            // Every interface: the URL names a loopback address of the same
            // family, which reaches it from this machine.
            let local = if ip.is_ipv4() { "127.0.0.1" } else { "[::1]" };
            (None, Some(new_token()?), format!("http://{}", with_port(local, port)))
        } else {
            (Some(vec![with_port(&shown, port)]), Some(new_token()?), format!("http://{}", with_port(&shown, port)))
        };
        Ok(Guard { hosts, token, cookie: format!("arbor-token-{port}"), base, writes })
    }

    pub(crate) fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    pub(crate) fn base_url(&self) -> &str {
        &self.base
    }

    fn host_ok(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else { return false };
        match &self.hosts {
            None => true,
            Some(hosts) => hosts.iter().any(|h| h.eq_ignore_ascii_case(host)),
        }
    }

    /// True when `given` is the token.
    fn is_token(&self, given: &str) -> bool {
        self.token.as_deref().is_some_and(|t| bool::from(t.as_bytes().ct_eq(given.as_bytes())))
    }

    /// The token from the `Authorization: Bearer` header or the cookie.
    fn carried(&self, headers: &HeaderMap) -> bool {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| self.is_token(t.trim()));
        bearer
            || headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).any(|v| {
                v.split(';').filter_map(|c| c.trim().split_once('=')).any(|(k, t)| k == self.cookie && self.is_token(t))
            })
    }
}

/// A new token: [`TOKEN_BYTES`] random bytes in hex.
fn new_token() -> Result<String, ServeError> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| ServeError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `query` without its `token=` pair, and that pair's value.
fn split_token(query: &str) -> (Option<&str>, String) {
    let mut token = None;
    let rest: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.strip_prefix("token=") {
            Some(t) => {
                token = Some(t);
                false
            }
            None => !pair.is_empty(),
        })
        .collect();
    (token, rest.join("&"))
}

/// The middleware: refuses what the guard does not let through, and marks
/// every answer.
pub(crate) async fn check(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let mut response = match admit(&guard, &req) {
        None => next.run(req).await,
        Some(answer) => answer,
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("frame-ancestors 'none'"));
    }
    response
}

/// `None`: let the request through; `Some(r)`: answer `r` instead (a
/// refusal, or the first URL's redirect).
fn admit(guard: &Guard, req: &Request) -> Option<Response> {
    let headers = req.headers();
    if !guard.host_ok(headers) {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("(none)");
        let text = format!("Host {host:?} is not this server's address: open {}/", guard.base_url());
        return Some(Refusal::new(StatusCode::FORBIDDEN, text).into_response());
    }
    if guard.token.is_some() {
        let (given, rest) = split_token(req.uri().query().unwrap_or(""));
        if let Some(given) = given {
            if req.method() != Method::GET || !guard.is_token(given) {
                return Some(Refusal::new(StatusCode::UNAUTHORIZED, "wrong token").into_response());
            }
            // The token leaves the address bar for a cookie only this origin sends.
            let to = if rest.is_empty() { req.uri().path().to_owned() } else { format!("{}?{rest}", req.uri().path()) };
            let cookie = format!("{}={given}; HttpOnly; SameSite=Strict; Path=/", guard.cookie);
            let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response();
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            return Some(r);
        }
        if !guard.carried(headers) {
            let text = "this server needs its token: open the URL `arbor serve` printed when it started";
            return Some(Refusal::new(StatusCode::UNAUTHORIZED, text).into_response());
        }
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        if guard.writes != Writes::Allowed {
            let text = "this server is read-only: start it with `arbor serve --allow-writes` to edit labels and names";
            return Some(Refusal::new(StatusCode::FORBIDDEN, text).into_response());
        }
        if let Err(refused) = same_origin_json(headers) {
            return Some(refused.into_response());
        }
    }
    None
}

/// A write must be JSON (a form from another site cannot send that without
/// asking first, which this server never allows) from this origin when the
/// browser says where it comes from.
fn same_origin_json(headers: &HeaderMap) -> Result<(), Refusal> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if !json {
        return Err(Refusal::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "a write is a POST of application/json"));
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !origin.eq_ignore_ascii_case(&format!("http://{host}")) {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                format!("a write from another origin ({origin}) is refused"),
            ));
        }
    }
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        if site != "same-origin" && site != "none" {
            return Err(Refusal::new(StatusCode::FORBIDDEN, format!("a write from another site ({site}) is refused")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_answers_its_own_host_only_and_needs_no_token() {
        let g = Guard::new("127.0.0.1:4280".parse().unwrap(), Writes::Refused).unwrap();
        assert!(g.token().is_none());
        assert!(g.host_ok(&headers(&[("host", "127.0.0.1:4280")])));
        assert!(g.host_ok(&headers(&[("host", "LOCALHOST:4280")])));
        for bad in ["evil.example:4280", "127.0.0.1:80", "127.0.0.1", "localhost"] {
            assert!(!g.host_ok(&headers(&[("host", bad)])), "{bad}");
        }
        assert!(!g.host_ok(&HeaderMap::new()), "no Host at all");
        assert_eq!(g.base_url(), "http://127.0.0.1:4280");
    }

    #[test]
    fn off_loopback_a_token_is_made_and_carried_by_header_or_cookie() {
        let g = Guard::new("0.0.0.0:5000".parse().unwrap(), Writes::Refused).unwrap();
        let t = g.token().unwrap().to_owned();
        assert_eq!(t.len(), 2 * TOKEN_BYTES);
        assert_ne!(
            Guard::new("0.0.0.0:5000".parse().unwrap(), Writes::Refused).unwrap().token().unwrap(),
            t,
            "a new token each time"
        );
        assert!(g.carried(&headers(&[("authorization", &format!("Bearer {t}"))])));
        assert!(g.carried(&headers(&[("cookie", &format!("a=b; arbor-token-5000={t}"))])));
        assert!(!g.carried(&headers(&[("cookie", &format!("arbor-token-5001={t}"))])), "another port's cookie");
        assert!(!g.carried(&headers(&[("authorization", "Bearer nope")])));
        assert!(!g.carried(&HeaderMap::new()));
        assert!(!g.is_token(&t[..t.len() - 1]));
    }

    #[test]
    fn one_other_address_answers_that_address_only_and_every_interface_any_host() {
        let g = Guard::new("192.0.2.7:4280".parse().unwrap(), Writes::Refused).unwrap();
        assert!(g.token().is_some());
        assert!(g.host_ok(&headers(&[("host", "192.0.2.7:4280")])));
        assert!(!g.host_ok(&headers(&[("host", "evil.example:4280")])));
        assert_eq!(g.base_url(), "http://192.0.2.7:4280");
        let v6 = Guard::new("[::1]:4280".parse().unwrap(), Writes::Refused).unwrap();
        assert!(v6.token().is_none() && v6.host_ok(&headers(&[("host", "[::1]:4280")])));
        let any = Guard::new("[::]:4280".parse().unwrap(), Writes::Refused).unwrap();
        assert!(any.token().is_some() && any.host_ok(&headers(&[("host", "box.lan:4280")])));
        assert_eq!(any.base_url(), "http://[::1]:4280");
    }

    #[test]
    fn the_token_leaves_the_query() {
        assert_eq!(split_token("token=abc"), (Some("abc"), String::new()));
        assert_eq!(split_token("q=1&token=abc&x=2"), (Some("abc"), "q=1&x=2".to_owned()));
        assert_eq!(split_token("q=1"), (None, "q=1".to_owned()));
    }

    #[test]
    fn writes_are_json_from_this_origin() {
        let ok =
            headers(&[("host", "127.0.0.1:9"), ("content-type", "application/json"), ("origin", "http://127.0.0.1:9")]);
        assert!(same_origin_json(&ok).is_ok());
        let no_origin = headers(&[("host", "127.0.0.1:9"), ("content-type", "application/json; charset=utf-8")]);
        assert!(same_origin_json(&no_origin).is_ok(), "a client that is not a browser");
        let form = headers(&[("host", "127.0.0.1:9"), ("content-type", "application/x-www-form-urlencoded")]);
        assert_eq!(same_origin_json(&form).unwrap_err().0, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let other = headers(&[
            ("host", "127.0.0.1:9"),
            ("content-type", "application/json"),
            ("origin", "http://evil.example"),
        ]);
        assert_eq!(same_origin_json(&other).unwrap_err().0, StatusCode::FORBIDDEN);
        let site =
            headers(&[("host", "127.0.0.1:9"), ("content-type", "application/json"), ("sec-fetch-site", "same-site")]);
        assert_eq!(same_origin_json(&site).unwrap_err().0, StatusCode::FORBIDDEN);
    }
}
