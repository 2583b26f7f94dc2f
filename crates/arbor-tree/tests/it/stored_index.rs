//! An index a store keeps itself ([`arbor_tree::stored_index`]): built
//! with the public builder, a line or a chunk at a time as a store's writes
//! would, it holds the cache's bytes part for part; a session opened
//! through it reads the same as one read in full, reads only what the
//! command needs, and one that does not match the file is noticed.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arbor_log::scan::ReadAt;
use arbor_log::{Durability, TailRepair};
use arbor_tree::stored_index::{scan, Extent, IdRow, IndexSource, Part, StoredIndex, Unindexable};
use arbor_tree::{
    AppendHandle, FileStore, Indexed, OpenMode, Session, SessionOptions, Store, StoredFile, TreeError, WriteLock,
};

use arbor_test_support::jsonl_under;

/// An index as a store keeps it: four growing parts and an id table.
#[derive(Debug, Default)]
struct Kept {
    extent: Extent,
    parts: [Vec<u8>; 4],
    ids: HashMap<String, Vec<IdRow>>,
}

impl Kept {
    /// Adds `lines` as one write would (one scan, one lookup, one finish).
    fn add(&mut self, lines: &[&[u8]]) -> Result<(), Unindexable> {
        let scanned = scan(self.extent, lines)?;
        let looked: HashMap<String, Vec<IdRow>> = scanned
            .lookups()
            .iter()
            .map(|id| (id.to_string(), self.ids.get(*id).cloned().unwrap_or_default()))
            .collect();
        let add = scanned.finish(&|id| looked.get(id).cloned().unwrap_or_default())?;
        for (part, bytes) in self.parts.iter_mut().zip(&add.parts) {
            part.extend_from_slice(bytes);
        }
        for (id, row) in add.ids {
            self.ids.entry(id.to_string()).or_default().push(row);
        }
        self.extent = add.extent;
        Ok(())
    }

    /// The index of the file's bytes, written `chunk` lines at a time.
    fn of(bytes: &[u8], chunk: usize) -> Result<Kept, Unindexable> {
        let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
        let mut kept = Kept::default();
        for c in lines.chunks(chunk.max(1)) {
            kept.add(c)?;
        }
        Ok(kept)
    }
}

#[derive(Debug)]
struct Source(Arc<Kept>);

impl IndexSource for Source {
    fn read_part(&self, part: Part, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let bytes = &self.0.parts[part.code() as usize];
        let from = bytes.get(offset as usize..).unwrap_or_default();
        let n = from.len().min(buf.len());
        buf[..n].copy_from_slice(&from[..n]);
        Ok(n)
    }

    fn id_rows(&self, id: &str) -> io::Result<Vec<IdRow>> {
        Ok(self.0.ids.get(id).cloned().unwrap_or_default())
    }
}

/// A file read through a counter of the bytes read.
#[derive(Debug)]
struct Counted {
    file: std::fs::File,
    read: Arc<AtomicU64>,
}

impl ReadAt for Counted {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = ReadAt::read_at(&self.file, buf, offset)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn len(&self) -> io::Result<u64> {
        ReadAt::len(&self.file)
    }
}

/// Local files, each with the index this store keeps of it (made by
/// [`KeepingStore::keep`]), every byte read counted.
#[derive(Debug, Default)]
struct KeepingStore {
    kept: Mutex<HashMap<PathBuf, Arc<Kept>>>,
    read: Arc<AtomicU64>,
}

impl KeepingStore {
    fn keep(&self, path: &Path, chunk: usize) -> Result<(), Unindexable> {
        let kept = Kept::of(&std::fs::read(path).unwrap(), chunk)?;
        self.kept.lock().unwrap().insert(std::path::absolute(path).unwrap(), Arc::new(kept));
        Ok(())
    }
}

