//! `arbor search QUERY`: the text of every entry of every session, from the
//! backend the sessions live in (the session files through their catalog,
//! or the server with `--store`), with `arbor-search`'s engine either way.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};

use arbor_log::Role;
use arbor_tree::sessions::{Hit, Relevance, Scope, SearchRequest};

use crate::shared::backend;
use crate::shared::progress::Bar;
use crate::shared::session::Globals;
use crate::shared::visible::for_people;

/// Search the text of every entry on every branch of the sessions (tokens, "phrases", re:REGEX).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Space-separated tokens that must all be found, "quoted phrases", or re:REGEX.
    #[arg(required = true, num_args = 1.., value_name = "QUERY")]
    query: Vec<String>,
    /// Search the sessions of this working directory (default: the current one).
    #[arg(long, value_name = "DIR", conflicts_with = "all")]
    cwd: Option<PathBuf>,
    /// Search the sessions of every working directory.
    #[arg(long)]
    all: bool,
    /// The most hits to print.
    #[arg(long, value_name = "N", default_value_t = 20)]
    limit: usize,
    /// Also words that hold a token's characters in order (after the exact hits; without it only when nothing matches exactly).
    #[arg(long)]
    fuzzy: bool,
    /// The sessions root (default: $ARBOR_SESSIONS_DIR, else $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions).
    #[arg(long, value_name = "DIR")]
    sessions_dir: Option<PathBuf>,
    /// Print the hits as a JSON list (see docs/cli.md).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let query = args.query.join(" ");
    if query.trim().is_empty() {
        bail!("the query is empty");
    }
    let sessions = g.sessions_in(args.sessions_dir.as_deref())?;
    let scope = if args.all {
        Scope::All
    } else {
        let cwd = match args.cwd {
            Some(c) => c,
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        Scope::cwd(&cwd.to_string_lossy())
    };
    let mut request = SearchRequest::new(query, scope).limit(args.limit);
    if args.fuzzy {
        request = request.fuzzy();
    }
    let hits = sessions.search(&request, &Bar::new());
    backend::warn(sessions.as_ref());
    let hits = hits?;
    if args.json {
        arbor_log::json::to_writer(&mut *out, &hits)?;
        out.write_all(b"\n")?;
    } else if hits.is_empty() {
        writeln!(out, "no matches")?;
    } else {
        for h in &hits {
            write_hit(out, h)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Two lines: where the hit is, then the snippet with the matches in «».
fn write_hit(out: &mut dyn Write, h: &Hit) -> Result<()> {
    let what = h.role.as_ref().map_or(h.entry_type.as_str(), Role::as_str);
    let active = if h.on_active_path { " •" } else { "" };
    let labels: String = h.labels.iter().map(|l| format!(" [{}]", l.label)).collect();
    let fuzzy = if h.relevance == Relevance::Fuzzy { "  (fuzzy)" } else { "" };
    writeln!(out, "{}  {}  {what}{active}{labels}{fuzzy}  {}", h.timestamp, h.entry_id, h.path.display())?;
    writeln!(out, "    {}", marked(&h.snippet, &h.marks))?;
    Ok(())
}

/// The snippet with each mark in «».
pub(crate) fn marked(snippet: &str, marks: &[[usize; 2]]) -> String {
    let mut out = String::with_capacity(snippet.len() + marks.len() * 4);
    let mut marks = marks.iter().peekable();
    let mut open = None;
    for (i, c) in snippet.chars().enumerate() {
        if open == Some(i) {
            out.push('»');
            open = None;
        }
        if open.is_none() {
            if let Some(m) = marks.next_if(|m| m[0] == i) {
                out.push('«');
                open = Some(m[1]);
            }
        }
        out.push(c);
        while marks.next_if(|m| m[0] <= i).is_some() {}
    }
    if open.is_some() {
        out.push('»');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_bracketed_once() {
        assert_eq!(marked("a hello world", &[[2, 7]]), "a «hello» world");
        assert_eq!(marked("ab", &[[0, 2]]), "«ab»");
        assert_eq!(marked("abcd", &[[0, 2], [1, 3], [3, 4]]), "«ab»c«d»");
    }
}
