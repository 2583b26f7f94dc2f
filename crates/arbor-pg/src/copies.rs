//! Local copies of large sessions read from the server (docs/postgres.md,
//! "Local copies of what was read"): a command that reads most of a large
//! session from the server (`tree --json`, an export, the context of a long
//! path) leaves the bytes it read in a file of its caller's cache, and the
//! next open of the same version of that session reads them from there, at
//! a local file's speed, fetching from the server only what was appended
//! since.
//!
//! A copy is named by a hash of the session's identity on the server (the
//! server, the row, when it was made, its generation, the schema): a
//! session replaced whole is another name, and lines within one generation
//! are only ever appended, so a copy is a prefix of the session as long as
//! it lives. It is written whole into a file with no name (`O_TMPFILE`: a
//! process that ends first leaves nothing behind), flushed to disk, then
//! linked under a new name of its own and renamed into place, and never
//! written again; before use its last bytes are compared with the
//! server's, and a copy that disagrees is removed. Where the file system
//! has no unnamed files, no copy is made. Copies are kept within a budget, the least recently used
//! removed first. Nothing is kept unless the caller names a directory
//! ([`LocalCopies`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use arbor_log::scan::{read_exact_at, ReadAt};
use sha2::{Digest, Sha256};

use crate::reader::ServerFile;

/// Bytes read from the server held in memory before a copy's file is made
/// (a command that reads a few lines makes none).
const HELD: u64 = 4 << 20;
/// Bytes compared with the server's before a copy is used.
const TAIL: u64 = 4 << 10;
/// Ranges missed by a command fetched to complete a copy, at most.
const HOLES: usize = 4096;
/// Bytes left unread that make a read "nearly whole": the copy is made at once.
const NEARLY: u64 = 64 << 10;
/// Files a process that died left half made (linked, not yet renamed) are removed after this long.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// Where local copies of large sessions read from the server are kept, and
/// how much of them (see the module docs). The CLI names
/// `<cache>/copies`; a library caller that names nothing keeps nothing.
#[derive(Debug, Clone)]
pub struct LocalCopies {
    /// The directory of the copies (made when the first is written).
    pub dir: PathBuf,
    /// The most bytes all copies hold together; the least recently used go first.
    pub budget: u64,
    /// Sessions smaller than this are read from the server as they are (they read fast).
    pub min_bytes: u64,
}

impl LocalCopies {
    /// Copies in `dir`, within 2 GiB in all, of sessions of 8 MiB or more.
    pub fn new(dir: PathBuf) -> LocalCopies {
        LocalCopies { dir, budget: 2 << 30, min_bytes: 8 << 20 }
    }

    /// The file of the copy of the session known on the server as `identity`.
    fn path_of(&self, identity: &str) -> PathBuf {
        let hash = Sha256::digest(identity.as_bytes());
        let hex: String = hash[..16].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}.jsonl"))
    }
}

/// A session on the server read through its local copy (the bytes it
/// holds) and the server (the rest), recording what the server sends for
/// the next copy.
#[derive(Debug)]
pub(crate) struct CopiedFile {
    server: ServerFile,
    len: u64,
    /// The copy in use and how many bytes of the session it holds.
    local: Option<(File, u64)>,
    /// What the server sent, for the next copy (made once it is nearly
    /// whole, or when this is dropped after most of it was read).
    record: Mutex<Option<Recorder>>,
    conf: LocalCopies,
    path: PathBuf,
}

impl CopiedFile {
    /// `server` (a session of `len` bytes known as `identity`) through its copy under `conf`, if any.
    pub fn open(server: ServerFile, len: u64, identity: &str, conf: &LocalCopies) -> CopiedFile {
        let path = conf.path_of(identity);
        let local = open_copy(&path, &server, len);
        let from = local.as_ref().map_or(0, |l| l.1);
        // A copy is made again only when the session grew by an eighth since (each copy is written whole).
        let worth = len > from && len <= conf.budget && (from == 0 || len - from >= (from / 8).max(1 << 20));
        let record = Mutex::new(worth.then(|| Recorder::new(from)));
        CopiedFile { server, len, local, record, conf: conf.clone(), path }
    }

