//! The seam: the same sessions kept as files under a sessions root
//! (`arbor_catalog::FileSessions`) and pushed to the server (`PgStore`)
//! give the same answers through `arbor_tree::sessions::Sessions`: the
//! listing, every kind of name, search hits (for words both engines find)
//! with their active-path marks and labels, following, and where a new
//! session goes.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use arbor_catalog::FileSessions;
use arbor_tree::sessions::{
    FollowFrom, Followed, Hit, ListRequest, NoProgress, Relevance, Scope, SearchRequest, Sessions, SessionsError,
};
use arbor_tree::{OpenMode, Session, SessionListInfo};

use crate::store;

const T: i64 = 1_767_225_600_000;

fn header(id: &str, cwd: &str, ms: i64) -> String {
    let time = arbor_log::format_iso_ms(ms);
    format!(r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{time}","cwd":"{cwd}"}}"#) + "\n"
}

fn message(id: &str, parent: Option<&str>, role: &str, text: &str, ms: i64) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    let time = arbor_log::format_iso_ms(ms);
    let content = serde_json::to_string(text).unwrap();
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{time}","message":{{"role":"{role}","content":{content},"timestamp":{ms}}}}}"#
    ) + "\n"
}

fn label(id: &str, parent: &str, target: &str, text: &str, ms: i64) -> String {
    let time = arbor_log::format_iso_ms(ms);
    format!(
        r#"{{"type":"label","id":"{id}","parentId":"{parent}","timestamp":"{time}","targetId":"{target}","label":"{text}"}}"#
    ) + "\n"
}

