//! [`Catalog`]: one sessions root's catalog, opened from the cache directory
//! and mended when it is damaged, outdated or held too long by another process.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::Connection;

use arbor_log::time::format_iso_ms;
use arbor_tree::listing::SessionListInfo;
use arbor_tree::sessions::{Hit, Progress, Scope};

use crate::build::BuildStats;
use crate::db;
use crate::error::CatalogError;
use crate::refresh::RefreshStats;
use crate::search::SearchOptions;
use crate::walk::path_under;

/// How a catalog is opened.
#[derive(Debug, Clone)]
pub struct CatalogOptions {
    /// The cache directory the catalog file lives in (`<dir>/catalog/`);
    /// `None` keeps the catalog in memory for this process only.
    pub cache_dir: Option<PathBuf>,
    /// Threads that read session files.
    pub threads: usize,
    /// Searches that would build many filters leave them to a builder
    /// (`None`: every search builds the filters of what it reads whole).
    pub background: Option<Background>,
}

/// When a search leaves its filters to a builder, and how it starts one.
///
/// A search that must read at least [`Background::above`] bytes that no
/// filter covers answers from a plain scan, builds no filter, and calls
/// [`Background::start`] after it: the caller starts a builder
/// ([`Catalog::build_filters`], `arbor cache build` for the CLI), usually in
/// a process of its own, so that the first search is as fast as a scan.
#[derive(Clone)]
pub struct Background {
    /// The bytes without filters from which a search leaves them to a builder.
    pub above: u64,
    /// Starts a builder (called once per search that left its filters).
    pub start: Arc<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background").field("above", &self.above).finish_non_exhaustive()
    }
}

impl Default for CatalogOptions {
    /// In memory (nothing is written anywhere: name a cache directory, such as
    /// [`arbor_tree::paths::cache_dir`], to keep the catalog between runs),
    /// read on every core (up to 8).
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        CatalogOptions { cache_dir: None, threads, background: None }
    }
}

impl CatalogOptions {
    /// Keeps the catalog in `<dir>/catalog/` (`None`: in memory).
    pub fn with_cache_dir(mut self, dir: Option<PathBuf>) -> CatalogOptions {
        self.cache_dir = dir;
        self
    }

    /// Leaves large filter builds to a builder, as `background` says.
    pub fn with_background(mut self, background: Option<Background>) -> CatalogOptions {
        self.background = background;
        self
    }
}

/// The catalog of every session under one sessions root.
///
/// Every question refreshes what it covers first (a `stat` per file when
/// nothing changed), so answers are those the files give now. The session
/// files are never written; the catalog can be deleted at any time.
#[derive(Debug)]
pub struct Catalog {
    root: PathBuf,
    /// The root as stored in the catalog (absolute, links resolved when it exists).
    key: String,
    file: Option<PathBuf>,
    /// The cache directory, for sessions' tree indexes (`<cache>/index`).
    cache_dir: Option<PathBuf>,
    conn: Connection,
    threads: usize,
    background: Option<Background>,
    warnings: Vec<String>,
}

impl Catalog {
    /// Opens the catalog of `root` with the default options: in memory, for
    /// this value only.
    pub fn open(root: &Path) -> Result<Catalog, CatalogError> {
        Catalog::open_with(root, CatalogOptions::default())
    }

    /// Opens the catalog of `root` as `opts` say. A catalog that cannot be
    /// kept on disk (no cache directory, a read-only one) is kept in memory,
    /// with a warning; a damaged one is removed and built again, with a warning.
    pub fn open_with(root: &Path, opts: CatalogOptions) -> Result<Catalog, CatalogError> {
        let key = root_key(root);
        let mut warnings = vec![];
        let file = opts.cache_dir.as_deref().map(|dir| db::catalog_path(dir, Path::new(&key)));
        let conn = match &file {
            Some(path) => match connect(path, &key, &mut warnings) {
                Some(conn) => conn,
                None => in_memory(&key)?,
            },
            None => in_memory(&key)?,
        };
        let file = file.filter(|_| conn.path().is_some_and(|p| !p.is_empty()));
        let cache_dir = opts.cache_dir.clone();
        let (threads, background) = (opts.threads.max(1), opts.background);
        Ok(Catalog { root: root.to_owned(), key, file, cache_dir, conn, threads, background, warnings })
    }

