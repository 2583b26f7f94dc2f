//! Where a pull writes: `ROOT/DIR/FILE`, reached without following a link.
//!
//! The root is the folder the user named (a link there is theirs to make).
//! Below it, names come from the server's rows: they are checked first
//! ([`SessionKey::check`]), and the folder and the file are then opened
//! relative to the folder above them with `O_NOFOLLOW`, so a symbolic link
//! planted inside the root (`DIR` → `/etc`, `FILE` → `~/.bashrc`) is
//! refused, never followed, even one swapped in while the pull runs. A new
//! file is written to a temporary name created exclusively in the same
//! folder and renamed over `FILE`; a grown one is appended to through a
//! descriptor opened without following a link.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::error::PgError;
use crate::key::SessionKey;

/// The folder of a pulled session, open, and the file's name in it.
#[derive(Debug)]
pub(crate) struct Dest {
    dir: File,
    /// The folder as a path (for messages and the local lock).
    dir_path: PathBuf,
    name: String,
    /// `ROOT/DIR/FILE`.
    pub path: PathBuf,
}

/// What an open relative to a folder met.
fn refused(path: &Path, what: &str) -> PgError {
    PgError::Refused {
        name: path.display().to_string(),
        reason: format!("{what}; Arbor does not follow links below the folder it pulls into: nothing was written"),
    }
}

fn io_err(path: &Path, e: impl Into<io::Error>) -> PgError {
    PgError::local(path, e.into())
}

impl Dest {
    /// Opens (making it when missing) the folder of `key` under `root`. The
    /// key must have been checked.
    pub fn open(root: &Path, key: &SessionKey) -> Result<Dest, PgError> {
        std::fs::create_dir_all(root).map_err(|e| io_err(root, e))?;
        let root_dir = File::open(root).map_err(|e| io_err(root, e))?;
        if key.dir.is_empty() {
            return Ok(Dest {
                dir: root_dir,
                dir_path: root.to_owned(),
                name: key.name.clone(),
                path: root.join(&key.name),
            });
        }
        let dir_path = root.join(&key.dir);
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let dir = match rustix::fs::openat(&root_dir, key.dir.as_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                match rustix::fs::mkdirat(&root_dir, key.dir.as_str(), Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(io_err(&dir_path, e)),
                }
                rustix::fs::openat(&root_dir, key.dir.as_str(), flags, Mode::empty())
                    .map_err(|e| open_dir_error(&root_dir, &dir_path, key, e))?
            }
            Err(e) => return Err(open_dir_error(&root_dir, &dir_path, key, e)),
        };
        Ok(Dest { dir: File::from(dir), path: dir_path.join(&key.name), dir_path, name: key.name.clone() })
    }

    /// True when `ROOT/DIR` still names the folder this holds open (not a
    /// link or another folder swapped in since): checked after the local
    /// lock, which goes by path.
    pub fn still_in_place(&self) -> bool {
        let Ok(held) = rustix::fs::fstat(&self.dir) else { return false };
        match rustix::fs::statat(rustix::fs::CWD, self.dir_path.as_path(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(now) => now.st_dev == held.st_dev && now.st_ino == held.st_ino,
            Err(_) => false,
        }
    }

    /// The file's bytes, or `None` when there is no file yet.
    pub fn read(&self) -> Result<Option<Vec<u8>>, PgError> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.dir, self.name.as_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(self.open_file_error(e)),
        };
        let mut f = File::from(fd);
        self.require_regular(&f)?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).map_err(|e| io_err(&self.path, e))?;
        Ok(Some(bytes))
    }

    /// Writes a new file holding `bytes`: a temporary file created
    /// exclusively beside it, synced, renamed over the name.
    pub fn create(&self, bytes: &[u8]) -> Result<(), PgError> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let (tmp, fd) = (0..)
            .map(|n| format!(".{}.{}-{n}.tmp", self.name, std::process::id()))
            .find_map(|tmp| match rustix::fs::openat(&self.dir, tmp.as_str(), flags, Mode::from_raw_mode(0o644)) {
                Err(Errno::EXIST) => None,
                other => Some((tmp, other)),
            })
            .unwrap_or_else(|| unreachable!("an unbounded counter always finds a free name"));
        let mut f = File::from(fd.map_err(|e| io_err(&self.dir_path.join(&tmp), e))?);
        let written = f.write_all(bytes).and_then(|_| f.sync_all()).and_then(|_| {
            rustix::fs::renameat(&self.dir, tmp.as_str(), &self.dir, self.name.as_str()).map_err(io::Error::from)
        });
        if let Err(e) = written {
            let _ = rustix::fs::unlinkat(&self.dir, tmp.as_str(), AtFlags::empty());
            return Err(io_err(&self.path, e));
        }
        rustix::fs::fsync(&self.dir).map_err(|e| io_err(&self.dir_path, e))
    }

    /// Appends `bytes` to the existing file (never through a link).
    pub fn append(&self, bytes: &[u8]) -> Result<(), PgError> {
        let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.dir, self.name.as_str(), flags, Mode::empty())
            .map_err(|e| self.open_file_error(e))?;
        let mut f = File::from(fd);
        self.require_regular(&f)?;
        f.write_all(bytes).and_then(|_| f.sync_data()).map_err(|e| io_err(&self.path, e))
    }

    fn require_regular(&self, f: &File) -> Result<(), PgError> {
        let st = rustix::fs::fstat(f.as_fd()).map_err(|e| io_err(&self.path, e))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(refused(&self.path, "not a regular file"));
        }
        Ok(())
    }

    fn open_file_error(&self, e: Errno) -> PgError {
        if e == Errno::LOOP || is_link(&self.dir, &self.name) {
            return refused(&self.path, "a symbolic link");
        }
        io_err(&self.path, e)
    }
}

/// The error of opening the folder `DIR` below the root.
fn open_dir_error(root: &File, dir_path: &Path, key: &SessionKey, e: Errno) -> PgError {
    if e == Errno::LOOP || is_link(root, &key.dir) {
        return refused(dir_path, "a symbolic link");
    }
    if e == Errno::NOTDIR {
        return refused(dir_path, "not a folder");
    }
    io_err(dir_path, e)
}

/// True when `name` in the folder `dir` is a symbolic link.
fn is_link(dir: &File, name: &str) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
}
