//! `arbor diff FILE A B`: the common ancestor of two entries and what each side adds.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use arbor_context::render::{entry_text, ToolCalls};
use arbor_interop::Side;

use crate::shared::output::interop_error;
use crate::shared::session::Globals;
use crate::shared::visible::for_people;

/// Compare two entries: their common ancestor and what each side adds.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session file.
    #[arg(allow_hyphen_values = true)]
    file: PathBuf,
    /// One entry.
    a: String,
    /// The other.
    b: String,
    /// Print `{"commonAncestor", "a", "b"}` (see docs/cli.md).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let s = g.open_read(&args.file)?;
    let d = arbor_interop::diff(&s, &args.a, &args.b).map_err(|e| interop_error(&args.file, e))?;
    if args.json {
        arbor_log::json::to_writer(&mut *out, &d)?;
        out.write_all(b"\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    match &d.common_ancestor {
        Some(id) => {
            // A long line's preview, as `arbor tree` shows it.
            let entry =
                s.position_of(id).map(|p| s.decode_previews(&[p])).transpose()?.and_then(|mut e| e.pop().flatten());
            let what = entry.map(|e| entry_text(&e, &ToolCalls::new(), None)).unwrap_or_default();
            writeln!(out, "common ancestor {id}  {}", cut(&what, 90))?;
        }
        None => writeln!(out, "no common ancestor: the entries are on different roots")?,
    }
    write_side(out, "A", &d.a)?;
    write_side(out, "B", &d.b)?;
    Ok(ExitCode::SUCCESS)
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    format!("{}…", s.chars().take(max - 1).collect::<String>())
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.join(", ")
    }
}

fn write_side(out: &mut dyn Write, name: &str, side: &Side) -> Result<()> {
    writeln!(out, "{name} {}: {} entries after the ancestor", side.id, side.entries.len())?;
    let messages: Vec<String> = side.messages.iter().map(|(role, n)| format!("{n} {role}")).collect();
    writeln!(out, "  messages: {}", list(&messages))?;
    let calls: Vec<String> = side.tool_calls.iter().map(|c| format!("{} ({})", c.name, c.entry)).collect();
    writeln!(out, "  tool calls: {}", list(&calls))?;
    writeln!(out, "  files read: {}", list(&side.files_read))?;
    writeln!(out, "  files modified: {}", list(&side.files_modified))?;
    writeln!(
        out,
        "  context: {} messages, ~{} tokens; cost ${:.4} added, ${:.4} on the path",
        side.context.messages, side.context.tokens, side.added.cost, side.path.cost
    )?;
    Ok(())
}
