//! `arbor serve` end to end: the real binary on a free port, asked by plain
//! HTTP (the guard: `Host`, the token off loopback, names from URLs, writes
//! refused unless allowed, a write through the session's lock) and by
//! headless Chromium (the list, search across sessions, a hit opening the
//! page at its entry, an entry appended by another process shown in place,
//! a new session appearing in the list; the usage view's chart, one bar per
//! day). The usage endpoint's JSON is `arbor usage --json`'s on the same
//! sessions, over local files and a PostgreSQL store. Screenshots go to
//! `target/tmp/arbor-serve/`.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use arbor_test_support::browser::{eval, until};
use arbor_tree::{OpenMode, Session, SessionOptions};
use serde_json::Value;

use crate::{cache_dir, fixtures};

const DIR: &str = "--home-dev-wordfreq--";
const FILE: &str = "2026-03-14T09-12-03-418Z_fe01ce2a-7fba-48fa-baed-7c982a04e229.jsonl";

/// A sessions root holding the demo session, as pi lays it out.
fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("sessions").join(DIR).join(FILE);
    fs::create_dir_all(session.parent().unwrap()).unwrap();
    fs::copy(fixtures().join("demo/demo.jsonl"), &session).unwrap();
    (dir, session)
}

/// The demo session again two days later (another id, other times: other
/// replies, not a fork's copies), beside the first.
fn second_day(session: &Path) -> PathBuf {
    let text = fs::read_to_string(fixtures().join("demo/demo.jsonl")).unwrap();
    let text = text
        .replace("2026-03-14", "2026-03-16")
        .replace("fe01ce2a-7fba-48fa-baed-7c982a04e229", "5ec0d000-0000-4000-8000-00000000d002");
    let other = session.parent().unwrap().join("2026-03-16T09-12-03-418Z_5ec0d000-0000-4000-8000-00000000d002.jsonl");
    fs::write(&other, text).unwrap();
    other
}

