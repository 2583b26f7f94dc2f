//! `buildSessionContext` (docs/architecture.md, "Building the context"): the messages, thinking level and model
//! that a leaf's root-to-leaf path gives.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap, HashSet};

use arbor_log::entries::{BranchSummary, Compaction, CustomMessageEntry, ModelChange};
use arbor_log::time::parse_iso_ms;
use arbor_log::{Entry, EntryKind, EntryType, Role};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::reads::{self, PathKind};

/// The provider and model id that a session context selects (`{provider, modelId}`).
///
/// ```
/// use arbor_context::{Context, ModelRef};
/// use arbor_tree::{Session, SessionOptions};
///
/// let mut session = Session::in_memory("/w", SessionOptions::default());
/// session.append_model_change("anthropic", "claude-sonnet-4-5")?;
/// let model = Context::of(&session).build()?.model;
/// assert_eq!(model, Some(ModelRef { provider: "anthropic".into(), model_id: "claude-sonnet-4-5".into() }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRef {
    /// The provider, e.g. `anthropic`.
    pub provider: String,
    /// The model id, e.g. `claude-sonnet-4-5`.
    pub model_id: String,
}

/// What a leaf's path gives the agent: the messages, thinking level and model,
/// plus the oh-my-pi state carried by the same path.
///
/// Serializes (and [`SessionContext::to_json`] converts) to pi's exact shape
/// `{"messages": [...], "thinkingLevel": "...", "model": {...} | null}`; the
/// oh-my-pi fields are never part of that JSON.
///
/// ```
/// use arbor_context::{Context, SessionContext};
/// use arbor_tree::{Session, SessionOptions};
/// use serde_json::json;
///
/// let mut session = Session::in_memory("/w", SessionOptions::default());
/// session.append_thinking_level_change("high")?;
/// session.append_message(json!({"role": "user", "content": "hi", "timestamp": 1}))?;
/// let context: SessionContext = Context::of(&session).build()?;
/// assert_eq!(context.to_json(), json!({
///     "messages": [{"role": "user", "content": "hi", "timestamp": 1}],
///     "thinkingLevel": "high",
///     "model": null,
/// }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SessionContext {
    /// The agent messages, in order, as JSON values (see [`build_from_path`]).
    pub messages: Vec<Value>,
    /// The last thinking level on the path (`"off"` by default; omp's `null`, or
    /// anything but a string, reads `"off"`).
    pub thinking_level: String,
    /// The last model selected on the path by a `model_change` or an assistant
    /// message (a field that is absent or not a string reads `""`).
    pub model: Option<ModelRef>,
    /// `thinkingLevel` as pi's context holds it: the last `thinking_level_change`'s
    /// field as written (`None` when that entry has none: the key is left out),
    /// `"off"` when no entry set it.
    pub thinking_level_value: Option<Value>,
    /// `model` as pi's context holds it: `{provider, modelId}` with the fields
    /// as written (an absent one left out), or `null`.
    pub model_value: Value,
    /// omp: role → `"provider/modelId"`, from `model_change` entries (`role` absent
    /// means `default`) and assistant messages (which set `default`).
    pub models: BTreeMap<String, String>,
    /// omp: the union, in first-seen order, of every `ttsr_injection` on the path.
    pub injected_ttsr_rules: Vec<String>,
    /// omp-S: the mode of the last `mode_change` on the path.
    pub mode: Option<String>,
    /// omp-S: the `data` of that `mode_change`.
    pub mode_data: Option<Value>,
}

impl Default for SessionContext {
    fn default() -> Self {
        SessionContext {
            messages: Vec::new(),
            thinking_level: "off".to_owned(),
            model: None,
            thinking_level_value: Some(Value::String("off".to_owned())),
            model_value: Value::Null,
            models: BTreeMap::new(),
            injected_ttsr_rules: Vec::new(),
            mode: None,
            mode_data: None,
        }
    }
}

impl SessionContext {
    /// The empty context: no messages, thinking level `"off"`, no model.
    pub fn empty() -> Self {
        SessionContext::default()
    }

    /// The context as pi's `SessionContext` JSON object (omp fields left out).
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("messages".into(), Value::Array(self.messages.clone()));
        if let Some(level) = &self.thinking_level_value {
            out.insert("thinkingLevel".into(), level.clone());
        }
        out.insert("model".into(), self.model_value.clone());
        Value::Object(out)
    }

    /// The messages mapped for the model ([`crate::convert_to_llm`]).
    pub fn llm_messages(&self) -> Vec<Value> {
        crate::convert_to_llm(&self.messages)
    }
}

