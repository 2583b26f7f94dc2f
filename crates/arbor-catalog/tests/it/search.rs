//! Search semantics on a hand-made session with two branches: tokens,
//! prefixes, fuzzy words, phrases, regexes, Unicode, scopes, the ranking,
//! and the branch flags of each hit.

use std::fs;

use arbor_catalog::{Catalog, Hit, NoProgress, Relevance, Scope, SearchOptions};

use crate::{append, header, label, message, Store};

const CWD: &str = "/home/me/proj";
const T: i64 = 1_767_225_600_000;

/// u1 → a1 → (u2 → a2 → l1 | u3 → a3); the leaf is a3, the last line.
fn store() -> (Store, std::path::PathBuf) {
    let store = Store::new();
    let mut s = header("sess-1", CWD, "2026-01-01T00:00:00.000Z");
    s += &message("u1", None, "user", "How do I parse JSON in Rust?", T);
    s += &message("a1", Some("u1"), "assistant", "Use serde_json: it parses the Größe of 日本語 text.", T + 1000);
    s += &message("u2", Some("a1"), "user", "Try the café example", T + 2000);
    s += &message("a2", Some("u2"), "assistant", "cafe crème done 😀", T + 3000);
    s += &label("l1", "a2", "u1", "start-here", T + 4000);
    s += &message("u3", Some("a1"), "user", "Use simd-json instead, with   the tokio runtime", T + 5000);
    s += &message("a3", Some("u3"), "assistant", "Benchmarks show simd_json parsing twice as fast", T + 6000);
    let f = store.write(CWD, "one", &s);
    let other = header("sess-2", "/other", "2026-01-01T00:00:00.000Z")
        + &message("o1", None, "user", "parse this elsewhere", T + 500);
    store.write("/other", "two", &other);
    (store, f)
}

fn search(cat: &mut Catalog, q: &str, scope: Scope) -> Vec<Hit> {
    cat.search(q, &SearchOptions { scope, limit: 50, fuzzy: false }, &NoProgress).unwrap()
}

fn ids(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.entry_id.as_str()).collect()
}

#[test]
fn tokens_are_found_inside_words_last_entry_first() {
    let (store, _) = store();
    let mut cat = store.catalog();
    let hits = search(&mut cat, "parse", Scope::cwd(CWD));
    assert_eq!(ids(&hits), ["a1", "u1"], "the session's last entry first");
    assert!(hits.iter().all(|h| h.relevance == Relevance::Exact));
    assert_eq!(ids(&search(&mut cat, "pars", Scope::cwd(CWD))), ["a3", "a1", "u1"]);
    assert_eq!(ids(&search(&mut cat, "parse rust", Scope::cwd(CWD))), ["u1"]);
    assert_eq!(ids(&search(&mut cat, "PARSE json", Scope::cwd(CWD))), ["a1", "u1"]);
    assert!(search(&mut cat, "parse nothinghere", Scope::cwd(CWD)).is_empty());
    // Inside words, URLs and file names: a literal is a literal.
    assert_eq!(ids(&search(&mut cat, "enchmarks", Scope::cwd(CWD))), ["a3"]);
    assert_eq!(ids(&search(&mut cat, "serde_json", Scope::cwd(CWD))), ["a1"]);
    assert_eq!(ids(&search(&mut cat, "simd-json", Scope::cwd(CWD))), ["u3"]);
}

