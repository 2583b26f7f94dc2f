//! Opening the user's files safely (docs/reliability.md): Arbor reads and
//! writes only regular files, never creates or truncates a file through a
//! symbolic link planted beside a session, and never replaces a file its
//! owner may not write.
//!
//! - [`open_read`]: a session file for reading; anything but a regular file
//!   (a FIFO, `/dev/zero`, a directory, a link to one) is refused before a
//!   byte is read, and opening never blocks.
//! - [`create_side`]: a new file beside a session (`FILE.backup-<ms>`, …),
//!   created exclusively, so a link of that name is an error, never followed.
//! - [`open_lock`]: the lock file, created or reopened without following a
//!   link and without truncating it.
//! - [`resolve`]: the file a path names (links followed; a loop is named).
//! - [`ensure_writable`]: refuses a file without write permission, checked
//!   on its bits too, so that a process that may write anything (root) still
//!   leaves a read-only file alone.

use std::fs::{self, File, OpenOptions};
use std::io;
#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::LogError;

/// `ELOOP`: too many links, or `O_NOFOLLOW` met a link.
#[cfg(unix)]
const ELOOP: i32 = libc::ELOOP;
#[cfg(not(unix))]
const ELOOP: i32 = -1;

/// What a non-regular file is, for the error.
fn kind_of(meta: &fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Refuses `file` (opened from `path`) unless it is a regular file.
fn require_regular(file: &File, path: &Path) -> Result<(), LogError> {
    let meta = file.metadata().map_err(|e| LogError::io(path, e))?;
    if meta.is_file() {
        Ok(())
    } else {
        Err(LogError::NotRegular { path: path.to_owned(), kind: kind_of(&meta) })
    }
}

/// Maps an error of opening `path` (links followed) to the clearest error.
fn open_error(path: &Path, e: io::Error) -> LogError {
    if e.raw_os_error() == Some(ELOOP) {
        LogError::LinkLoop { path: path.to_owned() }
    } else {
        LogError::io(path, e)
    }
}

/// Opens `path` for reading: links are followed, but only a regular file is
/// read (a FIFO or a device is refused without blocking on it). A missing
/// file is an `Io` error of kind `NotFound`.
pub fn open_read(path: &Path) -> Result<File, LogError> {
    let mut o = OpenOptions::new();
    o.read(true);
    // A FIFO would block the open until a writer came; refused right after.
    #[cfg(unix)]
    o.custom_flags(libc::O_NONBLOCK);
    let file = o.open(path).map_err(|e| open_error(path, e))?;
    require_regular(&file, path)?;
    Ok(file)
}

/// `file` (opened by [`open_read`]) as a reader of at most the bytes it
/// holds now: a file that grows while it is read is read as it was, and a
/// "regular" file whose size says 0 but whose reads never end (a kernel
/// file such as `/proc/self/pagemap`) reads as empty instead of filling
/// memory.
pub fn bounded(file: File, path: &Path) -> Result<std::io::Take<File>, LogError> {
    let len = file.metadata().map_err(|e| LogError::io(path, e))?.len();
    Ok(std::io::Read::take(file, len))
}

/// Creates the new file `path` beside a session, exclusively: a file or a
/// link of that name (even a dangling one) is an error, never followed. It
/// is readable by its owner only (it may hold a private session's lines).
pub fn create_side(path: &Path) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    o.mode(0o600);
    o.open(path)
}

