//! What an entry says, in parts a page or a document can lay out: the
//! heading, the text, thinking, tool calls and results, images.

use arbor_log::messages::Block;
use arbor_log::{Entry, EntryKind, EntryType, MessageView, Role};
use serde_json::Value;

/// One piece of an entry's content.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// Prose (Markdown as the model or the user wrote it).
    Text(String),
    /// A model's thinking.
    Thinking(String),
    /// A tool call: its id, name and arguments (as written; `Null` when missing).
    Call { id: String, name: String, arguments: Value },
    /// A tool's output (or a command's).
    Output(String),
    /// An image: its MIME type and base64 data.
    Image { mime: String, data: String },
}

/// How an assistant reply ended, when it did not end normally.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stop {
    /// The request failed (`stopReason: "error"`), with the provider's message.
    Error(String),
    /// The user aborted the reply (`stopReason: "aborted"`), with the message if any.
    Aborted(Option<String>),
    /// The reply hit the output token limit (`stopReason: "length"`).
    Length,
}

impl Stop {
    /// One line saying how the reply ended: `Error: HTTP 500 …`, `Aborted`, ….
    pub fn line(&self) -> String {
        match self {
            Stop::Error(m) if m.is_empty() => "Error (no message)".to_owned(),
            Stop::Error(m) => format!("Error: {m}"),
            Stop::Aborted(None) => "Aborted".to_owned(),
            Stop::Aborted(Some(m)) => format!("Aborted: {m}"),
            Stop::Length => "Stopped at the output token limit".to_owned(),
        }
    }
}

/// What an entry is: a message's role, or the entry's type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Role(Role),
    Type(EntryType),
}

impl Kind {
    /// True for compaction and branch summaries, as entries or as messages.
    pub fn is_summary(&self) -> bool {
        matches!(
            self,
            Kind::Type(EntryType::Compaction | EntryType::BranchSummary)
                | Kind::Role(Role::CompactionSummary | Role::BranchSummary)
        )
    }
}

/// An entry as a heading and parts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Described {
    /// `user`, `assistant`, `tool result: read`, `compaction`, `model: …`, ….
    pub heading: String,
    pub kind: Kind,
    pub parts: Vec<Part>,
    /// True for entries that are part of what the model sees (messages and summaries).
    pub conversational: bool,
    /// True for a failed tool result or a reply that ended in an error.
    pub error: bool,
    /// How an assistant reply ended, when not normally.
    pub stop: Option<Stop>,
    /// A tool result's `toolCallId`.
    pub call_id: Option<String>,
    /// Arbor's own bookkeeping (`custom` entries of type `arbor.*`): never shown.
    pub bookkeeping: bool,
    /// Where each part's text is in the entry (beside `parts`): what a
    /// writer reads whole when the entry's preview cut it.
    pub at: Vec<At>,
}

