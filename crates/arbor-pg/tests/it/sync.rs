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

#[test]
fn push_then_pull_is_byte_identical_on_every_fixture_and_idempotent() {
    let Some((_db, store)) = store("push_pull_fixtures") else { return };
    let files = jsonl_under(&fixtures());
    assert!(files.len() > 50, "{} fixtures", files.len());
    for f in &files {
        let (key, t) = store.push(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(key, SessionKey::of_path(f));
        let n = fs::read(f).unwrap().split_inclusive(|&b| b == b'\n').count() as u64;
        assert_eq!(t, Transfer::Created { lines: n }, "{}", f.display());
    }
    let out = tempfile::tempdir().unwrap();
    for f in &files {
        let key = SessionKey::of_path(f);
        let (dest, t) = store.pull(&key, out.path()).unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(dest, pulled(out.path(), f));
        assert!(matches!(t, Transfer::Created { .. }), "{key}: {t:?}");
        assert_eq!(fs::read(&dest).unwrap(), fs::read(f).unwrap(), "{} came back changed", f.display());
    }
    // Again: nothing to do either way.
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
