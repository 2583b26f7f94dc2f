//! [`Sessions`] on the server: the listing from the sessions' rows, search
//! with `arbor-search`'s engine, as files are searched (`search.rs`), names found by SQL,
//! following through LISTEN/NOTIFY (`follow.rs`), new sessions under
//! [`ROOT`].

use std::path::{Path, PathBuf};

use arbor_tree::sessions::{
    path_under, Flow, Follow, FollowFrom, Hit, ListDetail, ListRequest, Progress, Scope, SearchRequest, Sessions,
    SessionsError,
};
use arbor_tree::{read_session_info, SessionListInfo, SessionOptions, Store};

use crate::error::PgError;
use crate::key::{SessionKey, ROOT};
use crate::list::scope_dir;
use crate::store::PgStore;

/// A server error as the seam reports it (names that match nothing or too
/// much keep their meaning).
fn seam_error(e: PgError) -> SessionsError {
    match e {
        PgError::NoSession { server, name } => SessionsError::NotFound { location: server, name },
        PgError::Ambiguous { server, name, total, candidates } => SessionsError::Ambiguous {
            location: server,
            name,
            count: usize::try_from(total).unwrap_or(usize::MAX),
            candidates,
        },
        PgError::BadName { name, reason, .. } => SessionsError::BadName { name, reason },
        PgError::Tree(e) => SessionsError::Tree(e),
        other => SessionsError::backend(other),
    }
}

impl Sessions for PgStore {
    fn location(&self) -> String {
        self.server().shown().to_owned()
    }

    fn session_options(&self) -> SessionOptions {
        SessionOptions { sessions_root: Some(PathBuf::from(ROOT)), ..SessionOptions::default() }
            .with_store(self.clone())
    }

    /// From the facts each write keeps in the session's row; with the text,
    /// every session listed is read.
    fn listing(&self, request: &ListRequest, _progress: &dyn Progress) -> Result<Vec<SessionListInfo>, SessionsError> {
        let mut list = self.listed_rows(scope_dir(&request.scope)).map_err(seam_error)?;
        if request.detail == ListDetail::WithText {
            for info in &mut list {
                let Some(r) = self.read_from(&info.path, 0)? else { continue };
                if let Some(full) = read_session_info(r, &info.path, None)? {
                    info.all_messages_text = full.all_messages_text;
                }
            }
        }
        Ok(list)
    }

    /// `arbor-search`'s engine over the sessions' bytes, as files are
    /// searched (see `search.rs`); always as fresh as the server.
    fn search(&self, request: &SearchRequest, progress: &dyn Progress) -> Result<Vec<Hit>, SessionsError> {
        self.search_engine(request, progress, &mut |_| Flow::Go)
    }

    fn search_each(
        &self,
        request: &SearchRequest,
        progress: &dyn Progress,
        on_hits: &mut dyn FnMut(&[Hit]) -> Flow,
    ) -> Result<Vec<Hit>, SessionsError> {
        self.search_engine(request, progress, on_hits)
    }

    /// The server's filters are kept by its writes (and by searches): nothing to bring up to date.
    fn update_index(&self, _scope: &Scope, _progress: &dyn Progress) -> Result<(), SessionsError> {
        Ok(())
    }

    /// A name with a `/` is the session of its last two components
    /// (`DIR/FILE`, or a path of the store); else a file name, a session id
    /// or a unique prefix of one.
    fn resolve(&self, name: &str) -> Result<PathBuf, SessionsError> {
        self.session_key(name).map(|k| k.path()).map_err(seam_error)
    }

    fn follow(&self, session: &Path, from: FollowFrom) -> Result<(Box<dyn Follow>, Vec<u8>), SessionsError> {
        let (follower, now) = self.follow_key(&SessionKey::of_path(session), from).map_err(seam_error)?;
        Ok((Box::new(follower), now))
    }

    fn import_into(&self, cwd: &str, file_name: &str) -> Result<PathBuf, SessionsError> {
        path_under(Path::new(ROOT), cwd, file_name)
    }

    /// Sessions a search left out (one that does not open), one line each.
    fn take_warnings(&self) -> Vec<String> {
        PgStore::take_warnings(self)
    }
}
