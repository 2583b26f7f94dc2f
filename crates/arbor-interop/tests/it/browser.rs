//! The HTML page in a real browser: headless Chromium driven over WebDriver
//! (chromedriver, through fantoccini). Loads the demo's page and the page of
//! a generated 10,000-entry session, opens a branch, types in the search box,
//! checks the DOM, and keeps a screenshot of the demo's page under `target/`.
//! Without Chromium it skips with one line (CI installs it and sets
//! `ARBOR_REQUIRE_BROWSER`, so there it fails instead).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use crate::{fixtures, open};

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Where the test keeps what it makes: `target/tmp/arbor-html/`.
pub fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("arbor-html");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A chromedriver process, ended when dropped.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The page of `session` written to `out`.
fn export(session: &Path, out: &Path) {
    let s = open(session);
    let mut html = Vec::new();
    arbor_interop::export_html(&s, &mut html).unwrap();
    std::fs::write(out, html).unwrap();
}

fn file_url(p: &Path) -> String {
    format!("file://{}", p.canonicalize().unwrap().display())
}

async fn eval(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap()
}

/// Waits (up to 10 s) until `script` returns true.
async fn until(c: &Client, script: &str) {
    for _ in 0..200 {
        if eval(c, script).await == Value::Bool(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for: {script}");
}

async fn count(c: &Client, css: &str) -> usize {
    c.find_all(Locator::Css(css)).await.unwrap().len()
}

#[test]
fn the_page_in_headless_chromium() {
    let (Some(chromium), Some(chromedriver)) = (on_path("chromium"), on_path("chromedriver")) else {
        assert!(
            std::env::var_os("ARBOR_REQUIRE_BROWSER").is_none(),
            "ARBOR_REQUIRE_BROWSER is set but chromium or chromedriver is not on the PATH"
        );
        eprintln!("skipped: chromium and chromedriver are not on the PATH (CI installs them: apt-get install chromium chromium-driver)");
        return;
    };
    let dir = artifacts();
    let demo = dir.join("demo.html");
    export(&fixtures().join("demo/demo.jsonl"), &demo);
    let big = dir.join("generated-10000.jsonl");
    generate(&big, 10_000);
    let big_html = dir.join("generated-10000.html");
    export(&big, &big_html);

    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _driver = Driver(
        Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let profile = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    format!("--user-data-dir={}", profile.path().display()), "--window-size=1400,1000",
                ],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let mut client = None;
        for _ in 0..100 {
            // Plain HTTP to the local driver: no TLS stack.
            let http = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(http).capabilities(caps.clone()).connect(&url).await {
                Ok(c) => {
                    client = Some(c);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        let c = client.expect("chromedriver did not start");
        demo_page(&c, &demo, &dir).await;
        big_page(&c, &big_html).await;
        c.close().await.unwrap();
    });
}

async fn demo_page(c: &Client, page: &Path, dir: &Path) {
    c.goto(&file_url(page)).await.unwrap();
    until(c, "return document.documentElement.dataset.renderMs !== undefined").await;
    assert_eq!(c.title().await.unwrap(), "wordfreq: case, punctuation, --top");
    // The active path is open and highlighted, down to the leaf.
    assert_eq!(count(c, ".seg.active").await, 3);
    assert_eq!(count(c, ".entry.leaf").await, 1);
    assert!(c.find(Locator::Css("#e-6a490938.leaf")).await.is_ok());
    // Labels and summaries are on the page.
    let labels = eval(c, "return [...document.querySelectorAll('.entry .label')].map(e => e.textContent)").await;
    assert!(labels.as_array().unwrap().iter().any(|l| l == "punctuation"), "{labels}");
    assert!(count(c, ".entry.k-compaction").await >= 1);
    assert!(count(c, ".entry.k-branch_summary").await >= 1);
    // The abandoned branch is closed: its entries are not made yet. Open it.
    let closed = ".seg:not(.active):not(.open)";
    assert!(count(c, closed).await >= 1);
    assert!(c.find(Locator::Css("#e-4f487dd5")).await.is_err());
    let head = c.find(Locator::Css(&format!("{closed} > .seg-head"))).await.unwrap();
    head.click().await.unwrap();
    assert!(c.find(Locator::Css("#e-4f487dd5")).await.is_ok(), "the branch's last entry is drawn");
    assert!(count(c, ".seg.open:not(.active) > .seg-body > .entry").await >= 6);
    // Tool calls are folded.
    let calls = c.find_all(Locator::Css("details.call")).await.unwrap();
    assert!(!calls.is_empty());
    assert_eq!(eval(c, "return document.querySelector('details.call').open").await, json!(false));
    // Search.
    let search = c.find(Locator::Css("#search")).await.unwrap();
    search.send_keys("regex").await.unwrap();
    until(c, "return document.getElementById('search-count').textContent.endsWith('matches')").await;
    let found = count(c, "#search-results li").await;
    assert!(found >= 2, "{found} results");
    assert!(count(c, ".entry.hit").await >= 1);
    c.find(Locator::Css("#search-results button")).await.unwrap().click().await.unwrap();
    assert_eq!(count(c, ".entry.focus").await, 1);
    let shot = c.screenshot().await.unwrap();
    assert!(shot.starts_with(b"\x89PNG"));
    let png = dir.join("demo.png");
    std::fs::write(&png, shot).unwrap();
    eprintln!("screenshot of the demo's page: {}", png.display());
}

async fn big_page(c: &Client, page: &Path) {
    c.goto(&file_url(page)).await.unwrap();
    until(c, "return document.documentElement.dataset.renderMs !== undefined").await;
    let nodes = eval(c, "return JSON.parse(document.getElementById('arbor-data').textContent).nodes.length").await;
    assert_eq!(nodes, json!(10_000));
    // Drawn lazily: far fewer entries in the DOM than in the session.
    let drawn = count(c, ".entry").await;
    assert!(drawn > 0 && drawn < 2_000, "{drawn} entries drawn");
    // A search reaches entries that are not drawn; a result draws its entry.
    let search = c.find(Locator::Css("#search")).await.unwrap();
    search.send_keys("the").await.unwrap();
    until(c, "return /matches?$/.test(document.getElementById('search-count').textContent)").await;
    let n: usize =
        eval(c, "return parseInt(document.getElementById('search-count').textContent)").await.as_u64().unwrap()
            as usize;
    assert!(n > 100, "{n} matches");
    assert_eq!(count(c, "#search-results li").await, 100, "the list shows the first 100");
    let buttons = c.find_all(Locator::Css("#search-results button")).await.unwrap();
    buttons.last().unwrap().click().await.unwrap();
    assert_eq!(count(c, ".entry.focus").await, 1);
}

/// A generated session of `entries` entries (`cargo xtask gen-session`), made once.
fn generate(out: &Path, entries: usize) {
    if out.exists() {
        return;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["xtask", "gen-session"])
        .arg(out)
        .args([entries.to_string(), "7".into()])
        .status()
        .unwrap();
    assert!(status.success(), "cargo xtask gen-session failed");
}
