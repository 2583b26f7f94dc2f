//! The Python package `arbor-sessions` (`import arbor_sessions`): pi
//! sessions from Python through Arbor's library. Open a session read-only or
//! for writing (the same single-writer lock as the `arbor` command), read
//! its tree, the path to any entry and the context a model sees there (pi's
//! shapes, as dicts), list and search every session under a sessions root,
//! append messages and labels; failures are exceptions of one hierarchy
//! (`ArborError`, `LockedError`, `NotFoundError`, …).
//!
//! ```python
//! import arbor_sessions as arbor
//!
//! with arbor.open("session.jsonl") as s:          # read-only: no lock, nothing written
//!     for e in s.path():                          # root → leaf
//!         print(e.id, e.type, e.role)
//!     context = s.context()                       # pi's buildSessionContext(), a dict
//! ```
//!
//! Two layers, so that a Node package (napi-rs) can follow with the same
//! answers: [`values`] translates Arbor's values into plain ones (JSON text
//! written by the library's own writers, what `arbor … --json` prints;
//! strings; [`values::Failure`] kinds) and knows nothing of Python; `py`
//! is the Python glue, which only converts arguments, calls [`values`] and
//! turns its JSON into Python values with Python's `json` module.
//!
//! It does not decide anything the library decides (the tree, the
//! context, names, locks, what a listing or a search finds), keep any state
//! beyond an open session and a catalog, read environment variables, or
//! write anywhere its caller did not name: sessions are opened with the
//! library's defaults (no index cache), a catalog is kept in memory unless
//! a cache folder is given.
//!
//! Built as a wheel by maturin (`crates/arbor-py/pyproject.toml`, `cargo
//! xtask py`); Python's stubs are `python/arbor_sessions/_native.pyi`.

#![deny(missing_docs)]

pub mod values;

mod py;

use pyo3::prelude::*;

/// Opens the session file at `path` in `mode`: `"read"` (the default; no
/// lock, nothing written anywhere), `"write"` (an existing session, under
/// its write lock) or `"create"` (like `"write"`, starting a new session
/// where no file is yet). Options are the library's defaults: no index
/// cache, no environment read.
#[pyfunction]
#[pyo3(signature = (path, mode = "read"))]
fn open(py: Python<'_>, path: std::path::PathBuf, mode: &str) -> PyResult<py::session::PySession> {
    py::session::PySession::open(py, path, mode, arbor_tree::SessionOptions::default())
}

/// pi session trees from Python, through Arbor's library.
#[pymodule(name = "_native")]
mod native {
    #[pymodule_export]
    use super::open;
    #[pymodule_export]
    use crate::py::entry::Entry;
    #[pymodule_export]
    use crate::py::errors::{
        AmbiguousError, ArborError, LockedError, NotASessionError, NotFoundError, QueryError, ReadOnlyError,
    };
    #[pymodule_export]
    use crate::py::messages::{assistant_message, tool_result, user_message};
    #[pymodule_export]
    use crate::py::session::PySession;
    #[pymodule_export]
    use crate::py::sessions::PySessions;
}
