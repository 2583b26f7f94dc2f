//! The package's exceptions: `ArborError` and one subclass per kind of
//! [`Failure`] a caller may want to catch apart. A bad argument (a mode, a
//! message that is not an object) is Python's own `ValueError`.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

use crate::values::Failure;

create_exception!(
    arbor_sessions,
    ArborError,
    PyException,
    "What Arbor could not do: the base of every exception of the package."
);
create_exception!(
    arbor_sessions,
    LockedError,
    ArborError,
    "Another process holds the session's write lock (`pid`, `host` and `path` say which and where)."
);
create_exception!(
    arbor_sessions,
    NotFoundError,
    ArborError,
    "A session file, an entry id or a session name that does not exist."
);
create_exception!(
    arbor_sessions,
    AmbiguousError,
    ArborError,
    "A name that several sessions have (`count` of them; `candidates` lists the first)."
);
create_exception!(arbor_sessions, ReadOnlyError, ArborError, "A write to a session opened read-only.");
create_exception!(
    arbor_sessions,
    NotASessionError,
    ArborError,
    "A file that exists but is not a pi session (no usable header)."
);
create_exception!(arbor_sessions, QueryError, ArborError, "A search query that does not parse.");

/// The exception a failure raises, its attributes set.
pub fn raise(py: Python<'_>, failure: Failure) -> PyErr {
    match failure {
        Failure::Locked { message, path, pid, host } => {
            let err = LockedError::new_err(message);
            let set = || -> PyResult<()> {
                let value = err.value(py);
                value.setattr("pid", pid)?;
                value.setattr("host", host)?;
                value.setattr("path", path)
            };
            match set() {
                Ok(()) => err,
                Err(e) => e,
            }
        }
        Failure::Ambiguous { message, count, candidates } => {
            let err = AmbiguousError::new_err(message);
            let set = || -> PyResult<()> {
                let value = err.value(py);
                value.setattr("count", count)?;
                value.setattr("candidates", candidates)
            };
            match set() {
                Ok(()) => err,
                Err(e) => e,
            }
        }
        Failure::NotFound(m) => NotFoundError::new_err(m),
        Failure::ReadOnly(m) => ReadOnlyError::new_err(m),
        Failure::NotASession(m) => NotASessionError::new_err(m),
        Failure::Query(m) => QueryError::new_err(m),
        Failure::Invalid(m) => PyValueError::new_err(m),
        Failure::Other(m) => ArborError::new_err(m),
    }
}
