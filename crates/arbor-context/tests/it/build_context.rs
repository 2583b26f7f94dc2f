//! pi's `test/session-manager/build-context.test.ts`, every case,
//! plus the edge rules of docs/architecture.md, "Building the context" and the omp state.

use arbor_context::plan::{build_from_entries, build_from_path, Leaf};
use arbor_context::{ModelRef, SessionContext};
use arbor_log::Entry;
use serde_json::json;

use crate::{branch_summary, compaction, entry, model_change, msg, roles, text_of, thinking, TS};

fn texts(ctx: &SessionContext) -> Vec<String> {
    ctx.messages.iter().map(text_of).collect()
}

fn anthropic_test() -> Option<ModelRef> {
    Some(ModelRef { provider: "anthropic".into(), model_id: "claude-test".into() })
}

// 1
#[test]
fn empty_entries() {
    let ctx = build_from_entries(&[], Leaf::Default);
    assert!(ctx.messages.is_empty());
    assert_eq!(ctx.thinking_level, "off");
    assert_eq!(ctx.model, None);
    assert_eq!(ctx.to_json(), json!({"messages": [], "thinkingLevel": "off", "model": null}));
}

// 2
#[test]
fn single_user_message() {
    let ctx = build_from_entries(&[msg("1", None, "user", "hello")], Leaf::Default);
    assert_eq!(roles(&ctx.messages), ["user"]);
}

// 3
#[test]
fn simple_conversation() {
    let es = [
        msg("1", None, "user", "hello"),
        msg("2", Some("1"), "assistant", "hi there"),
        msg("3", Some("2"), "user", "how are you"),
        msg("4", Some("3"), "assistant", "great"),
    ];
    let ctx = build_from_entries(&es, Leaf::Default);
    assert_eq!(roles(&ctx.messages), ["user", "assistant", "user", "assistant"]);
}

// 4
#[test]
fn tracks_thinking_level_changes() {
    let es =
        [msg("1", None, "user", "hello"), thinking("2", Some("1"), "high"), msg("3", Some("2"), "assistant", "hi")];
    let ctx = build_from_entries(&es, Leaf::Default);
    assert_eq!(ctx.thinking_level, "high");
    assert_eq!(ctx.messages.len(), 2);
}

// 5
#[test]
fn tracks_model_from_assistant_message() {
    let es = [msg("1", None, "user", "hello"), msg("2", Some("1"), "assistant", "hi")];
    let ctx = build_from_entries(&es, Leaf::Default);
    assert_eq!(ctx.model, anthropic_test());
    assert_eq!(ctx.to_json()["model"], json!({"provider": "anthropic", "modelId": "claude-test"}));
}

// 6
#[test]
fn tracks_model_from_model_change_entry_but_a_later_assistant_wins() {
    let es = [
        msg("1", None, "user", "hello"),
        model_change("2", Some("1"), "openai", "gpt-4"),
        msg("3", Some("2"), "assistant", "hi"),
    ];
    let ctx = build_from_entries(&es, Leaf::Default);
    assert_eq!(ctx.model, anthropic_test());
    // Up to the model change alone, the change is what counts.
    let ctx = build_from_entries(&es, Leaf::Id("2"));
    assert_eq!(ctx.model, Some(ModelRef { provider: "openai".into(), model_id: "gpt-4".into() }));
}

// 7
#[test]
fn includes_summary_before_kept_messages() {
    let es = [
        msg("1", None, "user", "first"),
        msg("2", Some("1"), "assistant", "response1"),
        msg("3", Some("2"), "user", "second"),
        msg("4", Some("3"), "assistant", "response2"),
        compaction("5", Some("4"), "Summary of first two turns", "3"),
        msg("6", Some("5"), "user", "third"),
        msg("7", Some("6"), "assistant", "response3"),
    ];
    let ctx = build_from_entries(&es, Leaf::Default);
    assert_eq!(ctx.messages.len(), 5);
    assert_eq!(ctx.messages[0]["role"], "compactionSummary");
    assert!(ctx.messages[0]["summary"].as_str().unwrap().contains("Summary of first two turns"));
    assert_eq!(texts(&ctx)[1..], ["second", "response2", "third", "response3"]);
    assert_eq!(
        ctx.messages[0],
        json!({"role": "compactionSummary", "summary": "Summary of first two turns", "tokensBefore": 1000,
               "timestamp": 1_735_689_600_000_i64})
    );
}

