//! Fork before a user message (docs/architecture.md, "Forking before a user message"; pi's e2e cases).

use std::sync::{Arc, Mutex};

use arbor_agent::hooks::BeforeForkResult;
use arbor_agent::{EventName, HookBus, HookResponse};
use arbor_log::Entry;
use arbor_tree::MemoryStore;

use crate::mock::MockServer;
use crate::*;

#[tokio::test]
async fn forking_from_the_single_first_message_starts_an_empty_session() {
    let mock = MockServer::start().await;
    let store = MemoryStore::new();
    let mut s = store_session(&store);
    let ids = conversation(&mut s, &[("Say hello", "hello")]);
    let old_file = s.session_file().unwrap().to_owned();
    let forkable: Vec<String> = s.user_messages_for_forking().unwrap().into_iter().map(|(_, t)| t).collect();
    assert_eq!(forkable, ["Say hello"]);
    let log = Arc::new(Mutex::new(vec![]));
    let mut agent = agent(s, &mock, recorder(&log));
    let r = agent.fork(&ids[0]).await.unwrap();
    assert_eq!(r.selected_text, "Say hello");
    assert!(!r.cancelled);
    assert_eq!(agent.messages().unwrap().len(), 0);
    let path = r.path.expect("the session file path is set");
    assert!(store.get(&path).is_none(), "the file does not exist yet");
    assert_eq!(agent.session().session_file(), Some(path.as_path()));
    assert_eq!(agent.session().header().parent_session.as_deref(), Some(old_file.to_string_lossy().as_ref()));
    assert_eq!(types(&log), ["session_before_fork", "session_fork"]);
    let events = log.lock().unwrap().clone();
    assert_eq!(events[0]["entryId"], ids[0].as_str());
    assert_eq!(events[1]["previousSessionFile"], old_file.to_string_lossy().as_ref());
}

#[tokio::test]
async fn in_memory_forks_have_no_file() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("Say hello", "hello")]);
    assert_eq!(s.session_file(), None);
    let mut agent = agent(s, &mock, HookBus::new());
    let r = agent.fork(&ids[0]).await.unwrap();
    assert_eq!(r.path, None);
    assert_eq!(agent.session().session_file(), None);
    assert_eq!(agent.messages().unwrap().len(), 0);
}

#[tokio::test]
async fn forking_from_the_second_of_three_prompts_keeps_the_first_turn() {
    let mock = MockServer::start().await;
    let store = MemoryStore::new();
    let mut s = store_session(&store);
    let ids = conversation(&mut s, &[("Say one", "one"), ("Say two", "two"), ("Say three", "three")]);
    let mut agent = agent(s, &mock, HookBus::new());
    let r = agent.fork(&ids[2]).await.unwrap();
    assert_eq!(r.selected_text, "Say two");
    let roles: Vec<&str> = agent.messages().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant"]);
    let path = r.path.unwrap();
    let text = String::from_utf8(store.get(&path).expect("written: the path holds an assistant message")).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    let ids_in_new: Vec<String> = agent.session().entries().map(Result::unwrap).map(|e: &Entry| e.id.clone()).collect();
    assert_eq!(ids_in_new, ids[..2]);
}

#[tokio::test]
async fn only_user_messages_can_be_forked_from() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("a", "b")]);
    let mut agent = agent(s, &mock, HookBus::new());
    for id in [ids[1].as_str(), "missing"] {
        let e = agent.fork(id).await.unwrap_err();
        assert_eq!(e.to_string(), "Invalid entry ID for forking");
    }
}

#[tokio::test]
async fn hooks_cancel_or_skip_the_restore_and_omp_names_work() {
    let mock = MockServer::start().await;
    let mut bus = HookBus::new();
    bus.on(EventName::parse("session_before_branch").unwrap(), "omp", |_, _| async {
        Ok(Some(HookResponse::BeforeFork(BeforeForkResult { cancel: Some(true), ..Default::default() })))
    });
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("one", "1"), ("two", "2")]);
    let before = s.len();
    let mut agent = agent(s, &mock, bus);
    let r = agent.fork(&ids[2]).await.unwrap();
    assert!(r.cancelled);
    assert_eq!(r.selected_text, "two");
    assert_eq!(agent.session().len(), before);

    let mut bus = HookBus::new();
    bus.on(EventName::SessionBeforeFork, "skip", |_, _| async {
        Ok(Some(HookResponse::BeforeFork(BeforeForkResult {
            skip_conversation_restore: Some(true),
            ..Default::default()
        })))
    });
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("one", "1"), ("two", "2")]);
    let mut agent = crate::agent(s, &mock, bus);
    let r = agent.fork(&ids[2]).await.unwrap();
    assert!(!r.cancelled);
    assert_eq!(agent.session().len(), 2, "forked");
    assert_eq!(agent.messages().unwrap().len(), 4, "but the messages were not restored");
}
