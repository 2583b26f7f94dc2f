//! A connection string read as libpq reads it: a URL or `key = value` pairs,
//! then what it leaves unset taken from the service file (`service=`,
//! `PGSERVICE`), then from libpq's environment (`PGHOST`, `PGPORT`,
//! `PGUSER`, `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`, …), then libpq's
//! defaults; a password still missing is looked up in the password file
//! (`passfile`, `PGPASSFILE`, `~/.pgpass`). The environment is what the
//! caller hands in ([`PgEnv`]): the library reads none of its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// libpq's environment variables and the home folder, as the program hands them to the library.
#[derive(Debug, Clone, Default)]
pub struct PgEnv {
    vars: BTreeMap<String, String>,
    home: Option<PathBuf>,
}

/// Each environment variable libpq reads and the parameter it sets.
const ENV_PARAMS: &[(&str, &str)] = &[
    ("PGHOST", "host"),
    ("PGHOSTADDR", "hostaddr"),
    ("PGPORT", "port"),
    ("PGDATABASE", "dbname"),
    ("PGUSER", "user"),
    ("PGPASSWORD", "password"),
    ("PGPASSFILE", "passfile"),
    ("PGSERVICE", "service"),
    ("PGOPTIONS", "options"),
    ("PGSSLMODE", "sslmode"),
    ("PGSSLROOTCERT", "sslrootcert"),
    ("PGSSLCERT", "sslcert"),
    ("PGSSLKEY", "sslkey"),
    ("PGSSLNEGOTIATION", "sslnegotiation"),
    ("PGCONNECT_TIMEOUT", "connect_timeout"),
    ("PGTARGETSESSIONATTRS", "target_session_attrs"),
    ("PGCHANNELBINDING", "channel_binding"),
    ("PGLOADBALANCEHOSTS", "load_balance_hosts"),
    ("PGGSSENCMODE", "gssencmode"),
];

/// Variables that say where files are, not parameters.
const ENV_FILES: &[&str] = &["PGSERVICEFILE", "PGSYSCONFDIR", "USER", "LOGNAME"];

impl PgEnv {
    /// No environment at all: the connection string says everything.
    pub fn none() -> PgEnv {
        PgEnv::default()
    }

    /// libpq's variables and `HOME` as this process has them (for a program
    /// that wants `psql`'s habits).
    pub fn from_process() -> PgEnv {
        let mut env = PgEnv { home: std::env::var_os("HOME").map(PathBuf::from), ..PgEnv::default() };
        for name in ENV_PARAMS.iter().map(|(v, _)| *v).chain(ENV_FILES.iter().copied()) {
            if let Ok(v) = std::env::var(name) {
                env.vars.insert(name.to_owned(), v);
            }
        }
        env
    }

    /// This environment with `name` set to `value` (for tests and embedders).
    pub fn with_var(mut self, name: &str, value: &str) -> PgEnv {
        self.vars.insert(name.to_owned(), value.to_owned());
        self
    }

    /// This environment with its home folder (where `.pgpass`, `.pg_service.conf` and `.postgresql/` are).
    pub fn with_home(mut self, home: &Path) -> PgEnv {
        self.home = Some(home.to_owned());
        self
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// The home folder, when known.
    pub(crate) fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }
}

/// The parameters a connection string gives, in libpq's names, decoded.
pub(crate) type Params = BTreeMap<String, String>;

/// The parameters `conn` gives (a URL or `key = value` pairs).
pub(crate) fn parse(conn: &str) -> Result<Params, String> {
    let conn = conn.trim();
    for scheme in ["postgresql://", "postgres://"] {
        if let Some(rest) = conn.strip_prefix(scheme) {
            return parse_url(rest);
        }
    }
    if conn.contains("://") {
        return Err("a URL must start with postgres:// or postgresql://".into());
    }
    parse_key_values(conn)
}

/// `%XX` decoded; an invalid sequence or non-UTF-8 result is an error.
fn decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            out.push(hex.ok_or("an invalid percent-encoded character")?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "percent-encoded bytes that are not UTF-8".into())
}

