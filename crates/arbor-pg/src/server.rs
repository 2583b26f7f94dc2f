//! [`Server`]: where the sessions are (a connection string), and connections
//! to it: each names its process and machine (`application_name`
//! `arbor:<pid>@<host>`, which is how a refused writer learns who holds a
//! session), and the first one of a process brings the schema up to date.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use postgres::{Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::blocking::blocking;
use crate::conninfo::{self, PgEnv};
use crate::error::{reason, PgError, SqlError};
use crate::mask::redact;
use crate::schema;
use crate::settings::{build, Built};
use crate::tls;

/// The prefix of the `application_name` of Arbor's connections.
pub(crate) const APP_PREFIX: &str = "arbor:";

/// The TLS connector (the driver's has no `Debug`).
#[derive(Clone)]
struct Tls(MakeRustlsConnect);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

/// A PostgreSQL server holding sessions. Cheap to share; connections are
/// made on demand.
#[derive(Debug)]
pub struct Server {
    config: Config,
    tls: Option<Tls>,
    /// How long a whole connection attempt (every host, TLS and login
    /// included) may take; `None`: as long as it takes (`connect_timeout=0`).
    deadline: Option<Duration>,
    /// How long a bounded read waits for the server's answer (settings::answer_limit).
    answer: Option<Duration>,
    shown: String,
    /// The password, to scrub from whatever the driver or the server says.
    secret: Option<String>,
    migrated: AtomicBool,
}

impl Server {
    /// Parses a connection string: a URL (`postgres://user@host:5432/db`,
    /// `postgresql://…`, a unix socket folder as a percent-encoded host) or
    /// `key=value` pairs, with libpq's parameters (`sslmode`, `sslrootcert`,
    /// `connect_timeout`, `service`, `passfile`, …). Reads no environment
    /// (see [`Server::with_env`]); connects to nothing yet.
    pub fn new(url: &str) -> Result<Server, PgError> {
        Server::with_env(url, &PgEnv::none())
    }

    /// [`Server::new`], with what the string leaves unset taken as libpq
    /// takes it: the service file, `env`'s `PG*` variables, libpq's
    /// defaults, and the password file (docs/postgres.md, "Connecting").
    pub fn with_env(url: &str, env: &PgEnv) -> Result<Server, PgError> {
        let shown = redact(url);
        let bad = |reason: String| PgError::Url { url: shown.clone(), reason };
        let given = conninfo::parse(url).map_err(bad)?;
        let p = conninfo::complete(given, env).map_err(bad)?;
        let Some(user) = p.get("user") else {
            return Err(bad("it names no user (give one, or set PGUSER)".into()));
        };
        let Built { mut config, mode, timeout, answer } = build(&p).map_err(bad)?;
        if config.get_password().is_none() {
            let file =
                p.get("passfile").map(std::path::PathBuf::from).or_else(|| env.home().map(|h| h.join(".pgpass")));
            let host = p.get("host").or(p.get("hostaddr")).map_or("", |h| h.split(',').next().unwrap_or(""));
            let port =
                p.get("port").map_or("5432", |v| v.split(',').next().filter(|v| !v.is_empty()).unwrap_or("5432"));
            let dbname = p.get("dbname").map_or("", String::as_str);
            if let Some(pw) = file.and_then(|f| conninfo::password_from_file(&f, host, port, dbname, user)) {
                config.password(pw);
            }
        }
        let tls = tls::connector(mode, &p, env).map_err(bad)?.map(Tls);
        config.application_name(&application_name());
        let hosts = config.get_hosts().len().max(config.get_hostaddrs().len()).max(1) as u32;
        let secret = config.get_password().map(|p| String::from_utf8_lossy(p).into_owned());
        Ok(Server {
            config,
            tls,
            deadline: timeout.map(|t| t * hosts),
            answer,
            shown,
            secret,
            migrated: AtomicBool::new(false),
        })
    }

    /// How long a bounded read waits for an answer (`None`: as long as it takes).
    pub(crate) fn answer_limit(&self) -> Option<Duration> {
        self.answer
    }

    /// The server's address as it is shown in messages (no password).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// A new connection, the schema brought up to date on the first one.
    pub(crate) fn connect(&self) -> Result<Client, PgError> {
        blocking(|| {
            let mut client = self.open()?;
            if !self.migrated.load(Ordering::Acquire) {
                schema::migrate(&mut client).map_err(|e| self.classify(e, false))?;
                self.migrated.store(true, Ordering::Release);
            }
            // No statement of Arbor's gains from JIT compiling; a batch of
            // ranges was planned past jit_above_cost and spent 20-25 ms compiling.
            client.batch_execute("SET jit = off").map_err(|e| self.classify(SqlError::Pg(e), false))?;
            Ok(client)
        })
    }

