//! Resolved labels: pi's `labelsById` and `labelTimestampsById`.
//!
//! Label entries are applied in file order. One whose `label` JavaScript
//! finds true sets the target's label (any JSON value, as in pi: `"v1"`,
//! `42`, `{}`) and remembers the label entry's `timestamp`; any other clears
//! it. Targets keep the order in which they got their label, and one that is
//! cleared and set again moves to the end, as in a JavaScript `Map`.

use indexmap::IndexMap;
use serde_json::Value;

use arbor_log::entries::LabelEntry;
use arbor_log::json;

/// The label of one entry.
///
/// ```
/// use arbor_tree::{Label, Message, Session, SessionOptions};
///
/// let mut s = Session::in_memory("/w", SessionOptions::default());
/// let id = s.append_message(Message::user("hi", 1))?;
/// s.append_label_change(&id, Some("v1"))?;
/// let label: &Label = s.label(&id)?.expect("labelled");
/// assert_eq!((label.text.as_str(), &label.value), ("v1", &serde_json::json!("v1")));
/// assert!(label.timestamp.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    /// The label as written in the file (a string, or any other true value).
    pub value: Value,
    /// The label as text: a string as it is, another value as its JSON.
    pub text: String,
    /// The `timestamp` of the label entry that set it (absent when that entry had none).
    pub timestamp: Option<Value>,
}

/// A resolved label and the entry it labels ([`Session::labels`](crate::Session::labels)).
///
/// ```
/// use arbor_tree::{Message, Session, SessionOptions};
///
/// let mut s = Session::in_memory("/w", SessionOptions::default());
/// let id = s.append_message(Message::user("hi", 1))?;
/// s.append_label_change(&id, Some("start"))?;
/// let labeled = s.labels()?.next().expect("one label");
/// assert_eq!((labeled.id, labeled.text()), (id.as_str(), "start"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Labeled<'a> {
    /// The id of the labelled entry.
    pub id: &'a str,
    /// Its label.
    pub label: &'a Label,
}

impl<'a> Labeled<'a> {
    /// The label as text ([`Label::text`]).
    pub fn text(&self) -> &'a str {
        &self.label.text
    }
}

/// Every entry's resolved label, by target id.
#[derive(Debug, Clone, Default)]
pub(crate) struct Labels(IndexMap<String, Label>);

impl Labels {
    /// Applies one label entry (`timestamp`: its `timestamp` field, if any).
    pub(crate) fn apply(&mut self, entry: &LabelEntry, timestamp: Option<Value>) {
        match entry.set_to() {
            Some(value) => {
                let label = Label { value: value.clone(), text: json::text(value), timestamp };
                self.0.insert(entry.target_id.clone(), label);
            }
            None => {
                self.0.shift_remove(&entry.target_id);
            }
        }
    }

    pub(crate) fn get(&self, id: &str) -> Option<&Label> {
        self.0.get(id)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every label, in the order its target got it.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Label)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(target: &str, label: Option<Value>) -> LabelEntry {
        LabelEntry { target_id: target.to_owned(), label, extra: Default::default() }
    }

    #[test]
    fn javascript_truth_sets_and_clears() {
        let mut labels = Labels::default();
        for (value, set) in [
            (Some(json!("v1")), true),
            (Some(json!(42)), true),
            (Some(json!(true)), true),
            (Some(json!({})), true),
            (Some(json!([])), true),
            (Some(json!("0")), true),
            (Some(json!("")), false),
            (Some(json!(0)), false),
            (Some(json!(false)), false),
            (Some(Value::Null), false),
            (None, false),
        ] {
            labels.apply(&entry("a", Some(json!("before"))), None);
            labels.apply(&entry("a", value.clone()), Some(json!("t")));
            assert_eq!(labels.get("a").map(|l| &l.value), if set { value.as_ref() } else { None }, "{value:?}");
        }
        labels.apply(&entry("a", Some(json!({"k": 1}))), None);
        assert_eq!(labels.get("a").map(|l| l.text.as_str()), Some(r#"{"k":1}"#));
        assert_eq!(labels.get("a").and_then(|l| l.timestamp.clone()), None);
    }

    #[test]
    fn a_label_set_again_after_a_clear_moves_to_the_end() {
        let mut labels = Labels::default();
        labels.apply(&entry("a", Some(json!("x"))), None);
        labels.apply(&entry("b", Some(json!("y"))), None);
        labels.apply(&entry("a", Some(json!("x2"))), None);
        assert_eq!(labels.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["a", "b"]);
        labels.apply(&entry("a", None), None);
        labels.apply(&entry("a", Some(json!("x3"))), None);
        assert_eq!(labels.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["b", "a"]);
    }
}
