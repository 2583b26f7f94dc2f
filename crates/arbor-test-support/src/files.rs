//! Files for tests: the fixtures, generated sessions, directory snapshots.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The repository's `fixtures/` directory (read by tests, never written).
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// The `.jsonl` files under `dir`, recursively, sorted; a directory that
/// cannot be read fails the test.
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

/// Writes a clean v3 session of `entries` entries to `path` and returns its
/// text: one chain of user and assistant messages (each with `pad` bytes of
/// text, so 4,000 entries with a pad of 300 make more than 1 MiB, enough to
/// be indexed), a label every 101 entries, and a side branch every 10.
pub fn write_big_session(path: &Path, entries: usize, pad: usize) -> String {
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    );
    let body = "x".repeat(pad);
    let mut parent = "null".to_owned();
    for i in 0..entries {
        if i % 101 == 50 {
            let _ = write!(
                text,
                "{{\"type\":\"label\",\"id\":\"e{i}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"targetId\":\"e3\",\"label\":\"L{i}\"}}"
            );
        } else {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let content = if role == "user" {
                format!("\"m{i} {body}\"")
            } else {
                format!("[{{\"type\":\"text\",\"text\":\"a{i} {body}\"}}]")
            };
            let _ = write!(
                text,
                "{{\"type\":\"message\",\"id\":\"e{i}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:{:02}.000Z\",\"message\":{{\"role\":\"{role}\",\"content\":{content}}}}}",
                i % 60
            );
        }
        text.push('\n');
        if i % 10 != 3 {
            parent = format!("\"e{i}\"");
        }
    }
    std::fs::write(path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text
}

/// Edits a [`write_big_session`] file in place so that an index of it is
/// stale while its size and modification time stay the same: moves ten
/// bytes of padding from entry `a`'s line to the next one's (lines in other
/// places, same edges) and renames entry `b` to `f{b}` (an id of the same
/// length). Returns the edited text.
pub fn edit_in_place(p: &Path, text: &str, a: usize, b: usize) -> String {
    let mtime = std::fs::metadata(p).and_then(|m| m.modified()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let pad = "x".repeat(10);
    let (from, to) = (format!("\"m{a} {pad}"), format!("\"a{} {pad}", a + 1));
    assert!(text.contains(&from) && text.contains(&to), "entry {a} of a big session");
    let edited = text
        .replacen(&from, &format!("\"m{a} "), 1)
        .replacen(&to, &format!("\"a{} {pad}{pad}", a + 1), 1)
        .replacen(&format!("\"id\":\"e{b}\""), &format!("\"id\":\"f{b}\""), 1);
    assert_eq!(edited.len(), text.len());
    std::fs::write(p, &edited).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let f = std::fs::File::options().write(true).open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    f.set_modified(mtime).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    edited
}

/// The bytes of the index file `index` with its stamp forged to the status
/// change time `file` has now, so that the index "matches" the file after
/// an [`edit_in_place`] (the index's own check cannot tell).
pub fn forged_index(index: &Path, file: &Path) -> Vec<u8> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let ctime = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
    let mut bytes = std::fs::read(index).unwrap_or_else(|e| panic!("{}: {e}", index.display()));
    bytes[32..48].copy_from_slice(&ctime.to_le_bytes());
    bytes
}

/// Everything a directory tree holds, as it is now: for every path under it
/// (relative), the kind, permissions, size, modification time and contents.
/// Two snapshots are equal exactly when nothing under the directory was
/// created, removed, written or touched in between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirSnapshot(BTreeMap<PathBuf, (String, Option<SystemTime>, Vec<u8>)>);

impl DirSnapshot {
    /// A snapshot of `dir` and everything under it.
    pub fn of(dir: &Path) -> DirSnapshot {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_owned()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
                let p = e.unwrap_or_else(|e| panic!("{}: {e}", d.display())).path();
                let meta = std::fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                let rel = p.strip_prefix(dir).map(Path::to_owned).unwrap_or_else(|_| p.clone());
                let kind = format!("{:?} {:?} {}", meta.file_type(), meta.permissions(), meta.len());
                let contents = if meta.is_file() {
                    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                } else {
                    vec![]
                };
                if meta.is_dir() {
                    stack.push(p);
                }
                out.insert(rel, (kind, meta.modified().ok(), contents));
            }
        }
        DirSnapshot(out)
    }

    /// The paths in the snapshot, sorted.
    pub fn paths(&self) -> Vec<&Path> {
        self.0.keys().map(PathBuf::as_path).collect()
    }

    /// The paths that differ between two snapshots (added, removed or changed).
    pub fn changed(&self, later: &DirSnapshot) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .0
            .iter()
            .filter(|(p, v)| later.0.get(*p) != Some(*v))
            .map(|(p, _)| p.clone())
            .chain(later.0.keys().filter(|p| !self.0.contains_key(*p)).cloned())
            .collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_sees_every_new_changed_or_touched_file() {
        let dir = std::env::temp_dir().join(format!("arbor-test-support-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a"), b"one").unwrap();
        let before = DirSnapshot::of(&dir);
        assert_eq!(before, DirSnapshot::of(&dir));
        std::fs::write(dir.join("sub/b"), b"").unwrap();
        assert_eq!(before.changed(&DirSnapshot::of(&dir)), [PathBuf::from("sub"), PathBuf::from("sub/b")]);
        std::fs::remove_file(dir.join("sub/b")).unwrap();
        std::fs::write(dir.join("sub/a"), b"two").unwrap();
        assert!(before.changed(&DirSnapshot::of(&dir)).contains(&PathBuf::from("sub/a")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