impl Store for KeepingStore {
    fn exists(&self, path: &Path) -> Result<bool, TreeError> {
        FileStore.exists(path)
    }
    fn read_from(&self, path: &Path, offset: u64) -> Result<Option<Box<dyn io::Read + Send>>, TreeError> {
        FileStore.read_from(path, offset)
    }
    fn open_indexed(&self, path: &Path) -> Result<Option<Indexed>, TreeError> {
        let file = std::fs::File::open(path).map_err(|e| TreeError::Log(arbor_log::LogError::io(path, e)))?;
        let src: Arc<dyn ReadAt> = Arc::new(Counted { file, read: self.read.clone() });
        let kept = self.kept.lock().unwrap().get(path).cloned();
        let index = kept.map(|k| StoredIndex::new(Arc::new(Source(k.clone())), k.extent));
        Ok(Some((src, index)))
    }
    fn open_append(
        &self,
        path: &Path,
        d: Durability,
    ) -> Result<(Box<dyn AppendHandle>, Option<TailRepair>), TreeError> {
        FileStore.open_append(path, d)
    }
    fn rewrite(&self, path: &Path, bytes: &[u8]) -> Result<(), TreeError> {
        FileStore.rewrite(path, bytes)
    }
    fn backup(&self, path: &Path, what: &str) -> Result<PathBuf, TreeError> {
        FileStore.backup(path, what)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn WriteLock>, TreeError> {
        FileStore.lock(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<StoredFile>, TreeError> {
        FileStore.list(dir)
    }
    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>, TreeError> {
        FileStore.list_dirs(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<(), TreeError> {
        FileStore.create_dir_all(dir)
    }
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

/// A session of `n` entries with branches (every 40th entry goes back 30),
/// labels, an entry type and a role Arbor does not know, blank lines, and
/// roots naming a parent no entry holds; the leaf is the last line.
fn branched(n: usize, pad: usize) -> String {
    let mut text = format!("{HEADER}\n");
    let body = "x".repeat(pad);
    for i in 0..n {
        let parent = match i {
            0 => "null".to_owned(),
            _ if i % 40 == 0 => format!("\"e{}\"", i - 30),
            _ if i % 97 == 13 => "\"gone\"".to_owned(),
            _ => format!("\"e{}\"", i - 1),
        };
        let ts = format!("2026-01-01T00:{:02}:{:02}.000Z", i / 60 % 60, i % 60);
        match i % 7 {
            3 => writeln!(text, r#"{{"type":"label","id":"e{i}","parentId":{parent},"timestamp":"{ts}","targetId":"e1","label":"L{i}"}}"#),
            5 => writeln!(text, r#"{{"type":"weird_kind","id":"e{i}","parentId":{parent},"timestamp":"{ts}","n":{i}}}"#),
            6 => writeln!(text, r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"narrator","content":"n{i}"}}}}"#),
            k => {
                let role = if k % 2 == 0 { "user" } else { "assistant" };
                writeln!(text, r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"{role}","content":[{{"type":"text","text":"m{i} {body}"}}]}}}}"#)
            }
        }
        .unwrap();
        if i % 500 == 250 {
            text.push('\n');
        }
    }
    text
}

/// The parts of the index file the cache holds for `path` (written by an
/// open through the cache): parents, kinds, records, strings.
fn cache_parts(path: &Path) -> Vec<[Vec<u8>; 4]> {
    let dir = tempfile::tempdir().unwrap();
    let opts = SessionOptions { index_dir: Some(dir.path().to_owned()), index_min_bytes: 0, ..crate::opts() };
    Session::open(path, OpenMode::ReadOnly, opts).unwrap();
    let mut out = vec![];
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let b = std::fs::read(f.unwrap().path()).unwrap();
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        let (n, strings) = (word(72) as usize, word(80) as usize);
        let at = [96, 96 + 4 * n, 96 + 6 * n, 96 + 38 * n, 96 + 38 * n + strings];
        out.push(std::array::from_fn(|k| b[at[k]..at[k + 1]].to_vec()));
    }
    out
}

#[test]
fn the_index_a_store_keeps_holds_the_caches_bytes_whatever_the_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, branched(3000, 20)).unwrap();
    let cache = cache_parts(&path);
    assert_eq!(cache.len(), 1, "the cache indexed the session");
    let bytes = std::fs::read(&path).unwrap();
    for chunk in [1, 7, 1000, usize::MAX] {
        let kept = Kept::of(&bytes, chunk).unwrap();
        assert!(kept.parts == cache[0], "written {chunk} lines at a time: the parts differ from the cache's");
        assert_eq!(kept.extent.bytes, bytes.len() as u64);
        assert_eq!(kept.extent.lines as usize, bytes.iter().filter(|&&b| b == b'\n').count());
    }
}

fn open_kept(path: &Path, store: &Arc<KeepingStore>) -> Session {
    let opts = SessionOptions { index_min_bytes: 0, store: store.clone(), ..crate::opts() };
    Session::open(path, OpenMode::ReadOnly, opts).unwrap()
}

