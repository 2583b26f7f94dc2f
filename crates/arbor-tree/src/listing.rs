//! Listing and discovery of session files (docs/architecture.md, "Listing").
//!
//! Listings stream each file line by line (never holding a whole file) and
//! skip files without a usable header, as pi does.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use arbor_log::reader::{trim_line, LineReader};
use arbor_log::{is_header, parse_iso_ms};

use crate::error::TreeError;
pub use crate::facts::SessionListInfo;
use crate::facts::{ListingFacts, ListingKind};
use crate::store::Store;

fn system_time_ms(t: SystemTime) -> Option<i64> {
    t.duration_since(SystemTime::UNIX_EPOCH).ok().map(|d| d.as_millis() as i64)
}

/// Reads the listing info of one file; `None` when it has no usable header.
pub fn read_session_info(
    reader: impl Read,
    path: &Path,
    mtime: Option<SystemTime>,
) -> Result<Option<SessionListInfo>, TreeError> {
    let mut lines = LineReader::new(std::io::BufReader::with_capacity(256 * 1024, reader));
    let mut facts = ListingFacts::default();
    let mut texts: Vec<String> = vec![];
    while let Some(line) = lines.next_line().map_err(|e| TreeError::io(path, e))? {
        facts.feed_with_text(line.bytes, &mut texts);
        if facts.kind == ListingKind::NotSession {
            return Ok(None);
        }
    }
    Ok(facts.to_info(path, mtime.and_then(system_time_ms), texts.join(" ")))
}

/// The sessions in one directory, newest first.
pub fn list_sessions(store: &dyn Store, dir: &Path) -> Result<Vec<SessionListInfo>, TreeError> {
    let mut out = vec![];
    for f in store.list(dir)? {
        let Some(r) = store.read_from(&f.path, 0)? else { continue };
        if let Some(info) = read_session_info(r, &f.path, f.modified)? {
            out.push(info);
        }
    }
    sort_newest_first(&mut out);
    Ok(out)
}

/// The sessions of every cwd directory under `root`, newest first.
pub fn list_all_sessions(store: &dyn Store, root: &Path) -> Result<Vec<SessionListInfo>, TreeError> {
    let mut out = vec![];
    for dir in store.list_dirs(root)? {
        out.extend(list_sessions(store, &dir)?);
    }
    sort_newest_first(&mut out);
    Ok(out)
}

/// Sorts listings newest first (by `modified`, then by path), as pi lists them.
pub fn sort_newest_first(v: &mut [SessionListInfo]) {
    v.sort_by(|a, b| {
        let (x, y) = (parse_iso_ms(&a.modified), parse_iso_ms(&b.modified));
        y.cmp(&x).then_with(|| a.path.cmp(&b.path))
    });
}

/// pi's `findMostRecentSession`: the newest (by mtime) `.jsonl` file in `dir`
/// whose first line, within its first 512 bytes, is a header with a string id.
pub fn find_most_recent_session(store: &dyn Store, dir: &Path) -> Result<Option<PathBuf>, TreeError> {
    let mut best: Option<(Option<SystemTime>, PathBuf)> = None;
    for f in store.list(dir)? {
        let Some(r) = store.read_from(&f.path, 0)? else { continue };
        // pi reads the first line from the first 512 bytes; an omp-S file's
        // 256-byte title slot may come first, then the header.
        let mut head = Vec::with_capacity(768);
        r.take(768).read_to_end(&mut head).map_err(|e| TreeError::io(&f.path, e))?;
        let parse = |b: &[u8]| serde_json::from_slice::<Value>(trim_line(b)).ok();
        let mut lines = head.split(|&b| b == b'\n');
        let first = lines.next().filter(|l| l.len() < 512).and_then(parse);
        let ok = match first {
            Some(v) if is_header(&v) => true,
            Some(v) if arbor_log::is_title_slot(&v) => lines.next().and_then(parse).is_some_and(|h| is_header(&h)),
            _ => false,
        };
        if !ok {
            continue;
        }
        if best.as_ref().is_none_or(|(t, _)| f.modified > *t) {
            best = Some((f.modified, f.path));
        }
    }
    Ok(best.map(|(_, p)| p))
}