    /// Makes the next copy from what was read, when the command read at
    /// least `share` of what the copy lacks (completing it from the
    /// server); any failure leaves the copies as they were. Once only.
    fn finish(&self, share: f64) -> io::Result<()> {
        let mut slot = self.record.lock().unwrap_or_else(|p| p.into_inner());
        let Some(r) = slot.as_ref() else { return Ok(()) };
        let wanted = self.len - r.from;
        if r.failed || (r.covered as f64) < share * wanted as f64 {
            return Ok(());
        }
        let Some(mut r) = slot.take() else { return Ok(()) };
        drop(slot);
        let holes = r.holes(self.len);
        let missing: u64 = holes.iter().map(|(s, e)| e - s).sum();
        if holes.len() > HOLES || missing > (wanted / 20).max(1 << 20) {
            return Ok(());
        }
        self.server.will_read(&holes);
        for &(s, e) in &holes {
            let bytes = read_exact_at(&self.server, s, (e - s) as usize)?;
            if bytes.len() as u64 != e - s {
                return Ok(());
            }
            r.record(&self.conf.dir, s, &bytes);
        }
        if r.failed {
            return Ok(());
        }
        let Some(file) = r.into_file(&self.conf.dir)? else { return Ok(()) };
        if let Some((old, n)) = &self.local {
            // The copy in use at the start of the new one, copied in the kernel.
            let (mut from, mut to) = (old, &file);
            from.seek(SeekFrom::Start(0))?;
            to.seek(SeekFrom::Start(0))?;
            io::copy(&mut from.take(*n), &mut to)?;
        }
        file.set_len(self.len)?;
        file.sync_data()?;
        name(&file, &self.conf.dir, &self.path)?;
        evict(&self.conf, &self.path);
        Ok(())
    }
}

impl Drop for CopiedFile {
    fn drop(&mut self) {
        // A copy is a cache: one that cannot be made is simply not there next time.
        let _ = self.finish(0.5);
    }
}

impl ReadAt for CopiedFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut done = 0;
        if let Some((file, n)) = &self.local {
            if offset < *n {
                done = buf.len().min((n - offset) as usize);
                file.read_exact_at(&mut buf[..done], offset)?;
            }
        }
        if done == buf.len() || offset + (done as u64) >= self.len {
            return Ok(done);
        }
        let at = offset + done as u64;
        let got = self.server.read_at(&mut buf[done..], at)?;
        let mut record = self.record.lock().unwrap_or_else(|p| p.into_inner());
        let Some(r) = record.as_mut() else { return Ok(done + got) };
        r.record(&self.conf.dir, at, &buf[done..done + got]);
        // What is left unread for the next copy.
        let left = (self.len - r.from).saturating_sub(r.covered);
        drop(record);
        // A command that reads the session whole (a process may end without dropping it) makes the copy now.
        if left <= NEARLY {
            let _ = self.finish(0.0);
        }
        Ok(done + got)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.len)
    }

    fn remote(&self) -> bool {
        self.local.as_ref().is_none_or(|l| l.1 < self.len)
    }

    fn will_read(&self, spans: &[(u64, u64)]) {
        let n = self.local.as_ref().map_or(0, |l| l.1);
        let far: Vec<(u64, u64)> = spans.iter().filter(|s| s.1 > n).map(|&(s, e)| (s.max(n), e)).collect();
        if !far.is_empty() {
            self.server.will_read(&far);
        }
    }
}