fn named(id: &str, parent: &str, name: &str, ms: i64) -> String {
    let time = arbor_log::format_iso_ms(ms);
    format!(r#"{{"type":"session_info","id":"{id}","parentId":"{parent}","timestamp":"{time}","name":"{name}"}}"#)
        + "\n"
}

/// Writes a session file in pi's layout under `root`.
fn write(root: &Path, cwd: &str, file: &str, text: &str) -> PathBuf {
    let dir = root.join(arbor_tree::paths::encode_cwd(cwd));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(file);
    fs::write(&path, text).unwrap();
    path
}

/// A sessions root: a session with an abandoned branch and a label, a named
/// one sharing its id's first characters, one elsewhere, twelve ids with a
/// common prefix, and one file name in two folders.
fn sessions_root(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![];
    let mut s = header("a1b2c3d4-1111", "/team/app", T);
    s += &message("u1", None, "user", "How do I parse the zeppelin manifest?", T + 1000);
    s += &message("a1", Some("u1"), "assistant", "Use serde to parse it", T + 2000);
    s += &message("u2", Some("a1"), "user", "try the zeppelin-free route", T + 3000);
    s += &message("a2", Some("u2"), "assistant", "abandoned answer about manifests", T + 4000);
    s += &label("l1", "a2", "u1", "start", T + 5000);
    s += &message("u3", Some("a1"), "user", "parse it faster with simd", T + 6000);
    s += &message("a3", Some("u3"), "assistant", "simd parse done for the zeppelin", T + 7000);
    files.push(write(root, "/team/app", "2026-01-01T00-00-00-000Z_a1b2c3d4-1111.jsonl", &s));
    let mut s = header("a1b2c3d4-2222", "/team/app", T + 10_000);
    s += &message("v1", None, "user", "zeppelin docs please", T + 11_000);
    s += &named("n1", "v1", "docs day", T + 12_000);
    files.push(write(root, "/team/app", "2026-01-01T00-00-10-000Z_a1b2c3d4-2222.jsonl", &s));
    let s = header("b7e0-lib", "/team/lib", T + 20_000)
        + &message("w1", None, "user", "parse the config of the library", T + 21_000);
    files.push(write(root, "/team/lib", "2026-01-01T00-00-20-000Z_b7e0-lib.jsonl", &s));
    for i in 0..12 {
        let id = format!("cafe{i:04}");
        let s = header(&id, "/team/many", T + 30_000 + i * 1000)
            + &message(&format!("m{i}"), None, "user", &format!("note number {i}"), T + 30_500 + i * 1000);
        files.push(write(root, "/team/many", &format!("2026-01-01T00-01-{i:02}-000Z_{id}.jsonl"), &s));
    }
    for (cwd, id) in [("/twin/one", "twin-1"), ("/twin/two", "twin-2")] {
        let s = header(id, cwd, T + 50_000) + &message(&format!("{id}-m"), None, "user", "twins", T + 50_500);
        files.push(write(root, cwd, "same-name.jsonl", &s));
    }
    files
}

/// `DIR/FILE` of a backend's path.
fn rel(p: &Path) -> String {
    let part = |p: Option<&Path>| p.and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
    format!("{}/{}", part(p.parent()).unwrap_or_default(), part(Some(p)).unwrap_or_default())
}

fn listing(b: &dyn Sessions, request: ListRequest) -> Vec<SessionListInfo> {
    let mut list = b.listing(&request, &NoProgress).unwrap();
    for i in &mut list {
        i.path = PathBuf::from(rel(&i.path));
    }
    list
}

/// What a hit says, with the session as `DIR/FILE` (snippets are each engine's own).
fn summary(h: &Hit) -> String {
    let labels: Vec<String> = h.labels.iter().map(|l| format!("{}={}", l.entry_id, l.label)).collect();
    format!(
        "{} {} {} {:?} {} {:?} active={} [{}] {} {:?}",
        rel(&h.path),
        h.session_id,
        h.entry_id,
        h.role,
        h.timestamp,
        h.relevance,
        h.on_active_path,
        labels.join(","),
        h.cwd,
        h.session_name
    )
}

fn search(b: &dyn Sessions, query: &str, scope: Scope) -> Vec<String> {
    b.search(&SearchRequest::new(query, scope).limit(50), &NoProgress).unwrap().iter().map(summary).collect()
}

fn resolved(b: &dyn Sessions, name: &str) -> Result<String, String> {
    b.resolve(name).map(|p| rel(&p)).map_err(|e| match e {
        SessionsError::NotFound { name, .. } => format!("not found: {name}"),
        SessionsError::Ambiguous { count, candidates, .. } => format!("ambiguous: {count} {candidates:?}"),
        other => format!("other: {other}"),
    })
}

#[test]
fn files_and_the_server_give_the_same_answers() {
    let Some((_db, server)) = store("seam_same_answers") else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    for f in sessions_root(&root) {
        server.push(&f).unwrap();
    }
    let files = FileSessions::new(&root);
    let backends: [&dyn Sessions; 2] = [&files, &server];

    // The listing, with and without every message's text.
    for request in [ListRequest::new(Scope::All), ListRequest::new(Scope::All).with_text()] {
        let [a, b] = backends.map(|s| listing(s, request.clone()));
        assert_eq!(a.len(), 17);
        assert_eq!(a, b);
    }
    let [a, b] = backends.map(|s| listing(s, ListRequest::new(Scope::cwd("/team/app"))));
    assert_eq!(a.iter().map(|i| i.name.clone()).collect::<Vec<_>>(), [Some("docs day".to_owned()), None]);
    assert_eq!(a, b);

    // Every kind of name, and names that match nothing or too much.
    let app = "--team-app--/2026-01-01T00-00-00-000Z_a1b2c3d4-1111.jsonl";
    let names = [
        app,
        "2026-01-01T00-00-00-000Z_a1b2c3d4-1111.jsonl",
        "a1b2c3d4-1111",
        "a1b2c3d4-11",
        "b7e0",
        "cafe0003",
        "a1b2c3d4",
        "cafe",
        "same-name.jsonl",
        "ffff",
    ];
    for name in names {
        let [a, b] = backends.map(|s| resolved(s, name));
        assert_eq!(a, b, "{name}");
    }
    assert_eq!(resolved(&server, "a1b2c3d4-11"), Ok(app.to_owned()));
    let cafe = resolved(&server, "cafe").unwrap_err();
    assert!(cafe.starts_with("ambiguous: 12 ") && cafe.matches(".jsonl").count() == 8, "{cafe}");
    assert!(resolved(&server, "same-name.jsonl").unwrap_err().starts_with("ambiguous: 2 "));
    assert_eq!(resolved(&server, "ffff"), Err("not found: ffff".to_owned()));

    // Search: words, parts of words, phrases, patterns; scopes; marks and labels.
    for (query, scope) in [
        ("zeppelin", Scope::All),
        ("parse", Scope::All),
        ("parse", Scope::cwd("/team/app")),
        ("pars", Scope::All),
        ("zeppelin parse", Scope::All),
        ("\"parse the\"", Scope::All),
        ("re:simd\\s+parse", Scope::All),
        ("manifests", Scope::All),
        ("nothing-like-this", Scope::All),
    ] {
        let [a, b] = backends.map(|s| search(s, query, scope.clone()));
        assert_eq!(a, b, "{query}");
    }
    let hits = files.search(&SearchRequest::new("zeppelin", Scope::All), &NoProgress).unwrap();
    let by = |id: &str| hits.iter().find(|h| h.entry_id == id).unwrap();
    assert!(by("u1").on_active_path && !by("u2").on_active_path && by("a3").on_active_path);
    assert_eq!(by("a3").labels.iter().map(|l| l.label.as_str()).collect::<Vec<_>>(), ["start"]);
    let prefixes = files.search(&SearchRequest::new("pars", Scope::All), &NoProgress).unwrap();
    let ids: Vec<&str> = prefixes.iter().map(|h| h.entry_id.as_str()).collect();
    assert_eq!(ids, ["w1", "a3", "u3", "a1", "u1"], "newest first");
    assert!(prefixes.iter().all(|h| h.relevance == Relevance::Exact), "inside words, as written");

    // A resolved session opens with its backend's options and holds the same entries.
    let [a, b] = backends.map(|s| {
        let path = s.resolve("a1b2c3d4-1111").unwrap();
        let session = Session::open(&path, OpenMode::ReadOnly, s.session_options()).unwrap();
        session.get_branch(None).unwrap().iter().map(|e| e.id.to_string()).collect::<Vec<_>>()
    });
    assert_eq!(a, ["u1", "a1", "u3", "a3"]);
    assert_eq!(a, b);

    // A new session's place, its names checked.
    let [a, b] = backends.map(|s| s.import_into("/team/new", "x.jsonl").map(|p| rel(&p)).unwrap());
    assert_eq!((a.as_str(), b.as_str()), ("--team-new--/x.jsonl", "--team-new--/x.jsonl"));
    for s in backends {
        for bad in ["../x.jsonl", "a/b.jsonl", "", ".."] {
            assert!(matches!(s.import_into("/team/new", bad), Err(SessionsError::BadName { .. })), "{bad:?}");
        }
    }
}

#[test]
fn both_backends_follow_an_append_and_a_removal() {
    let Some((_db, server)) = store("seam_follow") else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let file = sessions_root(&root).remove(1);
    server.push(&file).unwrap();
    let files = FileSessions::new(&root);
    let appended = message("v2", Some("n1"), "assistant", "here they are", T + 13_000);
    let original = fs::read(&file).unwrap();
    for backend in [&files as &dyn Sessions, &server] {
        let path = backend.resolve("a1b2c3d4-2222").unwrap();
        let (mut follower, now) = backend.follow(&path, FollowFrom::Start).unwrap();
        assert_eq!(now, original, "{}", backend.location());
        let (mut from_end, now) = backend.follow(&path, FollowFrom::End).unwrap();
        assert!(now.is_empty());
        // Appended through the backend's own store, as any writer would.
        let opts = backend.session_options();
        let (mut handle, _) = opts.store.open_append(&path, arbor_log::Durability::Buffered).unwrap();
        handle.append(appended.as_bytes()).unwrap();
        drop(handle);
        for f in [&mut follower, &mut from_end] {
            assert_eq!(f.wait(Duration::from_secs(5)).unwrap(), Followed::Lines(appended.clone().into_bytes()));
        }
    }
    // A removed file is said once, then followed when it comes back.
    let (mut follower, _) = files.follow(&file, FollowFrom::End).unwrap();
    let bytes = fs::read(&file).unwrap();
    fs::remove_file(&file).unwrap();
    assert_eq!(follower.wait(Duration::from_millis(500)).unwrap(), Followed::Gone);
    fs::File::create(&file).unwrap().write_all(&bytes).unwrap();
    assert_eq!(follower.wait(Duration::from_secs(5)).unwrap(), Followed::Replaced(bytes));
}
