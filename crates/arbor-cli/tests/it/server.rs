//! The commands on sessions stored on a real PostgreSQL server
//! (`ARBOR_TEST_PG`, a database per test; skipped without one): the same
//! scenario on a file and on the server gives the same paths and contexts;
//! push and pull through the CLI; `tail` and `tui --follow` see another
//! process's appends; a server that is down is one line.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use arbor_test_support::pg::TestDb;
use serde_json::Value;

use crate::model_server::ModelServer;
use crate::tui::{tmux_missing, Tmux};
use crate::{cache_dir, fixtures, stderr, stdout};

/// The demo session as `DIR/FILE` (the name it has on the server after a push).
const DEMO: &str = "--home-dev-wordfreq--/2026-03-14T09-12-03-418Z_fe01ce2a.jsonl";

/// `arbor ARGS` with deterministic ids, on the server `store` when given.
fn arbor_at(store: Option<&str>, dir: &Path, args: &[&str]) -> Output {
    command(store, dir, args).output().unwrap()
}

fn command(store: Option<&str>, dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.args(args)
        .env("ARBOR_IDS", "counter")
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache_dir())
        .env("ARBOR_SESSIONS_DIR", dir.join("sessions"))
        .env_remove("ARBOR_CONFIG")
        .env_remove("ARBOR_HOOKS")
        .env_remove("OPENAI_API_KEY")
        .current_dir(dir);
    match store {
        Some(url) => c.env("ARBOR_STORE", url),
        None => c.env_remove("ARBOR_STORE"),
    };
    c
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "stdout:\n{}\nstderr:\n{}", stdout(&o), stderr(&o));
    o
}

fn parsed(o: Output) -> Value {
    serde_json::from_slice(&ok(o).stdout).unwrap()
}

/// A copy of the demo session in pi's layout under `dir/local`; its path.
fn demo_file(dir: &Path) -> PathBuf {
    let f = dir.join("local").join(DEMO);
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    fs::copy(fixtures().join("demo/demo.jsonl"), &f).unwrap();
    f
}

/// A value without its `timestamp` fields (the two runs happen at different times).
fn timeless(mut v: Value) -> Value {
    let mut stack = vec![&mut v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(o) => {
                o.remove("timestamp");
                stack.extend(o.values_mut());
            }
            Value::Array(a) => stack.extend(a.iter_mut()),
            _ => {}
        }
    }
    v
}

/// One side of the scenario: the session (a file, or its name on the server) and how to run arbor there.
struct Side<'a> {
    store: Option<&'a str>,
    dir: &'a Path,
    session: String,
    model: ModelServer,
}

impl Side<'_> {
    fn run(&self, args: &[&str]) -> Output {
        arbor_at(self.store, self.dir, args)
    }

    /// `path --json` and `context --json` of `session`, without times.
    fn view(&self, session: &str) -> (Value, Value) {
        let path = parsed(self.run(&["path", session, "--json"]));
        let ctx = parsed(self.run(&["context", session, "--json"]));
        (timeless(path), timeless(ctx))
    }

    fn model_args(&self) -> Vec<String> {
        vec!["--model".into(), "openai/test-model".into(), "--base-url".into(), self.model.openai()]
    }

    /// label, navigate with a summary, compact, a chat turn, a fork: what each step shows.
    fn scenario(&self) -> Vec<(Value, Value)> {
        let s = self.session.as_str();
        let m = self.model_args();
        let m: Vec<&str> = m.iter().map(String::as_str).collect();
        let mut views = vec![];
        ok(self.run(&["label", s, "4f487dd5", "checkpoint"]));
        views.push(self.view(s));
        let nav = [&["navigate", s, "b75648f5", "--summarize", "--json"][..], &m].concat();
        let r = parsed(self.run(&nav));
        assert!(r["summaryEntryId"].is_string(), "{r}");
        views.push(self.view(s));
        let compact = [&["compact", s, "--keep-recent-tokens", "200", "--json"][..], &m].concat();
        parsed(self.run(&compact));
        views.push(self.view(s));
        self.chat(&m);
        views.push(self.view(s));
        let fork = parsed(self.run(&["fork", s, "--at", "4f487dd5", "--json"]));
        let forked = fork["path"].as_str().unwrap().to_owned();
        views.push(self.view(&forked));
        let check = ok(self.run(&["check", s]));
        assert!(stdout(&check).ends_with(": ok\n"), "{}", stdout(&check));
        views
    }

    /// A chat turn and a label through `arbor chat`; while it runs, a second writer is refused.
    fn chat(&self, model: &[&str]) {
        let mut child = command(self.store, self.dir, &[&["chat", self.session.as_str()][..], model].concat())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        writeln!(stdin, "hello from the chat").unwrap();
        let mut line = String::new();
        while !line.contains("echo: hello from the chat") {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "the chat ended early");
        }
        // The chat holds the session: another writer is refused, naming its pid (and host on a server).
        let refused = self.run(&["label", self.session.as_str(), "4f487dd5", "x"]);
        assert_eq!(refused.status.code(), Some(1));
        let e = stderr(&refused);
        assert!(e.contains(&format!("open for writing by another process (pid {}", child.id())), "{e}");
        if self.store.is_some() {
            let host = gethostname::gethostname().to_string_lossy().into_owned();
            assert!(e.contains(&format!(" on {host})")), "{e}");
        }
        writeln!(stdin, "/label chatted").unwrap();
        writeln!(stdin, "/quit").unwrap();
        drop(stdin);
        let status = child.wait().unwrap();
        assert!(status.success());
    }
}

