//! `arbor search QUERY`: the text of every entry of every session, from the
//! catalog, or with `--store` on the server.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};

use arbor_catalog::{Hit, Query, Relevance, Scope, SearchOptions, TokenKind};
use arbor_log::Role;
use arbor_pg::{PgStore, TextQuery};
use arbor_tree::paths;

use crate::shared::catalog;
use crate::shared::output::write_json_line;
use crate::shared::session::Globals;
use crate::shared::visible::for_people;

/// Search the text of every entry on every branch of the sessions (tokens, "phrases", re:REGEX).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Space-separated tokens that must all match (fuzzy), "quoted phrases", or re:REGEX.
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
    if let Some(store) = g.server()? {
        return search_server(store, &query, &args, out);
    }
    let root = args.sessions_dir.unwrap_or_else(paths::sessions_root);
    let scope = if args.all {
        Scope::All
    } else {
        let cwd = match args.cwd {
            Some(c) => c,
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        Scope::cwd(&cwd.to_string_lossy())
    };
    let mut catalog = catalog::open(&root)?;
    let bar = catalog::Bar::new();
    let opts = SearchOptions { scope, limit: args.limit, fuzzy: args.fuzzy };
    let hits = catalog.search(&query, &opts, &bar);
    catalog::warn(&mut catalog);
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

/// `arbor --store URL search`: PostgreSQL's full-text search on the server
/// (docs/postgres.md, "Listing and search"): the same query syntax, without
/// fuzzy matches or active-path marks.
fn search_server(store: &PgStore, query: &str, args: &Args, out: &mut dyn Write) -> Result<ExitCode> {
    if args.sessions_dir.is_some() {
        bail!("--sessions-dir names a local folder; with --store the sessions are on the server");
    }
    let text = match arbor_catalog::parse_query(query).map_err(|e| anyhow::anyhow!("{query}: {e}"))? {
        Query::Regex(_) => TextQuery::Regex(query.trim().trim_start_matches("re:").trim().to_owned()),
        Query::Tokens(tokens) => {
            let (phrases, words): (Vec<_>, Vec<_>) = tokens.into_iter().partition(|t| t.kind == TokenKind::Phrase);
            TextQuery::Words {
                words: words.into_iter().map(|t| t.value).collect(),
                phrases: phrases.into_iter().map(|t| t.value).collect(),
            }
        }
    };
    let cwd = match (&args.cwd, args.all) {
        (_, true) => None,
        (Some(c), false) => Some(c.to_string_lossy().into_owned()),
        (None, false) => {
            Some(std::env::current_dir().context("cannot read the current directory")?.to_string_lossy().into_owned())
        }
    };
    let hits = store.search(&text, cwd.as_deref(), args.limit)?;
    if args.json {
        write_json_line(out, &hits)?;
    } else if hits.is_empty() {
        writeln!(out, "no matches")?;
    } else {
        for h in &hits {
            let what = h.role.as_ref().map_or(h.entry_type.as_str(), Role::as_str);
            writeln!(out, "{}  {}  {what}  {}", h.timestamp, h.entry_id, h.path.display())?;
            writeln!(out, "    {}", marked(&h.snippet, &h.marks))?;
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
