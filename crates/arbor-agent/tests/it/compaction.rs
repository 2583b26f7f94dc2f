//! Manual compaction (docs/architecture.md, "Compacting"; pi's e2e cases, the #2608 fix).

use std::sync::{Arc, Mutex};

use arbor_agent::hooks::{BeforeCompactResult, CompactingResult, HookCompaction};
use arbor_agent::summarizer::{SUMMARIZATION_PROMPT, TURN_PREFIX_PROMPT, UPDATE_SUMMARIZATION_PROMPT};
use arbor_agent::{
    AgentError, AgentSession, Api, CompactOptions, CompactionAlgorithm, EventName, HookBus, HookConfig, HookResponse,
    ModelInfo,
};
use arbor_context::estimate_tokens;
use arbor_log::EntryKind;
use arbor_tree::{MemoryStore, Session};
use serde_json::Value;

use crate::mock::{MockServer, Reply};
use crate::*;

fn keep(n: u64) -> CompactOptions {
    CompactOptions { keep_recent_tokens: Some(n), ..Default::default() }
}

/// The estimated tokens of the messages of `ids`.
fn tokens(s: &Session, ids: &[String]) -> u64 {
    ids.iter().map(|id| estimate_tokens(&s.get_entry(id).unwrap().unwrap().message().unwrap().message)).sum()
}

fn three_turns(s: &mut Session) -> Vec<String> {
    conversation(
        s,
        &[
            ("Please read src/main.rs", "I read it; it has a main function."),
            ("Now refactor the parser module", "Done: the parser is split in two."),
            ("Add tests for the parser", "Added six tests; all pass."),
        ],
    )
}

#[tokio::test]
async fn manual_compaction_summarizes_and_rebuilds_the_context() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    three_turns(&mut s);
    let log = Arc::new(Mutex::new(vec![]));
    let mut agent = agent(s, &mock, recorder(&log));
    let r = agent.compact(keep(1)).await.unwrap();
    assert!(!r.summary.is_empty());
    assert!(r.tokens_before > 0);
    assert!(!r.from_extension);
    assert_eq!(agent.messages().unwrap()[0]["role"], "compactionSummary");
    assert_eq!(count_type(agent.session(), "compaction"), 1);
    assert_eq!(types(&log), ["session_before_compact", "session.compacting", "session_compact"]);
    assert_eq!(log.lock().unwrap()[2]["fromExtension"], false);
}

#[tokio::test]
async fn a_split_turn_summarizes_history_and_prefix_in_parallel() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    three_turns(&mut s);
    let mut agent = agent(s, &mock, HookBus::new());
    // keepRecentTokens = 1 cuts at the last assistant message: its turn is split.
    let r = agent.compact(keep(1)).await.unwrap();
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    let prefix = reqs.iter().find(|r| r.prompt().ends_with(TURN_PREFIX_PROMPT)).expect("a turn-prefix request");
    let history = reqs.iter().find(|r| r.prompt().ends_with(SUMMARIZATION_PROMPT)).expect("a history request");
    assert_eq!(prefix.body["max_tokens"], 8192);
    assert_eq!(history.body["max_tokens"], 13107);
    assert!(prefix.prompt().starts_with("<conversation>\n[User]: Add tests for the parser\n</conversation>\n\n"));
    assert!(history.prompt().contains("[User]: Please read src/main.rs"));
    assert_eq!(r.summary, "mock summary\n\n---\n\n**Turn Context (split turn):**\n\nmock summary");
    let roles: Vec<&str> = agent.messages().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["compactionSummary", "assistant"]);
}