#[test]
fn the_scenario_on_the_server_shows_what_it_shows_on_a_file() {
    let Some(db) = TestDb::new("cli_scenario") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = demo_file(dir.path());
    let pushed = ok(arbor_at(None, dir.path(), &["push", file.to_str().unwrap(), "--to", &db.url]));
    assert_eq!(stdout(&pushed), format!("{}: created (40 lines) as /{DEMO}\n", file.display()));

    let on_file = Side {
        store: None,
        dir: dir.path(),
        session: file.to_string_lossy().into_owned(),
        model: ModelServer::start(),
    };
    // On the server, by session id prefix.
    let on_server =
        Side { store: Some(&db.url), dir: dir.path(), session: "fe01ce2a".into(), model: ModelServer::start() };
    let a = on_file.scenario();
    let b = on_server.scenario();
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x.0, y.0, "path --json after step {i}");
        assert_eq!(x.1, y.1, "context --json after step {i}");
    }
    // What the steps did is really there.
    let path = &a[3].0;
    let types: Vec<&str> = path.as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(types.contains(&"compaction") && types.contains(&"branch_summary"), "{types:?}");
    assert_eq!(a[3].1["messages"][0]["role"], "compactionSummary");

    // Pulled back, the server's session is the file, byte for byte.
    let back = dir.path().join("back");
    ok(arbor_at(Some(&db.url), dir.path(), &["pull", "fe01ce2a", "--to", back.to_str().unwrap()]));
    let pulled = fs::read_to_string(back.join(DEMO)).unwrap();
    let local = fs::read_to_string(&file).unwrap();
    assert_eq!(pulled.lines().count(), local.lines().count());
}

