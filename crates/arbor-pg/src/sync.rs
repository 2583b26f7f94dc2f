//! Moving sessions between files and the server without loss: [`PgStore::push`]
//! and [`PgStore::pull`], idempotent and resumable.
//!
//! Both sides are compared line by line through digests (SHA-256 of the
//! lines' own SHA-256s, so the server never assembles a whole session): the
//! same lines are left alone, a destination that holds a prefix of the
//! source gets the rest appended, and anything else (the copies differ, or
//! the destination has more) is refused with nothing written. A push writes
//! in chunks of at most 8 MiB, one transaction each under the session's
//! lock, so an interrupted push leaves a prefix that the next push extends;
//! a pull writes a new file atomically and extends an existing one by
//! appending, under the file's lock.

use std::fs;
use std::path::{Path, PathBuf};

use postgres::types::Type;
use postgres::{GenericClient, IsolationLevel};
use sha2::{Digest, Sha256};

use arbor_tree::{FileStore, Store, TreeError};

use crate::dest::Dest;
use crate::error::PgError;
use crate::error::SqlError;
use crate::key::SessionKey;
use crate::lines::split_lines;
use crate::rows::{read_lines, SessionRow};
use crate::store::PgStore;
use crate::write;

/// What a push or a pull did to one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transfer {
    /// The destination had no such session: every line was copied.
    Created {
        /// Lines copied.
        lines: u64,
    },
    /// Both sides hold the same lines: nothing was written.
    Unchanged,
    /// The destination held the first lines of the source: the rest were appended.
    Extended {
        /// Lines appended.
        lines: u64,
    },
}

/// Whether a push or a pull copies a session that a writer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Live {
    /// Refused, naming the writer.
    #[default]
    Refuse,
    /// Copied as it is now: its whole lines (a consistent prefix: every
    /// write on the server is one transaction, and a local file's last
    /// line is sent only once complete).
    Allow,
}

/// What a push did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The session on the server.
    pub key: SessionKey,
    /// What was written.
    pub transfer: Transfer,
    /// The length of the file's last line when it was not complete (no
    /// newline yet): it was not sent, and the next push sends it once complete.
    pub held_back: Option<u64>,
}

/// At most this many bytes of lines per push transaction.
const CHUNK_BYTES: usize = 8 << 20;

/// The digest of lines as the server computes it ([`server_digest`]).
fn digest(lines: &[&[u8]]) -> Vec<u8> {
    let mut all = Sha256::new();
    for l in lines {
        all.update(Sha256::digest(l));
    }
    all.finalize().to_vec()
}

/// [`digest`] of the lines whose own digests are `each`.
fn digest_of(each: &[[u8; 32]]) -> Vec<u8> {
    let mut all = Sha256::new();
    for d in each {
        all.update(d);
    }
    all.finalize().to_vec()
}

/// The digest of the first `count` lines of session `id`.
fn server_digest(c: &mut impl GenericClient, id: i64, count: i64) -> Result<Vec<u8>, postgres::Error> {
    let row = c.query_typed_one(
        "SELECT coalesce(sha256(string_agg(sha256(bytes), ''::bytea ORDER BY seq)), sha256(''::bytea)) \
         FROM arbor.lines WHERE session = $1 AND seq < $2",
        &[(&id, Type::INT8), (&count, Type::INT8)],
    )?;
    Ok(row.get(0))
}

/// How a destination with `theirs` lines stands to a source with `ours`,
/// given whether their first `min(theirs, ours)` lines agree.
fn compare(ours: usize, theirs: usize, prefix_agrees: bool) -> Result<Option<usize>, Standing> {
    if !prefix_agrees {
        return Err(Standing::Diverged);
    }
    match theirs.cmp(&ours) {
        std::cmp::Ordering::Equal => Ok(None),
        std::cmp::Ordering::Less => Ok(Some(theirs)),
        std::cmp::Ordering::Greater => Err(Standing::Ahead(theirs - ours)),
    }
}

/// Why nothing was written.
enum Standing {
    Diverged,
    Ahead(usize),
}

impl PgStore {
    fn refused(&self, name: impl std::fmt::Display, reason: String) -> PgError {
        PgError::Refused { name: name.to_string(), reason }
    }

    /// Pushes the session file at `local` to the server, as the session its
    /// path names ([`SessionKey::of_path`]); refused while a local writer
    /// holds the file (see [`PgStore::push_with`]).
    pub fn push(&self, local: &Path) -> Result<(SessionKey, Transfer), PgError> {
        self.push_with(local, Live::Refuse).map(|p| (p.key, p.transfer))
    }

