//! The hook bus: runner semantics (docs/hooks.md) and external command hooks.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_agent::hooks::{BeforeForkEvent, BeforeForkResult, BeforeTreeResult};
use arbor_agent::{CommandHook, EventName, HookBus, HookConfig, HookEvent, HookResponse, NavigateOptions};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::mock::MockServer;
use crate::*;

fn fork_event() -> HookEvent {
    HookEvent::BeforeFork(BeforeForkEvent { entry_id: "abc".into() })
}

fn skip(v: bool) -> Option<HookResponse> {
    Some(HookResponse::BeforeFork(BeforeForkResult { cancel: None, skip_conversation_restore: Some(v) }))
}

#[tokio::test]
async fn the_last_result_wins_and_a_cancel_stops_the_rest() {
    let ran = Arc::new(Mutex::new(vec![]));
    let mut bus = HookBus::new();
    for (name, answer) in [("a", skip(true)), ("b", None), ("c", skip(false))] {
        let ran = ran.clone();
        bus.on(EventName::SessionBeforeFork, name, move |_, _| {
            ran.lock().unwrap().push(name);
            let answer = answer.clone();
            async move { Ok(answer) }
        });
    }
    let out = bus.emit(fork_event(), &CancellationToken::new()).await;
    assert_eq!(out.response, skip(false));
    assert_eq!(*ran.lock().unwrap(), ["a", "b", "c"]);

    let mut bus = HookBus::new();
    let ran = Arc::new(Mutex::new(vec![]));
    for (name, cancel) in [("first", true), ("never", false)] {
        let ran = ran.clone();
        bus.on(EventName::SessionBeforeFork, name, move |_, _| {
            ran.lock().unwrap().push(name);
            async move {
                Ok(Some(HookResponse::BeforeFork(BeforeForkResult { cancel: Some(cancel), ..Default::default() })))
            }
        });
    }
    let out = bus.emit(fork_event(), &CancellationToken::new()).await;
    assert!(out.response.unwrap().is_cancel());
    assert_eq!(*ran.lock().unwrap(), ["first"]);
}

#[tokio::test]
async fn failures_are_reported_and_the_flow_goes_on() {
    let mut bus = HookBus::new();
    bus.on(EventName::SessionBeforeFork, "errs", |_, _| async { Err("nope".into()) });
    bus.on(EventName::SessionBeforeFork, "panics", |_, _| async { panic!("kaboom") });
    bus.on(EventName::SessionBeforeFork, "wrong-kind", |_, _| async {
        Ok(Some(HookResponse::BeforeTree(BeforeTreeResult::default())))
    });
    bus.on(EventName::SessionBeforeFork, "good", |_, _| async { Ok(skip(true)) });
    // Other events' handlers do not run.
    bus.on(EventName::SessionTree, "other", |_, _| async { panic!("must not run") });
    let out = bus.emit(fork_event(), &CancellationToken::new()).await;
    assert_eq!(out.response, skip(true));
    let failures: Vec<String> = out.failures.iter().map(ToString::to_string).collect();
    assert_eq!(
        failures,
        [
            "hook errs failed on session_before_fork: nope",
            "hook panics failed on session_before_fork: panicked: kaboom",
            "hook wrong-kind failed on session_before_fork: returned a result for session_before_tree to session_before_fork",
        ]
    );
}

#[tokio::test]
async fn notifications_ignore_results() {
    let mut bus = HookBus::new();
    bus.on(EventName::SessionFork, "answers", |_, _| async { Ok(skip(true)) });
    let out = bus
        .emit(HookEvent::Fork(arbor_agent::hooks::ForkEvent { previous_session_file: None }), &CancellationToken::new())
        .await;
    assert_eq!(out.response, None);
    assert!(out.failures.is_empty());
}

async fn run(hook: CommandHook, event: HookEvent) -> Result<Option<HookResponse>, String> {
    use arbor_agent::Hook;
    hook.handle(Arc::new(event), CancellationToken::new()).await.map_err(|e| e.to_string())
}

#[tokio::test]
async fn command_hooks_read_the_event_and_answer_json() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen.json");
    let cmd = format!("cat > '{}'; echo '{{\"skipConversationRestore\": true}}'", seen.display());
    let answer = run(CommandHook::new("session_before_branch", &cmd), fork_event()).await.unwrap();
    assert_eq!(answer, skip(true));
    let sent: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    // The command sees the name it was configured under (an omp alias here).
    assert_eq!(sent, serde_json::json!({"type": "session_before_branch", "entryId": "abc"}));

    // Empty output is no answer; the event name is in the environment.
    let answer =
        run(CommandHook::new("session_before_fork", "test \"$ARBOR_HOOK_EVENT\" = session_before_fork"), fork_event())
            .await;
    assert_eq!(answer, Ok(None));
}

#[tokio::test]
async fn command_hook_failures_are_reported() {
    let e = run(CommandHook::new("session_before_fork", "echo oops >&2; exit 3"), fork_event()).await.unwrap_err();
    assert!(e.starts_with("exited with exit status: 3") && e.ends_with("stderr: oops"), "{e}");

    let e = run(CommandHook::new("session_before_fork", "echo not json"), fork_event()).await.unwrap_err();
    assert!(e.starts_with("stdout is not JSON") && e.ends_with(": not json"), "{e}");

    let e = run(CommandHook::new("session_before_fork", "echo '{\"cancle\": true}'"), fork_event()).await.unwrap_err();
    assert!(e.starts_with("stdout is not a session_before_fork result: unknown field `cancle`"), "{e}");

    let slow =
        CommandHook { timeout: Duration::from_millis(100), ..CommandHook::new("session_before_fork", "sleep 20") };
    let e = run(slow, fork_event()).await.unwrap_err();
    assert_eq!(e, "timed out after 100 ms and was killed");

    // A notification's output is not read.
    let out = run(
        CommandHook::new("session_fork", "echo whatever"),
        HookEvent::Fork(arbor_agent::hooks::ForkEvent { previous_session_file: None }),
    )
    .await;
    assert_eq!(out, Ok(None));
}