/// Where a part's text is in the entry's JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum At {
    /// Nowhere: the export made it (`$ command` of a shell message).
    Made,
    /// `/message/KEY`.
    Message(&'static str),
    /// `/message/content` (a string), or `/message/content/I/KEY` (a
    /// block's text; a call's arguments under `/arguments`).
    Content(Option<usize>, &'static str),
    /// `/KEY` of the entry.
    Entry(&'static str),
    /// `/content`, or `/content/I/KEY` of the entry (an extension's message).
    EntryContent(Option<usize>, &'static str),
}

impl At {
    /// The JSON pointer of the value (`None` for [`At::Made`]).
    pub fn pointer(self) -> Option<String> {
        let content = |base: &str, block: Option<usize>, key: &str| match block {
            Some(i) => format!("{base}/content/{i}/{key}"),
            None => format!("{base}/content"),
        };
        match self {
            At::Made => None,
            At::Message(key) => Some(format!("/message/{key}")),
            At::Content(block, key) => Some(content("/message", block, key)),
            At::Entry(key) => Some(format!("/{key}")),
            At::EntryContent(block, key) => Some(content("", block, key)),
        }
    }

    /// The same place in an extension message's own content.
    fn in_entry(self) -> At {
        match self {
            At::Content(block, key) => At::EntryContent(block, key),
            other => other,
        }
    }
}

fn content_parts(content: Option<&Value>, as_output: bool) -> (Vec<Part>, Vec<At>) {
    let text = |t: &str| if as_output { Part::Output(t.to_owned()) } else { Part::Text(t.to_owned()) };
    match content {
        Some(Value::String(s)) => (vec![text(s)], vec![At::Content(None, "")]),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match Block::of(b) {
                Block::Text(t) => Some((text(t), At::Content(Some(i), "text"))),
                Block::Thinking(t) if !t.is_empty() => {
                    Some((Part::Thinking(t.to_owned()), At::Content(Some(i), "thinking")))
                }
                Block::Image { mime_type, data } => Some((
                    Part::Image { mime: mime_type.to_owned(), data: data.to_owned() },
                    At::Content(Some(i), "data"),
                )),
                Block::ToolCall(call) => Some((
                    Part::Call {
                        id: call.id.unwrap_or("").to_owned(),
                        name: call.name.unwrap_or("tool").to_owned(),
                        arguments: call.arguments.cloned().unwrap_or(Value::Null),
                    },
                    At::Content(Some(i), "arguments"),
                )),
                _ => None,
            })
            .unzip(),
        _ => (vec![], vec![]),
    }
}

fn message(view: MessageView<'_>) -> Described {
    // A message without a role is headed by its entry type.
    let role = view.role().unwrap_or_else(|| Role::parse(EntryType::Message.as_str()));
    let plain = |heading: String, (parts, at): (Vec<Part>, Vec<At>)| Described {
        heading,
        kind: Kind::Role(role.clone()),
        parts,
        conversational: true,
        error: false,
        stop: None,
        call_id: None,
        bookkeeping: false,
        at,
    };
    let text = |key: &str| view.str_field(key).unwrap_or("").to_owned();
    match &role {
        Role::ToolResult => Described {
            heading: format!("tool result: {}", view.str_field("toolName").unwrap_or("tool")),
            error: view.get("isError") == Some(&Value::Bool(true)),
            call_id: view.str_field("toolCallId").map(str::to_owned),
            ..plain(String::new(), content_parts(view.content(), true))
        },
        Role::Assistant => {
            let message = view.str_field("errorMessage").filter(|m| !m.trim().is_empty()).map(str::to_owned);
            let stop = match view.str_field("stopReason") {
                Some("error") => Some(Stop::Error(message.unwrap_or_default())),
                Some("aborted") => Some(Stop::Aborted(message)),
                Some("length") => Some(Stop::Length),
                _ => message.map(Stop::Error),
            };
            Described {
                error: matches!(stop, Some(Stop::Error(_))),
                stop,
                ..plain(role.to_string(), content_parts(view.content(), false))
            }
        }
        Role::BashExecution => plain(
            "bash".into(),
            (
                vec![Part::Text(format!("`$ {}`", text("command"))), Part::Output(text("output"))],
                vec![At::Made, At::Message("output")],
            ),
        ),
        Role::BranchSummary | Role::CompactionSummary => {
            plain(role.to_string(), (vec![Part::Text(text("summary"))], vec![At::Message("summary")]))
        }
        Role::User | Role::Custom | Role::HookMessage | Role::Developer | Role::Other(_) => {
            plain(role.to_string(), content_parts(view.content(), false))
        }
    }
}

/// Describes an entry.
pub(crate) fn describe(e: &Entry) -> Described {
    let plain = |heading: String, parts: Vec<Part>, conversational: bool| Described {
        heading,
        kind: Kind::Type(e.entry_type()),
        at: vec![At::Entry("summary"); parts.len()],
        parts,
        conversational,
        error: false,
        stop: None,
        call_id: None,
        bookkeeping: false,
    };
    match &e.kind {
        EntryKind::Message(m) => message(m.view()),
        EntryKind::Compaction(c) => {
            let tokens = c.tokens_before.as_ref().map(|n| format!(" ({n} tokens before)")).unwrap_or_default();
            plain(format!("compaction{tokens}"), vec![Part::Text(c.summary.clone())], true)
        }
        EntryKind::BranchSummary(b) => plain("branch summary".into(), vec![Part::Text(b.summary.clone())], true),
        EntryKind::CustomMessage(c) => {
            let (parts, at) = content_parts(c.content.as_ref(), false);
            Described {
                at: at.into_iter().map(At::in_entry).collect(),
                ..plain(format!("{} (extension message)", c.custom_type), parts, true)
            }
        }
        EntryKind::ModelChange(m) => {
            let (p, id) = m.default_model().unwrap_or_default();
            plain(format!("model: {p}/{id}"), vec![], false)
        }
        EntryKind::ThinkingLevelChange(t) => plain(format!("thinking: {}", t.level().unwrap_or("off")), vec![], false),
        EntryKind::Label(l) => {
            let what = l.text().map_or_else(
                || format!("label of {} cleared", l.target_id),
                |x| format!("label {x:?} on {}", l.target_id),
            );
            plain(what, vec![], false)
        }
        EntryKind::SessionInfo(i) => plain(format!("session name: {}", i.name.as_deref().unwrap_or("")), vec![], false),
        EntryKind::Custom(c) => Described {
            bookkeeping: c.custom_type.starts_with("arbor."),
            ..plain(format!("custom: {}", c.custom_type), vec![], false)
        },
        EntryKind::TtsrInjection(_)
        | EntryKind::ModeChange(_)
        | EntryKind::Unknown { .. }
        | EntryKind::Malformed { .. } => plain(e.entry_type().to_string(), vec![], false),
    }
}