#[tokio::test]
async fn exactly_one_compaction_entry_is_persisted() {
    let mock = MockServer::start().await;
    let store = MemoryStore::new();
    let mut s = store_session(&store);
    three_turns(&mut s);
    let file = s.session_file().unwrap().to_owned();
    let mut agent = agent(s, &mock, HookBus::new());
    agent.compact(keep(1)).await.unwrap();
    let text = String::from_utf8(store.get(&file).unwrap()).unwrap();
    let compactions: Vec<Value> =
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|v| v["type"] == "compaction").collect();
    assert_eq!(compactions.len(), 1);
    let c = &compactions[0];
    assert!(c["firstKeptEntryId"].is_string());
    assert!(c["tokensBefore"].as_u64().unwrap() > 0);
    assert_eq!(c["fromHook"], false);
    assert_eq!(c["details"], serde_json::json!({"readFiles": [], "modifiedFiles": []}));
}

#[tokio::test]
async fn the_second_compaction_keeps_what_the_first_kept() {
    let mock = MockServer::start().await;
    for (algorithm, keeps_u2) in [(CompactionAlgorithm::Arbor, true), (CompactionAlgorithm::Pi, false)] {
        let mut s = mem_session();
        let first = conversation(&mut s, &[("alpha question", "alpha answer"), ("bravo question", "bravo answer")]);
        let mut opts = agent_opts().with_model(anthropic_model(&mock));
        opts.compaction_algorithm = algorithm;
        let keep_bravo = tokens(&s, &first[2..]);
        let mut agent = AgentSession::new(s, opts);
        // C1 keeps u2/a2 ("bravo").
        let c1 = agent.compact(keep(keep_bravo)).await.unwrap();
        assert_eq!(c1.first_kept_entry_id, first[2]);
        let roles: Vec<&str> = agent.messages().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["compactionSummary", "user", "assistant"]);

        // More work, then C2 with a budget that covers everything.
        let mut s = agent.into_session();
        let later = conversation(&mut s, &[("charlie question", "charlie answer")]);
        let all = tokens(&s, &first[2..]) + tokens(&s, &later);
        let mut opts = agent_opts().with_model(anthropic_model(&mock));
        opts.compaction_algorithm = algorithm;
        let mut agent = AgentSession::new(s, opts);
        let c2 = agent.compact(keep(all)).await.unwrap();
        let texts: Vec<String> = agent
            .messages()
            .unwrap()
            .iter()
            .skip(1)
            .map(|m| m["content"][0]["text"].as_str().unwrap().to_owned())
            .collect();
        if keeps_u2 {
            assert_eq!(c2.first_kept_entry_id, first[2], "{algorithm:?}");
            assert_eq!(texts, ["bravo question", "bravo answer", "charlie question", "charlie answer"]);
        } else {
            // pi v0.58.3: "bravo" is neither kept nor summarized (#2608).
            assert_eq!(c2.first_kept_entry_id, later[0]);
            assert_eq!(texts, ["charlie question", "charlie answer"]);
        }
        // The second summary updates the first.
        let prompt = mock.requests().last().unwrap().prompt();
        assert!(prompt.contains("<previous-summary>\nmock summary\n</previous-summary>"), "{prompt}");
        assert!(prompt.ends_with(UPDATE_SUMMARIZATION_PROMPT), "{prompt}");
    }
}

#[tokio::test]
async fn the_second_compaction_summarizes_what_the_first_kept_when_it_must_cut() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    let first = conversation(&mut s, &[("alpha question", "alpha answer"), ("bravo question", "bravo answer")]);
    let keep_bravo = tokens(&s, &first[2..]);
    let mut agent = agent(s, &mock, HookBus::new());
    agent.compact(keep(keep_bravo)).await.unwrap();
    let mut s = agent.into_session();
    let later = conversation(&mut s, &[("charlie question", "charlie answer")]);
    let keep_charlie = tokens(&s, &later);
    let mut agent = crate::agent(s, &mock, HookBus::new());
    let c2 = agent.compact(keep(keep_charlie)).await.unwrap();
    assert_eq!(c2.first_kept_entry_id, later[0]);
    let prompt = mock.requests().last().unwrap().prompt();
    assert!(
        prompt.starts_with("<conversation>\n[User]: bravo question\n\n[Assistant]: bravo answer\n</conversation>"),
        "the kept entries are summarized, not lost: {prompt}"
    );
}

