//! Deep paths: the context of a long path decodes only the settings that
//! count and the messages it shows (docs/performance.md, "Deep paths"), and
//! must answer what pi's rules give when every entry is read. Generated
//! sessions whose path crosses many runs of the index (side branches
//! interleaved, so the path is not contiguous in the file) with
//! thousands of settings, compactions (keeping from a few entries back or
//! from an id off the path), branch summaries (empty ones too), custom
//! messages, labels, oh-my-pi's model roles, rule injections and modes,
//! and last settings whose body does not decode, are compared at a spread
//! of leaves three ways: through the index (lazily), fully loaded, and
//! against a plain reading of every entry of the path written here.

use std::path::Path;

use arbor_context::render::write_plan_transcript;
use arbor_context::{
    branch_summary_message, compaction_summary_message, custom_message, plan_session_context, session_context,
    write_context_json, write_plan_llm_json, Checked, SessionContext,
};
use arbor_log::{Entry, EntryKind, Role};
use arbor_test_support::Rng;
use arbor_tree::{FileStore, OpenMode, Session, SessionOptions};
use serde_json::{json, Map, Value};

/// Read-only, fully decoded on open.
fn open_full(path: &Path) -> Session {
    let opts = SessionOptions { index_first: false, index_dir: None, ..SessionOptions::default() };
    Session::open(path, OpenMode::ReadOnly, opts.with_store(FileStore)).unwrap()
}

/// Read-only through the index cache in `cache`, indexing files of any size.
fn open_indexed(path: &Path, cache: &Path) -> Session {
    let opts = SessionOptions { index_dir: Some(cache.to_owned()), index_min_bytes: 0, ..SessionOptions::default() };
    Session::open(path, OpenMode::ReadOnly, opts.with_store(FileStore)).unwrap()
}

/// What the shapes of a generated session hold.
#[derive(Clone, Copy)]
struct Shape {
    turns: usize,
    /// Compactions on the path (else none at all).
    compactions: bool,
    /// The last compaction and mode change have bodies that do not decode.
    broken_last: bool,
}

/// Writes a session of `shape.turns` turns down one long path, with side
/// branches, and returns the ids of its entries in file order.
fn write_deep_session(path: &Path, shape: Shape, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    );
    let mut ids: Vec<String> = vec![];
    let mut parent = "null".to_owned();
    // Adds an entry under `parent`; the path goes on from it when `keep`.
    let mut line = |body: String, parent: &mut String, keep: bool| {
        let n = ids.len();
        let id = format!("e{n:x}");
        let ts = format!("2026-01-01T{:02}:{:02}:{:02}.{:03}Z", (n / 3600) % 24, (n / 60) % 60, n % 60, n % 1000);
        text.push_str(&format!("{{\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"{ts}\",{body}}}\n"));
        if keep {
            *parent = format!("\"{id}\"");
        }
        ids.push(id);
    };
    let levels = ["off", "low", "medium", "high"];
    for t in 0..shape.turns {
        let mut recent_user = None;
        line(
            format!("\"type\":\"message\",\"message\":{{\"role\":\"user\",\"content\":\"q{t}\",\"timestamp\":{t}}}"),
            &mut parent,
            true,
        );
        if rng.below(3) == 0 {
            recent_user = Some(parent.trim_matches('"').to_owned());
        }
        line(
            format!(
                "\"type\":\"message\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"a{t}\"}}],\"provider\":\"p{}\",\"model\":\"m{}\",\"timestamp\":{t}}}",
                rng.below(3),
                rng.below(5)
            ),
            &mut parent,
            true,
        );
        match rng.below(24) {
            0..=5 => line(
                format!("\"type\":\"thinking_level_change\",\"thinkingLevel\":\"{}\"", rng.pick(&levels)),
                &mut parent,
                true,
            ),
            6 => {
                line(format!("\"type\":\"model_change\",\"provider\":\"x{t}\",\"modelId\":\"y{t}\""), &mut parent, true)
            }
            7 => line(
                format!(
                    "\"type\":\"model_change\",\"model\":\"o{t}/r{t}\",\"role\":\"{}\"",
                    rng.pick(&["smol", "default", "slow"])
                ),
                &mut parent,
                true,
            ),
            8 if shape.compactions => {
                let kept = match (rng.below(3), recent_user) {
                    (0, _) | (_, None) => "off-the-path".to_owned(),
                    (_, Some(u)) => u,
                };
                line(format!("\"type\":\"compaction\",\"summary\":\"s{t}\",\"firstKeptEntryId\":\"{kept}\",\"tokensBefore\":{t}"), &mut parent, true);
            }
            9 => line(
                format!("\"type\":\"custom_message\",\"customType\":\"c\",\"content\":\"cm{t}\",\"display\":true"),
                &mut parent,
                true,
            ),
            10 => {
                let summary = if rng.below(4) == 0 { String::new() } else { format!("b{t}") };
                line(
                    format!("\"type\":\"branch_summary\",\"fromId\":\"e0\",\"summary\":\"{summary}\""),
                    &mut parent,
                    true,
                );
            }
            11 => line(
                format!("\"type\":\"ttsr_injection\",\"injectedRules\":[\"r{}\"]", rng.below(7)),
                &mut parent,
                true,
            ),
            12 => line(format!("\"type\":\"mode_change\",\"mode\":\"m{t}\",\"data\":{{\"t\":{t}}}"), &mut parent, true),
            13..=15 => {
                // Side branches interleaved with the path, and a label on the path.
                for k in 0..rng.between(1, 40) {
                    line(
                        format!("\"type\":\"message\",\"message\":{{\"role\":\"user\",\"content\":\"side{t}.{k}\"}}"),
                        &mut parent,
                        false,
                    );
                }
                line(
                    format!("\"type\":\"label\",\"targetId\":\"e{:x}\",\"label\":\"L{t}\"", rng.below(2 * t + 1)),
                    &mut parent,
                    true,
                );
            }
            _ => {}
        }
    }
    if shape.broken_last {
        line("\"type\":\"compaction\",\"summary\":7,\"firstKeptEntryId\":\"e0\"".to_owned(), &mut parent, true);
        line("\"type\":\"mode_change\",\"mode\":[]".to_owned(), &mut parent, true);
        line(
            "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"after\"}".to_owned(),
            &mut parent,
            true,
        );
    }
    std::fs::write(path, text).unwrap();
    ids
}

