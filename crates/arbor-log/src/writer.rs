//! Appending and rewriting session files without ever losing a byte.
//!
//! [`Appender`] appends one line per entry and first makes sure the file ends
//! cleanly: a last line without its newline is either completed (when it is a
//! whole JSON object) or moved to a side file `FILE.torn-<ms>` and cut off, so a
//! new entry is never glued to torn bytes. [`atomic_write`] replaces a file via
//! a temporary file in the same directory, fsync, rename and a directory fsync.
//!
//! A write that fails (a full disk) leaves nothing behind: an append is cut
//! back to where the file ended, and a side file that could not be written
//! whole is removed. Side files are created exclusively, never through a
//! link ([`crate::files`]).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::LogError;
use crate::files::{create_side, ensure_writable, is_link};
use crate::reader::{parse_line, Parsed};

/// Whether appends reach the disk before they return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Leave flushing to the OS (as pi does).
    #[default]
    Buffered,
    /// `fdatasync` after every append.
    Fsync,
}

/// What [`Appender::open`] did to the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailRepair {
    /// The last line was a whole record without its newline: the newline was added.
    AddedNewline,
    /// The last line was torn: its bytes were moved to `side_file` and cut off.
    MovedTornTail {
        /// Where the torn bytes went (`FILE.torn-<ms>`).
        side_file: PathBuf,
        /// How many bytes were moved.
        bytes: u64,
    },
}

/// Appends lines to one file.
#[derive(Debug)]
pub struct Appender {
    file: File,
    path: PathBuf,
    durability: Durability,
}

impl Appender {
    /// Opens `path` for appending (creating it if missing) and repairs its
    /// tail. A file that is read-only ([`crate::files::ensure_writable`]) or
    /// not a regular file is refused before anything is written.
    pub fn open(path: &Path, durability: Durability) -> Result<(Appender, Option<TailRepair>), LogError> {
        ensure_writable(path)?;
        let mut o = OpenOptions::new();
        o.read(true).append(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.custom_flags(libc::O_NONBLOCK);
        }
        let mut file = o.open(path).map_err(|e| LogError::io(path, e))?;
        let meta = file.metadata().map_err(|e| LogError::io(path, e))?;
        if !meta.is_file() {
            return Err(LogError::NotRegular { path: path.to_owned(), kind: "not a regular file" });
        }
        let repair = repair_tail(&mut file, path, durability)?;
        Ok((Appender { file, path: path.to_owned(), durability }, repair))
    }

    /// Appends one record: `json` must be one line of JSON without a newline.
    pub fn append_line(&mut self, json: &str) -> Result<(), LogError> {
        let mut buf = Vec::with_capacity(json.len() + 1);
        buf.extend_from_slice(json.as_bytes());
        buf.push(b'\n');
        self.write_all(&buf)
    }

    /// Appends several records with one write.
    pub fn append_lines<S: AsRef<str>>(&mut self, lines: &[S]) -> Result<(), LogError> {
        let mut buf = Vec::new();
        for l in lines {
            buf.extend_from_slice(l.as_ref().as_bytes());
            buf.push(b'\n');
        }
        self.write_all(&buf)
    }

