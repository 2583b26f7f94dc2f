//! Terminal escapes from file contents never reach the terminal (item 6 of
//! issue #20): every command is run on a pseudo-terminal (util-linux
//! `script`) and the bytes written to it are checked: no ESC, BEL, C1
//! control or bidirectional override, no CR but the terminal's own before a
//! newline; what was there is shown as a visible escape. `--json` output
//! stays exactly the JSON it is without a terminal.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::model_server::ModelServer;

/// ESC sequences (clear screen, colour, a title), OSC 52 (write the
/// clipboard), BEL, a bare CR, DEL, a C1 CSI and a right-to-left override.
const NASTY: &str = r"clear\u001b[2J\u001b[H red\u001b[31m title\u001b]0;pwned\u0007 clip\u001b]52;c;aGk=\u0007 over\rwrite del\u007f csi\u009b31m rlo\u202egnp.exe";

/// A session with nasty text in a message, a label, the name, the cwd and an id.
fn nasty_session() -> String {
    let n = NASTY;
    [
        format!(r#"{{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w/{n}"}}"#),
        format!(r#"{{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"ask {n}","timestamp":1}}}}"#),
        format!(r#"{{"type":"message","id":"b\u001b[31m2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"answer {n}"}}],"provider":"p","model":"m","usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2}},"stopReason":"stop","timestamp":2}}}}"#),
        format!(r#"{{"type":"label","id":"l1","parentId":"b\u001b[31m2","timestamp":"2026-01-01T00:00:03.000Z","targetId":"a1","label":"lbl {n}"}}"#),
        format!(r#"{{"type":"session_info","id":"n1","parentId":"l1","timestamp":"2026-01-01T00:00:04.000Z","name":"name {n}"}}"#),
    ]
    .join("\n")
        + "\n"
}

/// Runs `command` (a shell command line) on a pseudo-terminal in `dir` and
/// returns the bytes written to it; `None` where `script` is missing.
fn on_terminal(dir: &Path, command: &str) -> Option<Vec<u8>> {
    let o = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .current_dir(dir)
        .env("HOME", "/nonexistent-home")
        .env("ARBOR_CACHE_DIR", crate::cache_dir())
        .env_remove("ARBOR_SESSIONS_DIR")
        .env_remove("ARBOR_HOOKS")
        .output()
        .ok()?;
    Some(o.stdout)
}

/// The first byte sequence a terminal would obey, if any.
fn obeyed(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    for (i, c) in text.char_indices() {
        let bad = match c {
            '\x1b' | '\x07' | '\x7f' | '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
            // The terminal writes CR LF for a newline; any other CR moves the cursor.
            '\r' => !text[i..].starts_with("\r\n"),
            '\0'..='\x1f' => c != '\n' && c != '\t',
            _ => false,
        };
        if bad {
            let from = text[..i].char_indices().rev().nth(20).map_or(0, |(k, _)| k);
            return Some(format!("U+{:04X} after {:?}", u32::from(c), &text[from..i]));
        }
    }
    None
}

fn arbor() -> &'static str {
    env!("CARGO_BIN_EXE_arbor")
}

#[test]
fn human_output_on_a_terminal_shows_escapes_and_obeys_none() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to give the commands a pseudo-terminal");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let sessions = d.path().join("sessions/--w--");
    fs::create_dir_all(&sessions).unwrap();
    let file = sessions.join("2026-01-01T00-00-00-000Z_s1.jsonl");
    fs::write(&file, nasty_session()).unwrap();
    let f = file.to_str().unwrap();
    let root = d.path().join("sessions");
    let r = root.to_str().unwrap();
    let hooks = d.path().join("hooks.json");
    let hook = r#"cat > /dev/null; printf 'hook says \033]52;c;aGk=\007 and \033[2J\r' >&2; exit 1"#;
    fs::write(&hooks, serde_json::json!({"hooks": [{"event": "session_before_tree", "command": hook}]}).to_string())
        .unwrap();
    let copy = d.path().join("copy.jsonl");
    fs::copy(&file, &copy).unwrap();
    let commands = [
        format!("{} tree {f}", arbor()),
        format!("{} dump {f}", arbor()),
        format!("{} path {f}", arbor()),
        format!("{} context {f}", arbor()),
        format!("{} context {f} --llm", arbor()),
        format!("{} check {f}", arbor()),
        format!("{} ls --all --sessions-dir {r}", arbor()),
        format!("{} search answer --all --sessions-dir {r}", arbor()),
        format!("{} label {} a1 'new \x1b]52;c;aGk=\x07'", arbor(), copy.display()),
        format!("{} navigate {} a1 --hooks {}", arbor(), copy.display(), hooks.display()),
    ];
    for command in &commands {
        let Some(bytes) = on_terminal(d.path(), command) else { panic!("script did not run") };
        let text = String::from_utf8_lossy(&bytes);
        // `check` finds nothing wrong with the file: it prints no content to show.
        if !command.contains(" check ") {
            let shown = text.contains("\\x1b") || text.contains("\\u{1b}");
            assert!(shown, "{command}: the escapes are shown: {text}");
        }
        if let Some(what) = obeyed(&bytes) {
            panic!("{command}: the terminal got {what}");
        }
    }
    // JSON is written exactly, terminal or not.
    for args in [["tree", f, "--json"], ["dump", f, "--json"], ["path", f, "--json"]] {
        let plain = crate::reliability::arbor_in(d.path(), &args).stdout;
        let command = format!("{} {} {} {}", arbor(), args[0], args[1], args[2]);
        let tty = on_terminal(d.path(), &command).unwrap();
        assert_eq!(String::from_utf8_lossy(&tty).replace("\r\n", "\n"), String::from_utf8_lossy(&plain), "{command}");
    }
}

#[test]
fn a_streamed_reply_on_a_terminal_obeys_no_escape() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to give the chat a pseudo-terminal");
        return;
    }
    let server = ModelServer::start();
    let d = tempfile::tempdir().unwrap();
    // The line front end (input from a file), writing to the terminal; the
    // server echoes the prompt, so the reply streams the escapes back.
    let prompt = "say clear\x1b[2J clip\x1b]52;c;aGk=\x07 over\rwrite csi\u{9b}31m\n";
    fs::write(d.path().join("input.txt"), prompt).unwrap();
    let command = format!(
        "{} chat chat.jsonl --new --model openai/test-model --base-url {} < input.txt",
        arbor(),
        server.openai()
    );
    let bytes = on_terminal(d.path(), &command).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("echo: say clear\\x1b[2J clip\\x1b]52;c;aGk=\\x07"), "{text}");
    if let Some(what) = obeyed(&bytes) {
        panic!("chat: the terminal got {what}");
    }
}
