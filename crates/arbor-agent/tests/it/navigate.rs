//! Tree navigation (docs/architecture.md, "Navigating"; pi's e2e cases and more).

use std::sync::{Arc, Mutex};

use arbor_agent::hooks::{BeforeTreeResult, HookSummary};
use arbor_agent::summarizer::{
    BRANCH_SUMMARY_PREAMBLE, BRANCH_SUMMARY_PROMPT, NO_CONTENT_TO_SUMMARIZE, SUMMARIZATION_SYSTEM_PROMPT,
};
use arbor_agent::{AgentError, Api, EventName, HookBus, HookEvent, HookResponse, ModelInfo, NavigateOptions};
use arbor_log::EntryKind;
use arbor_tree::{MemoryStore, Session, LEAF_MARKER_TYPE};
use serde_json::json;

use crate::mock::{MockServer, Reply};
use crate::*;

fn summarize() -> NavigateOptions {
    NavigateOptions { summarize: true, ..Default::default() }
}

/// u1 a1 u2 a2 in memory; returns the session and the four ids.
fn two_turns() -> (Session, Vec<String>) {
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("What is 2+2?", "4"), ("What about 3+3?", "6")]);
    (s, ids)
}

#[tokio::test]
async fn root_user_without_summary_prefills_the_editor_and_resets_the_leaf() {
    let mock = MockServer::start().await;
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, HookBus::new());
    let before = agent.session().len();
    let r = agent.navigate_tree(&ids[0], NavigateOptions::default()).await.unwrap();
    assert_eq!(r.editor_text.as_deref(), Some("What is 2+2?"));
    assert!(!r.cancelled && !r.aborted);
    assert_eq!(agent.session().leaf_id(), None);
    assert_eq!(r.new_leaf_id, None);
    assert_eq!(r.old_leaf_id.as_deref(), Some(ids[3].as_str()));
    assert_eq!(agent.session().len(), before, "no entries are added");
    assert!(agent.messages().unwrap().is_empty());
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn assistant_target_becomes_the_leaf_without_editor_text() {
    let mock = MockServer::start().await;
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, HookBus::new());
    let r = agent.navigate_tree(&ids[1], NavigateOptions::default()).await.unwrap();
    assert_eq!(agent.session().leaf_id(), Some(ids[1].as_str()));
    assert_eq!(r.editor_text, None);
    assert_eq!(agent.messages().unwrap().len(), 2);
}

#[tokio::test]
async fn summarize_at_root_makes_a_root_summary_that_is_the_leaf() {
    let mock = MockServer::start().await;
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, HookBus::new());
    let r = agent.navigate_tree(&ids[0], summarize()).await.unwrap();
    let entry = r.summary_entry.clone().unwrap();
    assert_eq!(entry.parent_id, None);
    assert_eq!(agent.session().leaf_id(), Some(entry.id.as_str()));
    assert_eq!(r.editor_text.as_deref(), Some("What is 2+2?"));
    assert_eq!(r.from_extension, Some(false));
    let EntryKind::BranchSummary(b) = &entry.kind else { panic!("{entry:?}") };
    assert_eq!(b.from_id, "root");
    assert_eq!(b.from_hook, Some(false));
    assert_eq!(b.summary, format!("{BRANCH_SUMMARY_PREAMBLE}mock summary"));
    assert_eq!(b.details, Some(json!({"readFiles": [], "modifiedFiles": []})));
    // The context is the summary alone.
    assert_eq!(agent.messages().unwrap().len(), 1);
    assert_eq!(agent.messages().unwrap()[0]["role"], "branchSummary");

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    let req = &reqs[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.body["max_tokens"], 2048);
    assert_eq!(req.body["stream"], true);
    assert!(req.body.get("thinking").is_none(), "no reasoning for branch summaries");
    assert_eq!(req.system(), SUMMARIZATION_SYSTEM_PROMPT);
    let prompt = req.prompt();
    // The target itself is the common ancestor, so it is not summarized.
    assert!(
        prompt.starts_with(
            "<conversation>\n[Assistant]: 4\n\n[User]: What about 3+3?\n\n[Assistant]: 6\n</conversation>"
        ),
        "{prompt}"
    );
    assert!(prompt.ends_with(&format!("\n</conversation>\n\n{BRANCH_SUMMARY_PROMPT}")), "{prompt}");
}

