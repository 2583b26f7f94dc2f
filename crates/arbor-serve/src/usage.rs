//! Usage (`arbor usage` in the browser, issue 36): the report's JSON
//! (`/api/usage`, what `arbor usage --json` prints for the same sessions)
//! and the usage view (`/usage`): daily cost and tokens as bar charts, the
//! tables by model and by project, and where the money went in the trees.
//!
//! The sessions are the backend's listing (local files or a `--store`
//! server, through the same [`Sessions`] seam), read by `arbor-usage` with
//! the backend's options; what was read is kept in memory ([`arbor_usage::Cache`]) so
//! that a file whose stamp did not change is not read again. The view is
//! drawn on the server (inline SVG, no script), so its CSP allows no script.
//!
//! [`Sessions`]: arbor_tree::sessions::Sessions

use std::fmt::Write as _;

use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::Value;

use arbor_interop::escape_html;
use arbor_tree::sessions::{ListRequest, NoProgress, Scope};
use arbor_usage::jiff::civil::Weekday;
use arbor_usage::jiff::tz::TimeZone;
use arbor_usage::{
    dollars, parse_date, report, scan, short_count, zone, Agent, Amount, Grouping, Report, ReportOptions, ScanOptions,
    Source, Usage,
};

use crate::error::Refusal;
use crate::state::Shared;

const CSS: &str = include_str!("assets/list.css");
const USAGE_CSS: &str = include_str!("assets/usage.css");

/// `?report=&since=&until=&cwd=&tz=&weekStarts=&explain=`, as `arbor usage` takes them.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Ask {
    report: Option<String>,
    since: Option<String>,
    until: Option<String>,
    cwd: Option<String>,
    tz: Option<String>,
    week_starts: Option<String>,
    explain: Option<String>,
}

fn bad(what: &str, e: impl std::fmt::Display) -> Refusal {
    Refusal::new(StatusCode::BAD_REQUEST, format!("{what}: {e}"))
}

fn grouping(name: &str) -> Result<Grouping, Refusal> {
    Ok(match name {
        "daily" => Grouping::Daily,
        "weekly" => Grouping::Weekly,
        "monthly" => Grouping::Monthly,
        "session" => Grouping::Session,
        "model" => Grouping::Model,
        "project" => Grouping::Project,
        "agent" => Grouping::Agent,
        other => {
            return Err(bad(
                "report",
                format!("unknown report {other:?}: give daily, weekly, monthly, session, model, project or agent"),
            ))
        }
    })
}

/// Empty parameters count as absent (a form sends them empty).
fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl Ask {
    /// The options of the report `grouping` (days in the server's zone unless `tz`).
    fn options(&self, grouping: Grouping) -> Result<ReportOptions, Refusal> {
        let mut opts = ReportOptions::new(grouping);
        opts.zone = match given(&self.tz) {
            Some(name) => zone(name).map_err(|e| bad("tz", e))?,
            None => TimeZone::try_system().unwrap_or(TimeZone::UTC),
        };
        opts.since = given(&self.since).map(parse_date).transpose().map_err(|e| bad("since", e))?;
        opts.until = given(&self.until).map(parse_date).transpose().map_err(|e| bad("until", e))?;
        opts.week_start = match given(&self.week_starts) {
            None | Some("sunday") => Weekday::Sunday,
            Some("monday") => Weekday::Monday,
            Some(other) => return Err(bad("weekStarts", format!("{other:?}: give sunday or monday"))),
        };
        opts.cwd = given(&self.cwd).map(str::to_owned);
        Ok(opts)
    }
}

/// The backend's sessions with their usage, and the lines naming the files
/// that could not be read.
fn gather(st: &Shared) -> Result<(Usage, Vec<String>), Refusal> {
    let list = st.sessions.listing(&ListRequest::new(Scope::All), &NoProgress)?;
    let sources: Vec<Source> = list.into_iter().map(|i| Source { agent: Agent::Pi, path: i.path }).collect();
    let opts = ScanOptions { session: st.sessions.session_options(), ..ScanOptions::default() };
    let scanned = {
        let mut cache = st.usage.lock().map_err(|_| Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, "usage cache"))?;
        scan(&sources, &opts, &mut cache)
    };
    Ok((Usage::new(scanned.sessions), scanned.unreadable))
}