/// The copy at `path`, when it holds a prefix of the session `server` reads
/// (`len` bytes) that ends as the server's does; one that does not is removed.
fn open_copy(path: &Path, server: &ServerFile, len: u64) -> Option<(File, u64)> {
    let file =
        OpenOptions::new().read(true).custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32).open(path).ok()?;
    let meta = file.metadata().ok()?;
    let n = meta.len();
    let sound = meta.is_file() && n > 0 && n <= len && {
        let k = n.min(TAIL);
        let mut mine = vec![0; k as usize];
        file.read_exact_at(&mut mine, n - k).is_ok() && {
            // A server that cannot answer now says nothing of the copy: it is kept, not used.
            let Ok(theirs) = server.fetch_exact(n - k, n) else { return None };
            theirs == mine
        }
    };
    if !sound {
        if meta.is_file() {
            let _ = fs::remove_file(path);
        }
        return None;
    }
    // Used now: the last to go when the budget is short.
    let _ = file.set_modified(SystemTime::now());
    Some((file, n))
}

/// Gives the unnamed `file` the name `path` in `dir`: linked under a new
/// name of its own (never over a file it did not make), then renamed.
fn name(file: &File, dir: &Path, path: &Path) -> io::Result<()> {
    let fresh = dir.join(format!(".new-{}", uuid::Uuid::new_v4().simple()));
    let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::linkat(rustix::fs::CWD, proc.as_str(), rustix::fs::CWD, &fresh, rustix::fs::AtFlags::SYMLINK_FOLLOW)?;
    fs::rename(&fresh, path).inspect_err(|_| drop(fs::remove_file(&fresh)))
}

/// Removes the least recently used copies past the budget (never `keep`),
/// and temporary files a process left behind.
fn evict(conf: &LocalCopies, keep: &Path) {
    let Ok(entries) = fs::read_dir(&conf.dir) else { return };
    let now = SystemTime::now();
    let mut copies = vec![];
    for e in entries.flatten() {
        let (path, Ok(meta)) = (e.path(), e.metadata()) else { continue };
        let used = meta.modified().unwrap_or(now);
        if !meta.is_file() {
            continue;
        }
        if path.extension().is_some_and(|x| x == "jsonl") {
            copies.push((used, meta.len(), path));
        } else if e.file_name().to_string_lossy().starts_with(".new-")
            && now.duration_since(used).is_ok_and(|age| age > STALE_TEMP)
        {
            let _ = fs::remove_file(&path);
        }
    }
    copies.sort();
    let mut total: u64 = copies.iter().map(|c| c.1).sum();
    for (_, size, path) in copies {
        if total <= conf.budget {
            break;
        }
        if path != keep && fs::remove_file(&path).is_ok() {
            total -= size;
        }
    }
}

/// What the server sent while a session was read: held in memory up to
/// [`HELD`] bytes, then written where it belongs in a new unnamed file.
#[derive(Debug)]
struct Recorder {
    /// The copy in use holds the bytes before this; the next copy takes them from it.
    from: u64,
    held: Vec<(u64, Vec<u8>)>,
    held_bytes: u64,
    file: Option<File>,
    /// The ranges recorded, sorted, none touching another.
    ranges: Vec<(u64, u64)>,
    /// Their bytes.
    covered: u64,
    failed: bool,
}

impl Recorder {
    fn new(from: u64) -> Recorder {
        Recorder { from, held: vec![], held_bytes: 0, file: None, ranges: vec![], covered: 0, failed: false }
    }

    /// Records `bytes`, the session's from `offset` on (what the copy in use holds is not).
    fn record(&mut self, dir: &Path, offset: u64, bytes: &[u8]) {
        let start = offset.max(self.from);
        let end = offset + bytes.len() as u64;
        if self.failed || start >= end || self.holds(start, end) {
            return;
        }
        let bytes = &bytes[(start - offset) as usize..];
        if self.file.is_none() && self.held_bytes + bytes.len() as u64 <= HELD {
            self.held.push((start, bytes.to_vec()));
            self.held_bytes += bytes.len() as u64;
        } else if self.write(dir, start, bytes).is_err() {
            self.failed = true;
            return;
        }
        self.cover(start, end);
    }

    /// Writes `bytes` at `offset` in the new file (made, with what was held, on first use).
    fn write(&mut self, dir: &Path, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.file(dir)?.write_all_at(bytes, offset)
    }