/// The part of a URL after `postgres://`.
fn parse_url(rest: &str) -> Result<Params, String> {
    let mut p = Params::new();
    let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = before_query.split_once('/').unwrap_or((before_query, ""));
    let hosts = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => {
            let (user, password) = match userinfo.split_once(':') {
                Some((u, pw)) => (u, Some(pw)),
                None => (userinfo, None),
            };
            if !user.is_empty() {
                p.insert("user".into(), decode(user)?);
            }
            if let Some(pw) = password {
                p.insert("password".into(), decode(pw)?);
            }
            hosts
        }
        None => authority,
    };
    if !hosts.is_empty() {
        let (mut names, mut ports) = (vec![], vec![]);
        for h in hosts.split(',') {
            let (name, port) = if let Some(v6) = h.strip_prefix('[') {
                let (addr, after) = v6.split_once(']').ok_or("an IPv6 host without its closing ]")?;
                (addr, after.strip_prefix(':'))
            } else {
                match h.rsplit_once(':') {
                    Some((n, port)) => (n, Some(port)),
                    None => (h, None),
                }
            };
            names.push(decode(name)?);
            ports.push(port.map(decode).transpose()?.unwrap_or_default());
        }
        if names.iter().any(|n| !n.is_empty()) {
            p.insert("host".into(), names.join(","));
        }
        if ports.iter().any(|n| !n.is_empty()) {
            p.insert("port".into(), ports.join(","));
        }
    }
    if !path.is_empty() {
        p.insert("dbname".into(), decode(path)?);
    }
    for pair in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = pair.split_once('=').ok_or_else(|| "a URL parameter without `=`".to_owned())?;
        let (k, v) = (decode(k)?, decode(v)?);
        // JDBC's spelling, which libpq accepts too.
        if k == "ssl" && v == "true" {
            p.insert("sslmode".into(), "require".into());
        } else {
            p.insert(k, v);
        }
    }
    Ok(p)
}

/// `key = value` pairs: values quoted with `'…'` or bare, `\` escaping the next character in both.
fn parse_key_values(s: &str) -> Result<Params, String> {
    let mut p = Params::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(p);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(format!("`{key}` is not followed by `=`"));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => return Err(format!("the value of `{key}` has no closing quote")),
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        p.insert(key, value);
    }
}

/// Fills what `p` leaves unset from the service file, the environment and
/// libpq's defaults (see the module docs). The password file is read later,
/// once host, port, database and user are known ([`password_from_file`]).
pub(crate) fn complete(mut p: Params, env: &PgEnv) -> Result<Params, String> {
    let service = p.get("service").cloned().or_else(|| env.var("PGSERVICE").map(str::to_owned));
    if let Some(name) = service {
        for (k, v) in service_params(&name, env)? {
            p.entry(k).or_insert(v);
        }
    }
    for (var, key) in ENV_PARAMS {
        if let Some(v) = env.var(var) {
            p.entry((*key).to_owned()).or_insert_with(|| v.to_owned());
        }
    }
    if !p.contains_key("host") && !p.contains_key("hostaddr") {
        let socket_dir = ["/var/run/postgresql", "/tmp"].into_iter().find(|d| Path::new(d).is_dir()).unwrap_or("/tmp");
        p.insert("host".into(), socket_dir.into());
    }
    if !p.contains_key("user") {
        if let Some(u) = env.var("USER").or_else(|| env.var("LOGNAME")) {
            p.insert("user".into(), u.to_owned());
        }
    }
    if !p.contains_key("dbname") {
        if let Some(u) = p.get("user").cloned() {
            p.insert("dbname".into(), u);
        }
    }
    Ok(p)
}

/// The parameters of service `name`: from the user's service file
/// (`PGSERVICEFILE`, else `~/.pg_service.conf`), else the system's
/// (`PGSYSCONFDIR/pg_service.conf`, Debian's `/etc/postgresql-common` by default).
fn service_params(name: &str, env: &PgEnv) -> Result<Params, String> {
    let user_file =
        env.var("PGSERVICEFILE").map(PathBuf::from).or_else(|| env.home().map(|h| h.join(".pg_service.conf")));
    let sys_dir = env.var("PGSYSCONFDIR").unwrap_or("/etc/postgresql-common");
    let files = user_file.into_iter().chain([Path::new(sys_dir).join("pg_service.conf")]);
    for file in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", file.display())),
        };
        if let Some(p) = service_section(&text, name).map_err(|e| format!("{}: {e}", file.display()))? {
            return Ok(p);
        }
    }
    Err(format!("no service {name:?} in a service file (PGSERVICEFILE, ~/.pg_service.conf, {sys_dir}/pg_service.conf)"))
}

/// The `key=value` lines of section `[name]` of a service file.
fn service_section(text: &str, name: &str) -> Result<Option<Params>, String> {
    let mut found: Option<Params> = None;
    let mut in_it = false;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[') {
            if found.is_some() && in_it {
                break;
            }
            in_it = section.strip_suffix(']').is_some_and(|s| s.trim() == name);
            if in_it {
                found = Some(Params::new());
            }
            continue;
        }
        if !in_it {
            continue;
        }
        let (k, v) = line.split_once('=').ok_or_else(|| format!("line {}: not key=value", n + 1))?;
        if let Some(p) = found.as_mut() {
            p.insert(k.trim().to_owned(), v.trim().to_owned());
        }
    }
    Ok(found)
}