// 8
#[test]
fn handles_compaction_keeping_from_first_message() {
    let es = [
        msg("1", None, "user", "first"),
        msg("2", Some("1"), "assistant", "response1"),
        compaction("3", Some("2"), "Empty summary", "1"),
        msg("4", Some("3"), "user", "second"),
    ];
    let ctx = build_from_entries(&es, Leaf::Default);
    assert_eq!(ctx.messages.len(), 4);
    assert_eq!(roles(&ctx.messages), ["compactionSummary", "user", "assistant", "user"]);
    assert_eq!(texts(&ctx), ["Empty summary", "first", "response1", "second"]);
}

// 9
#[test]
fn multiple_compactions_uses_latest() {
    let es = [
        msg("1", None, "user", "a"),
        msg("2", Some("1"), "assistant", "b"),
        compaction("3", Some("2"), "First summary", "1"),
        msg("4", Some("3"), "user", "c"),
        msg("5", Some("4"), "assistant", "d"),
        compaction("6", Some("5"), "Second summary", "4"),
        msg("7", Some("6"), "user", "e"),
    ];
    let ctx = build_from_entries(&es, Leaf::Default);
    assert_eq!(ctx.messages.len(), 4);
    assert_eq!(texts(&ctx), ["Second summary", "c", "d", "e"]);
}

// 10
#[test]
fn follows_path_to_specified_leaf() {
    let es = [
        msg("1", None, "user", "start"),
        msg("2", Some("1"), "assistant", "response"),
        msg("3", Some("2"), "user", "branch A"),
        msg("4", Some("2"), "user", "branch B"),
    ];
    let a = build_from_entries(&es, Leaf::Id("3"));
    assert_eq!(a.messages.len(), 3);
    assert_eq!(text_of(&a.messages[2]), "branch A");
    let b = build_from_entries(&es, Leaf::Id("4"));
    assert_eq!(b.messages.len(), 3);
    assert_eq!(text_of(&b.messages[2]), "branch B");
}

// 11
#[test]
fn includes_branch_summary_in_path() {
    let es = [
        msg("1", None, "user", "start"),
        msg("2", Some("1"), "assistant", "response"),
        msg("3", Some("2"), "user", "abandoned path"),
        branch_summary("4", Some("2"), "Summary of abandoned work", "3"),
        msg("5", Some("4"), "user", "new direction"),
    ];
    let ctx = build_from_entries(&es, Leaf::Id("5"));
    assert_eq!(ctx.messages.len(), 4);
    assert_eq!(roles(&ctx.messages), ["user", "assistant", "branchSummary", "user"]);
    assert_eq!(ctx.messages[2]["summary"], "Summary of abandoned work");
    assert_eq!(
        ctx.messages[2],
        json!({"role": "branchSummary", "summary": "Summary of abandoned work", "fromId": "3",
               "timestamp": 1_735_689_600_000_i64})
    );
    assert_eq!(text_of(&ctx.messages[3]), "new direction");
}

// 12
#[test]
fn complex_tree_with_branches_and_compaction() {
    // 1 - 2 - 3 - 4 - C5(keep 3) - 6 - 7      main path
    //          \- 8 - 9                       abandoned
    //          \- BS10 - 11                   came back to 3
    let es = [
        msg("1", None, "user", "start"),
        msg("2", Some("1"), "assistant", "r1"),
        msg("3", Some("2"), "user", "q2"),
        msg("4", Some("3"), "assistant", "r2"),
        compaction("5", Some("4"), "Compacted history", "3"),
        msg("6", Some("5"), "user", "q3"),
        msg("7", Some("6"), "assistant", "r3"),
        msg("8", Some("3"), "user", "wrong path"),
        msg("9", Some("8"), "assistant", "wrong response"),
        branch_summary("10", Some("3"), "Tried wrong approach", "9"),
        msg("11", Some("10"), "user", "better approach"),
    ];
    let at7 = build_from_entries(&es, Leaf::Id("7"));
    assert_eq!(at7.messages.len(), 5);
    assert_eq!(texts(&at7), ["Compacted history", "q2", "r2", "q3", "r3"]);
    assert_eq!(at7.messages[0]["role"], "compactionSummary");
    let at11 = build_from_entries(&es, Leaf::Id("11"));
    assert_eq!(at11.messages.len(), 5);
    assert_eq!(texts(&at11), ["start", "r1", "q2", "Tried wrong approach", "better approach"]);
    assert_eq!(roles(&at11.messages), ["user", "assistant", "user", "branchSummary", "user"]);
    let at9 = build_from_entries(&es, Leaf::Id("9"));
    assert_eq!(texts(&at9), ["start", "r1", "q2", "wrong path", "wrong response"]);
}

