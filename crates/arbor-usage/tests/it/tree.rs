//! The tree's view on a hand-made tree whose numbers are known.
//!
//! ```text
//! u1 a1($1) ─┬─ u2 a2($2) u3 a3($4)            branch A: left without a summary
//!            ├─ u4 a4($8)                      branch B: left with a summary (bs, written next)
//!            └─ bs u5 a5($16) u6 a6($32) c u7 a7   the active path; c keeps from u6 on
//! ```
//!
//! a7 recorded no cost: 1,000,000 input tokens of claude-haiku-4-5 at
//! Arbor's $1 per million. So: compacted a1 + a5 = $17, active a6 + a7 =
//! $33, summarized a4 = $8, abandoned a2 + a3 = $6; $64 in all.

use arbor_usage::{branches, read_session, report, Agent, Grouping, Place, PriceTable, ReportOptions, Usage};
use serde_json::json;

use crate::{open, reply, user, write_session};

const M: &str = "claude-sonnet-4-5";

fn entries() -> Vec<(&'static str, Option<&'static str>, serde_json::Value)> {
    vec![
        ("u1", None, user()),
        ("a1", Some("u1"), reply(M, 10, Some(1.0))),
        ("u2", Some("a1"), user()),
        ("a2", Some("u2"), reply(M, 20, Some(2.0))),
        ("u3", Some("a2"), user()),
        ("a3", Some("u3"), reply(M, 40, Some(4.0))),
        ("u4", Some("a1"), user()),
        ("a4", Some("u4"), reply(M, 80, Some(8.0))),
        ("bs", Some("a1"), json!({"type": "branch_summary", "fromId": "a1", "summary": "tried B"})),
        ("u5", Some("bs"), user()),
        ("a5", Some("u5"), reply(M, 160, Some(16.0))),
        ("u6", Some("a5"), user()),
        ("a6", Some("u6"), reply(M, 320, Some(32.0))),
        (
            "c",
            Some("a6"),
            json!({"type": "compaction", "summary": "so far", "firstKeptEntryId": "u6", "tokensBefore": 500}),
        ),
        ("u7", Some("c"), user()),
        ("a7", Some("u7"), reply("claude-haiku-4-5", 1_000_000, None)),
    ]
}

#[test]
fn every_reply_has_its_place_and_the_places_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_session(dir.path(), "s1", None, &entries());
    let s = open(&file);
    let u = read_session(&s, Agent::Pi, file.to_string_lossy()).unwrap();
    let place = |id: &str| u.replies.iter().find(|r| r.entry == id).unwrap().place;
    for (id, want) in [
        ("a1", Place::Compacted),
        ("a5", Place::Compacted),
        ("a6", Place::Active),
        ("a7", Place::Active),
        ("a4", Place::Summarized),
        ("a2", Place::Abandoned),
        ("a3", Place::Abandoned),
    ] {
        assert_eq!(place(id), want, "{id}");
    }
    assert_eq!((u.branch_summaries, u.compactions, u.leaves), (1, 1, 3));
    let r = report(&Usage::new(vec![u]), &ReportOptions::new(Grouping::Session));
    let t = &r.rows[0].tree;
    assert_eq!([t.compacted.cost, t.active.cost, t.summarized.cost, t.abandoned.cost], [17.0, 33.0, 8.0, 6.0]);
    assert_eq!(r.totals.cost, 64.0);
    assert_eq!(r.totals.replies, 7);
}

#[test]
fn each_leafs_branch_owns_what_it_adds_and_they_add_up_to_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(&write_session(dir.path(), "s1", None, &entries()));
    let list = branches(&s, &PriceTable::builtin()).unwrap();
    let got: Vec<(&str, bool, Option<&str>, f64, f64)> =
        list.iter().map(|b| (b.leaf.as_str(), b.active, b.parts_at.as_deref(), b.own.cost, b.path.cost)).collect();
    assert_eq!(
        got,
        [("a7", true, None, 50.0, 50.0), ("a3", false, Some("a1"), 6.0, 7.0), ("a4", false, Some("a1"), 8.0, 9.0)]
    );
    assert_eq!(list.iter().map(|b| b.own.cost).sum::<f64>(), 64.0);
}

#[test]
fn a_fork_counts_only_what_it_adds() {
    let dir = tempfile::tempdir().unwrap();
    let all = entries();
    let first = write_session(dir.path(), "s1", None, &all);
    // pi's fork at a5: the path u1 a1 bs u5 a5, line for line (same ids and
    // times), then a reply of its own.
    let mut copied: Vec<_> = all
        .iter()
        .enumerate()
        .filter(|(_, (id, _, _))| ["u1", "a1", "bs", "u5", "a5"].contains(id))
        .map(|(k, (id, parent, body))| {
            let mut body = body.clone();
            body["timestamp"] = json!(arbor_log::format_iso_ms(crate::T0 + 60_000 * k as i64));
            (*id, *parent, body)
        })
        .collect();
    copied.push(("u9", Some("a5"), user()));
    copied.push(("a9", Some("u9"), reply(M, 5, Some(128.0))));
    let fork = write_session(&dir.path().join("f"), "s2", Some(first.to_str().unwrap()), &copied);
    let usage = Usage::new(vec![
        read_session(&open(&fork), Agent::Pi, fork.to_string_lossy()).unwrap(),
        read_session(&open(&first), Agent::Pi, first.to_string_lossy()).unwrap(),
    ]);
    let r = report(&usage, &ReportOptions::new(Grouping::Session));
    let row = |id: &str| r.rows.iter().find(|row| row.key == id).unwrap();
    assert_eq!((row("s2").copies.all.replies, row("s2").copies.all.cost), (2, 17.0), "a1 and a5 belong to s1");
    assert_eq!(row("s2").total.cost, 128.0);
    assert_eq!(row("s1").total.cost, 64.0, "the first session keeps its replies, whatever the order read");
    assert_eq!(r.totals.cost, 64.0 + 128.0);
    // The fork names its parent's file and the copies predate it: ccusage skips them too.
    assert_eq!(row("s2").copies.recounted.replies, 0);
}