#[tokio::test]
async fn the_first_compaction_uses_the_initial_prompt_and_custom_focus() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    let ids = three_turns(&mut s);
    let keep_last = tokens(&s, &ids[4..]);
    let mut agent = agent(s, &mock, HookBus::new());
    let opts = CompactOptions { custom_instructions: Some("the parser".into()), keep_recent_tokens: Some(keep_last) };
    let r = agent.compact(opts).await.unwrap();
    assert_eq!(r.first_kept_entry_id, ids[4]);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1, "no split turn: one call");
    let prompt = reqs[0].prompt();
    assert!(prompt.ends_with(&format!("{SUMMARIZATION_PROMPT}\n\nAdditional focus: the parser")), "{prompt}");
    assert!(!prompt.contains("<previous-summary>"));
    assert_eq!(r.summary, "mock summary");
}

#[tokio::test]
async fn reasoning_models_are_asked_for_high_reasoning() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    let ids = three_turns(&mut s);
    let keep_last = tokens(&s, &ids[4..]);
    let model = anthropic_model(&mock).with_reasoning(true);
    let mut agent = AgentSession::new(s, agent_opts().with_model(model));
    agent.compact(keep(keep_last)).await.unwrap();
    let body = &mock.requests()[0].body;
    assert_eq!(body["thinking"], serde_json::json!({"type": "enabled", "budget_tokens": 16384}));
    assert_eq!(body["max_tokens"], 13107 + 16384);

    let mut s = mem_session();
    let ids = three_turns(&mut s);
    let keep_last = tokens(&s, &ids[4..]);
    let model = openai_model(&mock).with_reasoning(true);
    let mut agent = AgentSession::new(s, agent_opts().with_model(model));
    agent.compact(keep(keep_last)).await.unwrap();
    assert_eq!(mock.requests()[1].body["reasoning_effort"], "high");
}

#[tokio::test]
async fn errors_come_in_pi_order_and_write_nothing() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    three_turns(&mut s);
    let before = s.len();
    let mut agent = AgentSession::new(s, agent_opts());
    assert_eq!(agent.compact(keep(1)).await.unwrap_err().to_string(), "No model selected");
    agent.set_model(Some(ModelInfo::new("remote", "m", Api::AnthropicMessages, "https://api.example.invalid")));
    assert_eq!(agent.compact(keep(1)).await.unwrap_err().to_string(), "No API key for remote");
    assert_eq!(agent.session().len(), before);

    agent.set_model(Some(anthropic_model(&mock)));
    agent.compact(keep(1)).await.unwrap();
    assert_eq!(agent.compact(keep(1)).await.unwrap_err().to_string(), "Already compacted");

    let mut empty = crate::agent(mem_session(), &mock, HookBus::new());
    let e = empty.compact(keep(1)).await.unwrap_err();
    assert_eq!(e.to_string(), "Nothing to compact (session too small)");

    mock.set_default(Reply::Status {
        code: 500,
        retry_after: Some("0"),
        body: "{\"error\":{\"message\":\"boom\"}}".into(),
    });
    let mut s = mem_session();
    let ids = three_turns(&mut s);
    let keep_last = tokens(&s, &ids[4..]);
    let mut failing = crate::agent(s, &mock, HookBus::new());
    let e = failing.compact(keep(keep_last)).await.unwrap_err();
    assert!(e.to_string().starts_with("Summarization failed: anthropic: HTTP 500: boom"), "{e}");
    assert_eq!(count_type(failing.session(), "compaction"), 0);
}

