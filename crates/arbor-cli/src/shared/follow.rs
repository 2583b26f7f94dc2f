//! Following a session as others write it: on a server through its
//! follower (LISTEN/NOTIFY), in a local file by watching its size. Either
//! way only whole lines are handed out, and a session replaced whole (a
//! migration's rewrite, a file truncated) is handed out again whole.
//! `arbor tail` prints what arrives; `arbor tui --follow` redraws.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

pub use arbor_pg::Followed;
use arbor_pg::{Follower, SessionKey};

use super::session::Globals;

/// How often a local file is looked at.
const POLL: Duration = Duration::from_millis(100);

/// A session being followed.
#[derive(Debug)]
pub enum Watch {
    /// On the server.
    Server(Box<Follower>),
    /// A local file and how far it was read.
    File { path: PathBuf, offset: u64 },
}

impl Watch {
    /// Starts following the session `path` names (a store path with
    /// `--store`); returns it with the session's whole lines as they are now.
    pub fn open(g: &Globals, path: &Path) -> Result<(Watch, Vec<u8>)> {
        if let Some(store) = g.server()? {
            let (f, now) = store.follow(&SessionKey::of_path(path), false)?;
            return Ok((Watch::Server(Box::new(f)), now));
        }
        let mut w = Watch::File { path: path.to_owned(), offset: 0 };
        let now = match w.read_file()? {
            Followed::Lines(b) | Followed::Replaced(b) => b,
            Followed::Idle => vec![],
        };
        Ok((w, now))
    }

    /// Waits up to `timeout` for what arrives.
    pub fn wait(&mut self, timeout: Duration) -> Result<Followed> {
        match self {
            Watch::Server(f) => Ok(f.wait(timeout)?),
            Watch::File { .. } => {
                let until = Instant::now() + timeout;
                loop {
                    let got = self.read_file()?;
                    if got != Followed::Idle || Instant::now() >= until {
                        return Ok(got);
                    }
                    std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
                }
            }
        }
    }

    /// The whole lines of the file after `offset` (all of them again when it shrank).
    fn read_file(&mut self) -> Result<Followed> {
        let Watch::File { path, offset } = self else { return Ok(Followed::Idle) };
        let mut f = File::open(&*path).with_context(|| format!("{}: cannot read", path.display()))?;
        let len = f.metadata().with_context(|| path.display().to_string())?.len();
        let replaced = len < *offset;
        if replaced {
            *offset = 0;
        }
        if len == *offset {
            return Ok(Followed::Idle);
        }
        f.seek(SeekFrom::Start(*offset)).with_context(|| path.display().to_string())?;
        let mut bytes = Vec::new();
        f.take(len - *offset).read_to_end(&mut bytes).with_context(|| path.display().to_string())?;
        // A line still being written waits for its newline.
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(whole);
        *offset += whole as u64;
        Ok(match (replaced, bytes.is_empty()) {
            (true, _) => Followed::Replaced(bytes),
            (false, true) => Followed::Idle,
            (false, false) => Followed::Lines(bytes),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_is_followed_by_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, "a\nb").unwrap();
        let mut w = Watch::File { path: p.clone(), offset: 0 };
        assert_eq!(w.wait(Duration::ZERO).unwrap(), Followed::Lines(b"a\n".to_vec()));
        assert_eq!(w.wait(Duration::from_millis(10)).unwrap(), Followed::Idle);
        std::fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(b"c\nd\n").unwrap();
        assert_eq!(w.wait(Duration::ZERO).unwrap(), Followed::Lines(b"bc\nd\n".to_vec()));
        std::fs::write(&p, "x\n").unwrap();
        assert_eq!(w.wait(Duration::ZERO).unwrap(), Followed::Replaced(b"x\n".to_vec()));
    }
}
