//! #19 item 6: deep trees stay readable. A generated 2,000-entry session
//! whose active path passes hundreds of branch points (pi's layout would put
//! its leaf hundreds of levels deep), shown in a 120-column tmux pane by
//! `arbor tree` and by the selector; the screens (`tmux capture-pane`) are
//! kept as snapshots.

use std::fmt::Write as _;
use std::path::Path;

use arbor_test_support::Rng;

use crate::tui::{tmux_missing, wait_for_file, Tmux};
use crate::{arbor, stderr, stdout};

const WORDS: [&str; 12] =
    ["parser", "writer", "index", "leaf", "label", "branch", "tests", "docs", "cache", "layout", "search", "fold"];

/// Writes a session of `turns` turns (user, assistant with a tool call,
/// tool result, assistant: four entries each): usually the next turn follows
/// the last, one in four starts again from an entry a few turns back (a new
/// branch the conversation stays on), one in twelve goes back to an earlier
/// abandoned branch and continues it. Deterministic for a seed.
fn write_branchy_session(path: &Path, turns: usize, seed: u64) {
    let mut rng = Rng(seed);
    let mut out = String::new();
    out.push_str(r#"{"type":"session","version":3,"id":"deep-tree-2000","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/home/dev/proj"}"#);
    out.push('\n');
    // The last entry of every turn so far, and the turn's first entry's parent.
    let mut ends: Vec<String> = vec![];
    let mut next_id = 0;
    let mut tick = 0u64;
    let mut entry = |out: &mut String, parent: Option<&str>, message: String| -> String {
        next_id += 1;
        tick += 1;
        let id = format!("{next_id:08x}");
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
        let ts = format!("2026-01-01T{:02}:{:02}:{:02}.000Z", tick / 3600 % 24, tick / 60 % 60, tick % 60);
        writeln!(out, r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{ts}","message":{message}}}"#)
            .unwrap();
        id
    };
    let mut parent: Option<String> = None;
    for turn in 0..turns {
        if turn > 0 {
            let roll = rng.below(12);
            parent = if roll < 3 && ends.len() > 4 {
                // A new branch from a few turns back; the conversation goes on there.
                Some(ends[ends.len() - rng.between(2, 4)].clone())
            } else if roll == 3 && ends.len() > 20 {
                Some(ends[rng.below(ends.len() - 10)].clone())
            } else {
                ends.last().cloned()
            };
        }
        let (a, b) = (WORDS[rng.below(WORDS.len())], WORDS[rng.below(WORDS.len())]);
        let user =
            format!(r#"{{"role":"user","content":"turn {turn}: look at the {a} and the {b}","timestamp":{turn}}}"#);
        let u = entry(&mut out, parent.as_deref(), user);
        let call = format!(
            r#"{{"role":"assistant","content":[{{"type":"text","text":"Reading src/{a}.rs first."}},{{"type":"toolCall","id":"call{turn}","name":"read","arguments":{{"path":"src/{a}.rs"}}}}],"stopReason":"toolUse","timestamp":{turn}}}"#
        );
        let c = entry(&mut out, Some(&u), call);
        let result = format!(
            r#"{{"role":"toolResult","toolCallId":"call{turn}","toolName":"read","content":[{{"type":"text","text":"fn {a}() {{}}"}}],"isError":false,"timestamp":{turn}}}"#
        );
        let r = entry(&mut out, Some(&c), result);
        let reply = format!(
            r#"{{"role":"assistant","content":[{{"type":"text","text":"turn {turn}: the {a} now calls the {b}"}}],"stopReason":"stop","timestamp":{turn}}}"#
        );
        ends.push(entry(&mut out, Some(&r), reply));
    }
    std::fs::write(path, out).unwrap();
}

/// `cmd` in a 120×`rows` tmux pane, in `dir` (the pane keeps 5,000 lines of history).
fn pane(dir: &Path, name: &str, rows: u16, cmd: &str) -> Tmux {
    let tmux = Tmux { socket: dir.join(format!("tmux-{name}.sock")) };
    let full = format!(
        "cd {dir} && ARBOR_CACHE_DIR={dir}/cache HOME=/nonexistent-home TERM=xterm-256color {cmd}; echo $? > rc; sleep 60",
        dir = dir.display()
    );
    // The server starts with the session; the history limit applies to windows made after it is set.
    tmux.run(&["new-session", "-d", "-s", "setup", "-x", "120", "-y", &rows.to_string()]);
    tmux.run(&["set-option", "-g", "history-limit", "5000"]);
    tmux.run(&["new-session", "-d", "-s", "tui", "-x", "120", "-y", &rows.to_string(), &full]);
    tmux
}

fn session(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("s.jsonl");
    write_branchy_session(&file, 500, 0x5eed_2000);
    file
}

/// The column where a row's text starts (after the id, the gutters, connectors and the level number).
fn text_column(row: &str) -> usize {
    let body: Vec<char> = row.chars().collect();
    let after_id = body.iter().position(|c| *c == ' ').unwrap_or(0);
    body.iter()
        .enumerate()
        .skip(after_id)
        .find(|(_, c)| !matches!(c, ' ' | '│' | '├' | '└' | '─' | '⋯' | '0'..='9'))
        .map_or(body.len(), |(i, _)| i)
}

#[test]
fn arbor_tree_on_a_deep_2000_entry_session_in_120_columns() {
    if tmux_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    session(dir.path());
    let tmux = pane(dir.path(), "tree", 40, &format!("{} tree s.jsonl", env!("CARGO_BIN_EXE_arbor")));
    assert_eq!(wait_for_file(&dir.path().join("rc")).trim(), "0");
    // The command is done; the pane may still be taking in its last lines (on a loaded machine).
    let is_row = |l: &&str| l.len() > 10 && l.as_bytes()[8] == b' ';
    let start = std::time::Instant::now();
    let all = loop {
        let all = tmux.run(&["capture-pane", "-p", "-t", "tui", "-S", "-", "-E", "-"]);
        if all.lines().filter(is_row).count() >= 2000 || start.elapsed() > std::time::Duration::from_secs(10) {
            break all;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let rows: Vec<&str> = all.lines().filter(is_row).collect();
    assert_eq!(rows.len(), 2000, "{all}");
    // Readable at every row: nothing wider than the terminal, every text starting in its left half.
    for r in &rows {
        assert!(r.chars().count() <= 120, "{r}");
        assert!(text_column(r) <= 64, "text starts at column {}: {r}", text_column(r));
    }
    let leaf = rows.iter().position(|r| r.ends_with("◀ leaf")).expect("the leaf is marked");
    let deepest = rows.iter().enumerate().max_by_key(|(_, r)| text_column(r)).map(|(i, _)| i).unwrap();
    let window = |from: usize| rows[from..(from + 24).min(rows.len())].join("\n");
    insta::assert_snapshot!(format!(
        "=== the first rows\n{}\n=== the leaf (row {leaf})\n{}\n=== the deepest row (row {deepest})\n{}\n=== the last rows\n{}",
        window(0),
        window(leaf.saturating_sub(12)),
        window(deepest.saturating_sub(12)),
        window(rows.len() - 24),
    ));
}

#[test]
fn the_selector_on_a_deep_2000_entry_session_in_120_columns() {
    if tmux_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    session(dir.path());
    let tmux = pane(dir.path(), "tui", 40, &format!("{} tui s.jsonl", env!("CARGO_BIN_EXE_arbor")));
    // Each screen once every entry has been read (the counts are final then).
    let settled = |want: &str| {
        let start = std::time::Instant::now();
        loop {
            let s = tmux.wait_for(want);
            if !s.contains("reading entries") {
                return s;
            }
            assert!(start.elapsed() < std::time::Duration::from_secs(15), "{s}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    let at_leaf = settled("Session Tree");
    tmux.keys(&["Home"]);
    let top = settled("(1/");
    tmux.keys(&["End"]);
    tmux.keys(&["PageUp"]);
    let lower = tmux.wait_for("› ");
    // Only user messages: the whole conversation's shape on one screen.
    tmux.keys(&["C-u"]);
    let users = tmux.wait_for("[user]");
    tmux.keys(&["Escape"]);
    assert_eq!(wait_for_file(&dir.path().join("rc")).trim(), "0");
    for s in [&at_leaf, &top, &lower, &users] {
        for line in s.lines().filter(|l| l.contains(": ")) {
            let prefix: String = line
                .chars()
                .take_while(|c| matches!(c, ' ' | '│' | '├' | '└' | '─' | '›' | '⊟' | '⊞' | '⋯' | '0'..='9'))
                .collect();
            assert!(prefix.chars().count() <= 64, "{line}");
        }
    }
    insta::assert_snapshot!(format!(
        "=== opened (on the leaf)\n{at_leaf}\n=== Home\n{top}\n=== End, PageUp\n{lower}\n=== Ctrl+U (user messages)\n{users}"
    ));
}

/// `arbor tree --filter MODE --depth N --width N` on the demo session.
#[test]
fn tree_filter_depth_and_width() {
    let demo = "demo/demo.jsonl";
    let run = |extra: &[&str]| {
        let mut args = vec!["tree", demo];
        args.extend_from_slice(extra);
        let o = arbor(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let narrow = run(&["--width", "48"]);
    assert!(narrow.lines().all(|l| l.chars().count() <= 48), "{narrow}");
    assert!(narrow.lines().any(|l| l.ends_with("◀ leaf")), "a cut line keeps the leaf's mark: {narrow}");
    insta::assert_snapshot!(format!(
        "=== --filter user-only\n{}=== --filter no-tools --depth 1 --width 80\n{}=== --width 48\n{narrow}",
        run(&["--filter", "user-only"]),
        run(&["--filter", "no-tools", "--depth", "1", "--width", "80"]),
    ));
    let o = arbor(&["tree", demo, "--json", "--filter", "all"]);
    assert!(!o.status.success() && stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}
