//! `arbor export` as Markdown, HTML and JSONL.

use std::fs;

use std::io::Read as _;

use arbor_interop::{export_html, export_jsonl, export_markdown, Format, HtmlOptions, Scope};
use base64::Engine as _;
use serde_json::Value;

use crate::{fixtures, import, open, transcript};

fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    f(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn markdown_of_the_demos_path() {
    let s = open(&fixtures().join("demo/demo.jsonl"));
    let md = text(|o| export_markdown(&s, None, o).unwrap());
    insta::assert_snapshot!(md);
}

#[test]
fn markdown_of_another_path_and_an_unknown_leaf() {
    let s = open(&fixtures().join("demo/demo.jsonl"));
    let md = text(|o| export_markdown(&s, Some("4f487dd5"), o).unwrap());
    assert!(md.contains("the path to `4f487dd5`"), "{md}");
    assert!(md.contains("Also strip punctuation"), "{md}");
    assert!(!md.contains("Document --top"), "the other branch is not on this path");
    let e = export_markdown(&s, Some("nothere"), &mut Vec::new()).unwrap_err().to_string();
    assert!(e.ends_with("Entry nothere not found"), "{e}");
}

#[test]
fn markdown_of_an_imported_session_folds_tool_calls_and_shows_images() {
    let root = tempfile::tempdir().unwrap();
    let r = import(Format::Claude, &[transcript("claude/branches.jsonl")], root.path());
    let s = open(&r[0].sessions[0].path);
    let first = s
        .entries()
        .map(Result::unwrap)
        .find(|e| e.message().is_some_and(|m| m.message.to_string().contains("Should I strip it?")))
        .unwrap();
    let md = text(|o| export_markdown(&s, Some(&first.id), o).unwrap());
    assert!(md.contains("Tool call: Grep"), "{md}");
    assert!(!md.contains("toolu_01Grep"), "calls are named by their tool, not their id: {md}");
    assert!(md.contains("*[image: image/png]*"), "{md}");
    assert!(md.contains("<summary>Thinking</summary>"), "{md}");
    assert!(!md.contains("file-history-snapshot"), "extension state is left out");
}

#[test]
fn jsonl_of_the_whole_demo_is_the_demo() {
    let path = fixtures().join("demo/demo.jsonl");
    let s = open(&path);
    let copy = text(|o| export_jsonl(&s, Scope::All, o).unwrap());
    assert_eq!(copy, fs::read_to_string(&path).unwrap());
}

#[test]
fn jsonl_of_a_path_keeps_the_labels_set_off_the_path_and_is_clean() {
    let s = open(&fixtures().join("demo/demo.jsonl"));
    let copy = text(|o| export_jsonl(&s, Scope::Path(Some("eb499f6b")), o).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("copy.jsonl");
    fs::write(&file, &copy).unwrap();
    assert!(arbor_tree::check_file(&file).unwrap().is_empty());
    let c = open(&file);
    assert_eq!(c.get_label("eb499f6b").unwrap(), s.get_label("eb499f6b").unwrap());
    assert!(c.get_label("eb499f6b").unwrap().is_some());
    let path_ids: Vec<&str> = s.get_branch(Some("eb499f6b")).unwrap().iter().map(|e| e.id.as_str()).collect();
    let leaf_path: Vec<String> = c.get_branch(None).unwrap().iter().map(|e| e.id.clone()).collect();
    assert!(leaf_path.starts_with(&path_ids.iter().map(|x| x.to_string()).collect::<Vec<_>>()));
    assert_eq!(c.header().id, s.header().id);
}

#[test]
fn jsonl_of_a_damaged_file_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["orphans.jsonl", "duplicate-ids.jsonl", "cycle.jsonl", "garbage-lines.jsonl"] {
        let src = fixtures().join("logs/err").join(name);
        if !src.exists() {
            continue;
        }
        let s = open(&src);
        let file = dir.path().join(name);
        fs::write(&file, text(|o| export_jsonl(&s, Scope::All, o).unwrap())).unwrap();
        let findings = arbor_tree::check_file(&file).unwrap();
        let bad: Vec<_> = findings.iter().filter(|f| f.code != "tool-call-without-result").collect();
        assert!(bad.is_empty(), "{name}: {bad:?}");
    }
}

/// A page taken apart: its facts, its rows and its bodies (inflated).
pub struct Page {
    pub html: String,
    pub data: Value,
    /// `[parent, kind, flags, id, title, extra?]` per entry, in the sidebar's order.
    pub rows: Vec<Value>,
    /// `[time, html]` per entry.
    pub bodies: Vec<Value>,
}

impl Page {
    pub fn of(s: &arbor_tree::Session, opts: &HtmlOptions) -> Page {
        Page::parse(text(|o| export_html(s, opts, o).unwrap()))
    }

    pub fn parse(html: String) -> Page {
        let element = |id: &str| {
            let open = format!("<script id=\"{id}\" type=");
            let start = html.find(&open).unwrap();
            let rest = &html[start..];
            rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()].to_owned()
        };
        let data: Value = serde_json::from_str(&element("arbor-data")).unwrap();
        let rows: Vec<Value> = serde_json::from_str(&element("arbor-rows")).unwrap();
        let mut bodies = Vec::new();
        for part in html.split("<script type=\"text/plain\" class=\"arbor-z\">").skip(1) {
            let b = &part[..part.find("</script>").unwrap()];
            let packed = base64::engine::general_purpose::STANDARD.decode(b).unwrap();
            let mut json = String::new();
            flate2::read::DeflateDecoder::new(&packed[..]).read_to_string(&mut json).unwrap();
            bodies.extend(serde_json::from_str::<Vec<Value>>(&json).unwrap());
        }
        // The first view's bodies are the same as the chunks'.
        let first: Value = serde_json::from_str(&element("arbor-first")).unwrap();
        for (n, b) in first["n"].as_array().unwrap().iter().zip(first["b"].as_array().unwrap()) {
            assert_eq!(&bodies[n.as_u64().unwrap() as usize], b);
        }
        assert_eq!(rows.len(), bodies.len());
        Page { html, data, rows, bodies }
    }

    /// The row and body of the entry `id`.
    pub fn entry(&self, id: &str) -> (&Value, &str) {
        let i = self.rows.iter().position(|r| r[3] == id).unwrap_or_else(|| panic!("no entry {id}"));
        (&self.rows[i], self.bodies[i][1].as_str().unwrap())
    }

    /// The id of the entry the page opens on.
    pub fn leaf(&self) -> &str {
        self.rows[self.data["leaf"].as_u64().unwrap() as usize][3].as_str().unwrap()
    }
}

