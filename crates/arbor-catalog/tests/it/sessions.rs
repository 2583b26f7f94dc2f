//! `FileSessions`: the seam's answers for a local sessions root (the same
//! answers as the server's are checked in arbor-pg's tests, `sessions.rs`).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_catalog::{CatalogOptions, FileSessions};
use arbor_tree::sessions::{
    FollowFrom, Followed, ListRequest, NoProgress, Scope, SearchRequest, Sessions, SessionsError,
};

use crate::{append, header, message, Store};

const T: i64 = 1_767_225_600_000;

/// Twelve sessions of ids `cafe0000`…, and one `beef` in another cwd.
fn root(store: &Store) -> Vec<PathBuf> {
    let mut files = vec![];
    for i in 0..12 {
        let id = format!("cafe{i:04}");
        let text = header(&id, "/p", "2026-01-01T00:00:00.000Z")
            + &message(&format!("m{i}"), None, "user", &format!("note {i} about gears"), T + i * 1000);
        files.push(store.write("/p", &format!("s{i:02}_{id}"), &text));
    }
    let text = header("beef", "/q", "2026-01-01T00:00:00.000Z") + &message("b1", None, "user", "cogs", T + 50_000);
    files.push(store.write("/q", "s99_beef", &text));
    files
}

fn on_disk(store: &Store) -> FileSessions {
    FileSessions::new(store.root()).with_catalog(CatalogOptions {
        cache_dir: Some(store.cache()),
        threads: 2,
        background: None,
    })
}

#[test]
fn names_paths_files_and_id_prefixes_and_ambiguity_counted_in_full() {
    let store = Store::new();
    let files = root(&store);
    let s = FileSessions::new(store.root());
    let beef = files.last().unwrap().clone();
    // A path that is there, as given; DIR/FILE under the root; a file name; an id; a prefix.
    assert_eq!(s.resolve(&beef.to_string_lossy()).unwrap(), beef);
    assert_eq!(s.resolve("--q--/s99_beef.jsonl").unwrap(), beef);
    assert_eq!(s.resolve("s99_beef.jsonl").unwrap(), beef);
    assert_eq!(s.resolve("beef").unwrap(), beef);
    assert_eq!(s.resolve("be").unwrap(), beef);
    assert_eq!(s.resolve("cafe0007").unwrap(), files[7]);
    // 12 sessions begin with "cafe": all counted, 8 named.
    let e = s.resolve("cafe").unwrap_err();
    let SessionsError::Ambiguous { count, candidates, .. } = &e else { panic!("{e}") };
    assert_eq!((*count, candidates.len()), (12, 8));
    assert!(e.to_string().contains("names 12 sessions") && e.to_string().contains("and 4 more"), "{e}");
    // Ids compare byte for byte (SQLite's LIKE would not).
    assert!(matches!(s.resolve("CAFE0007"), Err(SessionsError::NotFound { .. })));
    let e = s.resolve("dead").unwrap_err();
    assert_eq!(e.to_string(), format!("{}: no session dead", store.root().display()));
    // A path or a file name that is not there stays a path (for a new session; opening says the rest).
    assert_eq!(s.resolve("new.jsonl").unwrap(), Path::new("new.jsonl"));
    assert_eq!(s.resolve("/nowhere/x.jsonl").unwrap(), Path::new("/nowhere/x.jsonl"));
}

#[test]
fn listing_search_and_the_index_brought_up_to_date() {
    let store = Store::new();
    let files = root(&store);
    let s: Arc<dyn Sessions> = Arc::new(on_disk(&store));
    let all = s.listing(&ListRequest::new(Scope::All), &NoProgress).unwrap();
    assert_eq!(all.len(), 13);
    assert_eq!(all[0].id, "beef", "newest first");
    assert!(all.iter().all(|i| i.all_messages_text.is_empty()));
    let texts = s.listing(&ListRequest::new(Scope::cwd("/q")).with_text(), &NoProgress).unwrap();
    assert_eq!(texts.iter().map(|i| i.all_messages_text.as_str()).collect::<Vec<_>>(), ["cogs"]);

    let hits = s.search(&SearchRequest::new("gears", Scope::cwd("/p")).limit(3), &NoProgress).unwrap();
    assert_eq!(hits.iter().map(|h| h.entry_id.as_str()).collect::<Vec<_>>(), ["m11", "m10", "m9"]);
    let e = s.search(&SearchRequest::new("re:(", Scope::All), &NoProgress).unwrap_err();
    assert!(matches!(e, SessionsError::Query(_)), "{e}");

    // A search reads the files themselves: an append is found at once, even
    // by a search "as the index stands", and after the index is brought up
    // to date from another thread.
    append(&files[0], &message("late", Some("m0"), "assistant", "sprockets", T + 90_000));
    let as_is = SearchRequest::new("sprockets", Scope::All).as_is();
    assert_eq!(s.search(&as_is, &NoProgress).unwrap().len(), 1);
    let other = s.clone();
    std::thread::spawn(move || other.update_index(&Scope::All, &NoProgress).unwrap()).join().unwrap();
    assert_eq!(s.search(&as_is, &NoProgress).unwrap().len(), 1);
    assert!(s.take_warnings().is_empty());
}

