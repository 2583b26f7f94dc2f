//! Every imported session opens in pi (its npm package, through `cargo xtask
//! pi`) with the context Arbor builds, at the leaf and at every entry.

use std::path::{Path, PathBuf};
use std::process::Command;

use arbor_context::build_context_from_path;
use arbor_interop::Format;
use serde_json::Value;

use crate::{import, open, session_files, transcripts};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn node_present() -> bool {
    Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn every_imported_session_opens_in_pi_with_the_context_arbor_builds() {
    if !node_present() {
        assert!(std::env::var_os("ARBOR_REQUIRE_PI").is_none(), "ARBOR_REQUIRE_PI is set but node is not on the PATH");
        eprintln!("skipped: node is not on the PATH, so pi cannot open the imported sessions here (CI has node)");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let mut files = session_files(&import(Format::Claude, &transcripts(Format::Claude), root.path()));
    files.extend(session_files(&import(Format::Codex, &transcripts(Format::Codex), root.path())));
    let out = root.path().join("pi.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/pi_context.mjs");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(workspace())
        .args(["xtask", "pi"])
        .arg(&script)
        .arg(&out)
        .args(&files)
        .status()
        .unwrap();
    assert!(status.success(), "cargo xtask pi {} failed: {status}", script.display());
    let pi: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let mut compared = 0;
    for file in &files {
        let theirs = &pi[file.to_str().unwrap()];
        let s = open(file);
        assert_eq!(theirs["leafId"].as_str(), s.leaf_id(), "{}", file.display());
        assert_eq!(theirs["entries"].as_u64(), Some(s.len() as u64), "{}", file.display());
        let leaf = build_context_from_path(&s.get_branch(None).unwrap()).to_json();
        assert_eq!(theirs["contexts"]["(leaf)"], leaf, "{} at the leaf", file.display());
        for e in s.entries().map(Result::unwrap) {
            let ours = build_context_from_path(&s.get_branch(Some(&e.id)).unwrap()).to_json();
            assert_eq!(theirs["contexts"][&e.id], ours, "{} at {}", file.display(), e.id);
            compared += 1;
        }
    }
    assert!(compared > 80, "{compared} contexts compared");
}
