//! Refreshes against files that change: appends, live writers, rewrites,
//! replacements that keep the size and mtime, deletions; and a catalog that
//! is deleted or damaged between two runs.

use std::fs;
use std::io::Write;
use std::time::{Duration, SystemTime};

use arbor_catalog::{NoProgress, Scope};

use crate::{append, direct, header, label, listed, message, Store};

const CWD: &str = "/home/me/proj";
const T0: i64 = 1_767_225_600_000;

fn session(id: &str, n: usize) -> String {
    let mut s = header(id, CWD, "2026-01-01T00:00:00.000Z");
    for i in 0..n {
        let parent = (i > 0).then(|| format!("{id}-{}", i - 1));
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        s += &message(&format!("{id}-{i}"), parent.as_deref(), role, &format!("turn {i} of {id}"), T0 + i as i64);
    }
    s
}

#[test]
fn unchanged_files_are_not_read_and_grown_ones_are_read_on() {
    let store = Store::new();
    let a = store.write(CWD, "a", &session("a", 4));
    store.write(CWD, "b", &session("b", 2));
    store.write("/other", "c", &session("c", 3));
    let mut cat = store.catalog();
    let first = cat.refresh(&Scope::All, &NoProgress).unwrap();
    assert_eq!((first.files, first.read, first.read_on), (3, 3, 0));
    assert_eq!(cat.sessions(&Scope::All).unwrap(), direct(&store.root()));

    let again = cat.refresh(&Scope::All, &NoProgress).unwrap();
    assert_eq!((again.read, again.read_on, again.bytes), (0, 0, 0), "{again:?}");

    let before = fs::metadata(&a).unwrap().len();
    append(&a, &message("a-4", Some("a-3"), "user", "one more", T0 + 100));
    let grown = cat.refresh(&Scope::All, &NoProgress).unwrap();
    assert_eq!((grown.read, grown.read_on), (0, 1), "{grown:?}");
    assert_eq!(grown.bytes, fs::metadata(&a).unwrap().len() - before, "only the new line is read");
    assert_eq!(cat.sessions(&Scope::All).unwrap(), direct(&store.root()));

    // One directory's refresh stats only that directory.
    let one = cat.refresh(&Scope::cwd("/other"), &NoProgress).unwrap();
    assert_eq!(one.files, 1);
    let only: Vec<String> = cat.sessions(&Scope::cwd("/other")).unwrap().into_iter().map(|i| i.id).collect();
    assert_eq!(only, ["c"]);

    fs::remove_file(&a).unwrap();
    let gone = cat.refresh(&Scope::All, &NoProgress).unwrap();
    assert_eq!(gone.removed, 1);
    assert_eq!(cat.sessions(&Scope::All).unwrap(), direct(&store.root()));
}

#[test]
fn a_line_still_being_written_waits_for_its_newline() {
    let store = Store::new();
    let f = store.write(CWD, "live", &session("l", 2));
    let mut cat = store.catalog();
    let count = |cat: &mut arbor_catalog::Catalog| listed(cat, &Scope::All)[0].message_count;
    assert_eq!(count(&mut cat), 2);
    let line = message("l-2", Some("l-1"), "user", "half written", T0 + 50);
    let (head, tail) = line.split_at(line.len() / 2);
    append(&f, head);
    assert_eq!(count(&mut cat), 2, "a partial line is not read");
    append(&f, tail);
    assert_eq!(count(&mut cat), 3, "the completed line is read once");
    assert_eq!(listed(&mut cat, &Scope::All), direct(&store.root()));
    // A last line without its newline that is whole JSON is read, as every reader reads it.
    append(&f, message("l-3", Some("l-2"), "user", "no newline", T0 + 60).trim_end());
    assert_eq!(count(&mut cat), 4);
    append(&f, "\n");
    append(&f, &message("l-4", Some("l-3"), "assistant", "after", T0 + 70));
    assert_eq!(count(&mut cat), 5);
    assert_eq!(listed(&mut cat, &Scope::All), direct(&store.root()));
}

