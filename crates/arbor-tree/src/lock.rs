//! The one-writer lock of a local session file (docs/architecture.md,
//! "Locking").
//!
//! It is keyed on the file, not on the name a writer gave: the lock file is
//! `TARGET.lock` beside the file the path resolves to (links followed, `..`
//! and relative paths resolved), and the holder also locks the session file
//! itself, so that a writer coming through a hard link (another name of the
//! same file, with a lock file of its own) is refused too.
//!
//! The lock file is opened without following a link and is never
//! truncated before the holder's pid is in it: the holder writes its pid in
//! place, at a fixed width, and clears it on release. A refused writer asks
//! the kernel's lock table for the holder (Linux) or reads the pid, and
//! tries again while neither names one (the holder may be between taking
//! the lock and writing its pid, or just leaving), so the error always names
//! the holder when there is one.
//!
//! A writer that ends cleanly removes the lock file, without racing one that
//! takes it at that moment: the holder unlinks `TARGET.lock` while it still
//! holds the lock (and only when that name is still its file), then lets go;
//! a writer that gets a lock checks that the name still is the file it
//! locked, and when it is not (the holder removed it between this writer's
//! open and its lock) it opens the name again and starts over. So two
//! writers never hold locks on two different files of one name. A writer
//! killed before it lets go leaves the file behind; the next one takes it.

use std::fmt;
use std::fs::{self, File, TryLockError};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbor_log::files::{ensure_writable, open_lock, open_read, resolve};
use arbor_log::LogError;

use crate::error::{LockHolder, TreeError};

/// A held write lock; dropping it releases the lock.
pub trait WriteLock: Send + fmt::Debug {}

/// How long a refused writer keeps trying to learn who holds the lock.
const HOLDER_PATIENCE: Duration = Duration::from_secs(2);

/// The lock file beside a session: `FILE.lock`, holding the owner's pid.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// A held lock: the lock file (holding our pid) and the session file, both
/// locked; dropping it removes the lock file and releases both.
#[derive(Debug)]
pub(crate) struct FileLock {
    lock_file: File,
    path: PathBuf,
    _data: Option<File>,
}

impl WriteLock for FileLock {}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Removed while still held (see the module docs); where it cannot be
        // (another file took the name, or the directory refuses), an empty
        // file says "nobody" and the next holder writes its own pid.
        if !(names_file(&self.path, &self.lock_file) && remove_lock_file(&self.path)) {
            let _ = self.lock_file.set_len(0);
        }
    }
}

