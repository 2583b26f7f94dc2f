//! Reports: replies gathered into rows by day, week, month, session, model,
//! project or agent, with totals, the tree's view of each row and the
//! copies a fork made (not counted). [`Report::to_json`] is `arbor usage
//! --json` (and what `arbor serve` charts): ccusage's field names where
//! they mean the same, Arbor's own beside them (docs/usage.md).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use serde_json::{json, Map, Value};

use crate::cache::Cache;
use crate::forks::{find_copies, fingerprint, Copies};
use crate::model::{Agent, Place, Reply, SessionUsage, Tokens};
use crate::period::{day_text, iso, month_text, week_of, Days};
use crate::price::PriceTable;

/// What rows a report has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// One row per day.
    Daily,
    /// One row per week.
    Weekly,
    /// One row per month.
    Monthly,
    /// One row per session.
    Session,
    /// One row per model.
    Model,
    /// One row per project (working directory).
    Project,
    /// One row per agent.
    Agent,
}

impl Grouping {
    /// The JSON key of the rows (`daily`, `weekly`, `monthly`, `sessions`, …).
    pub fn rows_key(self) -> &'static str {
        match self {
            Grouping::Daily => "daily",
            Grouping::Weekly => "weekly",
            Grouping::Monthly => "monthly",
            Grouping::Session => "sessions",
            Grouping::Model => "models",
            Grouping::Project => "projects",
            Grouping::Agent => "agents",
        }
    }

    /// The JSON field that names a row (`date`, `week`, `month`, `sessionId`, …).
    pub fn key_field(self) -> &'static str {
        match self {
            Grouping::Daily => "date",
            Grouping::Weekly => "week",
            Grouping::Monthly => "month",
            Grouping::Session => "sessionId",
            Grouping::Model => "model",
            Grouping::Project => "project",
            Grouping::Agent => "agent",
        }
    }
}

/// The sessions a report is made from, with the copies among them found.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// The sessions.
    pub sessions: Vec<SessionUsage>,
    /// Which replies repeat an earlier session's ([`find_copies`]).
    pub copies: Copies,
}

impl Usage {
    /// The sessions, with their copies found.
    pub fn new(sessions: Vec<SessionUsage>) -> Usage {
        let copies = find_copies(&sessions);
        Usage { sessions, copies }
    }

    /// [`Usage::new`], with the copies kept in `cache`: taken from there
    /// when it kept them for these very sessions (the same starts, locations
    /// and reply keys in the same order, as a repeated scan of unchanged
    /// files gives), else found and kept there for the next time (written
    /// by [`Cache::save`]).
    pub fn with_cache(sessions: Vec<SessionUsage>, cache: &mut Cache) -> Usage {
        let fingerprint = fingerprint(&sessions);
        if let Some(copies) = cache.copies(fingerprint, sessions.len()) {
            return Usage { copies: copies.clone(), sessions };
        }
        let copies = find_copies(&sessions);
        cache.keep_copies(fingerprint, copies.clone());
        Usage { sessions, copies }
    }
}

/// How a report is made.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The rows.
    pub grouping: Grouping,
    /// The zone days, weeks and months are counted in.
    pub zone: TimeZone,
    /// Only replies on or after this day (in `zone`).
    pub since: Option<Date>,
    /// Only replies on or before this day (in `zone`).
    pub until: Option<Date>,
    /// The first day of a week.
    pub week_start: Weekday,
    /// Only sessions of this working directory.
    pub cwd: Option<String>,
    /// The prices of replies without a recorded cost.
    pub prices: PriceTable,
}

impl ReportOptions {
    /// Rows as `grouping` says, days in UTC, weeks from Sunday (as
    /// ccusage's), every reply, Arbor's price table.
    pub fn new(grouping: Grouping) -> ReportOptions {
        ReportOptions {
            grouping,
            zone: TimeZone::UTC,
            since: None,
            until: None,
            week_start: Weekday::Sunday,
            cwd: None,
            prices: PriceTable::builtin(),
        }
    }
}

/// Replies, tokens and cost added up.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Amount {
    /// Replies.
    pub replies: u64,
    /// Their tokens.
    pub tokens: Tokens,
    /// Their cost in USD.
    pub cost: f64,
}

impl Amount {
    fn add(&mut self, tokens: &Tokens, cost: f64) {
        self.replies += 1;
        self.tokens += *tokens;
        self.cost += cost;
    }

    fn add_amount(&mut self, o: &Amount) {
        self.replies += o.replies;
        self.tokens += o.tokens;
        self.cost += o.cost;
    }

