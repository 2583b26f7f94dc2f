//! `arbor usage` against ccusage (its npm package, through `cargo xtask
//! ccusage`), on generated pi sessions with branches, branch summaries,
//! compactions, forks, replies without a recorded cost, several models and
//! days that a time zone's midnight splits: every day's and session's
//! tokens equal and costs within 0.1 %, except where Arbor deliberately
//! differs (docs/usage.md, "Where Arbor differs from ccusage"): a fork's
//! copied replies count once, in the session they were first written in.
//! The copies are the whole difference, `--explain` lists them, and the
//! test fails if there are none. Claude Code and Codex transcripts read in
//! place give ccusage's token totals per day.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use arbor_test_support::Rng;
use serde_json::{json, Value};

use crate::{json as json_of, stderr};

/// 2026-03-01T20:00:00Z: the sessions run over midnight in UTC, New York and Kolkata.
const START: i64 = 1_772_395_200_000;

/// Models the table of Arbor and ccusage's both know at the same prices.
const MODELS: [(&str, &str); 5] = [
    ("anthropic", "claude-sonnet-4-5"),
    ("anthropic", "claude-opus-4-5"),
    ("anthropic", "claude-haiku-4-5"),
    ("openai", "gpt-5"),
    ("openai", "gpt-5-mini"),
];

/// One session being written.
struct Gen {
    rng: Rng,
    lines: Vec<Value>,
    time: i64,
    next_id: u32,
    leaf: Option<String>,
    prefix: u32,
}

impl Gen {
    fn new(seed: u64, prefix: u32, start: i64) -> Gen {
        Gen { rng: Rng(seed), lines: Vec::new(), time: start, next_id: 0, leaf: None, prefix }
    }

    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("{:04x}{:04x}", self.prefix, self.next_id)
    }

    fn iso(ms: i64) -> String {
        arbor_log::time::format_iso_ms(ms)
    }

    fn push(&mut self, mut v: Value) -> String {
        let id = self.id();
        self.time += 1_000 + (self.rng.below(40) as i64) * 60_000;
        let o = v.as_object_mut().unwrap();
        o.insert("id".into(), json!(id));
        o.insert("parentId".into(), json!(self.leaf));
        o.insert("timestamp".into(), json!(Self::iso(self.time)));
        // pi's key order: type, id, parentId, timestamp, then the body.
        let mut ordered = serde_json::Map::new();
        for k in ["type", "id", "parentId", "timestamp"] {
            ordered.insert(k.into(), o[k].clone());
        }
        for (k, x) in o.iter() {
            ordered.entry(k.clone()).or_insert_with(|| x.clone());
        }
        self.lines.push(Value::Object(ordered));
        self.leaf = Some(id.clone());
        id
    }

    fn user(&mut self) -> String {
        let t = self.time;
        self.push(json!({"type": "message", "message": {"role": "user", "content": "go on", "timestamp": t}}))
    }

    fn reply(&mut self) -> String {
        let (provider, model) = MODELS[self.rng.below(MODELS.len())];
        let r = &mut self.rng;
        let (input, output) = (1 + r.below(5_000) as u64, 1 + r.below(3_000) as u64);
        let cache_read = if r.below(4) == 0 { 0 } else { r.below(150_000) as u64 };
        let cache_write = if provider == "openai" { 0 } else { r.below(20_000) as u64 };
        let mut usage = json!({
            "input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write,
            "totalTokens": input + output + cache_read + cache_write,
        });
        // A third of the replies recorded no cost: priced from the tables.
        if r.below(3) != 0 {
            let cost = (input * 3 + output * 15) as f64 / 1e6 + r.below(1000) as f64 / 1e5;
            usage["cost"] = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost});
        }
        let t = self.time;
        self.push(json!({"type": "message", "message": {
            "role": "assistant", "content": [{"type": "text", "text": "done"}], "api": "anthropic-messages",
            "provider": provider, "model": model, "usage": usage, "stopReason": "stop", "timestamp": t,
        }}))
    }

    fn turns(&mut self, n: usize) {
        for _ in 0..n {
            self.user();
            self.reply();
        }
    }

    /// Leaves the current branch for `to`, with a branch summary when asked.
    fn branch(&mut self, to: &str, summarize: bool) {
        self.leaf = Some(to.to_owned());
        if summarize {
            let from = to.to_owned();
            self.push(json!({"type": "branch_summary", "fromId": from, "summary": "tried another way"}));
        }
    }

    fn compaction(&mut self, first_kept: &str) {
        self.push(
            json!({"type": "compaction", "summary": "so far", "firstKeptEntryId": first_kept, "tokensBefore": 1000}),
        );
    }

    fn write(&self, root: &Path, cwd: &str, id: &str, start: i64, parent: Option<&str>) -> PathBuf {
        let dir = root.join(arbor_tree::paths::encode_cwd(cwd));
        std::fs::create_dir_all(&dir).unwrap();
        let mut header = json!({"type": "session", "version": 3, "id": id, "timestamp": Self::iso(start), "cwd": cwd});
        if let Some(p) = parent {
            header["parentSession"] = json!(p);
        }
        let file = dir.join(arbor_tree::paths::session_file_name(&Self::iso(start), id));
        let mut text = header.to_string() + "\n";
        for l in &self.lines {
            text.push_str(&l.to_string());
            text.push('\n');
        }
        std::fs::write(&file, text).unwrap();
        file
    }
}

