//! The server going away: a clear line, nothing half-written, and the next
//! command works once it is back. On a private cluster, stopped with
//! `pg_ctl stop -m immediate` (a crash: no shutdown checkpoint) while another
//! process appends as fast as it can.

use std::collections::HashSet;
use std::path::Path;

use arbor_pg::{PgStore, SessionKey};
use arbor_test_support::pg::Cluster;
use arbor_tree::check::{check_session, Severity};
use arbor_tree::{OpenMode, Session};
use serde_json::Value;

use crate::child::Writer;
use crate::{assistant, pg_opts, user};

/// Every line of the session on the server parses and ends with a newline; their ids.
fn whole_lines(store: &PgStore, path: &Path) -> Vec<String> {
    let bytes = store.read_session(&SessionKey::of_path(path)).unwrap().unwrap();
    assert!(bytes.ends_with(b"\n"), "the session ends in the middle of a line");
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(|l| {
            let v: Value = serde_json::from_slice(l).unwrap_or_else(|e| panic!("half a line: {e}: {l:?}"));
            v["id"].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

#[test]
fn a_server_crash_and_restart_under_a_writer_lose_nothing_and_double_nothing() {
    let Some(cluster) = Cluster::start("server_stopped_mid_append") else { return };
    let store = PgStore::connect(&cluster.url).unwrap();
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("hello")).unwrap();
    s.append_message(assistant("hi")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    drop(s);

    let mut writer = Writer::start(&cluster.url, &path).unwrap();
    writer.send("flood");
    let mut acknowledged = Vec::new();
    let mut appended = |writer: &mut Writer, n: usize| {
        for _ in 0..n {
            let line = writer.next(&["APPENDED ", "FAILED "]);
            let id = line.strip_prefix("APPENDED ").unwrap_or_else(|| panic!("{line}"));
            acknowledged.push(id.to_owned());
        }
    };
    appended(&mut writer, 50);
    // A crash (no shutdown checkpoint) under the writer's appends.
    cluster.stop("immediate");
    // While the server is down: one clear line, nothing else.
    let down = Session::open(&path, OpenMode::ReadOnly, pg_opts(&store)).unwrap_err().to_string();
    assert!(down.contains("cannot reach the PostgreSQL server at") && down.lines().count() == 1, "{down}");
    let down = PgStore::connect(&cluster.url).unwrap_err().to_string();
    assert!(down.starts_with("cannot reach the PostgreSQL server at"), "{down}");
    cluster.restart();
    // The writer reconnects by itself, takes its lock again, finds out whether
    // the append in flight was committed, and goes on.
    appended(&mut writer, 50);
    // The flood went on while this process read: what it acknowledged and
    // this one had not read yet counts too (on a loaded machine, many).
    for line in writer.kill_and_drain() {
        if let Some(at) = line.find("APPENDED ") {
            acknowledged.push(line[at + "APPENDED ".len()..].trim_end().to_owned());
        }
    }

    let ids = whole_lines(&store, &path);
    let stored: HashSet<&String> = ids.iter().collect();
    assert_eq!(stored.len(), ids.len(), "an append was written twice");
    assert!(acknowledged.iter().all(|a| stored.contains(a)), "an acknowledged append was lost");
    assert!(ids.len() <= acknowledged.len() + 3 + 1, "at most the one append in flight beyond them");
    let findings = check_session(&path, pg_opts(&store)).unwrap();
    assert!(findings.iter().all(|f| f.severity < Severity::Error), "{findings:?}");

    // The next writer works: the killed one's lock went with its connection.
    let mut s = loop {
        match Session::open(&path, OpenMode::Write, pg_opts(&store)) {
            Ok(s) => break s,
            Err(arbor_tree::TreeError::Locked { .. }) => std::thread::sleep(std::time::Duration::from_millis(10)),
            Err(e) => panic!("{e}"),
        }
    };
    let id = s.append_message(user("after the restart")).unwrap();
    assert_eq!(whole_lines(&store, &path).last(), Some(&id));
}

#[test]
fn an_append_whose_connection_drops_is_written_once_whatever_the_moment() {
    use arbor_test_support::pg::{socket_of, Cut, CutProxy, TestDb};
    let Some(db) = TestDb::new("lost_ack") else { return };
    let Some(socket) = socket_of(&db.url) else {
        eprintln!("lost_ack: skipped: ARBOR_TEST_PG is not a unix socket URL");
        return;
    };
    let proxy = CutProxy::start(&socket);
    let store = PgStore::connect(&proxy.url(db.name())).unwrap();
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("hello")).unwrap();
    s.append_message(assistant("hi")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    for cut in [Cut::AfterCommit, Cut::BeforeCommit, Cut::AfterCommit] {
        proxy.arm(cut);
        let cuts = proxy.cuts();
        let text = format!("written through a cut {cut:?} {cuts}");
        let id = s.append_message(user(&text)).unwrap_or_else(|e| panic!("{cut:?}: {e}"));
        assert_eq!(proxy.cuts(), cuts + 1, "{cut:?}: the connection was cut");
        let ids = whole_lines(&store, &path);
        assert_eq!(ids.iter().filter(|i| **i == id).count(), 1, "{cut:?}: {ids:?}");
        assert_eq!(ids.last(), Some(&id));
    }
    // Still the session's one writer, on its new connection.
    assert!(matches!(
        Session::open(&path, OpenMode::Write, pg_opts(&store)),
        Err(arbor_tree::TreeError::Locked { .. })
    ));
    let id = s.append_message(user("and on")).unwrap();
    assert_eq!(whole_lines(&store, &path).last(), Some(&id));
    assert_eq!(whole_lines(&store, &path).len(), 3 + 3 + 1);
}

#[test]
fn a_statement_the_server_holds_past_its_limit_fails_with_a_line_naming_the_limit() {
    let Some(db) = arbor_test_support::pg::TestDb::new("statement_timeout") else { return };
    let url = format!("{}?options=-c%20statement_timeout%3D300", db.url);
    let store = PgStore::connect(&url).unwrap();
    let path = Path::new(arbor_pg::ROOT).join("--w--").join("s.jsonl");
    arbor_tree::Store::rewrite(&store, &path, b"").unwrap();
    // Another client holds every session row: a read of one waits for it.
    let mut other = db.client();
    let mut tx = other.transaction().unwrap();
    tx.batch_execute("LOCK TABLE arbor.sessions IN ACCESS EXCLUSIVE MODE").unwrap();
    let started = std::time::Instant::now();
    let e = arbor_tree::Store::exists(&store, &path).unwrap_err().to_string();
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "waited {:?}", started.elapsed());
    assert!(e.contains("statement timeout") && e.contains("statement_timeout"), "{e}");
    tx.rollback().unwrap();
    // Once the lock is gone, the same store reads again.
    assert!(arbor_tree::Store::exists(&store, &path).unwrap());
}

/// Sends SIGCONT to the processes it holds when dropped (a stopped server backend is never left behind).
struct Stopped(Vec<i32>);

impl Stopped {
    fn stop(pids: Vec<i32>) -> Stopped {
        for p in &pids {
            assert!(std::process::Command::new("kill").args(["-STOP", &p.to_string()]).status().unwrap().success());
        }
        Stopped(pids)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::process::Command::new("kill").args(["-CONT", &p.to_string()]).status();
        }
    }
}

#[test]
fn a_frozen_server_that_still_acknowledges_tcp_gives_an_error_after_the_documented_limit() {
    let Some(db) = arbor_test_support::pg::TestDb::new("frozen_server") else { return };
    // statement_timeout 1 s: reads wait for 2 s.
    let url = format!("{}?options=-c%20statement_timeout%3D1000", db.url);
    let store = PgStore::connect(&url).unwrap();
    let path = Path::new(arbor_pg::ROOT).join("--w--").join("s.jsonl");
    arbor_tree::Store::rewrite(&store, &path, b"").unwrap();
    assert!(arbor_tree::Store::exists(&store, &path).unwrap());
    // The server process serving this store's connection is frozen (SIGSTOP): its socket stays open.
    let pids = own_backends(&db);
    assert!(!pids.is_empty());
    let frozen = Stopped::stop(pids);
    let (tx, rx) = std::sync::mpsc::channel();
    let (s, p) = (store.clone(), path.clone());
    let started = std::time::Instant::now();
    std::thread::spawn(move || drop(tx.send(arbor_tree::Store::exists(&s, &p).map_err(|e| e.to_string()))));
    let got = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("the read hung on a frozen server");
    let e = got.unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "after {:?}", started.elapsed());
    assert!(e.contains("no answer within 2 s"), "{e}");
    drop(frozen);
    // Thawed: the next read connects again.
    assert!(arbor_tree::Store::exists(&store, &path).unwrap());
}

