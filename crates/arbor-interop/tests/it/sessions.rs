//! Sessions the page tests read, written on the spot: a chat with tools,
//! errors, aborts and hostile text, and a session of many forks.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// Text that would run script if a page let it.
pub const HOSTILE: &str = "<script>window.__pwned=1</script> <img src=x onerror=\"window.__pwned=2\"> \
[click](javascript:window.__pwned=3) <svg onload=\"window.__pwned=4\"><circle r=1></circle></svg> \
<div style=\"background:url(javascript:window.__pwned=5)\">css</div> <a href=\"jav&#x09;ascript:window.__pwned=6\">tab</a> \
<iframe srcdoc=\"<script>parent.__pwned=7</script>\"></iframe> </script><script>window.__pwned=8</script>";

/// The error a failed request left.
pub const HTTP_500: &str = "500 Internal Server Error: upstream model unavailable (request req_7f3a)";

struct Log {
    out: String,
    n: u32,
}

impl Log {
    fn entry(&mut self, parent: Option<&str>, body: Value) -> String {
        self.n += 1;
        let id = format!("{:08x}", 0xa000_0000u32 + self.n);
        let mut e = json!({"id": id, "parentId": parent, "timestamp": format!("2026-04-01T10:{:02}:{:02}.000Z", self.n / 60 % 60, self.n % 60)});
        for (k, v) in body.as_object().unwrap() {
            e[k] = v.clone();
        }
        writeln!(self.out, "{e}").unwrap();
        id
    }
    fn message(&mut self, parent: Option<&str>, message: Value) -> String {
        self.entry(parent, json!({"type": "message", "message": message}))
    }
    fn user(&mut self, parent: Option<&str>, text: &str) -> String {
        self.message(parent, json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}))
    }
    fn reply(&mut self, parent: Option<&str>, content: Value, stop: &str, error: Option<&str>) -> String {
        let mut m = json!({"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
            "model": "claude-sonnet-4-5", "stopReason": stop, "timestamp": 2,
            "usage": {"input": 1000, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1100,
                "cost": {"input": 0.003, "output": 0.0015, "cacheRead": 0, "cacheWrite": 0, "total": 0.0045}}});
        if let Some(e) = error {
            m["errorMessage"] = json!(e);
        }
        self.message(parent, m)
    }
    fn result(&mut self, parent: &str, call: &str, tool: &str, text: &str, error: bool) -> String {
        self.message(
            Some(parent),
            json!({"role": "toolResult", "toolCallId": call, "toolName": tool,
                "content": [{"type": "text", "text": text}], "isError": error, "timestamp": 3}),
        )
    }
}

fn write(dir: &Path, name: &str, log: &Log) -> PathBuf {
    let path = dir.join(name);
    let header = json!({"type": "session", "version": 3, "id": format!("5e55{:04}-0000-4000-8000-000000000001", log.n % 10000),
        "timestamp": "2026-04-01T10:00:00.000Z", "cwd": "/home/secret-user/private-project"});
    std::fs::write(&path, format!("{header}\n{}", log.out)).unwrap();
    path
}

