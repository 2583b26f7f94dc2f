//! A writer frozen by `kill -STOP` holds its session for as long as it is
//! frozen: `arbor unlock` shows it (pid, host, idle time), refuses to end it
//! without a terminal unless `--force`, and with it frees the session, while
//! everything the writer had written stays.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use arbor_test_support::pg::TestDb;

use crate::model_server::ModelServer;
use crate::{cache_dir, fixtures, stderr, stdout};

const DEMO: &str = "--home-dev-wordfreq--/2026-03-14T09-12-03-418Z_fe01ce2a.jsonl";

/// `arbor ARGS` in `dir` on the server `url`, with deterministic ids.
pub(crate) fn command(url: &str, dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.args(args)
        .env("ARBOR_IDS", "counter")
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache_dir())
        .env("ARBOR_STORE", url)
        .env_remove("ARBOR_HOOKS")
        .env_remove("OPENAI_API_KEY")
        .current_dir(dir);
    c
}

fn run(url: &str, dir: &Path, args: &[&str]) -> Output {
    command(url, dir, args).stdin(Stdio::null()).output().unwrap()
}

fn signal(pid: u32, sig: &str) {
    assert!(Command::new("kill").args([sig, &pid.to_string()]).status().unwrap().success());
}

#[test]
fn unlock_shows_a_frozen_writer_and_frees_its_session_with_force() {
    let Some(db) = TestDb::new("cli_unlock") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(DEMO);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::copy(fixtures().join("demo/demo.jsonl"), &file).unwrap();
    let o = run(&db.url, dir.path(), &["push", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));

    // A chat holds the session, then freezes.
    let model = ModelServer::start();
    let base = model.openai();
    let mut chat =
        command(&db.url, dir.path(), &["chat", "fe01ce2a", "--model", "openai/test-model", "--base-url", &base])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    let mut stdin = chat.stdin.take().unwrap();
    let mut out = BufReader::new(chat.stdout.take().unwrap());
    writeln!(stdin, "hello before freezing").unwrap();
    let mut line = String::new();
    while !line.contains("echo: hello before freezing") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the chat ended early");
    }
    signal(chat.id(), "-STOP");
    std::thread::sleep(std::time::Duration::from_millis(1100));

    let refused = run(&db.url, dir.path(), &["label", "fe01ce2a", "4f487dd5", "after"]);
    assert!(stderr(&refused).contains(&format!("(pid {} on ", chat.id())), "{}", stderr(&refused));

    // A pull of a session a writer holds is refused, naming it, unless --allow-live.
    let into = dir.path().join("pulled");
    let o = run(&db.url, dir.path(), &["pull", "fe01ce2a", "--to", into.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!("open for writing by another process (pid {} on ", chat.id())),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--allow-live") && !into.join(DEMO).exists(), "{}", stderr(&o));
    let o = run(&db.url, dir.path(), &["pull", "fe01ce2a", "--allow-live", "--to", into.to_str().unwrap()]);
    assert!(o.status.success() && into.join(DEMO).exists(), "{}", stderr(&o));

    // Without a terminal and without --force: shown, not ended.
    let o = run(&db.url, dir.path(), &["unlock", DEMO]);
    assert_eq!(o.status.code(), Some(1));
    let shown = stdout(&o);
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    assert!(
        shown.starts_with(&format!("/{DEMO}: held by pid {} on {host} (its connection idle for ", chat.id())),
        "{shown}"
    );
    assert!(stderr(&o).contains("give --force"), "{}", stderr(&o));
    assert!(!run(&db.url, dir.path(), &["label", "fe01ce2a", "4f487dd5", "after"]).status.success());

    let o = run(&db.url, dir.path(), &["unlock", "fe01ce2a", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).ends_with(&format!("/{DEMO}: unlocked (the writer's connection was ended)\n")),
        "{}",
        stdout(&o)
    );
    let o = run(&db.url, dir.path(), &["label", "fe01ce2a", "4f487dd5", "after"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // What the frozen chat wrote stays.
    let path = stdout(&run(&db.url, dir.path(), &["dump", "fe01ce2a"]));
    assert!(path.contains("hello before freezing"), "{path}");
    let o = run(&db.url, dir.path(), &["unlock", "fe01ce2a"]);
    assert_eq!(stdout(&o), format!("/{DEMO}: no writer holds it\n"));

    signal(chat.id(), "-CONT");
    let _ = chat.kill();
    let _ = chat.wait();
}
