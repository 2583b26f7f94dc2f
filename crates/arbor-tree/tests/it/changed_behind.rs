//! A file changed behind an open session (issue 37, item 3): a session's
//! lines are read from the file long after it was opened, so every public
//! read that decodes a line either answers as the file it opened says, or
//! fails with [`TreeError::Changed`] (one line naming the file). Never a
//! placeholder, never the changed bytes taken for the session's.
//!
//! Each case opens a session (read from the file, or through the index
//! cache), changes the file behind it, and calls one read of [`READS`] on
//! it: (a) lines appended and (d) the file replaced by another (a new
//! inode) leave the session's bytes as they were, so every read answers as
//! before; (b) a line rewritten in place with the same length (a message's
//! text, a `parentId`) and (c) the file truncated fail every read that
//! reads a line, and leave the reads that answer from what the open read
//! (ids, types, positions) as they were.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use arbor_tree::check::tree_findings;
use arbor_tree::{FileStore, OpenMode, Position, Session, SessionOptions, TreeError};

/// A read of an open session, its answer written out to compare.
type Read = fn(&Session) -> Result<String, TreeError>;

/// The entry whose text is rewritten, on the leaf's path.
const EDITED: &str = "e150";

/// Every public read of a session, and whether it reads lines of the file
/// (the others answer from what the open read: ids, types, parents).
const READS: &[(&str, bool, Read)] = &[
    ("entries", true, |s| Ok(format!("{:?}", s.entries().collect::<Result<Vec<_>, _>>()?))),
    ("entries_json", true, |s| Ok(format!("{:?}", s.entries_json().collect::<Result<Vec<_>, _>>()?))),
    ("leaf_entry", true, |s| Ok(format!("{:?}", s.leaf_entry()?))),
    ("get_entry", true, |s| Ok(format!("{:?}", s.get_entry(EDITED)?))),
    ("entry_json", true, |s| Ok(format!("{:?}", s.entry_json(EDITED)?))),
    ("get_children", true, |s| Ok(format!("{:?}", s.get_children("e149")?))),
    ("get_label", true, |s| Ok(format!("{:?}", s.label("e3").map(|l| l.map(|l| l.text.as_str()))?))),
    ("label", true, |s| Ok(format!("{:?}", s.label("e3")?))),
    ("labels", true, |s| Ok(format!("{:?}", s.labels()?.collect::<Vec<_>>()))),
    ("get_branch", true, |s| Ok(format!("{:?}", s.get_branch(None)?))),
    ("session_name", true, |s| Ok(format!("{:?}", s.session_name()?))),
    ("user_messages_for_forking", true, |s| Ok(format!("{:?}", s.user_messages_for_forking()?))),
    ("entry_at", true, |s| Ok(format!("{:?}", s.entry_at(edited(s))?))),
    ("decode_at", true, |s| Ok(format!("{:?}", s.decode_at(edited(s))?))),
    ("decode_many", true, |s| Ok(format!("{:?}", s.decode_many(&all(s))?))),
    ("map_json_many", true, |s| Ok(format!("{:?}", s.map_json_many(&all(s), |_, j| j.to_owned())?))),
    ("map_lines_many", true, |s| Ok(format!("{:?}", s.map_lines_many(&all(s), |_, j| j.to_owned())?))),
    ("map_id_json_many", true, |s| Ok(format!("{:?}", s.map_id_json_many(&all(s), |_, id, j| format!("{id} {j}"))?))),
    ("decode_shares", true, |s| Ok(format!("{:?}", s.decode_shares(&all(s), |_, entries| entries)?))),
    ("json_at", true, |s| Ok(format!("{:?}", s.json_at(edited(s))?))),
    ("with_line_at", true, |s| Ok(format!("{:?}", s.with_line_at(edited(s), str::to_owned)?))),
    ("with_json_at", true, |s| Ok(format!("{:?}", s.with_json_at(edited(s), str::to_owned)?))),
    ("get_tree.write_json", true, |s| {
        let mut out = vec![];
        s.get_tree().write_json(&mut out).map_err(tree_error)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }),
    ("get_tree.node", true, |s| {
        let tree = s.get_tree();
        let nodes: Result<Vec<_>, _> = s.positions().map(|p| tree.node(p)).collect();
        Ok(format!("{:?}", nodes?))
    }),
    ("get_tree.roots", true, |s| Ok(format!("{:?}", s.get_tree().roots().collect::<Result<Vec<_>, _>>()?))),
    ("tree_findings", true, |s| Ok(format!("{:?}", tree_findings(s)?))),
    // What the open read answers, without a line.
    ("branch_positions", false, |s| Ok(format!("{:?}", s.branch_positions(None)))),
    ("position_of", false, |s| Ok(format!("{:?}", s.position_of(EDITED)))),
    ("heads", false, |s| {
        let heads: Vec<_> =
            s.positions().map(|p| (s.id_at(p).map(|i| i.to_string()), s.head_at(p), s.parent_at(p))).collect();
        Ok(format!("{heads:?} {:?} {}", s.leaf_id(), s.len()))
    }),
    ("get_tree.shape", false, |s| {
        let tree = s.get_tree();
        Ok(format!("{:?}", s.positions().map(|p| tree.child_positions(p).to_vec()).collect::<Vec<_>>()))
    }),
];

