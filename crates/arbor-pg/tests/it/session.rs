//! Every operation of a session works unchanged on the server, and leaves
//! the same bytes a file would hold.

use std::path::Path;

use arbor_tree::{OpenMode, Session, SessionOptions};

use crate::{assistant, pg_opts, server_bytes, store, user};

/// The same operations on any store: a new session, a model change, a
/// conversation, a branch with a summary, a label, a compaction, a durable
/// leaf move. Returns the session's path.
fn work(opts: SessionOptions) -> std::path::PathBuf {
    let mut s = Session::create("/work/proj", opts.clone()).unwrap();
    s.append_model_change("anthropic", "claude").unwrap();
    let u1 = s.append_message(user("first question")).unwrap();
    let a1 = s.append_message(assistant("first answer")).unwrap();
    s.append_message(user("second question")).unwrap();
    s.append_message(assistant("second answer")).unwrap();
    s.branch_with_summary(Some(&a1), "tried the second question", None, None).unwrap();
    s.append_label_change(&u1, Some("start")).unwrap();
    s.append_message(user("third question")).unwrap();
    let a3 = s.append_message(assistant("third answer")).unwrap();
    s.append_compaction("all of it", &a3, 1234, None, None).unwrap();
    s.branch(&u1).unwrap();
    s.persist_leaf().unwrap();
    let path = s.session_file().unwrap().to_owned();
    drop(s);
    // Reopened for writing: appended after what is there.
    let mut s = Session::open(&path, OpenMode::Write, opts).unwrap();
    s.append_session_info("named").unwrap();
    path
}

#[test]
fn a_session_on_the_server_holds_the_bytes_a_file_would() {
    let Some((_db, store)) = store("session_bytes") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file_opts =
        SessionOptions { sessions_root: Some(dir.path().to_owned()), ..arbor_test_support::deterministic_options() };
    let file = work(file_opts);
    let on_server = work(pg_opts(&store));
    assert_eq!(
        on_server.strip_prefix(arbor_pg::ROOT).unwrap(),
        file.strip_prefix(dir.path()).unwrap(),
        "named by cwd and id, as on disk"
    );
    let want = std::fs::read(&file).unwrap();
    assert_eq!(String::from_utf8(server_bytes(&store, &on_server)).unwrap(), String::from_utf8(want).unwrap());

    // Read back through the store: the same session.
    let a = Session::open(&file, OpenMode::ReadOnly, SessionOptions { index_dir: None, ..Default::default() }).unwrap();
    let b = Session::open(&on_server, OpenMode::ReadOnly, pg_opts(&store)).unwrap();
    assert_eq!(a.leaf_id(), b.leaf_id());
    assert_eq!(
        a.entries_json().map(Result::unwrap).map(|(_, j)| j.to_owned()).collect::<Vec<_>>(),
        b.entries_json().map(Result::unwrap).map(|(_, j)| j.to_owned()).collect::<Vec<_>>()
    );
    assert_eq!(b.session_name().unwrap(), Some("named"));
    assert_eq!(b.get_label(b.get_branch(None).unwrap()[1].id.as_str()).unwrap(), Some("start"));
    assert!(Path::new(&on_server).starts_with(arbor_pg::ROOT));
}

#[test]
fn positioned_reads_fetch_the_bytes_asked_for_and_refuse_a_replaced_session() {
    use arbor_tree::Store;
    use std::io::Read;
    let Some((_db, store)) = store("positioned_reads") else { return };
    // A session of a few hundred KB: lines of varied lengths, some over a block.
    let mut bytes = Vec::new();
    for i in 0..400usize {
        let pad = "x".repeat((i * 7919) % 90_000);
        bytes.extend_from_slice(format!("{{\"n\":{i},\"pad\":\"{pad}\"}}\n").as_bytes());
    }
    let path = Path::new("/--p--/big.jsonl");
    store.rewrite(path, &bytes).unwrap();
    let file = store.open_at(path).unwrap().unwrap();
    assert_eq!(file.len().unwrap(), bytes.len() as u64);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % m
    };
    for _ in 0..300 {
        let at = next(bytes.len() as u64 + 10);
        let mut buf = vec![0u8; next(600_000) as usize + 1];
        let n = file.read_at(&mut buf, at).unwrap();
        let end = (at as usize + buf.len()).min(bytes.len());
        let expect = &bytes[(at as usize).min(bytes.len())..end];
        assert_eq!(&buf[..n], expect, "at {at}, {} bytes", buf.len());
    }
    let mut all = Vec::new();
    store.read_from(path, 1000).unwrap().unwrap().read_to_end(&mut all).unwrap();
    assert_eq!(all, &bytes[1000..]);
    // Replaced whole while open: an error, never a mix of two versions.
    store.rewrite(path, &bytes).unwrap();
    let mut buf = vec![0u8; 10];
    let e = file.read_at(&mut buf, bytes.len() as u64 / 2).unwrap_err().to_string();
    assert!(e.contains("changed on the server while it was read"), "{e}");
}
