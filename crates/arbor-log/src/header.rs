//! The session header (`type: "session"`; docs/format.md, "The header").

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::Extra;
use crate::version::{version_in_line, version_of};

pub use crate::version::CURRENT_VERSION;

/// The first logical line of a session file.
///
/// ```
/// use arbor_log::SessionHeader;
/// use serde_json::json;
///
/// let v = json!({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"});
/// let header = SessionHeader::from_value(&v).expect("a header");
/// assert_eq!((header.id.as_str(), header.cwd.as_deref(), header.version()), ("s1", Some("/w"), 3));
/// assert_eq!(header.to_value(), v);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Always `"session"`.
    #[serde(rename = "type")]
    pub record_type: String,
    /// Absent in v1 files. A number beyond the `f64` range reads as `null`
    /// here, as everywhere ([`crate::json`]); [`SessionHeader::version`]
    /// still compares it as pi does when the header came from a line.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub version: Option<Value>,
    /// The session id (pi: a UUID v4; any string is accepted).
    pub id: String,
    /// Creation time (ISO).
    #[serde(default)]
    pub timestamp: String,
    /// Working directory at creation; readers accept it missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Lineage: the previous session file (pi) or session id (omp). Opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// Everything else (v1's provider/modelId/thinkingLevel/branchedFrom, omp's title, …).
    #[serde(flatten)]
    pub extra: Extra,
    /// The version as read from the header's line ([`version_in_line`]),
    /// where the value alone cannot tell (`1e400`, held as `null`).
    #[serde(skip)]
    pub(crate) line_version: Option<u64>,
}

impl SessionHeader {
    /// A fresh v3 header.
    pub fn new(id: String, timestamp: String, cwd: String, parent_session: Option<String>) -> Self {
        SessionHeader {
            record_type: "session".into(),
            version: Some(Value::from(CURRENT_VERSION)),
            id,
            timestamp,
            cwd: Some(cwd),
            parent_session,
            extra: Map::new(),
            line_version: None,
        }
    }

    /// The version that says which migrations the session needs, compared
    /// as the reference compares it ([`version_of`]): 1, 2 or [`CURRENT_VERSION`].
    pub fn version(&self) -> u64 {
        self.line_version.unwrap_or_else(|| version_of(self.version.as_ref()))
    }

    /// Decodes the header record parsed from `line` ([`SessionHeader::from_value`]),
    /// reading its version from the line where the value cannot tell.
    pub fn from_line(v: &Value, line: &[u8]) -> Option<SessionHeader> {
        let mut h = SessionHeader::from_value(v)?;
        h.line_version = Some(version_in_line(h.version.as_ref(), line));
        Some(h)
    }

    /// Decodes a header from a JSON value: an object with `type: "session"` and a string `id`.
    pub fn from_value(v: &Value) -> Option<SessionHeader> {
        if !is_header(v) {
            return None;
        }
        SessionHeader::deserialize(v).ok()
    }

    /// The header as a JSON value, in pi's key order.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A field that is present, `null` included (serde reads a `null` option as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// True when `v` is a usable session header: `type: "session"` with a string `id`.
pub fn is_header(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("session") && v.get("id").is_some_and(Value::is_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_key_order_is_pi_order() {
        let h = SessionHeader::new("abc".into(), "2026-01-01T00:00:00.000Z".into(), "/p".into(), None);
        assert_eq!(
            serde_json::to_string(&h).unwrap(),
            r#"{"type":"session","version":3,"id":"abc","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#
        );
    }

    #[test]
    fn header_validity() {
        assert!(SessionHeader::from_value(&json!({"type":"session","id":"x"})).is_some());
        assert!(SessionHeader::from_value(&json!({"type":"session","id":5})).is_none());
        assert!(SessionHeader::from_value(&json!({"type":"message","id":"x"})).is_none());
        let v1 = SessionHeader::from_value(&json!({"type":"session","id":"x","provider":"a"})).unwrap();
        assert_eq!(v1.version(), 1);
        assert_eq!(v1.extra.get("provider"), Some(&json!("a")));
    }
}