#[test]
fn push_and_pull_through_the_cli_are_byte_identical_and_idempotent() {
    let Some(db) = TestDb::new("cli_push_pull") else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = fixtures().join("logs");
    let o = ok(arbor_at(None, dir.path(), &["push", root.to_str().unwrap(), "--to", &db.url, "--json"]));
    let report: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert!(report.len() > 50 && report.iter().all(|r| r["outcome"] == "created"), "{report:?}");
    let again = parsed(arbor_at(None, dir.path(), &["push", root.to_str().unwrap(), "--to", &db.url, "--json"]));
    assert!(again.as_array().unwrap().iter().all(|r| r["outcome"] == "unchanged"), "{again}");

    let out = dir.path().join("pulled");
    let pulled =
        parsed(arbor_at(Some(&db.url), dir.path(), &["pull", "--all", "--to", out.to_str().unwrap(), "--json"]));
    assert_eq!(pulled.as_array().unwrap().len(), report.len());
    for r in &report {
        let local = PathBuf::from(r["file"].as_str().unwrap());
        let session = r["session"].as_str().unwrap();
        let copy = out.join(session.trim_start_matches('/'));
        // What was pushed: the complete lines (a torn last line is held back, and the report says so).
        let bytes = fs::read(&local).unwrap();
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        assert_eq!(r["heldBack"].as_u64(), (whole < bytes.len()).then_some((bytes.len() - whole) as u64), "{r}");
        assert_eq!(fs::read(&copy).unwrap(), &bytes[..whole], "{}", local.display());
    }
    let twice =
        parsed(arbor_at(Some(&db.url), dir.path(), &["pull", "--all", "--to", out.to_str().unwrap(), "--json"]));
    assert!(twice.as_array().unwrap().iter().all(|r| r["outcome"] == "unchanged"), "{twice}");

    // A diverged copy: refused, one line, exit 1, nothing written.
    let one = PathBuf::from(report[0]["file"].as_str().unwrap());
    let copy = out.join(report[0]["session"].as_str().unwrap().trim_start_matches('/'));
    fs::write(&copy, b"{\"type\":\"session\",\"version\":3,\"id\":\"other\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n")
        .unwrap();
    let refused = arbor_at(None, dir.path(), &["push", copy.to_str().unwrap(), "--to", &db.url]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("diverged"), "{}", stderr(&refused));
    assert!(one.exists());
}

/// A session of `n` messages in a chain, each about 3 KB (past the size
/// below which a session is read whole rather than through its index), in
/// pi's layout under `dir/local`; its path and its name on the server.
fn chain_file(dir: &Path, n: usize) -> (PathBuf, String) {
    let name = "--w--/2026-01-01T00-00-00-000Z_0193c6f2.jsonl".to_owned();
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"0193c6f2\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    );
    for k in 0..n {
        let parent = if k == 0 { "null".to_owned() } else { format!("\"e{:07}\"", k - 1) };
        let role = if k % 2 == 0 { "user" } else { "assistant" };
        text += &format!(
            "{{\"type\":\"message\",\"id\":\"e{k:07}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\
             \"message\":{{\"role\":\"{role}\",\"content\":\"{}\"}}}}\n",
            format!("message {k} ").repeat(250)
        );
    }
    let f = dir.join("local").join(&name);
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    fs::write(&f, text).unwrap();
    (f, name)
}

#[test]
fn context_and_tree_json_read_the_server_once_and_read_a_line_edited_behind_its_index_again() {
    let Some(db) = TestDb::new("cli_edited_line") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (file, name) = chain_file(dir.path(), 400);
    ok(arbor_at(None, dir.path(), &["push", file.to_str().unwrap(), "--to", &db.url]));
    let reads = |store: Option<&str>, session: &str| {
        ["context", "tree"].map(|cmd| stdout(&ok(arbor_at(store, dir.path(), &[cmd, session, "--json"]))))
    };
    // Read once, checked as written: what the file gives.
    assert_eq!(reads(Some(&db.url), &name), reads(None, file.to_str().unwrap()));
    // Someone with write access edits a line of the path in place, same length, behind the index.
    let edited = db
        .client()
        .execute(
            "UPDATE arbor.lines SET bytes = convert_to(replace(convert_from(bytes, 'UTF8'), \
                 '\"id\":\"e0000200\"', '\"id\":\"x0000200\"'), 'UTF8') \
             WHERE position('\"id\":\"e0000200\"' IN convert_from(bytes, 'UTF8')) > 0",
            &[],
        )
        .unwrap();
    assert_eq!(edited, 1);
    let out = dir.path().join("pulled");
    ok(arbor_at(Some(&db.url), dir.path(), &["pull", &name, "--to", out.to_str().unwrap()]));
    let want = reads(None, out.join(&name).to_str().unwrap());
    // Within the output held back: nothing written from the index, the session read again.
    for (k, cmd) in ["context", "tree"].iter().enumerate() {
        let o = ok(arbor_at(Some(&db.url), dir.path(), &[cmd, &name, "--json"]));
        assert_eq!(stdout(&o), want[k], "{cmd}");
        assert!(stderr(&o).contains("did not match"), "{cmd}: {}", stderr(&o));
    }
}