/// What pi's `buildSessionContext` gives for a root-first path, read
/// entry by entry (every entry decoded), with oh-my-pi's fields.
fn plain_context(path: &[Entry]) -> (Value, Map<String, Value>) {
    let mut thinking = Some(json!("off"));
    let mut model = Value::Null;
    let mut models = Map::new();
    let mut rules: Vec<String> = vec![];
    let mut mode = Value::Null;
    let mut compaction = None;
    let pair = |provider: Option<&Value>, model_id: Option<&Value>| {
        let mut m = Map::new();
        m.extend(provider.map(|p| ("provider".to_owned(), p.clone())));
        m.extend(model_id.map(|p| ("modelId".to_owned(), p.clone())));
        Value::Object(m)
    };
    for (k, e) in path.iter().enumerate() {
        match &e.kind {
            EntryKind::ThinkingLevelChange(t) => thinking = t.thinking_level.clone(),
            EntryKind::ModelChange(m) => {
                match m.default_model() {
                    Some((p, id)) if m.provider.is_none() && m.model_id.is_none() => {
                        model = pair(Some(&p.into()), Some(&id.into()));
                    }
                    _ if m.provider.is_none() && m.model_id.is_none() => {}
                    _ => model = pair(m.provider.as_ref(), m.model_id.as_ref()),
                }
                let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).unwrap_or("").to_owned();
                match &m.model {
                    Some(full) => models.insert(m.role.clone().unwrap_or("default".into()), full.clone().into()),
                    None => {
                        models.insert("default".into(), format!("{}/{}", text(&m.provider), text(&m.model_id)).into())
                    }
                };
            }
            EntryKind::Message(m) if m.role() == Some(Role::Assistant) => {
                model = pair(m.message.get("provider"), m.message.get("model"));
                let text = |k: &str| m.message.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                models.insert("default".into(), format!("{}/{}", text("provider"), text("model")).into());
            }
            EntryKind::TtsrInjection(t) => {
                for r in &t.injected_rules {
                    if !rules.contains(r) {
                        rules.push(r.clone());
                    }
                }
            }
            EntryKind::ModeChange(m) => mode = json!([m.mode, m.data]),
            EntryKind::Compaction(_) => compaction = Some(k),
            _ => {}
        }
    }
    let message = |e: &Entry| match &e.kind {
        EntryKind::Message(m) => Some(m.message.clone()),
        EntryKind::CustomMessage(c) => Some(custom_message(c, &e.timestamp)),
        EntryKind::BranchSummary(b) if !b.summary.is_empty() => Some(branch_summary_message(b, &e.timestamp)),
        _ => None,
    };
    let mut messages = vec![];
    match compaction.map(|k| (k, &path[k].kind)) {
        Some((k, EntryKind::Compaction(c))) => {
            messages.push(compaction_summary_message(c, &path[k].timestamp));
            let kept = c.first_kept_entry_id.as_deref().and_then(|id| path[..k].iter().position(|e| e.id == id));
            if let Some(start) = kept {
                messages.extend(path[start..k].iter().filter_map(message));
            }
            messages.extend(path[k + 1..].iter().filter_map(message));
        }
        _ => messages.extend(path.iter().filter_map(message)),
    }
    let mut out = Map::new();
    out.insert("messages".into(), Value::Array(messages));
    out.extend(thinking.map(|t| ("thinkingLevel".to_owned(), t)));
    out.insert("model".into(), model);
    let omp = Map::from_iter([
        ("models".to_owned(), Value::Object(models)),
        ("rules".to_owned(), json!(rules)),
        ("mode".to_owned(), mode),
    ]);
    (Value::Object(out), omp)
}