/// `/api/usage`: the report's JSON, as `arbor usage REPORT --json` prints it.
pub(crate) async fn json(State(st): State<Shared>, Query(ask): Query<Ask>) -> Result<Json<Value>, Refusal> {
    let g = grouping(given(&ask.report).unwrap_or("daily"))?;
    let opts = ask.options(g)?;
    let explain = given(&ask.explain).is_some_and(|e| e != "0" && e != "false");
    let v = tokio::task::spawn_blocking(move || {
        let (usage, _) = gather(&st)?;
        Ok::<_, Refusal>(report(&usage, &opts).to_json(explain))
    })
    .await??;
    Ok(Json(v))
}

/// The view's reports: daily, by model, by project.
struct Reports {
    daily: Report,
    models: Report,
    projects: Report,
    unreadable: Vec<String>,
    projects_all: Vec<String>,
}

/// `/usage`: the view, drawn here; a bad parameter is said on the page.
pub(crate) async fn page(State(st): State<Shared>, Query(ask): Query<Ask>) -> Response {
    let made = async {
        let daily = ask.options(Grouping::Daily)?;
        let (models, projects) = (ask.options(Grouping::Model)?, ask.options(Grouping::Project)?);
        let mut all = ask.options(Grouping::Project)?;
        all.cwd = None;
        let location = st.sessions.location();
        let reports = tokio::task::spawn_blocking(move || {
            let (usage, unreadable) = gather(&st)?;
            let projects_all = report(&usage, &all).rows.into_iter().map(|r| r.key).collect();
            Ok::<_, Refusal>(Reports {
                daily: report(&usage, &daily),
                models: report(&usage, &models),
                projects: report(&usage, &projects),
                unreadable,
                projects_all,
            })
        })
        .await??;
        Ok::<_, Refusal>((reports, location, daily_zone(&ask)))
    };
    let body = match made.await {
        Ok((r, location, zone)) => view(&r, &ask, &location, &zone),
        Err(Refusal(_, why)) => frame("", &format!("<p class=\"bad\" id=\"usage-error\">{}</p>", escape_html(&why))),
    };
    let mut r = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
    // No script at all; the filter form goes to this page only.
    let csp = "default-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; style-src 'unsafe-inline'; img-src data:";
    r.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(csp));
    r
}

fn daily_zone(ask: &Ask) -> String {
    match given(&ask.tz) {
        Some(z) => z.to_owned(),
        None => TimeZone::try_system()
            .ok()
            .and_then(|z| z.iana_name().map(str::to_owned))
            .unwrap_or_else(|| "UTC".to_owned()),
    }
}

/// The page around `main`.
fn frame(location: &str, main: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"arbor serve\">\n<title>Arbor usage</title>\n<style>\n{CSS}\n{USAGE_CSS}\n</style>\n</head>\n<body>\n<header id=\"top\">\n  <h1>Arbor</h1>\n  <nav id=\"views\" aria-label=\"Views\"><a href=\"/\">Sessions</a><a href=\"/usage\" class=\"on\">Usage</a></nav>\n  <span id=\"where\">{}</span>\n</header>\n{main}\n</body>\n</html>\n",
        escape_html(location)
    )
}