impl Serialize for SessionContext {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("messages", &self.messages)?;
        if let Some(level) = &self.thinking_level_value {
            map.serialize_entry("thinkingLevel", level)?;
        }
        map.serialize_entry("model", &self.model_value)?;
        map.end()
    }
}

/// Which entry to build the context for: pi's `leafId` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Leaf<'a> {
    /// `undefined`: the last entry of the file.
    #[default]
    Default,
    /// Explicitly `null` (before the first entry): the empty context.
    Null,
    /// An id; an unknown (or empty) id falls back to the last entry, as in pi.
    Id(&'a str),
}

/// Walks `parentId` links from `start` to its root and returns the path root first.
///
/// The walk stops at a root, at a parent that `lookup` does not know (an
/// orphan chain yields only its reachable part) and at the first id it has
/// already visited, so a parent cycle cannot loop. Like pi, an empty
/// `parentId` counts as no parent.
pub fn walk_to_root<'a>(start: &'a Entry, lookup: impl Fn(&str) -> Option<&'a Entry>) -> Vec<&'a Entry> {
    let mut path = vec![start];
    let mut seen: HashSet<&str> = HashSet::from([start.id.as_str()]);
    let mut current = start;
    while let Some(parent) = current.parent_id.as_deref().filter(|p| !p.is_empty()).and_then(&lookup) {
        if !seen.insert(parent.id.as_str()) {
            break;
        }
        path.push(parent);
        current = parent;
    }
    path.reverse();
    path
}

/// pi's `buildSessionContext(entries, leafId)`: resolves the leaf, walks its
/// path (cycle-safe, see [`walk_to_root`]) and builds the context from it.
///
/// Ids are indexed in file order, so of duplicate ids the later entry wins.
pub fn build_from_entries(entries: &[Entry], leaf: Leaf<'_>) -> SessionContext {
    let by_id: HashMap<&str, &Entry> = entries.iter().map(|e| (e.id.as_str(), e)).collect();
    let chosen = match leaf {
        Leaf::Null => return SessionContext::empty(),
        Leaf::Id(id) if !id.is_empty() => by_id.get(id).copied().or(entries.last()),
        Leaf::Id(_) | Leaf::Default => entries.last(),
    };
    let Some(chosen) = chosen else {
        return SessionContext::empty();
    };
    let path = walk_to_root(chosen, |id| by_id.get(id).copied());
    build_from_path(&path)
}

/// Builds the context of a root-first path (docs/architecture.md, "Building the context"): the
/// [`plan_heads`] of the path, with each `message` entry's message copied in.
///
/// - Settings: each `thinking_level_change`, `model_change` (pi's or omp's
///   shape) and assistant message updates the state; the last one wins.
/// - Messages: a `message` entry gives its message as is; a `custom_message`
///   gives `{role:"custom", customType, content, display, details?, timestamp}`;
///   a `branch_summary` with a non-empty summary gives
///   `{role:"branchSummary", summary, fromId, timestamp}`. Timestamps are the
///   entry's ISO time in epoch ms, `null` when it does not parse (JavaScript's
///   NaN). Other entries (malformed and unknown ones included) give nothing.
/// - The last `compaction` on the path replaces everything before it with
///   `{role:"compactionSummary", summary, tokensBefore, timestamp}` followed by
///   the entries from its `firstKeptEntryId` (inclusive) up to it; if that id
///   is not on the path before it, nothing from before it is kept.
pub fn build_from_path(path: &[&Entry]) -> SessionContext {
    let heads: Vec<PathHead> = path.iter().map(|e| PathHead::of(e)).collect();
    let plan = plan_heads(&heads, |ps| ps.iter().map(|&p| Some(path[p])).collect());
    plan.into_context(|p| entry_message(path[p]))
}

/// [`build_from_path`] over owned entries: the same context, with
/// each message moved into it instead of copied, so the context never holds
/// a second copy of the messages it was built from.
pub fn build_from_owned_path(path: Vec<Entry>) -> SessionContext {
    let plan = {
        let heads: Vec<PathHead> = path.iter().map(PathHead::of).collect();
        plan_heads(&heads, |ps| ps.iter().map(|&p| Some(&path[p])).collect())
    };
    let mut path: Vec<Option<Entry>> = path.into_iter().map(Some).collect();
    plan.into_context(|p| path[p].take().and_then(message_of_entry))
}

