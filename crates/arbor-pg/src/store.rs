//! [`PgStore`]: arbor-tree's [`Store`] on a PostgreSQL server.
//!
//! Paths name sessions by their last two components ([`SessionKey`]); the
//! store's own paths are `/DIR/FILE`. Reads go through one shared
//! connection, made again when it was lost (a read is retried once after a
//! drop). A writer's lock ([`Store::lock`]) opens a connection of its own
//! that holds the session's advisory lock, and every write of that session
//! from this process goes through it, one transaction per write; a write of
//! a session whose lock this process does not hold takes the lock for its
//! transaction only, and is refused while another writer holds it.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use postgres::types::Type;
use postgres::{Client, Transaction};

use arbor_log::scan::ReadAt;
use arbor_log::writer::{Durability, TailRepair};
use arbor_tree::storage::stored_index::Part;
use arbor_tree::storage::{AppendHandle, FileStamp, Indexed, StoredFile, WriteLock};
use arbor_tree::{Store, TreeError};

use crate::blocking::{blocking, within};
use crate::conninfo::PgEnv;
use crate::conns::{guard, Conn, Conns};
use crate::copies::{CopiedFile, LocalCopies};
use crate::error::PgError;
use crate::error::SqlError;
use crate::index::ServerIndex;
use crate::key::SessionKey;
use crate::lines::split_lines;
use crate::lock;
use crate::reader::{ServerFile, ServerReader};
use crate::rows::{read_lines, SessionRow};
use crate::server::Server;
use crate::write;

#[derive(Debug)]
struct Inner {
    conns: Arc<Conns>,
    /// The connections holding the locks of the sessions this process writes.
    writers: Mutex<HashMap<SessionKey, Arc<Mutex<Conn>>>>,
    /// Warnings of searches, until [`PgStore::take_warnings`] (search.rs).
    warnings: Mutex<Vec<String>>,
    /// Where local copies of large sessions are kept (none unless named).
    copies: Mutex<Option<LocalCopies>>,
}

/// Sessions on a PostgreSQL server, as an arbor-tree [`Store`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

impl PgStore {
    /// Connects to the server at `url` (a connection string: see
    /// [`Server::new`]) and brings its schema up to date.
    pub fn connect(url: &str) -> Result<PgStore, PgError> {
        PgStore::connect_with(url, &PgEnv::none())
    }

    /// [`PgStore::connect`], with what `url` leaves unset taken as libpq
    /// takes it from `env` ([`Server::with_env`]): `PG*` variables, the
    /// service file, the password file, `~/.postgresql/` certificates.
    pub fn connect_with(url: &str, env: &PgEnv) -> Result<PgStore, PgError> {
        let server = Server::with_env(url, env)?;
        let client = server.connect()?;
        Ok(PgStore {
            inner: Arc::new(Inner {
                conns: Arc::new(Conns {
                    server,
                    shared: Mutex::new(Some(Conn(client))),
                    spare: Mutex::new(Vec::new()),
                }),
                writers: Mutex::new(HashMap::new()),
                warnings: Mutex::new(Vec::new()),
                copies: Mutex::new(None),
            }),
        })
    }

    /// Keeps local copies of the large sessions a command reads most of
    /// (`tree --json`, an export), so that the next read of the same session
    /// reads them from there and fetches only what was appended since (see
    /// [`LocalCopies`]). Without this, nothing is written anywhere.
    pub fn keep_local_copies(&self, copies: LocalCopies) {
        *guard(&self.inner.copies) = Some(copies);
    }

    /// The lines of the session of `row`, through its local copy when copies are kept.
    fn lines(&self, row: &SessionRow) -> Arc<dyn ReadAt> {
        Arc::from(self.through_copy(row, ServerFile::new(self.conns(), row), "lines"))
    }

    /// Part `part` of the index the server keeps of session `row`, read
    /// through its local copy when the session's lines are (an index part
    /// is appended to as the lines are, and is the same bytes for the same
    /// lines, so a copy of it is a prefix of it as long as the session's is).
    fn part(&self, row: &SessionRow, file: ServerFile, part: Part) -> Box<dyn ReadAt> {
        self.through_copy(row, file, &format!("index part {}", part.code()))
    }

