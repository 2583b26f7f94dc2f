//! Connecting through the CLI as PostgreSQL users expect: the rest of
//! `ARBOR_STORE=postgres:///DB` from libpq's environment and files over TLS,
//! a server that never answers given up within `connect_timeout`, and
//! session names as the store prints them (`--home-me-project--/FILE`).

use std::fs;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use arbor_test_support::pg::{TestDb, TlsCluster};

use crate::{cache_dir, fixtures, stderr, stdout};

/// `arbor ARGS` in `dir` with exactly `env` added (no PG* variable of the test's own).
fn arbor_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.args(args)
        .env("HOME", dir.join("home"))
        .env("ARBOR_CACHE_DIR", cache_dir())
        .env("ARBOR_SESSIONS_DIR", dir.join("sessions"))
        .env("ARBOR_IDS", "counter")
        .env_remove("ARBOR_STORE")
        .current_dir(dir);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("PG")) {
        c.env_remove(k);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

const DEMO: &str = "--home-dev-wordfreq--/2026-03-14T09-12-03-418Z_fe01ce2a.jsonl";

fn demo_file(dir: &Path) -> std::path::PathBuf {
    let f = dir.join("local").join(DEMO);
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    fs::copy(fixtures().join("demo/demo.jsonl"), &f).unwrap();
    f
}

#[test]
fn the_store_from_libpq_environment_and_files_over_tls() {
    let Some(c) = TlsCluster::start("cli_libpq_env") else { return };
    let mut admin = c.admin();
    admin.batch_execute("SET password_encryption = 'scram-sha-256'").unwrap();
    admin.batch_execute("CREATE ROLE teammate LOGIN PASSWORD 'Team-Secret-42'").unwrap();
    admin.batch_execute("CREATE DATABASE teamdb OWNER teammate").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = demo_file(dir.path());
    let pgpass = dir.path().join("pgpass");
    fs::write(&pgpass, format!("localhost:{}:teamdb:teammate:Team-Secret-42\n", c.port)).unwrap();
    fs::set_permissions(&pgpass, <fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600)).unwrap();
    let port = c.port.to_string();
    let ca = c.certs.join("ca.crt");
    let env = [
        ("ARBOR_STORE", "postgres:///teamdb"),
        ("PGHOST", "localhost"),
        ("PGPORT", port.as_str()),
        ("PGUSER", "teammate"),
        ("PGPASSFILE", pgpass.to_str().unwrap()),
        ("PGSSLMODE", "verify-full"),
        ("PGSSLROOTCERT", ca.to_str().unwrap()),
    ];
    let o = arbor_env(dir.path(), &["push", file.to_str().unwrap()], &env);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("created (40 lines)"), "{}", stdout(&o));
    let o = arbor_env(dir.path(), &["ls", "--all"], &env);
    assert!(o.status.success() && stdout(&o).contains(DEMO), "{}{}", stdout(&o), stderr(&o));
    // The connection was TLS, as the environment asked.
    let ssl: Vec<bool> = admin
        .query("SELECT ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.usename = 'teammate'", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(ssl.iter().all(|s| *s), "{ssl:?}");
    // A wrong password from the environment is refused without being shown.
    let mut wrong = env.to_vec();
    wrong.push(("PGPASSWORD", "Wrong-Secret-99"));
    let o = arbor_env(dir.path(), &["ls", "--all"], &wrong);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("password authentication failed") && !e.contains("Wrong-Secret-99"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn a_server_that_never_answers_is_one_line_within_connect_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let _held = std::thread::spawn(move || {
        let open: Vec<_> = listener.incoming().take(2).collect();
        std::thread::sleep(Duration::from_secs(30));
        drop(open);
    });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://arbor@127.0.0.1:{port}/arbor?connect_timeout=2");
    let start = Instant::now();
    let o = arbor_env(dir.path(), &["ls", "--all"], &[("ARBOR_STORE", url.as_str())]);
    let took = start.elapsed();
    assert_eq!(o.status.code(), Some(1));
    assert!(took < Duration::from_secs(6), "{took:?}");
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("no answer within 2 s (connect_timeout"), "{e}");
}

#[test]
fn sessions_named_as_the_store_prints_them() {
    let Some(db) = TestDb::new("cli_hyphen_names") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = demo_file(dir.path());
    let env = [("ARBOR_STORE", db.url.as_str())];
    let o = arbor_env(dir.path(), &["push", file.to_str().unwrap()], &env);
    assert!(o.status.success(), "{}", stderr(&o));
    for args in [
        &["context", DEMO, "--json"][..],
        &["path", "--json", DEMO],
        &["tree", DEMO],
        &["dump", DEMO],
        &["label", DEMO, "4f487dd5", "named"],
        &["export", DEMO, "--format", "md"],
        &["diff", DEMO, "4f487dd5", "6a490938"],
    ] {
        let o = arbor_env(dir.path(), args, &env);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    let o = arbor_env(dir.path(), &["path", DEMO], &env);
    assert!(stdout(&o).contains("named"), "{}", stdout(&o));
}

#[test]
fn lists_of_names_that_start_with_dashes() {
    let Some(db) = TestDb::new("cli_hyphen_lists") else { return };
    let dir = tempfile::tempdir().unwrap();
    demo_file(dir.path());
    let local = dir.path().join("local");
    let env = [("ARBOR_STORE", db.url.as_str())];
    // A relative path into pi's folder, before the flags and among other names.
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    let o = c
        .args(["push", DEMO, "--json", "--to", db.url.as_str()])
        .env("ARBOR_CACHE_DIR", cache_dir())
        .env_remove("ARBOR_STORE")
        .current_dir(&local)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"outcome\""), "{}", stdout(&o));
    let o = arbor_env(dir.path(), &["check", DEMO, "--json"], &env);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with('['), "{}", stdout(&o));
    let to = dir.path().join("pulled");
    let o = arbor_env(dir.path(), &["pull", DEMO, "--to", to.to_str().unwrap()], &env);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(fs::read(to.join(DEMO)).unwrap(), fs::read(local.join(DEMO)).unwrap());
    // A mistyped flag is still refused as a flag.
    let o = arbor_env(dir.path(), &["pull", DEMO, "--jsn"], &env);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--jsn"), "{}", stderr(&o));
}