/// One message of a context, in order (see [`plan_heads`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ContextStep {
    /// A message the context makes up from an entry: the compaction summary,
    /// a branch summary or a custom message (boxed: a step of a million-entry
    /// path is 16 bytes, not the 80 of a `Value`).
    Made(Box<Value>),
    /// The message of the path's `message` entry at this position, as stored
    /// (what [`message_of_entry`] gives for the decoded entry; nothing when
    /// the entry is malformed).
    Message(usize),
}

/// What a path's context is made of: its settings, and where each of its
/// messages comes from, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextPlan {
    /// The context without its messages: thinking level, model, omp's
    /// models, injected rules and mode.
    pub settings: SessionContext,
    /// The messages, in order.
    pub steps: Vec<ContextStep>,
}

impl ContextPlan {
    /// The context: the settings with the steps' messages, where `message`
    /// gives the message of the `message` entry at a position (called once
    /// per [`ContextStep::Message`], in order; `None` adds nothing).
    pub fn into_context(self, mut message: impl FnMut(usize) -> Option<Value>) -> SessionContext {
        let mut ctx = self.settings;
        ctx.messages.reserve(self.steps.len());
        for step in self.steps {
            match step {
                ContextStep::Made(m) => ctx.messages.push(*m),
                ContextStep::Message(p) => ctx.messages.extend(message(p)),
            }
        }
        ctx
    }

    /// The positions of the [`ContextStep::Message`] steps, in order.
    pub fn message_positions(&self) -> impl Iterator<Item = usize> + '_ {
        self.steps.iter().filter_map(|s| match s {
            ContextStep::Message(p) => Some(*p),
            ContextStep::Made(_) => None,
        })
    }
}

/// What a path position shows without decoding its entry: enough for
/// [`plan_heads`] to know which entries it must read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathHead<'a> {
    /// The entry id.
    pub id: &'a str,
    /// The entry `type`.
    pub entry_type: EntryType,
    /// A message entry's message `role`.
    pub role: Option<Role>,
}