    /// `file` (`what` of the session of `row`) through its local copy, when
    /// copies are kept and the session is large enough for one. A copy is
    /// named by the session's identity and the schema (a migration that
    /// rewrote rows is another copy).
    fn through_copy(&self, row: &SessionRow, file: ServerFile, what: &str) -> Box<dyn ReadAt> {
        let size = u64::try_from(row.byte_size).unwrap_or_default();
        match guard(&self.inner.copies).as_ref().filter(|c| size >= c.min_bytes) {
            Some(conf) => {
                let identity = format!("{} schema {} {what}", self.identity(row), crate::schema::latest());
                let len = file.len().unwrap_or_default();
                Box::new(CopiedFile::open(file, len, &identity, conf))
            }
            None => Box::new(file),
        }
    }

    /// The session of `row` as no other is: another row under the same
    /// name, or the same row replaced whole, is another identity.
    fn identity(&self, row: &SessionRow) -> String {
        let born = row.created_at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_micros());
        format!("{}#{}:{born}:{}", self.server().shown(), row.id, row.generation)
    }

    /// The server.
    pub fn server(&self) -> &Server {
        &self.inner.conns.server
    }

    /// Notes a warning for the caller (one line).
    pub(crate) fn warn(&self, line: String) {
        guard(&self.inner.warnings).push(line);
    }

    /// The warnings noted since the last call.
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *guard(&self.inner.warnings))
    }

    /// Runs `f` on the shared connection, connecting first when there is
    /// none; a connection that drops under `f` is made again and `f` runs
    /// once more (reads only: they change nothing).
    pub(crate) fn read<T: Send>(
        &self,
        mut f: impl FnMut(&mut Client) -> Result<T, SqlError> + Send,
    ) -> Result<T, PgError> {
        blocking(|| {
            let mut shared = guard(&self.inner.conns.shared);
            for attempt in 0..2 {
                let conn = match shared.as_mut() {
                    Some(c) if !c.0.is_closed() => c,
                    _ => shared.insert(Conn(self.inner.conns.server.connect()?)),
                };
                match f(&mut conn.0) {
                    Ok(v) => return Ok(v),
                    Err(e) => {
                        if conn.0.is_closed() {
                            *shared = None;
                            if attempt == 0 {
                                continue;
                            }
                        }
                        return Err(self.inner.conns.server.classify(e, false));
                    }
                }
            }
            unreachable!("the loop returns on its second pass")
        })
    }

    /// [`Conns::read_bounded`] on this store's connection.
    pub(crate) fn read_bounded<T, F>(&self, f: F) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: FnMut(&mut Client) -> Result<T, SqlError> + Send + 'static,
    {
        self.inner.conns.read_bounded(f)
    }

    /// The connection reads share, for the readers of a session's bytes.
    pub(crate) fn conns(&self) -> Arc<Conns> {
        self.inner.conns.clone()
    }

    /// Runs `f` in one transaction under the lock of `key`: the writer's
    /// connection `writer`, or a lock taken for the transaction (see the
    /// module docs). Unbounded in time: see [`PgStore::write_bounded`].
    fn write_via<T: Send>(
        &self,
        writer: Option<Arc<Mutex<Conn>>>,
        key: &SessionKey,
        f: impl FnOnce(&mut Transaction<'_>) -> Result<T, SqlError> + Send,
    ) -> Result<T, PgError> {
        // Every name enters the server through a write: none it could not give back as a file.
        self.check_name(key)?;
        blocking(|| self.write_here(writer, key, f, None))
    }

    /// The write itself; with `fate`, it commits only if it was not given
    /// up first (it rolls back otherwise: see [`Fate`]).
    fn write_here<T>(
        &self,
        writer: Option<Arc<Mutex<Conn>>>,
        key: &SessionKey,
        f: impl FnOnce(&mut Transaction<'_>) -> Result<T, SqlError>,
        fate: Option<&Fate>,
    ) -> Result<T, PgError> {
        let commit = |tx: Transaction<'_>| match fate {
            Some(fate) if !fate.commit() => Err(SqlError::Other(self.given_up(key))),
            _ => Ok(tx.commit()?),
        };
        if let Some(w) = writer {
            let mut conn = guard(&w);
            let r = (|| {
                let mut tx = conn.0.transaction()?;
                let v = f(&mut tx)?;
                commit(tx)?;
                Ok(v)
            })();
            return r.map_err(|e| self.inner.conns.server.classify(e, true));
        }
        // Taken out while the write runs (a write given up at its deadline
        // keeps it, and the next one connects again: see write_bounded).
        let taken = guard(&self.inner.conns.shared).take();
        let mut conn = match taken {
            Some(c) if !c.0.is_closed() => c,
            _ => Conn(self.inner.conns.server.connect()?),
        };
        let r = (|| {
            let mut tx = conn.0.transaction()?;
            if let Err(holder) = lock::take(&mut tx, key, lock::Scope::Transaction)? {
                return Err(SqlError::Other(PgError::Tree(TreeError::Locked { path: key.path(), holder })));
            }
            let v = f(&mut tx)?;
            commit(tx)?;
            Ok(v)
        })();
        if !conn.0.is_closed() {
            let mut shared = guard(&self.inner.conns.shared);
            if shared.is_none() {
                *shared = Some(conn);
            }
        }
        r.map_err(|e| self.inner.conns.server.classify(e, true))
    }

    /// Runs `f` in one transaction under the lock of `key` (the writer's,
    /// when this process holds it; else one taken for the transaction),
    /// bounded as reads are ([`PgStore::read_bounded`]):
    /// the write runs on a thread of its own, and a server that has not
    /// answered within the answer limit gives an error at once. The write's
    /// connection is left to that thread (a writer's lock with it: later
    /// writes take the lock for their transaction, refused while the frozen
    /// connection holds it, which is until the server answers again). A
    /// write given up before its commit was sent is rolled back then, and
    /// the error says that nothing was written; one given up while its
    /// commit was on its way holds all of it or none, which is known only
    /// once the server answers again, and the error says so.
    pub(crate) fn write_bounded<T, F>(&self, key: &SessionKey, f: F) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Transaction<'_>) -> Result<T, SqlError> + Send + 'static,
    {
        self.write_bounded_for(key, 1, f)
    }

    /// [`PgStore::write_bounded`] waiting `allowances` times the answer
    /// limit (a write of many statements: a session written whole).
    pub(crate) fn write_bounded_for<T, F>(&self, key: &SessionKey, allowances: u32, f: F) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Transaction<'_>) -> Result<T, SqlError> + Send + 'static,
    {
        let writer = guard(&self.inner.writers).get(key).cloned();
        self.write_bounded_via(writer, key, allowances, f)
    }

    /// [`PgStore::write_bounded`] as a writer of its own (a push): refused
    /// while any writer holds the session, this process's included.
    pub(crate) fn write_apart_bounded<T, F>(&self, key: &SessionKey, f: F) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Transaction<'_>) -> Result<T, SqlError> + Send + 'static,
    {
        self.write_bounded_via(None, key, 1, f)
    }

    fn write_bounded_via<T, F>(
        &self,
        writer: Option<Arc<Mutex<Conn>>>,
        key: &SessionKey,
        allowances: u32,
        f: F,
    ) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Transaction<'_>) -> Result<T, SqlError> + Send + 'static,
    {
        self.check_name(key)?;
        let Some(limit) = self.inner.conns.server.answer_limit() else { return self.write_via(writer, key, f) };
        let limit = limit * allowances.max(1);
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let (me, k, w) = (self.clone(), key.clone(), writer.clone());
        let fate = Arc::new(Fate::default());
        let theirs = fate.clone();
        let server = self.server().shown().to_owned();
        std::thread::Builder::new()
            .name("arbor-pg-write".into())
            .spawn(move || {
                let _ = tx.send(me.write_here(w, &k, f, Some(&theirs)));
            })
            .map_err(|e| PgError::Server { server: server.clone(), reason: e.to_string() })?;
        rx.recv_timeout(limit).unwrap_or_else(|_| {
            if writer.is_some() {
                self.drop_writer(key);
            }
            let outcome = if fate.give_up() {
                "nothing was written (the write is rolled back when the server answers again)"
            } else {
                "its commit was on its way: the session holds all of it or none, which is known once the \
                 server answers again: look before writing it again"
            };
            Err(PgError::Server {
                server,
                reason: format!(
                    "no answer within {} s while writing {key} (the server is frozen, or the network to it): \
                     the write was given up; {outcome}",
                    limit.as_secs_f64()
                ),
            })
        })
    }

    /// The error of a write that gave up before its commit (nobody reads it:
    /// its caller has had its answer).
    fn given_up(&self, key: &SessionKey) -> PgError {
        PgError::Server { server: self.server().shown().to_owned(), reason: format!("the write of {key} was given up") }
    }

    /// Refuses `key` unless it is one folder and one file name ([`SessionKey::check`]).
    pub(crate) fn check_name(&self, key: &SessionKey) -> Result<(), PgError> {
        key.check().map_err(|reason| PgError::BadName {
            server: self.server().shown().to_owned(),
            name: key.shown(),
            reason,
        })
    }

    /// The row of `key`, if the session exists.
    pub(crate) fn row(&self, key: &SessionKey) -> Result<Option<SessionRow>, PgError> {
        let key = key.clone();
        self.read_bounded(move |c| Ok(SessionRow::find(c, &key)?))
    }

    /// The whole session `key` as a file's bytes (`None` when it does not exist).
    pub fn read_session(&self, key: &SessionKey) -> Result<Option<Vec<u8>>, PgError> {
        self.read(|c| {
            let Some(row) = SessionRow::find(c, key)? else { return Ok(None) };
            Ok(Some(read_lines(c, row.id, 0)?.0))
        })
    }

    /// Makes `conn` (holding the lock of `key`) the writer's connection of
    /// `key`, when this process still writes it.
    pub(crate) fn replace_writer(&self, key: &SessionKey, conn: Conn) {
        let writers = guard(&self.inner.writers);
        match writers.get(key) {
            Some(w) => {
                let old = std::mem::replace(&mut *guard(w), conn);
                drop(writers);
                blocking(move || drop(old));
            }
            None => drop((writers, conn)),
        }
    }

    /// True when this process holds the writer's lock of `key`.
    pub(crate) fn is_writer(&self, key: &SessionKey) -> bool {
        guard(&self.inner.writers).contains_key(key)
    }

    /// Forgets the writer's connection of `key` (lost, and its lock with it):
    /// later writes take the lock for their transaction, or are refused.
    pub(crate) fn drop_writer(&self, key: &SessionKey) {
        let old = guard(&self.inner.writers).remove(key);
        blocking(move || drop(old));
    }

    /// Who holds the write lock of session `key`, if anyone ([`crate::Writer`]).
    pub fn writer(&self, key: &SessionKey) -> Result<Option<crate::Writer>, PgError> {
        let key = key.clone();
        self.read_bounded(move |c| Ok(lock::writer(c, &key)?))
    }

    /// Breaks the write lock of `key` held by the server process `backend`
    /// (from [`PgStore::writer`]) by ending that connection: the writer
    /// loses the session (its next write is refused, or takes the lock again
    /// if free) and nothing it committed is lost. False when that process no
    /// longer holds it. The server allows it to the holder's own role, a
    /// member of `pg_signal_backend`, or a superuser.
    pub fn end_writer(&self, key: &SessionKey, backend: i32) -> Result<bool, PgError> {
        self.read(|c| Ok(lock::end_writer(c, key, backend)?))
    }

    /// Opens a connection of this store's server (for a follower).
    pub(crate) fn new_connection(&self) -> Result<Client, PgError> {
        self.inner.conns.server.connect()
    }
}

