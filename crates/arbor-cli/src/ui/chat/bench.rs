//! `arbor chat FILE --bench` (hidden; what `cargo xtask bench --tui` runs
//! beside the selector's bench): the chat's first screen with no terminal
//! and no model call. The session is opened, the chat set up over it (the
//! model, hooks and settings; the context at the leaf), and its first screen
//! drawn into a 120×40 buffer, timing each part. The file is opened read
//! only, which loads it as a writer does, with no lock beside it. One JSON
//! object per line on stdout: `{"step": …, "ms": …}`, then a summary line.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;

use arbor_tree::{OpenMode, Session};

use super::core::{Chat, ModelFlags};
use super::draw::draw;
use super::screen::first_screen;
use super::settings::Settings;
use crate::shared::output::write_json_line;
use crate::shared::session::Globals;

const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;

/// Runs the benchmark on `file` (see the module docs).
pub fn run(file: &Path, globals: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let start = Instant::now();
    let session = Session::open(file, OpenMode::ReadOnly, globals.options()?)?;
    let entries = session.len();
    let opened = start.elapsed();
    let t = Instant::now();
    let mut chat = Chat::of_session(session, false, &ModelFlags::default(), Settings::load(None)?, globals.options()?)?;
    let set_up = t.elapsed();
    let t = Instant::now();
    let (view, messages, bar) = first_screen(&mut chat);
    let mut buf = Buffer::empty(Rect::new(0, 0, WIDTH, HEIGHT));
    draw(&messages, &view, &bar, buf.area, &mut buf);
    let drawn = t.elapsed();
    let first = start.elapsed();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let steps = [
        ("open the session", opened, json!({"entries": entries})),
        ("the chat over it (the context at the leaf)", set_up, json!({"context": chat.agent().messages()?.len()})),
        ("the first screen drawn", drawn, json!({"shown": messages.len()})),
        ("first frame (from the start)", first, json!({})),
    ];
    for (step, took, extra) in steps {
        let mut line = json!({"step": step, "ms": ms(took)});
        if let (Some(obj), serde_json::Value::Object(more)) = (line.as_object_mut(), extra) {
            obj.extend(more);
        }
        write_json_line(out, &line)?;
    }
    let summary = json!({
        "summary": true,
        "entries": entries,
        "context messages": chat.agent().messages()?.len(),
        "first frame ms": ms(first),
    });
    write_json_line(out, &summary)?;
    Ok(ExitCode::SUCCESS)
}
