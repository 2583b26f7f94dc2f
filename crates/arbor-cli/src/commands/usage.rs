//! `arbor usage [daily|weekly|monthly|session|model|project|agent|branch]`:
//! what sessions cost, from `arbor-usage` (the library decides, this
//! presents): a table that fits 80 columns with a bar per row, or the
//! report's JSON (docs/usage.md).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use clap::ValueEnum;

use arbor_tree::paths;
use arbor_tree::sessions::{ListRequest, NoProgress, Scope};
use arbor_usage::jiff::civil::Weekday;
use arbor_usage::jiff::tz::TimeZone;
use arbor_usage::{
    branches, dollars, parse_date, report, scan, short_count, zone, Agent, Amount, Branch, Cache, Difference, Grouping,
    PriceTable, Report, ReportOptions, ScanOptions, Source, Usage,
};

use crate::shared::backend;
use crate::shared::output::write_json_line;
use crate::shared::session::Globals;
use crate::shared::visible::{for_people, say};

/// What sessions cost: tokens and cost by day, week, month, session, model, project or agent
/// (over pi's sessions and, read in place, Claude Code's, Codex's and OpenCode's), or each
/// branch of one session.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The report (default: daily); `branch FILE` lists each leaf's branch of one session.
    #[arg(value_enum)]
    report: Option<Kind>,
    /// The session of `branch`.
    #[arg(allow_hyphen_values = true)]
    file: Option<PathBuf>,
    /// Only replies on or after this day (YYYY-MM-DD or YYYYMMDD, in --timezone).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only replies on or before this day (YYYY-MM-DD or YYYYMMDD, in --timezone).
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// The time zone days are counted in (an IANA name such as Europe/Berlin; default: the system's).
    #[arg(long, short = 'z', value_name = "TZ")]
    timezone: Option<String>,
    /// The first day of a week in the weekly report.
    #[arg(long, value_enum, default_value = "sunday", value_name = "DAY")]
    week_starts: WeekStart,
    /// Only the sessions of this working directory (default: every one).
    #[arg(long, value_name = "DIR", conflicts_with = "all")]
    cwd: Option<PathBuf>,
    /// Every working directory's sessions (the default).
    #[arg(long)]
    all: bool,
    /// Only these agents (comma-separated: pi, claude, codex, opencode; default: all of them).
    #[arg(long, value_delimiter = ',', value_name = "AGENT")]
    agent: Vec<String>,
    /// pi's sessions root (default: $ARBOR_SESSIONS_DIR, else $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions).
    #[arg(long, value_name = "DIR")]
    sessions_dir: Option<PathBuf>,
    /// Claude Code's projects folder (default: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects).
    #[arg(long, value_name = "DIR")]
    claude_dir: Option<PathBuf>,
    /// Codex's sessions folder (default: $CODEX_HOME/sessions, else ~/.codex/sessions).
    #[arg(long, value_name = "DIR")]
    codex_dir: Option<PathBuf>,
    /// OpenCode's storage folder (default: $XDG_DATA_HOME/opencode/storage, else ~/.local/share/opencode/storage).
    #[arg(long, value_name = "DIR")]
    opencode_dir: Option<PathBuf>,
    /// Read every file again instead of taking unchanged ones from the usage cache.
    #[arg(long)]
    no_cache: bool,
    /// Print the report as JSON (ccusage's field names where they mean the same; see docs/usage.md).
    #[arg(long)]
    json: bool,
    /// Also list where and why the report differs from a flat count such as ccusage's
    /// (fork copies counted once, replies priced from Arbor's table).
    #[arg(long)]
    explain: bool,
}

/// The reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Kind {
    Daily,
    Weekly,
    Monthly,
    Session,
    Model,
    Project,
    Agent,
    Branch,
}

/// The first day of a week.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum WeekStart {
    Sunday,
    Monday,
}

