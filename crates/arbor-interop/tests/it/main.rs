//! Integration tests of arbor-interop: imports of the transcripts in
//! `fixtures/import/` (trees, sidechains, compactions, tools, re-imports),
//! exports, diffs, the imported sessions in pi, and the HTML page in a real
//! browser.

// Test helpers may unwrap: a failure is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod browser;
mod diff;
mod export;
mod import;
mod opencode;
mod pi;
mod sessions;

use std::path::{Path, PathBuf};

use arbor_interop::{import_transcripts, Format, ImportOptions, ImportReport};
use arbor_tree::{OpenMode, Session, SessionOptions};

/// The repository's `fixtures/` folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// A transcript under `fixtures/import/`.
pub fn transcript(rel: &str) -> PathBuf {
    fixtures().join("import").join(rel)
}

/// Every transcript of a format, as `arbor import` would be given them.
pub fn transcripts(format: Format) -> Vec<PathBuf> {
    let dir = fixtures().join("import").join(format.as_str());
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    out.sort();
    out
}

/// Imports `paths` into the sessions root `root`; every transcript must import.
pub fn import(format: Format, paths: &[PathBuf], root: &Path) -> Vec<ImportReport> {
    let opts = ImportOptions { sessions_root: root.to_owned() };
    import_transcripts(format, paths, &opts)
        .into_iter()
        .map(|(p, r)| r.unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect()
}

/// Opens a session read-only, writing nothing beside it.
pub fn open(path: &Path) -> Session {
    Session::open(path, OpenMode::ReadOnly, SessionOptions::default().with_index_dir(None)).unwrap()
}

/// The session files the reports name, in order.
pub fn session_files(reports: &[ImportReport]) -> Vec<PathBuf> {
    reports.iter().flat_map(|r| r.sessions.iter().map(|s| s.path.clone())).collect()
}