    /// A new connection within the deadline: the attempt runs on a thread of
    /// its own, left behind when a server that accepted the connection never
    /// answers (the driver's own timeout covers only the TCP connect).
    fn open(&self) -> Result<Client, PgError> {
        let (config, tls) = (self.config.clone(), self.tls.clone());
        let attempt = move || match tls {
            Some(Tls(t)) => config.connect(t),
            None => config.connect(NoTls),
        };
        let failed = |e: postgres::Error| PgError::Connect { server: self.shown.clone(), reason: self.reason(&e) };
        let Some(limit) = self.deadline else { return attempt().map_err(failed) };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("arbor-pg-connect".into())
            .spawn(move || {
                let _ = tx.send(attempt());
            })
            .map_err(|e| PgError::Connect { server: self.shown.clone(), reason: e.to_string() })?;
        match rx.recv_timeout(limit) {
            Ok(r) => r.map_err(failed),
            Err(_) => Err(PgError::Connect {
                server: self.shown.clone(),
                reason: format!(
                    "no answer within {} s (connect_timeout; the server accepted the connection but never answered)",
                    limit.as_secs_f64()
                ),
            }),
        }
    }

    /// The driver's error in one line ([`reason`]), the password scrubbed
    /// from it should the driver or the server ever repeat it.
    pub(crate) fn reason(&self, e: &postgres::Error) -> String {
        scrub(reason(e), self.secret.as_deref())
    }

    /// A driver error as a [`PgError`]: a lost connection during a write says
    /// that the write is whole or absent.
    pub(crate) fn classify(&self, e: SqlError, writing: bool) -> PgError {
        match e {
            SqlError::Pg(e) if writing && lost(&e) => {
                PgError::LostDuringWrite { server: self.shown.clone(), reason: self.reason(&e) }
            }
            SqlError::Pg(e) => PgError::Server { server: self.shown.clone(), reason: self.reason(&e) },
            SqlError::NewerSchema { found, known } => PgError::NewerSchema { server: self.shown.clone(), found, known },
            SqlError::Invariant(reason) => PgError::Server { server: self.shown.clone(), reason },
            SqlError::Other(e) => e,
        }
    }
}

/// `text` with every occurrence of `secret` hidden (a secret of fewer than
/// three characters would hide ordinary words, and says little about the password).
pub(crate) fn scrub(text: String, secret: Option<&str>) -> String {
    match secret {
        Some(s) if s.chars().count() >= 3 && text.contains(s) => text.replace(s, "***"),
        _ => text,
    }
}

/// True when a driver error means the connection is gone.
fn lost(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        // Admin shutdown, crash shutdown, cannot connect now (the server stopping under us).
        Some(c) => c.code().starts_with("57P") || c.code().starts_with("08"),
        // No server message: the socket failed.
        None => e.as_db_error().is_none(),
    }
}

/// `arbor:<pid>@<host>`, cut to the 63 bytes the server keeps.
pub(crate) fn application_name() -> String {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    let mut name = format!("{APP_PREFIX}{}@{host}", std::process::id());
    while name.len() > 63 {
        name.pop();
    }
    name
}

/// The pid and host an `application_name` of ours names.
pub(crate) fn parse_application_name(name: &str) -> Option<(u32, String)> {
    let rest = name.strip_prefix(APP_PREFIX)?;
    let (pid, host) = rest.split_once('@')?;
    Some((pid.parse().ok()?, host.to_owned()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn passwords_are_never_shown() {
        let e = Server::new("postgres://u:secret@/db?connect_timeout=nope").unwrap_err().to_string();
        assert!(!e.contains("secret") && e.contains("postgres://u:***@"), "{e}");
    }

    #[test]
    fn application_names_round_trip() {
        let name = application_name();
        assert!(name.len() <= 63);
        let (pid, host) = parse_application_name(&name).unwrap();
        assert_eq!(pid, std::process::id());
        assert!(!host.is_empty());
        assert_eq!(parse_application_name("psql"), None);
    }

    #[test]
    fn addresses_are_checked_before_connecting() {
        assert!(Server::new("postgres://u@%2Ftmp%2Fx/db").is_ok());
        assert!(Server::new("host=/tmp user=u").is_ok());
        let e = Server::new("mysql://x").unwrap_err().to_string();
        assert!(e.starts_with("not a PostgreSQL address"), "{e}");
    }
}