/// Whether a bounded write, on its own thread, may commit: the thread
/// commits only if the caller has not given up waiting, and the caller
/// learns whether the commit was already on its way when it gave up.
#[derive(Debug, Default)]
struct Fate(AtomicU8);

impl Fate {
    const RUNNING: u8 = 0;
    const COMMITTING: u8 = 1;
    const GIVEN_UP: u8 = 2;

    /// The writing thread: true when it may send its commit.
    fn commit(&self) -> bool {
        self.0.compare_exchange(Self::RUNNING, Self::COMMITTING, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// The caller: true when the write will not commit (it had not sent its commit).
    fn give_up(&self) -> bool {
        self.0.compare_exchange(Self::RUNNING, Self::GIVEN_UP, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }
}

/// An open append handle: the session's row as this writer last wrote it.
#[derive(Debug)]
struct PgAppend {
    store: PgStore,
    key: SessionKey,
    path: PathBuf,
    /// `None` after a failed write: the next one reads the row again.
    row: Option<SessionRow>,
}

impl AppendHandle for PgAppend {
    fn append(&mut self, bytes: &[u8]) -> Result<(), TreeError> {
        let err = |e: PgError| e.into_tree(&self.path);
        let row = match self.row.take() {
            Some(r) => r,
            None => self.store.row(&self.key).map_err(err)?.ok_or_else(|| TreeError::Missing(self.path.clone()))?,
        };
        let new = split_lines(bytes);
        let token = write::token();
        let (r, owned, t) = (row.clone(), bytes.to_vec(), token.clone());
        let bounded = self.store.write_bounded(&self.key, move |tx| write::append(tx, &r, &split_lines(&owned), &t));
        let written = match bounded {
            Err(PgError::LostDuringWrite { reason, .. }) => {
                self.store.recover_append(&self.key, &row, &new, &token, reason)
            }
            other => other,
        }
        .map_err(err)?;
        match written {
            Some(r) => {
                self.row = Some(r);
                Ok(())
            }
            None => Err(err(PgError::Server {
                server: self.store.server().shown().to_owned(),
                reason: format!(
                    "{} changed on the server since it was opened (written without its lock?); nothing was appended",
                    self.key
                ),
            })),
        }
    }
}

/// A held write lock: the connection holding it is closed when this drops.
#[derive(Debug)]
struct PgLock {
    store: PgStore,
    key: SessionKey,
}

impl WriteLock for PgLock {}

impl Drop for PgLock {
    fn drop(&mut self) {
        let writer = guard(&self.store.inner.writers).remove(&self.key);
        if let Some(w) = writer {
            // Released at once (the server would also release it when the
            // connection closes, a moment later), waiting at most the answer
            // limit: a frozen server keeps the connection to that thread, never the caller.
            let key = self.key.clone();
            within(self.store.server().answer_limit(), move || {
                let _ = lock::unlock(&mut guard(&w).0, &key);
                drop(w);
            });
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing a connection blocks on the driver's runtime: not on an async caller's thread.
        let writers = std::mem::take(self.writers.get_mut().unwrap_or_else(|p| p.into_inner()));
        if !writers.is_empty() {
            blocking(move || drop(writers));
        }
    }
}

impl Store for PgStore {
    fn exists(&self, path: &Path) -> Result<bool, TreeError> {
        let key = SessionKey::of_path(path);
        Ok(self.row(&key).map_err(|e| e.into_tree(path))?.is_some())
    }

    fn read_from(&self, path: &Path, offset: u64) -> Result<Option<Box<dyn Read + Send>>, TreeError> {
        let row = self.row(&SessionKey::of_path(path)).map_err(|e| e.into_tree(path))?;
        Ok(row.map(|r| Box::new(ServerReader::new(ServerFile::new(self.conns(), &r), offset)) as Box<dyn Read + Send>))
    }

    fn open_at(&self, path: &Path) -> Result<Option<Arc<dyn ReadAt>>, TreeError> {
        let row = self.row(&SessionKey::of_path(path)).map_err(|e| e.into_tree(path))?;
        Ok(row.map(|r| self.lines(&r)))
    }

    fn open_indexed(&self, path: &Path) -> Result<Option<Indexed>, TreeError> {
        let key = SessionKey::of_path(path);
        let found = self.read_bounded(move |c| crate::index::find(c, &key)).map_err(|e| e.into_tree(path))?;
        Ok(found.map(|(row, extent)| {
            let index = extent.map(|e| ServerIndex::open(&self.conns(), &row, e, |f, p| self.part(&row, f, p)));
            (self.lines(&row), index)
        }))
    }

    fn stamp(&self, path: &Path) -> Option<FileStamp> {
        let row = self.row(&SessionKey::of_path(path)).ok()??;
        Some(FileStamp {
            identity: self.identity(&row),
            size: u64::try_from(row.byte_size).unwrap_or_default(),
            mtime_ns: row.changed_ns(),
            // Every write to a row moves its change time: no edit in place goes unseen.
            changed_ns: row.changed_ns(),
        })
    }

    /// Sessions change only through writes that keep their index in the
    /// same transaction: open sessions are not watched.
    fn changes_in_place(&self) -> bool {
        false
    }

    fn open_append(
        &self,
        path: &Path,
        durability: Durability,
    ) -> Result<(Box<dyn AppendHandle>, Option<TailRepair>), TreeError> {
        let key = SessionKey::of_path(path);
        let err = |e: PgError| e.into_tree(path);
        // The server's own setting otherwise: Arbor never weakens it. Set on
        // the writer's connection (for its later appends too), in the same
        // bounded transaction (made again on the new connection after a drop).
        let durable = durability == Durability::Fsync && self.is_writer(&key);
        let k = key.clone();
        let (row, repair) = self
            .write_bounded_again_if_lost(&key, 1, move |tx| {
                if durable {
                    tx.batch_execute("SET synchronous_commit = on")?;
                }
                let row = write::ensure(tx, &k)?;
                let (row, repair) = write::repair_tail(tx, &k, row)?;
                // A session from before the server kept indexes gets one from its first writer.
                crate::index::build_missing(tx, row.id)?;
                Ok((row, repair))
            })
            .map_err(err)?;
        let handle = PgAppend { store: self.clone(), key, path: path.to_owned(), row: Some(row) };
        Ok((Box::new(handle), repair))
    }

    fn rewrite(&self, path: &Path, bytes: &[u8]) -> Result<(), TreeError> {
        let key = SessionKey::of_path(path);
        // Bounded (owned by the write, on a thread of its own), with one
        // answer limit for each statement's worth of lines it sends.
        let allowances = u32::try_from(1 + bytes.len() / crate::lines::CHUNK_BYTES).unwrap_or(u32::MAX);
        let (k, bytes) = (key.clone(), bytes.to_vec());
        self.write_bounded_again_if_lost(&key, allowances, move |tx| write::replace(tx, &k, &bytes))
            .map_err(|e| e.into_tree(path))?;
        Ok(())
    }

    fn backup(&self, path: &Path, what: &str) -> Result<PathBuf, TreeError> {
        let key = SessionKey::of_path(path);
        let err = |e: PgError| e.into_tree(path);
        // Bounded, one answer limit per 8 MiB of lines the server copies.
        let size = self.row(&key).map_err(err)?.map_or(0, |r| usize::try_from(r.byte_size).unwrap_or(usize::MAX));
        let allowances = u32::try_from(1 + size / crate::lines::CHUNK_BYTES).unwrap_or(u32::MAX);
        let (k, p, what) = (key.clone(), path.to_owned(), what.to_owned());
        let side = self
            .write_bounded_for(&key, allowances, move |tx| {
                let Some(row) = SessionRow::find(tx, &k)? else {
                    return Err(SqlError::Other(PgError::Tree(TreeError::Missing(p))));
                };
                write::copy_aside(tx, &k, &row, &what)
            })
            .map_err(err)?;
        Ok(side.path())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn WriteLock>, TreeError> {
        let key = SessionKey::of_path(path);
        let err = |e: PgError| e.into_tree(path);
        self.check_name(&key).map_err(err)?;
        let client = self.inner.conns.server.connect().map_err(err)?;
        // Bounded: a lock taken after the caller gave up goes with its connection.
        let k = key.clone();
        let (conn, _, taken) = self
            .inner
            .conns
            .answer_within(Conn(client), move |c| Ok(lock::take(c, &k, lock::Scope::Session)?))
            .map_err(err)?;
        let taken = taken.map_err(|e| err(self.inner.conns.server.classify(e, false)));
        match taken {
            Ok(Ok(())) => {
                guard(&self.inner.writers).insert(key.clone(), Arc::new(Mutex::new(conn)));
                Ok(Box::new(PgLock { store: self.clone(), key }) as Box<dyn WriteLock>)
            }
            refused => {
                blocking(move || drop(conn));
                match refused {
                    Ok(Err(holder)) => Err(TreeError::Locked { path: path.to_owned(), holder }),
                    Err(e) => Err(e),
                    Ok(Ok(())) => unreachable!("matched above"),
                }
            }
        }
    }

    fn list(&self, dir: &Path) -> Result<Vec<StoredFile>, TreeError> {
        let d = SessionKey::dir_of(dir);
        self.read_bounded(move |c| {
            let rows = c.query_typed(
                "SELECT name, changed_at FROM arbor.sessions WHERE dir = $1 AND name LIKE '%.jsonl' ORDER BY name",
                &[(&d, Type::TEXT)],
            )?;
            Ok(rows
                .iter()
                .map(|r| StoredFile {
                    path: SessionKey { dir: d.clone(), name: r.get(0) }.path(),
                    modified: Some(r.get(1)),
                })
                .collect())
        })
        .map_err(|e| e.into_tree(dir))
    }

    fn list_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>, TreeError> {
        // Session directories sit at the root; they hold no directories.
        if dir.parent().is_some() {
            return Ok(vec![]);
        }
        self.read_bounded(|c| {
            let rows = c.query_typed("SELECT DISTINCT dir FROM arbor.sessions WHERE dir <> '' ORDER BY dir", &[])?;
            Ok(rows.iter().map(|r| Path::new(crate::key::ROOT).join(r.get::<_, &str>(0))).collect())
        })
        .map_err(|e| e.into_tree(dir))
    }

    fn create_dir_all(&self, _dir: &Path) -> Result<(), TreeError> {
        Ok(())
    }
}
