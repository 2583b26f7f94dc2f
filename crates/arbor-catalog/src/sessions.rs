//! [`FileSessions`]: the [`Sessions`] of a local sessions root, answered by
//! the catalog (listing, search, names) and by the files themselves
//! (following, where new sessions go).

use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use arbor_tree::listing::SessionListInfo;
use arbor_tree::sessions::{
    choose, path_under, Flow, Follow, FollowFrom, Hit, ListDetail, ListRequest, NoProgress, Progress, Scope,
    SearchRequest, Sessions, SessionsError,
};
use arbor_tree::SessionOptions;

use crate::catalog::{Catalog, CatalogOptions};
use crate::error::CatalogError;
use crate::follow::FileFollower;
use crate::search::SearchOptions;

/// Catalog connections kept for the next question.
const KEPT: usize = 4;

/// The sessions under a local sessions root (pi's layout:
/// `<root>/<encoded cwd>/<time>_<id>.jsonl`), as [`Sessions`].
///
/// Listing, search and names go through the root's [`Catalog`], opened as
/// [`FileSessions::with_catalog`] says (by default in memory: nothing is
/// written anywhere; give it a cache directory to keep the catalog between
/// runs). Each question refreshes what it covers first, so answers are
/// those the files give now. Questions from several threads at once each
/// get a connection of their own.
#[derive(Debug)]
pub struct FileSessions {
    root: PathBuf,
    options: CatalogOptions,
    /// Catalog connections not in use.
    idle: Mutex<Vec<Catalog>>,
    /// The catalogs' warnings, until [`Sessions::take_warnings`].
    warnings: Mutex<Vec<String>>,
}

/// A poisoned mutex only means another thread panicked while holding it; what it guards is still whole.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A catalog error as the seam reports it (a bad query stays a bad query).
fn seam_error(e: CatalogError) -> SessionsError {
    match e {
        CatalogError::Query(reason) => SessionsError::Query(reason),
        other => SessionsError::backend(other),
    }
}

impl FileSessions {
    /// The sessions under `root`, with the catalog in memory
    /// ([`CatalogOptions::default`]).
    pub fn new(root: impl Into<PathBuf>) -> FileSessions {
        FileSessions {
            root: root.into(),
            options: CatalogOptions::default(),
            idle: Mutex::new(Vec::new()),
            warnings: Mutex::new(Vec::new()),
        }
    }

    /// Opens the catalog as `options` say (a cache directory keeps it on disk).
    pub fn with_catalog(mut self, options: CatalogOptions) -> FileSessions {
        self.options = options;
        lock(&self.idle).clear();
        self
    }

    /// The sessions root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Runs `f` on a catalog connection of its own, kept for the next question.
    fn with<T>(&self, f: impl FnOnce(&mut Catalog) -> Result<T, CatalogError>) -> Result<T, SessionsError> {
        let kept = lock(&self.idle).pop();
        let mut catalog = match kept {
            Some(c) => c,
            None => Catalog::open_with(&self.root, self.options.clone()).map_err(seam_error)?,
        };
        let result = f(&mut catalog);
        lock(&self.warnings).extend(catalog.take_warnings());
        let mut idle = lock(&self.idle);
        if idle.len() < KEPT {
            idle.push(catalog);
        }
        result.map_err(seam_error)
    }

    /// `DIR/FILE` under the root, when `name` is two plain components and such a file is there.
    fn under_root(&self, name: &Path) -> Option<PathBuf> {
        let parts: Vec<Component> = name.components().collect();
        let plain = parts.len() == 2 && parts.iter().all(|c| matches!(c, Component::Normal(_)));
        let path = self.root.join(name);
        (plain && std::fs::symlink_metadata(&path).is_ok()).then_some(path)
    }
}