#[test]
fn configs_parse_and_validate() {
    let toml = r#"
timeout_ms = 5000

[[hooks]]
event = "session_before_tree"
command = "./summarize.sh"
timeout_ms = 60000
cwd = "hooks"
env = { MODE = "short" }

[[hooks]]
event = "session_branch"
command = "logger forked"
"#;
    let mut config = HookConfig::from_toml(toml).unwrap();
    config.base_dir = Some("/etc/arbor".into());
    let hooks = config.command_hooks().unwrap();
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[0].0, EventName::SessionBeforeTree);
    assert_eq!(hooks[0].1.timeout, Duration::from_secs(60));
    assert_eq!(hooks[0].1.cwd.as_deref(), Some(std::path::Path::new("/etc/arbor/hooks")));
    assert_eq!(hooks[0].1.env.get("MODE").map(String::as_str), Some("short"));
    assert_eq!(hooks[1].0, EventName::SessionFork);
    assert_eq!(hooks[1].1.timeout, Duration::from_secs(5));

    let json = r#"{"hooks": [{"event": "session.compacting", "command": "x"}]}"#;
    assert_eq!(HookConfig::from_json(json).unwrap().command_hooks().unwrap()[0].0, EventName::SessionCompacting);

    let e = HookConfig::from_toml("[[hooks]]\nevent = \"session_start\"\ncommand = \"x\"\n")
        .unwrap()
        .command_hooks()
        .unwrap_err();
    assert!(e.to_string().starts_with("hooks config: hook 1: unknown event \"session_start\""), "{e}");
    let e = HookConfig::from_toml("[[hooks]]\nevent = \"session_tree\"\ncommand = \" \"\n")
        .unwrap()
        .command_hooks()
        .unwrap_err();
    assert_eq!(e.to_string(), "hooks config: hook 1: empty command");
    assert!(HookConfig::from_toml("[[hooks]]\nevnt = \"session_tree\"\n").is_err());
}

#[tokio::test]
async fn an_external_hook_supplies_or_cancels_a_tree_summary() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("tree.json");
    let body = format!(
        "cat > '{}'\nprintf '%s' '{{\"summary\": {{\"summary\": \"script summary\", \"details\": {{\"by\": \"sh\"}}}}, \"label\": \"from-script\"}}'\n",
        seen.display()
    );
    let path = script(&dir, "tree.sh", &body);
    let config =
        HookConfig::from_toml(&format!("[[hooks]]\nevent = \"session_before_tree\"\ncommand = \"sh {path}\"\n"))
            .unwrap();
    let mut bus = HookBus::new();
    config.register(&mut bus).unwrap();
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("one", "1"), ("two", "2")]);
    let mut agent = agent(s, &mock, bus);
    let r = agent.navigate_tree(&ids[1], NavigateOptions { summarize: true, ..Default::default() }).await.unwrap();
    assert!(r.hook_failures.is_empty(), "{:?}", r.hook_failures);
    let entry = r.summary_entry.unwrap();
    let arbor_log::EntryKind::BranchSummary(b) = &entry.kind else { panic!() };
    assert_eq!((b.summary.as_str(), b.from_hook), ("script summary", Some(true)));
    assert_eq!(agent.session().get_label(&entry.id).unwrap(), Some("from-script"));
    assert!(mock.requests().is_empty());
    let sent: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(sent["type"], "session_before_tree");
    assert_eq!(sent["preparation"]["targetId"], ids[1].as_str());
    assert_eq!(sent["preparation"]["commonAncestorId"], ids[1].as_str());
    assert_eq!(sent["preparation"]["entriesToSummarize"].as_array().unwrap().len(), 2);

    // A failing script is reported and the built-in summarizer runs instead.
    let config = HookConfig::from_toml("[[hooks]]\nevent = \"session_before_tree\"\ncommand = \"exit 1\"\n").unwrap();
    let mut bus = HookBus::new();
    config.register(&mut bus).unwrap();
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("one", "1"), ("two", "2")]);
    let mut agent = crate::agent(s, &mock, bus);
    let r = agent.navigate_tree(&ids[1], NavigateOptions { summarize: true, ..Default::default() }).await.unwrap();
    assert_eq!(r.hook_failures.len(), 1);
    assert_eq!(r.hook_failures[0].hook, "`exit 1`");
    assert!(r.summary_entry.is_some());
    assert_eq!(mock.requests().len(), 1);

    // A cancelling script.
    let config = HookConfig::from_toml(
        "[[hooks]]\nevent = \"session_before_tree\"\ncommand = \"echo '{\\\"cancel\\\": true}'\"\n",
    )
    .unwrap();
    let mut bus = HookBus::new();
    config.register(&mut bus).unwrap();
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("one", "1"), ("two", "2")]);
    let before = s.len();
    let mut agent = crate::agent(s, &mock, bus);
    let r = agent.navigate_tree(&ids[1], NavigateOptions { summarize: true, ..Default::default() }).await.unwrap();
    assert!(r.cancelled && !r.aborted);
    assert_eq!(agent.session().len(), before);
}