pub fn run(args: Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let mut human = None;
    let out = for_people(out, args.json, &mut human);
    let kind = args.report.unwrap_or(Kind::Daily);
    if kind == Kind::Branch {
        let Some(file) = &args.file else { bail!("usage branch needs the session: arbor usage branch FILE") };
        return branch(file, &args, g, out);
    }
    if let Some(file) = &args.file {
        bail!("unexpected argument {}: only `usage branch` takes a session", file.display());
    }
    let opts = report_options(kind, &args)?;
    let (sources, scan_opts, location) = sources(&args, g)?;
    let mut cache = match (args.no_cache, paths::cache_dir()) {
        (false, Some(dir)) => Cache::open(&cache_file(&dir, &location, &args)),
        _ => Cache::in_memory(),
    };
    if let Some(w) = cache.take_warning() {
        say!("arbor: warning: {w}");
    }
    let scanned = scan(&sources, &scan_opts, &mut cache);
    for line in &scanned.unreadable {
        say!("arbor: {line}");
    }
    // The copies are kept in the cache too: found again only when the sessions changed.
    let usage = Usage::with_cache(scanned.sessions, &mut cache);
    if let Err(e) = cache.save() {
        say!("arbor: warning: {e}");
    }
    let r = report(&usage, &opts);
    if args.json {
        write_json_line(out, &r.to_json(args.explain))?;
    } else {
        write_table(out, &r, &opts)?;
        if args.explain {
            write_differences(out, &r)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn report_options(kind: Kind, args: &Args) -> Result<ReportOptions> {
    let grouping = match kind {
        Kind::Daily => Grouping::Daily,
        Kind::Weekly => Grouping::Weekly,
        Kind::Monthly => Grouping::Monthly,
        Kind::Session => Grouping::Session,
        Kind::Model => Grouping::Model,
        Kind::Project => Grouping::Project,
        Kind::Agent | Kind::Branch => Grouping::Agent,
    };
    let mut opts = ReportOptions::new(grouping);
    opts.zone = match &args.timezone {
        Some(name) => zone(name)?,
        None => TimeZone::try_system().unwrap_or(TimeZone::UTC),
    };
    opts.since = args.since.as_deref().map(parse_date).transpose()?;
    opts.until = args.until.as_deref().map(parse_date).transpose()?;
    opts.week_start = match args.week_starts {
        WeekStart::Sunday => Weekday::Sunday,
        WeekStart::Monday => Weekday::Monday,
    };
    opts.cwd = cwd(args)?;
    Ok(opts)
}

/// `--cwd`, made absolute (`--cwd .` is this directory), as sessions record it.
fn cwd(args: &Args) -> Result<Option<String>> {
    let Some(dir) = &args.cwd else { return Ok(None) };
    let abs = std::path::absolute(dir).with_context(|| format!("--cwd {}", dir.display()))?;
    Ok(Some(abs.to_string_lossy().into_owned()))
}

/// The agents asked for (all of them by default).
fn agents(args: &Args) -> Result<Vec<Agent>> {
    if args.agent.is_empty() {
        return Ok(Agent::ALL.to_vec());
    }
    args.agent
        .iter()
        .map(|a| {
            Agent::parse(a.trim()).with_context(|| format!("unknown agent {a:?}: give pi, claude, codex or opencode"))
        })
        .collect()
}

/// A folder from a flag, else from an environment variable (joined with
/// `under`), else under the home directory.
fn agent_dir(flag: &Option<PathBuf>, var: &str, under: &str, home: &str) -> Option<PathBuf> {
    if let Some(d) = flag {
        return Some(d.clone());
    }
    if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(v).join(under));
    }
    std::env::home_dir().map(|h| h.join(home))
}

/// pi's sessions: with `--store` the server's (listed through the
/// backend, opened with its options), else the files under the sessions
/// root, found with one walk (the catalog would read each file once more
/// for its listing facts, which usage does not need) and stamped with one
/// `stat` each.
fn pi_sessions(args: &Args, g: &Globals, cwd: Option<&str>) -> Result<(Vec<PathBuf>, ScanOptions, String)> {
    let mut opts = ScanOptions::default();
    if g.store.is_none() {
        opts.local = true;
        let root = args.sessions_dir.clone().unwrap_or_else(paths::sessions_root);
        let location = root.to_string_lossy().into_owned();
        return Ok((arbor_usage::pi_files(&root, cwd)?, opts, location));
    }
    let sessions = g.sessions_in(args.sessions_dir.as_deref())?;
    let scope = cwd.map_or(Scope::All, Scope::cwd);
    let list = sessions.listing(&ListRequest::new(scope), &NoProgress);
    backend::warn(sessions.as_ref());
    opts.session = sessions.session_options();
    Ok((list?.into_iter().map(|i| i.path).collect(), opts, sessions.location()))
}

/// Every file to read, how pi's are opened, and where pi's are (for the cache's name).
fn sources(args: &Args, g: &Globals) -> Result<(Vec<Source>, ScanOptions, String)> {
    let cwd = cwd(args)?;
    let mut out = Vec::new();
    let mut opts = ScanOptions::default();
    let mut location = String::new();
    for agent in agents(args)? {
        let found = match agent {
            Agent::Pi => {
                let (files, o, l) = pi_sessions(args, g, cwd.as_deref())?;
                (opts, location) = (o, l);
                files
            }
            Agent::Claude => match agent_dir(&args.claude_dir, "CLAUDE_CONFIG_DIR", "projects", ".claude/projects") {
                Some(dir) => arbor_usage::files_under(&dir, ".jsonl")?,
                None => Vec::new(),
            },
            Agent::Codex => match agent_dir(&args.codex_dir, "CODEX_HOME", "sessions", ".codex/sessions") {
                Some(dir) => arbor_usage::files_under(&dir, ".jsonl")?,
                None => Vec::new(),
            },
            Agent::OpenCode => {
                match agent_dir(
                    &args.opencode_dir,
                    "XDG_DATA_HOME",
                    "opencode/storage",
                    ".local/share/opencode/storage",
                ) {
                    Some(dir) => arbor_usage::opencode_sessions(&dir)?,
                    None => Vec::new(),
                }
            }
        };
        out.extend(found.into_iter().map(|path| Source { agent, path }));
    }
    Ok((out, opts, location))
}

/// `<cache>/usage/<hash of the folders read>.bin`: one cache per set of folders.
fn cache_file(cache: &Path, pi: &str, args: &Args) -> PathBuf {
    let mut names = vec![pi.to_owned()];
    for d in [&args.claude_dir, &args.codex_dir, &args.opencode_dir] {
        names.push(d.as_ref().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default());
    }
    let hash = names
        .join("\n")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    cache.join("usage").join(format!("{hash:016x}.bin"))
}

/// Cuts `s` to `max` characters, keeping its end (paths) or its start.
fn fit(s: &str, max: usize, keep_end: bool) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    if keep_end {
        format!("…{}", s.chars().skip(n - (max - 1)).collect::<String>())
    } else {
        format!("{}…", s.chars().take(max - 1).collect::<String>())
    }
}

