//! The Markdown and HTML exports of entries on lines too long to hold: what
//! they write, streamed from the file, is what they write of the entries
//! decoded whole; a line changed on disk meanwhile fails, typed.

use std::io::{self, Read as _, Write};
use std::path::{Path, PathBuf};

use arbor_tree::{OpenMode, Session, SessionOptions, TreeError};
use base64::Engine as _;
use serde_json::{json, Value};

use super::html::write_html;
use super::markdown::write_markdown;
use super::markup::escape;
use super::HtmlOptions;
use crate::InteropError;

const HEADER: &str = r#"{"type":"session","version":3,"id":"00000000-0000-4000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

/// About `mb` MB of text with everything a writer could trip on: JSON
/// escapes, characters of 2 to 4 bytes, backtick runs, `\r\n`, HTML.
fn hostile(mb: usize, seed: &str) -> String {
    let unit = format!(
        "{seed} **bold** `code` ```` é 日本 😀 \"q\" back\\slash\ttab\r\nline <script>alert(1)</script> & <img src=x onerror=alert(1)>\n\n> quote\n\u{1}\u{7f}\u{2028} "
    );
    let mut t = format!("  \n{seed} starts\n");
    while t.len() < mb << 20 {
        t.push_str(&unit);
    }
    t.push_str("\nend ``` \n\n  \t\n");
    t
}

/// A line of `entry`, with some characters written as `\u` escapes (a
/// surrogate pair among them), as other writers of JSON do.
fn line_of(entry: &Value) -> String {
    serde_json::to_string(entry).unwrap().replace('😀', "\\ud83d\\ude00").replace('é', "\\u00e9")
}

