//! Headless Chromium driven over WebDriver (chromedriver, through
//! fantoccini), for the tests that look at a page as a reader would. Without
//! Chromium a test skips with one line ([`tools`]); CI installs it and sets
//! `ARBOR_REQUIRE_BROWSER`, so there it fails instead.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Chromium and chromedriver, or `None` (after one line on stderr) when
/// they are not installed; fails when `ARBOR_REQUIRE_BROWSER` is set.
pub fn tools() -> Option<(PathBuf, PathBuf)> {
    let (Some(chromium), Some(chromedriver)) = (on_path("chromium"), on_path("chromedriver")) else {
        assert!(
            std::env::var_os("ARBOR_REQUIRE_BROWSER").is_none(),
            "ARBOR_REQUIRE_BROWSER is set but chromium or chromedriver is not on the PATH"
        );
        eprintln!("skipped: chromium and chromedriver are not on the PATH (CI installs them: apt-get install chromium chromium-driver)");
        return None;
    };
    Some((chromium, chromedriver))
}

/// A chromedriver process in a process group of its own, ended with the
/// browser it started when dropped (also when a check fails halfway, before
/// the session is closed: Chromium would outlive its driver otherwise).
#[derive(Debug)]
pub struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A browser: the driver (ended when dropped), its profile folder, the client.
#[derive(Debug)]
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
    _driver: Driver,
    _profile: tempfile::TempDir,
}

/// Starts chromedriver and a headless Chromium (1400 × 900) through it.
pub async fn start(chromium: &std::path::Path, chromedriver: &std::path::Path) -> Browser {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let driver = Driver(
        std::os::unix::process::CommandExt::process_group(&mut Command::new(chromedriver), 0)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let profile = tempfile::tempdir().unwrap();
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                format!("--user-data-dir={}", profile.path().display()), "--window-size=1400,900",
            ],
        }),
    );
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        // Plain HTTP to the local driver: no TLS stack.
        let http = hyper_util::client::legacy::connect::HttpConnector::new();
        if let Ok(client) = ClientBuilder::new(http).capabilities(caps.clone()).connect(&url).await {
            return Browser { client, _driver: driver, _profile: profile };
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not start");
}

/// Runs `script` in the page and returns its value.
pub async fn eval(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap()
}

/// Waits (up to 10 s) until `script` returns true.
pub async fn until(c: &Client, script: &str) {
    for _ in 0..200 {
        if eval(c, script).await == Value::Bool(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for: {script}");
}
