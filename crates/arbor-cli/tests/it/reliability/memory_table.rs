//! Every command against the target of issue #38 (item 1): peak memory at
//! most 0.3× the input's size + 64 MB, whatever its shape: a long chain of
//! entries, and a file whose one line is most of it. Each command runs as a
//! real process under GNU time (`/usr/bin/time -f %M`).
//!
//! CI runs it small (a chain of 5,000 entries, a 16 MB line: the line is
//! where a command that holds a whole line shows). A 16 MB line is small
//! beside 64 MB, so the rows held to the target on the long line are also
//! run on a line three times as long, and their peak may grow by at most
//! 0.3× what the file grew (a command that holds the line once grows by all
//! of it; the second line is left out when the first is over 64 MB: the
//! target itself tells then). The table in docs/reliability.md is this test
//! at full size, on the release binary:
//!
//! ```sh
//! ARBOR_MEMORY_ENTRIES=1000000 ARBOR_MEMORY_LINE_MB=200 \
//!   ARBOR_MEMORY_BIN=$PWD/target/release/arbor \
//!   cargo nextest run -p arbor-cli every_command_peaks --no-capture
//! ```
//!
//! Rows of commands other engineers own are measured and printed but not
//! held to the target here (marked in the table); the rows that still hold
//! the long line are held to [`LONG_LINE_TIMES`] there instead
//! (docs/reliability.md says why).

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const TIME: &str = "/usr/bin/time";

/// A command of the table: its arguments, `FILE` the session, `A` and `B`
/// its first and last entry; whether this test holds it to the target, and
/// whether on the long line too (or only to [`LONG_LINE_TIMES`]).
struct Row {
    args: &'static [&'static str],
    held: bool,
    long: bool,
}

/// Held to the target on both files.
const fn row(args: &'static [&'static str]) -> Row {
    Row { args, held: true, long: true }
}

/// Measured, but owned elsewhere: printed, not asserted.
const fn shown(args: &'static [&'static str]) -> Row {
    Row { args, held: false, long: false }
}

const ROWS: [Row; 20] = [
    row(&["tree", "FILE"]),
    row(&["tree", "FILE", "--json"]),
    row(&["path", "FILE"]),
    row(&["path", "FILE", "--json"]),
    row(&["context", "FILE"]),
    row(&["context", "FILE", "--json"]),
    row(&["context", "FILE", "--json", "--llm"]),
    row(&["dump", "FILE"]),
    row(&["dump", "FILE", "--json"]),
    row(&["check", "FILE"]),
    row(&["repair", "FILE"]),
    row(&["repair", "FILE", "--write"]),
    row(&["diff", "FILE", "A", "B"]),
    row(&["label", "FILE", "A", "x"]),
    row(&["export", "FILE", "--format", "jsonl", "--all"]),
    row(&["navigate", "FILE", "A"]),
    row(&["export", "FILE", "--format", "md"]),
    row(&["export", "FILE", "--format", "html"]),
    shown(&["ls", "--all", "--sessions-dir", "ROOT"]),
    shown(&["search", "zzz", "--sessions-dir", "ROOT"]),
];

/// What a held row with `long: false` (none is left: every row of ours meets
/// the target on the long line) may take on the long line until the target is met
/// there (docs/reliability.md, "Reliability round 3": the commands that
/// write the line's text hold it whole, one to four times over): this many
/// times the file, plus 64 MB. A command that went back to reading the line
/// again and again, or into its own copies, is caught.
const LONG_LINE_TIMES: f64 = 4.5;

/// How much more than 0.3× the file's growth a row held on the long line
/// may grow by between the two lines (the allocator's slack).
const GROWTH_SLACK_KB: u64 = 6 * 1024;

fn bin() -> String {
    std::env::var("ARBOR_MEMORY_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_arbor").to_owned())
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"00000000-0000-4000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

