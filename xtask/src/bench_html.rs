//! `cargo xtask bench --html N`: how long the page of `arbor export --format
//! html` takes to render in headless Chromium, for a generated N-entry
//! session and, as the baseline, for the demo session.
//!
//! The page records `performance.now()` when its first drawing is done (time
//! from navigation start: the HTML parsed, the embedded JSON parsed, the
//! active path drawn) as `data-render-ms` on `<html>`; Chromium's
//! `--dump-dom` prints the DOM after the load event, and the number is read
//! from there. Each page is loaded `runs` times in a fresh profile.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// The target for the 10,000-entry page (issue #18).
const TARGET_MS: f64 = 2000.0;

pub fn run(root: &Path, arbor: &Path, target: &Path, entries: usize, seed: u64, runs: usize) -> Result<()> {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
        .context("no chromium on the PATH (apt-get install chromium)")?;
    let dir = target.join("bench-html");
    std::fs::create_dir_all(&dir)?;
    let session = dir.join(format!("generated-{entries}-{seed}.jsonl"));
    if !session.exists() {
        crate::gen::write_file(
            &session,
            crate::gen::GenOptions { entries, seed, shape: crate::gen::Shape::Realistic },
        )?;
    }
    let demo = root.join("fixtures/demo/demo.jsonl");
    println!(
        "page render time in headless {chromium} (performance.now() at the end of the first drawing), {runs} runs each"
    );
    println!(
        "{:<28} {:>12} {:>10} {:>10} {:>10} {:>10}",
        "session", "page bytes", "export ms", "min ms", "median ms", "max ms"
    );
    let mut big = 0.0;
    for (name, file) in
        [("demo (40 entries, baseline)".to_owned(), demo), (format!("generated ({entries} entries)"), session)]
    {
        let page = dir.join(format!("{}.html", file.file_stem().unwrap_or_default().to_string_lossy()));
        let t = Instant::now();
        let status = Command::new(arbor)
            .args(["export", "--format", "html", "-o"])
            .arg(&page)
            .arg(&file)
            .env("ARBOR_NO_INDEX", "1")
            .status()
            .context("running arbor export")?;
        if !status.success() {
            bail!("arbor export --format html {} failed ({status})", file.display());
        }
        let export_ms = t.elapsed().as_secs_f64() * 1000.0;
        let mut times = Vec::new();
        for _ in 0..runs {
            times.push(render_ms(chromium, &page)?);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let bytes = std::fs::metadata(&page)?.len();
        println!(
            "{name:<28} {bytes:>12} {export_ms:>10.0} {:>10.0} {median:>10.0} {:>10.0}",
            times[0],
            times[times.len() - 1]
        );
        big = median;
    }
    let verdict = if big < TARGET_MS { "under" } else { "OVER" };
    println!("the {entries}-entry page renders in {big:.0} ms (median): {verdict} the {TARGET_MS:.0} ms target");
    Ok(())
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
