//! How entries look in one line, and how a tree is laid out (spec 6.2, 6.7).
//!
//! Used by `arbor tree`, `arbor dump` and the interactive selector (`arbor tui`).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use arbor_log::{content_text, Role};
use arbor_log::{Entry, EntryKind};
use arbor_tree::{Position, Session, Tree};

/// Collapses newlines and tabs to spaces and trims.
pub fn normalize(s: &str) -> String {
    s.replace(['\n', '\t'], " ").trim().to_owned()
}

fn take_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// `{name, arguments}` of the tool calls seen so far, by tool-call id.
pub type ToolCalls = HashMap<String, (String, Value)>;

/// Records the tool calls of an assistant entry.
pub fn record_tool_calls(entry: &Entry, calls: &mut ToolCalls) {
    let Some(m) = entry.message() else { return };
    if m.role() != Some(Role::Assistant) {
        return;
    }
    if let Some(Value::Array(blocks)) = m.message.get("content") {
        for b in blocks {
            if b.get("type").and_then(Value::as_str) == Some("toolCall") {
                if let (Some(id), Some(name)) =
                    (b.get("id").and_then(Value::as_str), b.get("name").and_then(Value::as_str))
                {
                    let args = b.get("arguments").cloned().unwrap_or(Value::Null);
                    calls.insert(id.to_owned(), (name.to_owned(), args));
                }
            }
        }
    }
}

fn shorten_home(p: &str, home: Option<&str>) -> String {
    match home {
        Some(h) if !h.is_empty() && p.starts_with(h) => format!("~{}", &p[h.len()..]),
        _ => p.to_owned(),
    }
}

/// One tool call as the selector shows it (spec 6.7).
pub fn format_tool_call(name: &str, args: &Value, home: Option<&str>) -> String {
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    let path = || shorten_home(s("path").or_else(|| s("file_path")).unwrap_or(""), home);
    match name {
        "read" => {
            let p = path();
            let offset = args.get("offset").and_then(Value::as_i64);
            let limit = args.get("limit").and_then(Value::as_i64);
            match (offset, limit) {
                (o, Some(l)) => {
                    let start = o.unwrap_or(1);
                    format!("[read: {p}:{start}-{}]", start + l - 1)
                }
                (Some(o), None) => format!("[read: {p}:{o}]"),
                (None, None) => format!("[read: {p}]"),
            }
        }
        "write" | "edit" => format!("[{name}: {}]", path()),
        "bash" => {
            let raw = s("command").unwrap_or("");
            let cmd = take_chars(&normalize(raw), 50);
            let more = if raw.chars().count() > 50 { "..." } else { "" };
            format!("[bash: {cmd}{more}]")
        }
        "grep" => format!(
            "[grep: /{}/ in {}]",
            s("pattern").unwrap_or(""),
            s("path").map(|p| shorten_home(p, home)).unwrap_or_else(|| ".".into())
        ),
        "find" => format!(
            "[find: {} in {}]",
            s("pattern").unwrap_or(""),
            s("path").map(|p| shorten_home(p, home)).unwrap_or_else(|| ".".into())
        ),
        "ls" => format!("[ls: {}]", s("path").map(|p| shorten_home(p, home)).unwrap_or_else(|| ".".into())),
        _ => {
            let json = arbor_log::json::to_string(args).unwrap_or_default();
            let more = if json.chars().count() > 40 { "..." } else { "" };
            format!("[{name}: {}{more}]", take_chars(&json, 40))
        }
    }
}

/// The one-line text of an entry (spec 6.7, with Arbor's `[session name: …]` and `[<type>]` rows).
pub fn entry_text(entry: &Entry, calls: &ToolCalls, home: Option<&str>) -> String {
    let clip = |s: &str| take_chars(&normalize(s), 200);
    match &entry.kind {
        EntryKind::Message(m) => {
            let msg = &m.message;
            match m.role() {
                Some(Role::User) => format!("user: {}", clip(&content_text(msg.get("content"), ""))),
                Some(Role::Assistant) => {
                    let text = clip(&content_text(msg.get("content"), ""));
                    if !text.is_empty() {
                        return format!("assistant: {text}");
                    }
                    let stop = msg.get("stopReason").and_then(Value::as_str);
                    if stop == Some("aborted") {
                        return "assistant: (aborted)".into();
                    }
                    match msg.get("errorMessage").and_then(Value::as_str) {
                        Some(err) if !err.is_empty() => format!("assistant: {}", take_chars(&normalize(err), 80)),
                        _ => "assistant: (no content)".into(),
                    }
                }
                Some(Role::ToolResult) => {
                    let id = msg.get("toolCallId").and_then(Value::as_str).unwrap_or("");
                    match calls.get(id) {
                        Some((name, args)) => format_tool_call(name, args, home),
                        None => match msg.get("toolName").and_then(Value::as_str) {
                            Some(n) => format!("[{n}]"),
                            None => "[tool]".into(),
                        },
                    }
                }
                Some(Role::BashExecution) => {
                    format!("[bash]: {}", clip(msg.get("command").and_then(Value::as_str).unwrap_or("")))
                }
                Some(role) => format!("[{role}]"),
                None => "[message]".into(),
            }
        }
        EntryKind::CustomMessage(c) => format!("[{}]: {}", c.custom_type, clip(&content_text(c.content.as_ref(), ""))),
        EntryKind::Compaction(c) => {
            let tokens = c.tokens_before.as_ref().and_then(|n| n.as_f64()).unwrap_or(0.0);
            format!("[compaction: {}k tokens]", (tokens / 1000.0).round() as i64)
        }
        EntryKind::BranchSummary(b) => format!("[branch summary]: {}", clip(&b.summary)),
        EntryKind::ModelChange(m) => {
            let id = m.model_text().unwrap_or_default();
            format!("[model: {id}]")
        }
        EntryKind::ThinkingLevelChange(t) => {
            format!(
                "[thinking: {}]",
                t.thinking_level
                    .as_ref()
                    .filter(|l| !l.is_null())
                    .map_or_else(|| "off".to_owned(), arbor_log::json::text)
            )
        }
        EntryKind::Custom(c) => format!("[custom: {}]", c.custom_type),
        EntryKind::Label(l) => {
            format!("[label: {}]", l.text().unwrap_or_else(|| "(cleared)".to_owned()))
        }
        EntryKind::SessionInfo(s) => format!("[session name: {}]", clip(s.name.as_deref().unwrap_or(""))),
        EntryKind::TtsrInjection(_) => "[ttsr injection]".into(),
        EntryKind::ModeChange(m) => format!("[mode: {}]", m.mode),
        EntryKind::Unknown { entry_type, .. } | EntryKind::Malformed { entry_type, .. } => {
            format!("[{}]", entry_type.as_str().replace('_', " "))
        }
    }
}

