//! `Session`: one session, opened read-only or for writing (under the same
//! write lock as the `arbor` command), until `close()` or the end of a
//! `with` block.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use arbor_tree::{Position, Session, SessionOptions};

use super::entry::{entries, Entry};
use super::{errors, loads, Raise};
use crate::values::{self, Failure, Mode};

/// One pi session: its tree, the path to any entry, the context a model
/// sees there, its labels; and, opened for writing, appends.
///
/// Open one with `arbor_sessions.open(path, mode)` or `Sessions.open(name,
/// mode)`. A session opened for writing holds the file's write lock until
/// `close()` (or the end of a `with` block): a second writer, here or in
/// any other process (the `arbor` command, pi through Arbor), is refused
/// with `LockedError`.
#[derive(Debug)]
#[pyclass(frozen, name = "Session", module = "arbor_sessions")]
pub struct PySession {
    inner: Mutex<Option<Session>>,
    /// The file, as it was named (kept after `close()` for messages).
    file: Option<PathBuf>,
}

impl PySession {
    /// Opens `path` in `mode` with `opts`.
    pub fn open(py: Python<'_>, path: PathBuf, mode: &str, opts: SessionOptions) -> PyResult<PySession> {
        let mode = Mode::parse(mode).raise(py)?;
        let session = py.detach(|| values::open(&path, mode, opts)).raise(py)?;
        Ok(PySession { inner: Mutex::new(Some(session)), file: Some(path) })
    }

    /// Runs `f` on the open session, without holding Python's lock.
    fn with<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut Session) -> Result<R, Failure> + Send) -> PyResult<R> {
        py.detach(|| {
            let mut guard = self.inner.lock().map_err(|_| Failure::Other("the session was poisoned".into()))?;
            match guard.as_mut() {
                Some(s) => f(s),
                None => Err(Failure::Other(format!("{}: the session is closed", self.name()))),
            }
        })
        .raise(py)
    }

    fn name(&self) -> String {
        self.file.as_ref().map_or_else(|| "session".into(), |f| f.display().to_string())
    }

    /// The entries at the positions `pick` chooses.
    fn entries_at(
        &self,
        py: Python<'_>,
        pick: impl FnOnce(&Session) -> Result<Vec<Position>, Failure> + Send,
    ) -> PyResult<Vec<Entry>> {
        let rows = self.with(py, |s| values::rows(s, &pick(s)?))?;
        entries(py, rows)
    }
}

#[pymethods]
impl PySession {
    /// The session file (`None` for a session not yet on disk).
    #[getter]
    fn file(&self) -> Option<String> {
        self.file.as_ref().map(|f| f.display().to_string())
    }