#[tokio::test]
async fn a_failing_hook_still_yields_the_default_compaction() {
    let mock = MockServer::start().await;
    let mut bus = HookBus::new();
    let mut failures = bus.subscribe_failures();
    bus.on(EventName::SessionBeforeCompact, "thrower", |_, _| async { Err("boom".into()) });
    let mut s = mem_session();
    three_turns(&mut s);
    let mut agent = agent(s, &mock, bus);
    let r = agent.compact(keep(1)).await.unwrap();
    assert!(!r.from_extension);
    assert_eq!(r.hook_failures.len(), 1);
    assert_eq!(r.hook_failures[0].to_string(), "hook thrower failed on session_before_compact: boom");
    assert_eq!(failures.try_recv().unwrap(), r.hook_failures[0]);
    let EntryKind::Compaction(c) = &agent.session().leaf_entry().unwrap().unwrap().kind else { panic!() };
    assert_eq!(c.from_hook, Some(false));
}

#[tokio::test]
async fn a_hook_that_cancels_rejects_the_compaction() {
    let mock = MockServer::start().await;
    let log = Arc::new(Mutex::new(vec![]));
    let mut bus = recorder(&log);
    bus.on(EventName::SessionBeforeCompact, "canceller", |_, _| async {
        Ok(Some(HookResponse::BeforeCompact(BeforeCompactResult { cancel: Some(true), ..Default::default() })))
    });
    let mut s = mem_session();
    three_turns(&mut s);
    let before = s.len();
    let mut agent = agent(s, &mock, bus);
    let e = agent.compact(keep(1)).await.unwrap_err();
    assert!(matches!(e, AgentError::CompactionCancelled));
    assert_eq!(e.to_string(), "Compaction cancelled");
    assert_eq!(agent.session().len(), before);
    assert_eq!(types(&log), ["session_before_compact"], "no session_compact");
    assert!(mock.requests().is_empty());
    assert!(!agent.is_compacting());
}

#[tokio::test]
async fn a_hook_that_supplies_the_compaction_is_stored_verbatim() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    let ids = three_turns(&mut s);
    let kept = ids[2].clone();
    let mut bus = HookBus::new();
    bus.on(EventName::SessionBeforeCompact, "supplier", move |_, _| {
        let kept = kept.clone();
        async move {
            Ok(Some(HookResponse::BeforeCompact(BeforeCompactResult {
                cancel: None,
                compaction: Some(HookCompaction {
                    summary: "custom summary".into(),
                    first_kept_entry_id: kept,
                    tokens_before: 999,
                    details: Some(serde_json::json!({"custom": true})),
                }),
            })))
        }
    });
    let log = Arc::new(Mutex::new(vec![]));
    add_recorder(&mut bus, &log);
    let mut agent = agent(s, &mock, bus);
    let r = agent.compact(keep(1)).await.unwrap();
    assert_eq!((r.summary.as_str(), r.tokens_before, r.from_extension), ("custom summary", 999, true));
    assert_eq!(r.first_kept_entry_id, ids[2]);
    let EntryKind::Compaction(c) = &agent.session().leaf_entry().unwrap().unwrap().kind else { panic!() };
    assert_eq!(c.summary, "custom summary");
    assert_eq!(c.tokens_before.as_ref().unwrap().as_u64(), Some(999));
    assert_eq!(c.from_hook, Some(true));
    assert!(mock.requests().is_empty());
    assert_eq!(types(&log), ["session_before_compact", "session_compact"], "no session.compacting");
    assert_eq!(log.lock().unwrap()[1]["fromExtension"], true);
}

#[tokio::test]
async fn two_extensions_run_in_order() {
    let mock = MockServer::start().await;
    let order = Arc::new(Mutex::new(vec![]));
    let mut bus = HookBus::new();
    for ext in ["ext1", "ext2"] {
        for (event, tag) in [(EventName::SessionBeforeCompact, "before"), (EventName::SessionCompact, "after")] {
            let order = order.clone();
            bus.on(event, ext, move |_, _| {
                order.lock().unwrap().push(format!("{ext}-{tag}"));
                async { Ok(None) }
            });
        }
    }
    let mut s = mem_session();
    three_turns(&mut s);
    let mut agent = agent(s, &mock, bus);
    agent.compact(keep(1)).await.unwrap();
    assert_eq!(*order.lock().unwrap(), ["ext1-before", "ext2-before", "ext1-after", "ext2-after"]);
}