#[test]
fn html_is_one_page_with_no_network_and_safely_embedded_data() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let mut demo = fs::read_to_string(fixtures().join("demo/demo.jsonl")).unwrap();
    // A message that tries to end the data element early.
    demo.push_str("{\"type\":\"message\",\"id\":\"e0e0e0e0\",\"parentId\":\"6a490938\",\"timestamp\":\"2026-03-14T10:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"</script><script>alert(1)</script> <!-- & \u{2028}\",\"timestamp\":1773482400000}}\n");
    fs::write(&file, demo).unwrap();
    let s = open(&file);
    let page = Page::of(&s, &HtmlOptions::default());
    let html = &page.html;
    assert_eq!(html.matches("</script>").count(), 5, "only the elements' own ends");
    assert!(!html.contains("<!--"));
    for external in ["http://", "https://", "@import", "url(", " src=", "<link"] {
        assert!(!html.contains(external), "{external} in the page");
    }
    // One script may run: the page's own, by its hash.
    let csp = html.split("Content-Security-Policy\" content=\"").nth(1).unwrap().split('"').next().unwrap();
    assert!(
        csp.contains("default-src 'none'")
            && csp.contains("script-src 'sha256-")
            && !csp.contains("unsafe-inline'; script"),
        "{csp}"
    );
    assert!(!csp.split("script-src").nth(1).unwrap().contains("unsafe-inline"), "{csp}");
    assert_eq!(page.rows.len(), 40);
    let (row, body) = page.entry("e0e0e0e0");
    assert_eq!(row[4], "</script><script>alert(1)</script> <!-- &", "the title, its white space folded");
    assert!(body.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &lt;!-- &amp; \u{2028}"), "{body}");
    assert_eq!(page.leaf(), "e0e0e0e0");
    // No path of this machine unless asked.
    assert!(!html.contains("/home/dev/wordfreq") && !html.contains(&file.display().to_string()));
    let with = Page::of(&s, &HtmlOptions { paths: true, ..HtmlOptions::default() });
    assert_eq!(with.data["session"]["cwd"], "/home/dev/wordfreq");
    assert_eq!(with.data["session"]["file"], file.display().to_string());
}

