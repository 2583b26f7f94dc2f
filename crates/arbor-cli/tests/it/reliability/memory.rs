//! Memory bounded by the file (item 12 of issue #20): a command's peak
//! memory grows with the session it reads by at most 0.3× the file's growth.
//! Each command runs as a real process under GNU time (`/usr/bin/time -f
//! %M`) on sessions of N and 2N small entries; the slope is compared, so the
//! fixed cost of the binary does not count.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const TIME: &str = "/usr/bin/time";

/// A chain of `n` user and assistant messages of about 450 bytes a line
/// (the size of `cargo xtask gen-session --small`'s entries).
fn write_chain(path: &Path, n: usize) -> u64 {
    let mut out = std::io::BufWriter::new(fs::File::create(path).unwrap());
    writeln!(
        out,
        r#"{{"type":"session","version":3,"id":"00000000-0000-4000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}}"#
    )
    .unwrap();
    let pad = "lorem ipsum dolor sit amet ".repeat(10);
    for i in 0..n {
        let id = format!("{:08x}", i + 1);
        let parent = if i == 0 { "null".to_owned() } else { format!("\"{:08x}\"", i) };
        let message = if i % 2 == 0 {
            format!(r#"{{"role":"user","content":"hi {i} {pad}","timestamp":1}}"#)
        } else {
            format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"ok {i} {pad}"}}],"stopReason":"stop","timestamp":1}}"#
            )
        };
        writeln!(
            out,
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#
        )
        .unwrap();
    }
    out.into_inner().unwrap().sync_all().unwrap();
    fs::metadata(path).unwrap().len()
}

/// Peak RSS in KB of `arbor args file`, its output thrown away; without
/// `cache`, with the index turned off (every open scans the file).
fn peak_kb(cache: Option<&Path>, args: &[&str], file: &Path) -> u64 {
    let mut c = Command::new(TIME);
    match cache {
        Some(dir) => c.env("ARBOR_CACHE_DIR", dir).env_remove("ARBOR_NO_INDEX"),
        None => c.env("ARBOR_NO_INDEX", "1"),
    };
    let o = c
        .args(["-f", "%M", env!("CARGO_BIN_EXE_arbor")])
        .args(args)
        .arg(file)
        .env("HOME", "/nonexistent-home")
        .env_remove("ARBOR_SESSIONS_DIR")
        // One heap for every thread: the peak then counts what the session
        // holds, not how many per-thread heaps the allocator happened to open.
        .env("MALLOC_ARENA_MAX", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "arbor {args:?} failed: {err}");
    err.lines().last().and_then(|l| l.trim().parse().ok()).unwrap_or_else(|| panic!("no peak RSS in {err:?}"))
}

#[test]
fn peak_memory_grows_with_the_file_by_at_most_three_tenths_of_it() {
    if !Path::new(TIME).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{TIME} is missing: install the Debian package `time` (.ci/run does)"
        );
        eprintln!("skipped: {TIME} is missing (Debian package `time`)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (small, large) = (d.path().join("n.jsonl"), d.path().join("2n.jsonl"));
    let n = 20_000;
    let grown_kb = (write_chain(&large, 2 * n) - write_chain(&small, n)) / 1024;
    let cache = d.path().join("cache");
    let cache = Some(cache.as_path());
    // Through the index, every reading command; without it (a first read,
    // or the index turned off), the scan they all share, under two of them.
    let runs: [(Option<&Path>, &[&str]); 10] = [
        (cache, &["tree"]),
        (cache, &["tree", "--json"]),
        (cache, &["path"]),
        (cache, &["path", "--json"]),
        (cache, &["context"]),
        (cache, &["context", "--json"]),
        (cache, &["context", "--json", "--llm"]),
        (cache, &["dump", "--json"]),
        (None, &["tree", "--json"]),
        (None, &["context", "--json"]),
    ];
    // The first read writes the index the others open.
    for file in [&small, &large] {
        peak_kb(cache, &["path", "--json"], file);
    }
    let mut over = vec![];
    // The lower of two runs: a peak is sometimes caught a few hundred KB high.
    let low = |cache, args, file| peak_kb(cache, args, file).min(peak_kb(cache, args, file));
    for (cache, args) in runs {
        let growth = low(cache, args, &large).saturating_sub(low(cache, args, &small));
        let ratio = growth as f64 / grown_kb as f64;
        let what = format!("arbor {}{}", args.join(" "), if cache.is_none() { " (no index)" } else { "" });
        eprintln!("{what}: +{growth} KB for +{grown_kb} KB of file ({ratio:.2}x)");
        if ratio > 0.3 {
            over.push(format!("{what}: {ratio:.2}x"));
        }
    }
    assert!(over.is_empty(), "peak memory grows faster than 0.3x the file: {over:?}");
}