const WIDTH: usize = 80;

fn write_table(out: &mut dyn Write, r: &Report, opts: &ReportOptions) -> Result<()> {
    let title = match r.grouping {
        Grouping::Daily => "day",
        Grouping::Weekly => "week",
        Grouping::Monthly => "month",
        Grouping::Session => "session",
        Grouping::Model => "model",
        Grouping::Project => "project",
        Grouping::Agent => "agent",
    };
    if r.rows.is_empty() {
        writeln!(out, "no usage found")?;
        return Ok(());
    }
    let zone = opts.zone.iana_name().unwrap_or("UTC");
    let keys: Vec<String> = r.rows.iter().map(|row| row_label(r.grouping, row)).collect();
    let key_w = keys.iter().map(|k| k.chars().count()).max().unwrap_or(0).clamp(title.len(), 24);
    // key, replies, input, output, cache r+w, cost, then the bar.
    let fixed = key_w + 1 + 7 + 1 + 7 + 1 + 7 + 1 + 8 + 1 + 9 + 1;
    let bar_w = WIDTH.saturating_sub(fixed).max(4);
    writeln!(out, "Usage by {title} (days in {zone})")?;
    writeln!(out, "{:<key_w$} {:>7} {:>7} {:>7} {:>8} {:>9}", title, "replies", "input", "output", "cache", "cost")?;
    let max = r.rows.iter().map(|row| row.total.cost).fold(0.0, f64::max);
    for (row, key) in r.rows.iter().zip(&keys) {
        let t = &row.total;
        let filled = if max > 0.0 { ((t.cost / max) * bar_w as f64).round() as usize } else { 0 };
        writeln!(
            out,
            "{:<key_w$} {:>7} {:>7} {:>7} {:>8} {:>9} {}",
            fit(key, key_w, matches!(r.grouping, Grouping::Project)),
            t.replies,
            short_count(t.tokens.input),
            short_count(t.tokens.output),
            short_count(t.tokens.cache_read + t.tokens.cache_write),
            dollars(t.cost),
            "█".repeat(filled.min(bar_w)),
        )?;
    }
    let t = &r.totals;
    writeln!(
        out,
        "{:<key_w$} {:>7} {:>7} {:>7} {:>8} {:>9}",
        "total",
        t.replies,
        short_count(t.tokens.input),
        short_count(t.tokens.output),
        short_count(t.tokens.cache_read + t.tokens.cache_write),
        dollars(t.cost)
    )?;
    write_tree_line(out, r)
}

fn row_label(grouping: Grouping, row: &arbor_usage::Row) -> String {
    match (&row.session, grouping) {
        (Some(s), Grouping::Session) => {
            let id: String = s.id.chars().take(8).collect();
            let dir = s.cwd.rsplit('/').find(|p| !p.is_empty()).unwrap_or("/");
            format!("{id} {} {dir}", s.agent.as_str())
        }
        _ => row.key.clone(),
    }
}