#[tokio::test]
async fn nested_user_message_summary_hangs_off_its_parent() {
    let mock = MockServer::start().await;
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, HookBus::new());
    let r = agent.navigate_tree(&ids[2], summarize()).await.unwrap();
    let entry = r.summary_entry.unwrap();
    assert_eq!(entry.parent_id.as_deref(), Some(ids[1].as_str()));
    assert_eq!(r.editor_text.as_deref(), Some("What about 3+3?"));
    let children: Vec<String> =
        agent.session().get_children(&ids[1]).unwrap().iter().map(|e| e.entry_type().to_string()).collect();
    assert_eq!(children, ["message", "branch_summary"]);
    // Only what lies below the target on the old path is summarized.
    let prompt = mock.requests()[0].prompt();
    assert!(prompt.starts_with("<conversation>\n[Assistant]: 6\n</conversation>"), "{prompt}");
}

#[tokio::test]
async fn summary_at_an_assistant_entry() {
    let mock = MockServer::start().await;
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, HookBus::new());
    let r = agent.navigate_tree(&ids[1], summarize()).await.unwrap();
    let entry = r.summary_entry.unwrap();
    assert_eq!(entry.parent_id.as_deref(), Some(ids[1].as_str()));
    assert_eq!(agent.session().leaf_id(), Some(entry.id.as_str()));
    assert_eq!(r.editor_text, None);
    let EntryKind::BranchSummary(b) = &entry.kind else { panic!() };
    assert_eq!(b.from_id, ids[1]);
}

#[tokio::test]
async fn abort_during_summarization_cancels_and_writes_nothing() {
    let mock = MockServer::start().await;
    mock.set_default(Reply::Hang);
    let (s, ids) = two_turns();
    let before = s.len();
    let handle = agent(s, &mock, HookBus::new()).spawn();
    assert!(!handle.is_compacting());
    let running = {
        let handle = handle.clone();
        let target = ids[0].clone();
        tokio::spawn(async move { handle.navigate_tree(&target, summarize()).await })
    };
    bounded(mock.arrived.notified()).await;
    assert!(handle.is_compacting(), "isCompacting is true while summarization runs");
    handle.abort_handle().abort_branch_summary();
    let r = bounded(running).await.unwrap().unwrap();
    assert!(r.cancelled && r.aborted);
    assert_eq!(r.summary_entry, None);
    // The HTTP request was really dropped.
    bounded(mock.disconnected.notified()).await;
    assert!(!handle.is_compacting());
    let (len, leaf, summaries) = handle
        .inspect(|a| {
            (a.session().len(), a.session().leaf_id().map(str::to_owned), count_type(a.session(), "branch_summary"))
        })
        .await
        .unwrap();
    assert_eq!((len, leaf.as_deref(), summaries), (before, Some(ids[3].as_str()), 0));
}

#[tokio::test]
async fn no_summary_without_the_option() {
    let mock = MockServer::start().await;
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, HookBus::new());
    let before = agent.session().len();
    agent.navigate_tree(&ids[2], NavigateOptions::default()).await.unwrap();
    assert_eq!(agent.session().len(), before);
    assert_eq!(count_type(agent.session(), "branch_summary"), 0);
    assert_eq!(agent.session().leaf_id(), Some(ids[1].as_str()));
}