#[tokio::test]
async fn session_compacting_adds_context_and_replaces_the_prompt() {
    let mock = MockServer::start().await;
    let mut bus = HookBus::new();
    bus.on(EventName::SessionCompacting, "omp", |_, _| async {
        Ok(Some(HookResponse::Compacting(CompactingResult {
            context: Some(vec!["REMEMBER THE MILK".into()]),
            prompt: Some("Write one line.".into()),
            preserve_data: None,
        })))
    });
    let mut s = mem_session();
    let ids = three_turns(&mut s);
    let keep_last = tokens(&s, &ids[4..]);
    let mut agent = agent(s, &mock, bus);
    agent.compact(keep(keep_last)).await.unwrap();
    let prompt = mock.requests()[0].prompt();
    assert!(
        prompt.contains("<additional-context>\nREMEMBER THE MILK\n</additional-context>\n\nWrite one line."),
        "{prompt}"
    );
}

#[tokio::test]
async fn abort_during_compaction_writes_nothing() {
    let mock = MockServer::start().await;
    mock.set_default(Reply::Hang);
    let mut s = mem_session();
    let ids = three_turns(&mut s);
    let keep_last = tokens(&s, &ids[4..]);
    let before = s.len();
    let handle = agent(s, &mock, HookBus::new()).spawn();
    let running = {
        let handle = handle.clone();
        tokio::spawn(async move { handle.compact(keep(keep_last)).await })
    };
    bounded(mock.arrived.notified()).await;
    assert!(handle.is_compacting());
    handle.abort_handle().abort_compaction();
    let e = bounded(running).await.unwrap().unwrap_err();
    assert!(matches!(e, AgentError::CompactionCancelled), "{e}");
    bounded(mock.disconnected.notified()).await;
    let agent = handle.shutdown().await.unwrap();
    assert_eq!(agent.session().len(), before);
    assert!(!agent.is_compacting());
}

#[tokio::test]
async fn the_model_is_restored_from_the_session() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    let ids = three_turns(&mut s);
    let keep_last = tokens(&s, &ids[4..]);
    // The assistant messages name anthropic/claude-test; point anthropic at the mock.
    let mut providers = arbor_agent::ProviderRegistry::builtin();
    assert!(providers.set_base_url("anthropic", &mock.base()));
    let mut opts = agent_opts();
    opts.providers = providers;
    let mut agent = AgentSession::new(s, opts);
    let model = agent.model().unwrap();
    assert_eq!((model.provider.as_str(), model.id.as_str()), ("anthropic", "claude-test"));
    agent.compact(keep(keep_last)).await.unwrap();
    assert_eq!(mock.requests()[0].body["model"], "claude-test");

    // A later model_change on the path wins; an unknown provider is reported, not used.
    let mut s = mem_session();
    three_turns(&mut s);
    s.append_model_change("nowhere", "x").unwrap();
    s.append_message(user("next")).unwrap();
    let agent = AgentSession::new(s, agent_opts());
    assert!(agent.model().is_none());
    assert_eq!(agent.notices(), ["Could not restore model nowhere/x: unknown provider nowhere"]);
}