fn view(r: &Reports, ask: &Ask, location: &str, zone: &str) -> String {
    let mut m = String::new();
    filters(&mut m, ask, &r.projects_all);
    for line in &r.unreadable {
        let _ = writeln!(m, "<p class=\"bad\">{}</p>", escape_html(line));
    }
    let t = &r.daily.totals;
    let _ = writeln!(
        m,
        "<p id=\"usage-totals\">{} in {} replies, {} tokens ({} in, {} out, {} cache); days in {}.</p>",
        dollars(t.cost),
        t.replies,
        short_count(t.tokens.total()),
        short_count(t.tokens.input),
        short_count(t.tokens.output),
        short_count(t.tokens.cache_read + t.tokens.cache_write),
        escape_html(zone)
    );
    if r.daily.rows.is_empty() {
        m.push_str("<p id=\"usage-none\">No usage found.</p>\n");
        return frame(location, &m);
    }
    let days: Vec<(&str, Amount)> = r.daily.rows.iter().map(|row| (row.key.as_str(), row.total)).collect();
    m.push_str("<h2>Cost by day</h2>\n");
    chart(&mut m, "daily-cost", &days, |a| a.cost, |a| dollars(a.cost));
    m.push_str("<h2>Tokens by day</h2>\n");
    chart(&mut m, "daily-tokens", &days, |a| a.tokens.total() as f64, |a| short_count(a.tokens.total()));
    tree(&mut m, &r.daily);
    m.push_str("<h2>By model</h2>\n");
    table(&mut m, "by-model", "Model", &r.models);
    m.push_str("<h2>By project</h2>\n");
    table(&mut m, "by-project", "Project", &r.projects);
    if r.daily.copies.all.replies > 0 {
        let c = &r.daily.copies.all;
        let _ = writeln!(
            m,
            "<p class=\"note\">Forks: {} replies copied from earlier sessions ({}, {} tokens) are counted there only.</p>",
            c.replies,
            dollars(c.cost),
            short_count(c.tokens.total())
        );
    }
    frame(location, &m)
}

/// The filters: a form that asks this page again.
fn filters(m: &mut String, ask: &Ask, projects: &[String]) {
    let v = |o: &Option<String>| escape_html(given(o).unwrap_or(""));
    let _ = write!(
        m,
        "<form id=\"usage-filter\" method=\"get\" action=\"/usage\">\n<label>Since <input name=\"since\" type=\"date\" value=\"{}\"></label>\n<label>Until <input name=\"until\" type=\"date\" value=\"{}\"></label>\n<select name=\"cwd\" aria-label=\"Working directory\"><option value=\"\">Every directory</option>",
        v(&ask.since),
        v(&ask.until)
    );
    let chosen = given(&ask.cwd);
    for p in projects {
        let on = if chosen == Some(p.as_str()) { " selected" } else { "" };
        let _ = write!(m, "<option value=\"{0}\"{on}>{0}</option>", escape_html(p));
    }
    if let Some(tz) = given(&ask.tz) {
        let _ = write!(m, "<input type=\"hidden\" name=\"tz\" value=\"{}\">", escape_html(tz));
    }
    m.push_str("</select>\n<button type=\"submit\">Show</button>\n</form>\n");
}

/// Chart geometry: the plot's height and a bar's width and gap.
const PLOT_H: f64 = 160.0;
const BAR_W: f64 = 18.0;
const GAP: f64 = 6.0;
const MIN_W: f64 = 200.0;

/// A bar chart, one bar per day, each with its day and amount as its title.
fn chart(
    m: &mut String,
    id: &str,
    days: &[(&str, Amount)],
    of: impl Fn(&Amount) -> f64,
    say: impl Fn(&Amount) -> String,
) {
    let max = days.iter().map(|(_, a)| of(a)).fold(0.0, f64::max);
    // Wide enough for the first and the last day's names side by side.
    let width = ((days.len() as f64) * (BAR_W + GAP) + GAP).max(MIN_W);
    let _ = writeln!(
        m,
        "<div class=\"chart\"><svg id=\"{id}\" role=\"img\" aria-label=\"{id}\" width=\"{width}\" height=\"{}\" viewBox=\"0 0 {width} {}\">",
        PLOT_H + 24.0,
        PLOT_H + 24.0
    );
    for (k, (day, a)) in days.iter().enumerate() {
        let x = GAP + (k as f64) * (BAR_W + GAP);
        let h = if max > 0.0 { (of(a) / max * PLOT_H).max(1.0) } else { 1.0 };
        let _ = writeln!(
            m,
            "<rect class=\"bar\" data-day=\"{day}\" x=\"{x}\" y=\"{}\" width=\"{BAR_W}\" height=\"{h:.1}\"><title>{day}: {} ({} replies)</title></rect>",
            PLOT_H - h,
            escape_html(&say(a)),
            a.replies,
        );
    }
    // The first and the last day under the bars.
    if let (Some((first, _)), Some((last, _))) = (days.first(), days.last()) {
        let _ = writeln!(m, "<text x=\"{GAP}\" y=\"{}\" class=\"axis\">{first}</text>", PLOT_H + 16.0);
        if days.len() > 1 {
            let _ = writeln!(
                m,
                "<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"end\">{last}</text>",
                width - GAP,
                PLOT_H + 16.0
            );
        }
    }
    let _ = writeln!(m, "</svg><span class=\"peak\">peak {}</span></div>", escape_html(&say_max(days, &of, &say)));
}

