//! The Python glue: classes and functions that take Python arguments, call
//! the translation layer ([`crate::values`]) and hand its answers to Python.
//! JSON text becomes Python values through Python's own `json` module (so
//! a lone surrogate becomes a lone surrogate and a huge integer an `int`,
//! as `json.loads` of the `arbor` command's output gives), and a
//! [`Failure`] becomes an exception of the package's hierarchy.

pub mod entry;
pub mod errors;
pub mod messages;
pub mod session;
pub mod sessions;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

use crate::values::Failure;

/// `json.loads(text)`.
pub fn loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let loads = LOADS.get_or_try_init(py, || py.import("json")?.getattr("loads").map(Bound::unbind))?;
    loads.bind(py).call1((text,))
}

/// `json.dumps(value, allow_nan=False)`: the JSON text of a Python value
/// (lone surrogates as escapes; NaN and what JSON cannot hold refused with
/// Python's own `ValueError` or `TypeError`).
pub fn dumps(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    static DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let dumps = DUMPS.get_or_try_init(py, || py.import("json")?.getattr("dumps").map(Bound::unbind))?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("allow_nan", false)?;
    dumps.bind(py).call((value,), Some(&kwargs))?.extract()
}

/// A Python value as JSON, read as JavaScript reads it (`what` names it in errors).
pub fn to_value(py: Python<'_>, what: &str, value: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    crate::values::parse(what, &dumps(py, value)?).map_err(|f| errors::raise(py, f))
}

/// A JSON value as a Python value.
pub fn from_value<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    let text = crate::values::json_text(value).map_err(|f| errors::raise(py, f))?;
    loads(py, &text)
}

/// A result of the translation layer, its failure raised as a Python exception.
pub trait Raise<T> {
    /// The value, or the failure as an exception.
    fn raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> Raise<T> for Result<T, Failure> {
    fn raise(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|f| errors::raise(py, f))
    }
}
