//! Other agents read in place: an OpenCode storage folder (written in
//! OpenCode's format) gives its sessions' replies, marked with their agent,
//! and nothing is written beside it.

use arbor_test_support::opencode::write_storage;
use arbor_test_support::DirSnapshot;
use arbor_usage::sources::opencode_sessions;
use arbor_usage::{report, scan, Agent, Cache, Grouping, ReportOptions, ScanOptions, Source, Usage};

#[test]
fn opencode_sessions_are_read_in_place_with_their_costs() {
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().join("storage");
    write_storage(&storage);
    let before = DirSnapshot::of(dir.path());
    let sources: Vec<Source> =
        opencode_sessions(&storage).unwrap().into_iter().map(|path| Source { agent: Agent::OpenCode, path }).collect();
    assert_eq!(sources.len(), 2);
    let s = scan(&sources, &ScanOptions::default(), &mut Cache::in_memory());
    assert!(s.unreadable.is_empty(), "{:?}", s.unreadable);
    assert_eq!(DirSnapshot::of(dir.path()), before, "reading wrote nothing");
    let replies: Vec<usize> = s.sessions.iter().map(|x| x.replies.len()).collect();
    assert_eq!(replies, [3, 1], "the parent's three replies, the child's one");
    assert!(s.sessions[1].parent_session.is_some(), "the child names its parent");
    let r = report(&Usage::new(s.sessions), &ReportOptions::new(Grouping::Agent));
    assert_eq!(r.rows.len(), 1);
    assert_eq!(r.rows[0].key, "opencode");
    // Recorded: 0.0123 + 0.004 + 0.002; msg_03 recorded 0 (OpenCode's "unknown"):
    // priced at Arbor's claude-sonnet-4-5 rates, 500 in, 100 out, 5200 cache read.
    let priced = (500.0 * 3.0 + 100.0 * 15.0 + 5200.0 * 0.3) / 1e6;
    assert!((r.totals.cost - (0.0123 + 0.004 + 0.002 + priced)).abs() < 1e-12, "{}", r.totals.cost);
    // Output counts reasoning: msg_02's 300 + 50.
    assert_eq!(r.totals.tokens.output, 350 + 100 + 700 + 160);
}