/// True when `path` (not followed) is the file `file` has open.
#[cfg(unix)]
fn names_file(path: &Path, file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::symlink_metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Elsewhere the lock file is never removed, so the name always is the file.
#[cfg(not(unix))]
fn names_file(_path: &Path, _file: &File) -> bool {
    true
}

#[cfg(unix)]
fn remove_lock_file(path: &Path) -> bool {
    fs::remove_file(path).is_ok()
}

/// A file that is open cannot be removed everywhere: it stays, emptied.
#[cfg(not(unix))]
fn remove_lock_file(_path: &Path) -> bool {
    false
}

/// The pid as the lock file holds it: fixed width, so that writing it in
/// place replaces any earlier one whole.
fn pid_record(pid: u32) -> String {
    format!("{pid:<10}\n")
}

/// What refused a writer.
enum Refusal {
    /// The lock file is held.
    LockFile,
    /// The session file itself is held (through another of its names).
    DataFile,
}

/// Takes the write lock of the session file at `path` (see the module docs),
/// or says who holds it. `path` may be missing (a new session).
pub(crate) fn acquire(path: &Path) -> Result<FileLock, TreeError> {
    let target = resolve(path)?;
    // A file its owner may not write is refused before anything is made beside it.
    ensure_writable(&target)?;
    let lp = lock_path(&target);
    if let Some(dir) = lp.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| TreeError::io(dir, e))?;
    }
    let mut lock_file = open_lock(&lp).map_err(|e| lock_file_error(path, &lp, e))?;
    let deadline = Instant::now() + HOLDER_PATIENCE;
    loop {
        let refusal = match lock_file.try_lock() {
            Ok(()) if !names_file(&lp, &lock_file) && Instant::now() < deadline => {
                // The holder removed it as it let go: lock the file the name has
                // now. (A file system that never says the two are one file
                // also never lets a holder remove it: past the deadline, go on.)
                lock_file = open_lock(&lp).map_err(|e| lock_file_error(path, &lp, e))?;
                continue;
            }
            Ok(()) => match lock_data(&target)? {
                Ok(data) => {
                    write_pid(&lock_file, &lp)?;
                    return Ok(FileLock { lock_file, path: lp, _data: data });
                }
                Err(()) => {
                    lock_file.unlock().map_err(|e| TreeError::io(&lp, e))?;
                    Refusal::DataFile
                }
            },
            Err(TryLockError::WouldBlock) => Refusal::LockFile,
            Err(TryLockError::Error(e)) => return Err(TreeError::io(&lp, e)),
        };
        let holder = match refusal {
            Refusal::LockFile => holder_of(&mut lock_file),
            Refusal::DataFile => open_read(&target).ok().and_then(|f| kernel_holder(&f)),
        };
        if holder.is_some() || Instant::now() >= deadline {
            return Err(TreeError::Locked { path: path.to_owned(), holder: holder.map(LockHolder::pid) });
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Locks the session file itself when it exists: `Ok(Ok(None))` when there
/// is none yet, `Ok(Err(()))` when another writer holds it.
fn lock_data(target: &Path) -> Result<Result<Option<File>, ()>, TreeError> {
    let file = match open_read(target) {
        Ok(f) => f,
        Err(LogError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return Ok(Ok(None)),
        Err(e) => return Err(e.into()),
    };
    match file.try_lock() {
        Ok(()) => Ok(Ok(Some(file))),
        Err(TryLockError::WouldBlock) => Ok(Err(())),
        Err(TryLockError::Error(e)) => Err(TreeError::io(target, e)),
    }
}

/// Writes our pid over whatever the lock file held, then cuts it to that length.
fn write_pid(file: &File, lp: &Path) -> Result<(), TreeError> {
    let record = pid_record(std::process::id());
    write_at_start(file, record.as_bytes()).map_err(|e| TreeError::io(lp, e))?;
    file.set_len(record.len() as u64).map_err(|e| TreeError::io(lp, e))
}

#[cfg(unix)]
fn write_at_start(file: &File, bytes: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(bytes, 0)
}

#[cfg(not(unix))]
fn write_at_start(mut file: &File, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(bytes)
}

/// Who holds the lock file: the kernel's answer, else the pid it holds.
fn holder_of(file: &mut File) -> Option<u32> {
    kernel_holder(file).or_else(|| recorded_pid(file))
}

/// The pid written in the lock file, when it reads as one whole record.
fn recorded_pid(file: &mut File) -> Option<u32> {
    let mut s = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(64).read_to_string(&mut s).ok()?;
    // A record is whole once its newline is there (earlier Arbor wrote none).
    let digits = s.strip_suffix('\n').unwrap_or(&s).trim_end();
    digits.parse().ok().filter(|&p| p != 0)
}

/// The pid holding an exclusive `flock` on `file`, from `/proc/locks`.
#[cfg(target_os = "linux")]
fn kernel_holder(file: &File) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata().ok()?;
    let dev = meta.dev();
    let (major, minor) = (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff), (dev & 0xff) | ((dev >> 12) & !0xff));
    let node = format!("{major:02x}:{minor:02x}:{}", meta.ino());
    let table = fs::read_to_string("/proc/locks").ok()?;
    parse_proc_locks(&table, &node)
}

#[cfg(not(target_os = "linux"))]
fn kernel_holder(_file: &File) -> Option<u32> {
    None
}

/// The pid of the `FLOCK … WRITE` line on `node` (`maj:min:inode`) in a
/// `/proc/locks` table (lines of waiting locks, marked `->`, are skipped).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_proc_locks(table: &str, node: &str) -> Option<u32> {
    table.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, "WRITE", pid, n, ..] if *n == node => pid.parse().ok().filter(|&p| p != 0),
            _ => None,
        }
    })
}

/// The lock file could not be opened: say what to do.
fn lock_file_error(path: &Path, lp: &Path, e: LogError) -> TreeError {
    match e {
        LogError::Io { source, .. } if source.kind() == io::ErrorKind::PermissionDenied => {
            let dir = lp.parent().unwrap_or(Path::new(".")).to_owned();
            TreeError::LockDirectory { path: path.to_owned(), lock: lp.to_owned(), dir, source }
        }
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_table_names_the_flock_holder() {
        let table = "1: POSIX  ADVISORY  WRITE 77 fe:00:99 0 EOF\n\
                     2: FLOCK  ADVISORY  WRITE 4242 fe:00:10010648 0 EOF\n\
                     2: -> FLOCK  ADVISORY  WRITE 5151 fe:00:10010648 0 EOF\n";
        assert_eq!(parse_proc_locks(table, "fe:00:10010648"), Some(4242));
        assert_eq!(parse_proc_locks(table, "fe:00:99"), None, "POSIX locks are not ours");
    }

    #[test]
    fn a_record_is_read_whole_or_not_at_all() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.lock");
        for (text, pid) in [("1234      \n", Some(1234)), ("1234", Some(1234)), ("", None), ("12a\n", None)] {
            fs::write(&p, text).unwrap();
            assert_eq!(recorded_pid(&mut File::open(&p).unwrap()), pid, "{text:?}");
        }
        assert_eq!(pid_record(7).len(), pid_record(u32::MAX).len());
    }
}