    /// The session's id (its header's `id`).
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| Ok(s.session_id().to_owned()))
    }

    /// The working directory the session was started in.
    #[getter]
    fn cwd(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| Ok(s.cwd().to_owned()))
    }

    /// The session's name (the newest `session_info` name), or `None`.
    #[getter(name)]
    fn session_name(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |s| Ok(s.session_name().map_err(values::changed(s))?.map(str::to_owned)))
    }

    /// The header line, a dict.
    #[getter]
    fn header<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let text = self.with(py, |s| values::header_json(s))?;
        loads(py, &text)
    }

    /// True when the session was opened read-only.
    #[getter]
    fn read_only(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |s| Ok(s.is_read_only()))
    }

    /// What the reader found wrong in the file, one `FILE:LINE: reason` each
    /// (the lines pi would skip or misread); empty for a sound file.
    #[getter]
    fn diagnostics(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let file = self.name();
        self.with(py, |s| Ok(s.diagnostics().iter().map(|d| d.with_file(&file).to_string()).collect()))
    }

    /// The id of the leaf, the entry the next append follows (`None` when empty).
    #[getter]
    fn leaf_id(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |s| Ok(s.leaf_id().map(str::to_owned)))
    }

    /// The leaf entry (`None` when empty).
    #[getter]
    fn leaf(&self, py: Python<'_>) -> PyResult<Option<Entry>> {
        let found = self.entries_at(py, |s| Ok(s.leaf_id().and_then(|id| s.position_of(id)).into_iter().collect()))?;
        Ok(found.into_iter().next())
    }

    /// The entry with this id (`NotFoundError` when there is none).
    fn entry(&self, py: Python<'_>, id: &str) -> PyResult<Entry> {
        let found = self.entries_at(py, |s| Ok(vec![values::position(s, id)?]))?;
        found.into_iter().next().ok_or_else(|| errors::NotFoundError::new_err(id.to_owned()))
    }

    /// Every entry, in file order (pi's `getEntries()`).
    fn entries(&self, py: Python<'_>) -> PyResult<Vec<Entry>> {
        self.entries_at(py, |s| Ok(s.positions().collect()))
    }

    /// The direct children of an entry, in file order.
    fn children(&self, py: Python<'_>, id: &str) -> PyResult<Vec<Entry>> {
        self.entries_at(py, |s| values::children(s, id))
    }

    /// The entries from the root to `to` (default: the leaf), every type
    /// included (pi's `getBranch()`; `arbor path --json`).
    #[pyo3(signature = (to = None))]
    fn path(&self, py: Python<'_>, to: Option<&str>) -> PyResult<Vec<Entry>> {
        self.entries_at(py, |s| values::path(s, to))
    }

    /// The whole tree as pi's `getTree()` gives it (`arbor tree --json`): a
    /// list of root nodes, each a dict with `entry`, `children` and, when
    /// labelled, `label` and `labelTimestamp`.
    ///
    /// The lists nest as deep as the longest path (a long session is deeper
    /// than `json.dumps` or `==` recurse): walk it with a stack, not recursion.
    fn tree<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let text = self.with(py, |s| values::tree_flat_json(s))?;
        nest(py, &loads(py, &text)?)
    }

    /// The context a model sees at `at` (default: the leaf), as pi's
    /// `buildSessionContext()` returns it (`arbor context --json`): a dict
    /// with `messages`, `thinkingLevel` and `model`. The leaf stays where it is.
    #[pyo3(signature = (at = None))]
    fn context<'py>(&self, py: Python<'py>, at: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let text = self.with(py, |s| values::context_json(s, at))?;
        loads(py, &text)
    }

    /// The messages a model receives at `at` (default: the leaf), after pi's
    /// `convertToLlm()` (`arbor context --llm --json`): `user`, `assistant`
    /// and `toolResult` messages.
    #[pyo3(signature = (at = None))]
    fn llm_messages<'py>(&self, py: Python<'py>, at: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let text = self.with(py, |s| values::llm_json(s, at))?;
        loads(py, &text)
    }

    /// The label of an entry, or `None`.
    fn label(&self, py: Python<'_>, id: &str) -> PyResult<Option<String>> {
        self.with(py, |s| Ok(s.get_label(id).map_err(values::changed(s))?.map(str::to_owned)))
    }

    /// Every label, by entry id, in the order the entries got theirs.
    fn labels<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let labels = self.with(py, |s| values::labels(s))?;
        let out = PyDict::new(py);
        for (id, label) in labels {
            out.set_item(id, label)?;
        }
        Ok(out)
    }

    /// Appends a message (a dict in pi's shape: `user_message()`,
    /// `assistant_message()`, `tool_result()` make them) as a child of the
    /// leaf, which it becomes; the new entry's id. On disk before it returns
    /// (a new session reaches disk with its first assistant message, as pi writes it).
    fn append_message(&self, py: Python<'_>, message: &Bound<'_, PyAny>) -> PyResult<String> {
        if !message.is_instance_of::<PyDict>() {
            return Err(pyo3::exceptions::PyTypeError::new_err("a message is a dict"));
        }
        let text = super::dumps(py, message)?;
        self.with(py, |s| values::append_message(s, &text))
    }

    /// Sets the label of an entry (`None` or blank clears it); the id of the
    /// label entry appended.
    #[pyo3(signature = (id, label))]
    fn set_label(&self, py: Python<'_>, id: &str, label: Option<&str>) -> PyResult<String> {
        self.with(py, |s| values::set_label(s, id, label))
    }

    /// Closes the session: a writer's lock is released. Later calls raise
    /// `ArborError`; closing again does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let session = py.detach(|| self.inner.lock().map(|mut g| g.take()).ok().flatten());
        drop(session);
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    /// The number of entries (duplicates included).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |s| Ok(s.len()))
    }

    /// True when an entry has this id.
    fn __contains__(&self, py: Python<'_>, id: &str) -> PyResult<bool> {
        self.with(py, |s| Ok(s.position_of(id).is_some()))
    }

    fn __repr__(&self) -> String {
        let open = self.inner.lock().map(|g| g.as_ref().map(|s| (s.session_id().to_owned(), s.is_read_only())));
        let state = match open {
            Ok(Some((id, true))) => format!("id='{id}', read-only"),
            Ok(Some((id, false))) => format!("id='{id}', writing"),
            _ => "closed".into(),
        };
        format!("Session('{}', {state})", self.name())
    }
}

/// pi's `getTree()` from the flat list of [`values::tree_flat_json`]: each
/// node put into its parent's `children` (made before it), no recursion.
fn nest<'py>(py: Python<'py>, flat: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let flat = flat.cast::<PyList>()?;
    let roots = PyList::empty(py);
    let mut made: Vec<Bound<'py, PyList>> = Vec::with_capacity(flat.len());
    for item in flat.iter() {
        let item = item.cast::<PyDict>()?;
        let node = PyDict::new(py);
        let children = PyList::empty(py);
        node.set_item("entry", item.get_item("entry")?)?;
        node.set_item("children", &children)?;
        for key in ["label", "labelTimestamp"] {
            if let Some(value) = item.get_item(key)? {
                node.set_item(key, value)?;
            }
        }
        match item.get_item("parent")?.filter(|p| !p.is_none()) {
            Some(p) => {
                let parent = made
                    .get(p.extract::<usize>()?)
                    .ok_or_else(|| errors::ArborError::new_err("the tree names a parent after its child"))?;
                parent.append(&node)?;
            }
            None => roots.append(&node)?,
        }
        made.push(children);
    }
    Ok(roots)
}