/// The password the password file holds for `host`, `port`, `dbname` and
/// `user` (`*` matches anything; `\:` and `\\` escape), when the file
/// exists and only its owner may read it (libpq ignores it otherwise).
pub(crate) fn password_from_file(file: &Path, host: &str, port: &str, dbname: &str, user: &str) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
            return None;
        }
    }
    let text = std::fs::read_to_string(file).ok()?;
    // A socket folder is also "localhost" to libpq.
    let hosts: Vec<&str> = if host.starts_with('/') { vec![host, "localhost"] } else { vec![host] };
    text.lines().filter(|l| !l.trim_start().starts_with('#')).find_map(|line| {
        let fields = pgpass_fields(line);
        let [h, p, d, u, pw] = <[String; 5]>::try_from(fields).ok()?;
        let matches = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        (hosts.iter().any(|x| matches(&h, x)) && matches(&p, port) && matches(&d, dbname) && matches(&u, user))
            .then_some(pw)
    })
}

/// The `:`-separated fields of a password file line, unescaped.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().into_iter().for_each(|f| f.extend(chars.next())),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().into_iter().for_each(|f| f.push(c)),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn urls_are_read_as_libpq_reads_them() {
        assert_eq!(
            parse("postgres://u:p%40ss@db.example:6543/arbor?sslmode=verify-full&connect_timeout=3").unwrap(),
            params(&[
                ("user", "u"),
                ("password", "p@ss"),
                ("host", "db.example"),
                ("port", "6543"),
                ("dbname", "arbor"),
                ("sslmode", "verify-full"),
                ("connect_timeout", "3")
            ])
        );
        assert_eq!(parse("postgres:///arbor").unwrap(), params(&[("dbname", "arbor")]));
        assert_eq!(parse("postgresql://%2Ftmp%2Fpg/db").unwrap(), params(&[("host", "/tmp/pg"), ("dbname", "db")]));
        assert_eq!(
            parse("postgres://[::1]:5433,h2/db?ssl=true").unwrap(),
            params(&[("host", "::1,h2"), ("port", "5433,"), ("dbname", "db"), ("sslmode", "require")])
        );
        assert!(parse("mysql://x").is_err());
        assert!(parse("postgres://h/db?x=%zz").is_err());
    }

    #[test]
    fn key_values_are_read_as_libpq_reads_them() {
        assert_eq!(
            parse("host=/tmp  password = 'two \\'words\\'' user=u\\ x dbname=''").unwrap(),
            params(&[("host", "/tmp"), ("password", "two 'words'"), ("user", "u x"), ("dbname", "")])
        );
        assert!(parse("host=/tmp password").is_err());
        assert!(parse("password='open").is_err());
    }

    #[test]
    fn the_string_wins_then_the_service_then_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let services = dir.path().join("services.conf");
        std::fs::write(&services, "# team\n[arbor]\nhost=db.team\nport = 6000\n\n[other]\nhost=x\n").unwrap();
        let env = PgEnv::none()
            .with_var("PGSERVICEFILE", services.to_str().unwrap())
            .with_var("PGHOST", "env-host")
            .with_var("PGPORT", "7000")
            .with_var("PGUSER", "env-user")
            .with_var("PGSSLMODE", "require");
        let p = complete(parse("service=arbor dbname=arbor").unwrap(), &env).unwrap();
        assert_eq!(p["host"], "db.team");
        assert_eq!(p["port"], "6000");
        assert_eq!(p["user"], "env-user");
        assert_eq!(p["sslmode"], "require");
        assert_eq!(p["dbname"], "arbor");
        let p = complete(parse("postgres:///arbor").unwrap(), &env).unwrap();
        assert_eq!((p["host"].as_str(), p["port"].as_str()), ("env-host", "7000"));
        let e = complete(parse("service=missing").unwrap(), &env).unwrap_err();
        assert!(e.contains("no service \"missing\""), "{e}");
        let p = complete(Params::new(), &PgEnv::none().with_var("USER", "me")).unwrap();
        assert_eq!((p["user"].as_str(), p["dbname"].as_str()), ("me", "me"));
    }

    #[test]
    fn the_password_file_matches_field_by_field_and_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pgpass");
        std::fs::write(&f, "# comment\nother:*:*:*:no\ndb.team:5432:arbor:me:pa\\:ss\\\\w\n*:*:*:me:fallback\n")
            .unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(password_from_file(&f, "db.team", "5432", "arbor", "me").as_deref(), Some("pa:ss\\w"));
        assert_eq!(password_from_file(&f, "elsewhere", "1", "x", "me").as_deref(), Some("fallback"));
        assert_eq!(password_from_file(&f, "elsewhere", "1", "x", "you"), None);
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(password_from_file(&f, "db.team", "5432", "arbor", "me"), None, "readable by others: ignored");
    }
}