/// Opens (creating it if missing) the lock file `path` for reading and
/// writing, without following a link and without truncating it. A new one
/// is created exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`); an existing one is
/// taken only when it is Arbor's: a regular file with no other name (a hard
/// link planted there would let the lock's pid overwrite another file),
/// owned by this user (or any user, for root), holding nothing but a lock
/// record. A link or anything else in its place is an error, and nothing is
/// written to it.
pub fn open_lock(path: &Path) -> Result<File, LogError> {
    // The name may come and go under us (a holder removes it as it lets go).
    let mut tries = 0;
    loop {
        tries += 1;
        match open_lock_once(path, true) {
            Err(LogError::Io { source, .. }) if source.kind() == io::ErrorKind::AlreadyExists && tries < 100 => {}
            Ok(file) => return Ok(file),
            Err(e) => return Err(e),
        }
        match open_lock_once(path, false) {
            Err(LogError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound && tries < 100 => {}
            Ok(file) => {
                check_lock_file(&file, path)?;
                return Ok(file);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Opens the lock file `path`: created exclusively when `new`, else only an
/// existing one; never through a link, never blocking.
fn open_lock_once(path: &Path, new: bool) -> Result<File, LogError> {
    let mut o = OpenOptions::new();
    o.read(true).write(true);
    if new {
        o.create_new(true);
    }
    #[cfg(unix)]
    o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = o.open(path).map_err(|e| {
        let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        if is_link || e.raw_os_error() == Some(ELOOP) {
            LogError::LinkInTheWay { path: path.to_owned(), what: "write lock" }
        } else {
            LogError::io(path, e)
        }
    })?;
    require_regular(&file, path)?;
    Ok(file)
}

/// The longest lock file Arbor writes: a pid at a fixed width and a newline.
const LOCK_RECORD_MAX: u64 = 64;

/// Refuses an existing lock file that is not Arbor's (see [`open_lock`]).
fn check_lock_file(file: &File, path: &Path) -> Result<(), LogError> {
    let meta = file.metadata().map_err(|e| LogError::io(path, e))?;
    let not_ours = |why: String| LogError::NotOurs { path: path.to_owned(), what: "write lock", why };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() > 1 {
            return Err(not_ours(format!("the file has {} names: a hard link to another file", meta.nlink())));
        }
        if let Some(me) = effective_uid() {
            if me != 0 && meta.uid() != me {
                return Err(not_ours(format!("it belongs to user {}", meta.uid())));
            }
        }
    }
    if meta.len() > LOCK_RECORD_MAX {
        return Err(not_ours(format!("it holds {} bytes, a lock holds a pid", meta.len())));
    }
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, LOCK_RECORD_MAX + 1), &mut text)
        .map_err(|e| LogError::io(path, e))?;
    if !text.iter().all(|b| b.is_ascii_digit() || *b == b' ' || *b == b'\n') {
        return Err(not_ours("it holds something else than a pid".to_owned()));
    }
    Ok(())
}

/// This process's effective user id: the owner of `/proc/self` (Linux), or
/// `None` where that cannot be read.
#[cfg(unix)]
fn effective_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self").ok().map(|m| m.uid())
}

/// The file `path` names: symbolic links followed, `.` and `..` resolved,
/// absolute. A missing file (or a dangling link) is its resolved directory
/// joined with its name; a loop of links is [`LogError::LinkLoop`].
pub fn resolve(path: &Path) -> Result<PathBuf, LogError> {
    match fs::canonicalize(path) {
        Ok(p) => Ok(p),
        Err(e) if e.raw_os_error() == Some(ELOOP) => Err(LogError::LinkLoop { path: path.to_owned() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let Some(name) = path.file_name() else { return Err(LogError::io(path, e)) };
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            match fs::canonicalize(dir) {
                Ok(d) => Ok(d.join(name)),
                Err(_) => Ok(std::path::absolute(path).unwrap_or_else(|_| path.to_owned())),
            }
        }
        Err(e) => Err(LogError::io(path, e)),
    }
}

/// True when `path` is a symbolic link.
pub fn is_link(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Refuses to change the existing file `path` (links followed) when its
/// owner may not write it: no write bit at all (so even root leaves a 0444
/// file alone), or the system refuses to open it for writing. Opening it
/// changes nothing (no truncation, no time stamp). A missing file passes.
pub fn ensure_writable(path: &Path) -> Result<(), LogError> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(open_error(path, e)),
    };
    if !meta.is_file() {
        return Err(LogError::NotRegular { path: path.to_owned(), kind: kind_of(&meta) });
    }
    let mode = mode_of(&meta);
    if meta.permissions().readonly() {
        return Err(LogError::ReadOnly { path: path.to_owned(), mode });
    }
    let mut o = OpenOptions::new();
    o.write(true);
    #[cfg(unix)]
    o.custom_flags(libc::O_NONBLOCK);
    match o.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            Err(LogError::ReadOnly { path: path.to_owned(), mode })
        }
        Err(e) => Err(open_error(path, e)),
    }
}

fn mode_of(meta: &fs::Metadata) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o7777
    }
    #[cfg(not(unix))]
    {
        if meta.permissions().readonly() {
            0o444
        } else {
            0o644
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn reading_refuses_what_is_not_a_regular_file() {
        let d = tempfile::tempdir().unwrap();
        let err = open_read(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(
            err,
            "/dev/zero: not a regular file (a character device); Arbor reads and writes only regular files"
        );
        let link = d.path().join("zero.jsonl");
        symlink("/dev/zero", &link).unwrap();
        assert!(open_read(&link).unwrap_err().to_string().contains("a character device"));
        assert!(open_read(d.path()).unwrap_err().to_string().contains("a directory"));
        let fifo = d.path().join("fifo.jsonl");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert!(open_read(&fifo).unwrap_err().to_string().contains("a FIFO"), "and it did not block");
    }

    #[test]
    fn loops_are_named() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a.jsonl"), d.path().join("b.jsonl"));
        symlink(&b, &a).unwrap();
        symlink(&a, &b).unwrap();
        assert!(matches!(open_read(&a), Err(LogError::LinkLoop { .. })));
        assert!(matches!(resolve(&a), Err(LogError::LinkLoop { .. })));
    }

    #[test]
    fn the_lock_and_side_files_never_follow_a_link() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim.txt");
        fs::write(&victim, "precious").unwrap();
        let lock = d.path().join("s.jsonl.lock");
        symlink(&victim, &lock).unwrap();
        let err = open_lock(&lock).unwrap_err();
        assert!(matches!(err, LogError::LinkInTheWay { .. }), "{err}");
        let dangling = d.path().join("s.jsonl.backup-1");
        symlink(d.path().join("made-elsewhere"), &dangling).unwrap();
        assert!(create_side(&dangling).is_err());
        assert!(!d.path().join("made-elsewhere").exists());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn a_file_without_write_bits_is_read_only_even_for_root() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        fs::write(&p, "x\n").unwrap();
        ensure_writable(&p).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o444)).unwrap();
        let err = ensure_writable(&p).unwrap_err().to_string();
        assert!(err.contains("read-only (mode 0444)"), "{err}");
        ensure_writable(&d.path().join("missing.jsonl")).unwrap();
    }

    #[test]
    fn resolving_follows_links_and_keeps_missing_names() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real.jsonl");
        fs::write(&real, "x").unwrap();
        let link = d.path().join("link.jsonl");
        symlink(&real, &link).unwrap();
        let canon = fs::canonicalize(&real).unwrap();
        assert_eq!(resolve(&link).unwrap(), canon);
        fs::create_dir(d.path().join("sub")).unwrap();
        assert_eq!(resolve(&d.path().join("sub/../real.jsonl")).unwrap(), canon);
        let missing = resolve(&d.path().join("new.jsonl")).unwrap();
        assert_eq!(missing, canon.with_file_name("new.jsonl"));
    }
}
