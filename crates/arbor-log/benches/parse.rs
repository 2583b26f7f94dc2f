//! Criterion benchmarks of reading a session from memory: `SessionLog::read`
//! alone, and followed by `into_entries` (the full-decode path), and the
//! light scan index-first loading uses: `scan_line` over every line (one
//! thread) and `ScannedLog::read` (split over the machine's threads).
//!
//! The input is a realistic pi v3 session of about 2000 entries (~6 MB) built
//! in memory by a small deterministic generator below, so the benchmark needs
//! no files. End-to-end numbers on large files come from `cargo xtask bench`.

use std::hint::black_box;

use arbor_log::scan::{scan_line, ScanKind, ScannedLog};
use arbor_log::SessionLog;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::{json, Value};

const ENTRIES: usize = 2000;

use arbor_test_support::Rng;

/// Random words for message texts.
trait Words {
    /// Text of a random length in `lo..=hi` bytes.
    fn text_between(&mut self, lo: usize, hi: usize) -> String;
    /// About `nbytes` bytes of text.
    fn text(&mut self, nbytes: usize) -> String;
}

impl Words for Rng {
    fn text_between(&mut self, lo: usize, hi: usize) -> String {
        let n = self.between(lo, hi);
        self.text(n)
    }

    fn text(&mut self, nbytes: usize) -> String {
        const WORDS: &[&str] = &[
            "the",
            "tree",
            "keeps",
            "every",
            "branch",
            "and",
            "the",
            "model",
            "reads",
            "its",
            "active",
            "path",
            "fn",
            "parse(line)",
            "->",
            "Result<Entry>",
            "{",
            "}",
            "\n",
            "\"quoted\"",
            "src/lib.rs",
            "42",
        ];
        let mut s = String::with_capacity(nbytes + 16);
        while s.len() < nbytes {
            s.push_str(WORDS[(self.next() % WORDS.len() as u64) as usize]);
            s.push(' ');
        }
        s
    }
}

/// Turns of user -> assistant(thinking, text, toolCall) -> toolResult ->
/// assistant(text), a side branch every tenth turn, labels and thinking changes.
fn session(entries: usize) -> Vec<u8> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = Vec::new();
    let mut push = |v: Value| {
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    };
    push(
        json!({"type": "session", "version": 3, "id": "bench-session", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}),
    );
    let usage = json!({"input": 1200, "output": 300, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1500,
        "cost": {"input": 0.0036, "output": 0.0045, "cacheRead": 0, "cacheWrite": 0, "total": 0.0081}});
    let mut ids: Vec<String> = Vec::new();
    let mut leaf: Option<String> = None;
    let mut turn = 0;
    while ids.len() < entries {
        turn += 1;
        if turn % 10 == 0 && ids.len() > 20 {
            let back = rng.between(4, 20.min(ids.len() - 1));
            leaf = ids.get(ids.len() - back).cloned();
        }
        let call = format!("toolu_{:016x}", rng.next());
        let result_size = [500, 2000, 6000, 20000][rng.between(0, 3)];
        let bodies = [
            json!({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": rng.text(200)}], "timestamp": 1}}),
            json!({"type": "message", "message": {"role": "assistant", "content": [
                {"type": "thinking", "thinking": rng.text_between(200, 1200)},
                {"type": "text", "text": rng.text_between(200, 1500)},
                {"type": "toolCall", "id": call, "name": "read", "arguments": {"path": "src/lib.rs"}}],
                "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                "usage": usage, "stopReason": "toolUse", "timestamp": 2}}),
            json!({"type": "message", "message": {"role": "toolResult", "toolCallId": call, "toolName": "read",
                "content": [{"type": "text", "text": rng.text(result_size)}],
                "isError": false, "timestamp": 3}}),
            json!({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": rng.text_between(300, 2500)}],
                "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                "usage": usage, "stopReason": "stop", "timestamp": 4}}),
        ];
        let mut extra = Vec::new();
        if turn % 17 == 0 {
            extra.push(json!({"type": "label", "targetId": ids.last(), "label": format!("checkpoint-{turn}")}));
        }
        if turn % 13 == 0 {
            extra.push(json!({"type": "thinking_level_change", "thinkingLevel": "high"}));
        }
        for mut body in bodies.into_iter().chain(extra) {
            let id = format!("{:08x}", rng.next() as u32);
            if let Value::Object(fields) = &mut body {
                fields.insert("id".into(), json!(id));
                fields.insert("parentId".into(), json!(leaf));
                fields.insert(
                    "timestamp".into(),
                    json!(format!("2026-01-01T00:{:02}:{:02}.000Z", turn / 60 % 60, turn % 60)),
                );
            }
            push(body);
            leaf = Some(id.clone());
            ids.push(id);
        }
    }
    out
}

fn bench_parse(c: &mut Criterion) {
    let bytes = session(ENTRIES);
    // Check the input once, so a broken generator cannot make the numbers meaningless.
    match SessionLog::read(&bytes[..]) {
        Ok(log) => {
            let (entries, diagnostics) = log.entries_with_diagnostics();
            assert!(entries.len() >= ENTRIES, "only {} entries", entries.len());
            assert!(log.diagnostics().is_empty() && diagnostics.is_empty(), "generated session has diagnostics");
        }
        Err(e) => panic!("reading the generated session failed: {e}"),
    }

    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.sample_size(20);
    group.bench_function("SessionLog::read", |b| b.iter(|| SessionLog::read(black_box(&bytes[..]))));
    group.bench_function("SessionLog::read + into_entries", |b| {
        b.iter(|| SessionLog::read(black_box(&bytes[..])).map(|log| log.into_entries()))
    });
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    group.bench_function("scan_line (every line, one thread)", |b| {
        b.iter(|| {
            let mut objects = 0usize;
            for line in black_box(&bytes[..]).split_inclusive(|&c| c == b'\n') {
                if matches!(scan_line(line, true).0, ScanKind::Object(_)) {
                    objects += 1;
                }
            }
            objects
        })
    });
    let owned = bytes.clone();
    group.bench_function("ScannedLog::read (all threads)", |b| b.iter(|| ScannedLog::read(black_box(&owned), threads)));
    group.finish();
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