fn say_max(days: &[(&str, Amount)], of: &impl Fn(&Amount) -> f64, say: &impl Fn(&Amount) -> String) -> String {
    days.iter()
        .max_by(|a, b| of(&a.1).total_cmp(&of(&b.1)))
        .map_or_else(String::new, |(d, a)| format!("{} on {d}", say(a)))
}

/// Where the money went in the trees: on the active paths, compacted,
/// on branches left with a summary, abandoned.
fn tree(m: &mut String, r: &Report) {
    m.push_str("<h2>In the trees</h2>\n<table id=\"tree\" class=\"usage\"><thead><tr><th>Where</th><th class=\"n\">Replies</th><th class=\"n\">Tokens</th><th class=\"n\">Cost</th><th>Share</th></tr></thead><tbody>\n");
    let t = &r.tree;
    let total = r.totals.cost;
    for (name, what, a) in [
        ("active", "on the active paths, in the leaves' contexts", t.active),
        ("compacted", "on the active paths, replaced by compaction summaries", t.compacted),
        ("summarized", "on branches left with a branch summary", t.summarized),
        ("abandoned", "on branches left without one", t.abandoned),
    ] {
        let share = if total > 0.0 { a.cost / total * 100.0 } else { 0.0 };
        let _ = writeln!(
            m,
            "<tr class=\"{name}\"><td title=\"{what}\">{name}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td><span class=\"share\" style=\"width:{share:.1}%\"></span></td></tr>",
            a.replies,
            short_count(a.tokens.total()),
            dollars(a.cost)
        );
    }
    m.push_str("</tbody></table>\n");
}

/// A report's rows as a table, with its share of the cost as a bar.
fn table(m: &mut String, id: &str, title: &str, r: &Report) {
    let _ = writeln!(
        m,
        "<table id=\"{id}\" class=\"usage\"><thead><tr><th>{title}</th><th class=\"n\">Replies</th><th class=\"n\">Input</th><th class=\"n\">Output</th><th class=\"n\">Cache</th><th class=\"n\">Cost</th><th>Share</th></tr></thead><tbody>"
    );
    let max = r.rows.iter().map(|row| row.total.cost).fold(0.0, f64::max);
    for row in &r.rows {
        let t = &row.total;
        let share = if max > 0.0 { t.cost / max * 100.0 } else { 0.0 };
        let _ = writeln!(
            m,
            "<tr><td class=\"key\" title=\"{0}\">{0}</td><td class=\"n\">{1}</td><td class=\"n\">{2}</td><td class=\"n\">{3}</td><td class=\"n\">{4}</td><td class=\"n\">{5}</td><td><span class=\"share\" style=\"width:{share:.1}%\"></span></td></tr>",
            escape_html(&row.key),
            t.replies,
            short_count(t.tokens.input),
            short_count(t.tokens.output),
            short_count(t.tokens.cache_read + t.tokens.cache_write),
            dollars(t.cost)
        );
    }
    m.push_str("</tbody></table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_sessions_is_escaped() {
        assert_eq!(escape_html("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }

    #[test]
    fn a_bad_report_or_day_is_refused_naming_it() {
        assert!(grouping("hourly").unwrap_err().1.contains("hourly"));
        let ask = Ask { since: Some("yesterday".into()), ..Ask::default() };
        assert!(ask.options(Grouping::Daily).unwrap_err().1.starts_with("since:"));
        let ask = Ask { since: Some(" ".into()), ..Ask::default() };
        assert_eq!(ask.options(Grouping::Daily).unwrap().since, None);
    }
}
