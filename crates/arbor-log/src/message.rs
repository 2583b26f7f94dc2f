//! Agent messages (docs/format.md, "Message roles"): a borrowed view over the
//! opaque JSON that `message` entries hold.
//!
//! A message stays a `serde_json::Value`, so every field, known or not,
//! survives untouched. [`MessageView`] reads the parts Arbor needs without
//! copying: the [`Role`], the content [`Block`]s, the message's text the way
//! pi extracts it, and its tool calls. A message that does not fit its role's
//! shape is still viewed; fields it lacks read as absent, never as an error.

use serde_json::{Map, Value};

use crate::vocab::Role;

/// Fields of a JSON object that Arbor does not know, kept in their order.
pub type Extra = Map<String, Value>;

/// A borrowed view of one agent message (a JSON object with a `role`).
///
/// ```
/// use arbor_log::{MessageView, Role};
/// use serde_json::json;
///
/// let m = json!({"role": "assistant", "content": [
///     {"type": "text", "text": "Reading."},
///     {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.rs"}},
/// ]});
/// let view = MessageView::new(&m);
/// assert_eq!(view.role(), Some(Role::Assistant));
/// assert_eq!(view.text(" "), "Reading.");
/// assert_eq!(view.tool_calls().map(|c| c.name).collect::<Vec<_>>(), [Some("read")]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MessageView<'a> {
    value: &'a Value,
}

/// One content block of a message, borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Block<'a> {
    /// `{type: "text", text}`.
    Text(&'a str),
    /// `{type: "thinking", thinking}`.
    Thinking(&'a str),
    /// `{type: "image", data, mimeType}`.
    Image {
        /// The base64 data.
        data: &'a str,
        /// The MIME type.
        mime_type: &'a str,
    },
    /// `{type: "toolCall", id, name, arguments}`.
    ToolCall(ToolCall<'a>),
    /// Any other block, or one that does not fit its type's shape, as it is.
    Other(&'a Value),
}

/// A `toolCall` block. Fields that are missing (or not of their JSON type) are `None`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolCall<'a> {
    /// The call's id, which its `toolResult` names as `toolCallId`.
    pub id: Option<&'a str>,
    /// The tool's name.
    pub name: Option<&'a str>,
    /// The arguments object.
    pub arguments: Option<&'a Value>,
}

impl<'a> Block<'a> {
    /// The view of one element of a `content` array.
    pub fn of(block: &'a Value) -> Block<'a> {
        let str_of = |k: &str| block.get(k).and_then(Value::as_str);
        let typed = match str_of("type") {
            Some("text") => str_of("text").map(Block::Text),
            Some("thinking") => str_of("thinking").map(Block::Thinking),
            Some("image") => match (str_of("data"), str_of("mimeType")) {
                (Some(data), Some(mime_type)) => Some(Block::Image { data, mime_type }),
                _ => None,
            },
            Some("toolCall") => Some(Block::ToolCall(ToolCall {
                id: str_of("id"),
                name: str_of("name"),
                arguments: block.get("arguments"),
            })),
            _ => None,
        };
        typed.unwrap_or(Block::Other(block))
    }
}

impl<'a> MessageView<'a> {
    /// A view of `message`.
    pub fn new(message: &'a Value) -> MessageView<'a> {
        MessageView { value: message }
    }

    /// The message as it is stored.
    pub fn value(&self) -> &'a Value {
        self.value
    }

    /// The `role`, when it is a string.
    pub fn role(&self) -> Option<Role> {
        self.str_field("role").map(Role::parse)
    }

    /// A field of the message.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.value.get(key)
    }

    /// A string field of the message.
    pub fn str_field(&self, key: &str) -> Option<&'a str> {
        self.value.get(key).and_then(Value::as_str)
    }

    /// The `content` value as stored (a string, a list of blocks, or anything else).
    pub fn content(&self) -> Option<&'a Value> {
        self.value.get("content")
    }

    /// The content blocks in order; none when `content` is a string or absent.
    pub fn blocks(&self) -> impl Iterator<Item = Block<'a>> + 'a {
        self.content().and_then(Value::as_array).into_iter().flatten().map(Block::of)
    }

    /// The message's text as pi extracts it: a string `content` itself, or the
    /// `text` blocks joined with `sep` (images, thinking and tool calls left out).
    pub fn text(&self, sep: &str) -> String {
        content_text(self.content(), sep)
    }

    /// The `toolCall` blocks, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = ToolCall<'a>> + 'a {
        self.blocks().filter_map(|b| match b {
            Block::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

/// The text of a `content` value: a string, or the `text` blocks joined with
/// `sep`; anything else is empty. (`custom_message` entries hold a content
/// value outside any message; [`MessageView::text`] is this over a message's.)
/// Text for people: a lone surrogate shows as U+FFFD ([`crate::json::display`]).
pub fn content_text(content: Option<&Value>, sep: &str) -> String {
    match content {
        Some(Value::String(s)) => crate::json::display(s).into_owned(),
        Some(Value::Array(blocks)) => {
            let parts: Vec<std::borrow::Cow<'_, str>> = blocks
                .iter()
                .filter_map(|b| match Block::of(b) {
                    Block::Text(t) => Some(crate::json::display(t)),
                    _ => None,
                })
                .collect();
            parts.join(sep)
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_text_and_tool_calls() {
        let m = json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"hmm"},
            {"type":"text","text":"a","textSignature":"s"},
            {"type":"weird","x":1},
            {"type":"toolCall","id":"t","name":"read","arguments":{"path":"p"}},
            {"type":"text","text":"b"},
            {"type":"text","text":7},
            {"type":"toolCall","name":"bash"}
        ]});
        let v = MessageView::new(&m);
        assert_eq!(v.role(), Some(Role::Assistant));
        assert_eq!(v.text("|"), "a|b");
        let calls: Vec<ToolCall> = v.tool_calls().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!((calls[0].id, calls[0].name), (Some("t"), Some("read")));
        assert_eq!(calls[0].arguments, Some(&json!({"path":"p"})));
        assert_eq!((calls[1].id, calls[1].arguments), (None, None));
        assert!(matches!(v.blocks().nth(2), Some(Block::Other(_))));
        assert!(matches!(v.blocks().nth(5), Some(Block::Other(_))));
        assert_eq!(v.blocks().next(), Some(Block::Thinking("hmm")));
    }

    #[test]
    fn string_content_unknown_roles_and_odd_shapes() {
        let u = json!({"role":"user","content":"hello","timestamp":1});
        assert_eq!(MessageView::new(&u).text(" "), "hello");
        assert_eq!(MessageView::new(&u).blocks().count(), 0);
        let f = json!({"role":"fileMention","files":[]});
        assert_eq!(MessageView::new(&f).role(), Some(Role::Other("fileMention".into())));
        assert_eq!(MessageView::new(&f).text(""), "");
        let odd = json!({"role": 3, "content": {"not": "blocks"}});
        assert_eq!(MessageView::new(&odd).role(), None);
        assert_eq!(MessageView::new(&odd).text(""), "");
        assert_eq!(content_text(Some(&json!([{"type":"image","data":"x","mimeType":"image/png"}])), ""), "");
    }
}