#[test]
fn html_totals_add_up_and_rows_form_the_tree() {
    let s = open(&fixtures().join("demo/demo.jsonl"));
    let page = Page::of(&s, &HtmlOptions::default());
    let expected: f64 = s
        .entries()
        .map(Result::unwrap)
        .filter_map(|e| e.message())
        .filter_map(|m| m.message["usage"]["cost"]["total"].as_f64())
        .sum();
    let cost = page.data["session"]["cost"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-9, "{cost} {expected}");
    let rows_cost: f64 = page.rows.iter().filter_map(|r| r.get(5)?.get("u")?[1].as_f64()).sum();
    assert!((rows_cost - expected).abs() < 1e-9);
    // Every parent comes before its children, and matches the session's.
    for (i, r) in page.rows.iter().enumerate() {
        let p = r[0].as_i64().unwrap();
        assert!(p < i as i64);
        let parent = s.get_entry(r[3].as_str().unwrap()).unwrap().unwrap().parent_id.clone();
        assert_eq!(parent.as_deref(), (p >= 0).then(|| page.rows[p as usize][3].as_str().unwrap()));
    }
    // The path to the leaf runs down the left edge: at each fork the child that carries on comes last.
    let leaf = page.data["leaf"].as_u64().unwrap() as usize;
    let mut on_path = vec![false; page.rows.len()];
    let mut n = leaf as i64;
    while n >= 0 {
        on_path[n as usize] = true;
        n = page.rows[n as usize][0].as_i64().unwrap();
    }
    for (i, r) in page.rows.iter().enumerate() {
        let p = r[0].as_i64().unwrap();
        if p >= 0 && on_path[p as usize] && !on_path[i] {
            let last_sibling = page.rows.iter().rposition(|x| x[0] == p).unwrap();
            assert!(on_path[last_sibling], "a side branch after the path at {}", r[3]);
        }
    }
}

