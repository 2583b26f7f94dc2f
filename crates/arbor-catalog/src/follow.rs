//! Following a session file while others write it, as `tail -F` does: the
//! file is looked at every [`POLL`]; whole lines that arrived are handed
//! out, a line still being written waits for its newline. A file replaced
//! under the same name (another inode), cut short, or rewritten in place
//! (the bytes already handed out changed, even when it grew back past
//! them between two looks) is handed out whole again; a file that goes
//! away is reported once ([`Followed::Gone`]) and followed again when it
//! comes back. Only regular files are followed: a FIFO or a device is
//! refused at once, never waited on.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbor_log::files::open_read;
use arbor_log::scan::read_exact_at;
use arbor_tree::sessions::{Follow, FollowFrom, Followed, SessionsError};
use arbor_tree::TreeError;

use crate::stamp::{Stat, Sums};

/// How often the file is looked at while a wait lasts.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// Bytes read at a time when looking back for the last whole line.
const BACK: u64 = 64 << 10;

/// A session file being followed.
#[derive(Debug)]
pub(crate) struct FileFollower {
    path: PathBuf,
    /// The end of the last whole line handed out.
    offset: u64,
    /// The file as it was at the last look (its stat, the sums of the bytes
    /// handed out); `None` while it is gone.
    seen: Option<(Stat, Sums)>,
}

fn tree_error(path: &Path, e: io::Error) -> SessionsError {
    SessionsError::Tree(TreeError::Log(arbor_log::LogError::io(path, e)))
}

/// Opens `path` if it is a regular file (links followed): `None` when it is
/// missing; anything else that is there is refused ([`open_read`]).
fn open(path: &Path) -> Result<Option<fs::File>, SessionsError> {
    match open_read(path) {
        Ok(f) => Ok(Some(f)),
        Err(arbor_log::LogError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SessionsError::Tree(e.into())),
    }
}

impl FileFollower {
    /// Starts following `path` (which must be there): the follower and the
    /// whole lines it holds now (none with [`FollowFrom::End`]).
    pub(crate) fn start(path: &Path, from: FollowFrom) -> Result<(FileFollower, Vec<u8>), SessionsError> {
        let Some(file) = open(path)? else { return Err(SessionsError::Tree(TreeError::Missing(path.to_owned()))) };
        let mut f = FileFollower { path: path.to_owned(), offset: 0, seen: None };
        match from {
            FollowFrom::Start => {
                let (now, _) = f.read_on(&file, true)?;
                Ok((f, now))
            }
            FollowFrom::End => {
                let stat = f.stat(&file)?;
                f.offset = last_line_end(&file, stat.size).map_err(|e| tree_error(path, e))?;
                f.remember(&file, stat)?;
                Ok((f, Vec::new()))
            }
        }
    }

    fn stat(&self, file: &fs::File) -> Result<Stat, SessionsError> {
        Ok(Stat::of(&file.metadata().map_err(|e| tree_error(&self.path, e))?))
    }

    fn remember(&mut self, file: &fs::File, stat: Stat) -> Result<(), SessionsError> {
        let sums = Sums::read(file, self.offset).map_err(|e| tree_error(&self.path, e))?;
        self.seen = Some((stat, sums));
        Ok(())
    }

    /// One look at the file.
    fn look(&mut self) -> Result<Followed, SessionsError> {
        let Some(file) = open(&self.path)? else {
            // Said once; it is followed again when it comes back.
            return Ok(if self.seen.take().is_some() { Followed::Gone } else { Followed::Idle });
        };
        let stat = self.stat(&file)?;
        let replaced = match &self.seen {
            // It was gone and is back.
            None => true,
            Some((old, _)) if *old == stat => return Ok(Followed::Idle),
            Some((old, sums)) => {
                (old.ino, old.dev) != (stat.ino, stat.dev)
                    || stat.size < self.offset
                    || Sums::read(&file, self.offset).map_err(|e| tree_error(&self.path, e))? != *sums
            }
        };
        let (bytes, grew) = self.read_on(&file, replaced)?;
        Ok(match (replaced, grew) {
            (true, _) => Followed::Replaced(bytes),
            (false, true) => Followed::Lines(bytes),
            (false, false) => Followed::Idle,
        })
    }

    /// The whole lines after the offset (after 0 when `from_start`), and
    /// whether there were any; the offset moves past them.
    fn read_on(&mut self, file: &fs::File, from_start: bool) -> Result<(Vec<u8>, bool), SessionsError> {
        let stat = self.stat(file)?;
        if from_start {
            self.offset = 0;
        }
        let from = self.offset.min(stat.size);
        let mut bytes = Vec::new();
        let mut r = file;
        r.seek(SeekFrom::Start(from)).map_err(|e| tree_error(&self.path, e))?;
        r.take(stat.size - from).read_to_end(&mut bytes).map_err(|e| tree_error(&self.path, e))?;
        // A line still being written waits for its newline.
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(whole);
        self.offset = from + whole as u64;
        self.remember(file, stat)?;
        let grew = !bytes.is_empty();
        Ok((bytes, grew))
    }
}

