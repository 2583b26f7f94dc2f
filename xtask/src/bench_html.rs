//! `cargo xtask bench --html N`: the session page of `arbor export --format
//! html` beside pi's (`pi --export`) on the same files: the demo, a
//! generated 10,000-entry session and a generated N-entry one. For each:
//! the export's time and the page's size for both, and the time headless
//! Chromium takes to draw the first view of Arbor's page.
//!
//! The page records `performance.now()` when its first view is drawn (time
//! from navigation start: the rows and the end of the leaf's path read, the
//! tree laid out, the transcript drawn) as `data-render-ms` on `<html>`;
//! Chromium's `--dump-dom` prints the DOM after the load event, and the
//! number is read from there. Each page is loaded `runs` times in a fresh
//! profile. pi writes into the session it exports, so it gets a copy; where
//! node or npm is missing, or pi fails or runs past its time, its columns
//! say so.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The target for the first view of a 100,000-entry page (issue #33).
const TARGET_MS: f64 = 2000.0;
/// How long `pi --export` may take on one file.
const PI_LIMIT: Duration = Duration::from_secs(900);

pub fn run(root: &Path, arbor: &Path, target: &Path, entries: usize, seed: u64, runs: usize) -> Result<()> {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
        .context("no chromium on the PATH (apt-get install chromium)")?;
    let dir = target.join("bench-html");
    std::fs::create_dir_all(&dir)?;
    let mut files = vec![("demo (40 entries)".to_owned(), root.join("fixtures/demo/demo.jsonl"))];
    for n in [10_000, entries].into_iter().filter(|&n| n > 0).collect::<std::collections::BTreeSet<_>>() {
        files.push((format!("generated ({n} entries)"), generated(&dir, n, seed)?));
    }
    let pi = crate::pi::ensure_pi_or_skip(|why| eprintln!("pi --export skipped: {why}"))?;
    println!("arbor export --format html beside pi --export; first view in headless {chromium} ({runs} runs, median)");
    println!(
        "{:<28} {:>12} {:>12} {:>10} {:>12} {:>12} {:>10}",
        "session", "file bytes", "arbor page", "arbor s", "pi page", "pi s", "view ms"
    );
    let mut last = 0.0;
    for (name, file) in &files {
        let stem = file.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let page = dir.join(format!("{stem}.html"));
        let t = Instant::now();
        let status = Command::new(arbor)
            .args(["export", "-o"])
            .arg(&page)
            .arg(file)
            .env("ARBOR_NO_INDEX", "1")
            .stderr(Stdio::null())
            .status()
            .context("running arbor export")?;
        if !status.success() {
            bail!("arbor export --format html {} failed ({status})", file.display());
        }
        let arbor_s = t.elapsed().as_secs_f64();
        let (pi_bytes, pi_s) = match &pi {
            Some(pi) => pi_export(pi, file, &dir.join(format!("{stem}.pi.html")))?,
            None => ("-".to_owned(), "-".to_owned()),
        };
        let mut times = Vec::new();
        for _ in 0..runs {
            times.push(render_ms(chromium, &page)?);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "{name:<28} {:>12} {:>12} {arbor_s:>10.2} {pi_bytes:>12} {pi_s:>12} {median:>10.0}",
            std::fs::metadata(file)?.len(),
            std::fs::metadata(&page)?.len(),
        );
        last = median;
    }
    let verdict = if last < TARGET_MS { "under" } else { "OVER" };
    println!("the {entries}-entry page draws its first view in {last:.0} ms (median): {verdict} the {TARGET_MS:.0} ms target");
    Ok(())
}

/// A generated session of `n` entries (made once).
fn generated(dir: &Path, n: usize, seed: u64) -> Result<PathBuf> {
    let session = dir.join(format!("generated-{n}-{seed}.jsonl"));
    if !session.exists() {
        let opts = crate::gen::GenOptions { entries: n, seed, shape: crate::gen::Shape::Realistic };
        crate::gen::write_file(&session, opts)?;
    }
    Ok(session)
}

/// `pi --export` of a copy of `file`: the page's size and the time, as text
/// (`failed` or `> 900 s` when it did not finish).
fn pi_export(pi: &Path, file: &Path, out: &Path) -> Result<(String, String)> {
    let copy = out.with_extension("copy.jsonl");
    std::fs::copy(file, &copy).with_context(|| format!("copying {}", file.display()))?;
    let _ = std::fs::remove_file(out);
    let cli = pi.join("node_modules").join(crate::pi::PI_PACKAGE).join("dist/cli.js");
    let home = out.with_extension("home");
    std::fs::create_dir_all(&home)?;
    let t = Instant::now();
    let mut child = Command::new("node")
        .arg("--max-old-space-size=8192")
        .arg(&cli)
        .arg("--export")
        .arg(&copy)
        .arg(out)
        .env("HOME", &home)
        .env("PI_CODING_AGENT_DIR", home.join(".pi"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("running pi --export")?;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if t.elapsed() > PI_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let secs = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&copy);
    Ok(match status {
        Some(s) if s.success() && out.exists() => (std::fs::metadata(out)?.len().to_string(), format!("{secs:.2}")),
        Some(_) => ("failed".to_owned(), format!("{secs:.2}")),
        None => ("-".to_owned(), format!("> {}", PI_LIMIT.as_secs())),
    })
}

/// One load of `page` in a fresh headless Chromium: the `data-render-ms` it records.
fn render_ms(chromium: &str, page: &Path) -> Result<f64> {
    let profile = std::env::temp_dir().join(format!("arbor-bench-html-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    let url = format!("file://{}", page.canonicalize()?.display());
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,1000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(&url)
        .output()
        .context("running chromium")?;
    let _ = std::fs::remove_dir_all(&profile);
    let dom = String::from_utf8_lossy(&out.stdout);
    let Some(rest) = dom.split("data-render-ms=\"").nth(1) else {
        bail!(
            "{}: the page recorded no render time ({})",
            page.display(),
            String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
        );
    };
    let ms: String = rest.chars().take_while(|c| *c != '"').collect();
    ms.parse().with_context(|| format!("render time {ms:?}"))
}
