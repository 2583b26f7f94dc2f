//! `arbor tui` end to end: the real binary in a real terminal (tmux), driven by
//! keys; the result is checked on screen and in the session file.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::{arbor, fixtures, json, stdout};

pub(crate) struct Tmux {
    /// A private server socket inside the test's temporary directory.
    pub(crate) socket: std::path::PathBuf,
}

impl Tmux {
    pub(crate) fn run(&self, args: &[&str]) -> String {
        let o = Command::new("tmux").arg("-S").arg(&self.socket).args(args).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "tui"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    pub(crate) fn text(&self, text: &str) {
        self.run(&["send-keys", "-t", "tui", "-l", text]);
    }

    pub(crate) fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "tui"])
    }

    /// Waits until the screen shows `what`; panics with the screen after 15 s.
    pub(crate) fn wait_for(&self, what: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(what) {
                // The frame may still be arriving: take the screen once it has settled.
                std::thread::sleep(Duration::from_millis(150));
                return self.screen();
            }
            assert!(start.elapsed() < Duration::from_secs(15), "waited for {what:?}; the screen is:\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.socket).arg("kill-server").output();
    }
}

pub(crate) fn wait_for_file(p: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(p) {
            if s.ends_with('\n') {
                return s;
            }
        }
        // Long enough for a debug build on a loaded machine: only a hang runs out.
        assert!(start.elapsed() < Duration::from_secs(60), "{} never appeared", p.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// From the opened tree: select row 19 (one above the leaf), press Enter and pick "Summarize".
fn choose_summarize_on_row_19(tmux: &Tmux) {
    tmux.wait_for("Session Tree");
    tmux.keys(&["Up"]);
    tmux.wait_for("(18/29)");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Summarize branch?");
    tmux.keys(&["Down"]);
    tmux.wait_for("› Summarize");
    tmux.keys(&["Enter"]);
}

pub(crate) fn tmux_missing() -> bool {
    if Command::new("tmux").arg("-V").output().is_ok() {
        return false;
    }
    // .ci/run installs tmux; a developer machine without it gets told, loudly.
    eprintln!("SKIPPED tui e2e test: tmux is not installed (apt-get install tmux)");
    true
}

/// `arbor tui` on a copy of the demo session in a 100x30 tmux pane; stdout goes to `out.txt`,
/// the exit code to `rc`.
struct Run {
    tmux: Tmux,
    dir: tempfile::TempDir,
}

impl Run {
    fn start(name: &str) -> Run {
        Run::start_with(name, "s.jsonl", |_| {})
    }

    /// `prepare` runs on the working directory before `arbor` starts.
    fn start_with(name: &str, args: &str, prepare: impl FnOnce(&Path)) -> Run {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(fixtures().join("demo/demo.jsonl"), dir.path().join("s.jsonl")).unwrap();
        prepare(dir.path());
        let cmd = format!(
            "cd {dir} && unset ANTHROPIC_API_KEY OPENAI_API_KEY OPENROUTER_API_KEY && ARBOR_IDS=counter HOME=/nonexistent-home ARBOR_SESSIONS_DIR={dir}/sessions ARBOR_CACHE_DIR={dir}/cache TERM=xterm-256color {bin} tui {args} > out.txt; echo $? > rc; sleep 60",
            dir = dir.path().display(),
            bin = env!("CARGO_BIN_EXE_arbor"),
        );
        let tmux = Tmux { socket: dir.path().join(format!("tmux-{name}.sock")) };
        tmux.run(&["new-session", "-d", "-s", "tui", "-x", "100", "-y", "30", &cmd]);
        Run { tmux, dir }
    }

    fn file(&self) -> std::path::PathBuf {
        self.dir.path().join("s.jsonl")
    }

    /// Waits for the exit; returns (exit code, stdout).
    fn finish(&self) -> (String, String) {
        let rc = wait_for_file(&self.dir.path().join("rc"));
        let out = std::fs::read_to_string(self.dir.path().join("out.txt")).unwrap();
        (rc.trim().to_owned(), out)
    }
}

#[test]
fn filter_search_label_and_navigate_in_a_real_terminal() {
    if tmux_missing() {
        return;
    }
    let run = Run::start("main");
    let tmux = &run.tmux;
    let file = run.file();
    let s = tmux.wait_for("Session Tree");
    assert!(s.contains("› │     │     • assistant: README.md now documents `--top N`."), "{s}");
    assert!(s.contains("(19/29)"), "{s}");

    // Enter on the leaf does nothing.
    tmux.keys(&["Enter"]);
    tmux.wait_for("Already at this point");

    // Shift+L labels the selected entry, and the label is written.
    tmux.text("L");
    tmux.wait_for("Label for: ");
    tmux.text("e2e");
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("Label set: e2e");
    assert!(s.contains("• [e2e] assistant: README.md now documents"), "{s}");
    tmux.keys(&["C-l"]);
    tmux.wait_for("(2/2) [labeled]");
    tmux.keys(&["C-d"]);
    tmux.wait_for("(19/29)");

    // User-only moves to the nearest user message; back to default stays there.
    tmux.keys(&["C-u"]);
    let s = tmux.wait_for("[user]");
    assert!(s.contains("› │  │     • user: Document --top in the README."), "{s}");
    tmux.keys(&["C-d"]);
    tmux.wait_for("(17/29)");

    // Search, then Escape clears it.
    tmux.text("clap");
    let s = tmux.wait_for("Type to search: clap");
    assert!(s.contains("user: Add a --top N flag using clap."), "{s}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("/29)");

    // Navigate to the last row without a summary: the selector stays open on the new leaf.
    tmux.keys(&["End"]);
    tmux.wait_for("(29/29)");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Summarize branch?");
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("Navigated to selected point");
    assert!(s.contains("Session Tree: wordfreq: case, punctuation, --top"), "the header names the session: {s}");
    tmux.keys(&["Escape"]);
    let (rc, out) = run.finish();
    assert_eq!(rc, "0", "screen:\n{}", tmux.screen());
    assert_eq!(out, "", "no editor text for an assistant entry");

    let target = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .find(|l| l.contains("The build fails because"))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_str().unwrap().to_owned())
        .unwrap();
    let f = file.to_str().unwrap();
    let path = json(&arbor(&["path", f, "--json"]));
    let path = path.as_array().unwrap();
    // The leaf move is made durable with an `arbor.leaf` marker right under the target.
    let (last, before) = (&path[path.len() - 1], &path[path.len() - 2]);
    assert_eq!((last["type"].as_str(), last["customType"].as_str()), (Some("custom"), Some("arbor.leaf")));
    assert_eq!(before["id"], target.as_str());
    let tree = stdout(&arbor(&["tree", f]));
    assert!(tree.contains("[e2e] assistant: README.md now documents"), "{tree}");
}

#[test]
fn navigating_to_a_user_message_prints_its_text() {
    if tmux_missing() {
        return;
    }
    let run = Run::start("editor");
    let tmux = &run.tmux;
    tmux.wait_for("Session Tree");
    tmux.text("clap");
    tmux.wait_for("Type to search: clap");
    tmux.keys(&["Home"]);
    let s = tmux.wait_for("(1/");
    assert!(s.contains("› user: Add a --top N flag using clap."), "{s}");
    // Escape in the choice re-opens the tree at the entry, with the search cleared.
    tmux.keys(&["Enter"]);
    tmux.wait_for("Summarize branch?");
    tmux.keys(&["Escape"]);
    let s = tmux.wait_for("/29)");
    assert!(s.contains("› │     └⊟ user: Add a --top N flag using clap."), "{s}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("› No summary");
    tmux.keys(&["Enter"]);
    // #19: the selector stays open after a navigation, on the new leaf (a user message leaves
    // the leaf on its parent); `q` is typed into the search as in pi (#34), and Escape quits;
    // the editor text is printed then.
    let s = tmux.wait_for("Navigated to selected point");
    assert!(s.lines().any(|l| l.starts_with("› ") && l.contains("assistant: Punctuation is now stripped")), "{s}");
    // The help at 100 columns is whole and says what Escape does here.
    assert!(s.contains("Esc: quit") && !s.contains("Esc/q"), "{s}");
    tmux.text("quiet");
    tmux.wait_for("Type to search: quiet");
    tmux.keys(&["Escape"]);
    crate::chat::wait_until("the search to be cleared", || {
        tmux.screen().lines().any(|l| l.trim_end() == "  Type to search:")
    });
    tmux.keys(&["Escape"]);
    let (rc, out) = run.finish();
    assert_eq!(rc, "0", "screen:\n{}", tmux.screen());
    assert_eq!(out, "Add a --top N flag using clap.\n");
    let s = tmux.screen();
    assert!(!s.contains("Session Tree"), "the alternate screen is gone: {s}");
}

/// The text of the selected row, without the cursor and the tree's connectors.
fn selected_text(screen: &str) -> String {
    let line = screen.lines().find(|l| l.starts_with("› ")).unwrap_or_default();
    line.trim_start_matches("› ").trim_start_matches(['│', '├', '└', '─', '⊟', '⊞', ' ']).to_owned()
}

/// #19: after a navigation the selector stays open and a second navigation
/// works from the first one's result, without the file being read again.
#[test]
fn the_selector_stays_open_for_another_navigation() {
    if tmux_missing() {
        return;
    }
    let run = Run::start("again");
    let tmux = &run.tmux;
    tmux.wait_for("Session Tree");
    tmux.keys(&["Home"]);
    tmux.wait_for("(1/29)");
    tmux.keys(&["Enter"]);
    tmux.wait_for("› No summary");
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("Navigated to selected point");
    assert!(s.contains("(1/"), "on the first entry: {s}");
    tmux.keys(&["End"]);
    let s = tmux.wait_for("(29/29)");
    let chosen = selected_text(&s);
    tmux.keys(&["Enter"]);
    tmux.wait_for("› No summary");
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("Navigated to selected point");
    // The chosen entry is on the active path now (listed first under its branch points), and selected.
    assert_eq!(selected_text(&s).trim_start_matches("• "), chosen, "{s}");
    assert!(s.lines().any(|l| l.starts_with("› ") && l.contains("• ")), "{s}");
    tmux.keys(&["Escape"]);
    let (rc, _) = run.finish();
    assert_eq!(rc, "0", "screen:\n{}", tmux.screen());
    // Both moves reached the file: the leaf is now under the chosen entry.
    let f = run.file();
    let path = json(&arbor(&["path", f.to_str().unwrap(), "--json"]));
    let text = path.to_string();
    let words = chosen.split(": ").nth(1).unwrap_or(&chosen).split(' ').take(3).collect::<Vec<_>>().join(" ");
    assert!(text.contains(&words), "{words:?} not on the path {text}");
    let markers = std::fs::read_to_string(&f).unwrap().matches("arbor.leaf").count();
    assert_eq!(markers, 2, "one leaf marker per navigation");
}

#[test]
fn a_failed_summary_reopens_the_tree_and_changes_nothing() {
    if tmux_missing() {
        return;
    }
    let run = Run::start("summary");
    let before = std::fs::read(run.file()).unwrap();
    let tmux = &run.tmux;
    choose_summarize_on_row_19(tmux);
    // No API key in the environment: the error is shown in the re-opened tree, at the entry.
    let s = tmux.wait_for("No model available for summarization");
    assert!(s.contains("(18/29)"), "{s}");
    tmux.keys(&["Escape"]);
    let (rc, out) = run.finish();
    assert_eq!((rc.as_str(), out.as_str()), ("0", ""));
    assert_eq!(std::fs::read(run.file()).unwrap(), before, "the file is unchanged");
}

/// Puts the demo session, and a second one, where `arbor tui` looks for the pane's working directory.
pub(crate) fn sessions_of_the_cwd(cwd: &Path) {
    let cwd = cwd.canonicalize().unwrap();
    let encoded = cwd.to_string_lossy().trim_start_matches('/').replace(['/', '\\', ':'], "-");
    let dir = cwd.join("sessions").join(format!("--{encoded}--"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixtures().join("demo/demo.jsonl"), dir.join("2026-01-01T00-00-00-000Z_x.jsonl")).unwrap();
    let other = concat!(
        r#"{"type":"session","version":3,"id":"other-1","timestamp":"2025-06-01T00:00:00.000Z","cwd":"/elsewhere"}"#,
        "\n",
        r#"{"type":"message","id":"o1","parentId":null,"timestamp":"2025-06-01T00:00:01.000Z","message":{"role":"user","content":"an older question about tokio","timestamp":1748736001000}}"#,
        "\n"
    );
    std::fs::write(dir.join("2025-06-01T00-00-00-000Z_other-1.jsonl"), other).unwrap();
}

#[test]
fn without_a_file_the_picker_opens_the_chosen_session() {
    if tmux_missing() {
        return;
    }
    let run = Run::start_with("recent", "--filter user-only", sessions_of_the_cwd);
    let s = run.tmux.wait_for("Resume a session");
    // Newest first: the demo (by its name), then the older one.
    let demo = s.find("wordfreq: case, punctuation, --top").unwrap_or(usize::MAX);
    let older = s.find("an older question about tokio").unwrap_or(0);
    assert!(demo < older, "{s}");
    assert!(s.contains("(1/2)") && s.contains("2 sessions in this directory"), "{s}");
    run.tmux.keys(&["Enter"]);
    run.tmux.wait_for("Session Tree");
    run.tmux.wait_for("(4/6) [user]");
    run.tmux.keys(&["Escape"]);
    assert_eq!(run.finish(), ("0".to_owned(), String::new()));
}

#[test]
fn picker_search_jumps_to_the_entry_and_navigates_there() {
    if tmux_missing() {
        return;
    }
    let run = Run::start_with("picker", "", sessions_of_the_cwd);
    let tmux = &run.tmux;
    tmux.wait_for("Resume a session");
    // Type a query: the session whose text matches, then its entries that do.
    tmux.text("strip punctuation");
    let s = tmux.wait_for("Strip punctuation without adding dependencies");
    assert!(!s.contains("an older question"), "the other session does not match: {s}");
    // Down to the user message's hit and open it: the tree opens there.
    let mut screen = s;
    for _ in 0..10 {
        if screen.lines().any(|l| l.starts_with("› ") && l.contains("Strip punctuation without adding")) {
            break;
        }
        tmux.keys(&["Down"]);
        std::thread::sleep(std::time::Duration::from_millis(150));
        screen = tmux.screen();
    }
    assert!(screen.lines().any(|l| l.starts_with("› ") && l.contains("Strip punctuation without adding")), "{screen}");
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("Session Tree");
    assert!(s.lines().any(|l| l.starts_with("› ") && l.contains("user: Strip punctuation without adding")), "{s}");
    // Navigate there: a user message puts the leaf on its parent and prints its text.
    tmux.keys(&["Enter"]);
    tmux.wait_for("› No summary");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Navigated to selected point");
    tmux.keys(&["Escape"]);
    let (rc, out) = run.finish();
    assert_eq!(rc, "0", "screen:\n{}", tmux.screen());
    assert!(out.starts_with("Strip punctuation without adding dependencies"), "{out}");
}

/// Two sessions in the pane's working directory: the newer one matches
/// "frobnicator" only on pi's rule (its first message holds the letters in
/// order); the older one, named "Frob work", holds the word in two entries,
/// one off its active path.
fn frobnicator_sessions(cwd: &Path) {
    let cwd = cwd.canonicalize().unwrap();
    let encoded = cwd.to_string_lossy().trim_start_matches('/').replace(['/', '\\', ':'], "-");
    let dir = cwd.join("sessions").join(format!("--{encoded}--"));
    std::fs::create_dir_all(&dir).unwrap();
    let c = cwd.display();
    let line = |id: &str, parent: Option<&str>, role: &str, text: &str, ms: u64| {
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
        let time = arbor_log::time::format_iso_ms(ms as i64);
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{time}","message":{{"role":"{role}","content":"{text}","timestamp":{ms}}}}}"#
        ) + "\n"
    };
    let t = 1_767_225_600_000u64;
    let mut holder = format!(
        r#"{{"type":"session","version":3,"id":"holder-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"{c}"}}"#
    ) + "\n";
    holder += &line("u1", None, "user", "set up the machine", t);
    holder += &line("a1", Some("u1"), "assistant", "the frobnicator one is ready", t + 1000);
    holder += &line("u3", Some("a1"), "user", "frobnicator off the path", t + 2000);
    holder += &line("u2", Some("a1"), "user", "something else", t + 3000);
    holder += r#"{"type":"session_info","id":"n1","parentId":"u2","timestamp":"2026-01-01T00:00:04.000Z","name":"Frob work"}"#;
    holder += "\n";
    holder += &line("a2", Some("n1"), "assistant", "done", t + 5000);
    std::fs::write(dir.join("2026-01-01T00-00-00-000Z_holder-1.jsonl"), holder).unwrap();
    let mut decoy = format!(
        r#"{{"type":"session","version":3,"id":"decoy-1","timestamp":"2026-02-01T00:00:00.000Z","cwd":"{c}"}}"#
    ) + "\n";
    decoy += &line("d1", None, "user", "from robin i catalog to rome", t + 86_400_000 * 31);
    std::fs::write(dir.join("2026-02-01T00-00-00-000Z_decoy-1.jsonl"), decoy).unwrap();
}

/// The row of the screen that holds `what`.
fn row_of(screen: &str, what: &str) -> usize {
    screen.lines().position(|l| l.contains(what)).unwrap_or_else(|| panic!("no {what:?} on:\n{screen}"))
}

#[test]
fn picker_puts_the_sessions_holding_the_word_first_with_their_entries() {
    if tmux_missing() {
        return;
    }
    let run = Run::start_with("frob", "", frobnicator_sessions);
    let tmux = &run.tmux;
    let s = tmux.wait_for("Resume a session");
    // Newest first: the decoy, then the session named "Frob work".
    assert!(row_of(&s, "from robin i catalog") < row_of(&s, "Frob work"), "{s}");
    // An empty catalog: the first search reads the files; its hits come as it finds them.
    tmux.text("frobnicator");
    let s = tmux.wait_for("frobnicator one is ready");
    let s = if s.contains("from robin i catalog") { s } else { tmux.wait_for("from robin i catalog") };
    let session = s.lines().position(|l| l.contains("Frob work") && !l.contains(" in Frob work")).unwrap();
    let off = row_of(&s, "frobnicator off the path");
    let on = row_of(&s, "frobnicator one is ready");
    let decoy = row_of(&s, "from robin i catalog");
    assert!(
        session < off && off < on && on < decoy,
        "the session holding it, its entries (last first), then the rest:\n{s}"
    );
    let lines: Vec<&str> = s.lines().collect();
    assert!(lines[on].contains("• the frobnicator one") && lines[on].contains("in Frob work"), "{}", lines[on]);
    assert!(!lines[off].contains('•') && lines[off].contains("in Frob work"), "{}", lines[off]);
    // Ctrl+U clears the query: every session again, newest first.
    tmux.keys(&["C-u"]);
    let start = Instant::now();
    let s = loop {
        let s = tmux.screen();
        if !s.contains("frobnicator one") && s.contains("> █") {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(15), "{s}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(row_of(&s, "from robin i catalog") < row_of(&s, "Frob work"), "{s}");
    assert!(s.contains("(1/2)"), "{s}");
    tmux.keys(&["Escape"]);
    assert_eq!(run.finish(), ("0".to_owned(), String::new()));
}

#[test]
fn tui_at_opens_the_selector_on_that_entry() {
    if tmux_missing() {
        return;
    }
    let run = Run::start_with("at", "s.jsonl --at 0866b2b1", |_| {});
    let s = run.tmux.wait_for("Session Tree");
    assert!(s.lines().any(|l| l.starts_with("› ") && l.contains("Also strip punctuation")), "{s}");
    run.tmux.keys(&["Escape"]);
    assert_eq!(run.finish(), ("0".to_owned(), String::new()));
    let o = arbor(&["tui", "demo/demo.jsonl", "--at", "nothere"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(crate::stderr(&o).contains("Entry nothere not found"), "{}", crate::stderr(&o));
}

#[test]
fn refuses_without_a_session_and_on_an_empty_tree() {
    let o = arbor(&["tui"]);
    assert!(!o.status.success());
    assert!(crate::stderr(&o).starts_with("arbor: no session for "), "{}", crate::stderr(&o));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("empty.jsonl");
    let header = std::fs::read_to_string(fixtures().join("demo/demo.jsonl")).unwrap();
    std::fs::write(&file, format!("{}\n", header.lines().next().unwrap())).unwrap();
    let o = arbor(&["tui", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", crate::stderr(&o));
    assert_eq!(stdout(&o), "No entries in session\n");
}

#[test]
fn fork_picks_a_user_message_and_writes_the_branched_session() {
    if tmux_missing() {
        return;
    }
    let run = Run::start_with("fork", "--fork s.jsonl", |_| {});
    let before = std::fs::read(run.file()).unwrap();
    let tmux = &run.tmux;
    let s = tmux.wait_for("Branch from Message");
    assert!(s.contains("Select a message to create a new branch from that point"), "{s}");
    // The last of the six user messages starts selected.
    assert!(s.contains("› Document --top in the README."), "{s}");
    assert!(s.contains("Message 6 of 6"), "{s}");
    tmux.keys(&["Up"]);
    tmux.wait_for("› Add a --top N flag, but parse the arguments by hand");
    tmux.keys(&["Up"]);
    tmux.wait_for("› Add a --top N flag using clap.");
    tmux.keys(&["Enter"]);
    let (rc, out) = run.finish();
    assert_eq!(rc, "0", "screen:\n{}", tmux.screen());
    let (first, rest) = out.split_once('\n').unwrap();
    assert_eq!(rest, "editor text:\nAdd a --top N flag using clap.\n", "{out}");
    let new_file = run.dir.path().join(first);
    assert!(new_file.exists(), "{out}");
    assert_ne!(new_file.canonicalize().unwrap(), run.file().canonicalize().unwrap());
    assert_eq!(std::fs::read(run.file()).unwrap(), before, "the original is unchanged");

    // The new session ends at the parent of the chosen message.
    let parent = std::fs::read_to_string(run.file())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "message" && e.to_string().contains("Add a --top N flag using clap."))
        .map(|e| e["parentId"].as_str().unwrap().to_owned())
        .unwrap();
    // (The parent here is a label entry: like pi's createBranchedSession, the copy drops label
    // entries from the path and re-creates the labels at its end.)
    let ids = |args: &[&str]| -> Vec<String> {
        json(&arbor(args))
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] != "label")
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let expected = ids(&["path", run.file().to_str().unwrap(), &parent, "--json"]);
    let got = ids(&["path", new_file.to_str().unwrap(), "--json"]);
    assert!(expected.len() > 5);
    assert_eq!(got, expected);
    let path = json(&arbor(&["path", new_file.to_str().unwrap(), "--json"]));
    assert!(!path.to_string().contains("Add a --top N flag using clap."));
    let s = tmux.screen();
    assert!(!s.contains("Branch from Message"), "the alternate screen is gone: {s}");
}

#[test]
fn fork_without_user_messages_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("empty.jsonl");
    let header = std::fs::read_to_string(fixtures().join("demo/demo.jsonl")).unwrap();
    std::fs::write(&file, format!("{}\n", header.lines().next().unwrap())).unwrap();
    let o = arbor(&["tui", "--fork", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(crate::stderr(&o), "No messages to fork from\n");
    assert_eq!(stdout(&o), "");
}

#[test]
fn escape_during_a_summary_aborts_it_and_writes_nothing() {
    if tmux_missing() {
        return;
    }
    // A model server that takes requests and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    std::thread::spawn(move || {
        let mut held = vec![];
        for stream in listener.incoming().take(4).flatten() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(stream);
        }
        std::thread::sleep(Duration::from_secs(60));
    });
    let args = format!("s.jsonl --model openai/test-model --base-url {url}");
    let run = Run::start_with("escape", &args, |_| {});
    let before = std::fs::read(run.file()).unwrap();
    let tmux = &run.tmux;
    choose_summarize_on_row_19(tmux);
    tmux.wait_for("Summarizing branch");
    let start = Instant::now();
    while seen.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(start.elapsed() < Duration::from_secs(15), "the summary request never arrived");
        std::thread::sleep(Duration::from_millis(25));
    }
    tmux.keys(&["Escape"]);
    let s = tmux.wait_for("Branch summarization cancelled");
    assert!(s.contains("(18/29)"), "back at the entry: {s}");
    tmux.keys(&["Escape"]);
    let (rc, out) = run.finish();
    assert_eq!((rc.as_str(), out.as_str()), ("0", ""));
    assert_eq!(std::fs::read(run.file()).unwrap(), before, "an aborted summary writes nothing");
}

/// #19: at 60×12 the header still names the session and the footer is whole;
/// an error wraps under it instead of being cut at the edge.
#[test]
fn a_small_terminal_keeps_the_footer_and_wraps_the_error() {
    if tmux_missing() {
        return;
    }
    let run = Run::start("small");
    let tmux = &run.tmux;
    tmux.wait_for("Session Tree");
    tmux.run(&["resize-window", "-t", "tui", "-x", "60", "-y", "12"]);
    let s = tmux.wait_for("(19/29)");
    assert!(s.lines().count() <= 12, "{s}");
    assert!(s.contains("Session Tree: wordfreq"), "the header names the session: {s}");
    assert!(s.lines().any(|l| l.trim_start() == "(19/29)"), "the footer is whole: {s}");
    choose_summarize_on_row_19(tmux);
    let s = tmux.wait_for("No model available");
    assert!(s.lines().all(|l| l.chars().count() <= 60), "{s}");
    // The whole error is on screen, over several lines.
    let status: String = s.lines().skip_while(|l| !l.contains("Error:")).map(str::trim).collect::<Vec<_>>().join(" ");
    assert!(status.contains("No model available for summarization"), "{s}");
    assert!(s.lines().filter(|l| !l.trim().is_empty()).count() >= 4, "{s}");
    assert!(status.split_whitespace().count() > 6, "the error goes on past one line: {s}");
    tmux.keys(&["Escape"]);
    let (rc, _) = run.finish();
    assert_eq!(rc, "0", "screen:\n{}", tmux.screen());
}