#[tokio::test]
async fn the_current_leaf_is_a_no_op_without_events() {
    let mock = MockServer::start().await;
    let (s, ids) = two_turns();
    let log = Arc::new(Mutex::new(vec![]));
    let mut agent = agent(s, &mock, recorder(&log));
    let before = agent.session().len();
    let r = agent.navigate_tree(&ids[3], summarize()).await.unwrap();
    assert!(!r.cancelled);
    assert_eq!(r.new_leaf_id.as_deref(), Some(ids[3].as_str()));
    assert_eq!(agent.session().len(), before);
    assert!(log.lock().unwrap().is_empty());
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn custom_instructions_are_appended_or_replace_the_prompt() {
    let mock = MockServer::start().await;
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, HookBus::new());
    let opts = NavigateOptions { summarize: true, custom_instructions: Some("MONKEY".into()), ..Default::default() };
    agent.navigate_tree(&ids[0], opts).await.unwrap();
    let body = mock.requests()[0].body.to_string();
    assert!(body.contains("Additional focus: MONKEY"), "{body}");
    assert!(mock.requests()[0].prompt().ends_with(&format!("{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: MONKEY")));

    let (s, ids) = two_turns();
    let mut agent = crate::agent(s, &mock, HookBus::new());
    let opts = NavigateOptions {
        summarize: true,
        custom_instructions: Some("Summarize in exactly 3 words".into()),
        replace_instructions: Some(true),
        ..Default::default()
    };
    agent.navigate_tree(&ids[0], opts).await.unwrap();
    let prompt = mock.requests()[1].prompt();
    assert!(prompt.ends_with("</conversation>\n\nSummarize in exactly 3 words"), "{prompt}");
    assert!(!prompt.contains("## Goal"));
}

#[tokio::test]
async fn navigating_between_branches() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("Start", "ok"), ("Main branch continue", "main done")]);
    // A side branch from a1.
    s.branch(&ids[1]).unwrap();
    let side = conversation(&mut s, &[("Side branch", "side done")]);
    let mut agent = agent(s, &mock, HookBus::new());
    let r = agent.navigate_tree(&ids[2], summarize()).await.unwrap();
    assert_eq!(r.editor_text.as_deref(), Some("Main branch continue"));
    let entry = r.summary_entry.unwrap();
    let EntryKind::BranchSummary(b) = &entry.kind else { panic!() };
    assert!(!b.summary.is_empty());
    assert_eq!(entry.parent_id.as_deref(), Some(ids[1].as_str()));
    let prompt = mock.requests()[0].prompt();
    assert!(prompt.contains("[User]: Side branch") && !prompt.contains("Main branch continue"), "{prompt}");
    assert_eq!(r.old_leaf_id.as_deref(), Some(side[1].as_str()));
    // Context: u1, a1, the summary.
    let roles: Vec<&str> = agent.messages().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "branchSummary"]);
}

#[tokio::test]
async fn without_a_model_summarizing_fails_at_once_and_writes_nothing() {
    let mut bus = HookBus::new();
    // Even a hook that would supply the summary does not help (pi checks first).
    bus.on(EventName::SessionBeforeTree, "supplier", |_, _| async {
        Ok(Some(HookResponse::BeforeTree(BeforeTreeResult {
            summary: Some(HookSummary { summary: "from hook".into(), details: None }),
            ..Default::default()
        })))
    });
    let (s, ids) = two_turns();
    let before = s.len();
    let mut agent = arbor_agent::AgentSession::new(s, agent_opts().with_hooks(bus));
    assert!(agent.model().is_none(), "the assistant's provider has no key here");
    let e = agent.navigate_tree(&ids[0], summarize()).await.unwrap_err();
    assert_eq!(e.to_string(), "No model available for summarization");
    assert_eq!(agent.session().len(), before);
    assert_eq!(agent.session().leaf_id(), Some(ids[3].as_str()));
    assert!(!agent.is_compacting());
}

