//! `arbor import opencode`: a storage folder written in OpenCode's format
//! (`arbor_test_support::opencode`) imported as pi sessions: a parent and
//! its child session, tools, a compaction, every unmapped part kept, a bad
//! file reported, and a second import that changes nothing.

use arbor_interop::{read_transcript, Format, Outcome};
use arbor_log::EntryKind;
use arbor_test_support::opencode::write_storage;

use crate::import::render_reports;
use crate::{import, open};

#[test]
fn an_opencode_storage_folder_imports_as_a_session_and_its_child() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("storage");
    let (info_a, bad) = write_storage(&storage);
    let root = dir.path().join("sessions");
    let reports = import(Format::OpenCode, std::slice::from_ref(&storage), &root);
    assert_eq!(reports.len(), 2, "the parent and its child");
    let (parent, child) = (&reports[0].sessions[0], &reports[1].sessions[0]);
    assert_eq!(reports[0].source, info_a);
    assert_eq!(child.parent_session.as_deref(), Some(parent.path.as_path()), "the child names its parent's file");
    assert_eq!(open(&child.path).header().parent_session.as_deref(), parent.path.to_str());
    assert_eq!(reports[0].skipped.len(), 1);
    assert_eq!(reports[0].skipped[0].file.as_deref(), Some(bad.as_path()));
    assert!(reports[0].skipped[0].reason.starts_with("malformed JSON"), "{:?}", reports[0].skipped);

    let s = open(&parent.path);
    let kinds: Vec<String> = s.entries().map(Result::unwrap).map(|e| e.entry_type().to_string()).collect();
    assert!(kinds.contains(&"compaction".to_owned()), "{kinds:?}");
    let customs: Vec<String> = s
        .entries()
        .map(Result::unwrap)
        .filter_map(|e| match &e.kind {
            EntryKind::Custom(c) => Some(c.custom_type.clone()),
            _ => None,
        })
        .collect();
    for kept in [
        "opencode.session",
        "opencode.step-start",
        "opencode.step-finish",
        "opencode.future-part",
        "opencode.compaction",
    ] {
        assert!(customs.iter().any(|c| c == kept), "{kept} kept whole: {customs:?}");
    }
    insta::assert_snapshot!(render_reports(&reports, &root));

    let again = import(Format::OpenCode, std::slice::from_ref(&storage), &root);
    for r in &again {
        assert!(r.sessions.iter().all(|s| s.outcome == Outcome::Unchanged), "{:?}", r.sessions);
    }
    // Read in place: the same sessions, nothing written.
    let in_place = read_transcript(Format::OpenCode, &info_a).unwrap();
    let written = std::fs::read_to_string(&parent.path).unwrap();
    assert_eq!(in_place.sessions[0].lines.join("\n") + "\n", written);
}

#[test]
fn a_file_that_is_no_opencode_session_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let info = dir.path().join("session/p/ses_X.json");
    std::fs::create_dir_all(info.parent().unwrap()).unwrap();
    std::fs::write(&info, "[1, 2]").unwrap();
    let e = read_transcript(Format::OpenCode, &info).unwrap_err().to_string();
    assert!(e.contains("ses_X.json") && e.contains("not an opencode session"), "{e}");
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let e = read_transcript(Format::OpenCode, &empty).unwrap_err().to_string();
    assert!(e.contains("empty") && e.contains("not an opencode session"), "{e}");
}

#[test]
fn ids_that_are_no_plain_names_never_become_paths() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("storage");
    let write = |rel: &str, v: serde_json::Value| {
        let p = storage.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    // A session whose id climbs out of the storage folder is refused, naming its file.
    let evil = write("session/p/ses_E.json", serde_json::json!({"id": "../../outside", "directory": "/w"}));
    let e = read_transcript(Format::OpenCode, &evil).unwrap_err().to_string();
    assert!(e.contains("ses_E.json") && e.contains("path separator"), "{e}");
    // A message whose id does: its parts are not looked for, and the report says so.
    let info = write("session/p/ses_F.json", serde_json::json!({"id": "ses_F", "directory": "/w"}));
    write("message/ses_F/msg_1.json", serde_json::json!({"id": "../evil", "role": "user", "time": {"created": 1}}));
    write("evil/prt_1.json", serde_json::json!({"id": "prt_1", "type": "text", "text": "not mine"}));
    let t = read_transcript(Format::OpenCode, &info).unwrap();
    assert_eq!(t.skipped.len(), 1, "{:?}", t.skipped);
    assert!(t.skipped[0].reason.contains("its parts are not read"), "{:?}", t.skipped);
    assert!(!t.sessions[0].lines.join("\n").contains("not mine"));
}