#[test]
fn a_session_appended_to_during_refreshes_ends_up_exact() {
    let store = Store::new();
    let f = store.write(CWD, "busy", &session("w", 1));
    let writer = {
        let f = f.clone();
        std::thread::spawn(move || {
            for i in 1..400 {
                let line =
                    message(&format!("w-{i}"), Some(&format!("w-{}", i - 1)), "user", &"x".repeat(i), T0 + i as i64);
                // Half a line, then the rest: a reader may see either.
                let (a, b) = line.split_at(line.len() / 2);
                append(&f, a);
                append(&f, b);
            }
        })
    };
    let mut cat = store.catalog();
    let mut last = 0;
    while !writer.is_finished() {
        let n = listed(&mut cat, &Scope::All)[0].message_count;
        assert!(n >= last, "the count never goes back: {n} after {last}");
        last = n;
    }
    writer.join().unwrap();
    let list = listed(&mut cat, &Scope::All);
    assert_eq!(list[0].message_count, 400);
    assert_eq!(list, direct(&store.root()));
}

#[test]
fn a_rewritten_or_shrunk_file_is_read_again() {
    let store = Store::new();
    let f = store.write(CWD, "s", &session("s", 6));
    let mut cat = store.catalog();
    listed(&mut cat, &Scope::All);
    fs::write(&f, session("s", 3)).unwrap();
    let stats = cat.refresh(&Scope::All, &NoProgress).unwrap();
    assert_eq!((stats.read, stats.read_on), (1, 0));
    assert_eq!(cat.sessions(&Scope::All).unwrap(), direct(&store.root()));
    // A longer file whose start changed is not an append.
    fs::write(&f, session("t", 8)).unwrap();
    let stats = cat.refresh(&Scope::All, &NoProgress).unwrap();
    assert_eq!((stats.read, stats.read_on), (1, 0));
    assert_eq!(cat.sessions(&Scope::All).unwrap()[0].id, "t");
}

#[test]
fn a_replacement_with_the_same_size_and_mtime_is_caught() {
    let store = Store::new();
    let (one, two) = (session("aaaa", 5), session("bbbb", 5));
    assert_eq!(one.len(), two.len());
    let f = store.write(CWD, "same", &one);
    let mtime = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    fs::File::options().write(true).open(&f).unwrap().set_modified(mtime).unwrap();
    let mut cat = store.catalog();
    assert_eq!(listed(&mut cat, &Scope::All)[0].id, "aaaa");
    // Replaced in place, then the mtime set back: only the ctime (and the head) tell.
    fs::write(&f, &two).unwrap();
    fs::File::options().write(true).open(&f).unwrap().set_modified(mtime).unwrap();
    let stats = cat.refresh(&Scope::All, &NoProgress).unwrap();
    assert_eq!(stats.read, 1, "{stats:?}");
    assert_eq!(cat.sessions(&Scope::All).unwrap()[0].id, "bbbb");
    // A new inode under the same name (an atomic replace) likewise.
    let tmp = f.with_extension("tmp");
    fs::write(&tmp, &one).unwrap();
    fs::File::options().write(true).open(&tmp).unwrap().set_modified(mtime).unwrap();
    fs::rename(&tmp, &f).unwrap();
    assert_eq!(listed(&mut cat, &Scope::All)[0].id, "aaaa");
}

#[test]
fn a_deleted_catalog_is_built_again() {
    let store = Store::new();
    store.write(CWD, "a", &session("a", 3));
    let want = direct(&store.root());
    let mut cat = store.catalog();
    assert_eq!(listed(&mut cat, &Scope::All), want);
    let file = cat.location().unwrap().to_owned();
    drop(cat);
    fs::remove_dir_all(store.cache()).unwrap();
    let mut cat = store.catalog();
    assert_eq!(listed(&mut cat, &Scope::All), want);
    assert!(cat.take_warnings().is_empty());
    assert!(file.exists());
}

