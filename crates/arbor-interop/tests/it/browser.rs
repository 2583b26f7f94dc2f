//! The HTML page in a real browser: headless Chromium driven over WebDriver
//! (chromedriver, through fantoccini). Loads the pages of the demo, of a chat
//! with tools, errors, aborts and hostile text, of a session of 23 branches
//! and of a generated 100,000-entry session; checks what a reader sees
//! (no overlapping boxes, the leaf's message in view at load, errors in
//! words, search, a click in the tree opening its path, the compare view,
//! the edit diff, no script from the session running), and keeps
//! screenshots under `target/tmp/arbor-html/`. Without Chromium it skips with
//! one line (CI installs it and sets `ARBOR_REQUIRE_BROWSER`, so there it
//! fails instead).

use std::path::{Path, PathBuf};
use std::process::Command;

use arbor_test_support::browser::{eval, until};
use fantoccini::{Client, Locator};
use serde_json::{json, Value};

use crate::{fixtures, open};

/// Where the test keeps what it makes: `target/tmp/arbor-html/`.
pub fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("arbor-html");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The page of `session` written to `out`.
fn export(session: &Path, out: &Path) {
    let s = open(session);
    let mut html = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
    arbor_interop::export_html(&s, &arbor_interop::HtmlOptions::default(), &mut html).unwrap();
    std::io::Write::flush(&mut html).unwrap();
}

fn file_url(p: &Path) -> String {
    format!("file://{}", p.canonicalize().unwrap().display())
}

async fn count(c: &Client, css: &str) -> usize {
    c.find_all(Locator::Css(css)).await.unwrap().len()
}

#[test]
fn the_page_in_headless_chromium() {
    let Some((chromium, chromedriver)) = arbor_test_support::browser::tools() else { return };
    let dir = artifacts();
    let demo = dir.join("demo.html");
    export(&fixtures().join("demo/demo.jsonl"), &demo);
    let (rich_file, ids) = crate::sessions::rich(&dir);
    let rich = dir.join("rich.html");
    export(&rich_file, &rich);
    let forks = dir.join("forks-23.html");
    export(&crate::sessions::forks(&dir, 23, 60), &forks);
    let big = dir.join("generated-100000.jsonl");
    generate(&big, 100_000);
    let big_html = dir.join("generated-100000.html");
    export(&big, &big_html);

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let browser = arbor_test_support::browser::start(&chromium, &chromedriver).await;
        let c = browser.client.clone();
        demo_page(&c, &demo, &dir).await;
        rich_page(&c, &rich, &ids, &dir).await;
        forks_page(&c, &forks, &dir).await;
        big_page(&c, &big_html, &dir).await;
        c.close().await.unwrap();
    });
}

/// Loads a page and waits for its first drawing.
async fn load(c: &Client, page: &Path) {
    c.goto(&file_url(page)).await.unwrap();
    until(c, "return document.documentElement.dataset.renderMs !== undefined").await;
}

/// Fails on any two boxes that overlap: the tree's rows, the parts of each
/// row, the header's parts and its buttons, the cards.
async fn no_overlaps(c: &Client, what: &str) {
    let found = eval(
        c,
        r##"
        function boxes(list) { return list.map(e => [e, e.getBoundingClientRect()]).filter(([, b]) => b.width > 0 && b.height > 0); }
        function clash(list) {
          const b = boxes(list);
          for (let i = 0; i < b.length; i++) for (let j = i + 1; j < b.length; j++) {
            const [x, p] = b[i], [y, q] = b[j];
            if (p.left < q.right - 0.5 && q.left < p.right - 0.5 && p.top < q.bottom - 0.5 && q.top < p.bottom - 0.5)
              return (x.className || x.tagName) + " / " + (y.className || y.tagName) + ": " + (x.textContent + " / " + y.textContent).slice(0, 200);
          }
          return null;
        }
        const groups = [[...document.querySelectorAll("#tree .row")], [...document.querySelectorAll("#head > *")],
          [...document.querySelectorAll(".tools > *")], [...document.querySelectorAll("#view > *")],
          [...document.querySelectorAll(".columns > *")]];
        document.querySelectorAll("#tree .row").forEach(r => groups.push([...r.children]));
        document.querySelectorAll(".card > header").forEach(h => groups.push([...h.children]));
        for (const g of groups) { const c = clash(g); if (c) return c; }
        // A title in the tree keeps room to be read.
        for (const t of document.querySelectorAll("#tree .row .t")) if (t.scrollWidth > t.clientWidth + 1 && t.getBoundingClientRect().width < 60) return "squeezed: " + t.parentNode.textContent;
        // Nothing wider than the window.
        if (document.documentElement.scrollWidth > innerWidth + 1) return "page is " + document.documentElement.scrollWidth + " px wide";
        return null;
        "##,
    )
    .await;
    assert_eq!(found, Value::Null, "{what}: overlapping boxes");
}