#[tokio::test]
async fn unknown_target_and_missing_key() {
    let mock = MockServer::start().await;
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, HookBus::new());
    let e = agent.navigate_tree("nope", NavigateOptions::default()).await.unwrap_err();
    assert_eq!(e.to_string(), "Entry nope not found");

    agent.set_model(Some(ModelInfo::new("remote", "m", Api::OpenAiCompletions, "https://api.example.invalid/v1")));
    let before = agent.session().len();
    let e = agent.navigate_tree(&ids[0], summarize()).await.unwrap_err();
    assert_eq!(e.to_string(), "No API key for remote");
    assert!(matches!(e, AgentError::NoApiKey { ref env_var, .. } if env_var == "REMOTE_API_KEY"));
    assert_eq!(agent.session().len(), before);
    assert_eq!(agent.session().leaf_id(), Some(ids[3].as_str()));
    assert!(!agent.is_compacting());
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn a_model_error_fails_the_navigation_and_writes_nothing() {
    let mock = MockServer::start().await;
    mock.set_default(Reply::Status {
        code: 400,
        retry_after: None,
        body: r#"{"error":{"message":"bad request body"}}"#.into(),
    });
    let (s, ids) = two_turns();
    let before = s.len();
    let mut agent = agent(s, &mock, HookBus::new());
    let e = agent.navigate_tree(&ids[0], summarize()).await.unwrap_err();
    let text = e.to_string();
    assert!(text.contains("anthropic") && text.contains("HTTP 400") && text.contains("bad request body"), "{text}");
    assert_eq!(agent.session().len(), before);
    assert_eq!(mock.requests().len(), 1, "400 is not retried");
}

#[tokio::test]
async fn a_hook_that_cancels_changes_nothing_and_clears_the_abort_state() {
    let mock = MockServer::start().await;
    let mut bus = HookBus::new();
    bus.on(EventName::SessionBeforeTree, "canceller", |_, _| async {
        Ok(Some(HookResponse::BeforeTree(BeforeTreeResult { cancel: Some(true), ..Default::default() })))
    });
    let (s, ids) = two_turns();
    let before = s.len();
    let mut agent = agent(s, &mock, bus);
    let r = agent.navigate_tree(&ids[0], summarize()).await.unwrap();
    assert!(r.cancelled && !r.aborted);
    assert_eq!(agent.session().len(), before);
    assert_eq!(agent.session().leaf_id(), Some(ids[3].as_str()));
    assert!(!agent.is_compacting(), "pi leaves isCompacting set here; Arbor clears it");
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn a_before_tree_hook_sees_the_abandoned_branch_even_without_a_summary() {
    let mock = MockServer::start().await;
    // The abandoned ids and the common ancestor the hook was shown.
    type Seen = Option<(Vec<String>, Option<String>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let mut bus = HookBus::new();
    let record = seen.clone();
    bus.on(EventName::SessionBeforeTree, "watcher", move |event, _| {
        if let HookEvent::BeforeTree(p) = &*event {
            let ids = p.entries_to_summarize.iter().map(|e| e.id.clone()).collect();
            *record.lock().unwrap() = Some((ids, p.common_ancestor_id.clone()));
        }
        async { Ok(None) }
    });
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, bus);
    agent.navigate_tree(&ids[1], NavigateOptions::default()).await.unwrap();
    let got = seen.lock().unwrap().clone();
    assert_eq!(got, Some((vec![ids[2].clone(), ids[3].clone()], Some(ids[1].clone()))));
}

#[tokio::test]
async fn a_hook_summary_is_used_only_when_a_summary_was_asked_for() {
    let mock = MockServer::start().await;
    let supplier = || {
        let mut bus = HookBus::new();
        bus.on(EventName::SessionBeforeTree, "supplier", |_, _| async {
            Ok(Some(HookResponse::BeforeTree(BeforeTreeResult {
                summary: Some(HookSummary { summary: "hook summary".into(), details: Some(json!({"k": 1})) }),
                ..Default::default()
            })))
        });
        bus
    };
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, supplier());
    let r = agent.navigate_tree(&ids[1], summarize()).await.unwrap();
    let EntryKind::BranchSummary(b) = &r.summary_entry.as_ref().unwrap().kind else { panic!() };
    assert_eq!(
        (b.summary.as_str(), b.from_hook, b.details.clone()),
        ("hook summary", Some(true), Some(json!({"k": 1})))
    );
    assert_eq!(r.from_extension, Some(true));
    assert!(mock.requests().is_empty(), "the built-in summarizer did not run");

    let (s, ids) = two_turns();
    let mut agent = crate::agent(s, &mock, supplier());
    let r = agent.navigate_tree(&ids[1], NavigateOptions::default()).await.unwrap();
    assert_eq!(r.summary_entry, None);
    assert_eq!(r.from_extension, None);
    assert_eq!(count_type(agent.session(), "branch_summary"), 0);
}

