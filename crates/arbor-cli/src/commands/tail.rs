//! `arbor tail SESSION`: a session's last entries, then each new one as it
//! arrives from any process or machine, until Ctrl-C.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use arbor_context::render::ToolCalls;
use arbor_log::reader::{parse_line, Parsed};
use arbor_log::records::is_header;
use arbor_log::Entry;

use arbor_tree::sessions::{FollowFrom, Followed};

use crate::shared::output::{entry_line, home};
use crate::shared::session::Globals;
use crate::shared::visible::{for_people, say};

/// Print a session's entries as they arrive (from any process, or with --store any machine), until Ctrl-C.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file (with --store: DIR/FILE, a file name or a session id on the server).
    #[arg(allow_hyphen_values = true)]
    session: PathBuf,
    /// How many of the entries already there to print first.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 10)]
    lines: usize,
    /// Print each entry's JSON line as stored instead.
    #[arg(long)]
    json: bool,
}

/// Prints entry lines as `dump` does, remembering tool calls for their results.
struct Printer {
    json: bool,
    calls: ToolCalls,
    home: Option<String>,
}

impl Printer {
    /// Prints the entries among whole `lines`, the last `last` of them when given.
    fn print(&mut self, out: &mut dyn Write, lines: &[u8], last: Option<usize>) -> Result<()> {
        let entries: Vec<(&[u8], Option<Entry>)> = lines
            .split_inclusive(|&b| b == b'\n')
            .filter_map(|l| match parse_line(l).0 {
                Parsed::Object(v) if is_header(&v) => None,
                Parsed::Object(v) => Some((l, Entry::from_owned(v).ok())),
                _ => None,
            })
            .collect();
        let skip = last.map_or(0, |n| entries.len().saturating_sub(n));
        for (i, (line, entry)) in entries.iter().enumerate() {
            if let Some(e) = entry {
                self.calls.record(e);
            }
            if i < skip {
                continue;
            }
            match (self.json, entry) {
                (true, _) => out.write_all(line.strip_suffix(b"\r\n").or(line.strip_suffix(b"\n")).unwrap_or(line))?,
                (false, Some(e)) => out.write_all(entry_line(e, &self.calls, self.home.as_deref()).as_bytes())?,
                (false, None) => out.write_all(b"(a record that is not an entry)")?,
            }
            out.write_all(b"\n")?;
        }
        out.flush()?;
        Ok(())
    }
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let path = g.session(&args.session)?;
    // Only the last entries are read (tool calls before them show by their id alone).
    let (mut follow, now) = g.sessions()?.follow(&path, FollowFrom::Last(args.lines))?;
    let mut printer = Printer { json: args.json, calls: ToolCalls::new(), home: home() };
    printer.print(out, &now, Some(args.lines))?;
    let mut away = false;
    loop {
        let got = follow.wait(Duration::from_secs(1))?;
        match (&got, away) {
            (Followed::Reconnecting(why), false) => {
                say!("{}: {why}; reconnecting…", path.display());
                away = true;
            }
            (Followed::Reconnecting(_), true) => {}
            (_, true) => {
                say!("{}: reconnected", path.display());
                away = false;
            }
            (_, false) => {}
        }
        match got {
            Followed::Idle | Followed::Reconnecting(_) => {}
            Followed::Gone => say!("{}: the session is gone; waiting for it to come back", path.display()),
            Followed::Lines(b) => printer.print(out, &b, None)?,
            Followed::Replaced(b) => {
                say!("{}: the session was replaced whole (or is back); its last entries:", path.display());
                printer.calls = ToolCalls::new();
                printer.print(out, &b, Some(args.lines))?;
            }
        }
    }
}