    /// As JSON: the token fields ccusage names, `totalTokens`, `replies` and `cost`.
    pub fn to_json(self) -> Value {
        let mut m = tokens_json(&self.tokens);
        m.insert("replies".into(), json!(self.replies));
        m.insert("cost".into(), json!(self.cost));
        Value::Object(m)
    }
}

fn tokens_json(t: &Tokens) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("inputTokens".into(), json!(t.input));
    m.insert("outputTokens".into(), json!(t.output));
    m.insert("cacheCreationTokens".into(), json!(t.cache_write));
    m.insert("cacheReadTokens".into(), json!(t.cache_read));
    m.insert("totalTokens".into(), json!(t.total()));
    m
}

/// Replies that repeat an earlier session's: not counted here.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Copied {
    /// Every copy.
    pub all: Amount,
    /// The copies a flat count (ccusage 20) counts again: all but those of
    /// a fork whose header's `parentSession` names a session file that is
    /// read too and that predate the fork's header (those it skips as well).
    pub recounted: Amount,
}

impl Copied {
    fn add(&mut self, tokens: &Tokens, cost: f64, recounted: bool) {
        self.all.add(tokens, cost);
        if recounted {
            self.recounted.add(tokens, cost);
        }
    }

    fn add_copied(&mut self, o: &Copied) {
        self.all.add_amount(&o.all);
        self.recounted.add_amount(&o.recounted);
    }

    /// As JSON: every copy as an [`Amount`], and `recountedByCcusage`.
    pub fn to_json(self) -> Value {
        let mut v = self.all.to_json();
        v["recountedByCcusage"] = self.recounted.to_json();
        v
    }
}

/// What a row's replies cost, by where they stand in their trees.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TreeCosts {
    /// On the active paths, in the leaves' contexts.
    pub active: Amount,
    /// On the active paths, replaced by compaction summaries.
    pub compacted: Amount,
    /// On branches left with a branch summary.
    pub summarized: Amount,
    /// On branches left without one.
    pub abandoned: Amount,
}

impl TreeCosts {
    fn at(&mut self, place: Place) -> &mut Amount {
        match place {
            Place::Active => &mut self.active,
            Place::Compacted => &mut self.compacted,
            Place::Summarized => &mut self.summarized,
            Place::Abandoned => &mut self.abandoned,
        }
    }

    /// The amount of one place.
    pub fn get(&self, place: Place) -> Amount {
        match place {
            Place::Active => self.active,
            Place::Compacted => self.compacted,
            Place::Summarized => self.summarized,
            Place::Abandoned => self.abandoned,
        }
    }

    fn to_json(self) -> Value {
        json!({
            "active": self.active.to_json(),
            "compacted": self.compacted.to_json(),
            "summarized": self.summarized.to_json(),
            "abandoned": self.abandoned.to_json(),
        })
    }
}

/// The facts of a session row.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionFacts {
    /// The session id.
    pub id: String,
    /// The agent.
    pub agent: Agent,
    /// Where it is.
    pub location: String,
    /// Its working directory.
    pub cwd: String,
    /// The session it was forked from (its header's `parentSession`).
    pub parent_session: Option<String>,
    /// Its branch summaries, compactions and leaves.
    pub branch_summaries: u32,
    /// See [`SessionFacts::branch_summaries`].
    pub compactions: u32,
    /// See [`SessionFacts::branch_summaries`].
    pub leaves: u32,
}

/// One row of a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// What names the row: a day, a week's first day, a month, a session id,
    /// a model, a project or an agent.
    pub key: String,
    /// The agents of its replies.
    pub agents: Vec<Agent>,
    /// What was counted.
    pub total: Amount,
    /// By model: the model, and what its replies were counted.
    pub models: Vec<(String, Amount)>,
    /// The counted replies by where they stand in their trees.
    pub tree: TreeCosts,
    /// Replies that repeat an earlier session's: not counted.
    pub copies: Copied,
    /// The first and last reply's time (ms since the epoch).
    pub first_ms: i64,
    /// See [`Row::first_ms`].
    pub last_ms: i64,
    /// For a session row: the session.
    pub session: Option<SessionFacts>,
}