/// `arbor usage ARGS --json` over the sessions under `dir` (or the store), as a user runs it.
fn usage_json(dir: &Path, store: Option<&str>, args: &[&str]) -> Value {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.arg("usage")
        .args(args)
        .arg("--json")
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache_dir())
        .env("ARBOR_SESSIONS_DIR", dir.join("sessions"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("XDG_DATA_HOME")
        .current_dir(dir);
    match store {
        Some(url) => c.env("ARBOR_STORE", url),
        None => c.env_remove("ARBOR_STORE"),
    };
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `/api/usage?report=R` is `arbor usage R --json`, for every report the view draws.
fn assert_usage_matches(addr: SocketAddr, dir: &Path, store: Option<&str>) {
    for report in ["daily", "model", "project", "session"] {
        let served = get(addr, &format!("/api/usage?report={report}"), &[]);
        assert_eq!(served.status, 200, "{}", served.body);
        assert_eq!(served.json(), usage_json(dir, store, &[report]), "{report}");
    }
}

/// `arbor serve ARGS` over the sessions under `dir`, ended (with its process
/// group) when dropped.
struct Serving {
    child: Child,
    /// The URL it printed.
    url: String,
    /// Everything it wrote on stderr until it printed the URL.
    said: String,
    /// Its stderr, as it comes.
    err: Receiver<String>,
}

impl Serving {
    fn start(dir: &Path, args: &[&str]) -> Serving {
        let mut child =
            std::os::unix::process::CommandExt::process_group(&mut Command::new(env!("CARGO_BIN_EXE_arbor")), 0)
                .arg("serve")
                .args(args)
                .env("HOME", "/nonexistent-home")
                .env("ARBOR_CACHE_DIR", cache_dir())
                .env("ARBOR_SESSIONS_DIR", dir.join("sessions"))
                .env_remove("ARBOR_STORE")
                .current_dir(dir)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
        let (tx, rx) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut serving = Serving { child, url: String::new(), said: String::new(), err: rx };
        while serving.url.is_empty() {
            let Ok(line) = serving.err.recv_timeout(Duration::from_secs(20)) else {
                panic!("no URL from arbor serve: {}", serving.said);
            };
            serving.said.push_str(&line);
            serving.said.push('\n');
            if let Some(at) = line.find("http://") {
                serving.url = line[at..].split_whitespace().next().unwrap().to_owned();
            }
        }
        serving
    }

    fn addr(&self) -> SocketAddr {
        let host = self.url.trim_start_matches("http://").split('/').next().unwrap();
        host.parse().unwrap()
    }

    /// The token in the URL, if any.
    fn token(&self) -> Option<&str> {
        self.url.split_once("token=").map(|(_, t)| t)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An answer: status, head (lower case), body.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One HTTP/1.1 request to `addr`, with `Host` as given (or the address).
fn ask(addr: SocketAddr, method: &str, target: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!("{method} {target} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    // Bodies of a known length come whole; chunked ones are read by JSON's end.
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_owned() };
    Answer { status, head: head.to_ascii_lowercase(), body }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

fn get(addr: SocketAddr, target: &str, headers: &[(&str, &str)]) -> Answer {
    ask(addr, "GET", target, headers, "")
}

fn label_url() -> String {
    format!("/s/{DIR}/{FILE}/label")
}

const JSON: (&str, &str) = ("Content-Type", "application/json");

#[test]
fn on_loopback_it_answers_its_own_host_checks_names_and_refuses_writes() {
    let (dir, session) = root();
    let serving = Serving::start(dir.path(), &["--addr", "127.0.0.1:0"]);
    let addr = serving.addr();
    assert!(serving.token().is_none(), "no token on loopback: {}", serving.url);
    assert!(serving.said.contains("read-only"), "{}", serving.said);

    let list = get(addr, "/api/sessions", &[]);
    assert_eq!(list.status, 200, "{}", list.body);
    let sessions = list.json()["sessions"].as_array().unwrap().clone();
    assert_eq!(sessions.len(), 1);
    assert_eq!((sessions[0]["dir"].as_str(), sessions[0]["file"].as_str()), (Some(DIR), Some(FILE)));
    assert!(
        !list.body.contains(dir.path().join("sessions").join(DIR).to_str().unwrap()),
        "no path of this machine per session"
    );

    let hits = get(addr, "/api/search?q=different%20words", &[]).json();
    let hit = hits["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["entryId"] == "7a828db3")
        .expect("the first prompt is a hit");
    assert_eq!(hit["sessionName"], "wordfreq: case, punctuation, --top");
    assert_eq!(hit["onActivePath"], true);
    assert!(hit["marks"].as_array().is_some_and(|m| !m.is_empty()));
    assert_eq!(get(addr, "/api/search?q=re:(", &[]).status, 400, "a bad query is the asker's fault");

    let page = get(addr, &format!("/s/{DIR}/{FILE}"), &[]);
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("id=\"arbor-served\"") && page.body.contains("</html>"),
        "the export's page, served whole"
    );

    // A page made before its stream started (or a stream that reconnects) gets what it missed first.
    let mut events = TcpStream::connect(addr).unwrap();
    let req = format!("GET /s/{DIR}/{FILE}/events?have=37 HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    events.write_all(req.as_bytes()).unwrap();
    read_events_until(&mut events, "id: 39\n");
    let mut resumed = TcpStream::connect(addr).unwrap();
    let req = format!("GET /s/{DIR}/{FILE}/events HTTP/1.1\r\nHost: {addr}\r\nLast-Event-ID: 38\r\n\r\n");
    resumed.write_all(req.as_bytes()).unwrap();
    read_events_until(&mut resumed, "\"6a490938\"");

    // DNS rebinding: a name that resolves here is not this server's address.
    let rebound = get(addr, "/api/sessions", &[("Host", &format!("evil.example:{}", addr.port()))]);
    assert_eq!(rebound.status, 403, "{}", rebound.body);
    assert!(!rebound.body.contains("wordfreq"));

    // Names from the URL never become paths by themselves.
    for bad in ["/s/..%2F..%2Fetc/passwd", &format!("/s/{DIR}/..%2F{FILE}"), "/s/%2Ftmp/x.jsonl", "/s/..%00/x"] {
        let a = get(addr, bad, &[]);
        assert_eq!(a.status, 400, "{bad}: {}", a.body);
    }
    let unknown = get(addr, &format!("/s/{DIR}/other.jsonl"), &[]);
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(get(addr, &format!("/s/{DIR}/other.jsonl/events"), &[]).status, 404);

    // Read-only: every write refused, the file untouched.
    let before = fs::read(&session).unwrap();
    let write = ask(addr, "POST", &label_url(), &[JSON], r#"{"entry":"7a828db3","label":"x"}"#);
    assert_eq!(write.status, 403, "{}", write.body);
    assert!(write.body.contains("--allow-writes"));
    assert_eq!(fs::read(&session).unwrap(), before);
    assert!(get(addr, "/", &[]).head.contains("content-security-policy"), "the list's page has its policy");
}

#[test]
fn off_loopback_every_request_needs_the_token_and_allowed_writes_take_the_lock() {
    let (dir, session) = root();
    let serving = Serving::start(dir.path(), &["--addr", "0.0.0.0:0", "--allow-writes"]);
    let token = serving.token().expect("a token off loopback").to_owned();
    assert_eq!(token.len(), 64);
    assert_eq!(serving.said.matches(&token).count(), 1, "the token is shown once: {}", serving.said);
    let addr: SocketAddr = format!("127.0.0.1:{}", serving.addr().port()).parse().unwrap();

    // Without the token, nothing; with it (header, or the cookie the first URL sets), served.
    for target in ["/", "/api/sessions", &format!("/s/{DIR}/{FILE}"), "/api/search?q=hello"] {
        let a = get(addr, target, &[]);
        assert_eq!(a.status, 401, "{target}: {}", a.body);
        assert!(!a.body.contains("wordfreq"), "{target}");
    }
    assert_eq!(get(addr, "/api/sessions", &[("Authorization", "Bearer nope")]).status, 401);
    let bearer = format!("Bearer {token}");
    assert_eq!(get(addr, "/api/sessions", &[("Authorization", &bearer)]).status, 200);
    let first = get(addr, &format!("/?token={token}"), &[]);
    assert_eq!(first.status, 303, "{}", first.body);
    assert!(
        first.head.contains("location: /\r\n") || first.head.ends_with("location: /"),
        "the token leaves the URL: {}",
        first.head
    );
    let cookie =
        first.head.lines().find_map(|l| l.strip_prefix("set-cookie: ")).unwrap().split(';').next().unwrap().to_owned();
    assert!(first.head.contains("httponly") && first.head.contains("samesite=strict"), "{}", first.head);
    let by_cookie = get(addr, "/api/sessions", &[("Cookie", &cookie)]);
    assert_eq!(by_cookie.status, 200);
    assert!(by_cookie.body.contains("wordfreq"));
    assert_eq!(get(addr, "/?token=nope", &[]).status, 401);

    // Writes: JSON from this origin only, then through the lock.
    let auth = ("Authorization", bearer.as_str());
    let body = r#"{"entry":"7a828db3","label":"from the page"}"#;
    let other = ask(addr, "POST", &label_url(), &[auth, JSON, ("Origin", "http://evil.example")], body);
    assert_eq!(other.status, 403, "{}", other.body);
    let form = ask(addr, "POST", &label_url(), &[auth, ("Content-Type", "application/x-www-form-urlencoded")], body);
    assert_eq!(form.status, 415, "{}", form.body);
    let big = format!(r#"{{"entry":"7a828db3","label":"{}"}}"#, "x".repeat(64 * 1024));
    assert_eq!(ask(addr, "POST", &label_url(), &[auth, JSON], &big).status, 413, "bodies are bounded");

    // Another process holds the session's lock: refused with its pid.
    let held = Session::open(&session, OpenMode::Write, SessionOptions::default()).unwrap();
    let locked = ask(addr, "POST", &label_url(), &[auth, JSON], body);
    assert_eq!(locked.status, 409, "{}", locked.body);
    assert!(locked.body.contains(&std::process::id().to_string()), "the holder's pid: {}", locked.body);
    drop(held);

    let origin = format!("http://{addr}");
    let written = ask(addr, "POST", &label_url(), &[auth, JSON, ("Origin", &origin)], body);
    assert_eq!(written.status, 200, "{}", written.body);
    let s = Session::open(&session, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
    assert_eq!(
        s.label("7a828db3").map(|l| l.map(|l| l.text.as_str())).unwrap(),
        Some("from the page"),
        "the label is in the file"
    );
    let unknown = ask(addr, "POST", &label_url(), &[auth, JSON], r#"{"entry":"nope","label":"x"}"#);
    assert_eq!(unknown.status, 404, "{}", unknown.body);
}

/// Where the browser test leaves its screenshots.
fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("arbor-serve");
    fs::create_dir_all(&dir).unwrap();
    dir
}

async fn shot(b: &arbor_test_support::browser::Browser, name: &str) {
    fs::write(artifacts().join(name), b.client.screenshot().await.unwrap()).unwrap();
}

/// A user message under `parent`, as pi appends it.
fn message(id: &str, parent: &str, text: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-03-14T09:30:00.000Z","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}]}}}}"#
    ) + "\n"
}

#[test]
fn its_usage_endpoint_is_arbor_usage_json_and_its_view_draws_it_without_script() {
    let (dir, session) = root();
    second_day(&session);
    let serving = Serving::start(dir.path(), &["--addr", "127.0.0.1:0"]);
    let addr = serving.addr();
    assert_usage_matches(addr, dir.path(), None);
    let daily = get(addr, "/api/usage", &[]).json();
    assert_eq!(daily["daily"].as_array().map(Vec::len), Some(2), "{daily}");
    assert!(daily["totals"]["totalCost"].as_f64().unwrap() > 0.0, "{daily}");

    let view = get(addr, "/usage", &[]);
    assert_eq!(view.status, 200);
    let csp = view.head.lines().find(|l| l.starts_with("content-security-policy:")).unwrap().to_owned();
    assert!(csp.contains("default-src 'none'") && !csp.contains("script-src"), "{csp}");
    assert!(!view.body.contains("<script"), "drawn without script");
    assert_eq!(view.body.matches("<rect class=\"bar\"").count(), 4, "a bar per day, in both charts");
    assert!(view.body.contains("claude-sonnet-4-5") && view.body.contains("/home/dev/wordfreq"));
    // Narrowed by the form's fields; a bad one is said, naming it.
    let one = get(addr, "/usage?since=2026-03-15&until=&cwd=", &[]);
    assert_eq!(one.body.matches("<rect class=\"bar\"").count(), 2, "{}", one.body);
    let bad = get(addr, "/api/usage?since=soon", &[]);
    assert_eq!(bad.status, 400);
    assert!(bad.json()["error"].as_str().unwrap().starts_with("since:"), "{}", bad.body);
    let bad = get(addr, "/api/usage?report=hourly", &[]);
    assert_eq!(bad.status, 400, "{}", bad.body);
}

#[test]
fn in_headless_chromium_the_list_search_a_page_and_live_appends() {
    let Some((chromium, chromedriver)) = arbor_test_support::browser::tools() else { return };
    let (dir, session) = root();
    let serving = Serving::start(dir.path(), &["--addr", "127.0.0.1:0", "--allow-writes"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let browser = arbor_test_support::browser::start(&chromium, &chromedriver).await;
        let c = &browser.client;
        c.goto(&serving.url).await.unwrap();
        until(c, "return document.documentElement.dataset.ready === '1'").await;
        assert_eq!(eval(c, "return document.querySelectorAll('#list tbody tr').length").await, 1);
        let row = eval(c, "return document.querySelector('#list tbody tr').textContent").await;
        assert!(row.as_str().unwrap().contains("wordfreq: case, punctuation"), "{row}");
        shot(&browser, "list.png").await;

        // Search across sessions; the hit opens the page at its entry.
        eval(c, "var i = document.getElementById('search'); i.value = 'different words'; i.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'}))").await;
        let hit = "document.querySelector('#hits a.hit[href$=\"#7a828db3\"]')";
        until(c, &format!("return !!{hit}")).await;
        let snippet = eval(c, &format!("return {hit}.querySelector('mark').textContent")).await;
        assert!(snippet.as_str().unwrap().eq_ignore_ascii_case("different"), "{snippet}");
        shot(&browser, "search.png").await;
        eval(c, &format!("{hit}.click()")).await;
        until(c, "return !!window.arbor && !!document.getElementById('e-7a828db3')").await;
        let at = c.current_url().await.unwrap();
        assert_eq!(at.fragment(), Some("7a828db3"), "{at}");
        until(c, "return !!document.querySelector('#serve-bar .live.on')").await;

        // A label set from the page lands in the file (through the lock) and comes back live.
        let edit = "var b = document.querySelector('#e-7a828db3 .edit-label'); b.click(); var i = document.querySelector('#e-7a828db3 .label-input'); i.value = 'set in the browser'; i.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'}))";
        eval(c, edit).await;
        until(c, "var l = document.querySelector('#e-7a828db3 header .label'); return !!l && l.textContent === 'set in the browser'").await;
        let s = Session::open(&session, OpenMode::ReadOnly, SessionOptions::default()).unwrap();
        assert_eq!(s.label("7a828db3").map(|l| l.map(|l| l.text.as_str())).unwrap(), Some("set in the browser"));
        // Another process holds the session: the page says who.
        let held = Session::open(&session, OpenMode::Write, SessionOptions::default()).unwrap();
        eval(c, &edit.replace("set in the browser", "refused")).await;
        let pid = std::process::id().to_string();
        until(c, &format!("return document.getElementById('serve-note').textContent.indexOf('{pid}') >= 0")).await;
        shot(&browser, "locked.png").await;
        drop(held);

        // Another process appends: the open page shows it in place (not reloaded).
        c.goto(&format!("{}s/{DIR}/{FILE}", serving.url)).await.unwrap();
        until(c, "return !!window.arbor && !!document.querySelector('#serve-bar .live.on')").await;
        eval(c, "window.notReloaded = true").await;
        let before = eval(c, "return window.arbor.entries()").await.as_u64().unwrap();
        let leaf = Session::open(&session, OpenMode::ReadOnly, SessionOptions::default()).unwrap().leaf_id().unwrap().to_owned();
        let appended = Instant::now();
        let status = Command::new("sh")
            .args(["-c", "printf '%s' \"$1\" >> \"$2\"", "sh", &message("a11ce001", &leaf, "appended while open"), session.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(status.success());
        until(c, "return !!document.getElementById('e-a11ce001')").await;
        let took = appended.elapsed();
        eprintln!("the appended entry was shown {} ms after the append", took.as_millis());
        assert!(took < Duration::from_secs(1), "shown after {took:?}, more than 1 s");
        assert_eq!(eval(c, "return window.notReloaded === true").await, true, "added in place, not by a reload");
        assert_eq!(eval(c, "return window.arbor.entries()").await.as_u64(), Some(before + 1));
        assert_eq!(eval(c, "return window.arbor.leaf()").await, "a11ce001", "the new entry is the leaf");
        let text = eval(c, "return document.getElementById('e-a11ce001').textContent").await;
        // Shown: the reader at the end of the path follows it; the old leaf is marked no more.
        let seen = "var m = document.getElementById('main').getBoundingClientRect(), r = document.getElementById('e-a11ce001').getBoundingClientRect(); return r.top >= m.top && r.bottom <= m.bottom + 1";
        until(c, seen).await;
        assert_eq!(eval(c, &format!("return !!document.querySelector('#e-{leaf} .leafmark')")).await, false);
        assert_eq!(eval(c, "return !!document.querySelector('#e-a11ce001 .leafmark')").await, true);
        assert!(text.as_str().unwrap().contains("appended while open"), "{text}");
        shot(&browser, "live.png").await;

        // A new session appears in the open list.
        c.goto(&serving.url).await.unwrap();
        until(c, "return document.documentElement.dataset.ready === '1'").await;
        let other = session.parent().unwrap().join("2026-03-15T10-00-00-000Z_second.jsonl");
        let first_line = format!(
            "{}\n{}",
            r#"{"type":"session","version":3,"id":"5ec0d000-0000-4000-8000-000000000001","timestamp":"2026-03-15T10:00:00.000Z","cwd":"/home/dev/wordfreq"}"#,
            message("5ec0d001", "", "a second session").replace(r#""parentId":"""#, r#""parentId":null"#).replace("2026-03-14T09:30", "2026-03-15T10:00")
        );
        fs::write(&other, first_line).unwrap();
        until(c, "return document.querySelectorAll('#list tbody tr').length === 2").await;
        let newest = eval(c, "return document.querySelector('#list tbody tr').textContent").await;
        assert!(newest.as_str().unwrap().contains("a second session"), "newest first: {newest}");
        shot(&browser, "list-grown.png").await;
    });
}

#[test]
fn in_headless_chromium_the_usage_view_charts_one_bar_per_day() {
    let Some((chromium, chromedriver)) = arbor_test_support::browser::tools() else { return };
    let (dir, session) = root();
    second_day(&session);
    let serving = Serving::start(dir.path(), &["--addr", "127.0.0.1:0"]);
    let days: Vec<Value> = get(serving.addr(), "/api/usage", &[]).json()["daily"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["date"].clone())
        .collect();
    assert_eq!(days.len(), 2);
    let model_keys: Vec<Value> = get(serving.addr(), "/api/usage?report=model", &[]).json()["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["model"].clone())
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let browser = arbor_test_support::browser::start(&chromium, &chromedriver).await;
        let c = &browser.client;
        c.goto(&serving.url).await.unwrap();
        until(c, "return document.documentElement.dataset.ready === '1'").await;
        // Reached from the list's header.
        eval(c, "document.querySelector('#views a[href=\"/usage\"]').click()").await;
        until(c, "return !!document.getElementById('daily-cost')").await;
        let drawn = eval(c, "return Array.from(document.querySelectorAll('#daily-cost rect.bar')).map(r => r.dataset.day)").await;
        assert_eq!(drawn, Value::Array(days), "one bar per day, oldest first");
        let heights = eval(c, "return Array.from(document.querySelectorAll('#daily-cost rect.bar')).map(r => r.getBoundingClientRect().height)").await;
        assert!(heights.as_array().unwrap().iter().all(|h| h.as_f64().unwrap() > 10.0), "bars are drawn: {heights}");
        let models = eval(c, "return Array.from(document.querySelectorAll('#by-model td.key')).map(t => t.textContent)").await;
        assert_eq!(models, Value::Array(model_keys), "a row per model, as `arbor usage model`");
        assert_eq!(eval(c, "return document.querySelectorAll('#tree tbody tr').length").await, 4);
        shot(&browser, "usage.png").await;
    });
}

/// Reads a server-sent event stream until `what` is in it (10 s at most);
/// how long that took.
fn read_events_until(s: &mut TcpStream, what: &str) -> Duration {
    let start = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    while start.elapsed() < Duration::from_secs(10) {
        if let Ok(n) = s.read(&mut buf) {
            seen.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&seen).contains(what) {
                return start.elapsed();
            }
        }
    }
    panic!("no {what:?} in the event stream within 10 s: {}", String::from_utf8_lossy(&seen));
}

#[test]
fn over_a_postgresql_store_the_same_list_search_page_live_events_and_writes() {
    let Some(db) = arbor_test_support::pg::TestDb::new("cli_serve") else { return };
    let (dir, session) = root();
    let pushed = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["push", session.to_str().unwrap(), "--to", &db.url])
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache_dir())
        .env_remove("ARBOR_STORE")
        .output()
        .unwrap();
    assert!(pushed.status.success(), "{}", String::from_utf8_lossy(&pushed.stderr));
    // No local sessions: what it serves comes from the server.
    fs::remove_dir_all(dir.path().join("sessions")).unwrap();
    let serving = Serving::start(dir.path(), &["--store", &db.url, "--addr", "127.0.0.1:0", "--allow-writes"]);
    let addr = serving.addr();

    let list = get(addr, "/api/sessions", &[]).json();
    let sessions = list["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{list}");
    assert_eq!((sessions[0]["dir"].as_str(), sessions[0]["file"].as_str()), (Some(DIR), Some(FILE)));
    let hits = get(addr, "/api/search?q=case-insensitive", &[]).json();
    assert!(hits["hits"].as_array().unwrap().iter().any(|h| h["entryId"] == "7a828db3"), "{hits}");
    let page = get(addr, &format!("/s/{DIR}/{FILE}"), &[]);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("wordfreq: case, punctuation"));

    // A page's event stream shows what another process appends, through the server's notifications.
    let mut events = TcpStream::connect(addr).unwrap();
    let req = format!("GET /s/{DIR}/{FILE}/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    events.write_all(req.as_bytes()).unwrap();
    read_events_until(&mut events, "200 OK");
    let labelled = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["label", "fe01ce2a", "4f487dd5", "seen-by-serve"])
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", cache_dir())
        .env("ARBOR_STORE", &db.url)
        .output()
        .unwrap();
    assert!(labelled.status.success(), "{}", String::from_utf8_lossy(&labelled.stderr));
    let took = read_events_until(&mut events, "seen-by-serve");
    eprintln!("the label reached the event stream {} ms after `arbor label` ended", took.as_millis());

    // An allowed write lands on the server.
    let written = ask(addr, "POST", &label_url(), &[JSON], r#"{"entry":"7a828db3","label":"from the page"}"#);
    assert_eq!(written.status, 200, "{}", written.body);
    read_events_until(&mut events, "from the page");
    let hits = get(addr, "/api/search?q=case-insensitive", &[]).json();
    let hit = hits["hits"].as_array().unwrap().iter().find(|h| h["entryId"] == "7a828db3").cloned().unwrap();
    assert!(hit["labels"].to_string().contains("from the page"), "{hit}");

    // Usage over the server: the same code, the numbers `arbor usage --store` gives.
    assert_usage_matches(addr, dir.path(), Some(&db.url));
    assert_eq!(get(addr, "/api/usage", &[]).json()["daily"].as_array().map(Vec::len), Some(1));
}