#[tokio::test]
async fn an_external_command_hook_supplies_or_cancels_the_compaction() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut s = mem_session();
    let ids = three_turns(&mut s);
    let seen = dir.path().join("event.json");
    let supply = script(
        &dir,
        "supply.sh",
        &format!(
            "cat > '{}'\necho '{{\"compaction\": {{\"summary\": \"from a script\", \"firstKeptEntryId\": \"{}\", \"tokensBefore\": 42}}}}'\n",
            seen.display(),
            ids[2]
        ),
    );
    let config =
        HookConfig::from_toml(&format!("[[hooks]]\nevent = \"session_before_compact\"\ncommand = \"sh {supply}\"\n"))
            .unwrap();
    let mut bus = HookBus::new();
    config.register(&mut bus).unwrap();
    let mut agent = agent(s, &mock, bus);
    let r = agent
        .compact(CompactOptions { custom_instructions: Some("focus".into()), keep_recent_tokens: Some(1) })
        .await
        .unwrap();
    assert_eq!((r.summary.as_str(), r.tokens_before, r.from_extension), ("from a script", 42, true));
    assert!(r.hook_failures.is_empty(), "{:?}", r.hook_failures);
    let event: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(event["type"], "session_before_compact");
    assert_eq!(event["customInstructions"], "focus");
    assert_eq!(event["preparation"]["settings"]["keepRecentTokens"], 1);
    assert_eq!(event["branchEntries"].as_array().unwrap().len(), 6);
    assert!(mock.requests().is_empty());

    let mut s = mem_session();
    three_turns(&mut s);
    let config = HookConfig::from_json(
        r#"{"hooks": [{"event": "session_before_compact", "command": "echo '{\"cancel\": true}'"}]}"#,
    )
    .unwrap();
    let mut bus = HookBus::new();
    config.register(&mut bus).unwrap();
    let mut agent = crate::agent(s, &mock, bus);
    let e = agent.compact(keep(1)).await.unwrap_err();
    assert_eq!(e.to_string(), "Compaction cancelled");
}

/// pi's `compaction.test.ts` cases for the pure parts.
mod pure {
    use arbor_agent::compaction::{find_cut_point, should_compact};
    use arbor_agent::CompactionSettings;
    use arbor_log::Entry;
    use serde_json::json;

    use crate::{assistant, user};

    fn entries(messages: &[serde_json::Value]) -> Vec<Entry> {
        messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let parent = if i == 0 { serde_json::Value::Null } else { json!(format!("e{}", i - 1)) };
                Entry::from_value(&json!({"type": "message", "id": format!("e{i}"), "parentId": parent,
                    "timestamp": "2026-01-01T00:00:00.000Z", "message": m}))
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn cut_points() {
        let long = "x".repeat(1000);
        let msgs: Vec<_> = (0..10).flat_map(|_| [user(&long), assistant(&long)]).collect();
        let es = entries(&msgs);
        let refs: Vec<&Entry> = es.iter().collect();
        let cut = find_cut_point(&refs, 0, refs.len(), 2500);
        let role = refs[cut.first_kept_entry_index].message_role().unwrap();
        assert!(role == arbor_log::Role::User || role == arbor_log::Role::Assistant);
        assert_eq!(find_cut_point(&refs, 0, refs.len(), 50_000).first_kept_entry_index, 0, "everything fits");

        let one = entries(&[assistant("hi")]);
        let one: Vec<&Entry> = one.iter().collect();
        assert_eq!(find_cut_point(&one, 0, 1, 1000).first_kept_entry_index, 0);

        // A split turn: u0 a1 u2 a3 a4 a5, the budget reached inside the second turn.
        let es = entries(&[user("a"), assistant("b"), user("c"), assistant(&long), assistant(&long), assistant(&long)]);
        let refs: Vec<&Entry> = es.iter().collect();
        let cut = find_cut_point(&refs, 0, refs.len(), 300);
        assert_eq!(refs[cut.first_kept_entry_index].message_role(), Some(arbor_log::Role::Assistant));
        assert!(cut.is_split_turn);
        assert_eq!(cut.turn_start_index, Some(2));
    }

    #[test]
    fn should_compact_follows_the_reserve() {
        let s = CompactionSettings { reserve_tokens: 10_000, ..Default::default() };
        assert!(should_compact(95_000, 100_000, &s));
        assert!(!should_compact(89_000, 100_000, &s));
        assert!(!should_compact(95_000, 100_000, &CompactionSettings { enabled: false, ..s }));
    }
}