#[tokio::test]
async fn hook_overrides_of_instructions_and_label() {
    let mock = MockServer::start().await;
    let mut bus = HookBus::new();
    bus.on(EventName::SessionBeforeTree, "first", |_, _| async {
        Ok(Some(HookResponse::BeforeTree(BeforeTreeResult {
            custom_instructions: Some(Some("IGNORED".into())),
            ..Default::default()
        })))
    });
    // The last non-empty result wins.
    bus.on(EventName::SessionBeforeTree, "second", |e: Arc<HookEvent>, _| async move {
        let HookEvent::BeforeTree(p) = &*e else { panic!() };
        assert_eq!(p.custom_instructions.as_deref(), Some("MONKEY"));
        Ok(Some(HookResponse::BeforeTree(BeforeTreeResult {
            custom_instructions: Some(Some("BANANA".into())),
            label: Some(Some("checkpoint".into())),
            ..Default::default()
        })))
    });
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, bus);
    let opts = NavigateOptions { summarize: true, custom_instructions: Some("MONKEY".into()), ..Default::default() };
    let r = agent.navigate_tree(&ids[2], opts).await.unwrap();
    let prompt = mock.requests()[0].prompt();
    assert!(prompt.ends_with("Additional focus: BANANA"), "{prompt}");
    let summary_id = r.summary_entry.unwrap().id;
    // The label entry targets the summary and becomes the leaf.
    let leaf = agent.session().leaf_entry().unwrap().unwrap().clone();
    let EntryKind::Label(l) = &leaf.kind else { panic!("{leaf:?}") };
    assert_eq!(
        (l.target_id.as_str(), l.label.as_ref().and_then(|v| v.as_str())),
        (summary_id.as_str(), Some("checkpoint"))
    );
    assert_eq!(leaf.parent_id.as_deref(), Some(summary_id.as_str()));
    assert_eq!(r.new_leaf_id.as_deref(), Some(leaf.id.as_str()));
    assert_eq!(agent.session().get_label(&summary_id).unwrap(), Some("checkpoint"));
}

#[tokio::test]
async fn a_label_without_a_summary_targets_the_selected_entry() {
    let mock = MockServer::start().await;
    let (s, ids) = two_turns();
    let mut agent = agent(s, &mock, HookBus::new());
    let opts = NavigateOptions { label: Some("retry here".into()), ..Default::default() };
    let r = agent.navigate_tree(&ids[2], opts).await.unwrap();
    let leaf = agent.session().leaf_entry().unwrap().unwrap().clone();
    let EntryKind::Label(l) = &leaf.kind else { panic!() };
    assert_eq!(l.target_id, ids[2], "the selected user message, not the new leaf");
    assert_eq!(leaf.parent_id.as_deref(), Some(ids[1].as_str()));
    assert_eq!(r.new_leaf_id.as_deref(), Some(leaf.id.as_str()));
    assert_eq!(r.editor_text.as_deref(), Some("What about 3+3?"));
}

#[tokio::test]
async fn a_custom_message_target_works_like_a_user_message() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("hi", "hello")]);
    let custom = s
        .append_custom_message_entry(
            "note",
            json!([{"type": "text", "text": "part one, "}, {"type": "text", "text": "part two"}]),
            true,
            None,
        )
        .unwrap();
    conversation(&mut s, &[("more", "sure")]);
    let mut agent = agent(s, &mock, HookBus::new());
    let r = agent.navigate_tree(&custom, NavigateOptions::default()).await.unwrap();
    assert_eq!(r.editor_text.as_deref(), Some("part one, part two"));
    assert_eq!(agent.session().leaf_id(), Some(ids[1].as_str()));
}