    /// Pushes the session file at `local`: only its complete lines (a last
    /// line without its newline, still being written, stays until it is
    /// complete: [`Pushed::held_back`]). A local writer of the file refuses
    /// the push unless `live` allows it; the file's lock is held meanwhile,
    /// so no writer starts during it. A torn last line on the server (from
    /// an older push) that the file has since completed is set aside
    /// (`FILE.torn-<ms>`, as a writer would) and the push goes on.
    pub fn push_with(&self, local: &Path, live: Live) -> Result<Pushed, PgError> {
        let abs = std::path::absolute(local).map_err(|e| PgError::local(local, e))?;
        let key = SessionKey::of_path(&abs);
        self.check_name(&key)?;
        let _lock = match FileStore.lock(&abs) {
            Ok(l) => Some(l),
            Err(TreeError::Locked { holder, .. }) if live == Live::Refuse => {
                let by = holder.map(|h| format!(" ({h})")).unwrap_or_default();
                return Err(self.refused(
                    local.display(),
                    format!(
                        "is open for writing by another process{by}: push it once that writer is closed, \
                         or give --allow-live to push the lines written so far"
                    ),
                ));
            }
            // A live writer allowed, or a folder where no lock can be made: the complete lines are read.
            Err(_) => None,
        };
        let bytes = fs::read(&abs).map_err(|e| PgError::local(local, e))?;
        let mut lines = split_lines(&bytes);
        let held_back = match lines.last() {
            Some(l) if !l.ends_with(b"\n") => Some(l.len() as u64),
            _ => None,
        };
        if held_back.is_some() {
            lines.pop();
        }
        self.mend_torn_tail(&key, &lines)?;
        let transfer = self.push_lines(local, &key, &lines)?;
        Ok(Pushed { key, transfer, held_back })
    }

    /// Sets aside the server's torn last line of `key` when `lines` hold it
    /// completed (the file has been written on since an older push caught it).
    fn mend_torn_tail(&self, key: &SessionKey, lines: &[&[u8]]) -> Result<(), PgError> {
        let k = key.clone();
        let torn = self.read_bounded(move |c| {
            let Some(row) = SessionRow::find(c, &k)? else { return Ok(None) };
            let last = c.query_typed_opt(
                "SELECT seq, bytes FROM arbor.lines WHERE session = $1 ORDER BY seq DESC LIMIT 1",
                &[(&row.id, Type::INT8)],
            )?;
            Ok(last.map(|r| (r.get::<_, i64>(0), r.get::<_, Vec<u8>>(1))).filter(|(_, b)| !b.ends_with(b"\n")))
        })?;
        let Some((seq, bytes)) = torn else { return Ok(()) };
        let completed = usize::try_from(seq).ok().and_then(|i| lines.get(i)).is_some_and(|l| l.starts_with(&bytes));
        if completed {
            let k = key.clone();
            self.write_apart_bounded(key, move |tx| {
                let Some(row) = SessionRow::find(tx, &k)? else { return Ok(()) };
                write::repair_tail(tx, &k, row).map(drop)
            })?;
        }
        Ok(())
    }

    /// Pushes `lines` (whole lines of the file `local`) to session `key`.
    fn push_lines(&self, local: &Path, key: &SessionKey, lines: &[&[u8]]) -> Result<Transfer, PgError> {
        let key = key.clone();
        let row = self.row(&key)?;
        let (start, generation) = match &row {
            None => (0, None),
            Some(row) => {
                let theirs = usize::try_from(row.line_count).unwrap_or(usize::MAX);
                let k = theirs.min(lines.len());
                let id = row.id;
                let agrees = self.read_bounded(move |c| Ok(server_digest(c, id, k as i64)?))? == digest(&lines[..k]);
                match compare(lines.len(), theirs, agrees) {
                    Ok(None) => return Ok(Transfer::Unchanged),
                    Ok(Some(start)) => (start, Some(row.generation)),
                    Err(Standing::Diverged) => {
                        return Err(self.refused(
                            local.display(),
                            format!(
                                "diverged from {key} on the server ({theirs} lines there, {} here, \
                                 differing within the first {k}); nothing was written",
                                lines.len()
                            ),
                        ))
                    }
                    Err(Standing::Ahead(n)) => {
                        return Err(self.refused(
                            local.display(),
                            format!("{key} on the server has {n} more lines; nothing was written (pull it)"),
                        ))
                    }
                }
            }
        };
        if row.is_none() && lines.is_empty() {
            // An empty file is an empty session (pulled back, an empty file).
            let k = key.clone();
            self.write_apart_bounded(&key, move |tx| write::ensure(tx, &k).map(drop))?;
        }
        let mut at = start;
        while at < lines.len() {
            let mut end = at + 1;
            let mut size = lines[at].len();
            while end < lines.len() && size + lines[end].len() <= CHUNK_BYTES {
                size += lines[end].len();
                end += 1;
            }
            // Owned by the write (bounded: on a thread of its own), one chunk at a time.
            let chunk: Vec<Vec<u8>> = lines[at..end].iter().map(|l| l.to_vec()).collect();
            let (me, k, shown) = (self.clone(), key.clone(), local.display().to_string());
            self.write_apart_bounded(&key, move |tx| {
                let row = write::ensure(tx, &k)?;
                if row.line_count != at as i64 || generation.is_some_and(|g| g != row.generation) {
                    return Err(SqlError::Other(
                        me.refused(shown, format!("{k} changed on the server during the push; run it again")),
                    ));
                }
                let chunk: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
                write::append(tx, &row, &chunk, &write::token())?;
                Ok(())
            })?;
            at = end;
        }
        let n = (lines.len() - start) as u64;
        Ok(if row.is_none() { Transfer::Created { lines: n } } else { Transfer::Extended { lines: n } })
    }

