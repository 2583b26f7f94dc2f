//! pi's tree filters (docs/cli.md, "arbor tui"), for the tree selector and `arbor tree
//! --filter`: what kind each entry is, from its head, and which kinds each
//! [`FilterMode`] shows; and what needs an entry's content ([`facts_of`]).

use arbor_context::render::{entry_facts, message_facts, EntryFacts};
use arbor_log::{EntryKind, EntryType, Role};
use arbor_tree::{Position, Session, TreeError};

/// Which entries a tree shows (docs/cli.md, "arbor tui"; pi's `treeFilterMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FilterMode {
    /// Everything but settings entries.
    #[default]
    Default,
    /// Default minus tool results.
    NoTools,
    /// Only user messages.
    UserOnly,
    /// Only labelled entries.
    LabeledOnly,
    /// Every entry.
    All,
}

/// Bits of what an entry is, for the filters.
pub mod kind {
    /// A `label`, `custom`, `model_change`, `thinking_level_change` or `session_info` entry
    /// (pi's bookkeeping, hidden by the default filter).
    pub const SETTINGS: u8 = 1;
    /// A tool result message.
    pub const TOOL_RESULT: u8 = 2;
    /// A user message.
    pub const USER: u8 = 4;
    /// An assistant message pi's selector always hides (unless it is the leaf).
    pub const HIDDEN: u8 = 8;
    /// An assistant message not looked at yet: shown until known.
    pub const UNKNOWN: u8 = 16;
}

impl FilterMode {
    /// Every mode with its name as `arbor tree --filter` and the MCP
    /// server's `read_tree` take it.
    pub const NAMES: [(&'static str, FilterMode); 5] = [
        ("default", FilterMode::Default),
        ("no-tools", FilterMode::NoTools),
        ("user-only", FilterMode::UserOnly),
        ("labeled-only", FilterMode::LabeledOnly),
        ("all", FilterMode::All),
    ];

    /// The mode a name names ([`FilterMode::NAMES`], in any case).
    pub fn named(name: &str) -> Option<FilterMode> {
        Self::NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|&(_, m)| m)
    }

    /// The mode's name ([`FilterMode::NAMES`]).
    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, m)| *m == self).map_or("default", |(n, _)| n)
    }

    /// Every mode, in the order of Ctrl+O's cycle.
    pub const CYCLE: [FilterMode; 5] =
        [FilterMode::Default, FilterMode::NoTools, FilterMode::UserOnly, FilterMode::LabeledOnly, FilterMode::All];

    /// The footer suffix naming the mode.
    pub fn footer_label(self) -> &'static str {
        match self {
            FilterMode::Default => "",
            FilterMode::NoTools => " [no-tools]",
            FilterMode::UserOnly => " [user]",
            FilterMode::LabeledOnly => " [labeled]",
            FilterMode::All => " [all]",
        }
    }

    /// The next mode of Ctrl+O's cycle (or the previous one).
    pub fn step(self, forward: bool) -> FilterMode {
        let i = Self::CYCLE.iter().position(|m| *m == self).unwrap_or(0);
        let n = Self::CYCLE.len();
        Self::CYCLE[if forward { (i + 1) % n } else { (i + n - 1) % n }]
    }

    /// True when an entry of these [`kind`] bits (and label) passes the mode,
    /// `leaf` telling whether it is the leaf: pi hides its hidden assistant
    /// messages in every mode, except the leaf.
    pub fn shows(self, kind: u8, labelled: bool, leaf: bool) -> bool {
        if kind & kind::HIDDEN != 0 && !leaf {
            return false;
        }
        match self {
            FilterMode::Default => kind & kind::SETTINGS == 0,
            FilterMode::NoTools => kind & (kind::SETTINGS | kind::TOOL_RESULT) == 0,
            FilterMode::UserOnly => kind & kind::USER != 0,
            FilterMode::LabeledOnly => labelled,
            FilterMode::All => true,
        }
    }
}

/// The [`kind`] bits of the entry at `p` from its head; an assistant
/// message is [`kind::UNKNOWN`] until its content is read.
pub fn kind_of(session: &Session, p: Position) -> u8 {
    match session.entry_type_at(p) {
        Some(EntryType::Message) => match session.role_at(p) {
            Some(Role::ToolResult) => kind::TOOL_RESULT,
            Some(Role::User) => kind::USER,
            Some(Role::Assistant) => kind::UNKNOWN,
            _ => 0,
        },
        // Settings entries are small; decode them, since one that does not decode is not one.
        Some(
            EntryType::Label
            | EntryType::Custom
            | EntryType::ModelChange
            | EntryType::ThinkingLevelChange
            | EntryType::SessionInfo,
            // A file changed under the session reads as no settings entry here;
            // the rows that show it decode it, and fail with the change.
        ) => match session.decode_at(p).ok().flatten().map(|e| e.kind) {
            Some(EntryKind::Label(_) | EntryKind::Custom(_) | EntryKind::ModelChange(_))
            | Some(EntryKind::ThinkingLevelChange(_) | EntryKind::SessionInfo(_)) => kind::SETTINGS,
            _ => 0,
        },
        _ => 0,
    }
}

/// The facts of the entries at `positions`, in order, read on all cores.
/// An `Err` when the file changed under the session ([`TreeError::Changed`]).
pub fn facts_of(session: &Session, positions: &[Position], home: Option<&str>) -> Result<Vec<EntryFacts>, TreeError> {
    // The message entries, whose facts are read from their lines (the session stays on this thread).
    let messages: Vec<bool> =
        positions.iter().map(|&p| session.entry_type_at(p) == Some(&EntryType::Message)).collect();
    let fast = session
        .map_id_json_many(positions, |i, id, json| messages[i].then(|| message_facts(json, id, home)).flatten())?;
    fast.into_iter()
        .zip(positions)
        .map(|(f, &p)| match f.flatten() {
            Some(f) => Ok(f),
            None => Ok(session.decode_at(p)?.map(|e| entry_facts(&e, home)).unwrap_or_default()),
        })
        .collect()
}