#[test]
fn a_damaged_catalog_is_rebuilt_with_one_warning() {
    let store = Store::new();
    store.write(CWD, "a", &session("a", 3));
    store.write(CWD, "b", &session("b", 2));
    let want = direct(&store.root());
    let file = {
        let mut cat = store.catalog();
        assert_eq!(listed(&mut cat, &Scope::All), want);
        cat.location().unwrap().to_owned()
    };
    for damage in [b"not a database at all".repeat(300), vec![0u8; 8192]] {
        for suffix in ["-wal", "-shm"] {
            let _ = fs::remove_file(format!("{}{suffix}", file.display()));
        }
        fs::write(&file, &damage).unwrap();
        let mut cat = store.catalog();
        assert_eq!(listed(&mut cat, &Scope::All), want);
        let warnings = cat.take_warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("damaged") && warnings[0].contains(&file.display().to_string()), "{warnings:?}");
        // Rebuilt for good: the next open has nothing to say.
        drop(cat);
        let mut cat = store.catalog();
        assert_eq!(listed(&mut cat, &Scope::All), want);
        assert!(cat.take_warnings().is_empty());
    }
    // Damage found after opening (pages of the tables overwritten) is mended the same way.
    let mut bytes = fs::read(&file).unwrap();
    if bytes.len() > 4096 {
        for b in &mut bytes[4096..] {
            *b = 0xAB;
        }
        fs::write(&file, &bytes).unwrap();
        let _ = fs::remove_file(format!("{}-wal", file.display()));
        let mut cat = store.catalog();
        assert_eq!(listed(&mut cat, &Scope::All), want);
        assert_eq!(cat.take_warnings().len(), 1);
    }
}

#[test]
fn an_older_schema_is_replaced_silently() {
    let store = Store::new();
    store.write(CWD, "a", &session("a", 3));
    let file = {
        let mut cat = store.catalog();
        listed(&mut cat, &Scope::All);
        cat.location().unwrap().to_owned()
    };
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch("PRAGMA user_version = 1; DROP TABLE columns; CREATE TABLE columns (x);").unwrap();
    drop(conn);
    let mut cat = store.catalog();
    assert_eq!(listed(&mut cat, &Scope::All), direct(&store.root()));
    assert!(cat.take_warnings().is_empty());
    cat.search("x", &arbor_catalog::SearchOptions { scope: Scope::All, limit: 1, fuzzy: false }, &NoProgress).unwrap();
}

#[test]
fn without_a_cache_directory_the_catalog_lives_in_memory() {
    let store = Store::new();
    store.write(CWD, "a", &session("a", 3));
    let blocked = store.dir.path().join("a-file");
    fs::write(&blocked, "").unwrap();
    let opts = arbor_catalog::CatalogOptions { cache_dir: Some(blocked.join("below")), threads: 1, background: None };
    let mut cat = arbor_catalog::Catalog::open_with(&store.root(), opts).unwrap();
    assert_eq!(cat.location(), None);
    assert_eq!(cat.take_warnings().len(), 1);
    assert_eq!(listed(&mut cat, &Scope::All), direct(&store.root()));
}

