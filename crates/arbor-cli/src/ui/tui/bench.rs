//! `arbor tui FILE --bench` (hidden; what `cargo xtask bench --tui` runs):
//! the selector driven through its state machine, its loader and its view,
//! drawn into a 120×40 buffer with no terminal, timing what a user waits
//! for: the first frame, the reading of every entry that follows it, moves,
//! folds, filter switches and each keystroke of a search. Each input's line
//! names its kind (`move`, `fold`, `filter`, `search`), which says its target. One JSON object per
//! line on stdout: `{"step": …, "ms": …}` (an input's line also has `input ms`, the
//! state machine's part, before the frame's), then a summary line.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;

use arbor_log::EntryType;
use arbor_tree::{OpenMode, Session};

use super::loader::Loader;
use super::selector::{FilterMode, Input, TreeSelector};
use super::{session_title, view};
use crate::shared::output::{home, write_json_line};
use crate::shared::session::Globals;

const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;

struct Bench<'a> {
    session: &'a Session,
    loader: Loader,
    sel: TreeSelector,
    title: String,
    out: &'a mut dyn Write,
}

impl Bench<'_> {
    /// Prepares and draws a frame, as the screen's loop does before waiting for a key.
    fn frame(&mut self) {
        let (page, width) = view::list_size(WIDTH, HEIGHT, None, "quit");
        self.sel.set_size(page, width);
        self.loader.prepare(self.session, &mut self.sel);
        let mut buf = Buffer::empty(Rect::new(0, 0, WIDTH, HEIGHT));
        view::draw_selector(&self.sel, &self.title, "quit", None, buf.area, &mut buf);
    }

    /// One input of a `kind` (what its target is: a move, a fold or a
    /// filter switch answer within a frame, a search keystroke in 50 ms) and
    /// the frame after it; the time both took.
    fn input(&mut self, kind: &'static str, step: &str, input: Input) -> Result<(&'static str, Duration)> {
        let t = Instant::now();
        self.sel.handle(input);
        let handled = t.elapsed();
        self.frame();
        let took = t.elapsed();
        let extra = json!({
            "kind": kind,
            "rows": self.sel.visible_len(),
            "footer": self.sel.footer().trim(),
            "input ms": handled.as_secs_f64() * 1000.0,
        });
        self.report(step, took, extra)?;
        Ok((kind, took))
    }

    fn report(&mut self, step: &str, took: Duration, extra: serde_json::Value) -> Result<()> {
        let mut line = json!({"step": step, "ms": took.as_secs_f64() * 1000.0});
        if let (Some(obj), serde_json::Value::Object(more)) = (line.as_object_mut(), extra) {
            obj.extend(more);
        }
        write_json_line(self.out, &line)
    }
}

/// Runs the benchmark on `file` (see the module docs).
pub fn run(file: &Path, globals: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let start = Instant::now();
    let session = Session::open(file, OpenMode::ReadOnly, globals.options()?)?;
    let opened = start.elapsed();
    let t = Instant::now();
    let size = view::list_size(WIDTH, HEIGHT, None, "quit");
    let (loader, sel) = Loader::open(&session, home(), size, &[], FilterMode::Default);
    let mut b = Bench { session: &session, loader, sel, title: session_title(&session), out };
    b.frame();
    let first = start.elapsed();
    b.report("open the session", opened, json!({"entries": session.len()}))?;
    b.report("first frame (from the open session)", t.elapsed(), json!({}))?;
    b.report("first frame (from the start)", first, json!({"footer": b.sel.footer().trim()}))?;
    // Everything else is read between keystrokes, a step at a time.
    let t = Instant::now();
    let mut longest = Duration::ZERO;
    let mut steps = 0;
    loop {
        let s = Instant::now();
        let more = b.loader.step(b.session, &mut b.sel);
        longest = longest.max(s.elapsed());
        steps += 1;
        if !more {
            break;
        }
    }
    b.frame();
    let reading = t.elapsed();
    let longest_ms = longest.as_secs_f64() * 1000.0;
    b.report("read every entry (between keystrokes)", reading, json!({"steps": steps, "longest step ms": longest_ms}))?;
    let mut worst = vec![];
    for _ in 0..20 {
        worst.push(b.input("move", "down", Input::Down)?);
    }
    worst.push(b.input("move", "page down", Input::PageDown)?);
    worst.push(b.input("move", "end", Input::End)?);
    worst.push(b.input("move", "home", Input::Home)?);
    worst.push(b.input("move", "up (wraps to the end)", Input::Up)?);
    worst.push(b.input("move", "home", Input::Home)?);
    worst.push(b.input("fold", "fold at the root", Input::FoldOrUp)?);
    worst.push(b.input("fold", "unfold at the root", Input::UnfoldOrDown)?);
    worst.push(b.input("move", "jump down the branch", Input::UnfoldOrDown)?);
    worst.push(b.input("fold", "fold there", Input::FoldOrUp)?);
    // Back there past another fold, so its unfold makes its rows (not the state before the fold).
    worst.push(b.input("move", "home", Input::Home)?);
    worst.push(b.input("fold", "fold at the root", Input::FoldOrUp)?);
    worst.push(b.input("fold", "unfold at the root", Input::UnfoldOrDown)?);
    worst.push(b.input("move", "jump down the branch", Input::UnfoldOrDown)?);
    worst.push(b.input("fold", "unfold there", Input::UnfoldOrDown)?);
    for _ in 0..5 {
        worst.push(b.input("filter", "next filter", Input::CycleFilter { forward: true })?);
    }
    // Search for the entry type word the compaction rows carry.
    for c in EntryType::Compaction.as_str().chars() {
        worst.push(b.input("search", &format!("type {c:?}"), Input::Char(c))?);
    }
    for _ in 0..3 {
        worst.push(b.input("search", "backspace", Input::Backspace)?);
    }
    worst.push(b.input("search", "escape (clear the search)", Input::Escape)?);
    let max = |what: &str| {
        worst.iter().filter(|(w, _)| *w == what).map(|(_, d)| d.as_secs_f64() * 1000.0).fold(0.0, f64::max)
    };
    write_json_line(
        b.out,
        &json!({
            "summary": true,
            "entries": session.len(),
            "first frame ms": first.as_secs_f64() * 1000.0,
            "read every entry ms": reading.as_secs_f64() * 1000.0,
            "longest reading step ms": longest_ms,
            "worst move ms": max("move"),
            "worst fold ms": max("fold"),
            "worst filter switch ms": max("filter"),
            "worst search keystroke ms": max("search"),
        }),
    )?;
    Ok(ExitCode::SUCCESS)
}