/// The end of the last whole line of the first `size` bytes of `file`.
fn last_line_end(file: &fs::File, size: u64) -> io::Result<u64> {
    let mut end = size;
    while end > 0 {
        let start = end.saturating_sub(BACK);
        let chunk = read_exact_at(file, start, (end - start) as usize)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

impl Follow for FileFollower {
    fn wait(&mut self, timeout: Duration) -> Result<Followed, SessionsError> {
        let until = Instant::now() + timeout;
        loop {
            let got = self.look()?;
            if got != Followed::Idle || Instant::now() >= until {
                return Ok(got);
            }
            std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write;

    fn append(p: &Path, bytes: &[u8]) {
        fs::OpenOptions::new().append(true).open(p).unwrap().write_all(bytes).unwrap();
    }

    #[test]
    fn whole_lines_as_they_arrive_and_a_rewrite_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        fs::write(&p, "a\nb").unwrap();
        let (mut w, now) = FileFollower::start(&p, FollowFrom::Start).unwrap();
        assert_eq!(now, b"a\n");
        assert_eq!(w.wait(Duration::from_millis(10)).unwrap(), Followed::Idle);
        append(&p, b"c\nd\n");
        assert_eq!(w.wait(Duration::ZERO).unwrap(), Followed::Lines(b"bc\nd\n".to_vec()));
        fs::write(&p, "x\n").unwrap();
        assert_eq!(w.wait(Duration::ZERO).unwrap(), Followed::Replaced(b"x\n".to_vec()));
        let (mut end, now) = FileFollower::start(&p, FollowFrom::End).unwrap();
        assert!(now.is_empty());
        append(&p, b"y\n");
        assert_eq!(end.wait(Duration::ZERO).unwrap(), Followed::Lines(b"y\n".to_vec()));
    }

    #[test]
    fn from_the_end_a_line_being_written_is_handed_out_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        fs::write(&p, "a\npart").unwrap();
        let (mut w, _) = FileFollower::start(&p, FollowFrom::End).unwrap();
        append(&p, b"ial\n");
        assert_eq!(w.wait(Duration::ZERO).unwrap(), Followed::Lines(b"partial\n".to_vec()));
    }

    #[test]
    fn a_file_cut_and_regrown_past_its_old_size_between_two_looks_is_handed_out_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        fs::write(&p, "first\nsecond\n").unwrap();
        let (mut w, _) = FileFollower::start(&p, FollowFrom::Start).unwrap();
        // Truncated and written again, longer than before, in place (same inode).
        let mut f = fs::OpenOptions::new().write(true).truncate(true).open(&p).unwrap();
        f.write_all(b"other\nlines, longer than before\n").unwrap();
        drop(f);
        assert_eq!(w.wait(Duration::ZERO).unwrap(), Followed::Replaced(b"other\nlines, longer than before\n".to_vec()));
        // A new file renamed over the old name (another inode), of the same bytes.
        let tmp = dir.path().join("tmp");
        fs::write(&tmp, "other\nlines, longer than before\nmore\n").unwrap();
        fs::rename(&tmp, &p).unwrap();
        assert!(matches!(w.wait(Duration::ZERO).unwrap(), Followed::Replaced(b) if b.ends_with(b"more\n")));
    }

    #[test]
    fn a_deleted_file_is_reported_once_and_followed_again_when_it_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        fs::write(&p, "a\n").unwrap();
        let (mut w, _) = FileFollower::start(&p, FollowFrom::Start).unwrap();
        fs::remove_file(&p).unwrap();
        assert_eq!(w.wait(Duration::ZERO).unwrap(), Followed::Gone);
        assert_eq!(w.wait(Duration::from_millis(20)).unwrap(), Followed::Idle);
        fs::write(&p, "back\n").unwrap();
        assert_eq!(w.wait(Duration::ZERO).unwrap(), Followed::Replaced(b"back\n".to_vec()));
        append(&p, b"on\n");
        assert_eq!(w.wait(Duration::ZERO).unwrap(), Followed::Lines(b"on\n".to_vec()));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_device_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.jsonl");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        for path in [fifo.as_path(), Path::new("/dev/zero")] {
            let (tx, rx) = std::sync::mpsc::channel();
            let p = path.to_owned();
            std::thread::spawn(move || {
                let _ = tx.send(FileFollower::start(&p, FollowFrom::Start).map(|_| ()).map_err(|e| e.to_string()));
            });
            let got = rx.recv_timeout(Duration::from_secs(5)).unwrap_or_else(|_| panic!("{path:?}: still waiting"));
            let e = got.unwrap_err();
            assert!(e.contains("not a regular file"), "{e}");
        }
    }
}