    /// Appends `buf` whole or not at all: a failed write (a full disk) is
    /// cut back to where the file ended, so no partial line stays behind.
    fn write_all(&mut self, buf: &[u8]) -> Result<(), LogError> {
        let len = self.file.metadata().map_err(|e| LogError::io(&self.path, e))?.len();
        if let Err(e) = self.file.write_all(buf) {
            // Cutting back may fail too (the file is then damaged, as after a
            // crash, and the next append moves the torn tail aside).
            let _ = self.file.set_len(len);
            return Err(LogError::io(&self.path, e));
        }
        if self.durability == Durability::Fsync {
            self.file.sync_data().map_err(|e| LogError::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Forces everything appended so far to disk.
    pub fn sync(&mut self) -> Result<(), LogError> {
        self.file.sync_data().map_err(|e| LogError::io(&self.path, e))
    }

    /// The file being appended to.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Makes `file` end with `\n` or be empty (see [`Appender`]).
pub fn repair_tail(file: &mut File, path: &Path, durability: Durability) -> Result<Option<TailRepair>, LogError> {
    let io = |e| LogError::io(path, e);
    let len = file.metadata().map_err(io)?.len();
    if len == 0 {
        return Ok(None);
    }
    // Find the last newline, reading backwards in chunks.
    let mut end = len;
    let mut last_nl: Option<u64> = None;
    let mut chunk = vec![0u8; 64 * 1024];
    while end > 0 && last_nl.is_none() {
        let start = end.saturating_sub(chunk.len() as u64);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start)).map_err(io)?;
        file.read_exact(&mut chunk[..n]).map_err(io)?;
        if let Some(p) = chunk[..n].iter().rposition(|&b| b == b'\n') {
            last_nl = Some(start + p as u64);
        }
        end = start;
    }
    let tail_start = last_nl.map_or(0, |p| p + 1);
    if tail_start == len {
        return Ok(None);
    }
    let mut tail = Vec::with_capacity((len - tail_start) as usize);
    file.seek(SeekFrom::Start(tail_start)).map_err(io)?;
    file.read_to_end(&mut tail).map_err(io)?;
    let whole = matches!(parse_line(&tail).0, Parsed::Object(_));
    let blank = matches!(parse_line(&tail).0, Parsed::Blank);
    if whole || blank {
        file.write_all(b"\n").map_err(io)?;
        if durability == Durability::Fsync {
            file.sync_data().map_err(io)?;
        }
        return Ok(Some(TailRepair::AddedNewline));
    }
    let side = write_side(path, "torn", &mut &tail[..])?;
    file.set_len(tail_start).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(Some(TailRepair::MovedTornTail { side_file: side, bytes: len - tail_start }))
}

/// A name beside `path` that listings ignore: `FILE.<what>-<ms>` (a counter is
/// added if that name exists, as a file or as a link).
pub fn side_file(path: &Path, what: &str) -> PathBuf {
    let ms = crate::clock::SystemClock.now_ms_value();
    let base = path.as_os_str().to_string_lossy().into_owned();
    let mut candidate = PathBuf::from(format!("{base}.{what}-{ms}"));
    let mut n = 1;
    while candidate.exists() || is_link(&candidate) {
        candidate = PathBuf::from(format!("{base}.{what}-{ms}-{n}"));
        n += 1;
    }
    candidate
}

/// Writes everything `from` reads to a new side file `FILE.<what>-<ms>`
/// (created exclusively, never through a link) and fsyncs it; returns its
/// name. A side file that cannot be written whole is removed.
pub fn write_side(path: &Path, what: &str, from: &mut dyn Read) -> Result<PathBuf, LogError> {
    write_side_by(path, what, &mut |w| std::io::copy(from, w).map(|_| ()))
}

/// [`write_side`] with the bytes written by `write` (through a buffer).
pub fn write_side_by(
    path: &Path,
    what: &str,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<PathBuf, LogError> {
    let side = side_file(path, what);
    let owner = fs::metadata(path).ok();
    let written = create_side(&side).and_then(|f| {
        if let Some(m) = &owner {
            keep_owner(&f, m);
        }
        let mut w = std::io::BufWriter::new(f);
        write(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()
    });
    if let Err(e) = written {
        // Only a file this call created is removed (create_side refuses any other).
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            let _ = fs::remove_file(&side);
        }
        return Err(LogError::io(&side, e));
    }
    Ok(side)
}

/// Gives `file` the owner and group of `like` (the file it stands in for or
/// beside): only root may give a file away, so for others this keeps the
/// group at most, and a refusal leaves the file as it is (their own).
pub fn keep_owner(file: &File, like: &fs::Metadata) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(now) = file.metadata() else { return };
        if (now.uid(), now.gid()) == (like.uid(), like.gid()) {
            return;
        }
        if std::os::unix::fs::fchown(file, Some(like.uid()), Some(like.gid())).is_err() {
            let _ = std::os::unix::fs::fchown(file, None, Some(like.gid()));
        }
    }
    #[cfg(not(unix))]
    let _ = (file, like);
}

/// Refuses to replace `path` (links followed) when the file has other names
/// (hard links): a rename would leave them on the old content, and what is
/// written through them later would be lost to this name.
pub fn ensure_one_name(path: &Path) -> Result<(), LogError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = fs::metadata(path) {
            if m.nlink() > 1 {
                return Err(LogError::HardLinked { path: path.to_owned(), names: m.nlink() });
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Copies `path` to a side file `FILE.<what>-<ms>` (see [`write_side`]) and returns its name.
pub fn backup_copy(path: &Path, what: &str) -> Result<PathBuf, LogError> {
    let mut src = crate::files::open_read(path)?;
    write_side(path, what, &mut src)
}

/// Replaces `path` with `contents` atomically: a temporary file in the same
/// directory, fsync, rename over the target, fsync of the directory.
pub fn atomic_write(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), LogError> {
    atomic_write_file(path, |file| {
        let mut w = std::io::BufWriter::new(file);
        write(&mut w).and_then(|_| w.flush())
    })
}

/// [`atomic_write`] for a writer that places its bytes itself: `write` gets
/// the temporary file (positioned writes, `std::os::unix::fs::FileExt`),
/// which then replaces `path` as [`atomic_write`]'s does.
pub fn atomic_write_file(
    path: &Path,
    write: impl FnOnce(&mut fs::File) -> std::io::Result<()>,
) -> Result<(), LogError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| LogError::io(&dir, e))?;
    // Keep the owner, group and permissions of the file being replaced (a
    // new file gets 0644, not tempfile's 0600): root rewriting a user's
    // session leaves it the user's.
    let old = fs::metadata(path).ok();
    if let Some(m) = &old {
        keep_owner(tmp.as_file(), m);
    }
    if let Some(p) = old.map(|m| m.permissions()).or_else(default_permissions) {
        tmp.as_file().set_permissions(p).map_err(|e| LogError::io(path, e))?;
    }
    write(tmp.as_file_mut()).map_err(|e| LogError::io(path, e))?;
    tmp.as_file().sync_all().map_err(|e| LogError::io(path, e))?;
    tmp.persist(path).map_err(|e| LogError::io(path, e.error))?;
    sync_dir(&dir).map_err(|e| LogError::io(&dir, e))?;
    Ok(())
}

/// Creates the new file `path` holding `bytes`, exclusively and whole: the
/// bytes go to a temporary file in the same directory (fsynced), which then
/// takes the name only if nothing is there (not even a link, which is never
/// followed); else an `AlreadyExists` error and nothing changed. For files
/// whose name others can guess (an import's output).
pub fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<(), LogError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| LogError::io(&dir, e))?;
    if let Some(p) = default_permissions() {
        tmp.as_file().set_permissions(p).map_err(|e| LogError::io(path, e))?;
    }
    tmp.as_file_mut().write_all(bytes).map_err(|e| LogError::io(path, e))?;
    tmp.as_file().sync_all().map_err(|e| LogError::io(path, e))?;
    tmp.persist_noclobber(path).map_err(|e| LogError::io(path, e.error))?;
    sync_dir(&dir).map_err(|e| LogError::io(&dir, e))?;
    Ok(())
}