fn edited(s: &Session) -> Position {
    s.position_of(EDITED).unwrap()
}

fn all(s: &Session) -> Vec<Position> {
    s.positions().collect()
}

/// The [`TreeError`] a tree's JSON writer failed with.
fn tree_error(e: std::io::Error) -> TreeError {
    match e.into_inner().map(|inner| inner.downcast::<TreeError>()) {
        Some(Ok(e)) => *e,
        other => panic!("not a TreeError: {other:?}"),
    }
}

/// How the session is opened.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    /// Read from the file (no index).
    Scanned,
    /// Through the index in the cache (written by an open before).
    Indexed,
}

/// What is done to the file behind the open session.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Change {
    /// (a) A whole line appended.
    Append,
    /// (b) A message's text rewritten in place, the same length.
    RewriteText,
    /// (b) A `parentId` rewritten in place, the same length.
    RewriteParent,
    /// (c) Cut after line 200.
    Truncate,
    /// (d) Another file (the text rewritten) renamed over it: a new inode.
    Replace,
}

const CHANGES: [Change; 5] =
    [Change::Append, Change::RewriteText, Change::RewriteParent, Change::Truncate, Change::Replace];

/// 300 entries (branches, labels on `e3`) and a session name.
fn session_text() -> String {
    let d = tempfile::tempdir().unwrap();
    let mut text = arbor_test_support::write_big_session(&d.path().join("s.jsonl"), 300, 40);
    text.push_str(concat!(
        r#"{"type":"session_info","id":"n1","parentId":"e299","timestamp":"2026-01-01T00:02:00.000Z","name":"the name"}"#,
        "\n"
    ));
    text
}

fn opts(cache: &Path, open: Open) -> SessionOptions {
    let opts = SessionOptions::default().with_store(FileStore);
    match open {
        Open::Scanned => opts,
        Open::Indexed => SessionOptions { index_min_bytes: 0, ..opts.with_index_dir(Some(cache.to_owned())) },
    }
}

/// Writes `text` to `p` and opens it as `open` says (through a fresh index for `Indexed`).
fn open_fresh(p: &Path, text: &str, cache: &Path, open: Open) -> Session {
    fs::write(p, text).unwrap();
    if open == Open::Indexed {
        drop(Session::open(p, OpenMode::ReadOnly, opts(cache, open)).unwrap());
    }
    let s = Session::open(p, OpenMode::ReadOnly, opts(cache, open)).unwrap();
    assert_eq!(s.opened_from_index(), open == Open::Indexed, "{open:?}");
    s
}