#[test]
fn fuzzy_hits_only_when_asked_or_when_nothing_matches_exactly() {
    let (store, _) = store();
    let mut cat = store.catalog();
    // No exact hit: the fuzzy ones, marked so.
    let fuzzy = search(&mut cat, "bnchmrks", Scope::cwd(CWD));
    assert_eq!(ids(&fuzzy), ["a3"]);
    assert_eq!(fuzzy[0].relevance, Relevance::Fuzzy);
    assert!(search(&mut cat, "nchmrks", Scope::cwd(CWD)).is_empty(), "the first character starts the word");
    // An exact hit keeps the fuzzy ones out, unless they are asked for, after it.
    let f = store.file(CWD, "fuzzy");
    std::fs::write(&f, header("fz", CWD, "2026-01-02T00:00:00.000Z")).unwrap();
    append(&f, &message("e1", None, "user", "use the map here", T + 9000));
    append(&f, &message("e2", Some("e1"), "assistant", "a mxaxp thing", T + 9001));
    append(&f, &message("e3", Some("e2"), "user", "nothing", T + 9002));
    let opts = |fuzzy| SearchOptions { scope: Scope::cwd(CWD), limit: 50, fuzzy };
    let exact = cat.search("map", &opts(false), &NoProgress).unwrap();
    assert_eq!(ids(&exact), ["e1"]);
    let both = cat.search("map", &opts(true), &NoProgress).unwrap();
    assert_eq!(ids(&both), ["e1", "e2"]);
    assert_eq!((both[0].relevance, both[1].relevance), (Relevance::Exact, Relevance::Fuzzy));
    assert_eq!(ids(&cat.search("mxp", &opts(false), &NoProgress).unwrap()), ["e2"]);
}

#[test]
fn ids_are_searchable() {
    let (store, _) = store();
    let mut cat = store.catalog();
    assert_eq!(ids(&search(&mut cat, "A2", Scope::cwd(CWD))), ["a2"], "an entry's id");
    let f = store.file(CWD, "ids");
    std::fs::write(&f, header("0b5e7c1a-1111-4000-8000-000000000001", CWD, "2026-01-02T00:00:00.000Z")).unwrap();
    append(&f, &message("ab12cd34", None, "user", "plain words", T + 9000));
    append(&f, &message("ef56ab78", Some("ab12cd34"), "assistant", "more words", T + 9001));
    assert_eq!(ids(&search(&mut cat, "AB12CD34", Scope::cwd(CWD))), ["ab12cd34"]);
    // A session's id (or its first 8 characters) finds its entries.
    let all = search(&mut cat, "0b5e7c1a-1111-4000-8000-000000000001", Scope::cwd(CWD));
    assert_eq!(ids(&all), ["ef56ab78", "ab12cd34"]);
    assert_eq!(ids(&search(&mut cat, "0b5e7c1a words", Scope::cwd(CWD))), ["ef56ab78", "ab12cd34"]);
}

