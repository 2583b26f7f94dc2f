//! Sessions for recall tests: text in many scripts and shapes (Latin, CJK,
//! Cyrillic, emoji, URLs, paths, code, ids) in every kind of entry that has
//! text, some files written as Python's `json.dumps` writes by default
//! (every non-ASCII character as `\uXXXX`), and literals drawn from the
//! entries' text with the entries that hold each.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::Rng;

const LATIN: &[&str] = &[
    "backup",
    "frobnicator",
    "Pine",
    "Labs",
    "deploy",
    "parser",
    "tokio",
    "serde_json",
    "Größe",
    "café",
    "naïve",
    "résumé",
    "Straße",
    "mañana",
    "cargo",
    "TODO:",
    "FIXME",
    "don't",
    "e-mail",
    "re-run",
    "x86_64",
];
const CJK: &[&str] =
    &["备份", "机器人", "百度云自动备份", "印度Pine Labs", "日本語のテキスト", "検索エンジン", "한국어", "数据库"];
const CYRILLIC: &[&str] = &["Привет", "мир", "Поиск", "работает", "ЖУК", "жук", "Ошибка"];
const EMOJI: &[&str] = &["😀", "🚀", "👍🏽", "✅", "🔥done"];
const URLS: &[&str] = &[
    "https://github.com/openclaw/openclaw-backup.git",
    "http://example.com/a?b=c&d=e",
    "git@github.com:me/repo.git",
    "https://docs.rs/memchr/2.7/memchr/",
];
const PATHS: &[&str] = &["/home/user/src/main.rs", r"C:\Users\dev\file.txt", "./scripts/run-tests.sh", "~/.pi/agent"];
const CODE: &[&str] = &[
    r#"fn main() { println!("hi"); }"#,
    "let x = vec![1, 2, 3];",
    r#"{"key": "value"}"#,
    "if a && b || !c { return; }",
    "SELECT * FROM t WHERE x = 'y';",
    "a\tb\tc",
    "\u{1b}[31mred\u{1b}[0m",
    r#"say "quoted" here"#,
];

/// A piece of text: a few words from the lists, run together or spaced.
fn text(rng: &mut Rng) -> String {
    let n = rng.between(1, 8);
    let mut out = String::new();
    for _ in 0..n {
        let list: &[&str] = match rng.below(7) {
            0 => CJK,
            1 => CYRILLIC,
            2 => EMOJI,
            3 => URLS,
            4 => PATHS,
            5 => CODE,
            _ => LATIN,
        };
        let sep = match rng.below(6) {
            0 => "",
            1 => "\n",
            2 => "-",
            _ => " ",
        };
        if !out.is_empty() {
            out.push_str(sep);
        }
        out.push_str(rng.pick::<&str>(list));
        if rng.below(4) == 0 {
            out.push_str(&format!("{:08x}", rng.next() as u32));
        }
    }
    out
}

/// One entry with text, of a kind picked at random, child of `parent`.
fn entry(rng: &mut Rng, id: &str, parent: Option<&str>, ms: i64) -> Value {
    let ts = arbor_log::time::format_iso_ms(ms);
    let base = |kind: &str| json!({"type": kind, "id": id, "parentId": parent, "timestamp": ts});
    let mut e = match rng.below(10) {
        0 => {
            let mut e = base("message");
            e["message"] = json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": text(rng)},
                {"type": "text", "text": text(rng)},
                {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": text(rng), "timeout": 5}}],
                "timestamp": ms});
            e
        }
        1 => {
            let mut e = base("message");
            e["message"] = json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "bash",
                "content": [{"type": "text", "text": text(rng)}], "isError": false, "timestamp": ms});
            e
        }
        2 => {
            let mut e = base("message");
            e["message"] = json!({"role": "bashExecution", "command": text(rng), "output": text(rng), "exitCode": 0, "timestamp": ms});
            e
        }
        3 => {
            let mut e = base("compaction");
            e["summary"] = json!(text(rng));
            e["firstKeptEntryId"] = json!(parent);
            e["tokensBefore"] = json!(1000);
            e
        }
        4 => {
            let mut e = base("branch_summary");
            e["summary"] = json!(text(rng));
            e["fromId"] = json!(parent);
            e
        }
        5 => {
            let mut e = base("custom_message");
            e["customType"] = json!("note");
            e["content"] = json!(text(rng));
            e["display"] = json!(true);
            e
        }
        6 => {
            let mut e = base("session_info");
            e["name"] = json!(text(rng));
            e
        }
        _ => {
            let mut e = base("message");
            e["message"] = json!({"role": "user", "content": text(rng), "timestamp": ms});
            e
        }
    };
    if rng.below(20) == 0 {
        // A settings entry: no text.
        e = base("model_change");
        e["provider"] = json!("anthropic");
        e["modelId"] = json!("claude");
    }
    e
}