/// oh-my-pi's fields of a context, as [`plain_context`] gives them.
fn omp_of(c: &SessionContext) -> Map<String, Value> {
    let mode = c.mode.as_ref().map_or(Value::Null, |m| json!([m, c.mode_data]));
    Map::from_iter([
        ("models".to_owned(), json!(c.models)),
        ("rules".to_owned(), json!(c.injected_ttsr_rules)),
        ("mode".to_owned(), mode),
    ])
}

/// Every way `arbor context` prints the context at the session's leaf: the
/// JSON, the JSON after convertToLlm, the text and the text after it.
fn printed(s: &Session) -> [Vec<u8>; 4] {
    let plan = plan_session_context(s).unwrap();
    let mut out: [Vec<u8>; 4] = Default::default();
    write_context_json(s, &mut out[0]).unwrap();
    write_plan_llm_json(s, &plan, &mut out[1]).unwrap();
    assert_eq!(write_plan_transcript(s, &plan, &mut out[2], false).unwrap(), Checked::Written);
    assert_eq!(write_plan_transcript(s, &plan, &mut out[3], true).unwrap(), Checked::Written);
    out
}

/// Compares the three readings at the leaf and at `leaves` other entries.
fn same_three_ways(file: &Path, ids: &[String], leaves: usize, indexed: bool) {
    let cache = tempfile::tempdir().unwrap();
    let mut full = open_full(file);
    // The first open scans and writes the index; each later one reads it.
    drop(open_indexed(file, cache.path()));
    assert_eq!(open_indexed(file, cache.path()).opened_from_index(), indexed, "{}", file.display());
    let step = (ids.len() / leaves).max(1);
    let leaf_ids = ids.iter().skip(step / 2).step_by(step).chain(ids.last());
    for id in leaf_ids {
        full.branch(id).unwrap();
        // A fresh session at that leaf (the file's own leaf last): nothing
        // built before the context is read.
        let mut lazy = open_indexed(file, cache.path());
        if Some(id) != ids.last() {
            lazy.branch(id).unwrap();
        }
        let at = format!("{} at {id}", file.display());
        let printed_lazy = printed(&lazy);
        assert!(printed_lazy == printed(&full), "{at}: printed through the index differs from the full load");
        let context = session_context(&lazy).unwrap();
        assert_eq!(context, session_context(&full).unwrap(), "{at}: the context");
        let path: Vec<Entry> =
            full.branch_positions(None).into_iter().map(|p| full.decode_at(p).unwrap().unwrap()).collect();
        let (want, want_omp) = plain_context(&path);
        let got: Value = serde_json::from_slice(&printed_lazy[0]).unwrap();
        assert!(got == want, "{at}: the context is not what reading every entry gives");
        assert_eq!(omp_of(&context), want_omp, "{at}: oh-my-pi's fields");
        // Of the path, only the settings that count, the last compaction and
        // the made-up messages it shows are decoded.
        let plan = plan_session_context(&lazy).unwrap();
        let shown = plan.plan.steps.len() + 1;
        assert!(plan.read.len() <= shown + 16 + count_each(&path), "{at}: {} entries decoded", plan.read.len());
    }
}

/// The entries of which each one on the path is read (model changes, rule injections).
fn count_each(path: &[Entry]) -> usize {
    path.iter().filter(|e| matches!(e.kind, EntryKind::ModelChange(_) | EntryKind::TtsrInjection(_))).count()
}