/// Writes the sessions; returns the fork's file and its parent's.
fn write_sessions(root: &Path) -> (PathBuf, PathBuf) {
    // A session with an abandoned branch, a summarized one and a compaction.
    let mut a = Gen::new(11, 0xa, START);
    a.turns(3);
    let back = a.leaf.clone().unwrap();
    a.turns(4);
    a.branch(&back, false);
    a.turns(3);
    let back = a.leaf.clone().unwrap();
    a.turns(3);
    a.branch(&back, true);
    a.turns(2);
    let kept = a.user();
    a.reply();
    a.compaction(&kept);
    a.turns(6);
    let a_file = a.write(root, "/work/app", "5e0a0000-0000-4000-8000-00000000000a", START, None);

    // Two forks of it: the active path up to an entry, copied as pi copies
    // it, then on their own. pi's names its parent's file (ccusage skips the
    // copies too); oh-my-pi's names its parent's session id (ccusage counts
    // them again: the deliberate difference).
    let pi_fork = fork(&a, &kept, 12, 0xf, 36);
    let pi_file = pi_fork.write(root, "/work/app", FORK, START + 36 * HOUR, Some(a_file.to_str().unwrap()));
    let cut =
        a.lines.iter().find(|l| l["type"] == json!("compaction")).map(|l| l["parentId"].as_str().unwrap().to_owned());
    let omp_fork = fork(&a, &cut.unwrap(), 13, 0xe, 40);
    omp_fork.write(root, "/work/app", OMP_FORK, START + 40 * HOUR, Some("5e0a0000-0000-4000-8000-00000000000a"));
    // Sessions of another project over the next days, near New York's and Kolkata's midnights.
    for (k, start) in [(1u32, START + 2 * 86_400_000 + 3 * 3_600_000), (2, START + 3 * 86_400_000 - 2 * 3_600_000)] {
        let mut g = Gen::new(20 + u64::from(k), k, start);
        g.turns(12);
        g.write(root, "/work/lib", &format!("5e000000-0000-4000-8000-00000000000{k}"), start, None);
    }
    (pi_file, a_file)
}

const HOUR: i64 = 3_600_000;
const FORK: &str = "5e0f0000-0000-4000-8000-00000000000f";
const OMP_FORK: &str = "5e0e0000-0000-4000-8000-00000000000e";

/// A fork of `a` at entry `at`: its path copied line for line, then a few turns of its own.
fn fork(a: &Gen, at: &str, seed: u64, prefix: u32, hours: i64) -> Gen {
    let mut f = Gen::new(seed, prefix, START + hours * HOUR);
    let cut = a.lines.iter().position(|l| l["id"] == json!(at)).unwrap();
    let path_ids = active_path(&a.lines[..=cut], at);
    f.lines = a.lines.iter().filter(|l| path_ids.contains(l["id"].as_str().unwrap())).cloned().collect();
    f.leaf = Some(at.to_owned());
    f.turns(5);
    f
}

