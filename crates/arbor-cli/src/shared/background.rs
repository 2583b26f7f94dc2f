//! The search filters' builder in the background: a first search that would
//! build many filters (`ARBOR_BACKGROUND_ABOVE` bytes without one, 64 MiB
//! by default) answers from a plain scan and starts one detached,
//! low-priority `arbor cache build` (stdin, stdout and stderr null, a
//! process group of its own, under `nice` when there is one); the builder
//! holds `<cache>/build.lock` (an advisory `flock`, released by the kernel
//! when the builder ends, however it ends; it holds the builder's pid), so a
//! second builder started
//! meanwhile skips. `ARBOR_BACKGROUND=0` makes searches build their filters
//! themselves, as they read (deterministic, for CI).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rustix::fs::{flock, FlockOperation};

/// The bytes without filters from which a search leaves them to a builder.
pub const DEFAULT_ABOVE: u64 = 64 << 20;

/// The builder's lock file in the cache directory `cache`.
pub fn lock_path(cache: &Path) -> PathBuf {
    cache.join("build.lock")
}

/// When searches leave their filters to a builder (`None`: under
/// `ARBOR_BACKGROUND=0`, they build them as they read).
pub fn above() -> Option<u64> {
    if std::env::var_os("ARBOR_BACKGROUND").is_some_and(|v| v == "0") {
        return None;
    }
    let set = std::env::var("ARBOR_BACKGROUND_ABOVE").ok().and_then(|v| v.trim().parse().ok());
    Some(set.unwrap_or(DEFAULT_ABOVE))
}

/// The builder's lock, held until dropped.
#[derive(Debug)]
pub struct BuildLock {
    _file: File,
}

/// Takes the builder's lock in `cache` (made if missing, never through a
/// link); `None` when another builder holds it.
pub fn try_lock(cache: &Path) -> io::Result<Option<BuildLock>> {
    fs::create_dir_all(cache)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc_nofollow())
        .mode(0o600)
        .open(lock_path(cache))?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {
            // The holder's pid, for people (and the bench: the file's mtime says a builder started).
            let mut f = &file;
            f.set_len(0)?;
            writeln!(f, "{}", std::process::id())?;
            Ok(Some(BuildLock { _file: file }))
        }
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn libc_nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

/// Whether a builder holds the lock in `cache` now.
pub fn running(cache: &Path) -> bool {
    let Ok(file) = File::open(lock_path(cache)) else { return false };
    match flock(&file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => false,
        Err(e) => e == rustix::io::Errno::WOULDBLOCK,
    }
}

/// Starts `arbor cache build --sessions-dir ROOT` detached, at a low
/// priority, unless a builder runs already. Nothing is reported: the search
/// has answered, and a builder that cannot start leaves the next search to
/// build what it reads.
pub fn start(root: &Path, cache: &Path) {
    if running(cache) {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    let args = |c: &mut Command| {
        c.arg("cache")
            .arg("build")
            .arg("--sessions-dir")
            .arg(root)
            .env_remove("ARBOR_STORE")
            .env("ARBOR_CACHE_DIR", cache)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
    };
    let mut niced = Command::new("nice");
    niced.arg("-n").arg("19").arg(&exe);
    args(&mut niced);
    let child = niced.spawn().or_else(|_| {
        let mut plain = Command::new(&exe);
        args(&mut plain);
        plain.spawn()
    });
    if let Ok(mut child) = child {
        // Reaped if this process lives on (the session picker); it does not wait otherwise.
        std::thread::spawn(move || child.wait());
    }
}