fn default_permissions() -> Option<fs::Permissions> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Some(fs::Permissions::from_mode(0o644))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// fsyncs a directory so that a rename or create in it is durable (no-op where unsupported).
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn torn_tail_is_moved_aside_not_glued() {
        let d = tmp();
        let p = d.path().join("s.jsonl");
        fs::write(&p, "{\"a\":1}\n{\"b\":").unwrap();
        let (mut a, repair) = Appender::open(&p, Durability::Fsync).unwrap();
        let Some(TailRepair::MovedTornTail { side_file, bytes }) = repair else { panic!("{repair:?}") };
        assert_eq!(bytes, 5);
        assert_eq!(fs::read_to_string(&side_file).unwrap(), "{\"b\":");
        a.append_line("{\"c\":3}").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "{\"a\":1}\n{\"c\":3}\n");
    }

    #[test]
    fn whole_last_line_gets_its_newline() {
        let d = tmp();
        let p = d.path().join("s.jsonl");
        fs::write(&p, "{\"a\":1}").unwrap();
        let (mut a, repair) = Appender::open(&p, Durability::Buffered).unwrap();
        assert_eq!(repair, Some(TailRepair::AddedNewline));
        a.append_lines(&["{\"b\":2}", "{\"c\":3}"]).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
    }

    #[test]
    fn clean_file_is_untouched() {
        let d = tmp();
        let p = d.path().join("s.jsonl");
        fs::write(&p, "{\"a\":1}\n").unwrap();
        let (_, repair) = Appender::open(&p, Durability::Buffered).unwrap();
        assert_eq!(repair, None);
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tmp();
        let p = d.path().join("s.jsonl");
        fs::write(&p, "old\n").unwrap();
        atomic_write(&p, |w| w.write_all(b"new\n")).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new\n");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o644);
            fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
            atomic_write(&p, |w| w.write_all(b"newer\n")).unwrap();
            assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o640, "kept");
        }
        let b = backup_copy(&p, "corrupt").unwrap();
        assert!(b.to_string_lossy().contains("s.jsonl.corrupt-"));
    }
}