#[test]
fn every_clean_fixture_reads_the_same_through_the_index_a_store_keeps() {
    let mut indexed = 0;
    for p in jsonl_under(&crate::fixtures()) {
        let store = Arc::new(KeepingStore::default());
        if store.keep(&p, 3).is_err() {
            continue;
        }
        let full = Session::open(&p, OpenMode::ReadOnly, SessionOptions { index_first: false, ..crate::opts() });
        let Ok(full) = full else { continue }; // an empty file: nothing to index, nothing to open
        let kept = open_kept(&p, &store);
        let entries = store.kept.lock().unwrap().values().map(|k| k.extent.entries).sum::<u64>();
        if entries > 0 {
            assert!(kept.opened_from_index(), "{}: not opened through the kept index", p.display());
        }
        let (a, b) = (crate::index_first::observe(&kept), crate::index_first::observe(&full));
        assert!(a == b, "{}: through the kept index, the session reads otherwise", p.display());
        indexed += 1;
    }
    assert!(indexed >= 10, "only {indexed} fixtures were indexable");
}

#[test]
fn a_first_open_through_the_kept_index_reads_what_the_command_needs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, branched(20_000, 200)).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    let leaf_path = |s: &Session| s.get_branch(None).unwrap().iter().map(|e| e.id.to_string()).collect::<Vec<_>>();

    // Without an index the store keeps, the first open scans every byte.
    let bare = Arc::new(KeepingStore::default());
    let expected = leaf_path(&open_kept(&path, &bare));
    assert!(bare.read.load(Ordering::Relaxed) >= size);

    let store = Arc::new(KeepingStore::default());
    store.keep(&path, 500).unwrap();
    let s = open_kept(&path, &store);
    assert!(s.opened_from_index());
    assert_eq!(leaf_path(&s), expected);
    assert!(s.diagnostics().is_empty());
    let read = store.read.load(Ordering::Relaxed);
    assert!(read * 10 < size, "read {read} of {size} bytes for the path at the leaf");
    // An id the index vouches for, and one nobody holds.
    assert!(s.get_entry("e7").unwrap().is_some() && s.get_entry("nobody").unwrap().is_none());
}

#[test]
fn a_kept_index_that_does_not_match_the_file_is_noticed_and_the_file_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let text = branched(3000, 20);
    std::fs::write(&path, &text).unwrap();
    let store = Arc::new(KeepingStore::default());
    store.keep(&path, 100).unwrap();
    // The last entry's id changed in place, same length: the index now says another id is there.
    let last = text.trim_end().rsplit('\n').next().unwrap();
    let changed = text.replacen(last, &last.replace("\"id\":\"e2999\"", "\"id\":\"z2999\""), 1);
    assert_eq!(changed.len(), text.len());
    std::fs::write(&path, &changed).unwrap();
    let mut s = open_kept(&path, &store);
    let leaf = s.leaf_id().map(str::to_owned);
    let positions: Vec<_> = (0..s.len()).map(arbor_tree::Position::new).collect();
    assert!(s.verify_lines(&positions).unwrap(), "the changed line was noticed");
    assert!(s.notices().iter().any(|n| n.contains("the index the store keeps did not match")), "{:?}", s.notices());
    assert_ne!(leaf.as_deref(), s.leaf_id());
    assert_eq!(s.leaf_id(), Some("z2999"));
}

#[test]
fn what_an_index_cannot_hold_is_refused_with_the_line_at_fault() {
    let entry = |id: &str, parent: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"x"}}}}"#
        )
    };
    let cases: Vec<(String, u64, &str)> = vec![
        (format!("{HEADER}\n{}\n{}\n", entry("a", "null"), entry("a", "null")), 3, "an id an earlier entry holds"),
        (format!("{HEADER}\n{}\n{}\n", entry("a", "\"b\""), entry("b", "null")), 3, "an id an earlier entry holds"),
        (format!("{HEADER}\n{}\n", entry("a", "\"a\"")), 2, "its own parent"),
        (format!("{HEADER}\nnot json\n"), 2, "not a record"),
        (format!("{HEADER}\n{}", entry("a", "null")), 2, "no newline"),
        (format!("{}\n", HEADER.replace("\"version\":3", "\"version\":2")), 1, "not a current-version"),
        (format!("{}\n{HEADER}\n", entry("a", "null")), 1, "not a current-version"),
        (format!("{HEADER}\n{HEADER}\n"), 2, "not an entry"),
    ];
    for (text, line, reason) in cases {
        for chunk in [1, 100] {
            let e = Kept::of(text.as_bytes(), chunk).map(|_| ()).unwrap_err();
            assert_eq!(e.line, line, "{text}");
            assert!(e.reason.starts_with(reason), "{text}: {e}");
        }
    }
    // A header alone, then entries: one index, whatever the writes.
    let whole = format!("{HEADER}\n{}\n\n{}\n", entry("a", "null"), entry("b", "\"a\""));
    let kept = Kept::of(whole.as_bytes(), 1).unwrap();
    assert_eq!((kept.extent.entries, kept.extent.lines, kept.extent.header_bytes), (2, 4, HEADER.len() as u64 + 1));
}
