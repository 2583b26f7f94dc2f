//! Ports of the context parts of pi's `compaction.test.ts` and the context
//! half of its `save-entry.test.ts`. The cut-point
//! and compaction-flow cases belong to arbor-agent.

use arbor_context::{build_context_from_path, build_session_context, calculate_context_tokens, Leaf};
use arbor_log::CounterIds;
use arbor_tree::{OpenMode, Session, SessionOptions};
use serde_json::json;

use crate::{compaction, model_change, msg, roles, thinking};

#[test]
fn calculate_context_tokens_cases() {
    let usage = json!({"input": 1000, "output": 500, "cacheRead": 200, "cacheWrite": 100});
    assert_eq!(calculate_context_tokens(&usage), 1800);
    let zeros = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0});
    assert_eq!(calculate_context_tokens(&zeros), 0);
}

#[test]
fn no_compaction_gives_every_message_and_the_assistant_model() {
    let e = vec![
        msg("1", None, "user", "u1"),
        msg("2", Some("1"), "assistant", "a1"),
        msg("3", Some("2"), "user", "u2"),
        msg("4", Some("3"), "assistant", "a2"),
    ];
    let ctx = build_session_context(&e, Leaf::Default);
    assert_eq!(ctx.messages.len(), 4);
    assert_eq!(ctx.thinking_level, "off");
    assert_eq!(
        ctx.model.as_ref().map(|m| (m.provider.as_str(), m.model_id.as_str())),
        Some(("anthropic", "claude-test"))
    );
}

#[test]
fn single_multiple_and_first_entry_compactions() {
    // single compaction keeping u2: summary, u2, a2, u3, a3
    let single = vec![
        msg("1", None, "user", "u1"),
        msg("2", Some("1"), "assistant", "a1"),
        msg("3", Some("2"), "user", "u2"),
        msg("4", Some("3"), "assistant", "a2"),
        compaction("5", Some("4"), "S", "3"),
        msg("6", Some("5"), "user", "u3"),
        msg("7", Some("6"), "assistant", "a3"),
    ];
    let ctx = build_session_context(&single, Leaf::Default);
    assert_eq!(ctx.messages.len(), 5);
    assert_eq!(ctx.messages[0]["role"], "compactionSummary");

    // multiple compactions, the second keeping u3: summary2, u3, a3, u4, a4
    let multiple = vec![
        msg("1", None, "user", "u1"),
        msg("2", Some("1"), "assistant", "a1"),
        compaction("3", Some("2"), "S1", "1"),
        msg("4", Some("3"), "user", "u2"),
        msg("5", Some("4"), "assistant", "a2"),
        msg("6", Some("5"), "user", "u3"),
        msg("7", Some("6"), "assistant", "a3"),
        compaction("8", Some("7"), "S2", "6"),
        msg("9", Some("8"), "user", "u4"),
        msg("10", Some("9"), "assistant", "a4"),
    ];
    let ctx = build_session_context(&multiple, Leaf::Default);
    assert_eq!(ctx.messages.len(), 5);
    assert_eq!(ctx.messages[0]["summary"], "S2");

    // keeping the first entry: summary, u1, a1, u2, a2
    let first = vec![
        msg("1", None, "user", "u1"),
        msg("2", Some("1"), "assistant", "a1"),
        compaction("3", Some("2"), "S", "1"),
        msg("4", Some("3"), "user", "u2"),
        msg("5", Some("4"), "assistant", "a2"),
    ];
    let ctx = build_session_context(&first, Leaf::Default);
    assert_eq!(roles(&ctx.messages), vec!["compactionSummary", "user", "assistant", "user", "assistant"]);
}

#[test]
fn model_and_thinking_from_the_path() {
    let e = vec![
        msg("1", None, "user", "u"),
        model_change("2", Some("1"), "openai", "gpt-4"),
        msg("3", Some("2"), "assistant", "a"),
        thinking("4", Some("3"), "high"),
    ];
    let ctx = build_session_context(&e, Leaf::Default);
    assert_eq!(ctx.model.as_ref().map(|m| m.provider.as_str()), Some("anthropic"), "the assistant wins");
    assert_eq!(ctx.thinking_level, "high");
}

#[test]
fn large_v1_fixture_parsed_and_migrated() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pi/large-session.jsonl");
    let s = Session::open(&path, OpenMode::ReadOnly, SessionOptions::default().with_ids(CounterIds::new())).unwrap();
    assert!(s.len() > 100);
    assert!(s.entries().map(Result::unwrap).filter(|e| e.message().is_some()).count() > 100);
    let ctx = build_context_from_path(&s.get_branch(None).unwrap());
    assert!(ctx.messages.len() > 100);
    assert!(ctx.model.is_some());
}

#[test]
fn save_entry_custom_entries_stay_out_of_the_context() {
    // 7.6: message, custom entry, message → 3 entries, 2 context messages.
    let mut s = Session::in_memory("/p", SessionOptions::default());
    s.append_message(json!({"role": "user", "content": "hi", "timestamp": 1})).unwrap();
    s.append_custom_entry("my_data", Some(json!({"foo": "bar"}))).unwrap();
    s.append_message(json!({"role": "assistant", "content": [{"type": "text", "text": "yo"}], "provider": "anthropic",
                            "model": "test", "stopReason": "stop", "timestamp": 2}))
        .unwrap();
    assert_eq!(s.len(), 3);
    let ctx = build_context_from_path(&s.get_branch(None).unwrap());
    assert_eq!(ctx.messages.len(), 2);
    // Labels never reach the context either (7.4 case 7).
    let first = s.get_branch(None).unwrap()[0].id.clone();
    s.append_label_change(&first, Some("x")).unwrap();
    assert_eq!(build_context_from_path(&s.get_branch(None).unwrap()).messages.len(), 2);
}
