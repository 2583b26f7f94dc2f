//! Arbitrary session files through the tree and context builders, loaded
//! both ways (index-first light scan and full decode): no panic, no hang
//! (every walk is cycle-safe), no entry twice in the tree, and both loads
//! agree on the entries.
#![no_main]

use std::collections::HashSet;
use std::path::Path;

use arbor_tree::check::tree_findings;
use arbor_tree::{MemoryStore, OpenMode, Session, SessionOptions};
use libfuzzer_sys::fuzz_target;

/// A session in memory never changes behind its back: its reads cannot fail.
const SAME: &str = "a memory store's session does not change while it is read";

fn open(data: &[u8], index_first: bool) -> Option<Session> {
    let store = MemoryStore::new();
    let path = Path::new("/fuzz/s.jsonl");
    store.put(path, data);
    let opts = SessionOptions { index_first, index_dir: None, ..SessionOptions::default().with_store(store) };
    Session::open(path, OpenMode::ReadOnly, opts).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some(mut s) = open(data, true) else {
        assert!(open(data, false).is_none(), "both loads refuse the same files");
        return;
    };
    if let Some(full) = open(data, false) {
        let a: Vec<&str> = s.entries().map(|e| e.expect(SAME).id.as_str()).collect();
        let b: Vec<&str> = full.entries().map(|e| e.expect(SAME).id.as_str()).collect();
        assert_eq!(a, b, "both loads read the same entries");
    }
    let tree = s.get_tree();
    let mut seen = HashSet::new();
    let mut stack: Vec<_> = tree.roots().map(|n| n.expect(SAME)).collect();
    while let Some(n) = stack.pop() {
        assert!(seen.insert(n.position), "no node twice");
        stack.extend(tree.children(&n).map(|c| c.expect(SAME)));
    }
    let mut json = Vec::new();
    tree.write_json(&mut json).expect("writing to memory cannot fail");
    drop(tree);
    let _ = tree_findings(&s);
    let ids: Vec<String> = s.entries().map(|e| e.expect(SAME).id.clone()).take(64).collect();
    for id in &ids {
        let path = s.get_branch(Some(id)).expect(SAME);
        let ctx = arbor_context::plan::build_from_path(&path);
        let _ = arbor_context::convert_to_llm(&ctx.messages);
        let _ = arbor_context::estimate_context_tokens(&ctx.messages);
    }
    if let Some(id) = ids.first() {
        let _ = s.branch(id);
    }
    let entries: Vec<arbor_log::Entry> = s.entries().map(|e| e.expect(SAME).clone()).collect();
    let _ = arbor_context::plan::build_from_entries(&entries, arbor_context::plan::Leaf::Default);
});