// 13
#[test]
fn uses_last_entry_when_leaf_id_not_found() {
    let es = [msg("1", None, "user", "hello"), msg("2", Some("1"), "assistant", "hi")];
    let ctx = build_from_entries(&es, Leaf::Id("nonexistent"));
    assert_eq!(ctx.messages.len(), 2);
    // pi tests `if (leafId)`: an empty id is the same as none.
    assert_eq!(build_from_entries(&es, Leaf::Id("")).messages.len(), 2);
}

// 14
#[test]
fn handles_orphaned_entries_gracefully() {
    let es = [msg("1", None, "user", "hello"), msg("2", Some("missing"), "assistant", "orphan")];
    let ctx = build_from_entries(&es, Leaf::Id("2"));
    assert_eq!(ctx.messages.len(), 1);
    assert_eq!(text_of(&ctx.messages[0]), "orphan");
}

#[test]
fn explicit_null_leaf_is_empty() {
    let es = [msg("1", None, "user", "hello"), thinking("2", Some("1"), "high")];
    assert_eq!(build_from_entries(&es, Leaf::Null), SessionContext::empty());
}

#[test]
fn parent_cycles_terminate() {
    let es = [msg("a", Some("c"), "user", "a"), msg("b", Some("a"), "user", "b"), msg("c", Some("b"), "user", "c")];
    let ctx = build_from_entries(&es, Leaf::Id("c"));
    assert_eq!(texts(&ctx), ["a", "b", "c"]);
    let self_loop = [msg("x", Some("x"), "user", "x")];
    assert_eq!(build_from_entries(&self_loop, Leaf::Default).messages.len(), 1);
}

#[test]
fn later_duplicate_ids_win() {
    let es = [msg("1", None, "user", "old"), msg("2", Some("1"), "assistant", "r"), msg("1", None, "user", "new")];
    let ctx = build_from_entries(&es, Leaf::Id("2"));
    assert_eq!(texts(&ctx), ["new", "r"]);
}

#[test]
fn compaction_whose_kept_id_is_not_on_the_path_keeps_nothing_before_it() {
    let es = [
        msg("1", None, "user", "a"),
        msg("2", Some("1"), "assistant", "b"),
        compaction("3", Some("2"), "S", "elsewhere"),
        msg("4", Some("3"), "user", "c"),
    ];
    assert_eq!(texts(&build_from_entries(&es, Leaf::Default)), ["S", "c"]);
    let v1 = entry(
        json!({"type": "compaction", "id": "3", "parentId": "2", "timestamp": TS, "summary": "S", "tokensBefore": 1}),
    );
    let es = [es[0].clone(), es[1].clone(), v1, es[3].clone()];
    assert_eq!(texts(&build_from_entries(&es, Leaf::Default)), ["S", "c"]);
}

#[test]
fn compactions_on_other_branches_are_ignored() {
    let es = [
        msg("1", None, "user", "a"),
        compaction("2", Some("1"), "S", "1"),
        msg("3", Some("1"), "user", "other branch"),
    ];
    assert_eq!(texts(&build_from_entries(&es, Leaf::Id("3"))), ["a", "other branch"]);
}

#[test]
fn entries_that_are_not_messages_emit_nothing() {
    let es = [
        msg("1", None, "user", "a"),
        entry(
            json!({"type": "custom", "customType": "ext", "data": {"x": 1}, "id": "2", "parentId": "1", "timestamp": TS}),
        ),
        entry(json!({"type": "label", "id": "3", "parentId": "2", "timestamp": TS, "targetId": "1", "label": "l"})),
        entry(json!({"type": "session_info", "id": "4", "parentId": "3", "timestamp": TS, "name": "n"})),
        entry(json!({"type": "future_thing", "id": "5", "parentId": "4", "timestamp": TS})),
        entry(json!({"type": "label", "id": "6", "parentId": "5", "timestamp": TS})),
        branch_summary("7", Some("6"), "", "6"),
        entry(json!({"type": "ttsr_injection", "id": "8", "parentId": "7", "timestamp": TS, "injectedRules": ["r1"]})),
        msg("9", Some("8"), "assistant", "b"),
    ];
    assert_eq!(texts(&build_from_entries(&es, Leaf::Default)), ["a", "b"]);
}

