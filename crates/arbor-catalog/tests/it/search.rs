//! Search semantics on a hand-made session with two branches: tokens,
//! prefixes, fuzzy words, phrases, regexes, Unicode, scopes, the ranking,
//! and the branch flags of each hit.

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
    cat.search(q, &SearchOptions { scope, limit: 50 }, &NoProgress).unwrap()
}

fn ids(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.entry_id.as_str()).collect()
}

#[test]
fn tokens_must_all_match_and_rank_exact_then_prefix_then_fuzzy_then_newest() {
    let (store, _) = store();
    let mut cat = store.catalog();
    let hits = search(&mut cat, "parse", Scope::cwd(CWD));
    assert_eq!(ids(&hits), ["u1", "a1"]);
    let rel: Vec<Relevance> = hits.iter().map(|h| h.relevance).collect();
    assert_eq!(rel, [Relevance::Exact, Relevance::Prefix]);
    assert_eq!(ids(&search(&mut cat, "pars", Scope::cwd(CWD))), ["a3", "a1", "u1"], "all prefixes: newest first");
    assert_eq!(ids(&search(&mut cat, "parse rust", Scope::cwd(CWD))), ["u1"]);
    assert_eq!(ids(&search(&mut cat, "PARSE json", Scope::cwd(CWD))), ["u1", "a1"]);
    assert!(search(&mut cat, "parse nothinghere", Scope::cwd(CWD)).is_empty());
    // Fuzzy: the characters in order, from the word's first one.
    let fuzzy = search(&mut cat, "bnchmrks", Scope::cwd(CWD));
    assert_eq!(ids(&fuzzy), ["a3"]);
    assert_eq!(fuzzy[0].relevance, Relevance::Fuzzy);
    assert!(search(&mut cat, "enchmarks", Scope::cwd(CWD)).is_empty(), "the first character starts the word");
    // A token of several words matches them side by side.
    assert_eq!(ids(&search(&mut cat, "serde_json", Scope::cwd(CWD))), ["a1"]);
    assert_eq!(ids(&search(&mut cat, "simd-json", Scope::cwd(CWD))), ["a3", "u3"]);
}