#[test]
fn a_deep_compacted_path_answers_as_reading_every_entry_does() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("deep.jsonl");
    let ids = write_deep_session(&file, Shape { turns: 3000, compactions: true, broken_last: false }, 7);
    assert!(ids.len() > 64 * 100, "{} entries: the path must cross many runs", ids.len());
    same_three_ways(&file, &ids, 12, true);
}

#[test]
fn a_deep_path_without_compactions_answers_as_reading_every_entry_does() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("flat.jsonl");
    let ids = write_deep_session(&file, Shape { turns: 2500, compactions: false, broken_last: false }, 11);
    same_three_ways(&file, &ids, 6, true);
}

#[test]
fn last_settings_that_do_not_decode_give_way_to_the_ones_before() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("broken.jsonl");
    let ids = write_deep_session(&file, Shape { turns: 1500, compactions: true, broken_last: true }, 3);
    // Bodies that do not decode are diagnosed: such a file gets no index.
    same_three_ways(&file, &ids, 3, false);
    let s = open_full(&file);
    let (want, _) = plain_context(
        &s.branch_positions(None).into_iter().map(|p| s.decode_at(p).unwrap().unwrap()).collect::<Vec<_>>(),
    );
    assert_eq!(want["messages"][0]["role"], "compactionSummary", "an earlier compaction counts");
    assert!(session_context(&s).unwrap().mode.is_some(), "an earlier mode counts");
}

/// A compaction's kept entry is looked up by its id (no id of the path is
/// read): on a side branch, written twice (the path goes through the later
/// line, before or after the compaction in the file) or missing, the
/// context through the index and from the full load is what the pure
/// reading of every entry gives.
#[test]
fn the_kept_entry_is_found_by_its_id_wherever_it_is() {
    let m = crate::msg;
    let c = |id, parent, kept| crate::compaction(id, Some(parent), "S", kept);
    let cases: Vec<(&str, Vec<Entry>, Vec<&str>)> = vec![
        (
            "kept on a side branch",
            vec![
                m("1", None, "user", "a"),
                m("2", Some("1"), "assistant", "b"),
                m("k", Some("1"), "user", "side"),
                c("c", "2", "k"),
                m("4", Some("c"), "user", "d"),
            ],
            vec!["S", "d"],
        ),
        (
            "kept written twice, the later line on the path",
            vec![
                m("1", None, "user", "a"),
                m("k", Some("1"), "user", "old"),
                m("2", Some("1"), "assistant", "b"),
                m("k", Some("2"), "user", "new"),
                m("3", Some("k"), "assistant", "e"),
                c("c", "3", "k"),
                m("4", Some("c"), "user", "d"),
            ],
            vec!["S", "new", "e", "d"],
        ),
        (
            "kept written again after the compaction, which its child's parent names",
            vec![
                m("1", None, "user", "a"),
                m("k", Some("1"), "user", "first"),
                m("2", Some("k"), "assistant", "b"),
                c("c", "2", "k"),
                m("4", Some("c"), "user", "d"),
                m("k", Some("1"), "user", "later"),
                m("5", Some("4"), "assistant", "f"),
            ],
            vec!["S", "later", "b", "d", "f"],
        ),
        (
            "kept missing",
            vec![m("1", None, "user", "a"), c("c", "1", "nowhere"), m("4", Some("c"), "user", "d")],
            vec!["S", "d"],
        ),
    ];
    let header = json!({"type": "session", "version": 3, "id": "s", "timestamp": crate::TS, "cwd": "/"});
    let d = tempfile::tempdir().unwrap();
    for (name, entries, want) in cases {
        let file = d.path().join("kept.jsonl");
        let lines: Vec<String> =
            std::iter::once(header.clone()).chain(entries.iter().map(Entry::to_value)).map(|v| v.to_string()).collect();
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
        let pure = arbor_context::build_session_context(&entries, arbor_context::Leaf::Default);
        let texts: Vec<String> = pure.messages.iter().map(crate::text_of).collect();
        assert_eq!(texts, want, "{name}: the pure reading");
        let cache = tempfile::tempdir().unwrap();
        drop(open_indexed(&file, cache.path()));
        for s in [open_full(&file), open_indexed(&file, cache.path())] {
            assert_eq!(session_context(&s).unwrap(), pure, "{name}");
            assert!(printed(&s) == printed(&open_full(&file)), "{name}: printed");
        }
    }
}
