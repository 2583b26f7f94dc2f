//! `Sessions`: every session under a sessions root, listed and searched
//! through `arbor_catalog::FileSessions` (the same answers as `arbor ls
//! --json` and `arbor search --json`).

use std::path::PathBuf;

use pyo3::prelude::*;

use arbor_catalog::FileSessions;
use arbor_tree::sessions::Sessions;

use super::session::PySession;
use super::{loads, Raise};
use crate::values;

/// The sessions under a sessions root in pi's layout
/// (`<root>/<encoded cwd>/<time>_<id>.jsonl`): listing, search, names.
///
/// They are answered from a catalog that is refreshed before each answer
/// (a `stat` per unchanged file), kept in memory unless `cache_dir` names a
/// folder to keep it in (then reopening is cheap: only what changed is read
/// again). Nothing is written beside the sessions.
#[derive(Debug)]
#[pyclass(frozen, name = "Sessions", module = "arbor_sessions")]
pub struct PySessions {
    inner: FileSessions,
    root: PathBuf,
}

#[pymethods]
impl PySessions {
    #[new]
    #[pyo3(signature = (root, *, cache_dir = None))]
    fn new(root: PathBuf, cache_dir: Option<PathBuf>) -> PySessions {
        PySessions { inner: values::file_sessions(&root, cache_dir), root }
    }

    /// The sessions root.
    #[getter]
    fn root(&self) -> String {
        self.root.display().to_string()
    }

    /// pi's `SessionInfo` of every session of working directory `cwd`
    /// (default: of all), newest first, each a dict (`path`, `id`, `cwd`,
    /// `name`, `created`, `modified`, `messageCount`, `firstMessage`,
    /// `allMessagesText`): what `arbor ls --json` prints.
    #[pyo3(signature = (cwd = None))]
    fn listing<'py>(&self, py: Python<'py>, cwd: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let text = py.detach(|| values::listing_json(&self.inner, cwd)).raise(py)?;
        loads(py, &text)
    }

    /// The best `limit` entries whose text matches `query` (tokens that must
    /// all match, `"quoted phrases"`, `re:REGEX`), on every branch of the
    /// sessions of `cwd` (default: all), each a dict (`path`, `sessionId`,
    /// `entryId`, `role`, `snippet`, `marks`, `onActivePath`, `labels`, …):
    /// what `arbor search --json` prints.
    #[pyo3(signature = (query, *, cwd = None, limit = 20))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: &str,
        cwd: Option<&str>,
        limit: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let text = py.detach(|| values::search_json(&self.inner, query, cwd, limit)).raise(py)?;
        loads(py, &text)
    }

    /// The file a name means: a path, `DIR/FILE`, a file name, a session id
    /// or a unique prefix of one (`NotFoundError`, `AmbiguousError`).
    fn resolve(&self, py: Python<'_>, name: &str) -> PyResult<String> {
        let path = py.detach(|| values::resolve(&self.inner, name)).raise(py)?;
        Ok(path.display().to_string())
    }

    /// Opens the session a name means (see `resolve`) in `mode` (`"read"`,
    /// `"write"` or `"create"`).
    #[pyo3(signature = (name, mode = "read"))]
    fn open(&self, py: Python<'_>, name: &str, mode: &str) -> PyResult<PySession> {
        let path = py.detach(|| values::resolve(&self.inner, name)).raise(py)?;
        PySession::open(py, path, mode, self.inner.session_options())
    }

    /// Warnings since the last call (a damaged catalog built again), one line each.
    fn warnings(&self) -> Vec<String> {
        self.inner.take_warnings()
    }

    fn __repr__(&self) -> String {
        format!("Sessions('{}')", self.root.display())
    }
}
