//! push and pull: byte for byte on every fixture, idempotent, resumable,
//! and refusing to lose lines.

use std::fs;
use std::path::{Path, PathBuf};

use arbor_pg::{PgError, SessionKey, Transfer};
use arbor_test_support::{fixtures, jsonl_under};
use arbor_tree::{OpenMode, Session};

use crate::{pg_opts, store, user};

/// Where a pull into `root` puts the fixture at `f` (pi's layout: `DIR/FILE`).
fn pulled(root: &Path, f: &Path) -> PathBuf {
    let k = SessionKey::of_path(f);
    root.join(k.dir).join(k.name)
}

/// The complete lines of `bytes` (what a push sends: a torn last line waits).
fn complete(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)]
}

#[test]
fn push_then_pull_is_byte_identical_on_every_fixture_and_idempotent() {
    let Some((_db, store)) = store("push_pull_fixtures") else { return };
    let files = jsonl_under(&fixtures());
    assert!(files.len() > 50, "{} fixtures", files.len());
    for f in &files {
        let (key, t) = store.push(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(key, SessionKey::of_path(f));
        let n = complete(&fs::read(f).unwrap()).split_inclusive(|&b| b == b'\n').count() as u64;
        assert_eq!(t, Transfer::Created { lines: n }, "{}", f.display());
    }
    let out = tempfile::tempdir().unwrap();
    for f in &files {
        let key = SessionKey::of_path(f);
        let (dest, t) = store.pull(&key, out.path()).unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(dest, pulled(out.path(), f));
        assert!(matches!(t, Transfer::Created { .. }), "{key}: {t:?}");
        assert_eq!(fs::read(&dest).unwrap(), complete(&fs::read(f).unwrap()), "{} came back changed", f.display());
    }
    // Again: nothing to do either way.
    assert!(files.iter().any(|f| complete(&fs::read(f).unwrap()).len() < fs::read(f).unwrap().len()), "a torn tail");
    for f in &files {
        assert_eq!(store.push(f).unwrap().1, Transfer::Unchanged, "{}", f.display());
        assert_eq!(store.pull(&SessionKey::of_path(f), out.path()).unwrap().1, Transfer::Unchanged);
    }
}

/// A session file of `n` entries in a pi-style folder under `root`.
fn session_file(root: &Path, n: usize) -> PathBuf {
    let dir = root.join("--work-proj--");
    fs::create_dir_all(&dir).unwrap();
    let p = dir.join("2026-01-01T00-00-00-000Z_s1.jsonl");
    let mut text =
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/proj"}"#
            .to_owned();
    text.push('\n');
    for i in 0..n {
        let parent = if i == 0 { "null".to_owned() } else { format!("\"e{}\"", i - 1) };
        text.push_str(&format!(
            r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:0{}.000Z","message":{{"role":"user","content":"line {i}","timestamp":1}}}}"#,
            i % 10
        ));
        text.push('\n');
    }
    fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_grown_session_is_extended_and_a_diverged_one_refused() {
    let Some((_db, store)) = store("grown_diverged") else { return };
    let local = tempfile::tempdir().unwrap();
    let f = session_file(local.path(), 3);
    let full = fs::read(&f).unwrap();
    // An interrupted push leaves a prefix: the next push extends it.
    let cut = full.iter().enumerate().filter(|(_, &b)| b == b'\n').nth(1).unwrap().0 + 1;
    fs::write(&f, &full[..cut]).unwrap();
    assert_eq!(store.push(&f).unwrap().1, Transfer::Created { lines: 2 });
    fs::write(&f, &full).unwrap();
    assert_eq!(store.push(&f).unwrap().1, Transfer::Extended { lines: 2 });
    let key = SessionKey::of_path(&f);
    assert_eq!(store.read_session(&key).unwrap().unwrap(), full);

    // The server grows (a writer elsewhere): a pull extends the local copy.
    let mut s = Session::open(&key.path(), OpenMode::Write, pg_opts(&store)).unwrap();
    s.append_message(user("written on the server")).unwrap();
    drop(s);
    assert_eq!(store.pull(&key, local.path()).unwrap(), (f.clone(), Transfer::Extended { lines: 1 }));
    assert_eq!(fs::read(&f).unwrap(), store.read_session(&key).unwrap().unwrap());

    // The local copy changes one line: refused both ways, nothing written.
    let server_before = store.read_session(&key).unwrap().unwrap();
    let changed = String::from_utf8(fs::read(&f).unwrap()).unwrap().replace("line 1", "LINE 1");
    fs::write(&f, &changed).unwrap();
    let e = store.push(&f).unwrap_err();
    assert!(matches!(e, PgError::Refused { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("diverged") && msg.contains("nothing was written") && msg.lines().count() == 1, "{msg}");
    let e = store.pull(&key, local.path()).unwrap_err().to_string();
    assert!(e.contains("diverged"), "{e}");
    assert_eq!(store.read_session(&key).unwrap().unwrap(), server_before);
    assert_eq!(fs::read_to_string(&f).unwrap(), changed);

    // A local copy behind the server is not pushed over it; one ahead is not pulled over.
    fs::write(&f, &full).unwrap();
    let e = store.push(&f).unwrap_err().to_string();
    assert!(e.contains("1 more lines") && e.contains("pull it"), "{e}");
}

#[test]
fn a_session_with_a_live_writer_is_not_pushed_over() {
    let Some((_db, store)) = store("push_locked") else { return };
    let local = tempfile::tempdir().unwrap();
    let f = session_file(local.path(), 2);
    store.push(&f).unwrap();
    let key = SessionKey::of_path(&f);
    let _writer = Session::open(&key.path(), OpenMode::Write, pg_opts(&store)).unwrap();
    let grown = session_file(local.path(), 4);
    let e = store.push(&grown).unwrap_err().to_string();
    assert!(e.contains("open for writing by another process") && e.contains("pid"), "{e}");
}

/// Plants a one-line session row under any name, as a role with INSERT could.
fn plant(db: &arbor_test_support::pg::TestDb, dir: &str, name: &str) {
    let line = b"{\"type\":\"session\",\"version\":3,\"id\":\"p\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n".to_vec();
    let mut c = db.client();
    let id: i64 = c
        .query_one(
            "INSERT INTO arbor.sessions (dir, name, line_count, byte_size) VALUES ($1, $2, 1, $3) RETURNING id",
            &[&dir, &name, &(line.len() as i64)],
        )
        .unwrap()
        .get(0);
    c.execute("INSERT INTO arbor.lines (session, seq, off, bytes) VALUES ($1, 0, 0, $2)", &[&id, &line]).unwrap();
}

/// Every file and folder under `root`, relative.
fn tree(root: &Path) -> Vec<String> {
    let mut out = vec![];
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn names_planted_on_the_server_never_become_paths_outside_the_root() {
    let Some((db, store)) = store("pull_bad_names") else { return };
    let base = tempfile::tempdir().unwrap();
    let (root, outside) = (base.path().join("root"), base.path().join("outside"));
    fs::create_dir_all(root.join("deep")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    let bad = [
        ("..", "escaped.jsonl"),
        ("--p--", "../escaped.jsonl"),
        ("--p--", "../../outside/escaped.jsonl"),
        ("/", "escaped.jsonl"),
        (outside.to_str().unwrap(), "escaped.jsonl"),
        ("--p--", &outside.join("escaped.jsonl").display().to_string()),
        ("a/../..", "escaped.jsonl"),
        ("--p--", "sub/x.jsonl"),
        ("--p--", "x\u{1b}[2J.jsonl"),
    ];
    for (dir, name) in bad {
        plant(&db, dir, name);
    }
    plant(&db, "--p--", "good.jsonl");
    let mut refused = 0;
    for key in store.keys(None).unwrap() {
        match store.pull(&key, &root.join("deep")) {
            Ok((path, _)) => assert_eq!(path, root.join("deep/--p--/good.jsonl")),
            Err(e) => {
                refused += 1;
                let msg = e.to_string();
                assert!(matches!(e, PgError::BadName { .. }), "{msg}");
                assert!(msg.contains("not a safe name") && msg.lines().count() == 1, "{msg}");
                assert!(!msg.contains('\u{1b}'), "the name is escaped: {msg}");
            }
        }
    }
    assert_eq!(refused, bad.len());
    assert_eq!(tree(base.path()), ["outside", "root", "root/deep", "root/deep/--p--", "root/deep/--p--/good.jsonl"]);
}

#[test]
fn links_below_the_root_are_never_followed() {
    use std::os::unix::fs::symlink;
    let Some((db, store)) = store("pull_links") else { return };
    let base = tempfile::tempdir().unwrap();
    let (root, outside) = (base.path().join("root"), base.path().join("outside"));
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("victim.jsonl"), "precious\n").unwrap();
    // A folder that is a link out of the root, and a file that is one.
    symlink(&outside, root.join("--linked--")).unwrap();
    fs::create_dir(root.join("--real--")).unwrap();
    symlink(outside.join("victim.jsonl"), root.join("--real--/victim.jsonl")).unwrap();
    symlink(outside.join("new.jsonl"), root.join("--real--/dangling.jsonl")).unwrap();
    plant(&db, "--linked--", "victim.jsonl");
    plant(&db, "--linked--", "fresh.jsonl");
    plant(&db, "--real--", "victim.jsonl");
    plant(&db, "--real--", "dangling.jsonl");
    for key in store.keys(None).unwrap() {
        let e = store.pull(&key, &root).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("a symbolic link") && msg.contains("nothing was written"), "{key}: {msg}");
    }
    assert_eq!(fs::read_to_string(outside.join("victim.jsonl")).unwrap(), "precious\n");
    assert_eq!(tree(&outside), ["victim.jsonl"]);
}

#[test]
fn unsafe_names_never_enter_the_server() {
    use arbor_tree::Store;
    let Some((db, store)) = store("bad_names_enter") else { return };
    let long = format!("/d/{}.jsonl", "x".repeat(300));
    for path in ["/d/..", "/a/b/../x\u{7}.jsonl", "/d\n/x.jsonl", &long] {
        let e = store.rewrite(Path::new(path), b"{}\n").unwrap_err().to_string();
        assert!(e.contains("not a safe name"), "{path}: {e}");
        let e = store.lock(Path::new(path)).map(drop).unwrap_err().to_string();
        assert!(e.contains("not a safe name"), "{path}: {e}");
    }
    // A local file whose folder is the root has no folder name: it goes under the root, never elsewhere.
    let rows: i64 = db.client().query_one("SELECT count(*) FROM arbor.sessions", &[]).unwrap().get(0);
    assert_eq!(rows, 0);
}

#[test]
fn a_torn_last_line_is_never_sent_and_one_sent_long_ago_is_mended() {
    use arbor_pg::{Live, Pushed};
    use arbor_tree::Store;
    let Some((_db, store)) = store("torn_tail_push") else { return };
    let local = tempfile::tempdir().unwrap();
    let f = session_file(local.path(), 3);
    let full = fs::read(&f).unwrap();
    let cut = full.len() - 20;
    // A writer is half-way through its last line.
    fs::write(&f, &full[..cut]).unwrap();
    let Pushed { transfer, held_back, .. } = store.push_with(&f, Live::Refuse).unwrap();
    assert_eq!(
        (transfer, held_back),
        (Transfer::Created { lines: 3 }, Some((cut - complete(&full[..cut]).len()) as u64))
    );
    let key = SessionKey::of_path(&f);
    assert_eq!(store.read_session(&key).unwrap().unwrap(), complete(&full[..cut]));
    // It finishes the line: the next push sends it.
    fs::write(&f, &full).unwrap();
    assert_eq!(store.push(&f).unwrap().1, Transfer::Extended { lines: 1 });
    assert_eq!(store.read_session(&key).unwrap().unwrap(), full);

    // A session an older push left with a torn last line (wedged: every later push was 'diverged').
    let g = local.path().join("--work-proj--/2026-01-02T00-00-00-000Z_s2.jsonl");
    fs::write(&g, &full).unwrap();
    store.rewrite(&SessionKey::of_path(&g).path(), &full[..cut]).unwrap();
    let Pushed { transfer, .. } = store.push_with(&g, Live::Refuse).unwrap();
    assert_eq!(transfer, Transfer::Extended { lines: 1 });
    assert_eq!(store.read_session(&SessionKey::of_path(&g)).unwrap().unwrap(), full);
}

#[test]
fn live_writers_refuse_push_and_pull_unless_allowed() {
    use arbor_pg::Live;
    let Some((_db, store)) = store("live_writers") else { return };
    let local = tempfile::tempdir().unwrap();
    let f = session_file(local.path(), 2);
    store.push(&f).unwrap();
    let key = SessionKey::of_path(&f);
    // A writer on the server: a pull is refused, naming it; allowed, it copies what is committed.
    let mut writer = Session::open(&key.path(), OpenMode::Write, pg_opts(&store)).unwrap();
    writer.append_message(user("on the server")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let e = store.pull(&key, out.path()).unwrap_err().to_string();
    assert!(e.contains("is open for writing by another process (pid") && e.contains("--allow-live"), "{e}");
    assert!(!out.path().join(&key.dir).join(&key.name).exists());
    let (dest, t) = store.pull_with(&key, out.path(), Live::Allow).unwrap();
    assert_eq!(t, Transfer::Created { lines: 4 });
    assert_eq!(fs::read(&dest).unwrap(), store.read_session(&key).unwrap().unwrap());
    drop(writer);
    // A local writer of the file: a push is refused; allowed, it sends the complete lines.
    let file_opts = arbor_tree::SessionOptions {
        sessions_root: Some(out.path().to_owned()),
        ..arbor_test_support::deterministic_options()
    };
    let mut local_writer = Session::open(&dest, OpenMode::Write, file_opts).unwrap();
    local_writer.append_message(user("written here")).unwrap();
    let e = store.push(&dest).unwrap_err().to_string();
    assert!(e.contains("is open for writing by another process (pid") && e.contains("--allow-live"), "{e}");
    assert_eq!(store.push_with(&dest, Live::Allow).unwrap().transfer, Transfer::Extended { lines: 1 });
    drop(local_writer);
}