    /// The catalog file (`None` when it is kept in memory).
    pub fn location(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The sessions root, as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Warnings since the last call (a rebuilt or memory-only catalog), one line each.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Brings the listing facts of the scope's sessions up to date.
    pub fn refresh(&mut self, scope: &Scope, progress: &dyn Progress) -> Result<RefreshStats, CatalogError> {
        self.guard(|c| c.refresh_now(scope, progress))
    }

    fn refresh_now(&mut self, scope: &Scope, progress: &dyn Progress) -> Result<RefreshStats, CatalogError> {
        let mut stats = RefreshStats::default();
        // Another process may have updated a row first; a second pass reads on from its result.
        for _ in 0..3 {
            let db_path = self.db_path();
            let mut warnings = vec![];
            let result = crate::refresh::refresh(
                &mut self.conn,
                &self.root,
                scope,
                self.threads,
                progress,
                &db_path,
                &mut warnings,
            );
            for w in warnings {
                if !self.warnings.contains(&w) {
                    self.warnings.push(w);
                }
            }
            stats = result?;
            if stats.conflicts == 0 {
                break;
            }
        }
        Ok(stats)
    }

    /// The scope's sessions as pi's `SessionInfo`, newest first, from the
    /// catalog as it stands (call [`Catalog::refresh`] first). `all_messages_text`
    /// is left empty: see [`crate::all_messages_text`].
    pub fn sessions(&mut self, scope: &Scope) -> Result<Vec<SessionListInfo>, CatalogError> {
        self.guard(|c| c.query_sessions(scope).map_err(|e| c.db_error(e)))
    }

    fn query_sessions(&self, scope: &Scope) -> rusqlite::Result<Vec<SessionListInfo>> {
        let mut sql = "SELECT rel, id, cwd, name, parent_session, created, modified_ms, message_count, first_message \
                       FROM sessions WHERE kind = 1"
            .to_owned();
        if matches!(scope, Scope::Dir(_)) {
            sql.push_str(" AND dir = ?1");
        }
        sql.push_str(" ORDER BY modified_ms DESC");
        let mut stmt = self.conn.prepare(&sql)?;
        let map = |r: &rusqlite::Row| -> rusqlite::Result<SessionListInfo> {
            Ok(SessionListInfo {
                path: self.path_of(&r.get::<_, String>(0)?),
                id: r.get(1)?,
                cwd: r.get(2)?,
                name: r.get(3)?,
                parent_session_path: r.get(4)?,
                created: r.get(5)?,
                modified: format_iso_ms(r.get(6)?),
                message_count: r.get::<_, i64>(7)? as usize,
                first_message: r.get::<_, Option<String>>(8)?.unwrap_or_else(|| "(no messages)".to_owned()),
                all_messages_text: String::new(),
            })
        };
        let list: rusqlite::Result<Vec<SessionListInfo>> = match scope {
            Scope::All => stmt.query_map([], map)?.collect(),
            Scope::Dir(d) => stmt.query_map([d], map)?.collect(),
        };
        // Ties in time go by path, as `arbor_tree`'s listings order them.
        let mut list = list?;
        list.sort_by(|a, b| {
            let time = |i: &SessionListInfo| arbor_log::time::parse_iso_ms(&i.modified);
            time(b).cmp(&time(a)).then_with(|| a.path.cmp(&b.path))
        });
        Ok(list)
    }

    /// Searches the text of every entry of the scope's sessions (refreshed
    /// first); see the crate's search rules in `search.rs`' docs and docs/cli.md.
    pub fn search(
        &mut self,
        query: &str,
        opts: &SearchOptions,
        progress: &dyn Progress,
    ) -> Result<Vec<Hit>, CatalogError> {
        self.search_with(query, opts, progress, &mut |_| arbor_search::Flow::Go)
    }

    /// [`Catalog::search`], handing each session's hits to `on_hits` as soon
    /// as they are certain (in the order of the answer, after every session
    /// read, with no hits too), as the session picker shows them; the search
    /// stops early when it answers [`arbor_search::Flow::Stop`].
    pub fn search_with(
        &mut self,
        query: &str,
        opts: &SearchOptions,
        progress: &dyn Progress,
        on_hits: &mut dyn FnMut(&[Hit]) -> arbor_search::Flow,
    ) -> Result<Vec<Hit>, CatalogError> {
        let query_error = |e: arbor_search::PatternError| CatalogError::Query(e.to_string());
        arbor_search::check_size(query).map_err(query_error)?;
        let parsed = arbor_search::parse_query(query).map_err(CatalogError::Query)?;
        let Some(pattern) = arbor_search::Pattern::new(&parsed).map_err(query_error)? else { return Ok(vec![]) };
        // The refresh and the search are one operation: a catalog found damaged
        // in either is built again and the whole answer is given from it.
        let mut deferred = false;
        let hits = self.guard(|c| {
            c.refresh_now(&opts.scope, progress)?;
            let db_path = c.db_path();
            let mut warnings = vec![];
            let mut ctx = crate::search::Ctx {
                conn: &mut c.conn,
                root: &c.root,
                db: c.file.as_deref(),
                index_dir: c.cache_dir.as_ref().map(|d| d.join("index")),
                threads: c.threads,
                warnings: &mut warnings,
                defer_above: c.background.as_ref().map(|b| b.above),
                deferred: false,
            };
            let hits = crate::search::run(&mut ctx, &pattern, opts, progress, on_hits);
            deferred = ctx.deferred;
            c.warnings.extend(warnings);
            hits.map_err(|source| CatalogError::Db { path: db_path, source })
        })?;
        if let (true, Some(b), Some(_)) = (deferred, &self.background, &self.file) {
            (b.start)();
        }
        Ok(hits)
    }

    /// Builds the search filters of every session range that has none (the
    /// listing refreshed first), as searches would build them while reading:
    /// what a search left to a builder ([`Background`]). Safe beside searches
    /// and refreshes of other processes. A catalog in memory keeps no filters:
    /// then it only refreshes.
    pub fn build_filters(&mut self, progress: &dyn Progress) -> Result<BuildStats, CatalogError> {
        self.guard(|c| {
            c.refresh_now(&Scope::All, progress)?;
            let Some(db) = c.file.clone() else { return Ok(BuildStats::default()) };
            let mut warnings = vec![];
            let stats = crate::build::run(&mut c.conn, &c.root, &db, c.threads, progress, &mut warnings);
            c.warnings.extend(warnings);
            stats
        })
    }

    /// The bytes of search filters the catalog keeps (its derived data beside the listing).
    pub fn filter_bytes(&self) -> u64 {
        crate::filters::bytes(&self.conn).unwrap_or(0)
    }

    /// A file's path from its path under the root.
    pub(crate) fn path_of(&self, rel: &str) -> PathBuf {
        path_under(&self.root, rel)
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn db_error(&self, source: rusqlite::Error) -> CatalogError {
        CatalogError::Db { path: self.db_path(), source }
    }

    /// The catalog file, or `:memory:`, for error messages.
    fn db_path(&self) -> PathBuf {
        self.file.clone().unwrap_or_else(|| PathBuf::from(":memory:"))
    }

    /// Runs `op`; a damaged catalog is rebuilt and one held past the busy
    /// timeout is set aside for one in memory, and `op` runs again.
    pub(crate) fn guard<T>(
        &mut self,
        mut op: impl FnMut(&mut Self) -> Result<T, CatalogError>,
    ) -> Result<T, CatalogError> {
        match op(self) {
            Err(CatalogError::Db { source, .. }) if db::is_damage(&source) => {
                self.rebuild(&source)?;
                op(self)
            }
            Err(CatalogError::Db { source, path }) if db::is_busy(&source) && self.file.is_some() => {
                self.warnings.push(format!(
                    "catalog {} is busy ({source}); this answer reads the session files without it",
                    path.display()
                ));
                self.conn = in_memory(&self.key)?;
                self.file = None;
                op(self)
            }
            Err(CatalogError::Db { source, path }) if db::is_readonly(&source) && self.file.is_some() => {
                self.warnings.push(format!(
                    "cannot keep the catalog at {} ({source}); it is kept in memory for now",
                    path.display()
                ));
                self.conn = in_memory(&self.key)?;
                self.file = None;
                op(self)
            }
            other => other,
        }
    }

    /// Replaces a damaged catalog with a new one.
    fn rebuild(&mut self, why: &rusqlite::Error) -> Result<(), CatalogError> {
        let Some(path) = self.file.clone() else {
            self.conn = in_memory(&self.key)?;
            return Ok(());
        };
        self.warnings.push(format!("catalog {} was damaged ({why}); it is built again", path.display()));
        self.conn = in_memory(&self.key)?;
        db::remove_files(&path);
        match connect(&path, &self.key, &mut self.warnings) {
            Some(conn) => self.conn = conn,
            None => self.file = None,
        }
        Ok(())
    }
}

/// Removes the derived data Arbor keeps in the cache directory `cache`:
/// every catalog with its search filters (`catalog/`), the sessions' tree
/// indexes (`index/`) and the local copies of sessions read from a server
/// (`copies/`, arbor-pg's `LocalCopies`). Links are removed, never followed. Returns the bytes
/// removed. The next command builds what it needs again.
pub fn clear_cache(cache: &Path) -> std::io::Result<u64> {
    let mut removed = 0;
    for name in ["catalog", "index", "copies"] {
        let dir = cache.join(name);
        let meta = match std::fs::symlink_metadata(&dir) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if !meta.is_dir() {
            removed += meta.len();
            std::fs::remove_file(&dir)?;
            continue;
        }
        removed += size_of(&dir);
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(removed)
}

/// Bytes of the files under a directory (links not followed).
fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => total += e.metadata().map_or(0, |m| m.len()),
                Err(_) => {}
            }
        }
    }
    total
}