/// `text` with `from` (the first time it is found) replaced by `to` of the same length.
fn rewritten(text: &str, from: &str, to: &str) -> String {
    assert_eq!(from.len(), to.len());
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

fn change(p: &Path, text: &str, change: Change) {
    match change {
        Change::Append => {
            let mut f = fs::OpenOptions::new().append(true).open(p).unwrap();
            f.write_all(
                concat!(
                    r#"{"type":"message","id":"z1","parentId":"n1","timestamp":"2026-01-01T00:03:00.000Z","#,
                    r#""message":{"role":"user","content":"after"}}"#,
                    "\n"
                )
                .as_bytes(),
            )
            .unwrap();
        }
        Change::RewriteText => {
            let edited = rewritten(text, r#""content":"m150 "#, r#""content":"M150 "#);
            fs::OpenOptions::new().write(true).open(p).unwrap().write_all(edited.as_bytes()).unwrap();
        }
        Change::RewriteParent => {
            let edited = rewritten(text, r#""id":"e160","parentId":"e159""#, r#""id":"e160","parentId":"e149""#);
            fs::OpenOptions::new().write(true).open(p).unwrap().write_all(edited.as_bytes()).unwrap();
        }
        Change::Truncate => {
            let cut: usize = text.lines().take(201).map(|l| l.len() + 1).sum();
            fs::OpenOptions::new().write(true).open(p).unwrap().set_len(cut as u64).unwrap();
        }
        Change::Replace => {
            let other = p.with_extension("new");
            fs::write(&other, rewritten(text, r#""content":"m150 "#, r#""content":"M150 "#)).unwrap();
            fs::rename(&other, p).unwrap();
        }
    }
}

/// True for the typed error of a changed file: one line naming the file.
fn is_changed(e: &TreeError, p: &Path) -> bool {
    let said = e.to_string();
    matches!(e, TreeError::Changed { path, .. } if path.file_name() == p.file_name())
        && !said.contains('\n')
        && said.contains(&p.display().to_string())
}

#[test]
fn every_read_answers_as_the_file_it_opened_or_fails_with_the_typed_error() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p: PathBuf = d.path().join("s.jsonl");
    let text = session_text();
    let mut wrong = vec![];
    for open in [Open::Scanned, Open::Indexed] {
        let fresh = open_fresh(&p, &text, cache.path(), open);
        let before: Vec<String> =
            READS.iter().map(|(name, _, read)| read(&fresh).unwrap_or_else(|e| panic!("{name}: {e}"))).collect();
        drop(fresh);
        for change_made in CHANGES {
            let kept = matches!(change_made, Change::Append | Change::Replace);
            let mut failed = 0;
            for ((name, reads_lines, read), want) in READS.iter().zip(&before) {
                // Each read on a session of its own: nothing read before it is held.
                let s = open_fresh(&p, &text, cache.path(), open);
                change(&p, &text, change_made);
                let case = format!("{open:?} {change_made:?} {name}");
                match read(&s) {
                    Ok(got) if got == *want => {}
                    Ok(_) => wrong.push(format!("{case}: answered otherwise than the file it opened")),
                    Err(e) if !kept && *reads_lines && is_changed(&e, &p) => failed += 1,
                    Err(e) => wrong.push(format!("{case}: {e}")),
                }
            }
            // The change was noticed where it matters.
            if !kept && failed == 0 {
                wrong.push(format!("{open:?} {change_made:?}: no read noticed the change"));
            }
        }
    }
    assert!(wrong.is_empty(), "{} wrong:\n{}", wrong.len(), wrong.join("\n"));
}

/// The one place a reader takes a change in ([`Session::reading`]): a read
/// that finds the file changed reads it again and answers from the file as
/// it is now, the same as a session opened after the change; and
/// [`Session::refresh`] picks up lines appended.
#[test]
fn reading_again_answers_from_the_file_as_it_is_now() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p: PathBuf = d.path().join("s.jsonl");
    let text = session_text();
    let branch = |s: &Session| -> Result<Vec<String>, TreeError> {
        Ok(s.get_branch(None)?.iter().map(|e| format!("{e:?}")).collect())
    };
    for open in [Open::Scanned, Open::Indexed] {
        for change_made in CHANGES {
            let mut s = open_fresh(&p, &text, cache.path(), open);
            change(&p, &text, change_made);
            let case = format!("{open:?} {change_made:?}");
            let got = s.reading(branch).unwrap_or_else(|e| panic!("{case}: {e}"));
            let now = Session::open(&p, OpenMode::ReadOnly, opts(cache.path(), Open::Scanned)).unwrap();
            match change_made {
                // The bytes the session read are still there: its answer stands.
                Change::Append | Change::Replace => {
                    let before = open_fresh_answer(&text, open, branch);
                    assert_eq!(got, before, "{case}");
                    assert!(s.refresh().unwrap(), "{case}: the change is picked up");
                    assert_eq!(branch(&s).unwrap(), branch(&now).unwrap(), "{case}: refreshed");
                }
                _ => {
                    assert_eq!(got, branch(&now).unwrap(), "{case}");
                    let said = s.notices().join("\n");
                    assert!(said.contains("changed since it was opened"), "{case}: {said}");
                }
            }
        }
    }
}

/// What `read` answers on a session of `text` opened as `open` says, unchanged.
fn open_fresh_answer<T>(text: &str, open: Open, read: impl Fn(&Session) -> Result<T, TreeError>) -> T {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let s = open_fresh(&d.path().join("s.jsonl"), text, cache.path(), open);
    read(&s).unwrap()
}

/// This session's own appends are not a change: it reads on.
#[test]
fn a_sessions_own_appends_are_not_a_change() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    fs::write(&p, session_text()).unwrap();
    let mut s = Session::open(&p, OpenMode::Write, SessionOptions::default().with_store(FileStore)).unwrap();
    s.append_message(serde_json::json!({"role": "user", "content": "more", "timestamp": 1})).unwrap();
    let again = Session::open(&p, OpenMode::ReadOnly, SessionOptions::default().with_store(FileStore)).unwrap();
    let texts = |s: &Session| -> Vec<String> { s.entries_json().map(|e| e.unwrap().1.to_owned()).collect() };
    assert_eq!(texts(&s), texts(&again));
    assert!(s.get_entry(EDITED).unwrap().is_some());
    assert!(s.notices().is_empty(), "{:?}", s.notices());
}

/// A writer whose first append moves a torn last line aside (the file is
/// cut, then goes on) reads on: the cut was its own.
#[test]
fn a_writer_that_moves_a_torn_tail_aside_reads_on() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    let whole = session_text();
    fs::write(&p, format!("{whole}{}", r#"{"type":"message","id":"t1","parentId":"n1","timest"#)).unwrap();
    let mut s = Session::open(&p, OpenMode::Write, SessionOptions::default().with_store(FileStore)).unwrap();
    s.append_message(serde_json::json!({"role": "user", "content": "more", "timestamp": 1})).unwrap();
    assert!(s.notices().iter().any(|n| n.contains("torn")), "{:?}", s.notices());
    let again = Session::open(&p, OpenMode::ReadOnly, SessionOptions::default().with_store(FileStore)).unwrap();
    let texts = |s: &Session| -> Vec<String> { s.entries_json().map(|e| e.unwrap().1.to_owned()).collect() };
    assert_eq!(texts(&s), texts(&again));
}

/// A read of a session with a long line ([`arbor_log::long::LONG_LINE`]),
/// through the paths that never hold it: its answer, or what it wrote.
type LongRead = fn(&mut Session, Position) -> Result<String, TreeError>;

/// Every read that takes a long line in pieces (a preview, a copy a block
/// at a time) rather than whole.
const LONG_READS: &[(&str, LongRead)] = &[
    ("decode_previews", |s, _| Ok(format!("{:?}", s.decode_previews(&all(s))?))),
    ("read_previews.decode_many", |s, _| {
        s.read_previews(true);
        Ok(format!("{:?}", s.decode_many(&all(s))?))
    }),
    ("read_previews.map_json_many", |s, _| {
        s.read_previews(true);
        Ok(format!("{:?}", s.map_json_many(&all(s), |_, j| j.len())?))
    }),
    ("read_previews.decode_at", |s, p| {
        s.read_previews(true);
        Ok(format!("{:?}", s.decode_at(p)?.map(|e| e.id)))
    }),
    ("write_json_at", |s, p| written(|out| s.write_json_at(p, out))),
    ("write_line_at", |s, p| written(|out| s.write_line_at(p, out))),
    ("write_long_part_at", |s, p| {
        written(|out| s.write_long_part_at(p, |t| Some(0..t.len().min(8)), |_| false, out).map(drop))
    }),
    ("long_line_at.decode", |s, p| {
        let line = s.long_line_at(p)?.expect("a long line");
        let text = line.texts()[0].clone();
        written(|out| line.decode(&text, &mut |chunk| out.write_all(chunk.as_bytes())))
    }),
    // Streamed: what comes before the long line's entry is out already.
    ("get_tree.write_json", |s, _| {
        let mut out = vec![];
        s.get_tree().write_json(&mut out).map_err(tree_error)?;
        Ok(String::from_utf8_lossy(&out).chars().take(64).collect())
    }),
];

/// What `write` wrote, or the [`TreeError`] it failed with; a write that
/// fails has written nothing.
fn written(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result<String, TreeError> {
    let mut out = vec![];
    match write(&mut out) {
        Ok(()) => Ok(format!("{} bytes: {}", out.len(), String::from_utf8_lossy(&out[..out.len().min(64)]))),
        Err(e) => {
            assert!(out.is_empty(), "{} bytes written before the error {e}", out.len());
            Err(tree_error(e))
        }
    }
}

/// A long line read without holding it (a preview, a block-at-a-time copy)
/// is checked like any other: rewritten in place or cut behind the session,
/// every such read fails with [`TreeError::Changed`]; lines appended change
/// no answer.
#[test]
fn a_long_line_changed_behind_the_session_fails_with_the_typed_error() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p: PathBuf = d.path().join("s.jsonl");
    let long = "x".repeat(arbor_log::long::LONG_LINE + (1 << 20));
    let text = format!(
        concat!(
            r#"{{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}}"#,
            "\n",
            r#"{{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","#,
            r#""message":{{"role":"user","content":"hi","timestamp":1}}}}"#,
            "\n",
            r#"{{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","#,
            r#""message":{{"role":"assistant","content":[{{"type":"text","text":"{long}"}}],"model":"m","timestamp":2}}}}"#,
            "\n",
        ),
        long = long
    );
    let mut wrong = vec![];
    for open in [Open::Scanned, Open::Indexed] {
        let before: Vec<String> = LONG_READS
            .iter()
            .map(|(name, read)| {
                let mut s = open_fresh(&p, &text, cache.path(), open);
                let at = s.position_of("a1").unwrap();
                assert!(s.is_long_at(at));
                read(&mut s, at).unwrap_or_else(|e| panic!("{name}: {e}"))
            })
            .collect();
        for change_made in [Change::Append, Change::RewriteText, Change::Truncate] {
            for ((name, read), want) in LONG_READS.iter().zip(&before) {
                let mut s = open_fresh(&p, &text, cache.path(), open);
                let at = s.position_of("a1").unwrap();
                match change_made {
                    Change::Append => change(&p, &text, Change::Append),
                    // A byte in the middle of the long text, the same length.
                    Change::RewriteText => {
                        let mut f = fs::OpenOptions::new().write(true).open(&p).unwrap();
                        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(text.len() as u64 - (2 << 20))).unwrap();
                        f.write_all(b"y").unwrap();
                    }
                    _ => fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(text.len() as u64 - 10).unwrap(),
                }
                let case = format!("{open:?} {change_made:?} {name}");
                match (change_made, read(&mut s, at)) {
                    (Change::Append, Ok(got)) if got == *want => {}
                    (Change::Append, other) => wrong.push(format!("{case}: {other:?}")),
                    (_, Err(e)) if is_changed(&e, &p) => {}
                    (_, Err(e)) => wrong.push(format!("{case}: {e}")),
                    (_, Ok(_)) => wrong.push(format!("{case}: answered")),
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{} wrong:\n{}", wrong.len(), wrong.join("\n"));
}

/// The long strings of a long line stream their whole text, each found from
/// the entry decoded as a preview by its pointer and preview text; a line
/// changed between the reduction and the decoding fails typed.
#[test]
fn a_long_lines_strings_stream_their_whole_text() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p: PathBuf = d.path().join("s.jsonl");
    // Escapes and characters of every size astride the 1 MiB blocks.
    let unit = r#"ab\u00e9\ud83d\ude00 é€😀\n\"x"#;
    let long = unit.repeat(arbor_log::long::LONG_LINE / unit.len() + (1 << 17));
    let whole: String = serde_json::from_str(&format!("\"{long}\"")).unwrap();
    let text = format!(
        concat!(
            r#"{{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}}"#,
            "\n",
            r#"{{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:02.000Z","#,
            r#""message":{{"role":"toolResult","content":[{{"type":"text","text":"{long}"}}],"timestamp":2}}}}"#,
            "\n",
        ),
        long = long
    );
    for open in [Open::Scanned, Open::Indexed] {
        let s = open_fresh(&p, &text, cache.path(), open);
        let at = s.position_of("a1").unwrap();
        let record = s.decode_previews(&[at]).unwrap().pop().flatten().unwrap().to_value();
        let ptr = "/message/content/0/text";
        let preview = record.pointer(ptr).and_then(|v| v.as_str()).unwrap();
        assert!(preview.len() < 8192 && whole.starts_with(preview));
        let line = s.long_line_at(at).unwrap().expect("a long line");
        assert!(line.text_at(ptr, "not the preview").is_none());
        assert!(line.text_at("/message/role", preview).is_none());
        let t = line.text_at(ptr, preview).expect("the preview's string").clone();
        let mut got = String::new();
        line.decode(&t, &mut |c| {
            got.push_str(c);
            Ok(())
        })
        .unwrap();
        assert!(got == whole, "{open:?}: {} bytes decoded of {}", got.len(), whole.len());
        // The same length, a byte changed in the second block of the text.
        let mut f = fs::OpenOptions::new().write(true).open(&p).unwrap();
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(text.len() as u64 - (5 << 20))).unwrap();
        f.write_all(b"y").unwrap();
        let e = line.decode(&t, &mut |_| Ok(())).unwrap_err();
        let e = tree_error(e);
        assert!(is_changed(&e, &p), "{open:?}: {e}");
    }
}
