//! `arbor mcp` through MCP clients nobody here wrote: the official Python
//! SDK (PyPI `mcp`) over stdio and over streamable HTTP, and the MCP
//! inspector's CLI mode (npm). Each lists the tools and calls them on a
//! sessions root; the answers are checked against the CLI's `--json`.
//!
//! The clients are installed on first use into the cache by `cargo xtask
//! mcp-clients`. Without python3 or node the tests skip with one line on
//! stderr, unless `ARBOR_REQUIRE_MCP_CLIENTS` is set (CI), where they fail.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::{arbor, cache_dir, fixtures, json, stderr, stdout};

const REQUIRED_ENV: &str = "ARBOR_REQUIRE_MCP_CLIENTS";

/// The clients as `cargo xtask mcp-clients` installs them.
struct Clients {
    python: PathBuf,
    inspector: PathBuf,
}

impl Clients {
    /// The clients, or `None` (after one line on stderr) without python3 or node.
    fn find(test: &str) -> Option<Clients> {
        for tool in ["python3", "node"] {
            let found = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
            if !found {
                assert!(
                    std::env::var_os(REQUIRED_ENV).is_none(),
                    "{test}: {REQUIRED_ENV} is set but {tool} is missing"
                );
                eprintln!("{test}: skipped: {tool} is not on the PATH, so the MCP clients cannot run here (CI has it)");
                return None;
            }
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let o = Command::new(cargo)
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .args(["xtask", "mcp-clients"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{test}: cargo xtask mcp-clients failed:\n{}", stderr(&o));
        let out = stdout(&o);
        let mut lines = out.lines();
        let python = PathBuf::from(lines.next().unwrap());
        let inspector = PathBuf::from(lines.next().unwrap());
        Some(Clients { python, inspector })
    }

    /// Runs the Python client with `config` (see mcp_client.py): its answer.
    fn python(&self, config: &Value) -> Value {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp_client.py");
        let o = Command::new(&self.python).arg(script).arg(config.to_string()).output().unwrap();
        assert!(o.status.success(), "the Python MCP client failed ({}):\n{}", o.status, stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    }
}

/// A sessions root holding the demo session twice (one in another cwd).
fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    for (cwd, name) in [("--home-dev-wordfreq--", "2026-03-14T09-12-03-418Z_fe01ce2a.jsonl"), ("--other--", "b.jsonl")]
    {
        std::fs::create_dir_all(root.join(cwd)).unwrap();
        std::fs::copy(fixtures().join("demo/demo.jsonl"), root.join(cwd).join(name)).unwrap();
    }
    (dir, root)
}

/// The environment `arbor mcp` runs in (as `arbor` in the other tests).
fn server_env() -> Value {
    json!({
        "ARBOR_CACHE_DIR": cache_dir().to_str().unwrap(),
        "HOME": "/nonexistent-home",
        "PATH": std::env::var("PATH").unwrap_or_default(),
    })
}

/// The calls every client makes: each read tool once, and errors.
fn calls(file: &str) -> Value {
    json!([
        {"tool": "search_sessions", "args": {"query": "\"count_words\""}},
        {"tool": "list_sessions", "args": {}},
        {"tool": "read_entries", "args": {"session": file, "ids": ["7a828db3", "6a49"]}},
        {"tool": "read_tree", "args": {"session": file, "entry": "220509fd", "width": 120}},
        {"tool": "read_context", "args": {"session": file, "budget": 2000}},
        {"tool": "diff_branches", "args": {"session": file, "a": "6a490938", "b": "4f487dd5"}},
        {"tool": "read_context", "args": {"session": "no-such-session"}},
        {"tool": "read_context", "args": {"session": file, "budget": 10}},
        {"tool": "search_sessions", "args": {"query": "\"count_words\"", "limit": 1}},
    ])
}

/// The names of `tools`, sorted.
fn names(tools: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    names.sort();
    names
}

fn sorted(names: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    names.sort();
    names
}

/// The answer of call `k`, which must have succeeded, as JSON.
fn answer(out: &Value, k: usize) -> Value {
    let call = &out["calls"][k];
    assert_eq!(call["isError"], false, "call {k} failed: {call}");
    serde_json::from_str(call["text"].as_str().unwrap()).unwrap_or_else(|_| call["text"].clone())
}

/// Checks what a client got against the CLI's `--json` answers on `root`.
fn check(out: &Value, root: &Path, file: &Path) {
    let r = root.to_str().unwrap();
    let f = file.to_str().unwrap();
    assert_eq!(names(&out["tools"]), sorted(&arbor_mcp::READ_TOOLS), "read-only by default: no write tool is offered");
    for t in out["tools"].as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert!(t["inputSchema"]["properties"]["budget"].is_object(), "every tool takes a budget: {t}");
        assert!(t["inputSchema"]["properties"]["cursor"].is_object(), "every tool takes a cursor: {t}");
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
    }
    // search_sessions: the hits `arbor search --json` prints.
    let cli = json(&arbor(&["search", "\"count_words\"", "--all", "--sessions-dir", r, "--json"]));
    assert_eq!(answer(out, 0)["hits"], cli);
    // list_sessions: `arbor ls --json`'s sessions, in its order.
    let ls = json(&arbor(&["ls", "--all", "--sessions-dir", r, "--json"]));
    let listed = answer(out, 1);
    let ids = |v: &Value, key: &str| -> Vec<Value> { v.as_array().unwrap().iter().map(|s| s[key].clone()).collect() };
    assert_eq!(ids(&listed["sessions"], "id"), ids(&ls, "id"));
    assert_eq!(ids(&listed["sessions"], "messageCount"), ids(&ls, "messageCount"));
    assert_eq!(listed["total"], ls.as_array().unwrap().len());
    // read_entries: the entries `arbor dump --json` prints, by id and by prefix.
    let dump = json(&arbor(&["dump", f, "--json"]));
    let entries = answer(out, 2)["entries"].clone();
    for (got, id) in entries.as_array().unwrap().iter().zip(["7a828db3", "6a490938"]) {
        let want = dump["entries"].as_array().unwrap().iter().find(|e| e["id"] == id).unwrap();
        assert_eq!(got["id"], want["id"]);
        assert_eq!(got["parentId"], want["parentId"]);
        assert_eq!(got["timestamp"], want["timestamp"]);
    }
    assert!(entries[0]["text"].as_str().unwrap().contains("case-insensitive"), "{entries}");
    // read_tree from the root: every row `arbor tree` draws, after its entry id.
    let tree = stdout(&arbor(&["tree", f, "--width", "120"]));
    let drawn = answer(out, 3);
    let drawn = drawn.as_str().unwrap();
    for row in tree.lines() {
        assert!(drawn.contains(row.trim_end()), "read_tree lacks the row {row:?}:\n{drawn}");
    }
    // read_context: within its budget, the leaf's newest message last.
    let context = json(&arbor(&["context", f, "--json"]));
    let text = answer(out, 4);
    let text = text.as_str().unwrap();
    assert!(text.chars().count() <= 2000, "{}", text.chars().count());
    let n = context["messages"].as_array().unwrap().len();
    assert!(text.contains(&format!("{n} messages in the model's context")), "{text}");
    assert!(text.contains("older message(s) not shown"), "{text}");
    // diff_branches: `arbor diff --json`, and the messages of each side.
    let diff = json(&arbor(&["diff", f, "6a490938", "4f487dd5", "--json"]));
    let got = answer(out, 5);
    assert_eq!(got["diff"], diff);
    assert!(!got["messages"].as_array().unwrap().is_empty(), "{got}");
    // Errors are tool errors with a clear message; the server goes on.
    let (unknown, small) = (&out["calls"][6], &out["calls"][7]);
    assert_eq!(unknown["isError"], true);
    assert!(unknown["text"].as_str().unwrap().contains("no-such-session"), "{unknown}");
    assert_eq!(small["isError"], true);
    assert!(small["text"].as_str().unwrap().contains("too small"), "{small}");
    // A limit pages with a cursor.
    let first = answer(out, 8);
    assert_eq!(first["hits"].as_array().unwrap().len(), 1);
    assert!(first["nextCursor"].is_string(), "{first}");
    // Resources: each session as arbor://session/<id>, its Markdown export.
    let uris: Vec<&str> = out["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert!(uris.iter().all(|u| u.starts_with("arbor://session/")), "{uris:?}");
    assert_eq!(uris.len(), 2, "{uris:?}");
    assert!(out["resource"].as_str().unwrap().contains("case-insensitive"));
    assert!(!out["templates"].as_array().unwrap().is_empty());
    assert!(!out["prompts"].as_array().unwrap().is_empty());
}

fn demo_file(root: &Path) -> PathBuf {
    root.join("--home-dev-wordfreq--/2026-03-14T09-12-03-418Z_fe01ce2a.jsonl")
}

#[test]
fn the_python_sdk_calls_every_tool_over_stdio() {
    let Some(clients) = Clients::find("the_python_sdk_calls_every_tool_over_stdio") else { return };
    let (_dir, root) = root();
    let file = demo_file(&root);
    let config = json!({
        "stdio": {
            "command": env!("CARGO_BIN_EXE_arbor"),
            "args": ["mcp", "--sessions-dir", root.to_str().unwrap()],
            "env": server_env(),
        },
        "calls": calls(file.to_str().unwrap()),
    });
    let out = clients.python(&config);
    check(&out, &root, &file);
}

/// `arbor mcp --http ADDR` running: its URL from the line it prints.
struct HttpServer {
    child: Child,
    url: String,
    token: Option<String>,
}

impl HttpServer {
    fn start(root: &Path, addr: &str, extra: &[&str]) -> HttpServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
            .args(["mcp", "--http", addr, "--sessions-dir", root.to_str().unwrap()])
            .args(extra)
            .env("ARBOR_CACHE_DIR", cache_dir())
            .env("HOME", "/nonexistent-home")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let url = first.rsplit(" on ").next().unwrap().split(',').next().unwrap().to_owned();
        let token = if first.contains("other machines") {
            let line = lines.next().unwrap().unwrap();
            Some(line.split("Bearer ").nth(1).unwrap().split('`').next().unwrap().to_owned())
        } else {
            None
        };
        HttpServer { child, url, token }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_python_sdk_calls_every_tool_over_streamable_http() {
    let Some(clients) = Clients::find("the_python_sdk_calls_every_tool_over_streamable_http") else { return };
    let (_dir, root) = root();
    let file = demo_file(&root);
    let server = HttpServer::start(&root, "127.0.0.1:0", &[]);
    assert!(server.url.starts_with("http://127.0.0.1:") && server.url.ends_with("/mcp"), "{}", server.url);
    assert!(server.token.is_none(), "loopback needs no token");
    let config = json!({"http": {"url": server.url}, "calls": calls(file.to_str().unwrap())});
    let out = clients.python(&config);
    check(&out, &root, &file);
    // A page another site's script sends here under its own name (DNS rebinding) is refused.
    let authority = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    assert!(status_of(&authority, &authority).starts_with("HTTP/1.1 2"), "the server's own name is served");
    assert!(status_of(&authority, "rebound.example").starts_with("HTTP/1.1 4"), "another Host is refused");
}

/// The status line of an MCP `initialize` POSTed to `authority` with `Host: host`.
fn status_of(authority: &str, host: &str) -> String {
    use std::io::{Read, Write};
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).unwrap();
    String::from_utf8_lossy(&head[..n]).lines().next().unwrap_or_default().to_owned()
}

#[test]
fn off_loopback_every_request_needs_the_token() {
    let Some(clients) = Clients::find("off_loopback_every_request_needs_the_token") else { return };
    let (_dir, root) = root();
    // 0.0.0.0 is off loopback: a token is made and printed once.
    let server = HttpServer::start(&root, "0.0.0.0:0", &[]);
    let token = server.token.clone().expect("a token off loopback");
    let url = server.url.replace("0.0.0.0", "127.0.0.1");
    let script = |headers: Value| {
        let config = json!({"http": {"url": url, "headers": headers}, "calls": []});
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp_client.py");
        Command::new(&clients.python).arg(script).arg(config.to_string()).output().unwrap()
    };
    let refused = script(json!({}));
    assert!(!refused.status.success(), "no token, yet the client was served");
    assert!(stderr(&refused).contains("401"), "{}", stderr(&refused));
    let wrong = script(json!({"Authorization": "Bearer not-the-token"}));
    assert!(!wrong.status.success());
    let served = script(json!({"Authorization": format!("Bearer {token}")}));
    assert!(served.status.success(), "{}", stderr(&served));
    let out: Value = serde_json::from_slice(&served.stdout).unwrap();
    assert_eq!(out["tools"].as_array().unwrap().len(), arbor_mcp::READ_TOOLS.len());
}

#[test]
fn write_tools_are_offered_only_when_allowed_and_write_through_the_lock() {
    let Some(clients) = Clients::find("write_tools_are_offered_only_when_allowed") else { return };
    let (_dir, root) = root();
    let file = demo_file(&root);
    let f = file.to_str().unwrap();
    let config = json!({
        "stdio": {
            "command": env!("CARGO_BIN_EXE_arbor"),
            "args": ["mcp", "--allow-writes", "--sessions-dir", root.to_str().unwrap()],
            "env": server_env(),
        },
        "calls": [
            {"tool": "label_entry", "args": {"session": f, "entry": "7a828db3", "label": "case question"}},
            {"tool": "set_session_name", "args": {"session": f, "name": "wordfreq casing"}},
            {"tool": "label_entry", "args": {"session": f, "entry": "7a828db3", "label": "two\nlines"}},
        ],
    });
    let out = clients.python(&config);
    let want: Vec<&str> = arbor_mcp::READ_TOOLS.iter().chain(&arbor_mcp::WRITE_TOOLS).copied().collect();
    assert_eq!(names(&out["tools"]), sorted(&want));
    answer(&out, 0);
    answer(&out, 1);
    assert_eq!(out["calls"][2]["isError"], true, "a label with a newline is refused");
    let dump = json(&arbor(&["dump", f, "--json"]));
    let last = dump["entries"].as_array().unwrap().iter().rev().take(2).collect::<Vec<_>>();
    assert_eq!(last[0]["name"], "wordfreq casing", "{last:?}");
    assert_eq!(last[1]["label"], "case question", "{last:?}");
    assert_eq!(last[1]["targetId"], "7a828db3", "{last:?}");
}

#[test]
fn the_inspector_cli_lists_tools_and_searches_from_an_mcp_json() {
    let Some(clients) = Clients::find("the_inspector_cli_lists_tools_and_searches") else { return };
    let (dir, root) = root();
    // The generic mcp.json of docs/mcp.md, with this test's binary and root.
    let config = json!({"mcpServers": {"arbor": {
        "command": env!("CARGO_BIN_EXE_arbor"),
        "args": ["mcp", "--sessions-dir", root.to_str().unwrap()],
        "env": {"ARBOR_CACHE_DIR": cache_dir().to_str().unwrap(), "HOME": "/nonexistent-home"},
    }}});
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let inspector = |args: &[&str]| {
        let o = Command::new("node")
            .arg(&clients.inspector)
            .args(["--cli", "--config", path.to_str().unwrap(), "--server", "arbor"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "inspector {args:?} failed:\n{}\n{}", stdout(&o), stderr(&o));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    let listed = inspector(&["--method", "tools/list"]);
    assert_eq!(names(&listed["tools"]), sorted(&arbor_mcp::READ_TOOLS));
    let called =
        inspector(&["--method", "tools/call", "--tool-name", "search_sessions", "--tool-arg", "query=count_words"]);
    assert_ne!(called["isError"], Value::Bool(true), "{called}");
    let text: Value = serde_json::from_str(called["content"][0]["text"].as_str().unwrap()).unwrap();
    let cli = json(&arbor(&["search", "count_words", "--all", "--sessions-dir", root.to_str().unwrap(), "--json"]));
    assert_eq!(text["hits"], cli);
}

/// The code blocks of `docs/mcp.md` fenced with `lang`.
fn documented(lang: &str) -> Vec<String> {
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/mcp.md")).unwrap();
    let fence = format!("```{lang}\n");
    page.split(&fence).skip(1).map(|rest| rest.split("```").next().unwrap().to_owned()).collect()
}

/// The documented configurations of docs/mcp.md, parsed as each host
/// would (`claude mcp add NAME -- COMMAND ARGS…`, Codex's TOML, an
/// `mcp.json`), start a server the Python client lists the tools of: the
/// sessions are found where a user's are, under `~/.pi/agent/sessions`.
#[test]
fn the_documented_host_configurations_start_the_server() {
    let Some(clients) = Clients::find("the_documented_host_configurations_start_the_server") else { return };
    let home = tempfile::tempdir().unwrap();
    let (_dir, root) = root();
    let sessions = home.path().join(".pi/agent/sessions");
    std::fs::create_dir_all(sessions.parent().unwrap()).unwrap();
    std::fs::rename(&root, &sessions).unwrap();
    let mut servers: Vec<(String, String, Vec<String>)> = vec![];
    let claude = documented("sh").into_iter().flat_map(|b| b.lines().map(str::to_owned).collect::<Vec<_>>());
    let claude = claude.filter(|l| l.starts_with("claude mcp add") && l.contains(" -- ")).collect::<Vec<_>>();
    assert!(!claude.is_empty(), "docs/mcp.md shows no `claude mcp add … -- …` line");
    for line in claude {
        let command: Vec<String> = line.split(" -- ").nth(1).unwrap().split_whitespace().map(str::to_owned).collect();
        servers.push((format!("claude: {line}"), command[0].clone(), command[1..].to_vec()));
    }
    let codex = documented("toml");
    assert_eq!(codex.len(), 1, "one Codex snippet");
    let codex: toml::Table = toml::from_str(&codex[0]).unwrap();
    let entry = &codex["mcp_servers"]["arbor"];
    let args = entry["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
    servers.push(("codex".into(), entry["command"].as_str().unwrap().to_owned(), args));
    let generic = documented("json");
    let generic: Value = serde_json::from_str(generic.iter().find(|b| b.contains("mcpServers")).unwrap()).unwrap();
    let entry = &generic["mcpServers"]["arbor"];
    let args = entry["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
    servers.push(("mcp.json".into(), entry["command"].as_str().unwrap().to_owned(), args));
    for (host, command, args) in servers {
        assert_eq!(command, "arbor", "{host}: the documented command is `arbor` on the PATH");
        let mut env = server_env();
        env["HOME"] = json!(home.path().to_str().unwrap());
        let config = json!({
            "stdio": {"command": env!("CARGO_BIN_EXE_arbor"), "args": args, "env": env},
            "calls": [{"tool": "list_sessions", "args": {}}],
        });
        let out = clients.python(&config);
        assert_eq!(out["tools"].as_array().unwrap().len(), arbor_mcp::READ_TOOLS.len(), "{host}");
        assert_eq!(answer(&out, 0)["total"], 2, "{host}: {out}");
    }
}

/// `arbor mcp --store URL` serves the sessions of a PostgreSQL server
/// (`ARBOR_TEST_PG`) as it serves files: the same hits as `arbor search
/// --store … --json`, a context read from the server, and with
/// `--allow-writes` a label written there through the server's lock.
#[test]
fn over_postgres_the_tools_answer_from_the_server() {
    let Some(db) = arbor_test_support::pg::TestDb::new("mcp_over_postgres") else { return };
    let Some(clients) = Clients::find("over_postgres_the_tools_answer_from_the_server") else { return };
    let (_dir, root) = root();
    let file = demo_file(&root);
    let pushed = arbor(&["push", file.to_str().unwrap(), "--to", &db.url]);
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    let name = "--home-dev-wordfreq--/2026-03-14T09-12-03-418Z_fe01ce2a.jsonl";
    let config = json!({
        "stdio": {
            "command": env!("CARGO_BIN_EXE_arbor"),
            "args": ["mcp", "--store", db.url, "--allow-writes"],
            "env": server_env(),
        },
        "calls": [
            {"tool": "search_sessions", "args": {"query": "\"count_words\""}},
            {"tool": "list_sessions", "args": {}},
            {"tool": "read_context", "args": {"session": "fe01ce2a", "budget": 3000}},
            {"tool": "label_entry", "args": {"session": name, "entry": "7a828db3", "label": "from mcp"}},
        ],
    });
    // The CLI's answer before the label is written.
    let cli = json(&arbor(&["search", "\"count_words\"", "--all", "--store", &db.url, "--json"]));
    let out = clients.python(&config);
    assert!(!cli.as_array().unwrap().is_empty());
    assert_eq!(answer(&out, 0)["hits"], cli);
    assert_eq!(answer(&out, 1)["total"], 1);
    let context = answer(&out, 2);
    assert!(context.as_str().unwrap().contains("at entry 6a490938"), "{context}");
    answer(&out, 3);
    let dump = json(&arbor(&["dump", name, "--store", &db.url, "--json"]));
    let last = dump["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["targetId"].as_str(), last["label"].as_str()), (Some("7a828db3"), Some("from mcp")), "{last}");
}