#[test]
fn ls_and_search_on_the_server() {
    let Some(db) = TestDb::new("cli_ls_search") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = demo_file(dir.path());
    ok(arbor_at(None, dir.path(), &["push", file.to_str().unwrap(), "--to", &db.url]));
    let ls = stdout(&ok(arbor_at(Some(&db.url), dir.path(), &["ls", "--all"])));
    assert!(ls.contains("31 msgs") && ls.contains(&format!("/{DEMO}")), "{ls}");
    let mine = stdout(&ok(arbor_at(Some(&db.url), dir.path(), &["ls", "--cwd", "/home/dev/wordfreq", "--json"])));
    let list: Vec<Value> = serde_json::from_str(&mine).unwrap();
    assert_eq!(list.len(), 1);
    assert!(list[0]["allMessagesText"].as_str().unwrap().contains("case-insensitive"), "{mine}");
    let hits = stdout(&ok(arbor_at(Some(&db.url), dir.path(), &["search", "--all", "regex", "dependency"])));
    assert!(hits.contains("«dependency»") || hits.contains("«regex»"), "{hits}");
    let none = stdout(&ok(arbor_at(Some(&db.url), dir.path(), &["search", "--all", "zebra"])));
    assert_eq!(none, "no matches\n");
}

/// `DIR/FILE` of a path printed by either backend.
fn rel(p: &str) -> String {
    let mut parts = p.rsplit('/');
    let file = parts.next().unwrap_or_default();
    format!("{}/{file}", parts.next().unwrap_or_default())
}

/// A JSON list with each object's `path` as `DIR/FILE` and the keys in `drop` left out.
fn comparable(v: Value, drop: &[&str]) -> Value {
    let Value::Array(items) = v else { panic!("not a list: {v}") };
    Value::Array(
        items
            .into_iter()
            .map(|mut item| {
                let o = item.as_object_mut().unwrap();
                let path = rel(o["path"].as_str().unwrap());
                o.insert("path".into(), Value::String(path));
                for k in drop {
                    o.remove(*k);
                }
                item
            })
            .collect(),
    )
}

#[test]
fn files_and_the_server_answer_ls_search_and_names_alike() {
    let Some(db) = TestDb::new("cli_same_answers") else { return };
    let dir = tempfile::tempdir().unwrap();
    // The demo in the local sessions root (ARBOR_SESSIONS_DIR), and a copy of it on the server.
    let file = dir.path().join("sessions").join(DEMO);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::copy(fixtures().join("demo/demo.jsonl"), &file).unwrap();
    ok(arbor_at(None, dir.path(), &["push", file.to_str().unwrap(), "--to", &db.url]));
    let both = |args: &[&str]| [None, Some(db.url.as_str())].map(|store| parsed(arbor_at(store, dir.path(), args)));

    let [local, server] = both(&["ls", "--all", "--json"]);
    assert_eq!(comparable(local, &[]), comparable(server, &[]));
    for query in ["regex dependency", "re:case-insens", "\"strip punctuation\"", "zebra"] {
        let [local, server] = both(&["search", "--all", "--json", query]);
        let (local, server) = (comparable(local, &["snippet", "marks"]), comparable(server, &["snippet", "marks"]));
        assert_eq!(local, server, "{query}");
        assert!(query == "zebra" || !local.as_array().unwrap().is_empty(), "{query}: no hits");
    }
    // The same names on both: a session id prefix, the file name, DIR/FILE.
    for name in ["fe01ce2a", "2026-03-14T09-12-03-418Z_fe01ce2a.jsonl", DEMO] {
        // (A name starting with `--` is taken as a flag unless after `--`.)
        let [local, server] = both(&["path", "--json", "--", name]);
        assert_eq!(timeless(local), timeless(server), "{name}");
    }
}