/// Why a report says otherwise than a flat reader (ccusage) would.
#[derive(Debug, Clone, PartialEq)]
pub enum Difference {
    /// A session repeats replies of an earlier one (a fork, a resumed
    /// transcript): they count in the earlier one only.
    Copies {
        /// The session holding the copies: id and location.
        session: (String, String),
        /// The session they belong to.
        of: (String, String),
        /// What the copies amount to, and what of it ccusage counts again.
        amount: Copied,
    },
    /// Replies without a recorded cost, priced from Arbor's table.
    Priced {
        /// The model.
        model: String,
        /// The replies and the cost the table gives them.
        amount: Amount,
    },
    /// Replies without a recorded cost whose model the table does not know: counted at no cost.
    Unpriced {
        /// The model.
        model: String,
        /// The replies (cost 0).
        amount: Amount,
    },
}

impl Difference {
    fn to_json(&self) -> Value {
        match self {
            Difference::Copies { session, of, amount } => json!({
                "kind": "copies", "sessionId": session.0, "path": session.1,
                "ofSessionId": of.0, "ofPath": of.1, "amount": amount.to_json(),
            }),
            Difference::Priced { model, amount } => {
                json!({"kind": "priced", "model": model, "amount": amount.to_json()})
            }
            Difference::Unpriced { model, amount } => {
                json!({"kind": "unpriced", "model": model, "amount": amount.to_json()})
            }
        }
    }
}

/// A report: its rows, their totals and what differs from a flat count.
#[derive(Debug, Clone)]
pub struct Report {
    /// What the rows are.
    pub grouping: Grouping,
    /// The rows, in order (periods oldest first, sessions by last reply,
    /// the rest most expensive first).
    pub rows: Vec<Row>,
    /// Every row added up.
    pub totals: Amount,
    /// The totals by where replies stand in their trees.
    pub tree: TreeCosts,
    /// The copies not counted, added up.
    pub copies: Copied,
    /// What differs from a flat count, and why ([`Difference`]).
    pub differences: Vec<Difference>,
}

#[derive(Debug, Default)]
struct Acc {
    agents: BTreeSet<Agent>,
    total: Amount,
    /// By model (few: found by a look along).
    models: Vec<(String, Amount)>,
    tree: TreeCosts,
    copies: Copied,
    first_ms: Option<i64>,
    last_ms: i64,
}

impl Acc {
    /// The amount of `model`, added when new.
    fn model(&mut self, model: &str) -> &mut Amount {
        let k = match self.models.iter().position(|(m, _)| m == model) {
            Some(k) => k,
            None => {
                self.models.push((model.to_owned(), Amount::default()));
                self.models.len() - 1
            }
        };
        &mut self.models[k].1
    }
}

/// The rows as they are counted: each key once, in the order first met.
#[derive(Debug, Default)]
struct Rows {
    accs: Vec<(String, Acc)>,
    index: HashMap<String, usize>,
    /// The last row's key, what it was made from, and its place in `accs`:
    /// made and looked up again only when that changes.
    last: Option<(KeyOf, usize)>,
}

impl Rows {
    /// The row of the reply `key` stands for (`make` gives its text when it is not the last row's).
    fn at(&mut self, of: KeyOf, make: impl FnOnce() -> String) -> (usize, bool) {
        if let Some((o, k)) = self.last {
            if o == of {
                return (k, false);
            }
        }
        let key = make();
        let (k, new) = match self.index.get(&key) {
            Some(&k) => (k, false),
            None => {
                self.index.insert(key.clone(), self.accs.len());
                self.accs.push((key, Acc::default()));
                (self.accs.len() - 1, true)
            }
        };
        self.last = Some((of, k));
        (k, new)
    }
}