#[tokio::test]
async fn nothing_to_summarize_stores_the_literal_without_calling_the_model() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("hi", "hello")]);
    // Only settings were added after a1: the abandoned entries have no messages.
    s.append_thinking_level_change("high").unwrap();
    s.append_model_change("anthropic", "other").unwrap();
    let mut agent = agent(s, &mock, HookBus::new());
    let r = agent.navigate_tree(&ids[1], summarize()).await.unwrap();
    let EntryKind::BranchSummary(b) = &r.summary_entry.unwrap().kind else { panic!() };
    assert_eq!(b.summary, NO_CONTENT_TO_SUMMARIZE);
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn a_persistent_move_is_durable_and_resumes_after_reopening() {
    let mock = MockServer::start().await;
    let store = MemoryStore::new();
    let mut s = store_session(&store);
    let ids = conversation(&mut s, &[("one", "1"), ("two", "2")]);
    let file = s.session_file().unwrap().to_owned();
    let mut agent = agent(s, &mock, HookBus::new());
    let r = agent.navigate_tree(&ids[1], NavigateOptions::default()).await.unwrap();
    assert_eq!(r.new_leaf_id.as_deref(), Some(ids[1].as_str()));
    // A hidden marker child of a1 is now the last entry, so pi and Arbor resume at a1.
    let marker = agent.session().leaf_entry().unwrap().unwrap().clone();
    let EntryKind::Custom(c) = &marker.kind else { panic!("{marker:?}") };
    assert_eq!(c.custom_type, LEAF_MARKER_TYPE);
    assert_eq!(marker.parent_id.as_deref(), Some(ids[1].as_str()));
    let context = agent.messages().unwrap().to_vec();
    drop(agent);
    let reopened = Session::open(&file, arbor_tree::OpenMode::ReadOnly, session_opts().with_store(store)).unwrap();
    let again = arbor_context::build_context_from_path(&reopened.get_branch(None).unwrap()).messages;
    assert_eq!(again, context);
    assert_eq!(again.len(), 2);
}

#[tokio::test]
async fn the_openai_api_serves_summaries_too() {
    let mock = MockServer::start().await;
    let (s, ids) = two_turns();
    let mut agent = arbor_agent::AgentSession::new(s, agent_opts().with_model(openai_model(&mock)));
    let r = agent.navigate_tree(&ids[0], summarize()).await.unwrap();
    let EntryKind::BranchSummary(b) = &r.summary_entry.unwrap().kind else { panic!() };
    assert_eq!(b.summary, format!("{BRANCH_SUMMARY_PREAMBLE}mock summary"));
    let req = &mock.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.body["max_tokens"], 2048);
    assert_eq!(req.body["messages"][0]["role"], "system");
}

#[tokio::test]
async fn a_leaf_marker_stands_for_its_parent() {
    let mock = MockServer::start().await;
    let store = MemoryStore::new();
    let mut s = store_session(&store);
    let ids = conversation(&mut s, &[("one", "1"), ("two", "2")]);
    let mut agent = agent(s, &mock, HookBus::new());
    agent.navigate_tree(&ids[1], NavigateOptions::default()).await.unwrap();
    let after_first = agent.session().len();
    assert_eq!(agent.logical_leaf_id().unwrap().as_deref(), Some(ids[1].as_str()));
    // Navigating to where we logically are is a no-op: no second marker.
    let r = agent.navigate_tree(&ids[1], summarize()).await.unwrap();
    assert!(!r.cancelled && r.summary_entry.is_none());
    assert_eq!(agent.session().len(), after_first);
    // Going down to a2 from there abandons nothing (the marker is not on the way): no summary.
    let r = agent.navigate_tree(&ids[3], summarize()).await.unwrap();
    assert_eq!(r.old_leaf_id.as_deref(), Some(ids[1].as_str()));
    assert_eq!(r.summary_entry, None);
    assert_eq!(
        agent.session().leaf_id(),
        agent.logical_leaf_id().unwrap().as_deref().map(|_| agent.session().leaf_id().unwrap())
    );
    assert_eq!(agent.logical_leaf_id().unwrap().as_deref(), Some(ids[3].as_str()));
    assert!(mock.requests().is_empty());
}

