//! One session's usage, read through `arbor-tree`'s [`Session`]: every
//! assistant reply with usage, and where it stands in the tree.
//!
//! What counts, as ccusage counts pi's replies: a `message` entry whose
//! message is an assistant's with a `usage`; its time is the entry's
//! `timestamp`; tokens are `usage.input`, `output`, `cacheRead` and
//! `cacheWrite` (when they are all 0, `totalTokens` stands for output); a
//! reply with no tokens is left out. Its cost is `usage.cost.total` when
//! that is a number, else the price table's when the report is made.
//!
//! Where a reply stands ([`Place`]): on the active path (the leaf's path)
//! after the last compaction's first kept entry it is [`Place::Active`],
//! before it [`Place::Compacted`]; off the active path it is
//! [`Place::Summarized`] when a branch summary was made of its branch and
//! [`Place::Abandoned`] otherwise. pi's `branch_summary` names the new
//! position (`fromId`), not the branch left: the branch it summarizes is
//! the one that ended at the entry written just before it (pi writes the
//! summary as it leaves that branch; Arbor's leaf marker stands for the
//! entry it marks).

use arbor_log::{EntryKind, EntryType, Role};
use arbor_tree::{Position, Session, TreeError, LEAF_MARKER_TYPE};
use serde::Deserialize;
use serde_json::Value;

use crate::model::{Agent, Place, Reply, SessionUsage, Tokens};

/// What a reply's line holds that usage needs.
#[derive(Debug, Deserialize)]
struct Line {
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default)]
    message: Option<Body>,
    /// An imported entry's origin (Claude Code's record: `requestId`, `costUSD`).
    #[serde(default)]
    source: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    #[serde(default)]
    model: Option<Value>,
    #[serde(default)]
    provider: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    response_id: Option<String>,
}

/// One reply as its line says, before the tree places it.
#[derive(Debug)]
struct Parsed {
    entry: compact_str::CompactString,
    time_ms: i64,
    provider: String,
    model: String,
    tokens: Tokens,
    recorded_cost: Option<f64>,
    key: u64,
}

/// What a position holds, as far as usage looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Reply,
    BranchSummary,
    Compaction,
    Other,
}

/// Reads the usage of `s`, written by `agent`, found at `location`.
pub fn read_session(s: &Session, agent: Agent, location: impl Into<String>) -> Result<SessionUsage, TreeError> {
    let header = s.header();
    let positions: Vec<Position> = s.positions().filter(|&p| s.is_live_at(p)).collect();
    let mut kinds = vec![Kind::Other; s.len()];
    let mut reply_at = Vec::new();
    for &p in &positions {
        let kind = match s.head_at(p) {
            Some((EntryType::Message, Some(Role::Assistant))) => Kind::Reply,
            Some((EntryType::BranchSummary, _)) => Kind::BranchSummary,
            Some((EntryType::Compaction, _)) => Kind::Compaction,
            _ => Kind::Other,
        };
        kinds[p.get()] = kind;
        if kind == Kind::Reply {
            reply_at.push(p);
        }
    }
    let parsed = s.map_id_json_many(&reply_at, |_, id, json| parse_reply(agent, id, json))?;
    let places = places(s, &positions, &kinds)?;
    let mut models: Vec<(String, String)> = Vec::new();
    let mut replies = Vec::new();
    for (p, one) in reply_at.iter().zip(parsed) {
        let Some(Some(r)) = one else { continue };
        let model = match models.iter().position(|(pv, m)| *pv == r.provider && *m == r.model) {
            Some(i) => i,
            None => {
                models.push((r.provider, r.model));
                models.len() - 1
            }
        };
        replies.push(Reply {
            entry: r.entry,
            time_ms: r.time_ms,
            model: model as u32,
            tokens: r.tokens,
            recorded_cost: r.recorded_cost,
            place: places[p.get()],
            key: r.key,
        });
    }
    let count = |k: Kind| kinds.iter().filter(|&&x| x == k).count() as u32;
    Ok(SessionUsage {
        agent,
        location: location.into(),
        id: header.id.clone(),
        cwd: header.cwd.clone().unwrap_or_default(),
        parent_session: header.parent_session.clone(),
        started_ms: arbor_log::parse_iso_ms(&header.timestamp).unwrap_or(0),
        models,
        replies,
        branch_summaries: count(Kind::BranchSummary),
        compactions: count(Kind::Compaction),
        leaves: leaves(s, &positions),
    })
}

/// A number as ccusage reads it (`as_u64`: anything else is 0).
fn count(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_u64).unwrap_or(0)
}

fn text(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).map(str::trim).unwrap_or("").to_owned()
}

