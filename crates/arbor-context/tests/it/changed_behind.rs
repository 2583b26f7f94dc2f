//! The context builder over a file changed behind an open session (issue
//! 37, item 3; `arbor-tree`'s `changed_behind` test for the session's own
//! reads): every way to build or write a context answers as the file the
//! session opened says, or fails with `TreeError::Changed` (one line naming
//! the file); a transcript may instead write nothing and say the lines
//! moved (`Checked::Moved`). Lines appended and a file replaced by another
//! leave the answer as it was; a line rewritten in place or a truncation
//! fail it.

use std::fs;
use std::io::{self, Write as _};
use std::path::Path;

use arbor_context::render::write_plan_transcript;
use arbor_context::{
    context_of_plan, for_each_plan_message, plan_branch_context, plan_session_context, session_context,
    write_context_json, write_plan_json, write_plan_llm_json, Checked,
};
use arbor_tree::{FileStore, OpenMode, Session, SessionOptions, TreeError};

/// A way to build the context, its answer written out to compare.
type Build = fn(&Session) -> Result<String, TreeError>;

/// The answer of a transcript that wrote nothing because a line moved.
const MOVED: &str = "(moved)";

const BUILDS: &[(&str, Build)] = &[
    ("session_context", |s| Ok(format!("{:?}", session_context(s)?))),
    ("plan_session_context", |s| Ok(format!("{:?}", plan_session_context(s)?))),
    ("context_of_plan", |s| Ok(format!("{:?}", context_of_plan(s, plan_session_context(s)?)?))),
    ("plan_branch_context", |s| Ok(format!("{:?}", plan_branch_context(s, s.branch_positions(Some("e150")))?))),
    ("for_each_plan_message", |s| {
        let mut all = vec![];
        for_each_plan_message(s, &plan_session_context(s)?, |m| {
            all.push(m.clone());
            Ok::<(), TreeError>(())
        })?;
        Ok(format!("{all:?}"))
    }),
    ("write_context_json", |s| written(|out| write_context_json(s, out))),
    ("write_plan_json", |s| {
        let plan = plan_session_context(s)?;
        written(|out| write_plan_json(s, &plan, out))
    }),
    ("write_plan_llm_json", |s| {
        let plan = plan_session_context(s)?;
        written(|out| write_plan_llm_json(s, &plan, out))
    }),
    ("write_plan_transcript", |s| {
        let plan = plan_session_context(s)?;
        let mut checked = Checked::Written;
        let text = written(|out| {
            checked = write_plan_transcript(s, &plan, out, false)?;
            Ok(())
        })?;
        Ok(if checked == Checked::Moved {
            assert!(text.is_empty(), "moved, yet written: {text}");
            MOVED.into()
        } else {
            text
        })
    }),
];

/// What `write` writes, or the `TreeError` it failed with.
fn written(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> Result<String, TreeError> {
    let mut out = vec![];
    match write(&mut out) {
        Ok(()) => Ok(String::from_utf8_lossy(&out).into_owned()),
        Err(e) => match e.into_inner().map(|inner| inner.downcast::<TreeError>()) {
            Some(Ok(e)) => Err(*e),
            other => panic!("not a TreeError: {other:?}"),
        },
    }
}

fn opts(cache: &Path, indexed: bool) -> SessionOptions {
    let opts = SessionOptions::default().with_store(FileStore);
    match indexed {
        false => opts,
        true => SessionOptions { index_min_bytes: 0, ..opts.with_index_dir(Some(cache.to_owned())) },
    }
}

fn open_fresh(p: &Path, text: &str, cache: &Path, indexed: bool) -> Session {
    fs::write(p, text).unwrap();
    if indexed {
        drop(Session::open(p, OpenMode::ReadOnly, opts(cache, indexed)).unwrap());
    }
    let s = Session::open(p, OpenMode::ReadOnly, opts(cache, indexed)).unwrap();
    assert_eq!(s.opened_from_index(), indexed);
    s
}

/// Appends a line, rewrites a message's text or a `parentId` in place,
/// truncates, or renames another file over it.
fn change(p: &Path, text: &str, how: &str) {
    let in_place = |from: &str, to: &str| {
        assert!(text.contains(from) && from.len() == to.len(), "{from}");
        let edited = text.replacen(from, to, 1);
        fs::OpenOptions::new().write(true).open(p).unwrap().write_all(edited.as_bytes()).unwrap();
    };
    match how {
        "append" => fs::OpenOptions::new()
            .append(true)
            .open(p)
            .unwrap()
            .write_all(b"{\"type\":\"message\",\"id\":\"z1\",\"parentId\":\"e299\",\"timestamp\":\"2026-01-01T00:03:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"after\"}}\n")
            .unwrap(),
        "rewrite text" => in_place(r#""content":"m150 "#, r#""content":"M150 "#),
        "rewrite parent" => in_place(r#""id":"e160","parentId":"e159""#, r#""id":"e160","parentId":"e149""#),
        "truncate" => {
            let cut: usize = text.lines().take(201).map(|l| l.len() + 1).sum();
            fs::OpenOptions::new().write(true).open(p).unwrap().set_len(cut as u64).unwrap();
        }
        "replace" => {
            let other = p.with_extension("new");
            fs::write(&other, text.replacen(r#""content":"m150 "#, r#""content":"M150 "#, 1)).unwrap();
            fs::rename(&other, p).unwrap();
        }
        _ => unreachable!("{how}"),
    }
}

#[test]
fn every_context_builder_answers_as_the_file_it_opened_or_fails_with_the_typed_error() {
    let d = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    let text = arbor_test_support::write_big_session(&d.path().join("made.jsonl"), 300, 40);
    let mut wrong = vec![];
    for indexed in [false, true] {
        let fresh = open_fresh(&p, &text, cache.path(), indexed);
        let before: Vec<String> =
            BUILDS.iter().map(|(name, b)| b(&fresh).unwrap_or_else(|e| panic!("{name}: {e}"))).collect();
        drop(fresh);
        for how in ["append", "rewrite text", "rewrite parent", "truncate", "replace"] {
            let kept = matches!(how, "append" | "replace");
            let mut refused = 0;
            for ((name, build), want) in BUILDS.iter().zip(&before) {
                let s = open_fresh(&p, &text, cache.path(), indexed);
                change(&p, &text, how);
                let case = format!("indexed {indexed}, {how}: {name}");
                match build(&s) {
                    Ok(got) if got == *want => {}
                    Ok(got) if !kept && got == MOVED => refused += 1,
                    Ok(_) => wrong.push(format!("{case}: answered otherwise than the file it opened")),
                    Err(e @ TreeError::Changed { .. }) if !kept => {
                        let said = e.to_string();
                        if said.contains('\n') || !said.contains(&p.display().to_string()) {
                            wrong.push(format!("{case}: not one line naming the file: {said}"));
                        }
                        refused += 1;
                    }
                    Err(e) => wrong.push(format!("{case}: {e}")),
                }
            }
            if !kept && refused == 0 {
                wrong.push(format!("indexed {indexed}, {how}: no builder noticed the change"));
            }
        }
    }
    assert!(wrong.is_empty(), "{} wrong:\n{}", wrong.len(), wrong.join("\n"));
}