/// One laid-out row of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Session index of the entry.
    pub index: usize,
    /// The connector and gutter prefix (`displayIndent × 3` characters).
    pub prefix: String,
    /// True when the entry is on the active path (root → leaf).
    pub active: bool,
    /// The level whose cell holds this row's connector (`├─`/`└─`), when one is drawn;
    /// the selector puts its fold glyph in the second character of that cell.
    pub connector_at: Option<usize>,
}

#[derive(Clone)]
struct Gutter {
    position: usize,
    show: bool,
}

/// Positions of the entries on the path root → leaf.
pub fn active_path(session: &Session) -> HashSet<usize> {
    session.branch_positions(None).into_iter().map(Position::get).collect()
}

/// Lays out a tree as pi's selector does (spec 6.2): the active branch first
/// under each branch point, single-child chains flat, connectors and gutters.
/// `visible_children(i)` and `roots` describe the (possibly filtered) tree.
pub fn layout(roots: &[usize], children: &dyn Fn(usize) -> Vec<usize>, active: &HashSet<usize>) -> Vec<Row> {
    struct Item {
        node: usize,
        indent: usize,
        just_branched: bool,
        show_connector: bool,
        is_last: bool,
        gutters: Vec<Gutter>,
        virtual_root_child: bool,
    }
    let multiple_roots = roots.len() > 1;
    let mut ordered_roots: Vec<usize> = roots.to_vec();
    ordered_roots.sort_by_key(|r| !active.contains(r));
    let mut stack: Vec<Item> = vec![];
    let n = ordered_roots.len();
    for (k, &r) in ordered_roots.iter().enumerate().rev() {
        stack.push(Item {
            node: r,
            indent: usize::from(multiple_roots),
            just_branched: multiple_roots,
            show_connector: multiple_roots,
            is_last: k + 1 == n,
            gutters: vec![],
            virtual_root_child: multiple_roots,
        });
    }
    let mut rows = vec![];
    while let Some(item) = stack.pop() {
        let display_indent = if multiple_roots { item.indent.saturating_sub(1) } else { item.indent };
        let connector = item.show_connector && !item.virtual_root_child;
        let connector_at = display_indent.checked_sub(1);
        // The gutter at each level (the first one listed wins), found in one
        // pass: deep, much-branched trees have thousands of levels.
        let mut gutter_at: Vec<Option<bool>> = vec![None; display_indent];
        for g in item.gutters.iter().rev() {
            if let Some(slot) = gutter_at.get_mut(g.position) {
                *slot = Some(g.show);
            }
        }
        let mut prefix = String::with_capacity(display_indent * 3);
        for (level, gutter) in gutter_at.iter().enumerate() {
            if let Some(show) = gutter {
                prefix.push_str(if *show { "│  " } else { "   " });
            } else if connector && connector_at == Some(level) {
                prefix.push_str(if item.is_last { "└─ " } else { "├─ " });
            } else {
                prefix.push_str("   ");
            }
        }
        let drawn_at = connector_at.filter(|&l| connector && !item.gutters.iter().any(|g| g.position == l));
        rows.push(Row { index: item.node, prefix, active: active.contains(&item.node), connector_at: drawn_at });
        let mut kids = children(item.node);
        kids.sort_by_key(|c| !active.contains(c));
        let branching = kids.len() > 1;
        let child_indent =
            if branching || (item.just_branched && item.indent > 0) { item.indent + 1 } else { item.indent };
        let mut gutters = item.gutters.clone();
        if connector {
            gutters.push(Gutter { position: display_indent.saturating_sub(1), show: !item.is_last });
        }
        let m = kids.len();
        for (k, &c) in kids.iter().enumerate().rev() {
            stack.push(Item {
                node: c,
                indent: child_indent,
                just_branched: branching,
                show_connector: branching,
                is_last: k + 1 == m,
                gutters: gutters.clone(),
                virtual_root_child: false,
            });
        }
    }
    rows
}

/// Lays out the whole tree of a session.
pub fn layout_tree(tree: &Tree<'_>, active: &HashSet<usize>) -> Vec<Row> {
    let roots: Vec<usize> = tree.root_positions().iter().map(|p| p.get()).collect();
    layout(&roots, &|i| tree.child_positions(Position::new(i)).iter().map(|p| p.get()).collect(), active)
}