#[test]
fn nothing_is_written_beside_the_sessions() {
    let store = Store::new();
    let f = store.write(CWD, "a", &session("a", 3));
    append(&f, &label("a-l", "a-2", "a-0", "start", T0 + 9));
    let names = || {
        let mut v: Vec<String> = fs::read_dir(f.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = names();
    let mut cat = store.catalog();
    cat.search("x", &arbor_catalog::SearchOptions { scope: Scope::All, limit: 1, fuzzy: false }, &NoProgress).unwrap();
    let opts = arbor_catalog::SearchOptions { scope: Scope::All, limit: 5, fuzzy: false };
    assert!(!cat.search("turn", &opts, &NoProgress).unwrap().is_empty());
    assert_eq!(names(), before);
    assert!(cat.location().unwrap().starts_with(store.cache()));
}

/// The ids of the hits of a search.
fn search_ids(cat: &mut arbor_catalog::Catalog, q: &str) -> Vec<String> {
    let opts = arbor_catalog::SearchOptions { scope: Scope::All, limit: 50, fuzzy: false };
    cat.search(q, &opts, &NoProgress).unwrap().into_iter().map(|h| h.entry_id).collect()
}

#[test]
fn a_catalog_damaged_where_only_search_reads_answers_in_the_run_that_rebuilds_it() {
    let store = Store::new();
    store.write(CWD, "a", &session("a", 30));
    let file = {
        let mut cat = store.catalog();
        assert_eq!(search_ids(&mut cat, "\"turn 7 of a\""), ["a-7"]);
        cat.location().unwrap().to_owned()
    };
    // The listing's table is intact; the filters' is not what this schema wrote.
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch("DROP TABLE columns; CREATE TABLE columns (x);").unwrap();
    drop(conn);
    let mut cat = store.catalog();
    assert_eq!(search_ids(&mut cat, "\"turn 7 of a\""), ["a-7"], "the same run answers from the rebuilt catalog");
    let warnings = cat.take_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("damaged") && warnings[0].contains("built again"), "{warnings:?}");
}

#[test]
fn a_file_rewritten_in_place_with_its_size_and_mtime_is_searched_anew() {
    let store = Store::new();
    // Long enough that the change is far from both ends.
    let mut text = session("s", 200);
    let at = text.find("turn 100 of s").unwrap();
    text.replace_range(at..at + "turn 100 of s".len(), "alphaword 1s");
    let f = store.write(CWD, "same", &text);
    let mtime = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    fs::File::options().write(true).open(&f).unwrap().set_modified(mtime).unwrap();
    // Another session holds both words: each search has an exact hit, so a
    // miss in the edited file is not hidden by the fuzzy pass (which reads everything).
    store.write(
        "/other",
        "o",
        &(header("o", "/other", "2025-01-01T00:00:00.000Z") + &message("o-1", None, "user", "alphaword betaword_", 1)),
    );
    let mut cat = store.catalog();
    assert_eq!(search_ids(&mut cat, "alphaword"), ["s-100", "o-1"]);
    // The same bytes but for one word, written over the same inode, the mtime set back.
    let edited = text.replace("alphaword 1s", "betaword_ 1s");
    assert_eq!(edited.len(), text.len());
    fs::OpenOptions::new().write(true).open(&f).unwrap().write_all(edited.as_bytes()).unwrap();
    fs::File::options().write(true).open(&f).unwrap().set_modified(mtime).unwrap();
    assert_eq!(search_ids(&mut cat, "betaword_"), ["s-100", "o-1"]);
    assert_eq!(search_ids(&mut cat, "alphaword"), ["o-1"]);
}

#[cfg(unix)]
#[test]
fn links_as_pi_takes_them_a_linked_file_is_listed_a_linked_directory_is_not() {
    use std::os::unix::fs::symlink;
    let store = Store::new();
    let a = store.write(CWD, "a", &session("a", 2));
    let dir = a.parent().unwrap().to_owned();
    // A session file outside the root, linked in.
    let outside = store.dir.path().join("elsewhere.jsonl");
    fs::write(&outside, session("out", 2)).unwrap();
    symlink(&outside, dir.join("linked.jsonl")).unwrap();
    // A link to the session directory, and a link back up to the root: neither is followed.
    symlink(&dir, store.root().join("--dir-link--")).unwrap();
    symlink(store.root(), dir.join("loop.jsonl")).unwrap();
    symlink(store.root(), store.root().join("--loop--")).unwrap();
    let mut cat = store.catalog();
    let mut ids: Vec<String> = listed(&mut cat, &Scope::All).into_iter().map(|i| i.id).collect();
    ids.sort();
    assert_eq!(ids, ["a", "out"]);
    assert_eq!(search_ids(&mut cat, "turn 1 of out"), ["out-1"]);
}