/// Makes the report `opts` asks for.
pub fn report(usage: &Usage, opts: &ReportOptions) -> Report {
    let mut rows = Rows::default();
    let mut session_of_row: HashMap<usize, usize> = HashMap::new();
    let mut differences = Differences::default();
    let locations: std::collections::HashSet<&str> = usage.sessions.iter().map(|s| s.location.as_str()).collect();
    let mut days = Days::new(&opts.zone);
    for (i, s) in usage.sessions.iter().enumerate() {
        if opts.cwd.as_ref().is_some_and(|c| *c != s.cwd) {
            continue;
        }
        let prices: Vec<Option<&crate::price::Price>> = s.models.iter().map(|(_, m)| opts.prices.find(m)).collect();
        for (k, r) in s.replies.iter().enumerate() {
            let day = days.of(r.time_ms);
            if opts.since.is_some_and(|d| day < d) || opts.until.is_some_and(|d| day > d) {
                continue;
            }
            let of = match opts.grouping {
                Grouping::Daily | Grouping::Weekly | Grouping::Monthly => KeyOf::Day(day),
                Grouping::Model => KeyOf::Model(i, r.model),
                Grouping::Session | Grouping::Project | Grouping::Agent => KeyOf::Session(i),
            };
            let (at, new) = rows.at(of, || row_key(opts, s, i, r, day));
            if new && opts.grouping == Grouping::Session {
                session_of_row.insert(at, i);
            }
            let acc = &mut rows.accs[at].1;
            let model = s.model_of(r);
            let price = prices.get(r.model as usize).copied().flatten();
            let cost = r.recorded_cost.or_else(|| price.map(|p| p.cost(&r.tokens))).unwrap_or(0.0);
            acc.first_ms = Some(acc.first_ms.map_or(r.time_ms, |f| f.min(r.time_ms)));
            acc.last_ms = acc.last_ms.max(r.time_ms);
            if let Some(owner) = usage.copies.of(i, k) {
                // ccusage skips what a fork copied when the fork names a file it reads.
                let linked = s.parent_session.as_ref().is_some_and(|p| locations.contains(p.as_str()));
                let recounted = !(linked && r.time_ms <= s.started_ms);
                acc.copies.add(&r.tokens, cost, recounted);
                differences.copy(usage, i, owner, &r.tokens, cost, recounted);
                continue;
            }
            acc.agents.insert(s.agent);
            acc.total.add(&r.tokens, cost);
            acc.model(model).add(&r.tokens, cost);
            acc.tree.at(r.place).add(&r.tokens, cost);
            if r.recorded_cost.is_none() {
                differences.priced(model, price.is_some(), &r.tokens, cost);
            }
        }
    }
    let mut out: Vec<Row> = rows
        .accs
        .into_iter()
        .enumerate()
        .map(|(at, (key, acc))| {
            let session = session_of_row.get(&at).map(|&i| facts(&usage.sessions[i]));
            let key = session.as_ref().map_or(key, |f| f.id.clone());
            finish(key, acc, session)
        })
        .collect();
    sort_rows(opts.grouping, &mut out);
    let mut totals = Amount::default();
    let mut tree = TreeCosts::default();
    let mut copies = Copied::default();
    for r in &out {
        totals.add_amount(&r.total);
        copies.add_copied(&r.copies);
        for place in Place::ALL {
            tree.at(place).add_amount(&r.tree.get(place));
        }
    }
    Report { grouping: opts.grouping, rows: out, totals, tree, copies, differences: differences.done() }
}

/// What a row's key is made from (see [`row_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyOf {
    Day(Date),
    Model(usize, u32),
    Session(usize),
}

fn row_key(opts: &ReportOptions, s: &SessionUsage, i: usize, r: &Reply, day: Date) -> String {
    match opts.grouping {
        Grouping::Daily => day_text(day),
        Grouping::Weekly => day_text(week_of(day, opts.week_start)),
        Grouping::Monthly => month_text(day),
        // Unique even when two files share an id.
        Grouping::Session => format!("{i}"),
        Grouping::Model => s.model_of(r).to_owned(),
        Grouping::Project => s.cwd.clone(),
        Grouping::Agent => s.agent.as_str().to_owned(),
    }
}

fn facts(s: &SessionUsage) -> SessionFacts {
    SessionFacts {
        id: s.id.clone(),
        agent: s.agent,
        location: s.location.clone(),
        cwd: s.cwd.clone(),
        parent_session: s.parent_session.clone(),
        branch_summaries: s.branch_summaries,
        compactions: s.compactions,
        leaves: s.leaves,
    }
}

fn finish(key: String, acc: Acc, session: Option<SessionFacts>) -> Row {
    let mut models = acc.models;
    models.sort_by(|a, b| b.1.cost.total_cmp(&a.1.cost).then_with(|| a.0.cmp(&b.0)));
    Row {
        key,
        agents: acc.agents.into_iter().collect(),
        total: acc.total,
        models,
        tree: acc.tree,
        copies: acc.copies,
        first_ms: acc.first_ms.unwrap_or(0),
        last_ms: acc.last_ms,
        session,
    }
}

fn sort_rows(grouping: Grouping, rows: &mut [Row]) {
    match grouping {
        Grouping::Daily | Grouping::Weekly | Grouping::Monthly => rows.sort_by(|a, b| a.key.cmp(&b.key)),
        Grouping::Session => rows.sort_by(|a, b| {
            let loc = |r: &Row| r.session.as_ref().map(|s| s.location.clone()).unwrap_or_default();
            a.last_ms.cmp(&b.last_ms).then_with(|| loc(a).cmp(&loc(b)))
        }),
        Grouping::Model | Grouping::Project | Grouping::Agent => {
            rows.sort_by(|a, b| b.total.cost.total_cmp(&a.total.cost).then_with(|| a.key.cmp(&b.key)))
        }
    }
}