#[test]
fn a_damaged_catalog_is_built_again_and_said_once() {
    let store = Store::new();
    root(&store);
    let want = on_disk(&store).listing(&ListRequest::new(Scope::All), &NoProgress).unwrap();
    let files: Vec<PathBuf> = fs::read_dir(store.cache().join("catalog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    for suffix in ["-wal", "-shm"] {
        let _ = fs::remove_file(format!("{}{suffix}", files[0].display()));
    }
    fs::write(&files[0], b"not a database at all".repeat(300)).unwrap();
    let s = on_disk(&store);
    assert_eq!(s.listing(&ListRequest::new(Scope::All), &NoProgress).unwrap(), want);
    let warnings = s.take_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("damaged"), "{warnings:?}");
    assert!(s.take_warnings().is_empty(), "said once");
}

/// Set in the child process of the test below: the sessions root it reads.
const CHILD: &str = "ARBOR_TEST_CATALOG_DEFAULTS_CHILD";

#[test]
fn in_memory_by_default_and_nothing_written_anywhere() {
    if let Some(root) = std::env::var_os(CHILD) {
        let s = FileSessions::new(PathBuf::from(root));
        assert_eq!(s.listing(&ListRequest::new(Scope::All).with_text(), &NoProgress).unwrap().len(), 13);
        // With the catalog in memory, a search as the index stands still finds what is there.
        let hits = s.search(&SearchRequest::new("cogs", Scope::All).as_is(), &NoProgress).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(s.resolve("beef").unwrap(), hits[0].path);
        assert!(s.take_warnings().is_empty());
        return;
    }
    let store = Store::new();
    root(&store);
    let before = everything_under(&store.root());
    let names = ["home", "xdg-cache", "arbor-cache"];
    let at = |n: &str| store.dir.path().join(n);
    for n in names {
        fs::create_dir_all(at(n)).unwrap();
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sessions::in_memory_by_default_and_nothing_written_anywhere", "--nocapture"])
        .env(CHILD, store.root())
        .env("HOME", at("home"))
        .env("XDG_CACHE_HOME", at("xdg-cache"))
        .env("ARBOR_CACHE_DIR", at("arbor-cache"))
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
    for n in names {
        assert!(everything_under(&at(n)).is_empty(), "{n}: {:?}", everything_under(&at(n)));
    }
    assert_eq!(everything_under(&store.root()), before, "nothing beside the sessions");
    let opts = FileSessions::new(store.root()).session_options();
    assert_eq!(opts.sessions_root.as_deref(), Some(store.root().as_path()));
    assert_eq!(opts.index_dir, None);
}

/// Every path under `dir`, sorted.
fn everything_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(everything_under(&p));
        }
        out.push(p);
    }
    out.sort();
    out
}

#[test]
fn follows_a_file_and_says_where_a_new_session_goes() {
    let store = Store::new();
    let files = root(&store);
    let s = FileSessions::new(store.root());
    let (mut f, now) = s.follow(&files[1], FollowFrom::End).unwrap();
    assert!(now.is_empty());
    let line = message("x", Some("m1"), "assistant", "more", T + 99_000);
    append(&files[1], &line);
    assert_eq!(f.wait(std::time::Duration::from_secs(5)).unwrap(), Followed::Lines(line.into_bytes()));
    assert!(s.follow(&store.root().join("missing.jsonl"), FollowFrom::Start).is_err());
    assert_eq!(s.import_into("/home/me", "a.jsonl").unwrap(), store.root().join("--home-me--").join("a.jsonl"));
    let e = s.import_into("/home/me", "../../etc/passwd").unwrap_err();
    assert!(matches!(e, SessionsError::BadName { .. }), "{e}");
    assert!(fs::read_dir(store.root()).unwrap().count() == 2, "nothing created");
}