#[test]
fn tail_prints_an_append_from_another_process_within_a_second() {
    let Some(db) = TestDb::new("cli_tail") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = demo_file(dir.path());
    ok(arbor_at(None, dir.path(), &["push", file.to_str().unwrap(), "--to", &db.url]));
    let mut tail = command(Some(&db.url), dir.path(), &["tail", "fe01ce2a", "-n", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(tail.stdout.take().unwrap());
    let mut line = String::new();
    for _ in 0..2 {
        line.clear();
        out.read_line(&mut line).unwrap();
    }
    assert!(line.contains("6a490938"), "the last entry first: {line}");
    // Another process appends; tail prints it.
    let labelled = Instant::now();
    ok(arbor_at(Some(&db.url), dir.path(), &["label", "fe01ce2a", "4f487dd5", "seen-by-tail"]));
    let written = labelled.elapsed();
    line.clear();
    out.read_line(&mut line).unwrap();
    let seen = labelled.elapsed();
    let _ = tail.kill();
    let _ = tail.wait();
    assert!(line.contains("label") && line.contains("seen-by-tail"), "{line}");
    assert!(seen - written < Duration::from_secs(1), "printed {:?} after the append", seen - written);
}

#[test]
fn tui_follow_draws_what_another_process_appends() {
    if tmux_missing() {
        return;
    }
    let Some(db) = TestDb::new("cli_tui_follow") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = demo_file(dir.path());
    ok(arbor_at(None, dir.path(), &["push", file.to_str().unwrap(), "--to", &db.url]));
    let cmd = format!(
        "cd {dir} && ARBOR_IDS=counter HOME=/nonexistent-home ARBOR_CACHE_DIR={dir}/cache TERM=xterm-256color \
         {bin} --store '{url}' tui --follow fe01ce2a; sleep 60",
        dir = dir.path().display(),
        bin = env!("CARGO_BIN_EXE_arbor"),
        url = db.url,
    );
    let tmux = Tmux { socket: dir.path().join("tmux-follow.sock") };
    tmux.run(&["new-session", "-d", "-s", "tui", "-x", "100", "-y", "30", &cmd]);
    tmux.wait_for("Session Tree");
    let before = tmux.screen();
    assert!(!before.contains("[drawn-live]"), "{before}");
    ok(arbor_at(Some(&db.url), dir.path(), &["label", "fe01ce2a", "6a490938", "drawn-live"]));
    let after = tmux.wait_for("[drawn-live]");
    assert!(after.contains("Session Tree"), "{after}");
    tmux.keys(&["Escape"]);
}

#[test]
fn the_session_picker_lists_and_searches_the_server() {
    if tmux_missing() {
        return;
    }
    let Some(db) = TestDb::new("cli_picker") else { return };
    let dir = tempfile::tempdir().unwrap();
    // The demo and an older session of the pane's working directory, on the server only.
    let cwd = dir.path().canonicalize().unwrap();
    let folder = dir.path().join("upload").join(arbor_tree::paths::encode_cwd(&cwd.to_string_lossy()));
    fs::create_dir_all(&folder).unwrap();
    fs::copy(fixtures().join("demo/demo.jsonl"), folder.join("2026-01-01T00-00-00-000Z_x.jsonl")).unwrap();
    let older = concat!(
        r#"{"type":"session","version":3,"id":"other-1","timestamp":"2025-06-01T00:00:00.000Z","cwd":"/elsewhere"}"#,
        "\n",
        r#"{"type":"message","id":"o1","parentId":null,"timestamp":"2025-06-01T00:00:01.000Z","message":{"role":"user","content":"an older question about tokio","timestamp":1748736001000}}"#,
        "\n"
    );
    fs::write(folder.join("2025-06-01T00-00-00-000Z_other-1.jsonl"), older).unwrap();
    ok(arbor_at(None, dir.path(), &["push", dir.path().join("upload").to_str().unwrap(), "--to", &db.url]));
    fs::remove_dir_all(dir.path().join("upload")).unwrap();
    let cmd = format!(
        "cd {dir} && ARBOR_IDS=counter HOME=/nonexistent-home ARBOR_CACHE_DIR={dir}/cache TERM=xterm-256color \
         {bin} --store '{url}' tui; sleep 60",
        dir = dir.path().display(),
        bin = env!("CARGO_BIN_EXE_arbor"),
        url = db.url,
    );
    let tmux = Tmux { socket: dir.path().join("tmux-picker.sock") };
    tmux.run(&["new-session", "-d", "-s", "tui", "-x", "100", "-y", "30", &cmd]);
    let s = tmux.wait_for("Resume a session");
    let demo = s.find("wordfreq: case, punctuation, --top").unwrap_or(usize::MAX);
    let older = s.find("an older question about tokio").unwrap_or(0);
    assert!(demo < older, "newest first: {s}");
    // A search over the server's entries, as the picker does it locally.
    tmux.text("strip punctuation");
    let s = tmux.wait_for("Strip punctuation without adding dependencies");
    assert!(!s.contains("an older question"), "{s}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Session Tree");
    tmux.keys(&["Escape"]);
}

#[test]
fn a_server_that_is_down_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = "postgres://arbor@%2Ftmp%2Farbor-no-server-here/postgres";
    for args in [&["ls"][..], &["path", "fe01ce2a"], &["tail", "fe01ce2a"]] {
        let o = arbor_at(Some(url), dir.path(), args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with("arbor: cannot reach the PostgreSQL server at postgres://arbor@%2Ftmp%2Farbor-no-server-here/postgres: "), "{e}");
    }
    let o = arbor_at(Some(url), dir.path(), &["repair", "x.jsonl"]);
    assert!(stderr(&o).contains("repair works on local session files, not with --store"), "{}", stderr(&o));
}

#[test]
fn tail_says_it_is_reconnecting_while_the_server_restarts_then_prints_what_came_meanwhile() {
    let Some(cluster) = arbor_test_support::pg::Cluster::start("cli_tail_restart") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = demo_file(dir.path());
    ok(arbor_at(None, dir.path(), &["push", file.to_str().unwrap(), "--to", &cluster.url]));
    let mut tail = command(Some(&cluster.url), dir.path(), &["tail", "fe01ce2a", "-n", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let err = BufReader::new(tail.stderr.take().unwrap());
    std::thread::spawn(move || err.lines().map_while(Result::ok).for_each(|l| drop(tx.send(l))));
    let mut out = BufReader::new(tail.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("6a490938"), "{line}");
    let said = |what: &str| {
        let l = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("no {what:?} on stderr"));
        assert!(l.contains(what), "{l}");
    };
    cluster.stop("fast");
    said("reconnecting…");
    cluster.restart();
    ok(arbor_at(Some(&cluster.url), dir.path(), &["label", "fe01ce2a", "4f487dd5", "after-restart"]));
    said("reconnected");
    line.clear();
    out.read_line(&mut line).unwrap();
    let _ = tail.kill();
    let _ = tail.wait();
    assert!(line.contains("after-restart"), "{line}");
}

#[test]
fn tui_follow_shows_reconnecting_while_the_server_restarts_then_draws_what_came_meanwhile() {
    if tmux_missing() {
        return;
    }
    let Some(cluster) = arbor_test_support::pg::Cluster::start("cli_tui_restart") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = demo_file(dir.path());
    ok(arbor_at(None, dir.path(), &["push", file.to_str().unwrap(), "--to", &cluster.url]));
    let cmd = format!(
        "cd {dir} && ARBOR_IDS=counter HOME=/nonexistent-home ARBOR_CACHE_DIR={dir}/cache TERM=xterm-256color \
         {bin} --store '{url}' tui --follow fe01ce2a; sleep 60",
        dir = dir.path().display(),
        bin = env!("CARGO_BIN_EXE_arbor"),
        url = cluster.url,
    );
    let tmux = Tmux { socket: dir.path().join("tmux-restart.sock") };
    tmux.run(&["new-session", "-d", "-s", "tui", "-x", "100", "-y", "30", &cmd]);
    tmux.wait_for("Session Tree");
    cluster.stop("fast");
    tmux.wait_for("Reconnecting…");
    cluster.restart();
    ok(arbor_at(Some(&cluster.url), dir.path(), &["label", "fe01ce2a", "6a490938", "after-restart"]));
    let after = tmux.wait_for("[after-restart]");
    assert!(after.contains("Session Tree") && !after.contains("Reconnecting"), "{after}");
    tmux.keys(&["Escape"]);
}