/// A session whose reply (line 3) and tool result (line 4) are lines of
/// several MB, each string of them long (with `blob`, also an argument no
/// export shows whole); the texts it holds.
fn long_session(dir: &Path, blob: bool) -> (PathBuf, Vec<String>) {
    let (thinking, text, content, output) =
        (hostile(2, "think"), hostile(3, "text"), hostile(1, "file"), hostile(5, "output"));
    let ts = "2026-01-01T00:00:00.000Z";
    let mut blocks = vec![
        json!({"type": "thinking", "thinking": thinking}),
        json!({"type": "text", "text": text}),
        json!({"type": "toolCall", "id": "c1", "name": "write", "arguments": {"path": "a.md", "content": content}}),
    ];
    if blob {
        blocks
            .push(json!({"type": "toolCall", "id": "c2", "name": "other", "arguments": {"blob": hostile(1, "blob")}}));
    }
    let reply = json!({"type": "message", "id": "00000002", "parentId": "00000001", "timestamp": ts, "message": {
        "role": "assistant", "stopReason": "toolUse", "timestamp": 1, "content": blocks}});
    let result = json!({"type": "message", "id": "00000003", "parentId": "00000002", "timestamp": ts, "message": {
        "role": "toolResult", "toolCallId": "c1", "toolName": "write", "timestamp": 1,
        "content": [{"type": "text", "text": output}]}});
    let lines = [
        HEADER.to_owned(),
        json!({"type": "message", "id": "00000001", "parentId": null, "timestamp": ts,
            "message": {"role": "user", "content": "hi", "timestamp": 1}})
        .to_string(),
        line_of(&reply),
        line_of(&result),
        json!({"type": "message", "id": "00000004", "parentId": "00000003", "timestamp": ts,
            "message": {"role": "user", "content": "bye", "timestamp": 1}})
        .to_string(),
    ];
    let path = dir.join("long.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    (path, vec![thinking, text, content, output])
}

fn open(path: &Path) -> Session {
    Session::open(path, OpenMode::ReadOnly, SessionOptions::default().with_index_dir(None)).unwrap()
}

fn written(f: impl FnOnce(&mut dyn Write) -> Result<(), InteropError>) -> String {
    let mut out = Vec::new();
    f(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn markdown_of_long_texts_is_what_the_whole_entries_give() {
    let d = tempfile::tempdir().unwrap();
    let (path, texts) = long_session(d.path(), false);
    let s = open(&path);
    let p = s.position_of("00000002").unwrap();
    assert!(s.long_line_at(p).unwrap().is_some_and(|l| l.texts().len() == 3), "the reply is read as a preview");
    let streamed = written(|o| write_markdown(&s, None, o, true));
    let whole = written(|o| write_markdown(&s, None, o, false));
    assert!(streamed == whole, "the streamed export differs from the whole one");
    // The reply's text as it is (it is Markdown), the others fenced, whole.
    assert!(streamed.contains(&format!("\n{}\n", texts[1].trim_end())));
    for t in [&texts[0], &texts[2], &texts[3]] {
        assert!(streamed.contains(&format!("\n{}\n`````\n", t.trim_end_matches('\n'))));
    }
}

#[test]
fn a_value_no_export_shows_whole_is_named() {
    let d = tempfile::tempdir().unwrap();
    let (path, _) = long_session(d.path(), true);
    let s = open(&path);
    let md = written(|o| write_markdown(&s, None, o, true));
    assert!(md.contains("\n*1 more value is too long to show whole here: the first 4 KB of each is shown.*\n"));
    assert_eq!(md.matches("more value").count(), 1);
    let page = written(|o| write_html(&s, &HtmlOptions::default(), o, true));
    let reply = bodies(&page)[1][1].as_str().unwrap().to_owned();
    assert!(reply.contains("1 more value is too long to show whole in this page"), "{}", &reply[reply.len() - 300..]);
}

/// The page's bodies, inflated: `[time, html]` per entry in the sidebar's order.
fn bodies(page: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for part in page.split("<script type=\"text/plain\" class=\"arbor-z\">").skip(1) {
        let b = &part[..part.find("</script>").unwrap()];
        let packed = base64::engine::general_purpose::STANDARD.decode(b).unwrap();
        let mut json = String::new();
        flate2::read::DeflateDecoder::new(&packed[..]).read_to_string(&mut json).unwrap();
        out.extend(serde_json::from_str::<Vec<Value>>(&json).unwrap());
    }
    out
}

#[test]
fn the_page_holds_long_texts_whole_and_escaped() {
    let d = tempfile::tempdir().unwrap();
    let (path, texts) = long_session(d.path(), false);
    let s = open(&path);
    for max_output in [16 << 10, 0] {
        let opts = HtmlOptions { max_output, ..HtmlOptions::default() };
        let streamed = written(|o| write_html(&s, &opts, o, true));
        let whole = written(|o| write_html(&s, &opts, o, false));
        assert!(streamed == whole, "the streamed page differs from the whole one (max_output {max_output})");
        let bodies = bodies(&streamed);
        let reply = bodies[1][1].as_str().unwrap();
        assert!(reply.contains(&format!("<pre class=\"plain\">{}</pre>", escape(&texts[1]))));
        assert!(reply.contains("too long to render as Markdown here, shown as plain text"));
        assert!(reply.contains(&escape(texts[0].trim())), "thinking");
        assert!(reply.contains(&escape(texts[2].trim_end_matches('\n'))), "a file's content");
        assert!(!reply.contains("<script") && !reply.contains("<img"), "nothing of the text is markup");
        let result = bodies[2][1].as_str().unwrap();
        let shown = if max_output == 0 { texts[3].trim_end_matches('\n') } else { &texts[3][..max_output] };
        assert!(result.contains(&format!(">{}</pre>", escape(shown))));
        assert_eq!(max_output != 0, result.contains("cut in this page"));
    }
}

/// A writer that changes a byte of the file at `at` once `after` bytes went
/// through it (with `after` 0: at the first write of a chunk of the page's
/// bodies, deflated: while the reply's texts are read).
struct Changer {
    file: PathBuf,
    at: u64,
    after: usize,
    seen: usize,
    armed: bool,
    done: bool,
}

impl Write for Changer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.seen += buf.len();
        let now = if self.after == 0 { self.armed } else { self.seen > self.after };
        self.armed |= buf == b"<script type=\"text/plain\" class=\"arbor-z\">";
        if now && !self.done {
            self.done = true;
            use std::os::unix::fs::FileExt as _;
            let f = std::fs::OpenOptions::new().write(true).open(&self.file)?;
            f.write_all_at(b"Z", self.at)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_long_line_changed_on_disk_during_the_export_fails_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let (path, _) = long_session(d.path(), false);
    let bytes = std::fs::read(&path).unwrap();
    // Near the end of the tool result's output (line 4): a block read last.
    let line4 = bytes.iter().enumerate().filter(|(_, &b)| b == b'\n').nth(2).unwrap().0 + 1;
    let end4 = line4 + bytes[line4..].iter().position(|&b| b == b'\n').unwrap();
    let at = (line4..end4 - 200).rev().find(|&i| bytes[i].is_ascii_alphanumeric()).unwrap() as u64;
    for html in [false, true] {
        std::fs::write(&path, &bytes).unwrap();
        let s = open(&path);
        // Markdown: once the output (line 4) is being written (the reply's 6 MB
        // of texts come before it); the page: while the reply (line 3) is.
        let (after, line) = if html { (0, 3) } else { (8 << 20, 4) };
        let mut out = Changer { file: path.clone(), at, after, seen: 0, armed: false, done: false };
        let e = if html {
            write_html(&s, &HtmlOptions { max_output: 0, ..HtmlOptions::default() }, &mut out, true)
        } else {
            write_markdown(&s, None, &mut out, true)
        };
        let e = e.unwrap_err();
        assert!(out.done, "the file was changed during the export");
        match &e {
            InteropError::Tree(TreeError::Changed { path: p, line: named, .. }) => {
                assert_eq!((p.as_path(), *named), (path.as_path(), Some(line)), "{e}");
            }
            other => panic!("not a typed change: {other}"),
        }
        assert!(e.to_string().contains(&format!("{}:{line}", path.display())), "{e}");
    }
}