/// Where the money went in the trees, on one or two lines.
fn write_tree_line(out: &mut dyn Write, r: &Report) -> Result<()> {
    let part = |name: &str, a: &Amount| format!("{name} {} ({})", dollars(a.cost), a.replies);
    let tree = &r.tree;
    let parts = [
        part("active", &tree.active),
        part("compacted", &tree.compacted),
        part("summarized", &tree.summarized),
        part("abandoned", &tree.abandoned),
    ];
    // Broken between the parts, never inside one.
    let mut line = String::from("tree:");
    for (k, p) in parts.iter().enumerate() {
        let sep = if k + 1 < parts.len() { "," } else { "" };
        if line.chars().count() + 1 + p.chars().count() + sep.len() > WIDTH {
            writeln!(out, "{line}")?;
            line = String::from("     ");
        }
        line.push_str(&format!(" {p}{sep}"));
    }
    writeln!(out, "{line}")?;
    let copies = &r.copies.all;
    if copies.replies > 0 {
        let line = format!(
            "forks: {} replies copied from earlier sessions ({}, {} tokens) counted there only",
            copies.replies,
            dollars(copies.cost),
            short_count(copies.tokens.total())
        );
        write_wrapped(out, &line, "       ")?;
    }
    Ok(())
}

/// `text` in lines of at most [`WIDTH`] columns, the later ones indented by `indent`.
fn write_wrapped(out: &mut dyn Write, text: &str, indent: &str) -> Result<()> {
    let opts = textwrap::Options::new(WIDTH).subsequent_indent(indent).break_words(true);
    for line in textwrap::wrap(text, opts) {
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn write_differences(out: &mut dyn Write, r: &Report) -> Result<()> {
    if r.differences.is_empty() {
        let line = "no differences from a flat count: every reply recorded its cost, no session repeats another";
        return write_wrapped(out, line, "");
    }
    writeln!(out, "where this differs from a flat count (ccusage):")?;
    for d in &r.differences {
        let line = match d {
            Difference::Copies { session, of, amount } => format!(
                "- {} repeats {} replies of {} ({}, {} tokens): counted once, in {}; ccusage counts {} of them again",
                session.1,
                amount.all.replies,
                of.1,
                dollars(amount.all.cost),
                short_count(amount.all.tokens.total()),
                of.0,
                amount.recounted.replies
            ),
            Difference::Priced { model, amount } => format!(
                "- {} replies of {model} recorded no cost: priced from Arbor's table at {}",
                amount.replies,
                dollars(amount.cost)
            ),
            Difference::Unpriced { model, amount } => format!(
                "- {} replies of {model} recorded no cost and the price table does not know it: counted at $0 ({} tokens)",
                amount.replies,
                short_count(amount.tokens.total())
            ),
        };
        write_wrapped(out, &fit(&line, 400, false), "  ")?;
    }
    Ok(())
}

fn branch(file: &Path, args: &Args, g: &Globals, out: &mut dyn Write) -> Result<ExitCode> {
    let s = g.open_read(file)?;
    let list = branches(&s, &PriceTable::builtin())?;
    if args.json {
        let rows: Vec<serde_json::Value> = list.iter().map(branch_json).collect();
        write_json_line(out, &serde_json::json!({ "branches": rows }))?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<10} {:>7} {:>8} {:>9} {:>9}  {:<10} label",
        "leaf", "entries", "replies", "own", "path", "parts at"
    )?;
    for b in &list {
        let mark = if b.active { "◀" } else { " " };
        let line = format!(
            "{:<8} {} {:>7} {:>8} {:>9} {:>9}  {:<10} {}",
            fit(&b.leaf, 8, false),
            mark,
            b.entries,
            b.own.replies,
            dollars(b.own.cost),
            dollars(b.path.cost),
            b.parts_at.as_deref().map_or("root".to_owned(), |p| fit(p, 10, false)),
            fit(b.label.as_deref().unwrap_or(""), 24, false)
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    let total: f64 = list.iter().map(|b| b.own.cost).sum();
    writeln!(out, "{} branches, {} in all", list.len(), dollars(total))?;
    Ok(ExitCode::SUCCESS)
}

fn branch_json(b: &Branch) -> serde_json::Value {
    serde_json::json!({
        "leaf": b.leaf,
        "active": b.active,
        "label": b.label,
        "partsAt": b.parts_at,
        "entries": b.entries,
        "own": b.own.to_json(),
        "path": b.path.to_json(),
        "time": b.time,
    })
}