impl<'a> PathHead<'a> {
    /// The head of a decoded entry.
    pub fn of(entry: &'a Entry) -> PathHead<'a> {
        PathHead { id: &entry.id, entry_type: entry.entry_type(), role: entry.message_role() }
    }
}

/// Plans the context of a root-first path from its heads (docs/architecture.md,
/// "Building the context"), decoding only the entries the answer depends on.
///
/// `decode` is called with ascending positions and returns the entries in
/// the same order (`None`: not available, read as no entry); it is called
/// a few times, for what each step finds it needs: the settings' entries
/// (of the thinking levels, modes and compactions only the last, of the
/// assistant messages the last, which alone decides the model among
/// messages; every model change and rule injection), then the custom
/// messages and branch summaries the context shows. Every other `message`
/// entry is left to the caller as a [`ContextStep::Message`], so its
/// message can be taken as stored.
///
/// The settings and the steps are what [`build_from_path`] gives for
/// the whole path (see there for the rules).
pub fn plan_heads<E: Borrow<Entry>>(
    heads: &[PathHead<'_>],
    decode: impl FnMut(&[usize]) -> Vec<Option<E>>,
) -> ContextPlan {
    let kinds: Vec<PathKind<'_>> =
        heads.iter().map(|h| PathKind { entry_type: &h.entry_type, role: h.role.as_ref() }).collect();
    plan_kinds(&kinds, |first, k| heads[..k].iter().position(|h| h.id == first), decode)
}

/// [`plan_heads`] from the path's types and roles alone: `find_kept(id,
/// k)` is the first position before `k` whose entry has the id `id` (a
/// compaction's `firstKeptEntryId`), asked at most once. A caller whose
/// path holds each id once (a session's path) may search back from `k`,
/// reading only the ids between the kept entry and the compaction.
pub fn plan_kinds<E: Borrow<Entry>>(
    heads: &[PathKind<'_>],
    find_kept: impl FnOnce(&str, usize) -> Option<usize>,
    decode: impl FnMut(&[usize]) -> Vec<Option<E>>,
) -> ContextPlan {
    plan_kinds_at(heads.len(), |p| heads[p], find_kept, decode)
}

/// [`plan_kinds`] with the path's heads asked for one at a time:
/// `kind_at(p)` is the head of position `p < len`. A caller that reads the
/// heads from columns (a session opened through its index) so lists none
/// of them; the path is walked once from its end, and from the start only
/// where the context shows messages.
pub fn plan_kinds_at<'k, E: Borrow<Entry>>(
    len: usize,
    kind_at: impl Fn(usize) -> PathKind<'k>,
    find_kept: impl FnOnce(&str, usize) -> Option<usize>,
    mut decode: impl FnMut(&[usize]) -> Vec<Option<E>>,
) -> ContextPlan {
    let mut read = reads::settings_entries(len, &kind_at, &mut decode);
    // The path ranges whose entries give messages: after the last
    // compaction, and from the entry it keeps.
    let mut ranges = Vec::with_capacity(2);
    let last_compaction = read.iter().rev().find_map(|(p, e)| match &e.borrow().kind {
        EntryKind::Compaction(c) => Some((*p, c.first_kept_entry_id.clone())),
        _ => None,
    });
    match last_compaction {
        None => ranges.push(0..len),
        Some((k, first)) => {
            if let Some(start) = first.as_deref().and_then(|first| find_kept(first, k)) {
                ranges.push(start..k);
            }
            ranges.push(k + 1..len);
        }
    }
    reads::add_made_up(&kind_at, ranges.iter().cloned().flatten(), &mut read, &mut decode);
    let read: Vec<(usize, &Entry)> = read.iter().map(|(p, e)| (*p, e.borrow())).collect();

    let (ctx, compaction) = settings_of(&read);
    let mut steps = Vec::new();
    if let Some(r) = compaction {
        if let EntryKind::Compaction(c) = &read[r].1.kind {
            steps.push(ContextStep::Made(Box::new(compaction_summary_message(c, &read[r].1.timestamp))));
        }
    }
    // At most a step a position (and the summary): reserved at once, so a
    // million steps never sit in a list grown to twice their size.
    steps.reserve_exact(ranges.iter().map(ExactSizeIterator::len).sum());
    for p in ranges.into_iter().flatten() {
        let t = kind_at(p).entry_type;
        if *t == EntryType::Message {
            steps.push(ContextStep::Message(p));
        } else if !reads::made_up(t) {
            // Settings, compactions, labels and the like show nothing.
        } else if let Ok(r) = read.binary_search_by_key(&p, |&(q, _)| q) {
            steps.extend(entry_message(read[r].1).map(|m| ContextStep::Made(Box::new(m))));
        }
    }
    ContextPlan { settings: ctx, steps }
}

/// The settings the entries `read` (in path order) give, and the place in
/// `read` of the last compaction.
fn settings_of(read: &[(usize, &Entry)]) -> (SessionContext, Option<usize>) {
    let mut ctx = SessionContext::empty();
    let mut compaction = None;
    for (r, &(_, entry)) in read.iter().enumerate() {
        match &entry.kind {
            EntryKind::ThinkingLevelChange(t) => {
                ctx.thinking_level = t.level().unwrap_or("off").to_owned();
                ctx.thinking_level_value = t.thinking_level.clone();
            }
            EntryKind::ModelChange(m) => apply_model_change(&mut ctx, m),
            EntryKind::Message(m) if m.role() == Some(Role::Assistant) => {
                let field = |k: &str| m.message.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                let (provider, model_id) = (field("provider"), field("model"));
                ctx.models.insert("default".to_owned(), format!("{provider}/{model_id}"));
                ctx.model = Some(ModelRef { provider, model_id });
                ctx.model_value = model_value(m.message.get("provider"), m.message.get("model"));
            }
            EntryKind::Compaction(_) => compaction = Some(r),
            EntryKind::TtsrInjection(t) => {
                for rule in &t.injected_rules {
                    if !ctx.injected_ttsr_rules.contains(rule) {
                        ctx.injected_ttsr_rules.push(rule.clone());
                    }
                }
            }
            EntryKind::ModeChange(m) => {
                ctx.mode = Some(m.mode.clone());
                ctx.mode_data = m.data.clone();
            }
            EntryKind::Message(_)
            | EntryKind::BranchSummary(_)
            | EntryKind::CustomMessage(_)
            | EntryKind::Custom(_)
            | EntryKind::Label(_)
            | EntryKind::SessionInfo(_)
            | EntryKind::Unknown { .. }
            | EntryKind::Malformed { .. } => {}
        }
    }
    (ctx, compaction)
}

fn apply_model_change(ctx: &mut SessionContext, m: &ModelChange) {
    if m.provider.is_none() && m.model_id.is_none() && m.model.is_some() {
        // omp's `{model: "provider/id", role}`: a change of the default role's model only.
        if let Some((provider, model_id)) = m.default_model() {
            ctx.model_value = model_value(Some(&provider.as_str().into()), Some(&model_id.as_str().into()));
            ctx.model = Some(ModelRef { provider, model_id });
        }
    } else {
        // pi reads `{provider, modelId}` from every model change, whatever they hold.
        let (provider, model_id) = m.default_model().unwrap_or_default();
        ctx.model = Some(ModelRef { provider, model_id });
        ctx.model_value = model_value(m.provider.as_ref(), m.model_id.as_ref());
    }
    match (&m.model, &m.provider, &m.model_id) {
        (Some(model), _, _) => {
            let role = m.role.clone().unwrap_or_else(|| "default".to_owned());
            ctx.models.insert(role, model.clone());
        }
        (None, provider, model_id) => {
            let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).unwrap_or("").to_owned();
            ctx.models.insert("default".to_owned(), format!("{}/{}", text(provider), text(model_id)));
        }
    }
}

/// pi's `{provider, modelId}`: the fields as given, an absent one left out.
fn model_value(provider: Option<&Value>, model_id: Option<&Value>) -> Value {
    let mut m = Map::new();
    if let Some(p) = provider {
        m.insert("provider".into(), p.clone());
    }
    if let Some(id) = model_id {
        m.insert("modelId".into(), id.clone());
    }
    Value::Object(m)
}

/// The entry's ISO timestamp as JavaScript's `new Date(ts).getTime()`: ms, or `null` for NaN.
pub fn timestamp_ms(ts: &str) -> Value {
    parse_iso_ms(ts).map_or(Value::Null, Value::from)
}

/// The message an entry gives the context, if any (pi's `appendMessage`),
/// taking the entry: a `message` entry's message is moved, not copied.
pub fn message_of_entry(entry: Entry) -> Option<Value> {
    match entry.kind {
        EntryKind::Message(m) => Some(m.message),
        _ => entry_message(&entry),
    }
}

/// The message an entry contributes to the context, if any (pi's `appendMessage`).
fn entry_message(entry: &Entry) -> Option<Value> {
    match &entry.kind {
        EntryKind::Message(m) => Some(m.message.clone()),
        EntryKind::CustomMessage(c) => Some(custom_message(c, &entry.timestamp)),
        EntryKind::BranchSummary(b) if !b.summary.is_empty() => Some(branch_summary_message(b, &entry.timestamp)),
        EntryKind::BranchSummary(_)
        | EntryKind::ThinkingLevelChange(_)
        | EntryKind::ModelChange(_)
        | EntryKind::Compaction(_)
        | EntryKind::Custom(_)
        | EntryKind::Label(_)
        | EntryKind::SessionInfo(_)
        | EntryKind::TtsrInjection(_)
        | EntryKind::ModeChange(_)
        | EntryKind::Unknown { .. }
        | EntryKind::Malformed { .. } => None,
    }
}

/// The `custom` agent message a `custom_message` entry stands for (timestamp: the entry's, in ms).
pub fn custom_message(c: &CustomMessageEntry, ts: &str) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), Role::Custom.as_str().into());
    m.insert("customType".into(), c.custom_type.clone().into());
    // As pi builds it: the entry's fields as written, absent ones left out.
    for (key, field) in [("content", &c.content), ("display", &c.display), ("details", &c.details)] {
        if let Some(v) = field {
            m.insert(key.into(), v.clone());
        }
    }
    m.insert("timestamp".into(), timestamp_ms(ts));
    Value::Object(m)
}

