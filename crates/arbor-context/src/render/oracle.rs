//! The transcript as it was written before it was read from the JSON text
//! (`Value` trees all the way): the oracle the tests hold the transcript
//! to, byte for byte, on every fixture and on made-up messages of every shape.

use serde_json::Value;

use arbor_log::{content_text, MessageView, Role};

use super::entry::{format_tool_call, normalize};
use crate::context::SessionContext;
use crate::js;
use crate::llm::convert_message;

const WIDTH: usize = 160;

fn clip(s: &str, n: usize) -> String {
    let s = normalize(s);
    if s.chars().count() <= n {
        return s;
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn blocks(m: &Value) -> &[Value] {
    m.get("content").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn block_type(b: &Value) -> Option<&str> {
    b.get("type").and_then(Value::as_str)
}

fn line_for(m: &Value, out: &mut Vec<String>) {
    let s = |k: &str| m.get(k).and_then(Value::as_str);
    let Some(role) = MessageView::new(m).role() else {
        out.push(format!("?: {}", clip(&content_text(m.get("content"), " "), WIDTH)));
        return;
    };
    let text = content_text(m.get("content"), " ");
    match role {
        Role::Assistant => {
            let thinking: usize = blocks(m)
                .iter()
                .filter(|b| block_type(b) == Some("thinking"))
                .filter_map(|b| b.get("thinking").and_then(Value::as_str))
                .map(|t| t.chars().count())
                .sum();
            let mut head = format!("assistant: {}", clip(&text, WIDTH));
            if text.trim().is_empty() {
                head = match s("stopReason") {
                    Some("aborted") => "assistant: (aborted)".into(),
                    Some("error") => format!("assistant: (error) {}", clip(s("errorMessage").unwrap_or(""), WIDTH)),
                    _ => "assistant:".into(),
                };
            }
            if thinking > 0 {
                head.push_str(&format!("  [thinking: {thinking} chars]"));
            }
            out.push(head);
            for b in blocks(m).iter().filter(|b| block_type(b) == Some("toolCall")) {
                let name = b.get("name").and_then(Value::as_str).unwrap_or("tool");
                let args = b.get("arguments").cloned().unwrap_or(Value::Null);
                out.push(format!("  → {}", format_tool_call(name, &args, None)));
            }
        }
        Role::ToolResult => {
            let name = s("toolName").unwrap_or("tool");
            let err = if m.get("isError").and_then(Value::as_bool) == Some(true) { " (error)" } else { "" };
            let n = text.lines().count();
            out.push(format!("  ← {name}{err}: {} ({n} lines)", clip(&text, WIDTH - 20)));
        }
        Role::BashExecution => out.push(format!("bash: $ {}", clip(s("command").unwrap_or(""), WIDTH))),
        Role::Custom => {
            out.push(format!("[{}]: {}", s("customType").unwrap_or(Role::Custom.as_str()), clip(&text, WIDTH)))
        }
        Role::BranchSummary => out.push(format!("[branch summary]: {}", clip(s("summary").unwrap_or(""), WIDTH))),
        Role::CompactionSummary => {
            let before = m.get("tokensBefore").and_then(Value::as_f64).unwrap_or(0.0);
            out.push(format!("[compaction, {before} tokens before]: {}", clip(s("summary").unwrap_or(""), WIDTH)));
        }
        Role::User | Role::HookMessage | Role::Developer | Role::Other(_) => {
            out.push(format!("{role}: {}", clip(&text, WIDTH)))
        }
    }
}

fn str_len(v: Option<&Value>) -> usize {
    v.and_then(Value::as_str).map_or(0, |s| s.encode_utf16().count())
}

fn content_chars(content: Option<&Value>, image_chars: usize) -> usize {
    if let Some(Value::String(s)) = content {
        return s.encode_utf16().count();
    }
    let blocks = content.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    blocks
        .iter()
        .map(|b| match block_type(b) {
            Some("text") => str_len(b.get("text")),
            Some("image") => image_chars,
            _ => 0,
        })
        .sum()
}

pub(crate) fn estimate_tokens(m: &Value) -> u64 {
    let Some(role) = MessageView::new(m).role() else { return 0 };
    let chars = match role {
        Role::User => content_chars(m.get("content"), 0),
        Role::Assistant => blocks(m)
            .iter()
            .map(|b| match block_type(b) {
                Some("text") => str_len(b.get("text")),
                Some("thinking") => str_len(b.get("thinking")),
                Some("toolCall") => {
                    str_len(b.get("name")) + b.get("arguments").map_or(0, |a| js::stringify(a).encode_utf16().count())
                }
                _ => 0,
            })
            .sum(),
        Role::Custom | Role::ToolResult => content_chars(m.get("content"), 4800),
        Role::BashExecution => str_len(m.get("command")) + str_len(m.get("output")),
        Role::BranchSummary | Role::CompactionSummary => str_len(m.get("summary")),
        Role::HookMessage | Role::Developer | Role::Other(_) => 0,
    };
    chars.div_ceil(4) as u64
}

pub(crate) fn usage_tokens(m: &Value) -> Option<u64> {
    if MessageView::new(m).role() != Some(Role::Assistant) {
        return None;
    }
    if matches!(m.get("stopReason").and_then(Value::as_str), Some("aborted" | "error")) {
        return None;
    }
    let usage = m.get("usage").filter(|u| js::truthy(Some(u)))?;
    let n = |k: &str| usage.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let total = n("totalTokens");
    let tokens = if total != 0.0 { total } else { n("input") + n("output") + n("cacheRead") + n("cacheWrite") };
    Some(tokens.max(0.0) as u64)
}

/// The tokens the footer shows: the last fresh usage plus the estimates after it.
fn tokens(messages: &[Value]) -> u64 {
    let ts = |m: &Value| m.get("timestamp").and_then(Value::as_f64);
    let compacted_at =
        messages.first().filter(|m| MessageView::new(m).role() == Some(Role::CompactionSummary)).and_then(&ts);
    let fresh = |m: &Value| compacted_at.is_none_or(|at| ts(m).is_some_and(|t| t > at));
    let last =
        messages.iter().enumerate().rev().find_map(|(i, m)| usage_tokens(m).filter(|_| fresh(m)).map(|u| (i, u)));
    let (usage, from) = last.map_or((0, 0), |(i, u)| (u, i + 1));
    messages[from..].iter().map(estimate_tokens).fold(usage, u64::saturating_add)
}

/// The transcript of `messages` with the footer of `settings`.
pub(crate) fn transcript(messages: &[Value], settings: &SessionContext, llm: bool) -> String {
    let mut lines = vec![];
    let mut shown = 0;
    for m in messages {
        let converted = if llm { convert_message(m) } else { Some(m.clone()) };
        if let Some(c) = converted {
            shown += 1;
            line_for(&c, &mut lines);
        }
    }
    let model = settings.model.as_ref().map_or_else(|| "(none)".into(), |m| format!("{}/{}", m.provider, m.model_id));
    let footer = format!(
        "-- {shown} messages, model {model}, thinking {}, ~{} tokens",
        settings.thinking_level,
        tokens(messages)
    );
    lines.into_iter().chain(std::iter::once(footer)).map(|l| l + "\n").collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write as _;
    use std::path::Path;

    use arbor_tree::{OpenMode, Session, SessionOptions};

    use crate::parts::{stored_parts, Parts};
    use crate::render::{write_plan_transcript, write_transcript};
    use crate::{plan_session_context, session_context};

    /// Read-only: fully read (no index), or through an index in `cache` (written on the first open).
    fn open(path: &Path, cache: Option<&Path>) -> Option<Session> {
        let opts = SessionOptions { index_dir: cache.map(Path::to_owned), index_min_bytes: 0, ..Default::default() };
        Session::open(path, OpenMode::ReadOnly, opts).ok()
    }

    /// Checks the transcripts of `path` at a spread of `leaves` leaves, with
    /// and without the mapping for the model, against the oracle; returns how many.
    fn check_file(path: &Path, leaves: usize) -> usize {
        let cache = tempfile::tempdir().unwrap();
        drop(open(path, Some(cache.path())));
        let mut checked = 0;
        for dir in [None, Some(cache.path())] {
            let Some(mut s) = open(path, dir) else { return 0 };
            let ids: Vec<Option<String>> = std::iter::once(None)
                .chain(s.positions().step_by((s.len() / leaves).max(1)).map(|i| s.id_at(i).map(|id| id.to_string())))
                .collect();
            for id in ids {
                if let Some(id) = &id {
                    s.branch(id).unwrap();
                }
                let ctx = session_context(&s).unwrap();
                for llm in [false, true] {
                    let want = transcript(&ctx.messages, &ctx, llm);
                    let mut whole = vec![];
                    write_transcript(&mut whole, &ctx, llm).unwrap();
                    let mut batched = vec![];
                    let checked =
                        write_plan_transcript(&s, &plan_session_context(&s).unwrap(), &mut batched, llm).unwrap();
                    assert_eq!(checked, crate::Checked::Written);
                    let at = format!("{} at {id:?} (llm {llm}, index {})", path.display(), dir.is_some());
                    assert_eq!(String::from_utf8(whole).unwrap(), want, "{at}: the whole context's");
                    assert_eq!(String::from_utf8(batched).unwrap(), want, "{at}: the plan's");
                }
                for m in &ctx.messages {
                    assert_eq!(crate::estimate_tokens(m), estimate_tokens(m), "{m}");
                    assert_eq!(Parts::of_value(m).usable_usage(), usage_tokens(m), "{m}");
                }
                checked += 1;
            }
        }
        checked
    }

    #[test]
    fn the_transcript_is_the_oracles_on_every_fixture() {
        let files = arbor_test_support::jsonl_under(&arbor_test_support::fixtures());
        let checked: usize = files.iter().map(|f| check_file(f, 12)).sum();
        assert!(files.len() > 40 && checked > 500, "{} files, {checked} leaves", files.len());
    }

    /// Messages of every shape the transcript and the token estimate read,
    /// as the JSON text of a `message` entry's `message` (or of the entry's
    /// tail when it starts with `!`).
    const MESSAGES: &[&str] = &[
        r#"{"role":"user","content":"a\nb\t\"q\" \\ \u00e9 \ud83d\ude00 \u001b[0m \/ caf\u00e9","timestamp":1}"#,
        r#"{"role":"user","content":[{"type":"text","text":"one"},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":" two\n"}]}"#,
        r#"{"role":"user","content":"   \n\t padded and long: ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé 😀😀😀 \t\n "}"#,
        r#"{"role":"user","content":"exactly 160: 0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567"}"#,
        r#"{"role":"user","content":"161 chars: 01234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901"}"#,
        r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hmm 😀\nmore"},{"type":"text","text":"Reading."},{"type":"toolCall","id":"t1","name":"read","arguments":{"path":"/home/u/a.rs","offset":3,"limit":10}},{"type":"toolCall","id":"t2","name":"bash","arguments":{"command":"cargo test --workspace --all-targets -- --nocapture 2>&1 | tail -n 50 && echo done"}},{"type":"toolCall","id":"t3","name":"mystery","arguments":{"k":[1,2.5,-0,1e2],"s":"é"}},{"type":"toolCall","id":"t4","name":"write","arguments":null},{"type":"toolCall","id":"t5"},{"type":"toolCall","name":"grep","arguments":{"pattern":"fn main","path":"src"}},{"type":"toolCall","name":"ls","arguments":{}},{"type":"toolCall","name":"edit","arguments":"not an object"}],"provider":"anthropic","model":"m","usage":{"input":10,"output":5,"cacheRead":2,"cacheWrite":1,"totalTokens":0},"stopReason":"toolUse","timestamp":2}"#,
        r#"{"role":"assistant","content":[],"stopReason":"aborted","usage":{"totalTokens":99}}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"  \n "}],"stopReason":"error","errorMessage":"overloaded\nretry","usage":5}"#,
        r#"{"role":"assistant","content":"a string content","usage":"","stopReason":7}"#,
        r#"{"role":"assistant","content":[{"type":"thinking","thinking":7},{"type":"text"}],"usage":[]}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"x"}],"usage":false}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"y"}],"usage":{"totalTokens":-3.5,"input":"10"}}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"z"}],"usage":{"totalTokens":1e300},"timestamp":18446744073709551616}"#,
        r#"{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"l1\nl2\nl3\n"},{"type":"image","data":"B","mimeType":"image/png"}],"isError":false}"#,
        r#"{"role":"toolResult","toolCallId":"t2","content":"failed\r\nbadly","isError":true}"#,
        r#"{"role":"toolResult","toolName":"bash","content":[{"type":"text","text":""}],"isError":"true"}"#,
        r#"{"role":"bashExecution","command":"ls -la\n","output":"a\nb","exitCode":2,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/o"}"#,
        r#"{"role":"bashExecution","command":"secret","output":"","exitCode":0,"excludeFromContext":true}"#,
        r#"{"role":"bashExecution","command":7,"output":null,"exitCode":null,"cancelled":true}"#,
        r#"{"role":"custom","customType":"note","content":"custom text","display":true,"timestamp":3}"#,
        r#"{"role":"custom","content":[{"type":"text","text":"blocks"},{"type":"image","data":"C","mimeType":"image/png"}]}"#,
        r#"{"role":"branchSummary","summary":"went elsewhere\n\tand back","fromId":"x","timestamp":4}"#,
        r#"{"role":"compactionSummary","summary":"earlier","tokensBefore":1234.5,"timestamp":5}"#,
        r#"{"role":"compactionSummary","summary":["not","text"],"tokensBefore":"many"}"#,
        r#"{"role":"hookMessage","content":"hooked"}"#,
        r#"{"role":"developer","content":[{"type":"text","text":"dev"}]}"#,
        r#"{"role":"fileMention","content":"files","files":[]}"#,
        r#"{"role":3,"content":"numbered role"}"#,
        r#"{"content":"no role"}"#,
        r#"{"role":"user","content":42}"#,
        r#"{"role":"user","content":{"type":"text","text":"an object"}}"#,
        r#"{"role":"user","content":[1,"x",null,[{"type":"text","text":"nested"}],{"type":"text","text":5},{"type":"text","text":"kept"}]}"#,
        r#"{"role":"user","content":"first","content":"second","role":"assistant"}"#,
        r#"{"rol\u0065":"user","content":"escaped key"}"#,
        r#"{ "role" : "user" , "content" : [ { "type" : "text" , "text" : "spaced" } ] }"#,
        r#"{"role":"user","content":"lone \ud800 surrogate"}"#,
        r#"{"role":"user","content":"out of range","timestamp":1e400}"#,
        r#"{"role":"user","content":"ignored out of range","extra":1e400}"#,
        r#"{"role":"user","content":{"$serde_json::private::RawValue":"\"marked\""}}"#,
        "{\"role\":\"user\",\"content\":\"marker range \u{10F800} char\"}",
        r#"{"role":"user","content":"\u202e bidi and \u0007 bell"}"#,
        r#"null"#,
        r#""just text""#,
        r#"[1,2]"#,
        r#"!"message":{"role":"user","content":"first message key"},"message":{"role":"user","content":"second message key"}"#,
        r#"!"message":{"role":"user","content":"no matching type"},"type":"custom_message","customType":"c","content":"as custom","display":true"#,
    ];

    /// A session file of a header, the messages above (and a deep one), a
    /// custom message and a branch summary, a compaction, then the messages again.
    fn session_file() -> tempfile::NamedTempFile {
        let deep = format!(r#"{{"role":"user","content":"deep","extra":{}1{}}}"#, "[".repeat(300), "]".repeat(300));
        let deep_args = format!(
            r#"{{"role":"assistant","content":[{{"type":"toolCall","name":"t","arguments":{}0{}}}]}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let mut bodies: Vec<String> = MESSAGES.iter().map(|m| (*m).to_owned()).collect();
        bodies.extend([deep, deep_args]);
        let ts = r#""timestamp":"2025-01-01T00:00:00.000Z""#;
        let mut lines = vec![];
        let push = |lines: &mut Vec<String>, body: &str| {
            let n = lines.len();
            let parent = if n == 0 { "null".to_owned() } else { format!("\"e{}\"", n - 1) };
            let tail = body.strip_prefix('!').map_or_else(|| format!(r#""message":{body}"#), str::to_owned);
            lines.push(format!(r#"{{"type":"message","id":"e{n}","parentId":{parent},{ts},{tail}}}"#));
        };
        for b in &bodies {
            push(&mut lines, b);
        }
        let n = lines.len();
        lines.push(format!(
            r#"{{"type":"custom_message","customType":"x","content":"c\nd","display":true,"id":"e{n}","parentId":"e{}",{ts}}}"#,
            n - 1
        ));
        lines.push(format!(
            r#"{{"type":"branch_summary","id":"e{}","parentId":"e{n}",{ts},"fromId":"e0","summary":"s"}}"#,
            n + 1
        ));
        lines.push(format!(
            r#"{{"type":"compaction","id":"e{}","parentId":"e{}",{ts},"summary":"S","firstKeptEntryId":"e3","tokensBefore":9}}"#,
            n + 2,
            n + 1
        ));
        for b in &bodies {
            push(&mut lines, b);
        }
        let mut f = tempfile::Builder::new().suffix(".jsonl").tempfile().unwrap();
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
        writeln!(f, "{header}").unwrap();
        for l in &lines {
            writeln!(f, "{l}").unwrap();
        }
        f
    }

    #[test]
    fn messages_of_every_shape_read_from_the_text_give_the_oracles_transcript() {
        let f = session_file();
        assert!(check_file(f.path(), 200) > 100);
        // Where the text is read, it gives the parts the decoded message gives.
        let text = std::fs::read_to_string(f.path()).unwrap();
        let (mut read, mut decoded) = (0, 0);
        for line in text.lines().skip(1) {
            let entry = arbor_log::json::parse(line).unwrap();
            let id = entry["id"].as_str().unwrap();
            match stored_parts(line, id) {
                Some(parts) => {
                    assert_eq!(parts, Parts::of_value(&entry["message"]), "{line}");
                    read += 1;
                }
                None => decoded += 1,
            }
            assert!(stored_parts(line, "another id").is_none());
        }
        // Both ways are taken: the odd lines are decoded.
        assert!(read > 60 && decoded > 20, "{read} read, {decoded} decoded");
    }
}