/// The ids on the path from the root to `leaf` among `lines`.
fn active_path(lines: &[Value], leaf: &str) -> std::collections::HashSet<String> {
    let parent: BTreeMap<&str, Option<&str>> =
        lines.iter().map(|l| (l["id"].as_str().unwrap(), l["parentId"].as_str())).collect();
    let mut out = std::collections::HashSet::new();
    let mut at = Some(leaf);
    while let Some(id) = at {
        out.insert(id.to_owned());
        at = parent.get(id).copied().flatten();
    }
    out
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `ccusage ARGS…` (installed on first use), its JSON; `None` where node is missing (outside CI).
fn ccusage(args: &[&str], env: &[(&str, &Path)]) -> Option<Value> {
    let node = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    if !node {
        assert!(std::env::var_os("ARBOR_REQUIRE_PI").is_none(), "ARBOR_REQUIRE_PI is set but node is missing");
        eprintln!("skipped: node is not on the PATH, so ccusage cannot run here (CI has node)");
        return None;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace()).args(["xtask", "ccusage"]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.env("NO_COLOR", "1").output().unwrap();
    assert!(out.status.success(), "ccusage {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn arbor_usage(args: &[&str]) -> Value {
    let o = crate::arbor(args);
    assert!(o.status.success(), "{}", stderr(&o));
    json_of(&o)
}

const KINDS: [&str; 4] = ["inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens"];

/// Arbor's row with the copies ccusage counts again added back must be
/// ccusage's row: the same tokens of each kind, the cost within 0.1 %.
fn same_with_copies(what: &str, ours: &Value, theirs: &Value) {
    let again = &ours["copies"]["recountedByCcusage"];
    for k in KINDS {
        let sum = ours[k].as_u64().unwrap() + again[k].as_u64().unwrap();
        assert_eq!(sum, theirs[k].as_u64().unwrap(), "{what}: {k}\narbor: {ours}\nccusage: {theirs}");
    }
    let cost = ours["totalCost"].as_f64().unwrap() + again["cost"].as_f64().unwrap();
    let cc = theirs["totalCost"].as_f64().unwrap();
    assert!((cost - cc).abs() <= cc.abs() * 0.001 + 1e-9, "{what}: cost {cost} against ccusage's {cc}");
}

fn rows_by<'a>(v: &'a Value, key: &str, field: &str) -> BTreeMap<String, &'a Value> {
    v[key].as_array().unwrap().iter().map(|r| (r[field].as_str().unwrap().to_owned(), r)).collect()
}

#[test]
fn days_and_sessions_agree_with_ccusage_but_for_the_forks_copies() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let (fork, parent) = write_sessions(&root);
    let root_s = root.to_str().unwrap();
    let (mut recounted, mut skipped_by_both) = (0, 0);
    for tz in ["UTC", "America/New_York", "Asia/Kolkata"] {
        let Some(cc) = ccusage(&["pi", "daily", "--offline", "--json", "-z", tz, "--pi-path", root_s], &[]) else {
            return;
        };
        let ours = arbor_usage(&[
            "usage",
            "daily",
            "--json",
            "--explain",
            "--agent",
            "pi",
            "--sessions-dir",
            root_s,
            "-z",
            tz,
        ]);
        let (a, c) = (rows_by(&ours, "daily", "date"), rows_by(&cc, "daily", "date"));
        assert_eq!(a.keys().collect::<Vec<_>>(), c.keys().collect::<Vec<_>>(), "{tz}: the same days");
        assert!(a.len() >= 4, "{tz}: {} days", a.len());
        for (day, row) in &a {
            same_with_copies(&format!("{tz} {day}"), row, c[day]);
        }
        let copies = &ours["totals"]["copies"];
        recounted += copies["recountedByCcusage"]["replies"].as_u64().unwrap();
        skipped_by_both +=
            copies["replies"].as_u64().unwrap() - copies["recountedByCcusage"]["replies"].as_u64().unwrap();
        // --explain lists the copies, fork by fork: both repeat their parent's replies.
        let listed: Vec<&Value> =
            ours["differences"].as_array().unwrap().iter().filter(|d| d["kind"] == "copies").collect();
        assert_eq!(listed.len(), 2, "{tz}: {listed:?}");
        let of_pi_fork = listed.iter().find(|d| d["path"].as_str() == fork.to_str()).unwrap();
        assert_eq!(of_pi_fork["ofPath"].as_str(), parent.to_str());
        assert_eq!(of_pi_fork["amount"]["recountedByCcusage"]["replies"], 0, "ccusage skips pi's fork's copies too");
        let of_omp_fork = listed.iter().find(|d| d["sessionId"] == OMP_FORK).unwrap();
        let amount = &of_omp_fork["amount"];
        assert_eq!(
            amount["recountedByCcusage"]["replies"], amount["replies"],
            "ccusage counts omp's fork's copies again"
        );
        let sum = |k: &str| listed.iter().map(|d| d["amount"][k].as_u64().unwrap()).sum::<u64>();
        assert_eq!(sum("replies"), copies["replies"].as_u64().unwrap(), "{tz}: the listed copies are all of them");
        assert!(ours["differences"].as_array().unwrap().iter().any(|d| d["kind"] == "priced"), "priced replies listed");
    }
    assert!(recounted > 0, "the omp fork's copies are the difference, and there must be some");
    assert!(skipped_by_both > 0, "pi's fork's copies are skipped by both, and there must be some");

    let cc = ccusage(&["pi", "session", "--offline", "--json", "-z", "UTC", "--pi-path", root_s], &[]).unwrap();
    let ours = arbor_usage(&["usage", "session", "--json", "--agent", "pi", "--sessions-dir", root_s, "-z", "UTC"]);
    let (a, c) = (rows_by(&ours, "sessions", "sessionId"), rows_by(&cc, "sessions", "sessionId"));
    assert_eq!(a.keys().collect::<Vec<_>>(), c.keys().collect::<Vec<_>>(), "the same sessions");
    for (id, row) in &a {
        same_with_copies(id, row, c[id]);
        let copied = row["copies"]["replies"].as_u64().unwrap();
        assert_eq!(copied > 0, id == FORK || id == OMP_FORK, "{id}: only the forks hold copies");
    }
    // The tree's view adds up to each session.
    for row in a.values() {
        let tree = &row["tree"];
        let sum: f64 =
            ["active", "compacted", "summarized", "abandoned"].iter().map(|p| tree[p]["cost"].as_f64().unwrap()).sum();
        assert!((sum - row["totalCost"].as_f64().unwrap()).abs() < 1e-9, "{row}");
    }
    let parent_row = a["5e0a0000-0000-4000-8000-00000000000a"];
    for place in ["compacted", "summarized", "abandoned"] {
        assert!(parent_row["tree"][place]["replies"].as_u64().unwrap() > 0, "{place}: {}", parent_row["tree"]);
    }
}

