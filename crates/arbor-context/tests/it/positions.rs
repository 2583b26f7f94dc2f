//! `plan_context` from a session's heads, decoding only what it asks for,
//! gives the context of the whole path, for every leaf of every fixture
//! session; and it asks only for what it must.

use arbor_context::{
    branch_summary_message, build_context_from_entries, build_context_from_path, compaction_summary_message,
    custom_message, plan_context, ModelRef, PathHead, SessionContext,
};
use arbor_log::{Entry, EntryKind, EntryType, Role};
use arbor_tree::{OpenMode, Session, SessionOptions};
use serde_json::{json, Value};

use arbor_test_support::jsonl_under;

#[test]
fn the_plan_builds_the_same_context_at_every_leaf() {
    let files = jsonl_under(&arbor_test_support::fixtures());
    let mut compared = 0;
    for p in files {
        let Ok(s) = Session::open(&p, OpenMode::ReadOnly, SessionOptions::default()) else { continue };
        // Every leaf of a small file; a spread of leaves of a large one.
        for leaf in s.positions().step_by((s.len() / 150).max(1)) {
            let Some(id) = s.id_at(leaf) else { continue };
            let idx = s.branch_positions(Some(&id));
            let full: Vec<&Entry> = idx.iter().map(|&i| s.entry_at(i).unwrap().unwrap()).collect();
            let ids: Vec<_> = idx.iter().map(|&i| s.id_at(i).unwrap()).collect();
            let heads: Vec<PathHead> = idx
                .iter()
                .zip(&ids)
                .map(|(&i, id)| PathHead {
                    id,
                    entry_type: s.entry_type_at(i).unwrap().clone(),
                    role: s.role_at(i).cloned(),
                })
                .collect();
            let asked = std::cell::RefCell::new(vec![]);
            let plan = plan_context(&heads, |ps| {
                asked.borrow_mut().extend_from_slice(ps);
                ps.iter().map(|&k| s.decode_at(idx[k]).unwrap()).collect()
            });
            // Asked: what the context reads, and of the messages only the last assistant one.
            let asked = asked.into_inner();
            let messages = asked.iter().filter(|&&k| heads[k].entry_type == EntryType::Message).count();
            assert!(messages <= 1, "{} at {id}: {messages} messages decoded", p.display());
            assert!(asked.iter().all(|&k| !matches!(
                heads[k].entry_type,
                EntryType::Custom | EntryType::Label | EntryType::SessionInfo
            )));
            // The message steps are message entries, in path order.
            let ps: Vec<usize> = plan.message_positions().collect();
            assert!(
                ps.windows(2).all(|w| w[0] < w[1]) && ps.iter().all(|&k| heads[k].entry_type == EntryType::Message)
            );
            let whole = build_context_from_path(&full);
            assert_eq!(whole, spec_context(&full), "{} at {id} (spec)", p.display());
            let planned = plan.into_context(|k| full[k].message().map(|m| m.message.clone()));
            assert_eq!(planned, whole, "{} at {id}", p.display());
            let owned: Vec<Entry> = idx.iter().map(|&i| s.decode_at(i).unwrap().unwrap()).collect();
            assert_eq!(build_context_from_entries(owned), whole, "{} at {id} (owned)", p.display());
            compared += 1;
        }
    }
    assert!(compared > 50, "{compared} leaves compared");
}

/// An object of the fields that are present.
fn present(fields: &[(&str, Option<&Value>)]) -> Value {
    Value::Object(fields.iter().filter_map(|(k, v)| v.map(|v| ((*k).to_owned(), v.clone()))).collect())
}

/// Spec 4.1 steps 3–5 read literally, over every decoded entry of the path:
/// the oracle the planned context is checked against.
fn spec_context(path: &[&Entry]) -> SessionContext {
    let mut ctx = SessionContext::empty();
    let mut compaction = None;
    for (i, e) in path.iter().enumerate() {
        match &e.kind {
            EntryKind::ThinkingLevelChange(t) => {
                ctx.thinking_level = t.level().unwrap_or("off").into();
                ctx.thinking_level_value = t.thinking_level.clone();
            }
            EntryKind::ModelChange(m) => {
                let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).unwrap_or("").to_owned();
                if m.provider.is_none() && m.model_id.is_none() && m.model.is_some() {
                    if let Some((provider, model_id)) = m.default_model() {
                        ctx.model_value = json!({"provider": provider, "modelId": model_id});
                        ctx.model = Some(ModelRef { provider, model_id });
                    }
                } else {
                    ctx.model = Some(ModelRef { provider: text(&m.provider), model_id: text(&m.model_id) });
                    ctx.model_value = present(&[("provider", m.provider.as_ref()), ("modelId", m.model_id.as_ref())]);
                }
                let (role, model) = match &m.model {
                    Some(model) => (m.role.clone().unwrap_or("default".into()), model.clone()),
                    None => ("default".into(), format!("{}/{}", text(&m.provider), text(&m.model_id))),
                };
                ctx.models.insert(role, model);
            }
            EntryKind::Message(m) if m.role() == Some(Role::Assistant) => {
                let f = |k: &str| m.message.get(k).and_then(|v| v.as_str()).unwrap_or("").to_owned();
                ctx.models.insert("default".into(), format!("{}/{}", f("provider"), f("model")));
                ctx.model = Some(ModelRef { provider: f("provider"), model_id: f("model") });
                ctx.model_value =
                    present(&[("provider", m.message.get("provider")), ("modelId", m.message.get("model"))]);
            }
            EntryKind::Compaction(c) => compaction = Some((i, c)),
            EntryKind::TtsrInjection(t) => {
                for r in &t.injected_rules {
                    if !ctx.injected_ttsr_rules.contains(r) {
                        ctx.injected_ttsr_rules.push(r.clone());
                    }
                }
            }
            EntryKind::ModeChange(m) => (ctx.mode, ctx.mode_data) = (Some(m.mode.clone()), m.data.clone()),
            _ => {}
        }
    }
    let emit = |e: &Entry, out: &mut Vec<serde_json::Value>| match &e.kind {
        EntryKind::Message(m) => out.push(m.message.clone()),
        EntryKind::CustomMessage(c) => out.push(custom_message(c, &e.timestamp)),
        EntryKind::BranchSummary(b) if !b.summary.is_empty() => out.push(branch_summary_message(b, &e.timestamp)),
        _ => {}
    };
    let mut out = vec![];
    match compaction {
        None => path.iter().for_each(|e| emit(e, &mut out)),
        Some((k, c)) => {
            out.push(compaction_summary_message(c, &path[k].timestamp));
            let first = c.first_kept_entry_id.as_deref();
            if let Some(start) = path[..k].iter().position(|e| Some(e.id.as_str()) == first) {
                path[start..k].iter().for_each(|e| emit(e, &mut out));
            }
            path[k + 1..].iter().for_each(|e| emit(e, &mut out));
        }
    }
    ctx.messages = out;
    ctx
}