#[test]
fn phrases_are_found_as_written_up_to_case_and_spaces() {
    let (store, _) = store();
    let mut cat = store.catalog();
    assert_eq!(ids(&search(&mut cat, r#""simd_json parsing""#, Scope::cwd(CWD))), ["a3"]);
    assert_eq!(ids(&search(&mut cat, r#""WITH the tokio""#, Scope::cwd(CWD))), ["u3"]);
    assert_eq!(ids(&search(&mut cat, r#""with the tok""#, Scope::cwd(CWD))), ["u3"], "the last word may be cut");
    // The index finds both, pi's rule keeps neither: the words are joined by - and _.
    assert!(search(&mut cat, r#""simd json""#, Scope::cwd(CWD)).is_empty());
    assert_eq!(ids(&search(&mut cat, r#"use "simd-json""#, Scope::cwd(CWD))), ["u3"]);
    // An unclosed quote makes plain tokens.
    assert_eq!(ids(&search(&mut cat, r#""twice fast"#, Scope::cwd(CWD))), ["a3"]);
}

#[test]
fn regexes_match_the_text_case_insensitively() {
    let (store, _) = store();
    let mut cat = store.catalog();
    assert_eq!(ids(&search(&mut cat, "re:SIMD[-_]json", Scope::cwd(CWD))), ["a3", "u3"]);
    assert_eq!(ids(&search(&mut cat, r"re:^how do", Scope::cwd(CWD))), ["u1"]);
    let err = cat.search("re:(", &SearchOptions { scope: Scope::All, limit: 5 }, &NoProgress).unwrap_err();
    assert!(err.to_string().starts_with("invalid search query"), "{err}");
    assert!(cat.search("re:", &SearchOptions { scope: Scope::All, limit: 5 }, &NoProgress).is_err());
}

#[test]
fn unicode_words_accents_and_symbols() {
    let (store, _) = store();
    let mut cat = store.catalog();
    assert_eq!(ids(&search(&mut cat, "GRÖSSE größe", Scope::cwd(CWD))), Vec::<&str>::new());
    assert_eq!(ids(&search(&mut cat, "größe", Scope::cwd(CWD))), ["a1"]);
    assert_eq!(ids(&search(&mut cat, "日本語", Scope::cwd(CWD))), ["a1"]);
    // Accents do not matter to words.
    assert_eq!(ids(&search(&mut cat, "cafe", Scope::cwd(CWD))), ["a2", "u2"]);
    assert_eq!(ids(&search(&mut cat, "crème", Scope::cwd(CWD))), ["a2"]);
    // A token without a word is found in the text as it is.
    let emoji = search(&mut cat, "😀", Scope::cwd(CWD));
    assert_eq!(ids(&emoji), ["a2"]);
    assert_eq!(emoji[0].snippet.chars().nth(emoji[0].marks[0][0]), Some('😀'));
}

#[test]
fn hits_say_whether_they_are_on_the_active_path_and_the_labels_on_their_path() {
    let (store, f) = store();
    let mut cat = store.catalog();
    let hits = search(&mut cat, "json", Scope::cwd(CWD));
    let by_id = |id: &str| hits.iter().find(|h| h.entry_id == id).unwrap();
    assert!(by_id("a3").on_active_path && by_id("u1").on_active_path && by_id("a1").on_active_path);
    let labels_of = |h: &Hit| h.labels.iter().map(|l| format!("{}={}", l.entry_id, l.label)).collect::<Vec<_>>();
    assert_eq!(labels_of(by_id("a3")), ["u1=start-here"]);
    let cafe = search(&mut cat, "café", Scope::cwd(CWD));
    assert!(cafe.iter().all(|h| !h.on_active_path), "branch A is off the active path");
    assert_eq!(cafe[0].path, f);
    assert_eq!((cafe[0].session_id.as_str(), cafe[0].cwd.as_str()), ("sess-1", CWD));
    assert_eq!(cafe[0].role, Some(arbor_log::Role::Assistant));
    assert_eq!(cafe[0].timestamp, arbor_log::format_iso_ms(T + 3000));

    // Appending moves the leaf to branch A and labels another entry: the next search sees both.
    append(&f, &message("u4", Some("a2"), "user", "back on the café branch", T + 7000));
    append(&f, &label("l2", "u4", "u2", "cafe-branch", T + 8000));
    let cafe = search(&mut cat, "café", Scope::cwd(CWD));
    // The new label's text is searchable too.
    assert_eq!(ids(&cafe), ["l2", "u4", "a2", "u2"]);
    assert!(cafe.iter().all(|h| h.on_active_path));
    assert_eq!(labels_of(&cafe[0]), ["u1=start-here", "u2=cafe-branch"]);
    assert!(!search(&mut cat, "benchmarks", Scope::cwd(CWD))[0].on_active_path);
}

#[test]
fn the_scope_and_the_limit() {
    let (store, _) = store();
    let mut cat = store.catalog();
    assert_eq!(ids(&search(&mut cat, "parse", Scope::All)), ["o1", "u1", "a1"]);
    assert_eq!(ids(&search(&mut cat, "elsewhere", Scope::cwd(CWD))), Vec::<&str>::new());
    let two = cat.search("parse", &SearchOptions { scope: Scope::All, limit: 2 }, &NoProgress).unwrap();
    assert_eq!(ids(&two), ["o1", "u1"]);
    let re = cat.search("re:pars", &SearchOptions { scope: Scope::All, limit: 2 }, &NoProgress).unwrap();
    assert_eq!(ids(&re), ["a3", "a1"]);
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
    assert_eq!(marked, ["parsing", "twice"]);
    assert_eq!(h.snippet, "Benchmarks show simd_json parsing twice as fast");
}