/// A store whose appends fail once `fail` is set.
#[derive(Debug, Clone)]
struct FailingStore {
    inner: MemoryStore,
    fail: Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Debug)]
struct FailingAppend {
    inner: Box<dyn arbor_tree::AppendHandle>,
    fail: Arc<std::sync::atomic::AtomicBool>,
}

impl arbor_tree::AppendHandle for FailingAppend {
    fn append(&mut self, bytes: &[u8]) -> Result<(), arbor_tree::TreeError> {
        if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
            let e = std::io::Error::other("disk full");
            return Err(arbor_tree::TreeError::Log(arbor_log::LogError::io("/sessions/x.jsonl", e)));
        }
        self.inner.append(bytes)
    }
}

impl arbor_tree::Store for FailingStore {
    fn exists(&self, path: &std::path::Path) -> Result<bool, arbor_tree::TreeError> {
        self.inner.exists(path)
    }
    fn read_from(
        &self,
        path: &std::path::Path,
        offset: u64,
    ) -> Result<Option<Box<dyn std::io::Read + Send>>, arbor_tree::TreeError> {
        self.inner.read_from(path, offset)
    }
    fn open_append(
        &self,
        path: &std::path::Path,
        durability: arbor_log::Durability,
    ) -> Result<(Box<dyn arbor_tree::AppendHandle>, Option<arbor_log::TailRepair>), arbor_tree::TreeError> {
        let (inner, repair) = self.inner.open_append(path, durability)?;
        Ok((Box::new(FailingAppend { inner, fail: self.fail.clone() }), repair))
    }
    fn rewrite(&self, path: &std::path::Path, bytes: &[u8]) -> Result<(), arbor_tree::TreeError> {
        self.inner.rewrite(path, bytes)
    }
    fn backup(&self, path: &std::path::Path, what: &str) -> Result<std::path::PathBuf, arbor_tree::TreeError> {
        self.inner.backup(path, what)
    }
    fn lock(&self, path: &std::path::Path) -> Result<Box<dyn arbor_tree::WriteLock>, arbor_tree::TreeError> {
        self.inner.lock(path)
    }
    fn list(&self, dir: &std::path::Path) -> Result<Vec<arbor_tree::StoredFile>, arbor_tree::TreeError> {
        self.inner.list(dir)
    }
    fn list_dirs(&self, dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>, arbor_tree::TreeError> {
        self.inner.list_dirs(dir)
    }
    fn create_dir_all(&self, dir: &std::path::Path) -> Result<(), arbor_tree::TreeError> {
        self.inner.create_dir_all(dir)
    }
}

#[tokio::test]
async fn a_write_failure_is_remembered_and_reported_to_every_later_caller() {
    let mock = MockServer::start().await;
    let store = FailingStore { inner: MemoryStore::new(), fail: Arc::default() };
    let opts = arbor_tree::SessionOptions {
        session_dir: Some("/sessions".into()),
        ..session_opts().with_store(store.clone())
    };
    let mut s = Session::create("/work/project", opts).unwrap();
    let ids = conversation(&mut s, &[("one", "1"), ("two", "2")]);
    let handle = agent(s, &mock, HookBus::new()).spawn();
    store.fail.store(true, std::sync::atomic::Ordering::SeqCst);
    let e = handle.navigate_tree(&ids[1], summarize()).await.unwrap_err();
    assert!(e.to_string().contains("disk full"), "{e}");
    // Every later change is refused with the same cause, before any model call.
    let calls = mock.requests().len();
    for e in [
        handle.navigate_tree(&ids[0], NavigateOptions::default()).await.unwrap_err(),
        handle.compact(Default::default()).await.unwrap_err(),
        handle.fork(&ids[2]).await.unwrap_err(),
    ] {
        assert!(matches!(e, AgentError::WriteFailed(ref m) if m.contains("disk full")), "{e}");
    }
    assert_eq!(mock.requests().len(), calls);
    let failure = handle.inspect(|a| a.write_failure().map(str::to_owned)).await.unwrap();
    assert!(failure.unwrap().contains("disk full"));
}
