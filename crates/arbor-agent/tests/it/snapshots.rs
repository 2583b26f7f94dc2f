//! Event order and payloads as the hooks see them (ids and times redacted).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arbor_agent::{CompactOptions, NavigateOptions};
use serde_json::{Map, Value};

use crate::mock::MockServer;
use crate::*;

const ID_KEYS: [&str; 9] = [
    "id",
    "parentId",
    "targetId",
    "fromId",
    "firstKeptEntryId",
    "oldLeafId",
    "newLeafId",
    "commonAncestorId",
    "entryId",
];

/// Replaces ids by `<id1>`, `<id2>`… in order of first appearance, and times by `<ts>`.
struct Redactor {
    ids: HashMap<String, String>,
}

impl Redactor {
    fn id(&mut self, id: &str) -> String {
        let n = self.ids.len() + 1;
        self.ids.entry(id.to_owned()).or_insert_with(|| format!("<id{n}>")).clone()
    }

    fn redact(&mut self, v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut out = Map::new();
                for (k, x) in m {
                    let y = match (k.as_str(), x) {
                        (k, Value::String(s)) if ID_KEYS.contains(&k) && s != "root" => Value::String(self.id(s)),
                        ("timestamp", _) => Value::String("<ts>".into()),
                        ("sessionId" | "previousSessionFile", _) => Value::String("<redacted>".into()),
                        _ => self.redact(x),
                    };
                    out.insert(k.clone(), y);
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| self.redact(x)).collect()),
            other => other.clone(),
        }
    }
}

/// One block per event: its type, then its payload as pretty JSON.
fn render(events: &[Value]) -> String {
    let mut r = Redactor { ids: HashMap::new() };
    let mut out = String::new();
    for e in events {
        let mut body = r.redact(e);
        let ty = body["type"].as_str().unwrap_or("?").to_owned();
        if let Value::Object(m) = &mut body {
            m.shift_remove("type");
        }
        out.push_str(&format!("== {ty}\n{}\n", serde_json::to_string_pretty(&body).unwrap()));
    }
    out
}

#[tokio::test]
async fn navigate_compact_and_fork_events() {
    let mock = MockServer::start().await;
    let mut s = mem_session();
    let ids = conversation(&mut s, &[("Fix the bug in read.rs", "Fixed."), ("Now write a test", "Test written.")]);
    let log = Arc::new(Mutex::new(vec![]));
    let mut agent = agent(s, &mock, recorder(&log));

    let opts = NavigateOptions {
        summarize: true,
        custom_instructions: Some("MONKEY".into()),
        label: Some("after the fix".into()),
        ..Default::default()
    };
    agent.navigate_tree(&ids[2], opts).await.unwrap();
    agent.append_message(user("Also run clippy")).unwrap();
    agent.append_message(assistant("Clippy is clean.")).unwrap();
    agent.compact(CompactOptions { keep_recent_tokens: Some(1), ..Default::default() }).await.unwrap();
    agent.fork(&ids[0]).await.unwrap();

    let events = log.lock().unwrap().clone();
    assert_eq!(
        types(&log),
        [
            "session_before_tree",
            "session_tree",
            "session_before_compact",
            "session.compacting",
            "session_compact",
            "session_before_fork",
            "session_fork"
        ]
    );
    insta::assert_snapshot!("events", render(&events));
}
