//! `arbor context --json` copies messages from the file: its output parses to
//! the decoded context, with and without the index cache, at any leaf.

use std::io::Write;
use std::process::Command;

use arbor_tree::{OpenMode, Session, SessionOptions};
use serde_json::Value;

use crate::json;

/// A session of more than 1 MiB (so that the index is cached) and
/// more than one output batch, with entries the copy must not trust (a file
/// with a malformed entry gets no index: those are tested in arbor-context's `json.rs`).
fn big_session(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("big.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(f, r#"{{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}}"#)
        .unwrap();
    let pad = "x".repeat(400);
    for n in 0..4000usize {
        let parent = if n == 0 { "null".to_owned() } else { format!("\"e{}\"", n - 1) };
        let base = format!(r#""id":"e{n}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z""#);
        let line = match n % 50 {
            7 => format!(
                r#"{{"type":"message",{base},"message":{{"role":"user","content":"a"}},"message":{{"role":"user","content":"b{n}"}}}}"#
            ),
            11 => format!(r#"{{"type":"message",{base},"message":{{"role":"user","content":"d","content":"e{n}"}}}}"#),
            17 => format!(
                r#"{{"type":"message",{base},"message":{{"role":"user","content":{{"$serde_json::private::RawValue":"[{n}]"}}}}}}"#
            ),
            23 => format!(r#"{{"type":"custom_message","customType":"x","content":"c{n}","display":false,{base}}}"#),
            29 => format!(r#"{{"type":"thinking_level_change",{base},"thinkingLevel":"high"}}"#),
            31 => format!(
                r#"{{"type":"message",{base},"message":{{"role":"assistant","provider":"p","model":"m{n}","content":[{{"type":"text","text":"{pad}"}}],"usage":{{"cost":1.50}}}}}}"#
            ),
            _ => format!(
                r#"{{"type":"message",{base},"message":{{"role":"user","content":"m{n} {pad} caf\u00e9 \"q\"","timestamp":{n}.0}}}}"#
            ),
        };
        writeln!(f, "{line}").unwrap();
    }
    f.flush().unwrap();
    path
}

fn context(path: &std::path::Path, cache: &std::path::Path, leaf: Option<&str>, no_index: bool) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arbor"));
    cmd.args(["context", path.to_str().unwrap(), "--json"]).env("ARBOR_CACHE_DIR", cache);
    if let Some(l) = leaf {
        cmd.args(["--leaf", l]);
    }
    if no_index {
        cmd.env("ARBOR_NO_INDEX", "1");
    } else {
        cmd.env_remove("ARBOR_NO_INDEX");
    }
    json(&cmd.output().unwrap())
}

fn decoded(path: &std::path::Path, leaf: Option<&str>) -> Value {
    let opts = SessionOptions { index_dir: None, ..SessionOptions::default() };
    let mut s = Session::open(path, OpenMode::ReadOnly, opts).unwrap();
    if let Some(l) = leaf {
        s.branch(l).unwrap();
    }
    serde_json::to_value(arbor_context::session_context(&s).unwrap()).unwrap()
}

#[test]
fn context_json_parses_to_the_decoded_context_with_and_without_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let path = big_session(dir.path());
    let indexes = || std::fs::read_dir(cache.path().join("index")).map_or(0, |d| d.count());
    for leaf in [None, Some("e2345"), Some("e31")] {
        let want = decoded(&path, leaf);
        assert_eq!(context(&path, cache.path(), leaf, true), want, "no index, leaf {leaf:?}");
        // The first run writes the index (in the cache directory), the second reads it.
        assert_eq!(context(&path, cache.path(), leaf, false), want, "leaf {leaf:?}");
        assert_eq!(indexes(), 1);
        assert_eq!(context(&path, cache.path(), leaf, false), want, "with the index, leaf {leaf:?}");
    }
    // Nothing beside the session.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let whole = decoded(&path, None);
    assert!(whole["messages"].as_array().unwrap().len() > 3500);
    assert_eq!(whole["thinkingLevel"], "high");
    assert_eq!(whole["model"]["modelId"], "m3981");
}

/// `arbor label` in a process of its own, through the index cache, with counter ids.
fn label(path: &std::path::Path, cache: &std::path::Path, id: &str, text: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["label", path.to_str().unwrap(), id, text])
        .env("ARBOR_CACHE_DIR", cache)
        .env("ARBOR_IDS", "counter")
        .env_remove("ARBOR_NO_INDEX")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn appends_by_processes_through_the_index_and_another_writer_keep_the_context_exact() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let path = big_session(dir.path());
    // The first run writes the index.
    assert_eq!(context(&path, cache.path(), None, false), decoded(&path, None));
    // Each process's counter starts again at 00000001: the ids taken before are skipped.
    assert!(label(&path, cache.path(), "e100", "one").ends_with("(entry 00000001)\n"));
    // Another writer appends between two of ours.
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(
        f,
        r#"{{"type":"message","id":"o1","parentId":"00000001","timestamp":"2025-01-02T00:00:00.000Z","message":{{"role":"user","content":"theirs"}}}}"#
    )
    .unwrap();
    drop(f);
    assert!(label(&path, cache.path(), "e2345", "two").ends_with("(entry 00000002)\n"));
    assert!(label(&path, cache.path(), "o1", "three").ends_with("(entry 00000003)\n"));
    for leaf in [None, Some("o1"), Some("e2345")] {
        let want = decoded(&path, leaf);
        assert_eq!(context(&path, cache.path(), leaf, false), want, "with the index, leaf {leaf:?}");
        assert_eq!(context(&path, cache.path(), leaf, true), want, "no index, leaf {leaf:?}");
    }
    let s = Session::open(&path, OpenMode::ReadOnly, SessionOptions { index_dir: None, ..SessionOptions::default() })
        .unwrap();
    let labels: Vec<(String, String)> = s.labels().unwrap().map(|(t, l)| (t.to_owned(), l.to_owned())).collect();
    assert_eq!(labels.len(), 3, "{labels:?}");
    assert_eq!(s.leaf_id(), Some("00000003"));
    assert_eq!(s.get_entry("o1").unwrap().unwrap().parent_id.as_deref(), Some("00000001"));
}
