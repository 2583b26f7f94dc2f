//! Times appends to an open session on a PostgreSQL server, as arbor-tree's
//! `append` example does for a file: pushes FILE to the server under a name
//! of its own, opens it for writing there, appends N user messages (~200
//! bytes each) one at a time, and prints one JSON line.
//!
//! ```text
//! cargo run --release -p arbor-pg --example pg_append -- URL FILE [N] [--fsync]
//! {"entries_before":..,"appends":..,"fsync":..,"open_secs":..,"append_secs":..,"appends_per_sec":..}
//! ```
//!
//! Each append is one transaction, committed before the next starts. With
//! `--fsync` the session asks for `synchronous_commit = on` (the server's
//! default: each commit waits for its WAL to reach disk); without it, the
//! server's own setting applies.

use std::error::Error;
use std::fs;
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use arbor_pg::{PgStore, ROOT};
use arbor_tree::log::writer::Durability;
use arbor_tree::{OpenMode, Session, SessionOptions};

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fsync = args.iter().any(|a| a == "--fsync");
    let rest: Vec<&String> = args.iter().filter(|a| *a != "--fsync").collect();
    let usage = "usage: pg_append URL FILE [N] [--fsync]";
    let url = rest.first().ok_or(usage)?;
    let file = PathBuf::from(rest.get(1).ok_or(usage)?);
    let n: usize = rest.get(2).map(|s| s.parse()).transpose()?.unwrap_or(10_000);

    let store = PgStore::connect(url)?;
    // A name of its own on the server: the file pushed from a copy in a folder of its own.
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH)?.as_nanos();
    let tmp = std::env::temp_dir().join(format!("append-bench-{}-{nanos}", std::process::id()));
    let copy = tmp.join(file.file_name().ok_or(usage)?);
    fs::create_dir_all(&tmp)?;
    fs::copy(&file, &copy)?;
    let pushed = store.push(&copy);
    let _ = fs::remove_dir_all(&tmp);
    let (key, _) = pushed?;

    let durability = if fsync { Durability::Fsync } else { Durability::Buffered };
    let opts = SessionOptions {
        durability,
        index_dir: None,
        sessions_root: Some(PathBuf::from(ROOT)),
        ..SessionOptions::default()
    }
    .with_store(store);
    let start = Instant::now();
    let mut s = Session::open(&key.path(), OpenMode::Write, opts)?;
    let open_secs = start.elapsed().as_secs_f64();
    let before = s.len();
    let text = "Please look at the failing test in crates/arbor-tree and explain why the leaf moves; ".repeat(2);
    let start = Instant::now();
    for i in 0..n {
        s.append_message(serde_json::json!({"role": "user", "content": format!("{text}{i}"), "timestamp": i}))?;
    }
    let append_secs = start.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "entries_before": before,
            "appends": n,
            "fsync": fsync,
            "open_secs": open_secs,
            "append_secs": append_secs,
            "appends_per_sec": if append_secs > 0.0 { n as f64 / append_secs } else { 0.0 },
        })
    );
    Ok(())
}