#[test]
fn phrases_are_found_as_written_up_to_case_and_spaces() {
    let (store, _) = store();
    let mut cat = store.catalog();
    assert_eq!(ids(&search(&mut cat, r#""simd_json parsing""#, Scope::cwd(CWD))), ["a3"]);
    assert_eq!(ids(&search(&mut cat, r#""WITH the tokio""#, Scope::cwd(CWD))), ["u3"]);
    assert_eq!(ids(&search(&mut cat, r#""with the tok""#, Scope::cwd(CWD))), ["u3"]);
    assert!(search(&mut cat, r#""simd json""#, Scope::cwd(CWD)).is_empty());
    assert_eq!(ids(&search(&mut cat, r#"use "simd-json""#, Scope::cwd(CWD))), ["u3"]);
    // A quote left open: its words are tokens.
    assert_eq!(ids(&search(&mut cat, r#""twice fast"#, Scope::cwd(CWD))), ["a3"]);
}

#[test]
fn regexes_match_the_text_case_insensitively() {
    let (store, _) = store();
    let mut cat = store.catalog();
    assert_eq!(ids(&search(&mut cat, "re:SIMD[-_]json", Scope::cwd(CWD))), ["a3", "u3"]);
    assert_eq!(ids(&search(&mut cat, r"re:^how do", Scope::cwd(CWD))), ["u1"]);
    let opts = SearchOptions { scope: Scope::All, limit: 5, fuzzy: false };
    let err = cat.search("re:(", &opts, &NoProgress).unwrap_err();
    assert!(err.to_string().starts_with("invalid search query"), "{err}");
    assert!(cat.search("re:", &opts, &NoProgress).is_err());
}

#[test]
fn unicode_case_and_symbols() {
    let (store, _) = store();
    let mut cat = store.catalog();
    assert_eq!(ids(&search(&mut cat, "GRÖßE", Scope::cwd(CWD))), ["a1"], "other letters fold by Unicode's simple rule");
    assert!(search(&mut cat, "GRÖSSE", Scope::cwd(CWD)).is_empty(), "ß is not ss");
    assert_eq!(ids(&search(&mut cat, "日本語", Scope::cwd(CWD))), ["a1"]);
    // Accents are letters of their own.
    assert_eq!(ids(&search(&mut cat, "cafe", Scope::cwd(CWD))), ["a2"]);
    assert_eq!(ids(&search(&mut cat, "CAFÉ", Scope::cwd(CWD))), ["u2"]);
    assert_eq!(ids(&search(&mut cat, "crème", Scope::cwd(CWD))), ["a2"]);
    let emoji = search(&mut cat, "😀", Scope::cwd(CWD));
    assert_eq!(ids(&emoji), ["a2"]);
    assert_eq!(emoji[0].snippet.chars().nth(emoji[0].marks[0][0]), Some('😀'));
}

#[test]
fn hits_say_whether_they_are_on_the_active_path_and_the_labels_on_their_path() {
    let (store, f) = store();
    let mut cat = store.catalog();
    let hits = search(&mut cat, "json", Scope::cwd(CWD));
    assert_eq!(ids(&hits), ["a3", "u3", "a1", "u1"]);
    let by_id = |id: &str| hits.iter().find(|h| h.entry_id == id).unwrap();
    assert!(by_id("a3").on_active_path && by_id("u1").on_active_path && by_id("a1").on_active_path);
    let labels_of = |h: &Hit| h.labels.iter().map(|l| format!("{}={}", l.entry_id, l.label)).collect::<Vec<_>>();
    assert_eq!(labels_of(by_id("a3")), ["u1=start-here"]);
    let cafe = search(&mut cat, "caf", Scope::cwd(CWD));
    assert_eq!(ids(&cafe), ["a2", "u2"]);
    assert!(cafe.iter().all(|h| !h.on_active_path), "branch A is off the active path");
    assert_eq!(cafe[0].path, f);
    assert_eq!((cafe[0].session_id.as_str(), cafe[0].cwd.as_str()), ("sess-1", CWD));
    assert_eq!(cafe[0].role, Some(arbor_log::Role::Assistant));
    assert_eq!(cafe[0].timestamp, arbor_log::time::format_iso_ms(T + 3000));

    // Appending moves the leaf to branch A and labels another entry: the next search sees both.
    append(&f, &message("u4", Some("a2"), "user", "back on the café branch", T + 7000));
    append(&f, &label("l2", "u4", "u2", "cafe-branch", T + 8000));
    let cafe = search(&mut cat, "caf", Scope::cwd(CWD));
    // The new label's text is searchable too.
    assert_eq!(ids(&cafe), ["l2", "u4", "a2", "u2"]);
    assert!(cafe.iter().all(|h| h.on_active_path));
    assert_eq!(labels_of(&cafe[1]), ["u1=start-here", "u2=cafe-branch"]);
    assert!(!search(&mut cat, "benchmarks", Scope::cwd(CWD))[0].on_active_path);
}

#[test]
fn sessions_newest_first_and_the_limit() {
    let (store, _) = store();
    let mut cat = store.catalog();
    assert_eq!(ids(&search(&mut cat, "parse", Scope::All)), ["a1", "u1", "o1"], "sess-1 is the newer session");
    assert_eq!(ids(&search(&mut cat, "elsewhere", Scope::cwd(CWD))), Vec::<&str>::new());
    let opts = |limit| SearchOptions { scope: Scope::All, limit, fuzzy: false };
    assert_eq!(ids(&cat.search("parse", &opts(2), &NoProgress).unwrap()), ["a1", "u1"]);
    assert_eq!(ids(&cat.search("re:pars", &opts(2), &NoProgress).unwrap()), ["a3", "a1"]);
}

#[test]
fn snippets_mark_what_matched() {
    let (store, _) = store();
    let mut cat = store.catalog();
    let hits = search(&mut cat, "pars twice", Scope::cwd(CWD));
    assert_eq!(ids(&hits), ["a3"]);
    let h = &hits[0];
    let marked: Vec<String> =
        h.marks.iter().map(|m| h.snippet.chars().skip(m[0]).take(m[1] - m[0]).collect()).collect();
    assert_eq!(marked, ["pars", "twice"]);
    assert_eq!(h.snippet, "Benchmarks show simd_json parsing twice as fast");
}

#[test]
fn hits_are_handed_on_as_the_search_finds_them() {
    use std::cell::Cell;
    // Forty sessions, the newest holding the word: its hits come before the rest are read.
    let store = Store::new();
    for i in 0..40 {
        let mut s = header(&format!("s{i:02}"), CWD, "2026-01-01T00:00:00.000Z");
        for k in 0..50 {
            let text = if i == 39 && k == 7 { "the needle".to_owned() } else { format!("hay {k} of {i}") };
            s += &message(&format!("e{i:02}-{k:02}"), None, "user", &text, T + i * 100 + k);
        }
        store.write(CWD, &format!("s{i:02}"), &s);
    }
    struct Counted<'a>(&'a Cell<u64>, &'a Cell<u64>);
    impl arbor_catalog::Progress for Counted<'_> {
        fn begin(&self, _: arbor_catalog::Pass, _: u64, bytes: u64) {
            self.1.set(bytes);
            self.0.set(0);
        }
        fn advance(&self, bytes: u64) {
            self.0.set(self.0.get() + bytes);
        }
    }
    let (read, total) = (Cell::new(0), Cell::new(0));
    let mut cat = store.catalog();
    let mut first_hit_at = None;
    let opts = SearchOptions { scope: Scope::All, limit: 50, fuzzy: false };
    let hits = cat
        .search_with("needle", &opts, &Counted(&read, &total), &mut |h| {
            if !h.is_empty() && first_hit_at.is_none() {
                first_hit_at = Some(read.get());
            }
            arbor_catalog::Flow::Go
        })
        .unwrap();
    assert_eq!(ids(&hits), ["e39-07"]);
    let at = first_hit_at.unwrap();
    assert!(at < total.get() / 2, "the hit came after {at} of {} bytes", total.get());
}

#[test]
fn a_search_after_changes_sees_each_of_them_in_order() {
    // The search takes the refresh's rows of the files that did not change
    // and reads again only the rows the refresh wrote: each kind of change.
    let store = Store::new();
    let session = |id: &str, cwd: &str, text: &str, ms: i64| {
        header(id, cwd, "2026-01-01T00:00:00.000Z") + &message(&format!("{id}-u"), None, "user", text, ms)
    };
    let grows = store.write(CWD, "grows", &session("s-grows", CWD, "a quokka here", T));
    let goes = store.write(CWD, "goes", &session("s-goes", CWD, "a quokka there", T + 1000));
    let touched = store.write(CWD, "touched", &session("s-touched", CWD, "a quokka again", T + 2000));
    store.write("/other", "elsewhere", &session("s-else", "/other", "a quokka afar", T + 3000));
    let mut cat = store.catalog();
    let all = |cat: &mut Catalog| ids(&search(cat, "quokka", Scope::All)).iter().map(|s| s.to_string()).collect();
    let before: Vec<String> = all(&mut cat);
    assert_eq!(before, ["s-else-u", "s-touched-u", "s-goes-u", "s-grows-u"]);

    append(&grows, &message("g2", Some("s-grows-u"), "assistant", "another quokka, newest", T + 9000));
    fs::remove_file(&goes).unwrap();
    // The same bytes written again: a new stat, nothing to read.
    fs::write(&touched, fs::read(&touched).unwrap()).unwrap();
    store.write(CWD, "new", &session("s-new", CWD, "a new quokka", T + 5000));
    let after: Vec<String> = all(&mut cat);
    assert_eq!(after, ["g2", "s-grows-u", "s-new-u", "s-else-u", "s-touched-u"]);
    let here = search(&mut cat, "quokka", Scope::cwd(CWD));
    assert_eq!(ids(&here), ["g2", "s-grows-u", "s-new-u", "s-touched-u"]);
    assert_eq!(here[0].session_id, "s-grows");
    // And again with nothing changed: the same answer from the refresh's rows alone.
    assert_eq!(all(&mut cat), after);
}