    /// The new file, made on first use with what was held written into it.
    fn file(&mut self, dir: &Path) -> io::Result<&File> {
        let file = match self.file.take() {
            Some(f) => f,
            None => {
                let file = new_file(dir)?;
                for (at, held) in std::mem::take(&mut self.held) {
                    file.write_all_at(&held, at)?;
                }
                self.held_bytes = 0;
                file
            }
        };
        Ok(self.file.insert(file))
    }

    /// The new file with everything recorded in it (`None` when nothing was).
    fn into_file(mut self, dir: &Path) -> io::Result<Option<File>> {
        if !self.held.is_empty() {
            self.file(dir)?;
        }
        Ok(self.file)
    }

    fn holds(&self, start: u64, end: u64) -> bool {
        let k = self.ranges.partition_point(|r| r.1 < end);
        self.ranges.get(k).is_some_and(|r| r.0 <= start && end <= r.1)
    }

    /// Adds `[start, end)` to the ranges recorded, joining those it touches.
    fn cover(&mut self, mut start: u64, mut end: u64) {
        let first = self.ranges.partition_point(|r| r.1 < start);
        let mut last = first;
        while last < self.ranges.len() && self.ranges[last].0 <= end {
            let (s, e) = self.ranges[last];
            self.covered -= e - s;
            start = start.min(s);
            end = end.max(e);
            last += 1;
        }
        self.covered += end - start;
        self.ranges.splice(first..last, [(start, end)]);
    }

    /// The ranges of `[from, len)` not recorded.
    fn holes(&self, len: u64) -> Vec<(u64, u64)> {
        let mut out = vec![];
        let mut at = self.from;
        for &(s, e) in &self.ranges {
            if s > at {
                out.push((at, s));
            }
            at = at.max(e);
        }
        if at < len {
            out.push((at, len));
        }
        out
    }
}

/// A new file with no name in `dir` (made first, as a directory of this
/// user's only), readable by this user only: gone with the process unless named.
fn new_file(dir: &Path) -> io::Result<File> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(io::Error::other(format!("{} is not a directory", dir.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        }
        Err(e) => return Err(e),
    }
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(dir, OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC, Mode::from_raw_mode(0o600))?;
    Ok(File::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_recorded_join_and_leave_the_right_holes() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Recorder::new(10);
        r.record(dir.path(), 0, &[1; 20]);
        r.record(dir.path(), 40, &[2; 10]);
        r.record(dir.path(), 30, &[3; 10]);
        r.record(dir.path(), 60, &[4; 5]);
        assert_eq!(r.ranges, vec![(10, 20), (30, 50), (60, 65)]);
        assert_eq!(r.covered, 35);
        assert_eq!(r.holes(80), vec![(20, 30), (50, 60), (65, 80)]);
        assert!(r.holds(31, 49) && !r.holds(19, 21));
        r.record(dir.path(), 15, &[5; 50]);
        assert_eq!(r.ranges, vec![(10, 65)]);
        assert_eq!(r.covered, 55);
    }

    #[test]
    fn past_what_is_held_the_bytes_go_where_they_belong_in_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Recorder::new(0);
        let big = vec![7u8; HELD as usize];
        r.record(dir.path(), 5, b"hello");
        r.record(dir.path(), 100, &big);
        let file = r.into_file(dir.path()).unwrap().unwrap();
        let mut got = vec![0; 5];
        file.read_exact_at(&mut got, 5).unwrap();
        assert_eq!(got, b"hello");
        file.read_exact_at(&mut got, 100 + HELD - 5).unwrap();
        assert_eq!(got, [7; 5]);
        // Unnamed until named: nothing is left in the directory.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        name(&file, dir.path(), &dir.path().join("x.jsonl")).unwrap();
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["x.jsonl"]);
        assert_eq!(fs::metadata(dir.path().join("x.jsonl")).unwrap().len(), 100 + HELD);
    }
}
