//! `cargo xtask bench --mcp`: `arbor mcp` timed through a real client (the
//! MCP Python SDK, `cargo xtask mcp-clients`'s venv), against issue 35's
//! budgets: `read_context` with a budget of 20,000 characters on the
//! generated 100,000-entry session (≤ 20,000 characters, ≤ 100 ms with the
//! index), and `search_sessions` on the generated 1,000-session store
//! (≤ 200 ms warm). Each call is made once cold (the index, the catalog
//! made) and `runs` times warm; the median of the warm ones is compared.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::gen::{GenOptions, Shape};

/// The 20,000-character budget of the issue.
const BUDGET: u64 = 20_000;
const CONTEXT_MS: f64 = 100.0;
const SEARCH_MS: f64 = 200.0;

pub fn run(arbor: &Path, target: &Path, seed: u64, runs: usize) -> Result<()> {
    let python = crate::mcp_clients::ensure_py_mcp()?;
    let session =
        crate::measure::cached_session(target, GenOptions { entries: 100_000, seed, shape: Shape::Realistic })?;
    let store = target.join(format!("bench-data/mcp-store-1000-seed{seed}"));
    if !store.is_dir() {
        eprintln!("== writing a 1,000-session store into {}", store.display());
        crate::store::write_store(&store, 1000, seed, crate::store::Sizes::default())?;
    }
    let cache = target.join("bench-mcp-cache");
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&cache)?;
    let config = json!({
        "stdio": {
            "command": arbor,
            "args": ["mcp", "--sessions-dir", store],
            "env": {"ARBOR_CACHE_DIR": cache, "HOME": std::env::var("HOME").unwrap_or_default(), "PATH": std::env::var("PATH").unwrap_or_default()},
        },
        "runs": runs.max(3),
        "calls": [
            {"name": "read_context", "tool": "read_context", "args": {"session": session, "budget": BUDGET}},
            {"name": "search_sessions", "tool": "search_sessions", "args": {"query": crate::store::topic_word(0), "limit": 20}},
        ],
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bench_mcp.py");
    let o = Command::new(&python).arg(&script).arg(config.to_string()).output().context("running the MCP client")?;
    if !o.status.success() {
        bail!("the MCP client failed ({}):\n{}", o.status, String::from_utf8_lossy(&o.stderr));
    }
    let out: Value = serde_json::from_slice(&o.stdout).context("the MCP client's answer")?;
    println!("arbor mcp through the MCP Python SDK (stdio), {} warm runs, median", runs.max(3));
    println!("| call | cold ms | warm ms (median) | target | answer chars |");
    println!("|---|---:|---:|---:|---:|");
    let mut over = vec![];
    for (name, what, target_ms) in [
        ("read_context", "read_context, 100,000-entry session, budget 20,000", CONTEXT_MS),
        ("search_sessions", "search_sessions, 1,000-session store", SEARCH_MS),
    ] {
        let r = &out[name];
        if r["isError"] == true {
            bail!("{name} failed: {}", r["head"]);
        }
        let mut warm: Vec<f64> = r["warm_ms"].as_array().into_iter().flatten().filter_map(Value::as_f64).collect();
        warm.sort_by(f64::total_cmp);
        let median = warm.get(warm.len() / 2).copied().unwrap_or(f64::NAN);
        let chars = r["chars"].as_u64().unwrap_or(0);
        println!(
            "| {what} | {:.1} | {median:.1} | ≤ {target_ms:.0} | {chars} |",
            r["cold_ms"].as_f64().unwrap_or(f64::NAN)
        );
        if median > target_ms {
            over.push(format!("{name}: {median:.1} ms warm, over {target_ms} ms"));
        }
        if name == "read_context" && chars > BUDGET {
            over.push(format!("read_context answered {chars} characters, over its budget of {BUDGET}"));
        }
    }
    if !over.is_empty() {
        println!("over target: {}", over.join("; "));
    }
    Ok(())
}
