//! Times appends to an open session: copies FILE beside itself, opens the copy
//! for writing ([`OpenMode::Write`]: the copy must be a session), appends N
//! user messages (~200 bytes each) one at a time, and prints one JSON line;
//! the copy (and its lock file) is removed afterwards.
//!
//! ```text
//! cargo run --release -p arbor-tree --example append -- FILE [N] [--fsync]
//! {"entries_before":..,"appends":..,"fsync":..,"open_secs":..,"append_secs":..,"appends_per_sec":..}
//! ```
//!
//! `append_secs` covers the appends only (each one written to the file before
//! the next, fdatasync'd with `--fsync`), not the open.

use std::error::Error;
use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use arbor_tree::log::writer::Durability;
use arbor_tree::paths::lock_path;
use arbor_tree::{OpenMode, Session, SessionOptions};

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fsync = args.iter().any(|a| a == "--fsync");
    let rest: Vec<&String> = args.iter().filter(|a| *a != "--fsync").collect();
    let file = PathBuf::from(rest.first().ok_or("usage: append FILE [N] [--fsync]")?);
    let n: usize = rest.get(1).map(|s| s.parse()).transpose()?.unwrap_or(10_000);

    let copy = PathBuf::from(format!("{}.append-bench-{}.jsonl", file.display(), std::process::id()));
    fs::copy(&file, &copy)?;
    let result = run(&copy, n, fsync);
    let _ = fs::remove_file(&copy);
    let _ = fs::remove_file(lock_path(&copy));
    println!("{}", result?);
    Ok(())
}

fn run(path: &std::path::Path, n: usize, fsync: bool) -> Result<serde_json::Value, Box<dyn Error>> {
    let durability = if fsync { Durability::Fsync } else { Durability::Buffered };
    let start = Instant::now();
    // No index: the copy is opened once, so a scan is what an open costs.
    let opts = SessionOptions { durability, index_dir: None, ..SessionOptions::default() };
    let mut s = Session::open(path, OpenMode::Write, opts)?;
    let open_secs = start.elapsed().as_secs_f64();
    let before = s.len();
    let text = "Please look at the failing test in crates/arbor-tree and explain why the leaf moves; ".repeat(2);
    let start = Instant::now();
    for i in 0..n {
        s.append_message(serde_json::json!({"role": "user", "content": format!("{text}{i}"), "timestamp": i}))?;
    }
    let append_secs = start.elapsed().as_secs_f64();
    Ok(serde_json::json!({
        "entries_before": before,
        "appends": n,
        "fsync": fsync,
        "open_secs": open_secs,
        "append_secs": append_secs,
        "appends_per_sec": if append_secs > 0.0 { n as f64 / append_secs } else { 0.0 },
    }))
}