/// A chat with a bash call, a read, an edit, a write, a failed tool, an
/// HTTP 500, two aborts, hostile text in every field a page shows, an
/// image, labels, Arbor's bookkeeping and a second branch. Returns the file
/// and the ids worth looking at: `[error reply, abort, edit call, leaf, side branch]`.
pub fn rich(dir: &Path) -> (PathBuf, [String; 5]) {
    let mut l = Log { out: String::new(), n: 0 };
    let root = l.entry(None, json!({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"}));
    let u1 = l.user(Some(&root), "Fix the **parser** and run `cargo test`.");
    let a1 = l.reply(Some(&u1), json!([
        {"type": "thinking", "thinking": "The parser drops the last line."},
        {"type": "text", "text": "Let me look."},
        {"type": "toolCall", "id": "call_bash1", "name": "bash", "arguments": {"command": "cargo test -p parser 2>&1 | tail -n 5"}}
    ]), "toolUse", None);
    let r1 = l.result(
        &a1,
        "call_bash1",
        "bash",
        "test result: FAILED. 1 passed; 1 failed\nerror: test failed, to rerun pass `--lib`",
        true,
    );
    let a2 = l.reply(Some(&r1), json!([
        {"type": "toolCall", "id": "call_read1", "name": "read", "arguments": {"path": "src/parse.rs", "offset": 10, "limit": 20}}
    ]), "toolUse", None);
    let r2 = l.result(
        &a2,
        "call_read1",
        "read",
        "fn parse(s: &str) -> Vec<Line> {\n    s.lines().take(s.lines().count() - 1).collect()\n}",
        false,
    );
    let a3 = l.reply(
        Some(&r2),
        json!([
            {"type": "toolCall", "id": "call_edit1", "name": "edit", "arguments": {"path": "src/parse.rs",
                "oldText": "fn parse(s: &str) -> Vec<Line> {\n    s.lines().take(s.lines().count() - 1).collect()\n}",
                "newText": "fn parse(s: &str) -> Vec<Line> {\n    s.lines().collect()\n}"}}
        ]),
        "toolUse",
        None,
    );
    let r3 = l.result(&a3, "call_edit1", "edit", "Successfully replaced text in src/parse.rs.", false);
    let err = l.reply(Some(&r3), json!([]), "error", Some(HTTP_500));
    let u2 = l.user(Some(&err), "Try again.");
    let abort =
        l.reply(Some(&u2), json!([{"type": "text", "text": "All tests pa"}]), "aborted", Some("Request was aborted"));
    let u3 = l.user(Some(&abort), &format!("Hostile: {HOSTILE}"));
    let a4 = l.reply(Some(&u3), json!([
        {"type": "text", "text": format!("Quoting it back: {HOSTILE}\n\n```html\n{HOSTILE}\n```")},
        {"type": "toolCall", "id": "call_write1", "name": "write", "arguments": {"path": "notes.html", "content": HOSTILE}}
    ]), "toolUse", None);
    let r4 = l.result(&a4, "call_write1", "write", HOSTILE, false);
    let a5 = l.reply(
        Some(&r4),
        json!([{"type": "text", "text": "Here is a picture."}, {"type": "image", "mimeType": "image/png",
        "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="}]),
        "stop",
        None,
    );
    l.entry(Some(&a5), json!({"type": "label", "targetId": a3, "label": "the fix"}));
    let leaf =
        l.reply(Some(&a5), json!([{"type": "text", "text": "Done:\n\n| a | b |\n|---|---|\n| 1 | 2 |"}]), "stop", None);
    // A branch from before the error: it aborted too.
    let side_u = l.user(Some(&r3), "Instead, explain the fix.");
    let side = l.reply(Some(&side_u), json!([]), "aborted", None);
    l.entry(Some(&side), json!({"type": "custom", "customType": "arbor.leaf", "data": {"leaf": leaf}}));
    // Back to the leaf: the last line names it.
    l.entry(Some(&leaf), json!({"type": "custom", "customType": "arbor.leaf", "data": {}}));
    let path = write(dir, "rich.jsonl", &l);
    (path, [err, abort, a3, leaf, side])
}

/// A session of `leaves` branches of about `per` entries each, forking off
/// each other at every depth (like a long real session that was rewound
/// many times): the first branch runs on, each later one starts at a point
/// of an earlier one.
pub fn forks(dir: &Path, leaves: usize, per: usize) -> PathBuf {
    let mut l = Log { out: String::new(), n: 0 };
    let mut points: Vec<String> = Vec::new();
    let mut parent: Option<String> = None;
    for b in 0..leaves {
        if b > 0 {
            parent = Some(points[(b * 7919) % points.len()].clone());
        }
        for t in 0..per / 2 {
            let u = l.user(parent.as_deref(), &format!("Branch {b}, turn {t}: try approach {b}.{t} on the parser"));
            let a = l.reply(Some(&u), json!([{"type": "text", "text": format!("Approach {b}.{t}: **done**, with `code` and a list:\n\n- one\n- two")}]), "stop", None);
            points.push(a.clone());
            parent = Some(a);
        }
    }
    write(dir, &format!("forks-{leaves}.jsonl"), &l)
}
