//! `Entry`: one entry of a session, as stored, with the fields the tree
//! model decided.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::values::{Head, Rows};

/// One entry of a session: its id, its parent's id, its type and time, and
/// the entry as pi stores it (`to_dict()`); for a message, the message.
#[derive(Debug)]
#[pyclass(frozen, name = "Entry", module = "arbor_sessions")]
pub struct Entry {
    /// The entry's id.
    #[pyo3(get)]
    id: String,
    /// The id of its parent; `None` for a root (a `parentId` that is not a
    /// string is no parent, as in pi).
    #[pyo3(get)]
    parent_id: Option<String>,
    /// Its type: `message`, `compaction`, `branch_summary`, `label`, …
    #[pyo3(get, name = "type")]
    entry_type: String,
    /// Its ISO timestamp (empty when the line has none).
    #[pyo3(get)]
    timestamp: String,
    /// The entry as stored (after migration), a dict.
    data: Py<PyAny>,
}

#[pymethods]
impl Entry {
    /// The message of a `message` entry, a dict (`None` for other types).
    #[getter]
    fn message<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.entry_type != arbor_log::EntryType::Message.as_str() {
            return Ok(None);
        }
        let data = self.data.bind(py);
        match data.cast::<PyDict>() {
            Ok(d) => d.get_item("message"),
            Err(_) => Ok(None),
        }
    }

    /// The message's role (`user`, `assistant`, `toolResult`, …) of a
    /// `message` entry, else `None`.
    #[getter]
    fn role(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let Some(m) = self.message(py)? else { return Ok(None) };
        match m.cast::<PyDict>() {
            Ok(d) => Ok(d.get_item("role")?.and_then(|r| r.extract().ok())),
            Err(_) => Ok(None),
        }
    }

    /// The entry as pi stores it: a dict with `type`, `id`, `parentId`,
    /// `timestamp` and the type's own fields (the same dict on every call).
    fn to_dict<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.data.bind(py).clone()
    }

    fn __repr__(&self) -> String {
        let parent = self.parent_id.as_deref().map(|p| format!("'{p}'")).unwrap_or_else(|| "None".into());
        format!(
            "Entry(id='{}', parent_id={parent}, type='{}', timestamp='{}')",
            self.id, self.entry_type, self.timestamp
        )
    }
}

/// Entries from the rows the translation layer gave: their JSON parsed once.
pub fn entries<'py>(py: Python<'py>, rows: Rows) -> PyResult<Vec<Entry>> {
    let list = super::loads(py, &rows.json)?;
    let list = list.cast::<PyList>()?;
    rows.heads.into_iter().zip(list.iter()).map(|(head, data)| Ok(entry(head, data.unbind()))).collect()
}

fn entry(head: Head, data: Py<PyAny>) -> Entry {
    let Head { id, parent_id, entry_type, timestamp } = head;
    Entry { id, parent_id, entry_type, timestamp, data }
}