/// A line as Python's `json.dumps` writes by default: every non-ASCII
/// character as `\uXXXX` (surrogate pairs beyond the first plane), and `/` as `\/`.
pub fn python_escaped(line: &str) -> String {
    let mut out = String::with_capacity(line.len() * 2);
    for c in line.chars() {
        if (c as u32) < 0x80 {
            if c == '/' {
                out.push_str("\\/");
            } else {
                out.push(c);
            }
            continue;
        }
        let mut units = [0u16; 2];
        for u in c.encode_utf16(&mut units) {
            out.push_str(&format!("\\u{u:04x}"));
        }
    }
    out
}

/// A generated session file: its path and, per entry, its id and line number.
#[derive(Debug, Clone)]
pub struct RecallSession {
    pub path: PathBuf,
    pub id: String,
    /// Entry ids in file order.
    pub entries: Vec<String>,
}

/// Writes `n` sessions under `root` (in two working directories), each with
/// 20 to 60 entries on a few branches; one in four is written as Python
/// writes JSON. Sessions get distinct, increasing times.
pub fn write_recall_sessions(root: &Path, n: usize, seed: u64) -> Vec<RecallSession> {
    let mut rng = Rng(seed.max(1));
    let mut out = vec![];
    for i in 0..n {
        let cwd = if i % 3 == 0 { "/home/user/other" } else { "/home/user/proj" };
        let dir = root.join(arbor_tree::paths::encode_cwd(cwd));
        std::fs::create_dir_all(&dir).unwrap();
        let id = format!("5e55{i:04x}-0000-4000-8000-{:012x}", rng.next() & 0xFFFF_FFFF_FFFF);
        let start = crate::START_MS + i as i64 * 3_600_000;
        let header = json!({"type": "session", "version": 3, "id": id, "timestamp": arbor_log::time::format_iso_ms(start), "cwd": cwd});
        let mut lines = vec![header.to_string()];
        let mut ids: Vec<String> = vec![];
        let count = rng.between(20, 60);
        for k in 0..count {
            let eid = format!("{:08x}", rng.next() as u32);
            // Mostly a chain; now and then a branch from an earlier entry.
            let parent = match (ids.len(), rng.below(8)) {
                (0, _) => None,
                (len, 0) => Some(ids[rng.below(len)].clone()),
                (len, _) => Some(ids[len - 1].clone()),
            };
            let e = entry(&mut rng, &eid, parent.as_deref(), start + 1000 * (k as i64 + 1));
            lines.push(e.to_string());
            ids.push(eid);
        }
        let python = i % 4 == 1;
        let body: String = lines.iter().map(|l| if python { python_escaped(l) } else { l.clone() } + "\n").collect();
        let path = dir.join(format!("{}_{id}.jsonl", arbor_log::time::format_iso_ms(start).replace([':', '.'], "-")));
        std::fs::write(&path, body).unwrap();
        out.push(RecallSession { path, id, entries: ids });
    }
    out
}

/// A literal to look for, and the entries whose text holds it as written.
#[derive(Debug, Clone)]
pub struct Literal {
    pub text: String,
    /// (session id, entry id) of every entry whose searchable text holds `text`.
    pub holders: Vec<(String, String)>,
}

/// Each entry's searchable text, by (session id, entry id), read back from the files.
pub fn entry_texts(sessions: &[RecallSession]) -> Vec<((String, String), String)> {
    let mut out = vec![];
    for s in sessions {
        let text = std::fs::read_to_string(&s.path).unwrap();
        for line in text.lines().skip(1) {
            let v: Value = serde_json::from_str(line).unwrap();
            let id = v["id"].as_str().unwrap().to_owned();
            out.push(((s.id.clone(), id), arbor_log::messages::searchable_text(&v)));
        }
    }
    out
}

/// `n` literals drawn from the entries' text (whole words, parts of words,
/// runs across punctuation), none with whitespace or a double quote; with
/// the entries that hold each.
pub fn draw_literals(texts: &[((String, String), String)], n: usize, seed: u64) -> Vec<Literal> {
    let mut rng = Rng(seed.max(1) ^ 0x5eed);
    let mut out: Vec<Literal> = vec![];
    let with_text: Vec<&String> = texts.iter().map(|(_, t)| t).filter(|t| !t.is_empty()).collect();
    while out.len() < n {
        let t = with_text[rng.below(with_text.len())];
        let chars: Vec<char> = t.chars().collect();
        let start = rng.below(chars.len());
        let len = rng.between(2, 14).min(chars.len() - start);
        let lit: String = chars[start..start + len].iter().collect();
        if lit.chars().count() < 2
            || lit.chars().any(|c| c.is_whitespace() || c == '"' || c.is_control())
            || lit.starts_with("re:")
            || out.iter().any(|l| l.text == lit)
        {
            continue;
        }
        let holders = texts.iter().filter(|(_, t)| t.contains(&lit)).map(|(k, _)| k.clone()).collect();
        out.push(Literal { text: lit, holders });
    }
    out
}