#[test]
fn html_errors_aborts_and_tool_calls_read_as_people_read_them() {
    let dir = tempfile::tempdir().unwrap();
    let (file, [err, abort, edit, leaf, side]) = crate::sessions::rich(dir.path());
    let page = Page::of(&open(&file), &HtmlOptions::default());
    let (row, body) = page.entry(&err);
    assert_eq!(row[2].as_u64().unwrap() & 1, 1, "flagged as an error");
    assert!(row[4].as_str().unwrap().contains("500 Internal Server Error"), "{row}");
    assert!(body.contains("class=\"stop error\"") && body.contains(crate::sessions::HTTP_500), "{body}");
    let (row, body) = page.entry(&abort);
    assert_eq!(row[2].as_u64().unwrap() & 2, 2, "flagged as aborted");
    assert!(body.contains("All tests pa") && body.contains("Aborted: Request was aborted"), "{body}");
    let (_, body) = page.entry(&side);
    assert!(body.contains(">Aborted<"), "an abort without a message says so: {body}");
    let (row, body) = page.entry(&edit);
    assert_eq!(row[4], "edit src/parse.rs");
    assert!(body.contains("<div class=\"del\">-    s.lines().take(s.lines().count() - 1).collect()</div>"), "{body}");
    assert!(body.contains("<div class=\"add\">+    s.lines().collect()</div>"), "{body}");
    // The tool result is headed by its call, and a failed one is flagged.
    let bash = page.rows.iter().position(|r| r[4] == "bash $ cargo test -p parser 2>&1 | tail -n 5").unwrap();
    let result = &page.rows[bash];
    assert_eq!((result[1].as_str(), result[2].as_u64().unwrap() & 1), (Some("r"), 1));
    let call = result[0].as_u64().unwrap() as usize;
    assert!(page.bodies[call][1]
        .as_str()
        .unwrap()
        .contains("<code>$ cargo test -p parser 2&gt;&amp;1 | tail -n 5</code>"));
    let read = page.rows.iter().find(|r| r[1] == "r" && r[4].as_str().unwrap().starts_with("read ")).unwrap();
    assert_eq!(read[4], "read src/parse.rs:10-29");
    // Markdown is rendered, thinking is folded, the image is embedded.
    assert!(page.bodies.iter().any(|b| b[1].as_str().unwrap().contains("<strong>parser</strong>")));
    assert!(page.bodies.iter().any(|b| b[1].as_str().unwrap().contains("<details class=\"thinking\">")));
    assert!(page.bodies.iter().any(|b| b[1].as_str().unwrap().contains("src=\"data:image/png;base64,")));
    assert!(page.bodies.iter().any(|b| b[1].as_str().unwrap().contains("<table>")));
    // Arbor's bookkeeping is a row the page hides, and the leaf is what it hangs from.
    assert_eq!(page.rows.iter().filter(|r| r[1] == "K").count(), 2);
    let k =
        page.rows.iter().position(|r| r[1] == "K" && page.rows[r[0].as_u64().unwrap() as usize][3] == leaf.as_str());
    assert!(k.is_some());
    assert_eq!(page.data["session"]["errors"], 2, "the HTTP 500 and the failed test run");
    assert_eq!(page.data["session"]["aborted"], 2);
}

#[test]
fn html_cleans_hostile_text_and_cuts_long_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = crate::sessions::rich(dir.path());
    let page = Page::of(&open(&file), &HtmlOptions { max_output: 40, ..HtmlOptions::default() });
    for b in &page.bodies {
        let body = b[1].as_str().unwrap().to_lowercase();
        // Text's `<` is escaped: every `<` left opens a tag the page makes.
        for tag in body.split('<').skip(1).map(|t| t.split('>').next().unwrap()) {
            for bad in ["script", "onerror", "onload", "javascript:", "svg", "style", "iframe", "srcdoc"] {
                assert!(!tag.contains(bad), "<{tag}> in {body}");
            }
        }
    }
    // The hostile text is still there to read, as text.
    assert!(page
        .bodies
        .iter()
        .any(|b| b[1].as_str().unwrap().contains("&lt;script&gt;window.__pwned=1&lt;/script&gt;")));
    let cut = page
        .bodies
        .iter()
        .find_map(|b| b[1].as_str().unwrap().split("<div class=\"cut\">").nth(1).map(str::to_owned))
        .unwrap();
    assert!(cut.starts_with("cut in this page: the first 40 of "), "{cut}");
    assert!(page.data["session"]["cut"].as_u64().unwrap() >= 1);
}

#[test]
fn markdown_says_errors_and_aborts_and_shows_calls_as_tools() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = crate::sessions::rich(dir.path());
    let md = text(|o| export_markdown(&open(&file), None, o).unwrap());
    assert!(md.contains(&format!("> **Error: {}**", crate::sessions::HTTP_500)), "{md}");
    assert!(md.contains("> **Aborted: Request was aborted**"), "{md}");
    assert!(md.contains("## Assistant (error)"), "{md}");
    assert!(md.contains("Tool call: bash <code>$ cargo test -p parser 2&gt;&amp;1 | tail -n 5</code>"), "{md}");
    assert!(md.contains("<summary>Tool call: edit <code>src/parse.rs</code></summary>"), "{md}");
    assert!(md.contains("```diff\n fn parse(s: &str) -> Vec<Line> {\n-    s.lines().take(s.lines().count() - 1).collect()\n+    s.lines().collect()\n"), "{md}");
    assert!(!md.contains("arbor.leaf"));
}