/// The server processes serving this test process's connections to `db`.
fn own_backends(db: &arbor_test_support::pg::TestDb) -> Vec<i32> {
    db.client()
        .query(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE $2",
            &[&db.name(), &format!("arbor:{}@%", std::process::id())],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// `f` on a thread of its own with every server process of this test's
/// connections frozen: its error and how long it took (a hang fails the test).
fn frozen<T: Send + 'static>(
    db: &arbor_test_support::pg::TestDb,
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> (String, std::time::Duration) {
    let pids = own_backends(db);
    assert!(!pids.is_empty());
    let stopped = Stopped::stop(pids);
    let (tx, rx) = std::sync::mpsc::channel();
    let started = std::time::Instant::now();
    std::thread::spawn(move || drop(tx.send(f().err())));
    let got = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("hung on a frozen server");
    let took = started.elapsed();
    drop(stopped);
    (got.expect("succeeded on a frozen server"), took)
}

#[test]
fn listings_and_pushes_on_a_frozen_server_give_an_error_after_the_limit() {
    use arbor_tree::sessions::{ListRequest, NoProgress, Scope, Sessions};
    let Some(db) = arbor_test_support::pg::TestDb::new("frozen_writes") else { return };
    // statement_timeout 1 s: the client waits for 2 s.
    let url = format!("{}?options=-c%20statement_timeout%3D1000", db.url);
    let store = PgStore::connect(&url).unwrap();
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("hello")).unwrap();
    s.append_message(assistant("hi")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("--elsewhere--").join("s.jsonl");
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    std::fs::write(&local, store.read_session(&SessionKey::of_path(&path)).unwrap().unwrap()).unwrap();
    let limit = |(e, took): (String, std::time::Duration)| {
        assert!(took < std::time::Duration::from_secs(10), "after {took:?}: {e}");
        assert!(e.contains("no answer within 2 s") && !e.contains('\n'), "{e}");
    };

    drop(s);
    // A listing (`arbor ls`), on the store's shared connection made again.
    assert!(arbor_tree::Store::exists(&store, &path).unwrap());
    let st = store.clone();
    limit(frozen(&db, move || {
        st.listing(&ListRequest::new(Scope::All), &NoProgress).map(drop).map_err(|e| e.to_string())
    }));
    // A push.
    assert!(arbor_tree::Store::exists(&store, &path).unwrap());
    let st = store.clone();
    limit(frozen(&db, move || st.push(&local).map(drop).map_err(|e| e.to_string())));
    // Thawed: the store works again.
    assert!(!store.listing(&ListRequest::new(Scope::All), &NoProgress).unwrap().is_empty());
}

/// The ids of the lines of session `path` holding `text`.
fn holding(store: &PgStore, path: &Path, text: &str) -> usize {
    let bytes = store.read_session(&SessionKey::of_path(path)).unwrap().unwrap();
    bytes.split_inclusive(|&b| b == b'\n').filter(|l| l.windows(text.len()).any(|w| w == text.as_bytes())).count()
}

/// A writer on `path` once the given-up writer's connection has let the session go.
fn next_writer(store: &PgStore, path: &Path) -> Session {
    let started = std::time::Instant::now();
    loop {
        match Session::open(path, OpenMode::Write, pg_opts(store)) {
            Ok(s) => return s,
            Err(arbor_tree::TreeError::Locked { .. }) if started.elapsed() < std::time::Duration::from_secs(20) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn appends_by_the_sessions_writer_on_a_frozen_server_give_an_error_after_the_limit() {
    let Some(db) = arbor_test_support::pg::TestDb::new("frozen_append") else { return };
    // statement_timeout 1 s: the client waits for 2 s.
    let url = format!("{}?options=-c%20statement_timeout%3D1000", db.url);
    let store = PgStore::connect(&url).unwrap();
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("hello")).unwrap();
    let hi = s.append_message(assistant("hi")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    drop(s);
    // One line naming the limit, within 10 s, the session dropped (its lock released) on the same thread.
    let limit = |(e, took): (String, std::time::Duration)| {
        assert!(took < std::time::Duration::from_secs(10), "after {took:?}: {e}");
        assert!(e.contains("no answer within 2 s") && !e.contains('\n'), "{e}");
        assert!(e.contains("nothing was written"), "{e}");
    };

    // The first append of a writer (the session's append handle is opened on its way).
    let mut s = Session::open(&path, OpenMode::Write, pg_opts(&store)).unwrap();
    limit(frozen(&db, move || {
        let r = s.append_message(user("frozen first")).map_err(|e| e.to_string());
        drop(s);
        r
    }));
    // Thawed: nothing of it was written, and a retry writes it once.
    let mut s = next_writer(&store, &path);
    assert_eq!(holding(&store, &path, "frozen first"), 0);
    s.append_message(user("frozen first")).unwrap();
    assert_eq!(holding(&store, &path, "frozen first"), 1);

    // A label change by a writer that has appended already (what `arbor label` and `arbor chat` write).
    let id = hi.clone();
    limit(frozen(&db, move || {
        let r = s.append_label_change(&id, Some("frozen-label")).map_err(|e| e.to_string());
        drop(s);
        r
    }));
    let mut s = next_writer(&store, &path);
    assert_eq!(holding(&store, &path, "frozen-label"), 0);
    s.append_label_change(&hi, Some("frozen-label")).unwrap();
    assert_eq!(holding(&store, &path, "frozen-label"), 1);
    drop(s);

    // The first write of a new session (`arbor chat`: the session written whole at its first answer).
    let mut fresh = Session::create("/team/new", pg_opts(&store)).unwrap();
    fresh.append_message(user("fresh hello")).unwrap();
    let fresh_path = fresh.session_file().unwrap().to_owned();
    limit(frozen(&db, move || {
        let r = fresh.append_message(assistant("fresh frozen")).map_err(|e| e.to_string());
        drop(fresh);
        r
    }));
    // Thawed: once the given-up write's connection has let the session go, nothing of it is there.
    let started = std::time::Instant::now();
    while store.writer(&SessionKey::of_path(&fresh_path)).unwrap().is_some() {
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "the given-up writer kept the session");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!arbor_tree::Store::exists(&store, &fresh_path).unwrap());

    // A copy beside the session (what a repair keeps of a corrupt session before writing it again).
    let (st, p) = (store.clone(), path.clone());
    let (e, took) =
        frozen(&db, move || arbor_tree::Store::backup(&st, &p, "frozen").map(drop).map_err(|e| e.to_string()));
    assert!(
        took < std::time::Duration::from_secs(10) && e.contains("no answer within 2 s") && !e.contains('\n'),
        "{e}"
    );
    let dir = arbor_tree::Store::list(&store, path.parent().unwrap()).unwrap();
    assert!(dir.iter().all(|f| !f.path.to_string_lossy().contains(".frozen-")), "{dir:?}");

    // Opening a session for writing (its lock taken on a connection of its own).
    let st = store.clone();
    let p = path.clone();
    let (e, took) =
        frozen(&db, move || Session::open(&p, OpenMode::Write, pg_opts(&st)).map(drop).map_err(|e| e.to_string()));
    assert!(
        took < std::time::Duration::from_secs(10) && e.contains("no answer within 2 s") && !e.contains('\n'),
        "{e}"
    );

    // Every line whole, no entry twice.
    let ids = whole_lines(&store, &path);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len(), "{ids:?}");
    let mut s = next_writer(&store, &path);
    s.append_message(user("after the thaw")).unwrap();
    assert_eq!(whole_lines(&store, &path).len(), ids.len() + 1);

    // A writer dropped (its lock released) while the server is frozen: at
    // exit as anywhere, the drop never waits past the limit.
    let (e, took) = frozen(&db, move || {
        drop(s);
        Err::<(), _>("dropped".to_owned())
    });
    assert!(took < std::time::Duration::from_secs(10), "{e} after {took:?}");
    // Thawed: the session is free again (its lock went with that connection).
    next_writer(&store, &path).append_message(user("and on")).unwrap();
}

#[test]
fn an_append_frozen_with_its_commit_on_the_way_says_its_outcome_is_known_only_later() {
    let Some(db) = arbor_test_support::pg::TestDb::new("frozen_commit") else { return };
    // statement_timeout 2 s: the client waits for 4 s.
    let url = format!("{}?options=-c%20statement_timeout%3D2000", db.url);
    let store = PgStore::connect(&url).unwrap();
    let mut s = Session::create("/team/proj", pg_opts(&store)).unwrap();
    s.append_message(user("hello")).unwrap();
    s.append_message(assistant("hi")).unwrap();
    let path = s.session_file().unwrap().to_owned();
    // Each append's commit waits for a lock this test holds (a deferred check on the write's token).
    let mut admin = db.client();
    admin
        .batch_execute(
            "CREATE FUNCTION arbor.wait_for_the_test() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_advisory_xact_lock(4242); RETURN NULL; END $$; \
             CREATE CONSTRAINT TRIGGER wait_at_commit AFTER INSERT ON arbor.writes \
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION arbor.wait_for_the_test(); \
             SELECT pg_advisory_lock(4242)",
        )
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = s.append_message(user("at its commit")).map_err(|e| e.to_string());
        drop(s);
        drop(tx.send(r));
    });
    // Its commit waits: every server process of this test's store is frozen there.
    let started = std::time::Instant::now();
    let waiting = |db: &arbor_test_support::pg::TestDb| {
        db.client()
            .query(
                "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE $2 \
                 AND wait_event_type = 'Lock' AND query ILIKE 'COMMIT%'",
                &[&db.name(), &format!("arbor:{}@%", std::process::id())],
            )
            .unwrap()
            .len()
    };
    while waiting(&db) == 0 {
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "the append never reached its commit");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let frozen = Stopped::stop(own_backends(&db));
    admin.batch_execute("SELECT pg_advisory_unlock(4242)").unwrap();
    let e = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("hung at its commit").unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "after {:?}", started.elapsed());
    assert!(e.contains("no answer within 4 s") && !e.contains('\n'), "{e}");
    assert!(e.contains("its commit was on its way") && e.contains("look before writing it again"), "{e}");
    drop(frozen);
    // Thawed: once the frozen connection has let the session go, it holds the append whole or not at all.
    while store.writer(&SessionKey::of_path(&path)).unwrap().is_some() {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the given-up writer kept the session");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let ids = whole_lines(&store, &path);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len(), "{ids:?}");
    assert!(holding(&store, &path, "at its commit") <= 1);
}
