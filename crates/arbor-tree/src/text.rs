//! Small text helpers shared by the tree and listings.

use std::borrow::Cow;

use arbor_log::json;
use serde_json::Value;

/// The text of a message's `content`: the string itself, or the text blocks joined with `sep`.
pub fn message_text(message: &Value, sep: &str) -> String {
    content_text(message.get("content"), sep)
}

/// The text of a `content` value: a string, or the `text` blocks joined with
/// `sep`; text for people, so a lone surrogate shows as U+FFFD
/// ([`arbor_log::json::display`]).
pub fn content_text(content: Option<&Value>, sep: &str) -> String {
    match content {
        Some(Value::String(s)) => json::display(s).into_owned(),
        Some(Value::Array(blocks)) => {
            let parts: Vec<Cow<'_, str>> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .map(json::display)
                .collect();
            parts.join(sep)
        }
        _ => String::new(),
    }
}
