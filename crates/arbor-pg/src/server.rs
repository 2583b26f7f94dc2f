//! [`Server`]: where the sessions are (a connection string), and connections
//! to it: each names its process and machine (`application_name`
//! `arbor:<pid>@<host>`, which is how a refused writer learns who holds a
//! session), and the first one of a process brings the schema up to date.

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use postgres::{Client, Config, NoTls};

use crate::blocking::blocking;
use crate::error::{reason, PgError};
use crate::mask::redact;
use crate::schema;

/// How long a connection attempt may take unless the URL says otherwise.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The prefix of the `application_name` of Arbor's connections.
pub(crate) const APP_PREFIX: &str = "arbor:";

/// A PostgreSQL server holding sessions. Cheap to share; connections are
/// made on demand.
#[derive(Debug)]
pub struct Server {
    config: Config,
    shown: String,
    /// The password, to scrub from whatever the driver or the server says.
    secret: Option<String>,
    migrated: AtomicBool,
}

impl Server {
    /// Parses a connection string: a URL (`postgres://user@host:5432/db`,
    /// `postgresql://…`, a unix socket folder as a percent-encoded host) or
    /// `key=value` pairs. Connects to nothing yet.
    pub fn new(url: &str) -> Result<Server, PgError> {
        let shown = redact(url);
        let mut config = Config::from_str(url).map_err(|e| PgError::Url { url: shown.clone(), reason: reason(&e) })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_dbname().is_none() && config.get_user().is_none() {
            return Err(PgError::Url { url: shown, reason: "it names neither a user nor a database".into() });
        }
        config.application_name(&application_name());
        let secret = config.get_password().map(|p| String::from_utf8_lossy(p).into_owned());
        Ok(Server { config, shown, secret, migrated: AtomicBool::new(false) })
    }

    /// The server's address as it is shown in messages (no password).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// A new connection, the schema brought up to date on the first one.
    pub(crate) fn connect(&self) -> Result<Client, PgError> {
        blocking(|| {
            let mut client = self
                .config
                .connect(NoTls)
                .map_err(|e| PgError::Connect { server: self.shown.clone(), reason: self.reason(&e) })?;
            if !self.migrated.load(Ordering::Acquire) {
                schema::migrate(&mut client).map_err(|e| self.classify(e, false))?;
                self.migrated.store(true, Ordering::Release);
            }
            Ok(client)
        })
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

/// What the queries of this crate fail with, before they are worded for the user.
#[derive(Debug)]
pub(crate) enum SqlError {
    Pg(postgres::Error),
    NewerSchema {
        found: i32,
        known: i32,
    },
    /// Something that cannot happen inside one transaction happened.
    Invariant(String),
    Other(PgError),
}

impl From<postgres::Error> for SqlError {
    fn from(e: postgres::Error) -> Self {
        SqlError::Pg(e)
    }
}

impl From<PgError> for SqlError {
    fn from(e: PgError) -> Self {
        SqlError::Other(e)
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
