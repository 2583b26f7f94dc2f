//! Recall: every literal found in an entry's text (as `rg -F` finds it in
//! the file) is a hit, in generated sessions of many scripts and shapes, some
//! written with Python's `\u` escapes; the first search (a scan) and later
//! ones (through the filters it built) give the same hits in the same order.

use std::collections::{HashMap, HashSet};
use std::process::Command;

use arbor_catalog::{Catalog, CatalogOptions, Hit, NoProgress, Scope, SearchOptions};
use arbor_test_support::recall::{draw_literals, entry_texts, write_recall_sessions};

use crate::Store;

fn search(cat: &mut Catalog, q: &str) -> Vec<Hit> {
    let opts = SearchOptions { scope: Scope::All, limit: 1_000_000, fuzzy: false };
    cat.search(q, &opts, &NoProgress).unwrap()
}

/// The entries `rg -F` finds the literal on (as (file, line number)), or `None` without ripgrep.
fn rg_lines(root: &std::path::Path, lit: &str) -> Option<HashSet<(String, usize)>> {
    let o =
        Command::new("rg").args(["-F", "-n", "--no-heading", "--with-filename", "-e", lit]).arg(root).output().ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    Some(
        text.lines()
            .filter_map(|l| {
                let (file, rest) = l.split_once(".jsonl:")?;
                let n = rest.split(':').next()?.parse().ok()?;
                Some((format!("{file}.jsonl"), n))
            })
            .collect(),
    )
}

#[test]
fn every_literal_in_an_entrys_text_is_a_hit_first_time_and_again() {
    let store = Store::new();
    let sessions = write_recall_sessions(&store.root(), 16, 7);
    let texts = entry_texts(&sessions);
    let by_key: HashMap<(String, String), String> = texts.iter().cloned().collect();
    let literals = draw_literals(&texts, 100, 7);
    // Lines of each file, for ripgrep's answers.
    let line_entry: HashMap<(String, usize), (String, String)> = sessions
        .iter()
        .flat_map(|s| {
            s.entries
                .iter()
                .enumerate()
                .map(|(i, e)| ((s.path.display().to_string(), i + 2), (s.id.clone(), e.clone())))
        })
        .collect();
    let have_rg = rg_lines(&store.root(), "x").is_some();
    if !have_rg {
        eprintln!("(ripgrep is not installed: checked against the decoded text only)");
    }
    // In memory (every search a scan), and on disk (the first builds filters, the rest read through them).
    let mut scanning =
        Catalog::open_with(&store.root(), CatalogOptions { cache_dir: None, threads: 2, background: None }).unwrap();
    let mut filtered = store.catalog();
    let (mut checked, mut from_rg) = (0, 0);
    for lit in &literals {
        let scanned = search(&mut scanning, &lit.text);
        let again = search(&mut filtered, &lit.text);
        let key = |h: &Hit| (h.session_id.clone(), h.entry_id.clone());
        assert_eq!(
            scanned.iter().map(key).collect::<Vec<_>>(),
            again.iter().map(key).collect::<Vec<_>>(),
            "{:?}",
            lit.text
        );
        let found: HashSet<(String, String)> = again.iter().map(key).collect();
        for h in &lit.holders {
            assert!(found.contains(h), "{:?} is in {h:?}'s text: {:?}", lit.text, by_key[h]);
            checked += 1;
        }
        // Every hit holds the literal (up to case), or is named by it.
        for h in &again {
            let text = &by_key[&key(h)];
            let named = lit.text.eq_ignore_ascii_case(&h.entry_id) || h.session_id.starts_with(&lit.text);
            assert!(named || text.to_lowercase().contains(&lit.text.to_lowercase()), "{:?} in {text:?}", lit.text);
        }
        if have_rg {
            for line in rg_lines(&store.root(), &lit.text).unwrap_or_default() {
                let Some(entry) = line_entry.get(&line) else { continue };
                if by_key[entry].contains(&lit.text) {
                    assert!(found.contains(entry), "rg finds {:?} on {line:?}", lit.text);
                    from_rg += 1;
                }
            }
        }
    }
    assert!(checked > 150, "{checked} holders checked");
    assert!(!have_rg || from_rg > 50, "{from_rg} of ripgrep's lines checked");
}

#[test]
fn hits_come_sessions_newest_first_then_last_line_first() {
    let store = Store::new();
    let sessions = write_recall_sessions(&store.root(), 12, 11);
    let mut cat = store.catalog();
    let order: HashMap<String, usize> = sessions.iter().rev().enumerate().map(|(i, s)| (s.id.clone(), i)).collect();
    let line: HashMap<(String, String), usize> = sessions
        .iter()
        .flat_map(|s| s.entries.iter().enumerate().map(|(i, e)| ((s.id.clone(), e.clone()), i)))
        .collect();
    for q in ["a", "e", "re:[0-9a-f]{8}", "备份"] {
        let hits = search(&mut cat, q);
        assert!(hits.len() > 5, "{q}");
        for w in hits.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            let (sa, sb) = (order[&a.session_id], order[&b.session_id]);
            assert!(sa <= sb, "{q}: sessions newest first");
            if sa == sb {
                let (la, lb) = (
                    line[&(a.session_id.clone(), a.entry_id.clone())],
                    line[&(b.session_id.clone(), b.entry_id.clone())],
                );
                assert!(la > lb, "{q}: last line first");
            }
        }
    }
}