/// True when the card of `id` is drawn and in the transcript's view.
async fn in_view(c: &Client, id: &str) -> bool {
    let script = format!(
        r#"const a = document.getElementById("e-{id}"); if (!a) return false;
        const b = a.getBoundingClientRect(), m = document.getElementById("main").getBoundingClientRect();
        return b.bottom > m.top + 80 && b.top < m.bottom && b.height > 0;"#
    );
    eval(c, &script).await == Value::Bool(true)
}

async fn shot(c: &Client, dir: &Path, name: &str) {
    let png = c.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

/// Screenshots at 1400 and 900 px, light and dark.
async fn shots(c: &Client, dir: &Path, name: &str) {
    for (w, theme) in [(1400, "light"), (1400, "dark"), (900, "light"), (900, "dark")] {
        c.set_window_size(w, 900).await.unwrap();
        eval(c, &format!("document.documentElement.dataset.theme = '{theme}'; return true")).await;
        no_overlaps(c, &format!("{name} at {w} px")).await;
        shot(c, dir, &format!("{name}-{w}-{theme}")).await;
    }
    eval(c, "delete document.documentElement.dataset.theme; return true").await;
    c.set_window_size(1400, 900).await.unwrap();
}

async fn demo_page(c: &Client, page: &Path, dir: &Path) {
    load(c, page).await;
    assert_eq!(c.title().await.unwrap(), "wordfreq: case, punctuation, --top");
    assert!(in_view(c, "6a490938").await, "the leaf's message is in view at load");
    assert_eq!(count(c, ".card.leaf").await, 1);
    assert_eq!(count(c, "#tree .row.sel").await, 1);
    // A branch's end carries the branch's totals from the root.
    let sum = eval(c, "return document.querySelector('#tree .row.sel .sum').textContent").await;
    assert_eq!(sum, "22 msgs · 44.3k tok · $0.0606");
    no_overlaps(c, "demo").await;
    // Folding a side branch hides what follows it on that branch, and unfolding brings it back.
    let fold = "const r = [...document.querySelectorAll('#tree .row')].find(r => r.querySelector('.pre').textContent.endsWith('├─ ') && r.querySelector('.fold').textContent); r.querySelector('.fold').click(); return document.querySelectorAll('#tree .row').length";
    let all = count(c, "#tree .row").await;
    let folded = eval(c, fold).await.as_u64().unwrap() as usize;
    assert!(folded < all, "{folded} rows of {all} after folding");
    assert_eq!(eval(c, fold).await.as_u64().unwrap() as usize, all);
    // The abandoned branch's last entry is a row; clicking it shows its path, not the leaf's.
    let row = c.find(Locator::Css("#tree .row[title$='4f487dd5: The build fails because `regex` is not a dependency. Let me add it.'], #tree .row[title*=' 4f487dd5:']")).await.unwrap();
    row.click().await.unwrap();
    until(c, "return !!document.getElementById('e-4f487dd5')").await;
    assert!(in_view(c, "4f487dd5").await);
    assert!(c.find(Locator::Css("#e-6a490938")).await.is_err(), "the other branch's leaf is not on this path");
    assert!(eval(c, "return location.hash").await == "#4f487dd5");
    // Labels, summaries, thinking toggled all at once.
    assert!(count(c, "#tree .label").await >= 1);
    c.find(Locator::Css("#toggle-thinking")).await.unwrap().click().await.unwrap();
    assert_eq!(
        eval(c, "return [...document.querySelectorAll('details.thinking')].every(d => d.open)").await,
        json!(true)
    );
    c.find(Locator::Css("#toggle-thinking")).await.unwrap().click().await.unwrap();
    // Search, keyboard-driven: the matches fill the tree, Enter opens the first.
    let search = c.find(Locator::Css("#search")).await.unwrap();
    search.send_keys("regex").await.unwrap();
    until(c, "return /matches/.test(document.getElementById('side-status').textContent)").await;
    assert!(count(c, "#tree .row").await >= 2);
    search.send_keys("\u{E007}").await.unwrap();
    until(c, "return !!document.querySelector('.card.focus.hit')").await;
    search.clear().await.unwrap();
    search.send_keys("\u{E00C}").await.unwrap();
    load(c, page).await;
    shots(c, dir, "demo").await;
}

async fn rich_page(c: &Client, page: &Path, ids: &[String; 5], dir: &Path) {
    let [err, abort, edit, leaf, side] = ids;
    load(c, page).await;
    assert!(in_view(c, leaf).await, "the leaf's message is in view at load");
    // The error is a card with its message, in red; the abort says so.
    let text = eval(c, &format!("return document.getElementById('e-{err}').innerText")).await;
    assert!(text.as_str().unwrap().contains(crate::sessions::HTTP_500), "{text}");
    let red = eval(c, &format!("return getComputedStyle(document.querySelector('#e-{err} .stop')).color")).await;
    assert_ne!(red, eval(c, "return getComputedStyle(document.body).color").await);
    let text = eval(c, &format!("return document.getElementById('e-{abort}').innerText")).await;
    assert!(text.as_str().unwrap().contains("Aborted: Request was aborted"), "{text}");
    // The edit is a diff.
    assert!(count(c, &format!("#e-{edit} .diff .del")).await >= 1);
    assert!(count(c, &format!("#e-{edit} .diff .add")).await >= 1);
    // No script from the session ran, with every output open.
    c.find(Locator::Css("#toggle-output")).await.unwrap().click().await.unwrap();
    assert_eq!(
        eval(
            c,
            "return window.__pwned === undefined && !document.querySelector('#view script, #view svg, #view iframe')"
        )
        .await,
        json!(true)
    );
    assert!(
        eval(c, "return document.getElementById('view').innerText")
            .await
            .as_str()
            .unwrap()
            .contains("<script>window.__pwned=1</script>"),
        "the hostile text is shown as text"
    );
    // Search finds the error's text; the hit opens it.
    let search = c.find(Locator::Css("#search")).await.unwrap();
    search.send_keys("upstream model unavailable").await.unwrap();
    until(c, "return document.getElementById('side-status').textContent.includes('1 matches')").await;
    search.send_keys("\u{E007}").await.unwrap();
    until(c, &format!("return !!document.querySelector('#e-{err}.focus')")).await;
    search.clear().await.unwrap();
    search.send_keys("\u{E00C}").await.unwrap();
    // Compare the leaf's path with the side branch's.
    c.find(Locator::Css("#compare")).await.unwrap().click().await.unwrap();
    c.find(Locator::Css(&format!("#tree .row[title*=' {side}:']"))).await.unwrap().click().await.unwrap();
    until(c, "return document.querySelectorAll('.compare .side').length === 2").await;
    let cmp = eval(c, "return document.querySelector('.compare').innerText").await;
    let cmp = cmp.as_str().unwrap();
    assert!(
        cmp.contains("The paths part after tool") && cmp.contains("files changed: none") && cmp.contains("Aborted"),
        "{cmp}"
    );
    no_overlaps(c, "compare").await;
    shot(c, dir, "rich-compare").await;
    assert_eq!(eval(c, "return window.__pwned === undefined").await, json!(true));
    load(c, page).await;
    shots(c, dir, "rich").await;
}

async fn forks_page(c: &Client, page: &Path, dir: &Path) {
    load(c, page).await;
    let leaf = eval(c, "return location.hash.slice(1)").await;
    assert!(in_view(c, leaf.as_str().unwrap()).await, "the leaf's message is in view at load");
    no_overlaps(c, "23 forks").await;
    // Every branch is reachable: a side branch's row opens its path.
    let rows = c.find_all(Locator::Css("#tree .row")).await.unwrap();
    assert!(rows.len() > 30);
    let target = eval(
        c,
        "const t = document.getElementById('tree');
        for (let top = 0; top < t.scrollHeight; top += t.clientHeight / 2) {
          t.scrollTop = top; t.dispatchEvent(new Event('scroll'));
          const r = [...t.querySelectorAll('.row')].find(r => r.querySelector('.pre').textContent.includes('├') && r.offsetTop >= t.scrollTop);
          if (r) { r.click(); return r.title.split(' ')[1].replace(':', ''); }
        }
        return null;",
    )
    .await;
    until(c, &format!("return !!document.querySelector('#e-{}.focus')", target.as_str().unwrap())).await;
    shots(c, dir, "forks-23").await;
}

async fn big_page(c: &Client, page: &Path, dir: &Path) {
    load(c, page).await;
    let ms: f64 = eval(c, "return +document.documentElement.dataset.renderMs").await.as_f64().unwrap();
    eprintln!("the 100,000-entry page drew its first view in {ms:.0} ms");
    let leaf = eval(c, "return location.hash.slice(1)").await;
    assert!(in_view(c, leaf.as_str().unwrap()).await, "the leaf's message is in view at load");
    // Only what is in view is made: a few dozen rows, a window of cards.
    let rows = count(c, "#tree .row").await;
    assert!(rows > 10 && rows < 200, "{rows} rows drawn");
    assert!(count(c, ".card").await < 100);
    // Scrolling the tree draws the rows there; clicking one opens its path.
    eval(c, "const t = document.getElementById('tree'); t.scrollTop = t.scrollHeight / 2; t.dispatchEvent(new Event('scroll')); return true").await;
    let row = eval(c, "const t = document.getElementById('tree'), r = [...t.querySelectorAll('.row')].find(r => r.offsetTop >= t.scrollTop + 100); r.click(); return r.title.split(' ')[1].replace(':', '')").await;
    until(c, &format!("return !!document.querySelector('#e-{}.focus')", row.as_str().unwrap())).await;
    no_overlaps(c, "100k").await;
    shot(c, dir, "generated-100000").await;
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