#[test]
fn custom_message_entries_become_custom_messages() {
    let es = [
        entry(json!({"type": "custom_message", "customType": "ext", "content": "hidden", "display": false,
                     "id": "1", "parentId": null, "timestamp": "2025-01-01T00:00:00.500Z"})),
        entry(json!({"type": "custom_message", "customType": "ext", "content": [{"type": "text", "text": "t"}],
                     "display": true, "details": {"a": [1]}, "id": "2", "parentId": "1", "timestamp": "garbage"})),
    ];
    let ctx = build_from_entries(&es, Leaf::Default);
    assert_eq!(
        serde_json::to_value(&ctx.messages).unwrap(),
        json!([
            {"role": "custom", "customType": "ext", "content": "hidden", "display": false, "timestamp": 1_735_689_600_500_i64},
            {"role": "custom", "customType": "ext", "content": [{"type": "text", "text": "t"}], "display": true,
             "details": {"a": [1]}, "timestamp": null}
        ])
    );
}

#[test]
fn thinking_level_null_reads_off_and_omp_model_changes() {
    let es = [
        thinking("1", None, "high"),
        entry(
            json!({"type": "thinking_level_change", "id": "2", "parentId": "1", "timestamp": TS, "thinkingLevel": null}),
        ),
        entry(json!({"type": "model_change", "id": "3", "parentId": "2", "timestamp": TS, "model": "openai/gpt-5"})),
        entry(
            json!({"type": "model_change", "id": "4", "parentId": "3", "timestamp": TS, "model": "x/small", "role": "smol"}),
        ),
        entry(
            json!({"type": "ttsr_injection", "id": "5", "parentId": "4", "timestamp": TS, "injectedRules": ["a", "b"]}),
        ),
        entry(
            json!({"type": "ttsr_injection", "id": "6", "parentId": "5", "timestamp": TS, "injectedRules": ["b", "c"]}),
        ),
        entry(
            json!({"type": "mode_change", "id": "7", "parentId": "6", "timestamp": TS, "mode": "plan", "data": {"k": 1}}),
        ),
    ];
    let ctx = build_from_entries(&es, Leaf::Default);
    assert_eq!(ctx.thinking_level, "off");
    // The smol role does not change the default model.
    assert_eq!(ctx.model, Some(ModelRef { provider: "openai".into(), model_id: "gpt-5".into() }));
    assert_eq!(ctx.models.get("default").map(String::as_str), Some("openai/gpt-5"));
    assert_eq!(ctx.models.get("smol").map(String::as_str), Some("x/small"));
    assert_eq!(ctx.injected_ttsr_rules, ["a", "b", "c"]);
    assert_eq!(ctx.mode.as_deref(), Some("plan"));
    assert_eq!(ctx.mode_data, Some(json!({"k": 1})));
    // None of it leaks into pi's JSON, which carries the level as written.
    assert_eq!(
        ctx.to_json(),
        json!({"messages": [], "thinkingLevel": null,
                                     "model": {"provider": "openai", "modelId": "gpt-5"}})
    );

    let with_assistant = [es[2].clone(), msg("8", Some("3"), "assistant", "hi")];
    let ctx = build_from_entries(&with_assistant, Leaf::Default);
    assert_eq!(ctx.models.get("default").map(String::as_str), Some("anthropic/claude-test"));
}

#[test]
fn from_path_agrees_with_the_pure_function() {
    let es = [
        msg("1", None, "user", "a"),
        msg("2", Some("1"), "assistant", "b"),
        compaction("3", Some("2"), "S", "2"),
        msg("4", Some("3"), "user", "c"),
    ];
    let path: Vec<&Entry> = es.iter().collect();
    assert_eq!(build_from_path(&path), build_from_entries(&es, Leaf::Default));
    assert_eq!(texts(&build_from_path(&path)), ["S", "b", "c"]);
}
