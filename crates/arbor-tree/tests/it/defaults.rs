//! A library default writes nowhere its caller did not name and reads no
//! environment: a read-only open of a session over 1 MiB (large enough to be
//! indexed) with `SessionOptions::default()`, in a process whose `HOME`,
//! `XDG_CACHE_HOME`, `ARBOR_CACHE_DIR`, `TMPDIR` and sessions variables all
//! name empty folders, leaves every one of them empty and nothing beside the
//! session. A new session for a cwd needs a root the caller names.

use std::fs;
use std::path::Path;
use std::process::Command;

use arbor_tree::{OpenMode, Session, SessionOptions, TreeError, MIN_INDEXED_BYTES};

/// Set in the child process: the session file it opens.
const CHILD: &str = "ARBOR_TEST_DEFAULTS_CHILD";

/// This test's name, as the test binary filters it.
const NAME: &str = "defaults::a_read_only_open_with_the_default_options_writes_nothing_anywhere";

/// A clean session of short entries, over 1 MiB.
fn big_session(path: &Path) {
    let mut s =
        String::from(r#"{"type":"session","version":3,"id":"big","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#);
    s.push('\n');
    let mut parent = "null".to_owned();
    let mut i = 0;
    while s.len() as u64 <= MIN_INDEXED_BYTES + (64 << 10) {
        let id = format!("{i:08x}");
        s.push_str(&format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"entry {i} of a long chain"}}}}"#
        ));
        s.push('\n');
        parent = format!("\"{id}\"");
        i += 1;
    }
    fs::write(path, s).unwrap();
}

/// The names under `dir`, recursively.
fn everything_under(dir: &Path) -> Vec<String> {
    let mut out = vec![];
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        out.push(p.display().to_string());
        if p.is_dir() {
            out.extend(everything_under(&p));
        }
    }
    out
}

#[test]
fn a_read_only_open_with_the_default_options_writes_nothing_anywhere() {
    if let Some(file) = std::env::var_os(CHILD) {
        let s = Session::open(Path::new(&file), OpenMode::ReadOnly, SessionOptions::default()).unwrap();
        let path = s.get_branch(None).unwrap();
        assert!(path.len() > 5_000, "{}", path.len());
        assert!(s.entry_json(&path[path.len() / 2].id).unwrap().is_some());
        // A session for a cwd needs a root the caller names.
        let e = Session::create("/w", SessionOptions::default()).unwrap_err();
        assert!(matches!(e, TreeError::NoSessionsRoot { .. }), "{e}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    fs::create_dir_all(&sessions).unwrap();
    let file = sessions.join("big.jsonl");
    big_session(&file);
    let names = ["home", "xdg-cache", "arbor-cache", "tmp", "pi-agent", "arbor-sessions"];
    for n in names {
        fs::create_dir_all(dir.path().join(n)).unwrap();
    }
    let at = |n: &str| dir.path().join(n);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD, &file)
        .env("HOME", at("home"))
        .env("XDG_CACHE_HOME", at("xdg-cache"))
        .env("ARBOR_CACHE_DIR", at("arbor-cache"))
        .env("TMPDIR", at("tmp"))
        .env("PI_CODING_AGENT_DIR", at("pi-agent"))
        .env("ARBOR_SESSIONS_DIR", at("arbor-sessions"))
        .env_remove("ARBOR_NO_INDEX")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the child ran the test: {text}");
    for n in names {
        assert_eq!(everything_under(&at(n)), Vec::<String>::new(), "{n}");
    }
    assert_eq!(everything_under(&sessions), [file.display().to_string()]);
}
