//! Every `.jsonl` file under a directory, for the workspace's tests that
//! sweep all fixture logs (included with `#[path]` by the crates that need it).

use std::path::{Path, PathBuf};

/// The `.jsonl` files under `dir`, recursively, sorted; a directory that cannot be read fails the test.
pub fn jsonl_under(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for e in entries {
            let p = e.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    let mut out = vec![];
    walk(dir, &mut out);
    out.sort();
    out
}