    /// Pulls session `key` into `root` (as `root/DIR/FILE`, pi's layout).
    /// A name that is not one folder and one file is refused, and nothing
    /// below `root` is reached through a symbolic link (see `dest.rs`).
    /// Refused while a writer holds the session on the server (see
    /// [`PgStore::pull_with`]).
    pub fn pull(&self, key: &SessionKey, root: &Path) -> Result<(PathBuf, Transfer), PgError> {
        self.pull_with(key, root, Live::Refuse)
    }

    /// [`PgStore::pull`]; a session a writer holds on the server is refused,
    /// naming it, unless `live` allows it: then what is committed is copied
    /// (whole writes only: each is one transaction).
    pub fn pull_with(&self, key: &SessionKey, root: &Path, live: Live) -> Result<(PathBuf, Transfer), PgError> {
        self.check_name(key)?;
        if live == Live::Refuse {
            let k = key.clone();
            if let Some(h) = self.read_bounded(move |c| Ok(crate::lock::holder(c, &k)?))? {
                return Err(self.refused(
                    key.shown(),
                    format!(
                        "is open for writing by another process ({h}): pull it once that writer is closed, \
                         or give --allow-live to copy what is committed now"
                    ),
                ));
            }
        }
        let place = Dest::open(root, key)?;
        let dest = place.path.clone();
        // A local writer of the file refuses the pull (and no writer starts during it).
        let _lock = FileStore.lock(&dest)?;
        if !place.still_in_place() {
            return Err(
                self.refused(dest.display(), "its folder was replaced while pulling; nothing was written".into())
            );
        }
        let ours = place.read()?;
        // Each local line's digest (the read is bounded: on a thread of its own, with what it owns).
        let local_lines: Option<Vec<[u8; 32]>> =
            ours.as_deref().map(|b| split_lines(b).iter().map(|l| Sha256::digest(l).into()).collect());
        let local_count = local_lines.as_ref().map(Vec::len);
        let wanted = key.clone();
        // One snapshot: the digest and the lines read agree.
        let got = self.read_bounded(move |c| {
            let mut tx =
                c.build_transaction().isolation_level(IsolationLevel::RepeatableRead).read_only(true).start()?;
            let Some(row) = SessionRow::find(&mut tx, &wanted)? else { return Ok(None) };
            let theirs = usize::try_from(row.line_count).unwrap_or(usize::MAX);
            let Some(have) = local_count else {
                return Ok(Some((theirs, true, read_lines(&mut tx, row.id, 0)?.0)));
            };
            let k = theirs.min(have);
            let agrees = server_digest(&mut tx, row.id, k as i64)?
                == digest_of(&local_lines.as_deref().unwrap_or_default()[..k]);
            let rest = if agrees && theirs > have { read_lines(&mut tx, row.id, have as i64)?.0 } else { vec![] };
            Ok(Some((theirs, agrees, rest)))
        })?;
        let Some((theirs, agrees, bytes)) = got else {
            return Err(PgError::NoSession { server: self.server().shown().to_owned(), name: key.to_string() });
        };
        let Some(have) = local_count else {
            place.create(&bytes)?;
            return Ok((dest, Transfer::Created { lines: theirs as u64 }));
        };
        match compare(theirs, have, agrees) {
            Ok(None) => Ok((dest, Transfer::Unchanged)),
            Ok(Some(_)) => {
                place.append(&bytes)?;
                Ok((dest, Transfer::Extended { lines: (theirs - have) as u64 }))
            }
            Err(Standing::Diverged) => Err(self.refused(
                dest.display(),
                format!(
                    "diverged from {key} on the server ({theirs} lines there, {have} here, differing within the \
                     first {}); nothing was written",
                    theirs.min(have)
                ),
            )),
            Err(Standing::Ahead(n)) => Err(self.refused(
                dest.display(),
                format!("has {n} more lines than {key} on the server; nothing was written (push it)"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standings() {
        assert!(matches!(compare(3, 3, true), Ok(None)));
        assert!(matches!(compare(5, 3, true), Ok(Some(3))));
        assert!(matches!(compare(3, 5, true), Err(Standing::Ahead(2))));
        assert!(matches!(compare(3, 3, false), Err(Standing::Diverged)));
        assert_eq!(digest(&[]), Sha256::digest(b"").to_vec());
        assert_ne!(digest(&[b"a\n", b"b\n"]), digest(&[b"a\nb\n"]));
        let each: Vec<[u8; 32]> = [&b"a\n"[..], b"b\n"].iter().map(|l| Sha256::digest(l).into()).collect();
        assert_eq!(digest_of(&each), digest(&[b"a\n", b"b\n"]));
    }
}