/// The root as the catalog stores it: absolute, with links resolved when it exists.
fn root_key(root: &Path) -> String {
    let abs = std::fs::canonicalize(root).or_else(|_| std::path::absolute(root)).unwrap_or_else(|_| root.to_owned());
    abs.to_string_lossy().into_owned()
}

/// Opens the catalog file, rebuilding it once if it is damaged; `None` (with a
/// warning) when it cannot be kept there.
fn connect(path: &Path, key: &str, warnings: &mut Vec<String>) -> Option<Connection> {
    let fail = |warnings: &mut Vec<String>, e: &dyn std::fmt::Display| {
        warnings.push(format!("cannot keep the catalog at {} ({e}); it is kept in memory for now", path.display()));
        None
    };
    if let Some(dir) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return fail(warnings, &e);
        }
    }
    match db::open(path, key) {
        Ok(conn) => Some(conn),
        Err(db::OpenError::Damaged(e)) => {
            warnings.push(format!("catalog {} was damaged ({e}); it is built again", path.display()));
            db::remove_files(path);
            match db::open(path, key) {
                Ok(conn) => Some(conn),
                Err(db::OpenError::Damaged(e)) => fail(warnings, &e),
                Err(db::OpenError::Refused(why)) => fail(warnings, &why),
            }
        }
        Err(db::OpenError::Refused(why)) => fail(warnings, &why),
    }
}

fn in_memory(key: &str) -> Result<Connection, CatalogError> {
    db::open_in_memory(key).map_err(|source| CatalogError::Db { path: PathBuf::from(":memory:"), source })
}
