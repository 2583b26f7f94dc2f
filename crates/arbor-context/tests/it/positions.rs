//! `context_positions`: building from the kept positions gives the context of
//! the whole path, for every leaf of every fixture session.

use std::fs;
use std::path::{Path, PathBuf};

use arbor_context::{build_context_from_entries, build_context_from_path, context_positions, PathHead};
use arbor_log::Entry;
use arbor_tree::{Session, SessionOptions};

fn all_jsonl(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all_jsonl(&p, out);
        } else if p.extension().and_then(|e| e.to_str()) == Some("jsonl") {
            out.push(p);
        }
    }
}

#[test]
fn kept_positions_build_the_same_context_at_every_leaf() {
    let mut files = vec![];
    all_jsonl(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"), &mut files);
    let mut compared = 0;
    for p in files {
        let Ok(s) = Session::open(&p, SessionOptions::read_only()) else { continue };
        // Every leaf of a small file; a spread of leaves of a large one.
        for leaf in (0..s.len()).step_by((s.len() / 150).max(1)) {
            let Some(id) = s.id_at(leaf) else { continue };
            let idx = s.branch_indices(Some(id));
            let full: Vec<&Entry> = idx.iter().map(|&i| s.entry_at(i).unwrap()).collect();
            let heads: Vec<PathHead> = idx
                .iter()
                .map(|&i| PathHead {
                    id: s.id_at(i).unwrap(),
                    entry_type: s.entry_type_at(i).unwrap(),
                    role: s.message_role_at(i),
                })
                .collect();
            let keep = context_positions(&heads, |k| s.entry_at(idx[k]));
            let kept: Vec<&Entry> = keep.iter().map(|&k| full[k]).collect();
            let whole = build_context_from_path(&full);
            assert_eq!(build_context_from_path(&kept), whole, "{} at {id}", p.display());
            let owned: Vec<Entry> = keep.iter().map(|&k| s.decode_at(idx[k]).unwrap()).collect();
            assert_eq!(build_context_from_entries(owned), whole, "{} at {id} (owned)", p.display());
            compared += 1;
        }
    }
    assert!(compared > 50, "{compared} leaves compared");
}