/// The differences found while counting, gathered by session pair and model.
#[derive(Debug, Default)]
struct Differences {
    copies: BTreeMap<(usize, usize), Copied>,
    priced: BTreeMap<String, Amount>,
    unpriced: BTreeMap<String, Amount>,
    names: HashMap<usize, (String, String)>,
}

impl Differences {
    fn copy(&mut self, usage: &Usage, session: usize, owner: usize, tokens: &Tokens, cost: f64, recounted: bool) {
        self.copies.entry((session, owner)).or_default().add(tokens, cost, recounted);
        for i in [session, owner] {
            self.names.entry(i).or_insert_with(|| {
                let s = &usage.sessions[i];
                (s.id.clone(), s.location.clone())
            });
        }
    }

    fn priced(&mut self, model: &str, known: bool, tokens: &Tokens, cost: f64) {
        let map = if known { &mut self.priced } else { &mut self.unpriced };
        match map.get_mut(model) {
            Some(a) => a.add(tokens, cost),
            None => map.entry(model.to_owned()).or_default().add(tokens, cost),
        }
    }

    fn done(self) -> Vec<Difference> {
        let name = |i: &usize| self.names.get(i).cloned().unwrap_or_default();
        let mut out: Vec<Difference> = self
            .copies
            .iter()
            .map(|((s, o), amount)| Difference::Copies { session: name(s), of: name(o), amount: *amount })
            .collect();
        out.extend(self.priced.into_iter().map(|(model, amount)| Difference::Priced { model, amount }));
        out.extend(self.unpriced.into_iter().map(|(model, amount)| Difference::Unpriced { model, amount }));
        out
    }
}

impl Row {
    /// The row as JSON (see [`Report::to_json`]).
    pub fn to_json(&self, grouping: Grouping) -> Value {
        let mut m = Map::new();
        m.insert(grouping.key_field().into(), json!(self.key));
        m.insert("agents".into(), json!(self.agents));
        m.extend(tokens_json(&self.total.tokens));
        m.insert("totalCost".into(), json!(self.total.cost));
        m.insert("replies".into(), json!(self.total.replies));
        let mut used: Vec<&str> = self.models.iter().map(|(m, _)| m.as_str()).collect();
        used.sort_unstable();
        m.insert("modelsUsed".into(), json!(used));
        let breakdowns: Vec<Value> = self
            .models
            .iter()
            .map(|(name, a)| {
                let mut b = tokens_json(&a.tokens);
                b.insert("modelName".into(), json!(name));
                b.insert("cost".into(), json!(a.cost));
                b.insert("replies".into(), json!(a.replies));
                Value::Object(b)
            })
            .collect();
        m.insert("modelBreakdowns".into(), Value::Array(breakdowns));
        m.insert("tree".into(), self.tree.to_json());
        m.insert("copies".into(), self.copies.to_json());
        if let Some(s) = &self.session {
            m.insert("agent".into(), json!(s.agent));
            m.insert("path".into(), json!(s.location));
            m.insert("projectPath".into(), json!(s.cwd));
            m.insert("parentSession".into(), json!(s.parent_session));
            m.insert("firstActivity".into(), json!(iso(self.first_ms)));
            m.insert("lastActivity".into(), json!(iso(self.last_ms)));
            m.insert("branchSummaries".into(), json!(s.branch_summaries));
            m.insert("compactions".into(), json!(s.compactions));
            m.insert("leaves".into(), json!(s.leaves));
        }
        Value::Object(m)
    }
}

impl Report {
    /// The report as `arbor usage --json` prints it: the rows under their
    /// key (`daily`, `sessions`, …), `totals`, and with `explain` the
    /// differences from a flat count (docs/usage.md, "JSON").
    pub fn to_json(&self, explain: bool) -> Value {
        let rows: Vec<Value> = self.rows.iter().map(|r| r.to_json(self.grouping)).collect();
        let mut totals = tokens_json(&self.totals.tokens);
        totals.insert("totalCost".into(), json!(self.totals.cost));
        totals.insert("replies".into(), json!(self.totals.replies));
        totals.insert("tree".into(), self.tree.to_json());
        totals.insert("copies".into(), self.copies.to_json());
        let mut out = Map::new();
        out.insert(self.grouping.rows_key().into(), Value::Array(rows));
        out.insert("totals".into(), Value::Object(totals));
        if explain {
            out.insert("differences".into(), self.differences.iter().map(Difference::to_json).collect());
        }
        Value::Object(out)
    }
}