/// The reply on one line, or `None` when it has no usable usage or time.
fn parse_reply(agent: Agent, id: &str, json: &str) -> Option<Parsed> {
    let line: Line = serde_json::from_str(json).ok()?;
    let body = line.message?;
    let usage = body.usage.as_ref().filter(|u| u.is_object())?;
    let timestamp = line.timestamp?;
    let time_ms = arbor_log::parse_iso_ms(&timestamp)?;
    let mut tokens = Tokens {
        input: count(usage.get("input")),
        output: count(usage.get("output")),
        cache_read: count(usage.get("cacheRead")),
        cache_write: count(usage.get("cacheWrite")),
    };
    let total = count(usage.get("totalTokens"));
    if tokens.output == 0 && total > tokens.total() {
        tokens.output = total - tokens.total();
    }
    if tokens.is_zero() {
        return None;
    }
    let record = line.source.as_ref().and_then(|s| s.get(0)).and_then(|o| o.get("record"));
    let recorded_cost = match agent {
        // pi's own record of what the reply cost.
        Agent::Pi => usage.get("cost").and_then(|c| c.get("total")).and_then(Value::as_f64),
        // Claude Code's `costUSD`, when the transcript had one (the import writes 0 without it).
        Agent::Claude => record.and_then(|r| r.get("costUSD")).and_then(Value::as_f64),
        // Codex records no cost.
        Agent::Codex => None,
        // OpenCode writes 0 where it does not know the price (as ccusage reads it).
        Agent::OpenCode => usage.get("cost").and_then(|c| c.get("total")).and_then(Value::as_f64).filter(|c| *c > 0.0),
    };
    let model = text(body.model.as_ref());
    let key = match (agent, &body.response_id) {
        // Claude Code copies a conversation's records into a resumed
        // session's file: the response and request ids name a reply wherever it is.
        (Agent::Claude, Some(response)) => {
            let request = record.and_then(|r| r.get("requestId")).and_then(Value::as_str).unwrap_or("");
            fnv1a(&[b"claude", response.as_bytes(), request.as_bytes()])
        }
        _ => {
            let numbers = format!("{}:{}:{}:{}", tokens.input, tokens.output, tokens.cache_read, tokens.cache_write);
            fnv1a(&[id.as_bytes(), timestamp.as_bytes(), model.as_bytes(), numbers.as_bytes()])
        }
    };
    Some(Parsed {
        entry: id.into(),
        time_ms,
        provider: text(body.provider.as_ref()),
        model,
        tokens,
        recorded_cost,
        key,
    })
}

/// FNV-1a, 64 bits, over the parts with a separator: stable across
/// releases, which the cache on disk needs.
pub(crate) fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            h = (h ^ 0x1f).wrapping_mul(0x0100_0000_01b3);
        }
        for &b in *part {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Entries without children.
fn leaves(s: &Session, positions: &[Position]) -> u32 {
    let mut has_child = vec![false; s.len()];
    for &p in positions {
        if let Some(parent) = s.parent_at(p) {
            has_child[parent.get()] = true;
        }
    }
    positions.iter().filter(|p| !has_child[p.get()]).count() as u32
}

/// The place of every position (indexed by position; only replies matter).
fn places(s: &Session, positions: &[Position], kinds: &[Kind]) -> Result<Vec<Place>, TreeError> {
    let mut place = vec![Place::Abandoned; s.len()];
    let path = s.branch_positions(None);
    // Everything before the last compaction's first kept entry was summarized into it.
    let mut cut = 0;
    for (i, p) in path.iter().enumerate() {
        if kinds[p.get()] != Kind::Compaction {
            continue;
        }
        let kept = match s.entry_at(*p)?.map(|e| &e.kind) {
            Some(EntryKind::Compaction(c)) => c.first_kept_entry_id.as_deref().and_then(|id| s.position_of(id)),
            _ => None,
        };
        cut = kept.and_then(|k| path[..i].iter().position(|x| *x == k)).unwrap_or(i);
    }
    for (i, p) in path.iter().enumerate() {
        place[p.get()] = if i < cut { Place::Compacted } else { Place::Active };
    }
    let mut marks = Marks::new(s.len());
    for &p in positions {
        if kinds[p.get()] != Kind::BranchSummary {
            continue;
        }
        let Some(left) = left_before(s, positions, p)? else { continue };
        // The summary's ancestors are what the branch left and the new position share.
        marks.next();
        let mut at = s.parent_at(p);
        while let Some(a) = at {
            if !marks.mark(a) {
                break;
            }
            at = s.parent_at(a);
        }
        let mut at = Some(left);
        while let Some(a) = at {
            if marks.is_marked(a) || place[a.get()] != Place::Abandoned {
                break;
            }
            place[a.get()] = Place::Summarized;
            at = s.parent_at(a);
        }
    }
    Ok(place)
}

/// The entry the branch a summary was made of ended at: the live entry on
/// the line before the summary (for Arbor's leaf marker, the entry it marks).
fn left_before(s: &Session, positions: &[Position], summary: Position) -> Result<Option<Position>, TreeError> {
    let Some(i) = positions.iter().position(|&x| x == summary) else { return Ok(None) };
    let Some(&before) = i.checked_sub(1).and_then(|k| positions.get(k)) else { return Ok(None) };
    Ok(match s.entry_at(before)?.map(|e| &e.kind) {
        Some(EntryKind::Custom(c)) if c.custom_type == LEAF_MARKER_TYPE => s.parent_at(before),
        _ => Some(before),
    })
}

/// Marks on positions, cleared in O(1) by starting a new generation.
#[derive(Debug)]
struct Marks {
    stamp: Vec<u32>,
    generation: u32,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks { stamp: vec![0; n], generation: 0 }
    }

    fn next(&mut self) {
        self.generation += 1;
    }

    /// Marks `p`; false when it was marked already (a cycle's guard).
    fn mark(&mut self, p: Position) -> bool {
        let was = self.stamp[p.get()] == self.generation;
        self.stamp[p.get()] = self.generation;
        !was
    }

    fn is_marked(&self, p: Position) -> bool {
        self.stamp[p.get()] == self.generation
    }
}