/// A Claude Code transcript: a chain of user and assistant records over
/// `turns` turns from `start`, each reply written as two records of one
/// response (the second with the final output count), every fifth with a
/// tool call; `copy_of` repeats another transcript's records first (a
/// resumed session: both tools count them once).
fn claude_transcript(path: &Path, session: &str, start: i64, turns: usize, seed: u64, copy_of: Option<&Path>) {
    let mut rng = Rng(seed);
    let mut lines: Vec<String> = match copy_of {
        Some(p) => std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| l.replace(r#""sessionId":"ses-one""#, &format!(r#""sessionId":"{session}""#)))
            .collect(),
        None => Vec::new(),
    };
    let mut parent: Option<String> =
        lines.last().map(|l| serde_json::from_str::<Value>(l).unwrap()["uuid"].as_str().unwrap().to_owned());
    let mut t = start;
    for k in 0..turns {
        t += 60_000 + rng.below(50) as i64 * 60_000;
        let u = format!("{session}-u{k}");
        lines.push(json!({"parentUuid": parent, "isSidechain": false, "type": "user", "sessionId": session, "cwd": "/work/app",
            "version": "2.0.31", "uuid": u, "timestamp": arbor_log::time::format_iso_ms(t),
            "message": {"role": "user", "content": "next step"}}).to_string());
        let (input, cache_read, cache_write) =
            (1 + rng.below(900) as u64, rng.below(90_000) as u64, rng.below(9_000) as u64);
        let output = 10 + rng.below(2_000) as u64;
        let model = if k % 3 == 0 { "claude-opus-4-5-20251101" } else { "claude-sonnet-4-5-20250929" };
        let mut prev = u.clone();
        for (part, out) in [(0, 1), (1, output)] {
            let a = format!("{session}-a{k}-{part}");
            let content = if part == 0 {
                json!([{"type": "text", "text": "on it"}])
            } else if k % 5 == 0 {
                json!([{"type": "tool_use", "id": format!("toolu_{session}_{k}"), "name": "Bash", "input": {"command": "ls"}}])
            } else {
                json!([{"type": "text", "text": "done"}])
            };
            lines.push(json!({"parentUuid": prev, "isSidechain": false, "type": "assistant", "sessionId": session, "cwd": "/work/app",
                "version": "2.0.31", "uuid": a, "requestId": format!("req_{session}_{k}"), "timestamp": arbor_log::time::format_iso_ms(t + 2_000 + part),
                "message": {"id": format!("msg_{session}_{k}"), "type": "message", "role": "assistant", "model": model, "content": content,
                    "stop_reason": if part == 1 { json!("end_turn") } else { Value::Null },
                    "usage": {"input_tokens": input, "output_tokens": out, "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write}}}).to_string());
            prev = a;
        }
        parent = Some(prev);
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// A Codex rollout: session meta, a turn context, then per turn a user
/// message, the reply's items and a token count (last and running totals).
fn codex_rollout(path: &Path, start: i64, turns: usize, seed: u64) {
    let mut rng = Rng(seed);
    let iso = arbor_log::time::format_iso_ms;
    let mut lines = vec![
        json!({"timestamp": iso(start), "type": "session_meta", "payload": {"id": "0199a3c4-0000-7b80-9f3d-5c6b7a8e9d10",
            "timestamp": iso(start), "cwd": "/work/app", "originator": "codex_cli_rs", "cli_version": "0.58.0", "model_provider": "openai"}}),
        json!({"timestamp": iso(start + 1_000), "type": "turn_context", "payload": {"cwd": "/work/app", "model": "gpt-5-codex", "effort": "medium"}}),
    ];
    let (mut t, mut total) = (start + 2_000, [0u64; 4]);
    for _ in 0..turns {
        t += 60_000 + rng.below(90) as i64 * 60_000;
        lines.push(json!({"timestamp": iso(t), "type": "response_item", "payload": {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "continue"}]}}));
        lines.push(json!({"timestamp": iso(t + 1_000), "type": "response_item", "payload": {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "done"}]}}));
        let cached = rng.below(40_000) as u64;
        let last = [cached + 1 + rng.below(3_000) as u64, cached, 1 + rng.below(900) as u64, rng.below(300) as u64];
        for (x, y) in total.iter_mut().zip(last) {
            *x += y;
        }
        let usage = |u: [u64; 4]| {
            json!({"input_tokens": u[0], "cached_input_tokens": u[1], "output_tokens": u[2],
            "reasoning_output_tokens": u[3], "total_tokens": u[0] + u[2]})
        };
        lines.push(json!({"timestamp": iso(t + 2_000), "type": "event_msg", "payload": {"type": "token_count",
            "info": {"total_token_usage": usage(total), "last_token_usage": usage(last), "model_context_window": 272_000}}}));
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(path, text).unwrap();
}

/// The same tokens of each kind and in all, day by day.
fn same_tokens(what: &str, ours: &Value, theirs: &Value, kinds: &[&str]) {
    let (a, c) = (rows_by(ours, "daily", "date"), rows_by(theirs, "daily", "date"));
    assert_eq!(a.keys().collect::<Vec<_>>(), c.keys().collect::<Vec<_>>(), "{what}: the same days");
    assert!(a.len() >= 2, "{what}: {} days", a.len());
    for (day, row) in &a {
        for k in kinds.iter().chain(&["totalTokens"]) {
            assert_eq!(row[k], c[day][k], "{what} {day}: {k}\narbor: {row}\nccusage: {}", c[day]);
        }
    }
}

#[test]
fn claude_code_and_codex_days_have_ccusages_token_totals() {
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("claude");
    let first = claude.join("projects/-work-app/ses-one.jsonl");
    claude_transcript(&first, "ses-one", START, 30, 31, None);
    claude_transcript(
        &claude.join("projects/-work-app/ses-two.jsonl"),
        "ses-two",
        START + 30 * HOUR,
        20,
        32,
        Some(&first),
    );
    let codex = dir.path().join("codex");
    codex_rollout(&codex.join("sessions/2026/03/01/rollout-2026-03-01T20-00-00-0199a3c4.jsonl"), START, 25, 33);
    for tz in ["UTC", "America/New_York"] {
        let Some(cc) =
            ccusage(&["claude", "daily", "--offline", "--json", "-z", tz], &[("CLAUDE_CONFIG_DIR", &claude)])
        else {
            return;
        };
        let projects = claude.join("projects");
        let ours = arbor_usage(&[
            "usage",
            "daily",
            "--json",
            "--agent",
            "claude",
            "--claude-dir",
            projects.to_str().unwrap(),
            "-z",
            tz,
        ]);
        same_tokens(&format!("claude {tz}"), &ours, &cc, &KINDS);
        let cc = ccusage(&["codex", "daily", "--offline", "--json", "-z", tz], &[("CODEX_HOME", &codex)]).unwrap();
        let sessions = codex.join("sessions");
        let ours = arbor_usage(&[
            "usage",
            "daily",
            "--json",
            "--agent",
            "codex",
            "--codex-dir",
            sessions.to_str().unwrap(),
            "-z",
            tz,
        ]);
        same_tokens(&format!("codex {tz}"), &ours, &cc, &["inputTokens", "outputTokens", "cacheReadTokens"]);
    }
}