/// The `branchSummary` agent message a `branch_summary` entry stands for.
pub fn branch_summary_message(b: &BranchSummary, ts: &str) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), Role::BranchSummary.as_str().into());
    m.insert("summary".into(), b.summary.clone().into());
    m.insert("fromId".into(), b.from_id.clone().into());
    m.insert("timestamp".into(), timestamp_ms(ts));
    Value::Object(m)
}

/// The `compactionSummary` agent message a `compaction` entry stands for.
pub fn compaction_summary_message(c: &Compaction, ts: &str) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), Role::CompactionSummary.as_str().into());
    m.insert("summary".into(), c.summary.clone().into());
    if let Some(tokens) = &c.tokens_before {
        m.insert("tokensBefore".into(), tokens.clone());
    }
    m.insert("timestamp".into(), timestamp_ms(ts));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(v: Value) -> Entry {
        Entry::from_value(&v).unwrap()
    }

    #[test]
    fn synthesized_messages_have_pi_key_order() {
        let path = [
            entry(
                json!({"type":"custom_message","customType":"ext","content":"hi","display":false,"details":{"k":1},"id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z"}),
            ),
            entry(
                json!({"type":"branch_summary","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:01.000Z","fromId":"a","summary":"went elsewhere"}),
            ),
            entry(
                json!({"type":"custom_message","customType":"ext","content":[{"type":"text","text":"t"}],"display":true,"id":"c","parentId":"b","timestamp":"not a date"}),
            ),
        ];
        let refs: Vec<&Entry> = path.iter().collect();
        let ctx = build_from_path(&refs);
        let text: Vec<String> = ctx.messages.iter().map(|m| serde_json::to_string(m).unwrap()).collect();
        assert_eq!(
            text,
            [
                r#"{"role":"custom","customType":"ext","content":"hi","display":false,"details":{"k":1},"timestamp":1735689600000}"#,
                r#"{"role":"branchSummary","summary":"went elsewhere","fromId":"a","timestamp":1735689601000}"#,
                r#"{"role":"custom","customType":"ext","content":[{"type":"text","text":"t"}],"display":true,"timestamp":null}"#,
            ]
        );
    }

    #[test]
    fn compaction_summary_key_order_and_missing_tokens_before() {
        let c = entry(
            json!({"type":"compaction","id":"c","parentId":null,"timestamp":"2025-01-01T00:00:00Z","summary":"S","firstKeptEntryId":"zz","tokensBefore":42}),
        );
        let ctx = build_from_path(&[&c]);
        assert_eq!(
            serde_json::to_string(&ctx.messages).unwrap(),
            r#"[{"role":"compactionSummary","summary":"S","tokensBefore":42,"timestamp":1735689600000}]"#
        );
        let v1 = entry(json!({"type":"compaction","id":"c","parentId":null,"timestamp":"x","summary":"S"}));
        let ctx = build_from_path(&[&v1]);
        assert_eq!(
            serde_json::to_string(&ctx.messages).unwrap(),
            r#"[{"role":"compactionSummary","summary":"S","timestamp":null}]"#
        );
    }

    #[test]
    fn serialized_context_has_exactly_pi_keys() {
        let mut ctx = SessionContext::empty();
        ctx.models.insert("smol".into(), "a/b".into());
        ctx.injected_ttsr_rules.push("r".into());
        ctx.mode = Some("plan".into());
        ctx.model = Some(ModelRef { provider: "p".into(), model_id: "m".into() });
        ctx.model_value = json!({"provider": "p", "modelId": "m"});
        let want = r#"{"messages":[],"thinkingLevel":"off","model":{"provider":"p","modelId":"m"}}"#;
        assert_eq!(serde_json::to_string(&ctx).unwrap(), want);
        assert_eq!(serde_json::to_string(&ctx.to_json()).unwrap(), want);
        let empty = serde_json::to_string(&SessionContext::empty()).unwrap();
        assert_eq!(empty, r#"{"messages":[],"thinkingLevel":"off","model":null}"#);
    }

    #[test]
    fn walk_is_cycle_safe_and_root_first() {
        let es = [
            entry(json!({"type":"label","id":"a","parentId":"c","targetId":"a"})),
            entry(json!({"type":"label","id":"b","parentId":"a","targetId":"a"})),
            entry(json!({"type":"label","id":"c","parentId":"b","targetId":"a"})),
        ];
        let by_id: HashMap<&str, &Entry> = es.iter().map(|e| (e.id.as_str(), e)).collect();
        let path = walk_to_root(&es[2], |id| by_id.get(id).copied());
        let ids: Vec<&str> = path.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
    }
}
