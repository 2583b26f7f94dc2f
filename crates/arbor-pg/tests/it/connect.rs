//! Connecting as PostgreSQL users expect, against a real server started
//! with `ssl=on` (TCP over TLS only) and a CA made by the test: every
//! `sslmode`, `sslrootcert`, a client certificate, libpq's environment, the
//! password file and the service file; and a server that accepts the
//! connection but never answers is a clear error within `connect_timeout`.

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use arbor_pg::{PgEnv, PgStore};
use arbor_test_support::pg::{Cluster, TlsCluster};

/// The TLS state of every Arbor connection the server sees over TCP.
fn tls_of_arbor_connections(c: &TlsCluster) -> Vec<bool> {
    c.admin()
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid \
             WHERE a.application_name LIKE 'arbor:%' AND a.client_addr IS NOT NULL",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

fn connect(url: &str, env: &PgEnv) -> Result<PgStore, String> {
    PgStore::connect_with(url, env).map_err(|e| e.to_string())
}

#[test]
fn every_sslmode_against_a_server_with_ssl_on() {
    let Some(c) = TlsCluster::start("tls_modes") else { return };
    let home = tempfile::tempdir().unwrap();
    let env = PgEnv::none().with_home(home.path());
    let ca = c.certs.join("ca.crt");
    let other = c.certs.join("other-ca.crt");
    let at = |host: &str, query: &str| format!("postgres://arbor@{host}:{}/postgres?{query}", c.port);

    // The server takes no clear-text TCP connection.
    let e = connect(&at("127.0.0.1", "sslmode=disable"), &env).unwrap_err();
    assert!(e.contains("cannot reach") && e.contains("no encryption"), "{e}");
    // prefer (the default) and require: encrypted, the certificate not checked without a CA.
    for query in ["sslmode=prefer", "", "sslmode=require", "sslmode=allow"] {
        let s = connect(&at("127.0.0.1", query), &env).unwrap_or_else(|e| panic!("{query}: {e}"));
        assert_eq!(tls_of_arbor_connections(&c), [true], "{query}");
        drop(s);
    }
    // verify-ca: the chain to the CA given, not the name (the certificate is for localhost only).
    let q = format!("sslmode=verify-ca&sslrootcert={}", ca.display());
    drop(connect(&at("127.0.0.1", &q), &env).unwrap());
    let q = format!("sslmode=verify-ca&sslrootcert={}", other.display());
    let e = connect(&at("localhost", &q), &env).unwrap_err();
    assert!(e.contains("invalid peer certificate: UnknownIssuer"), "{e}");
    // verify-full: the name too.
    let q = format!("sslmode=verify-full&sslrootcert={}", ca.display());
    drop(connect(&at("localhost", &q), &env).unwrap());
    let e = connect(&at("127.0.0.1", &q), &env).unwrap_err();
    assert!(e.contains("not valid for") || e.contains("NotValidForName"), "{e}");
    // No CA at all: said before connecting.
    let e = connect(&at("localhost", "sslmode=verify-full"), &env).unwrap_err();
    assert!(e.contains("needs the CA's certificate: set sslrootcert"), "{e}");
    // ~/.postgresql/root.crt is the default CA, and makes require check the chain, as libpq.
    std::fs::create_dir_all(home.path().join(".postgresql")).unwrap();
    std::fs::copy(&other, home.path().join(".postgresql/root.crt")).unwrap();
    assert!(connect(&at("127.0.0.1", "sslmode=require"), &env).is_err());
    std::fs::copy(&ca, home.path().join(".postgresql/root.crt")).unwrap();
    drop(connect(&at("localhost", "sslmode=verify-full"), &env).unwrap());
}

#[test]
fn a_client_certificate_logs_in() {
    let Some(c) = TlsCluster::start("tls_client_cert") else { return };
    let mut admin = c.admin();
    admin.batch_execute("CREATE ROLE certuser LOGIN").unwrap();
    admin.batch_execute("CREATE DATABASE certdb OWNER certuser").unwrap();
    let env = PgEnv::none();
    let base =
        format!("postgres://certuser@localhost:{}/certdb?sslrootcert={}", c.port, c.certs.join("ca.crt").display());
    let e = connect(&base, &env).unwrap_err();
    assert!(e.contains("certificate"), "{e}");
    let with_cert = format!(
        "{base}&sslmode=verify-full&sslcert={}&sslkey={}",
        c.certs.join("client.crt").display(),
        c.certs.join("client.key").display()
    );
    connect(&with_cert, &env).unwrap();
    // A key others may read is refused, as libpq refuses it.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(c.certs.join("client.key"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = connect(&with_cert, &env).unwrap_err();
    assert!(e.contains("may be read by others (mode 0644)"), "{e}");
}

/// A role with a password and a database of its own on `c`.
fn teammate(c: &TlsCluster) {
    let mut admin = c.admin();
    admin.batch_execute("SET password_encryption = 'scram-sha-256'").unwrap();
    admin.batch_execute("CREATE ROLE teammate LOGIN PASSWORD 'Team-Secret-42'").unwrap();
    admin.batch_execute("CREATE DATABASE teamdb OWNER teammate").unwrap();
}

fn private_file(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn libpq_environment_password_file_and_service_file() {
    let Some(c) = TlsCluster::start("libpq_env") else { return };
    teammate(&c);
    let dir = tempfile::tempdir().unwrap();
    let ca = c.certs.join("ca.crt");
    let port = c.port.to_string();
    let env = PgEnv::none()
        .with_home(dir.path())
        .with_var("PGHOST", "localhost")
        .with_var("PGPORT", &port)
        .with_var("PGUSER", "teammate")
        .with_var("PGSSLMODE", "verify-full")
        .with_var("PGSSLROOTCERT", ca.to_str().unwrap());
    // The rest from the environment: postgres:///teamdb.
    let e = connect("postgres:///teamdb", &env).unwrap_err();
    assert!(e.contains("password authentication failed") || e.contains("password"), "{e}");
    let with_pw = env.clone().with_var("PGPASSWORD", "Team-Secret-42");
    connect("postgres:///teamdb", &with_pw).unwrap();
    let wrong = env.clone().with_var("PGPASSWORD", "Wrong-Secret-99");
    let e = connect("postgres:///teamdb", &wrong).unwrap_err();
    assert!(e.contains("password authentication failed") && !e.contains("Wrong-Secret-99"), "{e}");

    // ~/.pgpass (0600), and PGPASSFILE elsewhere.
    private_file(&dir.path().join(".pgpass"), &format!("localhost:{port}:teamdb:teammate:Team-Secret-42\n"));
    connect("postgres:///teamdb", &env).unwrap();
    let elsewhere = dir.path().join("team.pgpass");
    private_file(&elsewhere, "*:*:*:teammate:Team-Secret-42\n");
    std::fs::remove_file(dir.path().join(".pgpass")).unwrap();
    assert!(connect("postgres:///teamdb", &env).is_err());
    let env = env.with_var("PGPASSFILE", elsewhere.to_str().unwrap());
    connect("postgres:///teamdb", &env).unwrap();

    // A service file names all of it but the password.
    let services = dir.path().join("pg_service.conf");
    std::fs::write(
        &services,
        format!(
            "[team]\nhost=localhost\nport={port}\ndbname=teamdb\nuser=teammate\nsslmode=verify-full\nsslrootcert={}\n",
            ca.display()
        ),
    )
    .unwrap();
    let only_files = PgEnv::none()
        .with_var("PGSERVICEFILE", services.to_str().unwrap())
        .with_var("PGPASSFILE", elsewhere.to_str().unwrap());
    connect("service=team", &only_files).unwrap();
    connect("postgres://?service=team", &only_files).unwrap();
    let by_env = only_files.with_var("PGSERVICE", "team");
    connect("postgres://", &by_env).unwrap();
    assert_eq!(tls_of_arbor_connections(&c), Vec::<bool>::new(), "the stores above are closed");
}

#[test]
fn a_server_that_never_answers_is_an_error_within_connect_timeout() {
    // Not a server: a socket that accepts connections and never says a word.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        let mut open = vec![];
        for s in listener.incoming().take(4) {
            open.push(s);
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    for query in ["connect_timeout=2&sslmode=disable", "connect_timeout=2&sslmode=require"] {
        let url = format!("postgres://arbor@127.0.0.1:{port}/db?{query}");
        let start = Instant::now();
        let e = PgStore::connect(&url).unwrap_err().to_string();
        let took = start.elapsed();
        assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(6), "{query}: {took:?}");
        assert!(e.starts_with("cannot reach the PostgreSQL server at") && e.contains("no answer within 2 s"), "{e}");
    }
    drop(held);
}

#[test]
fn unix_sockets_ignore_sslmode_as_libpq_does() {
    let Some(cluster) = Cluster::start("socket_sslmode") else { return };
    drop(PgStore::connect(&format!("{}?sslmode=require", cluster.url)).unwrap());
}
