//! Integration tests of the catalog: refreshes against real files (appends,
//! rewrites, replacements, live writers), a damaged or deleted catalog, and
//! search semantics.

// Test helpers may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod recall;
mod refresh;
mod search;
mod sessions;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use arbor_catalog::{Catalog, CatalogOptions, NoProgress, Scope};

/// A sessions root and a cache directory in one temporary directory.
#[derive(Debug)]
pub struct Store {
    pub dir: tempfile::TempDir,
}

impl Default for Store {
    fn default() -> Self {
        Store { dir: tempfile::tempdir().unwrap() }
    }
}

impl Store {
    pub fn new() -> Store {
        Store::default()
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("sessions")
    }

    pub fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    pub fn catalog(&self) -> Catalog {
        let opts = CatalogOptions { cache_dir: Some(self.cache()), threads: 2, background: None };
        Catalog::open_with(&self.root(), opts).unwrap()
    }

    /// The file of session `name` in the sessions of `cwd`.
    pub fn file(&self, cwd: &str, name: &str) -> PathBuf {
        self.root().join(arbor_tree::paths::encode_cwd(cwd)).join(format!("{name}.jsonl"))
    }

    /// Writes a session file.
    pub fn write(&self, cwd: &str, name: &str, text: &str) -> PathBuf {
        let f = self.file(cwd, name);
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        fs::write(&f, text).unwrap();
        f
    }
}

/// A header line.
pub fn header(id: &str, cwd: &str, time: &str) -> String {
    format!(r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{time}","cwd":"{cwd}"}}"#) + "\n"
}

/// A message entry line.
pub fn message(id: &str, parent: Option<&str>, role: &str, text: &str, ms: i64) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    let time = arbor_log::time::format_iso_ms(ms);
    let content = serde_json::to_string(text).unwrap();
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{time}","message":{{"role":"{role}","content":{content},"timestamp":{ms}}}}}"#
    ) + "\n"
}

/// A label entry line.
pub fn label(id: &str, parent: &str, target: &str, text: &str, ms: i64) -> String {
    let time = arbor_log::time::format_iso_ms(ms);
    format!(
        r#"{{"type":"label","id":"{id}","parentId":"{parent}","timestamp":"{time}","targetId":"{target}","label":"{text}"}}"#
    ) + "\n"
}

/// Appends text to a file.
pub fn append(path: &Path, text: &str) {
    fs::OpenOptions::new().append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

/// The listing of the catalog after a refresh, as `arbor_tree`'s direct reading gives it (paths, ids, counts, …).
pub fn listed(cat: &mut Catalog, scope: &Scope) -> Vec<arbor_tree::listing::SessionListInfo> {
    cat.refresh(scope, &NoProgress).unwrap();
    cat.sessions(scope).unwrap()
}

/// What `arbor_tree` lists for the whole root, reading every file (the reference).
pub fn direct(root: &Path) -> Vec<arbor_tree::listing::SessionListInfo> {
    let mut list = arbor_tree::listing::list_all_sessions(&arbor_tree::FileStore, root).unwrap();
    for i in &mut list {
        i.all_messages_text.clear();
    }
    list
}
