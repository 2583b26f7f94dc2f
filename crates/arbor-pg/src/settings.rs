//! The driver's configuration from libpq's parameters: where to connect
//! and as whom, TLS's mode, timeouts and TCP settings, each parameter
//! checked (an unknown one is an error, as in libpq).

use std::net::IpAddr;
use std::time::Duration;

use postgres::config::{ChannelBinding, Host, LoadBalanceHosts, SslNegotiation, TargetSessionAttrs};
use postgres::Config;

use crate::conninfo::Params;
use crate::tls::SslMode;

/// How long a connection attempt may take unless the address says otherwise.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// TCP keepalives and the unacknowledged-data limit unless the address says
/// otherwise: a server or network that vanishes under an open connection is
/// noticed within about a minute, not the system's two hours.
const KEEPALIVES_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVES_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVES_RETRIES: u32 = 3;
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(60);

/// What [`build`] makes: the driver's config, TLS's mode, and how long one
/// host's attempt may take (`None`: as long as it takes).
pub(crate) struct Built {
    pub config: Config,
    pub mode: SslMode,
    pub timeout: Option<Duration>,
}

/// The driver's configuration from libpq's parameters `p`.
pub(crate) fn build(p: &Params) -> Result<Built, String> {
    let mut b = Built { config: Config::new(), mode: SslMode::Prefer, timeout: Some(CONNECT_TIMEOUT) };
    for (k, v) in p {
        if !address(&mut b, k, v)? {
            option(&mut b.config, k, v)?;
        }
    }
    let c = &mut b.config;
    // libpq ignores sslmode on unix sockets, where the server never offers TLS.
    let all_sockets = c.get_hostaddrs().is_empty() && c.get_hosts().iter().all(|h| !matches!(h, Host::Tcp(_)));
    if all_sockets {
        b.mode = SslMode::Disable;
    } else {
        if !p.contains_key("keepalives_idle") {
            c.keepalives_idle(KEEPALIVES_IDLE);
        }
        if !p.contains_key("keepalives_interval") {
            c.keepalives_interval(KEEPALIVES_INTERVAL);
        }
        if !p.contains_key("keepalives_count") {
            c.keepalives_retries(KEEPALIVES_RETRIES);
        }
        if !p.contains_key("tcp_user_timeout") {
            c.tcp_user_timeout(TCP_USER_TIMEOUT);
        }
    }
    c.ssl_mode(b.mode.driver());
    if let Some(t) = b.timeout {
        c.connect_timeout(t);
    }
    Ok(b)
}

/// Applies `k = v` when it says where and how to connect; false for another parameter.
fn address(b: &mut Built, k: &str, v: &str) -> Result<bool, String> {
    let c = &mut b.config;
    match k {
        "host" => v.split(',').filter(|h| !h.is_empty()).for_each(|h| {
            c.host(h);
        }),
        "hostaddr" => {
            for a in v.split(',').filter(|h| !h.is_empty()) {
                c.hostaddr(a.parse::<IpAddr>().map_err(|_| format!("hostaddr {a:?} is not an IP address"))?);
            }
        }
        "port" => {
            for port in v.split(',') {
                c.port(if port.is_empty() {
                    5432
                } else {
                    port.parse().map_err(|_| format!("port {port:?} is not a port number"))?
                });
            }
        }
        "user" => {
            c.user(v);
        }
        "password" => {
            c.password(v);
        }
        "dbname" => {
            c.dbname(v);
        }
        "options" => {
            c.options(v);
        }
        "sslmode" => b.mode = SslMode::parse(v)?,
        "connect_timeout" => {
            // libpq: zero or less waits for ever, and less than 2 s is 2 s.
            let n: i64 = v.trim().parse().map_err(|_| format!("connect_timeout {v:?} is not a number of seconds"))?;
            b.timeout = (n > 0).then(|| Duration::from_secs(n.max(2) as u64));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn secs(k: &str, v: &str) -> Result<Duration, String> {
    v.trim().parse::<u64>().map(Duration::from_secs).map_err(|_| format!("{k} {v:?} is not a number of seconds"))
}

fn one_of(k: &str, v: &str, allowed: &[&str]) -> Result<(), String> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        Err(format!("{k} {v:?} is not one of {}", allowed.join(", ")))
    }
}

/// Applies any other parameter `k = v`; an unknown one is an error.
fn option(c: &mut Config, k: &str, v: &str) -> Result<(), String> {
    match k {
        "keepalives" => {
            c.keepalives(v.trim() != "0");
        }
        "keepalives_idle" => {
            c.keepalives_idle(secs(k, v)?);
        }
        "keepalives_interval" => {
            c.keepalives_interval(secs(k, v)?);
        }
        "keepalives_count" => {
            let n = v.trim().parse().map_err(|_| format!("keepalives_count {v:?} is not a number"))?;
            c.keepalives_retries(n);
        }
        "tcp_user_timeout" => {
            let ms = v.trim().parse().map_err(|_| format!("tcp_user_timeout {v:?} is not a number of milliseconds"))?;
            c.tcp_user_timeout(Duration::from_millis(ms));
        }
        "target_session_attrs" => {
            one_of(k, v, &["any", "read-write", "read-only"])?;
            c.target_session_attrs(match v {
                "read-write" => TargetSessionAttrs::ReadWrite,
                "read-only" => TargetSessionAttrs::ReadOnly,
                _ => TargetSessionAttrs::Any,
            });
        }
        "channel_binding" => {
            one_of(k, v, &["disable", "prefer", "require"])?;
            c.channel_binding(match v {
                "disable" => ChannelBinding::Disable,
                "require" => ChannelBinding::Require,
                _ => ChannelBinding::Prefer,
            });
        }
        "load_balance_hosts" => {
            one_of(k, v, &["disable", "random"])?;
            c.load_balance_hosts(if v == "random" { LoadBalanceHosts::Random } else { LoadBalanceHosts::Disable });
        }
        "sslnegotiation" => {
            one_of(k, v, &["postgres", "direct"])?;
            c.ssl_negotiation(if v == "direct" { SslNegotiation::Direct } else { SslNegotiation::Postgres });
        }
        "gssencmode" => {
            one_of(k, v, &["disable", "prefer"]).map_err(|e| format!("{e} (Arbor does not speak GSSAPI)"))?
        }
        "client_encoding" => one_of(k, v, &["UTF8", "utf8", "auto"])?,
        "sslpassword" => {
            return Err(
                "sslpassword: encrypted client keys are not supported; decrypt the key (and chmod 0600 it)".into()
            )
        }
        // Read elsewhere (TLS, the service, the password file), or replaced by Arbor's own name.
        "sslrootcert"
        | "sslcert"
        | "sslkey"
        | "service"
        | "passfile"
        | "application_name"
        | "fallback_application_name"
        | "sslcompression"
        | "sslcrl"
        | "sslcrldir"
        | "sslsni" => {}
        other => return Err(format!("unknown parameter {other:?}")),
    }
    Ok(())
}