/// A chain of `n` user and assistant messages of about 450 bytes a line.
fn write_chain(path: &Path, n: usize) {
    let mut out = std::io::BufWriter::new(fs::File::create(path).unwrap());
    writeln!(out, "{HEADER}").unwrap();
    let pad = "lorem ipsum dolor sit amet ".repeat(10);
    for i in 0..n {
        let parent = if i == 0 { "null".to_owned() } else { format!("\"{i:08x}\"") };
        let message = if i % 2 == 0 {
            format!(r#"{{"role":"user","content":"hi {i} {pad}","timestamp":1}}"#)
        } else {
            format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"ok {i} {pad}"}}],"stopReason":"stop","timestamp":1}}"#
            )
        };
        writeln!(
            out,
            r#"{{"type":"message","id":"{:08x}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#,
            i + 1
        )
        .unwrap();
    }
    out.into_inner().unwrap().sync_all().unwrap();
}

/// A short chat whose second message is one line of `mb` MB.
fn write_long_line(path: &Path, mb: usize) {
    let mut out = std::io::BufWriter::new(fs::File::create(path).unwrap());
    writeln!(out, "{HEADER}").unwrap();
    writeln!(out, r#"{{"type":"message","id":"00000001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"hi","timestamp":1}}}}"#).unwrap();
    write!(out, r#"{{"type":"message","id":"00000002","parentId":"00000001","timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":""#).unwrap();
    let chunk = "word ".repeat(1 << 18);
    for _ in 0..(mb << 20) / chunk.len() {
        out.write_all(chunk.as_bytes()).unwrap();
    }
    writeln!(out, r#""}}],"stopReason":"stop","timestamp":1}}}}"#).unwrap();
    writeln!(out, r#"{{"type":"message","id":"00000003","parentId":"00000002","timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"bye","timestamp":1}}}}"#).unwrap();
    out.into_inner().unwrap().sync_all().unwrap();
}

/// Peak RSS in KB of `arbor args`, in `dir` with the cache `cache`; `None` when it failed.
fn peak_kb(dir: &Path, cache: &Path, args: &[String]) -> Result<u64, String> {
    let o = Command::new(TIME)
        .args(["-f", "%M", &bin()])
        .args(args)
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache)
        .env("ARBOR_IDS", "counter")
        .env("MALLOC_ARENA_MAX", "1")
        .env_remove("ARBOR_NO_INDEX")
        .env_remove("ARBOR_SESSIONS_DIR")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let kb = err.lines().last().and_then(|l| l.trim().parse().ok());
    match (o.status.success(), kb) {
        (true, Some(kb)) => Ok(kb),
        _ => Err(err.lines().next().unwrap_or("").to_owned()),
    }
}

/// The file a row measures and what it is held to.
struct Measured<'a> {
    /// What the file is, in the printed table.
    what: &'a str,
    file: &'a Path,
    /// The first and last entry's ids.
    ends: (&'a str, &'a str),
    /// True for the long line (rows not held there are held to [`LONG_LINE_TIMES`]).
    long: bool,
}

/// Runs each row of `rows` on the file (a copy for each, with its index
/// written by an earlier read); returns each row's peak in KB (`None` when
/// it failed), and pushes onto `over` the held rows over what they are held to.
fn measure(m: &Measured<'_>, rows: &[&Row], over: &mut Vec<String>) -> Vec<Option<u64>> {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    let dir = root.join("--p--");
    fs::create_dir_all(&dir).unwrap();
    let cache = d.path().join("cache");
    let what = m.what;
    let size = fs::metadata(m.file).unwrap().len();
    let limit_kb = (size as f64 * 0.3 / 1024.0) as u64 + 64 * 1024;
    let wide_kb = (size as f64 * LONG_LINE_TIMES / 1024.0) as u64 + 64 * 1024;
    eprintln!("{what}: {:.0} MB, target {:.0} MB", size as f64 / 1e6, limit_kb as f64 / 1024.0);
    let mut peaks = vec![];
    for r in rows {
        let copy = dir.join("s.jsonl");
        fs::copy(m.file, &copy).unwrap();
        let args: Vec<String> = r
            .args
            .iter()
            .map(|a| match *a {
                "FILE" => copy.to_string_lossy().into_owned(),
                "ROOT" => root.to_string_lossy().into_owned(),
                "A" => m.ends.0.to_owned(),
                "B" => m.ends.1.to_owned(),
                other => other.to_owned(),
            })
            .collect();
        // The index (and the catalog) written by a first read, as a user's later runs find them.
        let _ = peak_kb(&dir, &cache, &["path".into(), copy.to_string_lossy().into_owned()]);
        let peak = peak_kb(&dir, &cache, &args);
        let shown = r.args.iter().map(|a| if *a == "FILE" { "FILE" } else { a }).collect::<Vec<_>>().join(" ");
        let held_kb = if m.long && !r.long { wide_kb } else { limit_kb };
        let mark = match (r.held, held_kb == limit_kb) {
            (false, _) => " (not held here)",
            (true, false) => " (held to 4.5x)",
            (true, true) => "",
        };
        match &peak {
            Ok(kb) => {
                let verdict = if *kb <= limit_kb { "ok" } else { "OVER" };
                eprintln!("| {what} | `arbor {shown}` | {:.0} MB | {verdict}{mark} |", *kb as f64 / 1024.0);
                if *kb > held_kb && r.held {
                    over.push(format!("{what}: arbor {shown}: {} MB", kb / 1024));
                }
            }
            Err(e) => {
                eprintln!("| {what} | `arbor {shown}` | failed: {e} |{mark}");
                if r.held {
                    over.push(format!("{what}: arbor {shown} failed: {e}"));
                }
            }
        }
        peaks.push(peak.ok());
        for e in fs::read_dir(&dir).unwrap() {
            fs::remove_file(e.unwrap().path()).unwrap();
        }
    }
    peaks
}

#[test]
fn every_command_peaks_under_three_tenths_of_the_file_plus_64_mb() {
    if !Path::new(TIME).exists() {
        assert!(std::env::var_os("CI").is_none(), "{TIME} is missing: install the Debian package `time`");
        eprintln!("skipped: {TIME} is missing (Debian package `time`)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (chain, line, longer) =
        (d.path().join("chain.jsonl"), d.path().join("line.jsonl"), d.path().join("longer.jsonl"));
    let n = env_or("ARBOR_MEMORY_ENTRIES", 5_000);
    write_chain(&chain, n);
    let all: Vec<&Row> = ROWS.iter().collect();
    let mut over = vec![];
    let last = format!("{n:08x}");
    let what = format!("{n} entries");
    measure(&Measured { what: &what, file: &chain, ends: ("00000001", &last), long: false }, &all, &mut over);
    let mb = env_or("ARBOR_MEMORY_LINE_MB", 16);
    write_long_line(&line, mb);
    let ends = ("00000001", "00000003");
    let peaks = measure(&Measured { what: "long line", file: &line, ends, long: true }, &all, &mut over);
    // The rows held on the long line, again on one three times as long: a
    // row that holds the line grows with it, whatever 64 MB hides.
    let held: Vec<(&Row, Option<u64>)> = ROWS.iter().zip(peaks).filter(|(r, _)| r.held && r.long && mb <= 64).collect();
    if held.is_empty() {
        assert!(over.is_empty(), "over 0.3x the file + 64 MB: {over:#?}");
        return;
    }
    write_long_line(&longer, 3 * mb);
    let rows: Vec<&Row> = held.iter().map(|(r, _)| *r).collect();
    let what = format!("long line x3 ({} MB)", 3 * mb);
    let again = measure(&Measured { what: &what, file: &longer, ends, long: true }, &rows, &mut over);
    let grew_kb = (fs::metadata(&longer).unwrap().len() - fs::metadata(&line).unwrap().len()) / 1024;
    for ((r, before), after) in held.iter().zip(again) {
        if let (Some(before), Some(after)) = (before, after) {
            let growth = after.saturating_sub(*before);
            eprintln!("| growth | `arbor {}` | +{} MB for +{} MB |", r.args.join(" "), growth / 1024, grew_kb / 1024);
            if growth > grew_kb * 3 / 10 + GROWTH_SLACK_KB {
                over.push(format!(
                    "arbor {}: +{} MB for a line {} MB longer",
                    r.args.join(" "),
                    growth / 1024,
                    grew_kb / 1024
                ));
            }
        }
    }
    assert!(
        over.is_empty(),
        "over 0.3x the file + 64 MB (rows not there yet on the long line: {LONG_LINE_TIMES}x): {over:#?}"
    );
}
