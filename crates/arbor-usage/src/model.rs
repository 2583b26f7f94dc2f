//! The values usage is made of: one assistant reply's tokens and cost
//! ([`Reply`]), where in its tree it stands ([`Place`]), and one session's
//! replies with what the tree says about them ([`SessionUsage`]).

use std::ops::AddAssign;

use serde::Serialize;

/// The coding agent that wrote a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    /// pi (and its forks): session files under a sessions root.
    Pi,
    /// Claude Code: `~/.claude/projects`.
    Claude,
    /// Codex CLI: `~/.codex/sessions`.
    Codex,
    /// OpenCode: `~/.local/share/opencode/storage`.
    OpenCode,
}

impl Agent {
    /// Every agent, in the order reports list them.
    pub const ALL: [Agent; 4] = [Agent::Pi, Agent::Claude, Agent::Codex, Agent::OpenCode];

    /// `pi`, `claude`, `codex` or `opencode`.
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Pi => "pi",
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::OpenCode => "opencode",
        }
    }

    /// The agent a name means (as [`Agent::as_str`] spells it).
    pub fn parse(name: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.as_str() == name)
    }

    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_code(code: u8) -> Option<Agent> {
        Agent::ALL.get(usize::from(code)).copied()
    }
}

/// Token counts of one reply or of many.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    /// Input tokens not read from the cache.
    #[serde(rename = "inputTokens")]
    pub input: u64,
    /// Output tokens (reasoning included).
    #[serde(rename = "outputTokens")]
    pub output: u64,
    /// Input tokens written to the cache.
    #[serde(rename = "cacheCreationTokens")]
    pub cache_write: u64,
    /// Input tokens read from the cache.
    #[serde(rename = "cacheReadTokens")]
    pub cache_read: u64,
}

impl Tokens {
    /// All four added.
    pub fn total(&self) -> u64 {
        self.input.saturating_add(self.output).saturating_add(self.cache_read).saturating_add(self.cache_write)
    }

    /// True when every count is 0.
    pub fn is_zero(&self) -> bool {
        self.total() == 0
    }
}

impl AddAssign for Tokens {
    fn add_assign(&mut self, o: Tokens) {
        self.input = self.input.saturating_add(o.input);
        self.output = self.output.saturating_add(o.output);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
        self.cache_write = self.cache_write.saturating_add(o.cache_write);
    }
}

/// Where a reply stands in its session's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Place {
    /// On the path from the root to the leaf, in what the leaf's context
    /// still holds (after the last compaction's first kept entry).
    Active,
    /// On the active path, before the last compaction's first kept entry:
    /// history a compaction summary replaced.
    Compacted,
    /// Off the active path, in a branch a branch summary was made of.
    Summarized,
    /// Off the active path, in a branch left without a summary.
    Abandoned,
}

impl Place {
    /// Every place, in the order reports list them.
    pub const ALL: [Place; 4] = [Place::Active, Place::Compacted, Place::Summarized, Place::Abandoned];

    pub(crate) fn code(self) -> u8 {
        match self {
            Place::Active => 0,
            Place::Compacted => 1,
            Place::Summarized => 2,
            Place::Abandoned => 3,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Place> {
        Place::ALL.get(usize::from(code)).copied()
    }
}

/// One assistant reply's usage, as its session recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The entry's id (held inline: a report holds hundreds of thousands).
    pub entry: compact_str::CompactString,
    /// When it was written (the entry's `timestamp`), in ms since the epoch.
    pub time_ms: i64,
    /// The model, as an index into [`SessionUsage::models`].
    pub model: u32,
    /// Its tokens.
    pub tokens: Tokens,
    /// The cost the session recorded (`usage.cost.total`), if it did; a
    /// reply without one is priced from the price table when reported.
    pub recorded_cost: Option<f64>,
    /// Where it stands in the tree.
    pub place: Place,
    /// What identifies it across sessions (a fork copies it with its id and
    /// time): a stable hash, see the `read` module.
    pub key: u64,
}

/// One session's replies and what its tree says about them.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionUsage {
    /// The agent that wrote it.
    pub agent: Agent,
    /// Where it is: a session file's path, or a transcript's (`#N` after it
    /// for the Nth session a transcript makes, from 2 on).
    pub location: String,
    /// The session id.
    pub id: String,
    /// Its working directory (its project).
    pub cwd: String,
    /// The header's `parentSession`: the session it was forked from.
    pub parent_session: Option<String>,
    /// The header's time, in ms since the epoch (0 when it has none).
    pub started_ms: i64,
    /// The models its replies name: `(provider, model)`.
    pub models: Vec<(String, String)>,
    /// Its assistant replies with usage, in file order.
    pub replies: Vec<Reply>,
    /// Branch summaries in the session.
    pub branch_summaries: u32,
    /// Compactions in the session.
    pub compactions: u32,
    /// Leaves of its tree (entries without children).
    pub leaves: u32,
}

impl SessionUsage {
    /// The model name of a reply.
    pub fn model_of(&self, reply: &Reply) -> &str {
        self.models.get(reply.model as usize).map_or("", |(_, m)| m.as_str())
    }
}