/// Fills pi's `allMessagesText` of every listed session, on `threads`
/// threads. A session deleted since the listing is left out; one that cannot
/// be read is left out with a warning (returned).
fn fill_texts(list: &mut Vec<SessionListInfo>, threads: usize) -> Vec<String> {
    let chunk = list.len().div_ceil(threads.max(1)).max(1);
    let outcomes: Vec<Option<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = list
            .chunks_mut(chunk)
            .map(|part| {
                s.spawn(move || -> Vec<Option<String>> {
                    // None: kept; Some(warning): left out ("" when it is simply gone).
                    part.iter_mut()
                        .map(|info| match crate::facts::all_messages_text(&info.path) {
                            Ok(text) => {
                                info.all_messages_text = text;
                                None
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(String::new()),
                            Err(e) => Some(format!("cannot read {} ({e}); it is left out", info.path.display())),
                        })
                        .collect()
                })
            })
            .collect();
        // A reader's panic is this thread's.
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    let mut outcome = outcomes.iter();
    list.retain(|_| outcome.next().is_none_or(Option::is_none));
    outcomes.into_iter().flatten().filter(|w| !w.is_empty()).collect()
}

impl Sessions for FileSessions {
    fn location(&self) -> String {
        self.root.display().to_string()
    }

    fn session_options(&self) -> SessionOptions {
        SessionOptions { sessions_root: Some(self.root.clone()), ..SessionOptions::default() }
    }

    fn listing(&self, request: &ListRequest, progress: &dyn Progress) -> Result<Vec<SessionListInfo>, SessionsError> {
        let mut list = self.with(|c| {
            c.refresh(&request.scope, progress)?;
            c.sessions(&request.scope)
        })?;
        if request.detail == ListDetail::WithText {
            let warnings = fill_texts(&mut list, self.options.threads);
            lock(&self.warnings).extend(warnings);
        }
        Ok(list)
    }

    /// Searches the session files themselves (`arbor-search`'s engine), so
    /// a search is as fresh as the files whatever its [`SearchRequest::freshness`].
    fn search(&self, request: &SearchRequest, progress: &dyn Progress) -> Result<Vec<Hit>, SessionsError> {
        self.search_each(request, progress, &mut |_| Flow::Go)
    }

    fn search_each(
        &self,
        request: &SearchRequest,
        progress: &dyn Progress,
        on_hits: &mut dyn FnMut(&[Hit]) -> Flow,
    ) -> Result<Vec<Hit>, SessionsError> {
        let opts = SearchOptions { scope: request.scope.clone(), limit: request.limit, fuzzy: request.fuzzy };
        self.with(|c| c.search_with(&request.query, &opts, progress, on_hits))
    }

    /// Brings the listing up to date and builds the search filters every
    /// session range lacks ([`Catalog::build_filters`]; of every session,
    /// whatever the scope, since the filters are the whole catalog's).
    fn update_index(&self, scope: &Scope, progress: &dyn Progress) -> Result<(), SessionsError> {
        self.with(|c| {
            c.refresh(scope, progress)?;
            c.build_filters(progress).map(drop)
        })
    }

    /// A path that is there (as given); `DIR/FILE` under the root; another
    /// path as given (opening it says whether it is there); a file name or
    /// a session id (or a unique prefix of one) through the catalog (a file
    /// name that no session has is taken as a path, for a new session).
    fn resolve(&self, name: &str) -> Result<PathBuf, SessionsError> {
        let given = Path::new(name);
        if std::fs::symlink_metadata(given).is_ok() {
            return Ok(given.to_owned());
        }
        if name.contains('/') || name.contains(std::path::MAIN_SEPARATOR) {
            return Ok(self.under_root(given).unwrap_or_else(|| given.to_owned()));
        }
        let name = name.trim();
        let named = self.with(|c| {
            c.refresh(&Scope::All, &NoProgress)?;
            c.named(name)
        })?;
        if named.count == 0 && name.ends_with(".jsonl") {
            return Ok(given.to_owned());
        }
        choose(&self.location(), name, named.count, named.first)
    }

    fn follow(&self, session: &Path, from: FollowFrom) -> Result<(Box<dyn Follow>, Vec<u8>), SessionsError> {
        let (follower, now) = FileFollower::start(session, from)?;
        Ok((Box::new(follower), now))
    }

    fn import_into(&self, cwd: &str, file_name: &str) -> Result<PathBuf, SessionsError> {
        path_under(&self.root, cwd, file_name)
    }

    fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.warnings))
    }
}
